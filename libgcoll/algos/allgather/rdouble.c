/* SPDX-License-Identifier: BSD-3-Clause */
/* Recursive-doubling allgather, for a power-of-two number of ranks.
 *
 * In round k a rank exchanges everything it has (2^k blocks, aligned on 2^k)
 * with the rank whose index differs in bit k, so the data held doubles every
 * round and lands directly at its final place in dst.  For other group sizes
 * the builder hands over to gcoll_algo_allgather_bruck.build: the fold of
 * recursive doubling would cost two extra full-size rounds, Bruck costs none.
 *
 * Cost (n = count * dt_size, the bytes of one rank's block; P a power of 2):
 *     log2(P) alpha + (P-1) n beta
 *
 * Steps of group index i (P = 8):
 *     round | partner | send                  | recv into dst
 *     0     | i ^ 1   | src (block i)         | block i^1         local: dst[i] = src
 *     1     | i ^ 2   | blocks i&~1 .. +2     | blocks (i^2)&~1 .. +2
 *     2     | i ^ 4   | blocks i&~3 .. +4     | blocks (i^4)&~3 .. +4
 * No scratch. */
#include "algos/algo.h"
#include "algos/peers.h"

/* Declared in registry.c too; algo.h does not export the descriptors. */
extern const gcoll_algo_t gcoll_algo_allgather_bruck;

static gcoll_bref_t block_at(gcoll_bref_t base, int b, size_t block_bytes)
{
    return gcoll_bref_add(base, (size_t)b * block_bytes);
}

static gcoll_status_t allgather_rdouble_build(const gcoll_coll_args_t *args,
                                              const gcoll_group_t *group, gcoll_sched_t *s)
{
    int n = group->size, me = group->me;
    size_t bytes = args->count * args->dt_size;

    if (gcoll_pow2_floor(n) != n) return gcoll_algo_allgather_bruck.build(args, group, s);
    gcoll_sched_round(s);   /* do not share the caller's open round */
    gcoll_sched_copy(s, block_at(args->dst, me, bytes), args->src, bytes);
    for (int mask = 1; mask < n; mask *= 2) {
        int partner = me ^ mask;
        int peer = gcoll_group_rank(group, partner);
        size_t len = (size_t)mask * bytes;
        gcoll_bref_t mine = mask == 1 ? args->src : block_at(args->dst, me & ~(mask - 1), bytes);
        gcoll_sched_send(s, peer, mine, len);
        gcoll_sched_recv(s, peer, block_at(args->dst, partner & ~(mask - 1), bytes), len);
        gcoll_sched_round(s);
    }
    gcoll_sched_round(s);
    return s->status;
}

const gcoll_algo_t gcoll_algo_allgather_rdouble = {
    .name    = "rdouble",
    .coll    = GCOLL_COLL_ALLGATHER,
    .summary = "recursive doubling: log2 P rounds (powers of two; Bruck otherwise)",
    .build   = allgather_rdouble_build,
};
