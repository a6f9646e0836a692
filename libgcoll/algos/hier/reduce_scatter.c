/* Hierarchical reduce_scatter (nodes of equal size holding consecutive
 * ranks): each node reduces the whole input to its leader through shared
 * memory, the leaders reduce-scatter node regions across nodes (ring), and
 * each node's leader hands every member its block through a shared-memory
 * bcast of the node region.
 *
 *   step  intra-node (NODE, shm)              inter-node (leaders, transport)
 *   1     reduce src -> leader's scratch
 *   2                                         reduce_scatter node regions (ring)
 *   3     bcast node region from the leader; copy own block to dst
 *
 * Cost: shm reduce of P n bytes + ring reduce_scatter of N regions + shm
 * bcast of L n bytes.  Other shapes: GCOLL_ERR_NOT_SUPPORTED. */
#include "algos/hier/hier.h"
#include "core/status.h"

static gcoll_status_t build(const gcoll_coll_args_t *a, const gcoll_group_t *g, gcoll_sched_t *s)
{
    GCOLL_TRY(gcoll_hier_check(a, g, "reduce_scatter hier"));
    gcoll_hier_t h;
    GCOLL_TRY(gcoll_hier_init(&h, g));
    gcoll_status_t st = gcoll_hier_check_regular(&h, "reduce_scatter hier");
    size_t block = a->count * a->dt_size, region = block * (size_t)h.local_size;
    if (st == GCOLL_SUCCESS) {
        gcoll_bref_t tmp = gcoll_sched_scratch(s, region * (size_t)h.nnodes);
        gcoll_bref_t mine = gcoll_bref_add(tmp, region * (size_t)h.my_node);
        gcoll_sched_round(s);
        gcoll_sched_node(s, GCOLL_COLL_REDUCE, tmp, a->src, region * (size_t)h.nnodes, 0);
        gcoll_sched_round(s);
        if (h.local == 0) {
            gcoll_coll_args_t ra = *a;
            ra.count = a->count * (size_t)h.local_size;
            ra.src = tmp;
            ra.dst = mine;
            st = gcoll_hier_run_flat(&gcoll_algo_reduce_scatter_ring, &ra, g, h.leaders,
                                     h.nnodes, h.my_node, s);
        }
        gcoll_sched_node(s, GCOLL_COLL_BCAST, mine, mine, region, 0);
        gcoll_sched_round(s);
        gcoll_sched_copy(s, a->dst, gcoll_bref_add(mine, block * (size_t)h.local), block);
    }
    gcoll_hier_fini(&h);
    return st;
}

static double cost(const gcoll_cost_params_t *p, int n, size_t bytes)
{
    return (n - 1) * p->alpha + (double)bytes * (p->beta + p->gamma) * (n - 1) / (n > 0 ? n : 1);
}

const gcoll_algo_t gcoll_algo_reduce_scatter_hier = {
    "hier", GCOLL_COLL_REDUCE_SCATTER,
    "shm reduce per node, leaders reduce-scatter node regions, shm bcast (equal, consecutive nodes)",
    build, cost };
