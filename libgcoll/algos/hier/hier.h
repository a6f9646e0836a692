/* SPDX-License-Identifier: BSD-3-Clause */
/* The node structure of a group, as hierarchical builders need it: my node's
 * members, the leaders (lowest group index of each node), my rail (the group
 * indices with my local index on every node), and whether nodes are uniform
 * (same size) and contiguous (consecutive group indices). */
#ifndef GCOLL_HIER_H
#define GCOLL_HIER_H

#include "algos/algo.h"

typedef struct {
    int  nnodes;
    int  my_node;
    int  local;          /* my index among my node's members */
    int  local_size;     /* members of my node */
    int  uniform;        /* every node has local_size members */
    int  contiguous;     /* each node's members are consecutive group indices */
    int *leaders;        /* [nnodes] group index of each node's first member */
    int *rail;           /* [nnodes] group index with my local index per node (-1 if none) */
    int  my_rail_index;  /* my index in rail[] (= my_node) */
    int *node_members;   /* [local_size] my node's members in group order */
    int  first_of_node;  /* group index of my node's first member */
} gcoll_hier_t;

/* Compute the structure; GCOLL_ERR_NO_MEMORY on failure.  Free with _fini. */
gcoll_status_t gcoll_hier_init(gcoll_hier_t *h, const gcoll_group_t *g);
void gcoll_hier_fini(gcoll_hier_t *h);

/* GCOLL_SUCCESS if a hierarchical builder can run NODE steps for this call:
 * shared memory available and the group is the whole communicator (NODE
 * steps act on the communicator's node). */
gcoll_status_t gcoll_hier_check(const gcoll_coll_args_t *args, const gcoll_group_t *g,
                                const char *algo);

/* Sub-group over a list of group indices (translated to communicator ranks
 * in `ranks`, which must hold n ints). */
gcoll_group_t gcoll_hier_subgroup(const gcoll_group_t *g, const int *idx, int n, int me,
                                  int *ranks);

/* Flat algorithms the hierarchical ones run on leader and rail groups. */
extern const gcoll_algo_t gcoll_algo_allreduce_ring;
extern const gcoll_algo_t gcoll_algo_allreduce_rdouble;
extern const gcoll_algo_t gcoll_algo_allreduce_rabenseifner;
extern const gcoll_algo_t gcoll_algo_allreduce_reduce_bcast;
extern const gcoll_algo_t gcoll_algo_bcast_binomial;
extern const gcoll_algo_t gcoll_algo_reduce_binomial;
extern const gcoll_algo_t gcoll_algo_allgather_ring;
extern const gcoll_algo_t gcoll_algo_allgather_bruck;
extern const gcoll_algo_t gcoll_algo_reduce_scatter_ring;
extern const gcoll_algo_t gcoll_algo_barrier_dissemination;

/* Flat allreduce for an inter-node group of n: latency-bound sizes by
 * recursive doubling; while each of the n blocks is small the ring's 2(n-1)
 * latencies dominate, so Rabenseifner (2 log n latencies, same bytes); the
 * pipelined ring once blocks are large (the simulator showed a ring rail
 * losing 250 us at 64 nodes for 256 KiB). */
static inline const gcoll_algo_t *gcoll_hier_flat_allreduce(size_t bytes, int n)
{
    if (bytes <= 16384) return &gcoll_algo_allreduce_rdouble;
    return bytes / (size_t)(n > 0 ? n : 1) < (128u << 10) ? &gcoll_algo_allreduce_rabenseifner
                                                         : &gcoll_algo_allreduce_ring;
}

/* Append algo on the sub-group idx[n] (me = my index in it) with args a
 * (flags cleared: flat algorithms on sub-groups use no NODE steps), then
 * close the round.  No-op for a group of one. */
gcoll_status_t gcoll_hier_run_flat(const gcoll_algo_t *algo, const gcoll_coll_args_t *a,
                                   const gcoll_group_t *g, const int *idx, int n, int me,
                                   gcoll_sched_t *s);

/* Flat algo, in place, on count elements at `at` over the sub-group idx[n]
 * (me = my index in it, root an index in it), with the algorithm's own
 * default chunk (args->chunk_bytes is the hierarchical pipeline's segment);
 * then close the round. */
gcoll_status_t gcoll_hier_run_flat_at(const gcoll_algo_t *algo, const gcoll_coll_args_t *a,
                                      const gcoll_group_t *g, const int *idx, int n, int me,
                                      int root, gcoll_bref_t at, size_t count, gcoll_sched_t *s);

/* Allreduce, in place, of count elements at `at` over the sub-group idx[n],
 * by the flat algorithm gcoll_hier_flat_allreduce() picks for the size.
 * No-op for count 0 or n 1. */
gcoll_status_t gcoll_hier_allreduce_at(const gcoll_coll_args_t *a, const gcoll_group_t *g,
                                       const int *idx, int n, int me, gcoll_bref_t at,
                                       size_t count, gcoll_sched_t *s);

/* Segments of a pipelined hierarchical collective: 4 MiB (big enough that a
 * step's synchronisation is noise), or args->chunk_bytes when set; elements,
 * at least min_elems. */
#define GCOLL_HIER_SEGMENT (4u << 20)
static inline size_t gcoll_hier_segment(const gcoll_coll_args_t *a, size_t min_elems)
{
    size_t e = (a->chunk_bytes ? a->chunk_bytes : GCOLL_HIER_SEGMENT) / a->dt_size;
    return e < min_elems ? min_elems : e;
}

/* GCOLL_ERR_NOT_SUPPORTED unless nodes are of equal size and consecutive. */
gcoll_status_t gcoll_hier_check_regular(const gcoll_hier_t *h, const char *algo);

/* Local index (within its node) of group index i. */
int gcoll_hier_local_of(const gcoll_group_t *g, int i);

#endif
