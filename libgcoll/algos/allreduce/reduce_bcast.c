/* SPDX-License-Identifier: BSD-3-Clause */
/* Allreduce as reduce to group index 0, then broadcast from it.
 *
 * The model of a composition: this file builds nothing itself, it calls the
 * builders of two descriptors on the same schedule, one after the other.
 * Each builder closes the round it found open before adding steps, so the
 * broadcast starts only after the reduce's last local step.  The reduce
 * leaves the result in recvbuf on index 0 (and does not touch recvbuf
 * elsewhere); the broadcast then fills everyone's recvbuf from there.
 *
 * Cost: 2 L alpha + 2 L n beta + L n gamma (L = ceil(log2 P)): twice the
 * latency of recursive doubling, but any P and a single root, so it suits
 * small messages on groups where the exchange pattern of recursive doubling
 * is expensive.
 *
 *   phase      steps    what
 *   reduce     L        binomial tree into index 0 (reduce/binomial.c)
 *   bcast      L        binomial tree from index 0 (bcast/binomial.c)
 */
#include "algos/algo.h"
#include "base/status.h"

extern const gcoll_algo_t gcoll_algo_reduce_binomial;
extern const gcoll_algo_t gcoll_algo_bcast_binomial;

static gcoll_status_t allreduce_rb_build(const gcoll_coll_args_t *args, const gcoll_group_t *g,
                                         gcoll_sched_t *s)
{
    gcoll_coll_args_t reduce = *args;
    reduce.coll = GCOLL_COLL_REDUCE;
    reduce.root = 0;
    GCOLL_TRY(gcoll_algo_reduce_binomial.build(&reduce, g, s));

    gcoll_coll_args_t bcast = *args;
    bcast.coll = GCOLL_COLL_BCAST;
    bcast.root = 0;
    bcast.src  = args->dst;   /* bcast's buffer is its dst; src == dst by convention */
    return gcoll_algo_bcast_binomial.build(&bcast, g, s);
}

const gcoll_algo_t gcoll_algo_allreduce_reduce_bcast = {
    .name    = "reduce_bcast",
    .coll    = GCOLL_COLL_ALLREDUCE,
    .summary = "binomial reduce to one rank then binomial broadcast; 2 log P steps, any P",
    .build   = allreduce_rb_build,
};
