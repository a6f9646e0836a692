/* SPDX-License-Identifier: BSD-3-Clause */
/* Ring allgather.
 *
 * Each rank passes to its successor the block it received in the previous
 * step, so after P-1 steps every rank holds all P blocks.  Every byte crosses
 * every link once: bandwidth-optimal, latency linear in P.
 *
 * Cost (n = count * dt_size, the bytes of one rank's block):
 *     (P-1) alpha + (P-1) n beta
 *
 * Steps of group index i (blocks are dst blocks; next = i+1, prev = i-1):
 *     round | send to next    | recv from prev    | local
 *     0     | src (block i)   | block i-1 -> dst  | dst[i] = src (no-op in place)
 *     k     | dst block i-k   | block i-k-1 -> dst|
 *     P-2   | dst block i-P+2 | block i+1 -> dst  |
 * No scratch.  Round 0 sends from src so it need not wait for the copy. */
#include "algos/algo.h"
#include "algos/peers.h"

static gcoll_bref_t block_at(gcoll_bref_t base, int b, size_t block_bytes)
{
    return gcoll_bref_add(base, (size_t)b * block_bytes);
}

static gcoll_status_t allgather_ring_build(const gcoll_coll_args_t *args,
                                           const gcoll_group_t *group, gcoll_sched_t *s)
{
    int n = group->size, me = group->me;
    size_t bytes = args->count * args->dt_size;
    int next = gcoll_group_rank(group, gcoll_ring_next(me, n));
    int prev = gcoll_group_rank(group, gcoll_ring_prev(me, n));

    gcoll_sched_round(s);   /* do not share the caller's open round */
    gcoll_sched_copy(s, block_at(args->dst, me, bytes), args->src, bytes);
    for (int k = 0; k < n - 1; k++) {
        int send_b = (me - k + n) % n, recv_b = (me - k - 1 + n) % n;
        gcoll_bref_t from = k == 0 ? args->src : block_at(args->dst, send_b, bytes);
        gcoll_sched_send(s, next, from, bytes);
        gcoll_sched_recv(s, prev, block_at(args->dst, recv_b, bytes), bytes);
        gcoll_sched_round(s);
    }
    gcoll_sched_round(s);
    return s->status;
}

const gcoll_algo_t gcoll_algo_allgather_ring = {
    .name    = "ring",
    .coll    = GCOLL_COLL_ALLGATHER,
    .summary = "ring: P-1 steps, each rank forwards one block; bandwidth-optimal",
    .build   = allgather_ring_build,
};
