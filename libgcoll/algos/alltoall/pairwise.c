/* SPDX-License-Identifier: BSD-3-Clause */
/* Pairwise-exchange alltoall, for large messages.
 *
 * In step k (k = 1 .. P-1) index me sends its block for me+k and receives
 * the block of me-k, so every step is one send and one receive per rank and
 * no rank is the target of two others at once.  The own block is a local
 * copy.  If sendbuf is recvbuf the blocks still to be sent would be
 * overwritten, so they are first copied to scratch.
 *
 * Cost, per block of n bytes: (P-1)(alpha + n beta).
 *
 *   P = 4     step 1       step 2       step 3
 *   me 0      ->1 <-3      ->2 <-2      ->3 <-1
 *   me 1      ->2 <-0      ->3 <-3      ->0 <-2
 *   me 2      ->3 <-1      ->0 <-0      ->1 <-3
 *   me 3      ->0 <-2      ->1 <-1      ->2 <-0
 */
#include "algos/algo.h"

static gcoll_status_t alltoall_pairwise_build(const gcoll_coll_args_t *args,
                                              const gcoll_group_t *g, gcoll_sched_t *s)
{
    int n = g->size, me = g->me;
    size_t block = args->count * args->dt_size;
    gcoll_bref_t src = args->src;
    if (block == 0) return s->status;

    gcoll_sched_round(s);   /* never share a round with what was built before */
    gcoll_sched_copy(s, gcoll_bref_add(args->dst, (size_t)me * block),
                     gcoll_bref_add(args->src, (size_t)me * block), block);
    if (n > 1 && gcoll_bref_eq(args->src, args->dst)) {
        src = gcoll_sched_scratch(s, (size_t)n * block);
        gcoll_sched_copy(s, src, args->src, (size_t)n * block);
    }
    gcoll_sched_round(s);
    for (int k = 1; k < n; k++) {
        int to = (me + k) % n, from = (me - k + n) % n;
        gcoll_bref_t out = gcoll_bref_add(src, (size_t)to * block);
        gcoll_bref_t in  = gcoll_bref_add(args->dst, (size_t)from * block);
        gcoll_sched_send(s, gcoll_group_rank(g, to), out, block);
        gcoll_sched_recv(s, gcoll_group_rank(g, from), in, block);
        gcoll_sched_round(s);
    }
    return s->status;
}

const gcoll_algo_t gcoll_algo_alltoall_pairwise = {
    .name    = "pairwise",
    .coll    = GCOLL_COLL_ALLTOALL,
    .summary = "P-1 steps of exchange with me+k and me-k; for large messages",
    .build   = alltoall_pairwise_build,
};
