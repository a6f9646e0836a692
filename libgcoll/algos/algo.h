/* SPDX-License-Identifier: BSD-3-Clause */
/* An algorithm is a descriptor registered in one list (algos/registry.c):
 * its name as GCOLL_ALGO spells it, the collective it serves, a one-line
 * summary and a schedule builder.  Its cost in alpha/beta/gamma terms is in
 * the comment that opens its file; the selection tables choose, and the
 * simulator's cost model predicts.  A builder only appends steps to a
 * schedule: it does no I/O, so the same builder runs under the host
 * executor, the CUDA executor and the simulator, and composes (hierarchical
 * algorithms call the flat builders on node and rail groups, on sub-ranges
 * of the buffers). */
#ifndef GCOLL_ALGO_H
#define GCOLL_ALGO_H

#include <stddef.h>
#include "gcoll.h"
#include "core/schedule.h"

#include "base/coll_kind.h"

const char *gcoll_coll_name(gcoll_coll_t coll);
/* GCOLL_COLL_COUNT if name is not a collective. */
gcoll_coll_t gcoll_coll_from_name(const char *name);

/* The ranks an algorithm runs over: index i of the group is communicator rank
 * ranks[i] (identity when ranks is NULL).  me is the caller's index. */
typedef struct {
    int        size;
    int        me;
    const int *ranks;
    const int *node_of;   /* node index of each group index; NULL = one node */
} gcoll_group_t;

static inline int gcoll_group_rank(const gcoll_group_t *g, int i)
{
    return g->ranks ? g->ranks[i] : i;
}

/* What one call asks for, in the group's terms.  Sizes in elements.
 *   allreduce:      src, dst: count elements
 *   bcast:          dst: count elements (src == dst); root's data is its dst
 *   reduce:         src: count; dst: count, meaningful on root only (others:
 *                   builder uses scratch, must not touch dst)
 *   allgather:      src: count (this rank's block); dst: size*count
 *   reduce_scatter: src: size*count; dst: count
 *   alltoall:       src, dst: size*count
 *   barrier:        nothing
 * In place: allreduce/bcast/reduce src == dst; allgather src == dst + me*count;
 * reduce_scatter dst == src + me*count (bytes).  Builders must honour these. */
typedef struct {
    gcoll_coll_t coll;
    size_t       count;
    size_t       dt_size;
    int          root;         /* group index (bcast, reduce) */
    gcoll_bref_t src;
    gcoll_bref_t dst;
    size_t       chunk_bytes;  /* pipelining chunk; 0 = the algorithm's default */
    unsigned     flags;        /* GCOLL_ARGS_* */
} gcoll_coll_args_t;

/* The executor can run NODE steps (a shared-memory segment exists).  Without
 * it, algorithms that need NODE steps return GCOLL_ERR_NOT_SUPPORTED. */
#define GCOLL_ARGS_NODE_STEPS 0x1u

/* A builder that cannot serve a call (e.g. a hierarchical algorithm on one
 * node without shared memory) returns GCOLL_ERR_NOT_SUPPORTED with a sentence
 * saying why; the caller then falls back to the default flat algorithm with a
 * WARN, so a forced algorithm never produces a wrong result. */
typedef gcoll_status_t (*gcoll_algo_build_fn)(const gcoll_coll_args_t *args,
                                              const gcoll_group_t *group, gcoll_sched_t *s);

typedef struct gcoll_algo {
    const char          *name;     /* GCOLL_ALGO spelling, unique per collective */
    gcoll_coll_t         coll;
    const char          *summary;  /* one line for gcoll_info -a */
    gcoll_algo_build_fn  build;
} gcoll_algo_t;

/* The one list of algorithms, NULL-terminated (algos/registry.c). */
extern const gcoll_algo_t *const gcoll_algos[];

/* Algorithm of a collective by name, or NULL. */
const gcoll_algo_t *gcoll_algo_find(gcoll_coll_t coll, const char *name);

/* Build the whole schedule of one call into s: reset s, run the builder (AVG
 * built as SUM), append the AVG division of the output, finish.  Used by the
 * executors and the simulator alike, so both run the same schedule. */
gcoll_status_t gcoll_algo_build(const gcoll_algo_t *algo, const gcoll_coll_args_t *args,
                                const gcoll_group_t *group, gcoll_dtype_t dtype, gcoll_op_t op,
                                gcoll_sched_t *s);

/* Byte sizes of src and dst for args over a group of `size` ranks (used by the
 * simulator and the tests to size buffers). */
void gcoll_coll_buf_bytes(const gcoll_coll_args_t *args, int size, size_t *src_bytes,
                          size_t *dst_bytes);

#endif
