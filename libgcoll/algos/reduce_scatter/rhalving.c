/* SPDX-License-Identifier: BSD-3-Clause */
/* Recursive-halving reduce-scatter.
 *
 * Each of p2 virtual ranks (p2 = largest power of two <= P) owns a range of
 * blocks.  In halving round k a rank keeps the half of its current range that
 * holds its own blocks, sends the other half to the partner (virtual index
 * differing in bit log2(p2)-1-k) and reduces the partner's copy of the kept
 * half into its accumulator; after log2(p2) rounds it holds its own blocks
 * fully reduced.  Other group sizes use the fold: of the first 2r indices
 * (r = P - p2) each even one sends its whole src to the odd one after it and
 * waits; the odd one reduces it in, so its virtual rank owns both blocks, and
 * sends the even one its block at the end.
 *
 * Cost (n = count * dt_size, the bytes of one rank's result; N = P n):
 *     log2(p2) alpha + (p2-1)/p2 N (beta + gamma)
 *     [+ 2 alpha + (N + n) beta + N gamma if P != p2]
 *
 * Steps of virtual rank v, p2 = 4, P = 4 (blocks B0..B3, h = the kept range):
 *     round | partner | send            | recv      | local
 *     0     | v ^ 2   | cur: other half | h -> x    | acc[h] = cur[h] op x
 *     1     | v ^ 1   | acc: other block| Bv -> x   | dst = src[v] op x
 * cur is src, or acc after a fold; acc is scratch laid out like src (the
 * whole of src when folding in, else only the ranges it holds are used); x
 * is scratch of half of src.  The last round reduces straight into dst (and,
 * after a fold, into acc for the partner's block).  src is never written,
 * except dst itself in place. */
#include "algos/algo.h"
#include "algos/peers.h"

typedef struct {
    const gcoll_coll_args_t *args;
    const gcoll_group_t     *group;
    int          p2, v;
    size_t       block_bytes;
    gcoll_bref_t cur, acc, tmp;
} rh_t;

/* Byte range, within src, of the blocks of virtual ranks [lo, lo + nv). */
static void rh_range(const rh_t *r, int lo, int nv, size_t *off, size_t *len)
{
    int n = r->group->size;
    size_t b = (size_t)gcoll_fold_first(lo, n), e = (size_t)gcoll_fold_first(lo + nv, n);
    *off = b * r->block_bytes;
    *len = (e - b) * r->block_bytes;
}

static int rh_peer(const rh_t *r, int vpartner)
{
    return gcoll_group_rank(r->group, gcoll_fold_rank(vpartner, r->group->size));
}

/* Last round: reduce each of this rank's blocks (1, or 2 after a fold) into
 * dst if it is its own, into acc for the folded partner's. */
static void rh_finish(const rh_t *r, gcoll_sched_t *s)
{
    int n = r->group->size, me = r->group->me;
    for (int b = gcoll_fold_first(r->v, n); b < gcoll_fold_first(r->v + 1, n); b++) {
        size_t off = (size_t)b * r->block_bytes;
        size_t xoff = (size_t)(b - gcoll_fold_first(r->v, n)) * r->block_bytes;
        gcoll_bref_t out = b == me ? r->args->dst : gcoll_bref_add(r->acc, off);
        gcoll_sched_reduce(s, out, gcoll_bref_add(r->cur, off), gcoll_bref_add(r->tmp, xoff),
                           r->block_bytes);
    }
}

static void rh_halving(rh_t *r, gcoll_sched_t *s)
{
    for (int mask = r->p2 / 2; mask >= 1; mask /= 2) {
        int vp = r->v ^ mask, peer = rh_peer(r, vp);
        size_t soff, slen, koff, klen;
        rh_range(r, vp & ~(mask - 1), mask, &soff, &slen);
        rh_range(r, r->v & ~(mask - 1), mask, &koff, &klen);
        gcoll_sched_send(s, peer, gcoll_bref_add(r->cur, soff), slen);
        gcoll_sched_recv(s, peer, r->tmp, klen);
        if (mask == 1) {
            rh_finish(r, s);
        } else {
            gcoll_bref_t out = gcoll_bref_add(r->acc, koff);
            gcoll_sched_reduce(s, out, gcoll_bref_add(r->cur, koff), r->tmp, klen);
        }
        gcoll_sched_round(s);
        r->cur = r->acc;
    }
}

/* Scratch: acc (all of src's size, only when used) and x (the larger half). */
static void rh_scratch(rh_t *r, int folded, gcoll_sched_t *s)
{
    size_t off, lo_len, hi_len;
    rh_range(r, 0, r->p2 / 2, &off, &lo_len);
    rh_range(r, r->p2 / 2, r->p2 / 2, &off, &hi_len);
    if (folded || r->p2 > 2)
        r->acc = gcoll_sched_scratch(s, (size_t)r->group->size * r->block_bytes);
    r->tmp = gcoll_sched_scratch(s, lo_len > hi_len ? lo_len : hi_len);
}

static gcoll_status_t reduce_scatter_rhalving_build(const gcoll_coll_args_t *args,
                                                    const gcoll_group_t *group,
                                                    gcoll_sched_t *s)
{
    int n = group->size, me = group->me;
    size_t bytes = args->count * args->dt_size;
    int folded = me < 2 * (n - gcoll_pow2_floor(n));
    int in_place = gcoll_bref_eq(gcoll_bref_add(args->src, (size_t)me * bytes), args->dst);
    rh_t r = { args, group, gcoll_pow2_floor(n), gcoll_fold_vrank(me, n), bytes,
               args->src, args->src, args->src };

    gcoll_sched_round(s);   /* do not share the caller's open round */
    if (r.v < 0) {          /* sit out: hand all of src over, get the result back */
        int partner = gcoll_group_rank(group, me + 1);
        gcoll_sched_send(s, partner, args->src, (size_t)n * bytes);
        if (in_place) gcoll_sched_round(s);   /* dst is in src: send it first */
        gcoll_sched_recv(s, partner, args->dst, bytes);
        gcoll_sched_round(s);
        return s->status;
    }
    if (n == 1) {
        gcoll_sched_copy(s, args->dst, args->src, bytes);
        gcoll_sched_round(s);
        return s->status;
    }
    rh_scratch(&r, folded, s);
    if (folded) {           /* acc = src + the partner's src, all blocks */
        gcoll_sched_recv(s, gcoll_group_rank(group, me - 1), r.acc, (size_t)n * bytes);
        gcoll_sched_reduce(s, r.acc, r.acc, args->src, (size_t)n * bytes);
        gcoll_sched_round(s);
        r.cur = r.acc;
    }
    rh_halving(&r, s);
    if (folded) {
        gcoll_bref_t theirs = gcoll_bref_add(r.acc, (size_t)(me - 1) * bytes);
        gcoll_sched_send(s, gcoll_group_rank(group, me - 1), theirs, bytes);
    }
    gcoll_sched_round(s);
    return s->status;
}

const gcoll_algo_t gcoll_algo_reduce_scatter_rhalving = {
    .name    = "rhalving",
    .coll    = GCOLL_COLL_REDUCE_SCATTER,
    .summary = "recursive halving: log2 P rounds of halving size; fold for non-powers of two",
    .build   = reduce_scatter_rhalving_build,
};
