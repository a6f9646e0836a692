/* Hierarchical allreduce, two forms.
 *
 * "hier" (bandwidth): on a node of L ranks, each rank ends the intra-node
 * reduce-scatter owning one block (1/L) of the node's sum; the ranks with the
 * same local index on every node (a rail) allreduce that block across nodes;
 * an intra-node allgather completes the vector.  Each rank sends only 1/L of
 * the data across the network, the rail allreduces run in parallel.
 *
 *   step  intra-node (NODE, shared memory)   inter-node (rail, transport)
 *   1     reduce-scatter src -> dst[block l]
 *   2                                          allreduce dst[block l] (by size)
 *   3     allgather dst[block l] -> dst
 *
 * Cost: 2 shm passes + rail allreduce of n/L bytes over N nodes:
 *   2 log N alpha + 2 (N-1)/N (n/L) beta (Rabenseifner; ring for big blocks).
 * Needs every node to hold the same number of ranks (so block l has one size
 * on every node); otherwise it builds "hier_leader".
 *
 * "hier_leader" (latency, any shape): intra-node reduce to the node's first
 * rank, allreduce among those leaders, intra-node bcast.
 *
 *   1     reduce src -> dst on local rank 0
 *   2                                          allreduce dst among leaders
 *   3     bcast dst from local rank 0
 *
 * Results are identical on every rank: each element is reduced once, by one
 * rank, and then copied everywhere. */
#include "algos/hier/hier.h"
#include "algos/peers.h"
#include "core/status.h"

/* Flat allreduce of count elements at `at`, in place, over idx[n]. */
static gcoll_status_t group_allreduce(const gcoll_coll_args_t *a, const gcoll_group_t *g,
                                      const int *idx, int n, int me, gcoll_bref_t at,
                                      size_t count, gcoll_sched_t *s)
{
    if (count == 0) return GCOLL_SUCCESS;
    gcoll_coll_args_t ra = *a;
    ra.count = count;
    ra.src = ra.dst = at;
    const gcoll_algo_t *flat = gcoll_hier_flat_allreduce(count * a->dt_size, n);
    return gcoll_hier_run_flat(flat, &ra, g, idx, n, me, s);
}

static gcoll_status_t build_leader(const gcoll_coll_args_t *a, const gcoll_group_t *g,
                                   gcoll_sched_t *s)
{
    GCOLL_TRY(gcoll_hier_check(a, g, "allreduce hier_leader"));
    gcoll_hier_t h;
    GCOLL_TRY(gcoll_hier_init(&h, g));
    size_t bytes = a->count * a->dt_size;
    gcoll_sched_round(s);
    gcoll_sched_node(s, GCOLL_COLL_REDUCE, a->dst, a->src, bytes, 0);
    gcoll_sched_round(s);
    gcoll_status_t st = GCOLL_SUCCESS;
    if (h.local == 0)
        st = group_allreduce(a, g, h.leaders, h.nnodes, h.my_node, a->dst, a->count, s);
    gcoll_sched_node(s, GCOLL_COLL_BCAST, a->dst, a->dst, bytes, 0);
    gcoll_hier_fini(&h);
    return st;
}

static gcoll_status_t build_hier(const gcoll_coll_args_t *a, const gcoll_group_t *g,
                                 gcoll_sched_t *s)
{
    GCOLL_TRY(gcoll_hier_check(a, g, "allreduce hier"));
    gcoll_hier_t h;
    GCOLL_TRY(gcoll_hier_init(&h, g));
    if (!h.uniform) {
        gcoll_hier_fini(&h);
        return build_leader(a, g, s);
    }
    size_t dts = a->dt_size, bytes = a->count * dts;
    gcoll_bref_t mine = gcoll_bref_add(a->dst, gcoll_block_off(a->count, h.local_size, h.local) * dts);
    size_t my_count = gcoll_block_len(a->count, h.local_size, h.local);
    gcoll_sched_round(s);
    gcoll_sched_node(s, GCOLL_COLL_REDUCE_SCATTER, mine, a->src, bytes, 0);
    gcoll_sched_round(s);
    gcoll_status_t st = group_allreduce(a, g, h.rail, h.nnodes, h.my_node, mine, my_count, s);
    gcoll_sched_node(s, GCOLL_COLL_ALLGATHER, a->dst, mine, bytes, 0);
    gcoll_hier_fini(&h);
    return st;
}

/* Two shared-memory passes plus a ring over nodes on 1/L of the data; the
 * inter-node term dominates, so it is what the model counts. */
static double cost_hier(const gcoll_cost_params_t *p, int n, size_t bytes)
{
    return 2.0 * (n - 1) * p->alpha + 2.0 * (double)bytes * p->beta * (n - 1) / (n > 0 ? n : 1);
}

static double cost_leader(const gcoll_cost_params_t *p, int n, size_t bytes)
{
    int rounds = 0;
    while ((1 << rounds) < n) rounds++;
    return rounds * (p->alpha + (double)bytes * (p->beta + p->gamma));
}

const gcoll_algo_t gcoll_algo_allreduce_hier = {
    "hier", GCOLL_COLL_ALLREDUCE,
    "node reduce-scatter (shm), rail allreduce across nodes, node allgather (shm)",
    build_hier, cost_hier };
const gcoll_algo_t gcoll_algo_allreduce_hier_leader = {
    "hier_leader", GCOLL_COLL_ALLREDUCE,
    "node reduce to leader (shm), leaders allreduce, node bcast (shm); any node shape",
    build_leader, cost_leader };
