/* Hierarchical reduce: each node reduces through shared memory to its head
 * (the root on the root's node, the first rank elsewhere), then the heads run
 * a binomial reduce to the root.  Any node shape.
 *
 *   step  intra-node (NODE, shm)                inter-node (heads, transport)
 *   1     reduce src -> head (root: dst; other heads: scratch)
 *   2                                           binomial reduce to the root
 *
 * Cost: shm pass + log2(N) (alpha + n (beta + gamma)). */
#include "algos/hier/hier.h"
#include "core/status.h"

static gcoll_status_t build(const gcoll_coll_args_t *a, const gcoll_group_t *g, gcoll_sched_t *s)
{
    GCOLL_TRY(gcoll_hier_check(a, g, "reduce hier"));
    gcoll_hier_t h;
    GCOLL_TRY(gcoll_hier_init(&h, g));
    size_t bytes = a->count * a->dt_size;
    int root_node = g->node_of ? g->node_of[a->root] : 0;
    h.leaders[root_node] = a->root;
    int head_local = h.my_node == root_node ? gcoll_hier_local_of(g, a->root) : 0;
    int i_am_root = g->me == a->root, i_am_head = h.local == head_local;
    /* where this node's partial sum lands: the root's dst, else scratch */
    gcoll_bref_t part = i_am_root ? a->dst : gcoll_sched_scratch(s, bytes);
    gcoll_sched_round(s);
    gcoll_sched_node(s, GCOLL_COLL_REDUCE, part, a->src, bytes, head_local);
    gcoll_sched_round(s);
    gcoll_status_t st = GCOLL_SUCCESS;
    if (i_am_head) {
        gcoll_coll_args_t ra = *a;
        ra.root = root_node;
        ra.src = ra.dst = part;
        st = gcoll_hier_run_flat(&gcoll_algo_reduce_binomial, &ra, g, h.leaders, h.nnodes,
                                 h.my_node, s);
    }
    gcoll_hier_fini(&h);
    return st;
}

static double cost(const gcoll_cost_params_t *p, int n, size_t bytes)
{
    int rounds = 0;
    while ((1 << rounds) < n) rounds++;
    return rounds * (p->alpha + (double)bytes * (p->beta + p->gamma));
}

const gcoll_algo_t gcoll_algo_reduce_hier = {
    "hier", GCOLL_COLL_REDUCE, "shm reduce to each node's head, binomial reduce among heads",
    build, cost };
