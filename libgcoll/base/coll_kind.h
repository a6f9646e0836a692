/* SPDX-License-Identifier: BSD-3-Clause */
/* The kinds of collective, as schedules and the shared-memory level name
 * them (NODE steps carry one).  Bottom layer: names and the registry are in
 * algos/algo.h. */
#ifndef GCOLL_COLL_KIND_H
#define GCOLL_COLL_KIND_H

typedef enum {
    GCOLL_COLL_ALLREDUCE = 0,
    GCOLL_COLL_BCAST,
    GCOLL_COLL_REDUCE,
    GCOLL_COLL_ALLGATHER,
    GCOLL_COLL_REDUCE_SCATTER,
    GCOLL_COLL_ALLTOALL,
    GCOLL_COLL_BARRIER,
    GCOLL_COLL_COUNT
} gcoll_coll_t;

#endif
