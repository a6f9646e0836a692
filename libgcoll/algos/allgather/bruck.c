/* SPDX-License-Identifier: BSD-3-Clause */
/* Bruck allgather: ceil(log2 P) rounds for any P.
 *
 * Blocks are gathered in a scratch buffer tmp in rotated order, tmp[j] being
 * the block of group index me+j (mod P).  In the round of distance d = 2^k a
 * rank sends its first min(d, P-d) blocks to me-d and receives as many from
 * me+d into tmp[d..]: after the round it holds 2d consecutive blocks.  A final
 * local rotation copies tmp into dst in group order.
 *
 * Cost (n = count * dt_size, the bytes of one rank's block):
 *     ceil(log2 P) alpha + (P-1) n beta      (+ a local copy of (P-1) n bytes)
 * One message per round, which is why this beats recursive doubling with a
 * fold for small blocks on non-powers of two.
 *
 * Steps of group index i (P = 5: distances 1, 2, 4):
 *     round | send to i-d       | recv from i+d      | local
 *     0     | src (1 block)     | 1 block -> tmp[1]  | tmp[0] = src; dst[i] = src
 *     1     | tmp[0..2)         | 2 blocks -> tmp[2] |
 *     2     | tmp[0..1)         | 1 block -> tmp[4]  | dst[i+1..P) = tmp[1..P-i),
 *           |                   |                    | dst[0..i) = tmp[P-i..P)
 * Scratch: P blocks.  Round 0 sends from src so it need not wait for a copy. */
#include "algos/algo.h"
#include "algos/peers.h"

static gcoll_bref_t block_at(gcoll_bref_t base, int b, size_t block_bytes)
{
    return gcoll_bref_add(base, (size_t)b * block_bytes);
}

/* dst in group order from tmp in rotated order; runs after the last receive.
 * dst[me] comes from src (round 0), so tmp[0] is not copied. */
static void bruck_rotate(const gcoll_coll_args_t *args, const gcoll_group_t *group,
                         gcoll_bref_t tmp, gcoll_sched_t *s)
{
    int n = group->size, me = group->me;
    size_t bytes = args->count * args->dt_size;
    gcoll_sched_copy(s, block_at(args->dst, me + 1, bytes), block_at(tmp, 1, bytes),
                     (size_t)(n - me - 1) * bytes);
    gcoll_sched_copy(s, args->dst, block_at(tmp, n - me, bytes), (size_t)me * bytes);
}

static gcoll_status_t allgather_bruck_build(const gcoll_coll_args_t *args,
                                            const gcoll_group_t *group, gcoll_sched_t *s)
{
    int n = group->size, me = group->me;
    size_t bytes = args->count * args->dt_size;
    gcoll_bref_t tmp = n > 1 ? gcoll_sched_scratch(s, (size_t)n * bytes) : args->dst;

    gcoll_sched_round(s);   /* do not share the caller's open round */
    gcoll_sched_copy(s, block_at(args->dst, me, bytes), args->src, bytes);
    if (n > 2) gcoll_sched_copy(s, tmp, args->src, bytes);   /* sent again from round 1 */
    for (int d = 1; d < n; d *= 2) {
        int nblk = d < n - d ? d : n - d;
        int to = gcoll_group_rank(group, (me - d + n) % n);
        int from = gcoll_group_rank(group, (me + d) % n);
        gcoll_sched_send(s, to, d == 1 ? args->src : tmp, (size_t)nblk * bytes);
        gcoll_sched_recv(s, from, block_at(tmp, d, bytes), (size_t)nblk * bytes);
        if (2 * d >= n) bruck_rotate(args, group, tmp, s);
        gcoll_sched_round(s);
    }
    gcoll_sched_round(s);
    return s->status;
}

const gcoll_algo_t gcoll_algo_allgather_bruck = {
    .name    = "bruck",
    .coll    = GCOLL_COLL_ALLGATHER,
    .summary = "Bruck: ceil(log2 P) rounds for any P, then a local rotation",
    .build   = allgather_bruck_build,
};
