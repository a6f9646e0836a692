/* SPDX-License-Identifier: BSD-3-Clause */
/* Broadcast as scatter + allgather (van de Geijn), for large messages.
 *
 * The buffer is cut into P blocks (gcoll_block_off: the first count % P one
 * element longer); block b belongs to the rank b places after the root
 * (rel = b).  Blocks of a binomial subtree are then contiguous in memory:
 *   1. binomial scatter: rel > 0 receives the blocks of its subtree
 *      [rel, rel + span) from rel - span, then hands the upper halves on,
 *      largest first (span as in bcast/binomial.c);
 *   2. ring allgather: in step k, rel sends block rel - k to rel + 1 and
 *      receives block rel - k - 1 from rel - 1.  The root holds every block
 *      already, so it receives nothing and its predecessor sends it nothing.
 * With count < P some blocks are empty: their steps are dropped on both ends.
 *
 * Cost: scatter L alpha + (P-1)/P n beta, allgather (P-1) alpha + (P-1)/P n
 * beta; in all (L + P - 1) alpha + 2 (P-1)/P n beta, against L n beta for
 * the binomial tree.
 *
 *   P = 4   scatter 0   scatter 1   ring 0        ring 1        ring 2
 *   rel 0   ->2 b2-3    ->1 b1      ->1 b0        ->1 b3        ->1 b2
 *   rel 1               <-0 b1      ->2 b1 <-0    ->2 b0 <-0    ->2 b3 <-0
 *   rel 2   <-0 b2-3    ->3 b3      ->3 b2 <-1    ->3 b1 <-1    ->3 b0 <-1
 *   rel 3               <-2 b3      <-2 b2        <-2 b1        <-2 b0
 */
#include "algos/algo.h"
#include "algos/peers.h"

/* Blocks [first, last) of the buffer, as a place and a length in bytes. */
static size_t blocks_at(const gcoll_coll_args_t *args, int n, int first, int last,
                        gcoll_bref_t *at)
{
    size_t a = gcoll_block_off(args->count, n, first), b = gcoll_block_off(args->count, n, last);
    *at = gcoll_bref_add(args->dst, a * args->dt_size);
    return (b - a) * args->dt_size;
}

static int min_int(int a, int b) { return a < b ? a : b; }

static void scatter(const gcoll_coll_args_t *args, const gcoll_group_t *g, gcoll_sched_t *s)
{
    int n = g->size, rel = gcoll_rel(g->me, args->root, n);
    int levels = gcoll_log2_ceil(n), span = gcoll_binomial_span(rel, n);
    gcoll_bref_t at;

    for (int step = 0; step < levels; step++) {
        int m = 1 << (levels - 1 - step);
        if (m == span && rel != 0) {
            size_t bytes = blocks_at(args, n, rel, min_int(rel + span, n), &at);
            gcoll_sched_recv(s, gcoll_group_rank(g, gcoll_abs(rel - m, args->root, n)), at, bytes);
        } else if (m < span && rel + m < n) {
            size_t bytes = blocks_at(args, n, rel + m, min_int(rel + 2 * m, n), &at);
            gcoll_sched_send(s, gcoll_group_rank(g, gcoll_abs(rel + m, args->root, n)), at, bytes);
        }
        gcoll_sched_round(s);
    }
}

static void ring_allgather(const gcoll_coll_args_t *args, const gcoll_group_t *g,
                           gcoll_sched_t *s)
{
    int n = g->size, rel = gcoll_rel(g->me, args->root, n);
    int next = gcoll_group_rank(g, gcoll_abs(gcoll_ring_next(rel, n), args->root, n));
    int prev = gcoll_group_rank(g, gcoll_abs(gcoll_ring_prev(rel, n), args->root, n));
    gcoll_bref_t at;

    for (int k = 0; k < n - 1; k++) {
        int sb = (rel - k + n) % n, rb = (rel - k - 1 + n) % n;
        if (rel != n - 1) {   /* the root needs nothing */
            size_t bytes = blocks_at(args, n, sb, sb + 1, &at);
            gcoll_sched_send(s, next, at, bytes);
        }
        if (rel != 0) {
            size_t bytes = blocks_at(args, n, rb, rb + 1, &at);
            gcoll_sched_recv(s, prev, at, bytes);
        }
        gcoll_sched_round(s);
    }
}

static gcoll_status_t bcast_sag_build(const gcoll_coll_args_t *args, const gcoll_group_t *g,
                                      gcoll_sched_t *s)
{
    if (g->size == 1 || args->count == 0) return s->status;
    gcoll_sched_round(s);   /* never share a round with what was built before */
    scatter(args, g, s);
    ring_allgather(args, g, s);
    return s->status;
}

const gcoll_algo_t gcoll_algo_bcast_scatter_allgather = {
    .name    = "scatter_allgather",
    .coll    = GCOLL_COLL_BCAST,
    .summary = "binomial scatter then ring allgather (van de Geijn); for large messages",
    .build   = bcast_sag_build,
};
