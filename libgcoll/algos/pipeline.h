/* SPDX-License-Identifier: BSD-3-Clause */
/* Software pipelining of a chunked algorithm: nseg segments, each a chain of
 * len steps, at most depth segments in flight (segment g starts at round
 * gcoll_pipe_start(g, depth, len), peers.h).  Round t runs step
 * t - start(g) of every segment started and not finished, then closes the
 * round.  The ring allreduce and ring reduce_scatter share this driver. */
#ifndef GCOLL_PIPELINE_H
#define GCOLL_PIPELINE_H

#include "algos/peers.h"
#include "core/schedule.h"

typedef void (*gcoll_pipe_step_fn)(const void *ctx, size_t seg, int step, gcoll_sched_t *s);

static inline void gcoll_pipe_schedule(size_t nseg, int depth, int len, gcoll_pipe_step_fn step,
                                       const void *ctx, gcoll_sched_t *s)
{
    size_t nrounds = nseg ? gcoll_pipe_start(nseg - 1, depth, len) + (size_t)len : 0;
    size_t lo = 0;   /* oldest segment still in flight */
    for (size_t t = 0; t < nrounds; t++) {
        while (gcoll_pipe_start(lo, depth, len) + (size_t)len <= t) lo++;
        for (size_t g = lo; g < nseg && gcoll_pipe_start(g, depth, len) <= t; g++)
            step(ctx, g, (int)(t - gcoll_pipe_start(g, depth, len)), s);
        gcoll_sched_round(s);
    }
}

#endif
