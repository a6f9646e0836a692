/* Hierarchical bcast: the root and the first rank of every other node (the
 * node "heads") run a binomial bcast across nodes, then each node broadcasts
 * from its head through shared memory.  Any node shape.
 *
 *   step  inter-node (heads, transport)         intra-node (NODE, shm)
 *   1     binomial bcast from the root
 *   2                                           bcast from the head
 *
 * Cost: log2(N) (alpha + n beta) + shm copy. */
#include <stdlib.h>
#include "algos/hier/hier.h"
#include "core/status.h"

static gcoll_status_t build(const gcoll_coll_args_t *a, const gcoll_group_t *g, gcoll_sched_t *s)
{
    GCOLL_TRY(gcoll_hier_check(a, g, "bcast hier"));
    gcoll_hier_t h;
    GCOLL_TRY(gcoll_hier_init(&h, g));
    int root_node = g->node_of ? g->node_of[a->root] : 0;
    h.leaders[root_node] = a->root;   /* the root is its node's head */
    int head_local = h.my_node == root_node ? gcoll_hier_local_of(g, a->root) : 0;
    gcoll_status_t st = GCOLL_SUCCESS;
    gcoll_sched_round(s);
    if (h.local == head_local) {
        gcoll_coll_args_t ba = *a;
        ba.root = root_node;
        st = gcoll_hier_run_flat(&gcoll_algo_bcast_binomial, &ba, g, h.leaders, h.nnodes,
                                 h.my_node, s);
    }
    gcoll_sched_node(s, GCOLL_COLL_BCAST, a->dst, a->dst, a->count * a->dt_size, head_local);
    gcoll_hier_fini(&h);
    return st;
}

static double cost(const gcoll_cost_params_t *p, int n, size_t bytes)
{
    int rounds = 0;
    while ((1 << rounds) < n) rounds++;
    return rounds * (p->alpha + (double)bytes * p->beta);
}

const gcoll_algo_t gcoll_algo_bcast_hier = {
    "hier", GCOLL_COLL_BCAST, "binomial bcast among node heads, then shm bcast in each node",
    build, cost };
