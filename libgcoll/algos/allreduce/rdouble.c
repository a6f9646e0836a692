/* SPDX-License-Identifier: BSD-3-Clause */
/* Recursive-doubling allreduce: log2 rounds of whole-buffer exchanges.
 *
 * In round k a rank exchanges its partial result with the rank whose virtual
 * index differs in bit k and reduces the two.  For a group size that is not a
 * power of two, the standard fold: of the first 2r indices (r = P - p2, p2
 * the largest power of two <= P) each even one sends its src to the odd one
 * after it and waits; the odd ones reduce that in and take part; at the end
 * they send the result back.
 *
 * Identical results on every rank: both partners of a round reduce the same
 * two operands (a op b on one side, b op a on the other: op is commutative,
 * IEEE addition included), so the partial results of each pair are equal bit
 * for bit and so, inductively, is the final one; the ranks folded out receive
 * a copy.
 *
 * Cost (n = count * dt_size bytes, p2 = largest power of two <= P):
 *     log2(p2) (alpha + n beta + n gamma)  [+ 2 alpha + 2 n beta + n gamma if P != p2]
 * Latency-optimal for small n; every round moves the whole buffer.
 *
 * Steps (P = 6: indices 0..3 fold in pairs, virtual ranks 0..3 = indices 1,3,4,5):
 *     round | even i < 4        | odd i < 4 and i >= 4              | x
 *     0     | send src -> i+1   | recv x <- i-1; dst = src op x     | dst or scratch
 *     1     |                   | send cur, recv x <- v^1; dst = cur op x
 *     2     |                   | send dst, recv x <- v^2; dst = dst op x
 *     3     | (recv dst <- i+1) | send dst -> i-1
 * The even ranks post their receive with their send in round 0 (in place, in
 * the round after: dst is src).  cur is src until the first reduction, then
 * dst; x is dst when cur is src out of place (dst is free then), else a
 * scratch buffer of n bytes. */
#include "algos/algo.h"
#include "algos/peers.h"

/* One exchange-and-reduce (peer_send < 0: receive only, the fold). *cur is
 * where this rank's partial result is; it is in dst afterwards. */
static void rd_absorb(const gcoll_coll_args_t *args, gcoll_bref_t tmp, int peer_send,
                      int peer_recv, gcoll_bref_t *cur, gcoll_sched_t *s)
{
    size_t bytes = args->count * args->dt_size;
    int dst_free = gcoll_bref_eq(*cur, args->src) && !gcoll_bref_eq(args->src, args->dst);
    gcoll_bref_t x = dst_free ? args->dst : tmp;
    if (peer_send >= 0) gcoll_sched_send(s, peer_send, *cur, bytes);
    gcoll_sched_recv(s, peer_recv, x, bytes);
    gcoll_sched_reduce(s, args->dst, *cur, x, bytes);
    gcoll_sched_round(s);
    *cur = args->dst;
}

static gcoll_status_t allreduce_rdouble_build(const gcoll_coll_args_t *args,
                                              const gcoll_group_t *group, gcoll_sched_t *s)
{
    int n = group->size, me = group->me, p2 = gcoll_pow2_floor(n);
    int v = gcoll_fold_vrank(me, n), folded = me < 2 * (n - p2);
    size_t bytes = args->count * args->dt_size;
    gcoll_bref_t cur = args->src;

    gcoll_sched_round(s);   /* do not share the caller's open round */
    if (v < 0) {            /* sit out: hand src over, get the result back */
        int partner = gcoll_group_rank(group, me + 1);
        gcoll_sched_send(s, partner, args->src, bytes);
        if (gcoll_bref_eq(args->src, args->dst)) gcoll_sched_round(s);   /* dst is src */
        gcoll_sched_recv(s, partner, args->dst, bytes);
        gcoll_sched_round(s);
        return s->status;
    }
    gcoll_bref_t tmp = n > 1 ? gcoll_sched_scratch(s, bytes) : args->dst;
    if (folded) rd_absorb(args, tmp, -1, gcoll_group_rank(group, me - 1), &cur, s);
    for (int mask = 1; mask < p2; mask *= 2) {
        int peer = gcoll_group_rank(group, gcoll_fold_rank(v ^ mask, n));
        rd_absorb(args, tmp, peer, peer, &cur, s);
    }
    gcoll_sched_copy(s, args->dst, cur, bytes);   /* P == 1 only */
    if (folded) gcoll_sched_send(s, gcoll_group_rank(group, me - 1), args->dst, bytes);
    gcoll_sched_round(s);
    return s->status;
}

const gcoll_algo_t gcoll_algo_allreduce_rdouble = {
    .name    = "rdouble",
    .coll    = GCOLL_COLL_ALLREDUCE,
    .summary = "recursive doubling, whole buffer each round; fold for non-powers of two",
    .build   = allreduce_rdouble_build,
};
