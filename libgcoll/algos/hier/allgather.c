/* Hierarchical allgather (nodes of equal size holding consecutive ranks):
 * each node gathers its blocks through shared memory into their place in dst,
 * the node leaders allgather whole node regions across nodes, and each node
 * broadcasts the full result from its leader through shared memory.
 *
 *   step  intra-node (NODE, shm)              inter-node (leaders, transport)
 *   1     allgather block -> dst[node region]
 *   2                                         allgather node regions (ring/bruck)
 *   3     bcast dst from the leader
 *
 * Cost: shm pass + leaders' allgather of N regions of L n bytes + shm bcast
 * of P n bytes.  Other shapes: GCOLL_ERR_NOT_SUPPORTED (the caller falls back
 * to a flat algorithm). */
#include "algos/hier/hier.h"
#include "core/status.h"

static gcoll_status_t build(const gcoll_coll_args_t *a, const gcoll_group_t *g, gcoll_sched_t *s)
{
    GCOLL_TRY(gcoll_hier_check(a, g, "allgather hier"));
    gcoll_hier_t h;
    GCOLL_TRY(gcoll_hier_init(&h, g));
    gcoll_status_t st = gcoll_hier_check_regular(&h, "allgather hier");
    size_t block = a->count * a->dt_size, region = block * (size_t)h.local_size;
    gcoll_bref_t mine = gcoll_bref_add(a->dst, region * (size_t)h.my_node);
    if (st == GCOLL_SUCCESS) {
        gcoll_sched_round(s);
        gcoll_sched_node(s, GCOLL_COLL_ALLGATHER, mine, a->src, region, 0);
        gcoll_sched_round(s);
        if (h.local == 0) {
            gcoll_coll_args_t ga = *a;
            ga.count = a->count * (size_t)h.local_size;
            ga.src = mine;
            st = gcoll_hier_run_flat(region <= 65536 ? &gcoll_algo_allgather_bruck
                                                     : &gcoll_algo_allgather_ring,
                                     &ga, g, h.leaders, h.nnodes, h.my_node, s);
        }
        gcoll_sched_node(s, GCOLL_COLL_BCAST, a->dst, a->dst, region * (size_t)h.nnodes, 0);
    }
    gcoll_hier_fini(&h);
    return st;
}

static double cost(const gcoll_cost_params_t *p, int n, size_t bytes)
{
    return (n - 1) * p->alpha + (double)bytes * p->beta * (n - 1) / (n > 0 ? n : 1);
}

const gcoll_algo_t gcoll_algo_allgather_hier = {
    "hier", GCOLL_COLL_ALLGATHER,
    "shm gather per node, leaders allgather node regions, shm bcast (equal, consecutive nodes)",
    build, cost };
