/* SPDX-License-Identifier: BSD-3-Clause */
/* Rabenseifner allreduce: recursive-halving reduce-scatter, then
 * recursive-doubling allgather.
 *
 * The buffer is split into p2 blocks (p2 = largest power of two <= P).  In
 * halving round k a rank keeps the half of its current range that holds its
 * own block, sends the other half to the partner (virtual index differing in
 * bit log2(p2)-1-k) and reduces the partner's copy of the kept half into dst.
 * After log2(p2) rounds virtual rank v holds block v fully reduced; the
 * doubling rounds then exchange finished ranges back.  Other group sizes use
 * the standard fold: of the first 2r indices (r = P - p2) each even one sends
 * its src to the odd one after it, which reduces it in and takes part, and
 * gets the result back at the end.
 *
 * Identical results on every rank: each block is reduced to its final value
 * on exactly one rank and only copied afterwards.
 *
 * Cost (n = count * dt_size bytes):
 *     2 log2(p2) alpha + 2 (p2-1)/p2 n beta + (p2-1)/p2 n gamma
 *     [+ 2 alpha + 2 n beta + n gamma if P != p2]
 *
 * Steps of virtual rank v, p2 = 4 (blocks B0..B3, h = the kept range):
 *     round | partner | send              | recv                 | local
 *     0     | v ^ 2   | cur: other half   | h (2 blocks) -> x    | dst[h] = cur[h] op x
 *     1     | v ^ 1   | dst: other block  | h = block v -> x     | dst[h] = dst[h] op x
 *     2     | v ^ 1   | dst block v       | partner's block -> dst
 *     3     | v ^ 2   | dst blocks of v   | partner's 2 blocks -> dst
 * cur is src (dst after a fold); x is dst[h] while cur is src out of place,
 * else scratch (half the buffer; the whole buffer to fold in place).  The
 * fold adds a round before and after, as in rdouble.c. */
#include "algos/algo.h"
#include "algos/peers.h"

typedef struct {
    const gcoll_coll_args_t *args;
    const gcoll_group_t     *group;
    int          p2, v;
    gcoll_bref_t cur, tmp;
} rab_t;

/* Byte range of virtual blocks [lo, lo + nblk). */
static void rab_range(const rab_t *r, int lo, int nblk, size_t *off, size_t *len)
{
    size_t count = r->args->count, dt = r->args->dt_size;
    size_t b = gcoll_block_off(count, r->p2, lo), e = gcoll_block_off(count, r->p2, lo + nblk);
    *off = b * dt;
    *len = (e - b) * dt;
}

static int rab_peer(const rab_t *r, int vpartner)
{
    return gcoll_group_rank(r->group, gcoll_fold_rank(vpartner, r->group->size));
}

/* Receive the peer's partial of [off, off+len) and reduce it into dst. */
static void rab_reduce_in(rab_t *r, int peer, size_t off, size_t len, gcoll_sched_t *s)
{
    const gcoll_coll_args_t *a = r->args;
    int dst_free = gcoll_bref_eq(r->cur, a->src) && !gcoll_bref_eq(a->src, a->dst);
    gcoll_bref_t out = gcoll_bref_add(a->dst, off);
    gcoll_bref_t x = dst_free ? out : r->tmp;
    gcoll_sched_recv(s, peer, x, len);
    gcoll_sched_reduce(s, out, gcoll_bref_add(r->cur, off), x, len);
}

static void rab_halving(rab_t *r, gcoll_sched_t *s)
{
    for (int mask = r->p2 / 2; mask >= 1; mask /= 2) {
        int vp = r->v ^ mask, peer = rab_peer(r, vp);
        size_t soff, slen, koff, klen;
        rab_range(r, vp & ~(mask - 1), mask, &soff, &slen);
        rab_range(r, r->v & ~(mask - 1), mask, &koff, &klen);
        gcoll_sched_send(s, peer, gcoll_bref_add(r->cur, soff), slen);
        rab_reduce_in(r, peer, koff, klen, s);
        gcoll_sched_round(s);
        r->cur = r->args->dst;
    }
}

static void rab_doubling(const rab_t *r, gcoll_sched_t *s)
{
    for (int mask = 1; mask < r->p2; mask *= 2) {
        int vp = r->v ^ mask, peer = rab_peer(r, vp);
        size_t moff, mlen, poff, plen;
        rab_range(r, r->v & ~(mask - 1), mask, &moff, &mlen);
        rab_range(r, vp & ~(mask - 1), mask, &poff, &plen);
        gcoll_sched_send(s, peer, gcoll_bref_add(r->args->dst, moff), mlen);
        gcoll_sched_recv(s, peer, gcoll_bref_add(r->args->dst, poff), plen);
        gcoll_sched_round(s);
    }
}

/* Scratch: the larger first half; the whole buffer if folding in in place. */
static gcoll_bref_t rab_scratch(const rab_t *r, int fold_in_place, gcoll_sched_t *s)
{
    size_t off, lo_len, hi_len;
    rab_range(r, 0, r->p2 / 2, &off, &lo_len);
    rab_range(r, r->p2 / 2, r->p2 / 2, &off, &hi_len);
    size_t need = lo_len > hi_len ? lo_len : hi_len;
    if (fold_in_place) need = r->args->count * r->args->dt_size;
    return gcoll_sched_scratch(s, need);
}

static gcoll_status_t allreduce_rabenseifner_build(const gcoll_coll_args_t *args,
                                                   const gcoll_group_t *group,
                                                   gcoll_sched_t *s)
{
    int n = group->size, me = group->me;
    size_t bytes = args->count * args->dt_size;
    int in_place = gcoll_bref_eq(args->src, args->dst);
    int folded = me < 2 * (n - gcoll_pow2_floor(n));
    rab_t r = { args, group, gcoll_pow2_floor(n), gcoll_fold_vrank(me, n), args->src, args->dst };

    gcoll_sched_round(s);   /* do not share the caller's open round */
    if (r.v < 0) {          /* sit out: hand src over, get the result back */
        int partner = gcoll_group_rank(group, me + 1);
        gcoll_sched_send(s, partner, args->src, bytes);
        if (gcoll_bref_eq(args->src, args->dst)) gcoll_sched_round(s);   /* dst is src */
        gcoll_sched_recv(s, partner, args->dst, bytes);
        gcoll_sched_round(s);
        return s->status;
    }
    if (n == 1) gcoll_sched_copy(s, args->dst, args->src, bytes);
    if (n > 1) r.tmp = rab_scratch(&r, folded && in_place, s);
    if (folded) {
        rab_reduce_in(&r, gcoll_group_rank(group, me - 1), 0, bytes, s);
        gcoll_sched_round(s);
        r.cur = args->dst;
    }
    rab_halving(&r, s);
    rab_doubling(&r, s);
    if (folded) gcoll_sched_send(s, gcoll_group_rank(group, me - 1), args->dst, bytes);
    gcoll_sched_round(s);
    return s->status;
}

const gcoll_algo_t gcoll_algo_allreduce_rabenseifner = {
    .name    = "rabenseifner",
    .coll    = GCOLL_COLL_ALLREDUCE,
    .summary = "recursive-halving reduce-scatter + recursive-doubling allgather; fold",
    .build   = allreduce_rabenseifner_build,
};
