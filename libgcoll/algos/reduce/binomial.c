/* SPDX-License-Identifier: BSD-3-Clause */
/* Binomial-tree reduce to any root, pipelined in chunks.
 *
 * The broadcast tree of bcast/binomial.c run backwards: ranks numbered
 * relative to the root; in step t (t = 0 .. L-1, L = ceil(log2 P)) rel with
 * span > 2^t receives its child rel + 2^t's partial result and folds it in,
 * and rel with span == 2^t sends its own to rel - 2^t.  Leaves send their
 * sendbuf as it is; inner ranks accumulate in scratch, the root in its
 * recvbuf, which is the only place of recvbuf this algorithm touches (recvbuf
 * is not valid on the other ranks).
 *
 * A message of n bytes is cut into C chunks (chunk_bytes, default 512 KiB);
 * chunk c takes step t in round c + t.  A child's chunk is received into a
 * scratch slot of its own and reduced in the round it arrives, so a rank
 * takes in one chunk from each child and passes one up in every round.
 *
 * Cost: L (alpha + n beta + n gamma) with one chunk; with C chunks,
 * (C + L - 1)(alpha + n/C (beta + gamma)).
 *
 *   P = 6, one chunk   step 0          step 1          step 2
 *   rel 0              <-1, 0 += 1     <-2, 0 += 2     <-4, 0 += 4
 *   rel 2              <-3, 2 += 3     ->0
 *   rel 4              <-5, 4 += 5                     ->0
 *   rel 1, 3, 5        ->parent
 */
#include "algos/algo.h"
#include "algos/peers.h"

#define REDUCE_BINOMIAL_CHUNK (512 * 1024)

typedef struct {
    const gcoll_coll_args_t *args;
    const gcoll_group_t     *g;
    int                      rel, span, nkids;
    int                      up;           /* step that sends to the parent; -1 at the root */
    size_t                   ce, nchunks;  /* elements per chunk, chunks */
    size_t                   slot;         /* bytes of one child's slot in tmp */
    gcoll_bref_t             acc;          /* where this rank's partial result grows */
    gcoll_bref_t             tmp;          /* one chunk per child */
} reduce_plan_t;

/* Children are rel + 2^t for t = 0 .. nkids-1. */
static int count_kids(int rel, int span, int n)
{
    int k = 0;
    while ((1 << k) < span && rel + (1 << k) < n) k++;
    return k;
}

static void plan_init(reduce_plan_t *pl, const gcoll_coll_args_t *args, const gcoll_group_t *g,
                      gcoll_sched_t *s)
{
    int n = g->size;
    pl->args    = args;
    pl->g       = g;
    pl->rel     = gcoll_rel(g->me, args->root, n);
    pl->span    = gcoll_binomial_span(pl->rel, n);
    pl->nkids   = count_kids(pl->rel, pl->span, n);
    pl->up      = pl->rel ? gcoll_log2_ceil(pl->span) : -1;
    pl->ce      = gcoll_chunk_elems(args->chunk_bytes, REDUCE_BINOMIAL_CHUNK, args->dt_size);
    pl->nchunks = (args->count + pl->ce - 1) / pl->ce;
    if (pl->rel == 0)
        pl->acc = args->dst;
    else if (pl->nkids == 0)
        pl->acc = args->src;   /* a leaf passes its sendbuf on untouched */
    else
        pl->acc = gcoll_sched_scratch(s, args->count * args->dt_size);
    pl->slot = (pl->nchunks > 1 ? pl->ce : args->count) * args->dt_size;
    pl->tmp  = gcoll_sched_scratch(s, (size_t)pl->nkids * pl->slot);
}

/* Chunk c: byte offset and length. */
static size_t chunk_len(const reduce_plan_t *pl, size_t c, size_t *off)
{
    size_t first = c * pl->ce, rest = pl->args->count - first;
    *off = first * pl->args->dt_size;
    return (rest < pl->ce ? rest : pl->ce) * pl->args->dt_size;
}

static int peer_rank(const reduce_plan_t *pl, int rel)
{
    return gcoll_group_rank(pl->g, gcoll_abs(rel, pl->args->root, pl->g->size));
}

/* One round: for each step t, chunk round - t moves; arrivals are folded in
 * after the round's messages completed. */
static void reduce_round(const reduce_plan_t *pl, size_t round, gcoll_sched_t *s)
{
    size_t off;

    int last = pl->up >= 0 ? pl->up : pl->nkids - 1;   /* steps between the children
                                                          * and `up` have no partner */
    for (int t = 0; t <= last; t++) {
        if (round < (size_t)t || round - (size_t)t >= pl->nchunks) continue;
        size_t bytes = chunk_len(pl, round - (size_t)t, &off);
        if (t < pl->nkids)
            gcoll_sched_recv(s, peer_rank(pl, pl->rel + (1 << t)),
                             gcoll_bref_add(pl->tmp, (size_t)t * pl->slot), bytes);
        else if (t == pl->up)
            gcoll_sched_send(s, peer_rank(pl, pl->rel - pl->span), gcoll_bref_add(pl->acc, off),
                             bytes);
    }
    for (int t = 0; t < pl->nkids; t++) {
        if (round < (size_t)t || round - (size_t)t >= pl->nchunks) continue;
        size_t bytes = chunk_len(pl, round - (size_t)t, &off);
        gcoll_bref_t mine = gcoll_bref_add(t == 0 ? pl->args->src : pl->acc, off);
        gcoll_sched_reduce(s, gcoll_bref_add(pl->acc, off), mine,
                           gcoll_bref_add(pl->tmp, (size_t)t * pl->slot), bytes);
    }
}

static gcoll_status_t reduce_binomial_build(const gcoll_coll_args_t *args,
                                            const gcoll_group_t *g, gcoll_sched_t *s)
{
    if (args->count == 0) return s->status;
    gcoll_sched_round(s);   /* never share a round with what was built before */
    if (g->size == 1) {
        gcoll_sched_copy(s, args->dst, args->src, args->count * args->dt_size);
        gcoll_sched_round(s);
        return s->status;
    }
    reduce_plan_t pl;
    plan_init(&pl, args, g, s);
    size_t nrounds = pl.nchunks + (size_t)gcoll_log2_ceil(g->size) - 1;
    for (size_t round = 0; round < nrounds; round++) {
        reduce_round(&pl, round, s);
        gcoll_sched_round(s);
    }
    return s->status;
}

const gcoll_algo_t gcoll_algo_reduce_binomial = {
    .name    = "binomial",
    .coll    = GCOLL_COLL_REDUCE,
    .summary = "binomial tree to any root, pipelined in chunks; log P steps, for small messages",
    .build   = reduce_binomial_build,
};
