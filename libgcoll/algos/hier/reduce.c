/* SPDX-License-Identifier: BSD-3-Clause */
/* Hierarchical reduce: each node reduces through shared memory to its head
 * (the root on the root's node, the first rank elsewhere), then the heads run
 * a binomial reduce to the root.  Any node shape.
 *
 *   step  intra-node (NODE, shm)                inter-node (heads, transport)
 *   1     reduce src -> head (root: dst; other heads: scratch)
 *   2                                           binomial reduce to the root
 *
 * Cost: shm pass + log2(N) (alpha + n (beta + gamma)).
 *
 * Large vectors (two segments or more, across two nodes or more) are cut
 * into 4 MiB segments (args->chunk_bytes overrides) whose levels overlap:
 * while the heads reduce segment k across nodes, each node reduces segment
 * k+1 to its head (a NODE step marked early, schedule.h, in the first round
 * of segment k's inter-node reduce on the head):
 *
 *   round (heads)     node (shm)               inter-node (heads)
 *   first             reduce seg 0
 *   seg 0 rounds      reduce seg 1 (early)     reduce seg 0
 *   ...
 *   seg S-2 rounds    reduce seg S-1 (early)   reduce seg S-2
 *   seg S-1 rounds                             reduce seg S-1
 *
 * The early step writes only segment k+1 of the head's partial sum (and
 * reads the sources' segment k+1), while the round's messages and reductions
 * touch segment k and the inter-node reduce's own scratch.  Segments' inter-
 * node reduces run one after another, so they share one scratch area.
 * Non-heads have only the NODE steps, seg 0 .. S-1 in the same order.
 * Cost: one segment's shm pass plus the inter-node reduces. */
#include "algos/hier/hier.h"
#include "base/status.h"

typedef struct {
    int          root_node;    /* node of the root */
    int          head_local;   /* local index of my node's head */
    int          i_am_head;
    gcoll_bref_t part;         /* this node's partial sum: the root's dst, else scratch */
} reduce_plan_t;

/* Node reduce of count elements at element offset off to the head. */
static void seg_node(const gcoll_coll_args_t *a, const reduce_plan_t *p, size_t off, size_t count,
                     gcoll_sched_t *s, int early, uint32_t round)
{
    gcoll_bref_t dst = gcoll_bref_add(p->part, off * a->dt_size);
    gcoll_bref_t src = gcoll_bref_add(a->src, off * a->dt_size);
    size_t bytes = count * a->dt_size;
    gcoll_sched_node_at(s, early ? round : GCOLL_SCHED_APPEND, GCOLL_COLL_REDUCE, dst, src, bytes,
                        p->head_local);
}

/* Heads' binomial reduce of count elements at element offset off, in place
 * in the partial sums. */
static gcoll_status_t seg_heads(const gcoll_coll_args_t *a, const gcoll_group_t *g,
                                const gcoll_hier_t *h, const reduce_plan_t *p, size_t off,
                                size_t count, gcoll_sched_t *s)
{
    gcoll_bref_t at = gcoll_bref_add(p->part, off * a->dt_size);
    return gcoll_hier_run_flat_at(&gcoll_algo_reduce_binomial, a, g, h->leaders, h->nnodes,
                                  h->my_node, p->root_node, at, count, s);
}

static size_t seg_len(const gcoll_coll_args_t *a, size_t seg_elems, size_t k)
{
    size_t off = k * seg_elems;
    return a->count - off < seg_elems ? a->count - off : seg_elems;
}

static gcoll_status_t build_pipelined(const gcoll_coll_args_t *a, const gcoll_group_t *g,
                                      const gcoll_hier_t *h, const reduce_plan_t *p,
                                      size_t seg_elems, size_t nseg, gcoll_sched_t *s)
{
    gcoll_status_t st = GCOLL_SUCCESS;
    gcoll_sched_round(s);
    seg_node(a, p, 0, seg_len(a, seg_elems, 0), s, 0, 0);
    gcoll_sched_round(s);
    /* each segment's reduce rewinds the scratch to here: the previous one
     * has completed (rounds are sequential); the early steps write only
     * part, reserved below this mark */
    size_t base = s->scratch_bytes, high = base;
    for (size_t k = 0; k < nseg && st == GCOLL_SUCCESS; k++) {
        int more = k + 1 < nseg;
        if (!p->i_am_head) {   /* only the node steps, in the heads' order */
            if (more) seg_node(a, p, (k + 1) * seg_elems, seg_len(a, seg_elems, k + 1), s, 0, 0);
            continue;
        }
        uint32_t r = s->nrounds;   /* segment k's first round: N >= 2 heads, so it exists */
        s->scratch_bytes = base;
        st = seg_heads(a, g, h, p, k * seg_elems, seg_len(a, seg_elems, k), s);
        if (s->scratch_bytes > high) high = s->scratch_bytes;
        if (more) seg_node(a, p, (k + 1) * seg_elems, seg_len(a, seg_elems, k + 1), s, 1, r);
    }
    s->scratch_bytes = high;
    return st;
}

static gcoll_status_t build(const gcoll_coll_args_t *a, const gcoll_group_t *g, gcoll_sched_t *s)
{
    GCOLL_TRY(gcoll_hier_check(a, g, "reduce hier"));
    gcoll_hier_t h;
    GCOLL_TRY(gcoll_hier_init(&h, g));
    size_t bytes = a->count * a->dt_size;
    reduce_plan_t p;
    p.root_node = g->node_of ? g->node_of[a->root] : 0;
    h.leaders[p.root_node] = a->root;
    p.head_local = h.my_node == p.root_node ? gcoll_hier_local_of(g, a->root) : 0;
    p.i_am_head = h.local == p.head_local;
    p.part = g->me == a->root ? a->dst : gcoll_sched_scratch(s, bytes);
    size_t seg_elems = gcoll_hier_segment(a, 1);
    size_t nseg = (a->count + seg_elems - 1) / seg_elems;
    gcoll_status_t st = GCOLL_SUCCESS;
    if (nseg >= 2 && h.nnodes >= 2) {   /* on one node there is no level to overlap */
        st = build_pipelined(a, g, &h, &p, seg_elems, nseg, s);
    } else {
        gcoll_sched_round(s);
        seg_node(a, &p, 0, a->count, s, 0, 0);
        gcoll_sched_round(s);
        if (p.i_am_head) st = seg_heads(a, g, &h, &p, 0, a->count, s);
    }
    gcoll_hier_fini(&h);
    return st;
}

const gcoll_algo_t gcoll_algo_reduce_hier = {
    "hier", GCOLL_COLL_REDUCE, "shm reduce to each node's head, binomial reduce among heads",
    build };
