/* SPDX-License-Identifier: BSD-3-Clause */
/* Dissemination barrier (Hensgen, Finkel and Manber).
 *
 * In round k (k = 0 .. L-1, L = ceil(log2 P)) index me signals me + 2^k and
 * waits for me - 2^k.  After round k every rank has heard, directly or not,
 * from the 2^(k+1) ranks before it, so after L rounds from all of them: no
 * rank leaves before every rank has arrived.  Works for any P.
 *
 * Schedules drop zero-byte steps, so the signal is a one-byte token sent
 * from one scratch byte and received into another (they must not overlap:
 * a round posts its send and receive together).  Its value is meaningless.
 *
 * Cost: L alpha.
 *
 *   P = 5     round 0      round 1      round 2
 *   me 0      ->1 <-4      ->2 <-3      ->4 <-1
 *   me 1      ->2 <-0      ->3 <-4      ->0 <-2
 *   me 2      ->3 <-1      ->4 <-0      ->1 <-3
 */
#include "algos/algo.h"
#include "algos/peers.h"

static gcoll_status_t barrier_dissemination_build(const gcoll_coll_args_t *args,
                                                  const gcoll_group_t *g, gcoll_sched_t *s)
{
    (void)args;
    int n = g->size;
    if (n == 1) return s->status;
    gcoll_bref_t token_out = gcoll_sched_scratch(s, 1);
    gcoll_bref_t token_in  = gcoll_sched_scratch(s, 1);

    gcoll_sched_round(s);   /* never share a round with what was built before */
    for (int dist = 1; dist < n; dist *= 2) {
        gcoll_sched_send(s, gcoll_group_rank(g, (g->me + dist) % n), token_out, 1);
        gcoll_sched_recv(s, gcoll_group_rank(g, (g->me - dist + n) % n), token_in, 1);
        gcoll_sched_round(s);
    }
    return s->status;
}

const gcoll_algo_t gcoll_algo_barrier_dissemination = {
    .name    = "dissemination",
    .coll    = GCOLL_COLL_BARRIER,
    .summary = "ceil(log2 P) rounds of one-byte signals to me+2^k; any P",
    .build   = barrier_dissemination_build,
};
