/* SPDX-License-Identifier: BSD-3-Clause */
/* Binomial-tree broadcast from any root, pipelined in chunks.
 *
 * Ranks are numbered relative to the root (rel = me - root mod P).  rel > 0
 * receives from rel - span (span: its lowest set bit) and forwards to rel + m
 * for m = span/2, ..., 1; the root's span is the power of two >= P.  The tree
 * has L = ceil(log2 P) steps, largest subtree first, so a rank has its data
 * before the steps in which it forwards it.
 *
 * A message of n bytes is cut into C chunks (chunk_bytes, default 512 KiB);
 * chunk c takes step s in round c + s, so the levels of the tree work on
 * different chunks at once: a rank receives chunk c while it forwards the
 * earlier ones.  Both ends of a message place it in the same round, which
 * keeps the schedule free of deadlock even with rendezvous sends.
 *
 * Cost: L (alpha + n beta) with one chunk; with C chunks and links that work
 * in parallel, (C + L - 1)(alpha + n/C beta).
 *
 *   P = 6, one chunk   step 0   step 1   step 2
 *   rel 0              -> 4     -> 2     -> 1
 *   rel 4              <- 0              -> 5
 *   rel 2                       <- 0     -> 3
 *   rel 1, 3, 5                          <- parent
 */
#include "algos/algo.h"
#include "algos/peers.h"

#define BCAST_BINOMIAL_CHUNK (512 * 1024)

/* Chunk c of the buffer: its place and its length in bytes. */
static size_t chunk_bytes_at(const gcoll_coll_args_t *args, size_t ce, size_t c,
                             gcoll_bref_t *at)
{
    size_t first = c * ce, len = args->count - first < ce ? args->count - first : ce;
    *at = gcoll_bref_add(args->dst, first * args->dt_size);
    return len * args->dt_size;
}

/* The steps of one round: for every tree step s, chunk round - s. */
static void bcast_round(const gcoll_coll_args_t *args, const gcoll_group_t *g, size_t ce,
                        size_t nchunks, size_t round, gcoll_sched_t *s)
{
    int n = g->size, rel = gcoll_rel(g->me, args->root, n);
    int levels = gcoll_log2_ceil(n), span = gcoll_binomial_span(rel, n);

    for (int step = 0; step < levels; step++) {
        int m = 1 << (levels - 1 - step);
        if (round < (size_t)step || round - (size_t)step >= nchunks) continue;
        gcoll_bref_t at;
        size_t bytes = chunk_bytes_at(args, ce, round - (size_t)step, &at);
        if (m == span && rel != 0)
            gcoll_sched_recv(s, gcoll_group_rank(g, gcoll_abs(rel - m, args->root, n)), at, bytes);
        else if (m < span && rel + m < n)
            gcoll_sched_send(s, gcoll_group_rank(g, gcoll_abs(rel + m, args->root, n)), at, bytes);
    }
}

static gcoll_status_t bcast_binomial_build(const gcoll_coll_args_t *args, const gcoll_group_t *g,
                                           gcoll_sched_t *s)
{
    if (g->size == 1 || args->count == 0) return s->status;
    size_t ce = gcoll_chunk_elems(args->chunk_bytes, BCAST_BINOMIAL_CHUNK, args->dt_size);
    size_t nchunks = (args->count + ce - 1) / ce;
    size_t nrounds = nchunks + (size_t)gcoll_log2_ceil(g->size) - 1;

    gcoll_sched_round(s);   /* never share a round with what was built before */
    for (size_t round = 0; round < nrounds; round++) {
        bcast_round(args, g, ce, nchunks, round, s);
        gcoll_sched_round(s);
    }
    return s->status;
}

const gcoll_algo_t gcoll_algo_bcast_binomial = {
    .name    = "binomial",
    .coll    = GCOLL_COLL_BCAST,
    .summary = "binomial tree from any root, pipelined in chunks; log P steps, for small messages",
    .build   = bcast_binomial_build,
};
