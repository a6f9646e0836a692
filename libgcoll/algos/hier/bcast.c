/* SPDX-License-Identifier: BSD-3-Clause */
/* Hierarchical bcast: the root and the first rank of every other node (the
 * node "heads") run a binomial bcast across nodes, then each node broadcasts
 * from its head through shared memory.  Any node shape.
 *
 *   step  inter-node (heads, transport)         intra-node (NODE, shm)
 *   1     binomial bcast from the root
 *   2                                           bcast from the head
 *
 * Cost: log2(N) (alpha + n beta) + shm copy.
 *
 * Large buffers (two segments or more, across two nodes or more) are cut
 * into 4 MiB segments (args->chunk_bytes overrides) whose levels overlap:
 * while the heads bcast segment k across nodes, each node bcasts segment k-1
 * from its head (a NODE step marked early, schedule.h, in the first round of
 * segment k's inter-node bcast on the head):
 *
 *   round (heads)     node (shm)               inter-node (heads)
 *   seg 0 rounds                               bcast seg 0
 *   seg 1 rounds      bcast seg 0 (early)      bcast seg 1
 *   ...
 *   seg S-1 rounds    bcast seg S-2 (early)    bcast seg S-1
 *   last              bcast seg S-1
 *
 * The early step reads (head) or writes (others) only segment k-1, which the
 * head completed in earlier rounds, while the round's messages carry segment
 * k.  Non-heads have only the NODE steps, seg 0 .. S-1 in the same order.
 * Cost: the inter-node bcasts plus one segment's shm copy. */
#include "algos/hier/hier.h"
#include "base/status.h"

typedef struct {
    int root_node;    /* node of the root */
    int head_local;   /* local index of my node's head */
    int i_am_head;
} bcast_plan_t;

/* Node bcast of count elements at element offset off, from the head. */
static void seg_node(const gcoll_coll_args_t *a, const bcast_plan_t *p, size_t off, size_t count,
                     gcoll_sched_t *s, int early, uint32_t round)
{
    gcoll_bref_t at = gcoll_bref_add(a->dst, off * a->dt_size);
    size_t bytes = count * a->dt_size;
    gcoll_sched_node_at(s, early ? round : GCOLL_SCHED_APPEND, GCOLL_COLL_BCAST, at, at, bytes,
                        p->head_local);
}

/* Heads' binomial bcast of count elements at element offset off. */
static gcoll_status_t seg_heads(const gcoll_coll_args_t *a, const gcoll_group_t *g,
                                const gcoll_hier_t *h, const bcast_plan_t *p, size_t off,
                                size_t count, gcoll_sched_t *s)
{
    gcoll_bref_t at = gcoll_bref_add(a->dst, off * a->dt_size);
    return gcoll_hier_run_flat_at(&gcoll_algo_bcast_binomial, a, g, h->leaders, h->nnodes,
                                  h->my_node, p->root_node, at, count, s);
}

static gcoll_status_t build_pipelined(const gcoll_coll_args_t *a, const gcoll_group_t *g,
                                      const gcoll_hier_t *h, const bcast_plan_t *p,
                                      size_t seg_elems, size_t nseg, gcoll_sched_t *s)
{
    gcoll_status_t st = GCOLL_SUCCESS;
    gcoll_sched_round(s);
    for (size_t k = 0; k < nseg && st == GCOLL_SUCCESS; k++) {
        size_t off = k * seg_elems, len = a->count - off < seg_elems ? a->count - off : seg_elems;
        if (!p->i_am_head) {   /* only the node steps, in the heads' order */
            seg_node(a, p, off, len, s, 0, 0);
            continue;
        }
        uint32_t r = s->nrounds;   /* segment k's first round: N >= 2 heads, so it exists */
        st = seg_heads(a, g, h, p, off, len, s);
        if (k >= 1) seg_node(a, p, off - seg_elems, seg_elems, s, 1, r);
    }
    if (p->i_am_head) {
        size_t off = (nseg - 1) * seg_elems;
        seg_node(a, p, off, a->count - off, s, 0, 0);
    }
    return st;
}

static gcoll_status_t build(const gcoll_coll_args_t *a, const gcoll_group_t *g, gcoll_sched_t *s)
{
    GCOLL_TRY(gcoll_hier_check(a, g, "bcast hier"));
    gcoll_hier_t h;
    GCOLL_TRY(gcoll_hier_init(&h, g));
    bcast_plan_t p;
    p.root_node = g->node_of ? g->node_of[a->root] : 0;
    h.leaders[p.root_node] = a->root;   /* the root is its node's head */
    p.head_local = h.my_node == p.root_node ? gcoll_hier_local_of(g, a->root) : 0;
    p.i_am_head = h.local == p.head_local;
    size_t seg_elems = gcoll_hier_segment(a, 1);
    size_t nseg = (a->count + seg_elems - 1) / seg_elems;
    gcoll_status_t st = GCOLL_SUCCESS;
    if (nseg >= 2 && h.nnodes >= 2) {   /* on one node there is no level to overlap */
        st = build_pipelined(a, g, &h, &p, seg_elems, nseg, s);
    } else {
        gcoll_sched_round(s);
        if (p.i_am_head) st = seg_heads(a, g, &h, &p, 0, a->count, s);
        seg_node(a, &p, 0, a->count, s, 0, 0);
    }
    gcoll_hier_fini(&h);
    return st;
}

const gcoll_algo_t gcoll_algo_bcast_hier = {
    "hier", GCOLL_COLL_BCAST, "binomial bcast among node heads, then shm bcast in each node",
    build };
