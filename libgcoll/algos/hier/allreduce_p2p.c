/* SPDX-License-Identifier: BSD-3-Clause */
/* Hierarchical allreduce with the node level over the transport ("hier_p2p").
 *
 * The same three levels as "hier" (allreduce.c), but the node's reduce-
 * scatter and allgather are point-to-point messages among the node's ranks
 * instead of NODE steps on libgcoll's segment.  Where the transport moves a
 * large message with one copy (UCX over CMA/XPMEM, or an MPI with single-copy
 * shared memory) that costs each rank one copy per byte where the staged
 * segment costs two; it also needs no segment at all.  Nodes of equal size
 * (block l has one size on every node, as hier needs); other shapes decline.
 *
 *   step  intra-node (node members, transport)           inter-node (rail)
 *   1     send block j of src to local rank j; receive
 *         the L-1 copies of my block; reduce: dst[block l]
 *         = src[block l] op copy of each member (local order)
 *   2                                                     allreduce dst[block l]
 *   3     send dst[block l] to every member; receive theirs into dst
 *
 * Per rank, of n bytes on L ranks per node and N nodes: (L-1)/L n sent and
 * received in each node step, 2 (N-1)/N n/L across nodes (as hier), and
 * scratch for L-1 blocks of one segment.  Large vectors go in 4 MiB segments,
 * one after another, so scratch stays (L-1)/L x 4 MiB.
 *
 * Cost: 2 alpha_node + 2 (L-1)/L n beta_node + rail allreduce of n/L bytes.
 *
 * Each element is reduced by one rank only and then copied: the result is
 * identical on every rank. */
#include "algos/hier/hier.h"
#include "algos/peers.h"
#include "base/status.h"

typedef struct {
    const gcoll_coll_args_t *a;
    const gcoll_group_t     *g;
    const gcoll_hier_t      *h;
    size_t                   off, len;   /* the segment, elements */
} p2p_seg_t;

/* Member j's block of the segment, as a reference into buffer `at`. */
static gcoll_bref_t blk(const p2p_seg_t *sg, gcoll_bref_t at, int j)
{
    size_t o = sg->off + gcoll_block_off(sg->len, sg->h->local_size, j);
    return gcoll_bref_add(at, o * sg->a->dt_size);
}

static size_t blk_bytes(const p2p_seg_t *sg, int j)
{
    return gcoll_block_len(sg->len, sg->h->local_size, j) * sg->a->dt_size;
}

static int member_rank(const p2p_seg_t *sg, int j)
{
    return gcoll_group_rank(sg->g, sg->h->node_members[j]);
}

/* Step 1: every member's copy of my block arrives in scratch slot j; my
 * block of dst becomes src op copy(j) op ... over the other members. */
static void node_reduce_scatter(const p2p_seg_t *sg, gcoll_bref_t scratch, gcoll_sched_t *s)
{
    const gcoll_hier_t *h = sg->h;
    int me = h->local;
    size_t mine = blk_bytes(sg, me);
    for (int j = 0; j < h->local_size; j++) {
        if (j == me) continue;
        if (blk_bytes(sg, j)) gcoll_sched_send(s, member_rank(sg, j), blk(sg, sg->a->src, j),
                                               blk_bytes(sg, j));
        if (mine) gcoll_sched_recv(s, member_rank(sg, j), gcoll_bref_add(scratch, (size_t)j * mine),
                                   mine);
    }
    gcoll_bref_t acc = blk(sg, sg->a->src, me);
    for (int j = 0; j < h->local_size && mine; j++) {
        if (j == me) continue;
        gcoll_bref_t copy = gcoll_bref_add(scratch, (size_t)j * mine);
        gcoll_sched_reduce(s, blk(sg, sg->a->dst, me), acc, copy, mine);
        acc = blk(sg, sg->a->dst, me);
    }
    if (h->local_size == 1 && !gcoll_bref_eq(sg->a->src, sg->a->dst))
        gcoll_sched_copy(s, blk(sg, sg->a->dst, me), acc, mine);
    gcoll_sched_round(s);
}

/* Step 3: my finished block to every member, theirs into dst. */
static void node_allgather(const p2p_seg_t *sg, gcoll_sched_t *s)
{
    const gcoll_hier_t *h = sg->h;
    int me = h->local;
    for (int j = 0; j < h->local_size; j++) {
        if (j == me) continue;
        if (blk_bytes(sg, me)) gcoll_sched_send(s, member_rank(sg, j), blk(sg, sg->a->dst, me),
                                                blk_bytes(sg, me));
        if (blk_bytes(sg, j)) gcoll_sched_recv(s, member_rank(sg, j), blk(sg, sg->a->dst, j),
                                               blk_bytes(sg, j));
    }
    gcoll_sched_round(s);
}

static gcoll_status_t build(const gcoll_coll_args_t *a, const gcoll_group_t *g, gcoll_sched_t *s)
{
    gcoll_hier_t h;
    GCOLL_TRY(gcoll_hier_init(&h, g));
    gcoll_status_t st = GCOLL_SUCCESS;
    if (!h.uniform)
        st = GCOLL_ERROR(GCOLL_ERR_NOT_SUPPORTED,
                         "allreduce hier_p2p needs nodes of equal size (block l must have one "
                         "size on every node)");
    size_t seg = gcoll_hier_segment(a, (size_t)h.local_size);   /* bounds scratch */
    size_t first = a->count < seg ? a->count : seg;
    size_t slot = gcoll_block_len(first, h.local_size, 0) * a->dt_size;   /* block 0: a longest */
    gcoll_bref_t scratch = gcoll_sched_scratch(s, slot * (size_t)h.local_size);
    /* segments run one after another: each rail allreduce reuses the
     * scratch of the one before (rewound to base), so scratch does not grow
     * with the vector */
    size_t base = s->scratch_bytes, high = base;
    for (size_t off = 0; st == GCOLL_SUCCESS && off < a->count; off += seg) {
        p2p_seg_t sg = { a, g, &h, off, a->count - off < seg ? a->count - off : seg };
        node_reduce_scatter(&sg, scratch, s);
        size_t mine = gcoll_block_len(sg.len, h.local_size, h.local);
        s->scratch_bytes = base;
        st = gcoll_hier_allreduce_at(a, g, h.rail, h.nnodes, h.my_node, blk(&sg, a->dst, h.local),
                                     mine, s);
        if (s->scratch_bytes > high) high = s->scratch_bytes;
        node_allgather(&sg, s);
    }
    s->scratch_bytes = high;
    gcoll_hier_fini(&h);
    return st;
}

const gcoll_algo_t gcoll_algo_allreduce_hier_p2p = {
    "hier_p2p", GCOLL_COLL_ALLREDUCE,
    "node reduce-scatter and allgather by point-to-point messages, rail allreduce across nodes",
    build };
