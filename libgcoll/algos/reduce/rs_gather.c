/* SPDX-License-Identifier: BSD-3-Clause */
/* Reduce as reduce-scatter + gather (Rabenseifner's reduce), for large messages.
 *
 * The buffer is cut into P blocks (gcoll_block_off: the first count % P one
 * element longer, so any count works, count < P included); block b belongs
 * to the rank b places after the root (rel = b), so that the blocks of a
 * binomial subtree are contiguous in memory.
 *   1. ring reduce-scatter over the ranks in relative order: in step k
 *      (k = 0 .. P-2) rel sends its partial block rel-k-1 to rel+1, receives
 *      block rel-k-2 from rel-1 into scratch and adds its own contribution.
 *      After P-1 steps rel holds block rel, reduced over all ranks.  The
 *      ring is written here rather than borrowed from reduce_scatter/ring.c
 *      because that collective needs equal blocks (P * recvcount).
 *   2. binomial gather of the blocks to the root, the reverse of the scatter
 *      of bcast/scatter_allgather.c: rel receives its children's block
 *      ranges, smallest subtree first, then sends [rel, rel + span) up.
 * Partial results live in the root's recvbuf and in scratch elsewhere (a
 * non-root's recvbuf is not valid).
 *
 * Cost: (P - 1 + L) alpha + 2 (P-1)/P n beta + (P-1)/P n gamma, against
 * L (alpha + n beta + n gamma) for the binomial tree.
 *
 *   P = 3     ring 0                ring 1                gather 0   gather 1
 *   rel 0     ->1 b2, <-2 b1, +=    ->1 b1, <-2 b0, +=    <-1 b1     <-2 b2
 *   rel 1     ->2 b0, <-0 b2, +=    ->2 b2, <-0 b1, +=    ->0 b1
 *   rel 2     ->0 b1, <-1 b0, +=    ->0 b0, <-1 b2, +=               ->0 b2
 */
#include "algos/algo.h"
#include "algos/peers.h"

typedef struct {
    const gcoll_coll_args_t *args;
    const gcoll_group_t     *g;
    int                      rel;
    gcoll_bref_t             acc;   /* partial results: recvbuf on the root, scratch elsewhere */
    gcoll_bref_t             tmp;   /* one block, as received */
} rsg_plan_t;

/* Blocks [first, last): byte offset and length. */
static size_t blocks_len(const rsg_plan_t *pl, int first, int last, size_t *off)
{
    size_t count = pl->args->count, dt = pl->args->dt_size;
    size_t a = gcoll_block_off(count, pl->g->size, first);
    size_t b = gcoll_block_off(count, pl->g->size, last);
    *off = a * dt;
    return (b - a) * dt;
}

static int peer_rank(const rsg_plan_t *pl, int rel)
{
    return gcoll_group_rank(pl->g, gcoll_abs(rel, pl->args->root, pl->g->size));
}

static void ring_reduce_scatter(const rsg_plan_t *pl, gcoll_sched_t *s)
{
    int n = pl->g->size, rel = pl->rel;
    size_t off;

    for (int k = 0; k < n - 1; k++) {
        int sb = (rel - k - 1 + 2 * n) % n, rb = (rel - k - 2 + 2 * n) % n;
        size_t bytes = blocks_len(pl, sb, sb + 1, &off);
        /* block sb: our own contribution in step 0, a partial sum after */
        gcoll_bref_t from = k == 0 ? pl->args->src : pl->acc;
        gcoll_sched_send(s, peer_rank(pl, gcoll_ring_next(rel, n)), gcoll_bref_add(from, off),
                         bytes);
        bytes = blocks_len(pl, rb, rb + 1, &off);
        gcoll_sched_recv(s, peer_rank(pl, gcoll_ring_prev(rel, n)), pl->tmp, bytes);
        gcoll_sched_reduce(s, gcoll_bref_add(pl->acc, off), gcoll_bref_add(pl->args->src, off),
                           pl->tmp, bytes);
        gcoll_sched_round(s);
    }
}

static int min_int(int a, int b) { return a < b ? a : b; }

static void binomial_gather(const rsg_plan_t *pl, gcoll_sched_t *s)
{
    int n = pl->g->size, rel = pl->rel, span = gcoll_binomial_span(rel, n);
    size_t off, bytes;

    for (int m = 1; m < (1 << gcoll_log2_ceil(n)); m *= 2) {
        if (m < span && rel + m < n) {
            bytes = blocks_len(pl, rel + m, min_int(rel + 2 * m, n), &off);
            gcoll_sched_recv(s, peer_rank(pl, rel + m), gcoll_bref_add(pl->acc, off), bytes);
        } else if (m == span) {
            bytes = blocks_len(pl, rel, min_int(rel + span, n), &off);
            gcoll_sched_send(s, peer_rank(pl, rel - m), gcoll_bref_add(pl->acc, off), bytes);
        }
        gcoll_sched_round(s);
    }
}

static gcoll_status_t reduce_rsg_build(const gcoll_coll_args_t *args, const gcoll_group_t *g,
                                       gcoll_sched_t *s)
{
    size_t bytes = args->count * args->dt_size;
    if (bytes == 0) return s->status;
    gcoll_sched_round(s);   /* never share a round with what was built before */
    if (g->size == 1) {
        gcoll_sched_copy(s, args->dst, args->src, bytes);
        gcoll_sched_round(s);
        return s->status;
    }
    rsg_plan_t pl = { .args = args, .g = g, .rel = gcoll_rel(g->me, args->root, g->size) };
    pl.acc = pl.rel == 0 ? args->dst : gcoll_sched_scratch(s, bytes);
    pl.tmp = gcoll_sched_scratch(s, gcoll_block_len(args->count, g->size, 0) * args->dt_size);
    ring_reduce_scatter(&pl, s);
    binomial_gather(&pl, s);
    return s->status;
}

const gcoll_algo_t gcoll_algo_reduce_rs_gather = {
    .name    = "rs_gather",
    .coll    = GCOLL_COLL_REDUCE,
    .summary = "ring reduce-scatter then binomial gather to the root; for large messages",
    .build   = reduce_rsg_build,
};
