/* SPDX-License-Identifier: BSD-3-Clause */
/* Run a flat algorithm on a sub-group (leaders or a rail) of the caller's
 * group: the one place hierarchical builders translate index lists into
 * groups and arguments. */
#include <stdlib.h>
#include "base/alloc.h"
#include "algos/hier/hier.h"
#include "base/status.h"

gcoll_status_t gcoll_hier_run_flat(const gcoll_algo_t *algo, const gcoll_coll_args_t *a,
                                   const gcoll_group_t *g, const int *idx, int n, int me,
                                   gcoll_sched_t *s)
{
    if (n <= 1 && a->coll != GCOLL_COLL_ALLGATHER) return GCOLL_SUCCESS;
    int *ranks = gcoll_malloc(sizeof(int) * (size_t)n);
    if (!ranks) return GCOLL_ERROR(GCOLL_ERR_NO_MEMORY, "cannot allocate a group of %d", n);
    gcoll_group_t sub = gcoll_hier_subgroup(g, idx, n, me, ranks);
    gcoll_coll_args_t fa = *a;
    fa.flags = 0;
    gcoll_status_t st = algo->build(&fa, &sub, s);
    free(ranks);
    gcoll_sched_round(s);
    return st;
}

gcoll_status_t gcoll_hier_run_flat_at(const gcoll_algo_t *algo, const gcoll_coll_args_t *a,
                                      const gcoll_group_t *g, const int *idx, int n, int me,
                                      int root, gcoll_bref_t at, size_t count, gcoll_sched_t *s)
{
    gcoll_coll_args_t fa = *a;
    fa.root = root;
    fa.count = count;
    fa.src = fa.dst = at;
    fa.chunk_bytes = 0;
    return gcoll_hier_run_flat(algo, &fa, g, idx, n, me, s);
}

gcoll_status_t gcoll_hier_allreduce_at(const gcoll_coll_args_t *a, const gcoll_group_t *g,
                                       const int *idx, int n, int me, gcoll_bref_t at,
                                       size_t count, gcoll_sched_t *s)
{
    if (count == 0) return GCOLL_SUCCESS;
    return gcoll_hier_run_flat_at(gcoll_hier_flat_allreduce(count * a->dt_size, n), a, g, idx, n,
                                  me, 0, at, count, s);
}
