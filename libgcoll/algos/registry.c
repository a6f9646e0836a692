/* SPDX-License-Identifier: BSD-3-Clause */
/* The one list where algorithms are registered.  Adding an algorithm: write
 * its file under algos/<collective>/, define its descriptor there, declare it
 * here and add it to gcoll_algos[].  Nothing else needs to change: GCOLL_ALGO,
 * gcoll_info -a, the selection tables and the tests all read this list. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "algos/algo.h"
#include "base/status.h"

extern const gcoll_algo_t gcoll_algo_allreduce_ring;
extern const gcoll_algo_t gcoll_algo_allreduce_rdouble;
extern const gcoll_algo_t gcoll_algo_allreduce_rabenseifner;
extern const gcoll_algo_t gcoll_algo_allreduce_reduce_bcast;
extern const gcoll_algo_t gcoll_algo_bcast_binomial;
extern const gcoll_algo_t gcoll_algo_bcast_scatter_allgather;
extern const gcoll_algo_t gcoll_algo_reduce_binomial;
extern const gcoll_algo_t gcoll_algo_reduce_rs_gather;
extern const gcoll_algo_t gcoll_algo_allgather_ring;
extern const gcoll_algo_t gcoll_algo_allgather_rdouble;
extern const gcoll_algo_t gcoll_algo_allgather_bruck;
extern const gcoll_algo_t gcoll_algo_reduce_scatter_ring;
extern const gcoll_algo_t gcoll_algo_reduce_scatter_rhalving;
extern const gcoll_algo_t gcoll_algo_alltoall_pairwise;
extern const gcoll_algo_t gcoll_algo_alltoall_bruck;
extern const gcoll_algo_t gcoll_algo_barrier_dissemination;
extern const gcoll_algo_t gcoll_algo_allreduce_shm;
extern const gcoll_algo_t gcoll_algo_allreduce_shm_sliced;
extern const gcoll_algo_t gcoll_algo_allreduce_hier;
extern const gcoll_algo_t gcoll_algo_allreduce_hier_leader;
extern const gcoll_algo_t gcoll_algo_allreduce_hier_p2p;
extern const gcoll_algo_t gcoll_algo_bcast_shm;
extern const gcoll_algo_t gcoll_algo_bcast_shm_cma;
extern const gcoll_algo_t gcoll_algo_bcast_hier;
extern const gcoll_algo_t gcoll_algo_reduce_shm;
extern const gcoll_algo_t gcoll_algo_reduce_hier;
extern const gcoll_algo_t gcoll_algo_allgather_shm;
extern const gcoll_algo_t gcoll_algo_allgather_shm_cma;
extern const gcoll_algo_t gcoll_algo_allgather_hier;
extern const gcoll_algo_t gcoll_algo_reduce_scatter_shm;
extern const gcoll_algo_t gcoll_algo_reduce_scatter_hier;
extern const gcoll_algo_t gcoll_algo_barrier_shm;
extern const gcoll_algo_t gcoll_algo_barrier_hier;

const gcoll_algo_t *const gcoll_algos[] = {
    &gcoll_algo_allreduce_ring,
    &gcoll_algo_allreduce_rdouble,
    &gcoll_algo_allreduce_rabenseifner,
    &gcoll_algo_allreduce_reduce_bcast,
    &gcoll_algo_bcast_binomial,
    &gcoll_algo_bcast_scatter_allgather,
    &gcoll_algo_reduce_binomial,
    &gcoll_algo_reduce_rs_gather,
    &gcoll_algo_allgather_ring,
    &gcoll_algo_allgather_rdouble,
    &gcoll_algo_allgather_bruck,
    &gcoll_algo_reduce_scatter_ring,
    &gcoll_algo_reduce_scatter_rhalving,
    &gcoll_algo_alltoall_pairwise,
    &gcoll_algo_alltoall_bruck,
    &gcoll_algo_barrier_dissemination,
    /* node-aware: NODE steps through shared memory (algos/hier/) */
    &gcoll_algo_allreduce_shm,
    &gcoll_algo_allreduce_shm_sliced,
    &gcoll_algo_allreduce_hier,
    &gcoll_algo_allreduce_hier_leader,
    &gcoll_algo_bcast_shm,
    &gcoll_algo_bcast_shm_cma,
    &gcoll_algo_bcast_hier,
    &gcoll_algo_reduce_shm,
    &gcoll_algo_reduce_hier,
    &gcoll_algo_allgather_shm,
    &gcoll_algo_allgather_shm_cma,
    &gcoll_algo_allgather_hier,
    &gcoll_algo_reduce_scatter_shm,
    &gcoll_algo_reduce_scatter_hier,
    &gcoll_algo_barrier_shm,
    &gcoll_algo_barrier_hier,
    /* node-aware over the transport alone (algos/hier/, no segment needed) */
    &gcoll_algo_allreduce_hier_p2p,
    NULL
};

static const char *const coll_names[GCOLL_COLL_COUNT] = {
    "allreduce", "bcast", "reduce", "allgather", "reduce_scatter", "alltoall", "barrier"
};

const char *gcoll_coll_name(gcoll_coll_t coll)
{
    return (unsigned)coll < GCOLL_COLL_COUNT ? coll_names[coll] : "unknown";
}

gcoll_coll_t gcoll_coll_from_name(const char *name)
{
    for (int c = 0; c < GCOLL_COLL_COUNT; c++)
        if (strcmp(name, coll_names[c]) == 0) return (gcoll_coll_t)c;
    return GCOLL_COLL_COUNT;
}

const gcoll_algo_t *gcoll_algo_find(gcoll_coll_t coll, const char *name)
{
    for (const gcoll_algo_t *const *a = gcoll_algos; *a; a++)
        if ((*a)->coll == coll && strcmp((*a)->name, name) == 0) return *a;
    return NULL;
}

void gcoll_coll_buf_bytes(const gcoll_coll_args_t *args, int size, size_t *src_bytes,
                          size_t *dst_bytes)
{
    size_t one = args->count * args->dt_size, all = one * (size_t)size;
    switch (args->coll) {
    case GCOLL_COLL_ALLGATHER:      *src_bytes = one; *dst_bytes = all; break;
    case GCOLL_COLL_REDUCE_SCATTER: *src_bytes = all; *dst_bytes = one; break;
    case GCOLL_COLL_ALLTOALL:       *src_bytes = all; *dst_bytes = all; break;
    case GCOLL_COLL_BARRIER:        *src_bytes = 0;   *dst_bytes = 0;   break;
    default:                        *src_bytes = one; *dst_bytes = one; break;
    }
}

/* Where the result of a reducing collective lands on this rank, for AVG. */
static size_t avg_output_bytes(const gcoll_coll_args_t *args, const gcoll_group_t *group)
{
    switch (args->coll) {
    case GCOLL_COLL_ALLREDUCE:
    case GCOLL_COLL_REDUCE_SCATTER: return args->count * args->dt_size;
    case GCOLL_COLL_REDUCE:         return group->me == args->root ? args->count * args->dt_size : 0;
    default:                        return 0;
    }
}

/* Testing only, no user setting (so not in the configuration table):
 * GCOLL_TEST_DECLINE=coll=algo[,coll=algo...] makes those algorithms decline
 * every call with GCOLL_ERR_NOT_SUPPORTED, as a builder that cannot serve a
 * shape does.  The tests use it to check that a forced algorithm which falls
 * back unannounced fails them (test/mpi/run_coll.sh algos, test/sim/test_sim).
 * Read once per process; costs one test of a byte when unset. */
static char           test_decline[256];
static pthread_once_t test_decline_once = PTHREAD_ONCE_INIT;

static void test_decline_load(void)
{
    const char *v = getenv("GCOLL_TEST_DECLINE");
    if (v && *v) snprintf(test_decline, sizeof(test_decline), ",%s,", v);
}

static int test_declines(const gcoll_algo_t *algo)
{
    pthread_once(&test_decline_once, test_decline_load);
    if (GCOLL_LIKELY(!test_decline[0])) return 0;
    char item[96];
    snprintf(item, sizeof(item), ",%s=%s,", gcoll_coll_name(algo->coll), algo->name);
    return strstr(test_decline, item) != NULL;
}

gcoll_status_t gcoll_algo_build(const gcoll_algo_t *algo, const gcoll_coll_args_t *args,
                                const gcoll_group_t *group, gcoll_dtype_t dtype, gcoll_op_t op,
                                gcoll_sched_t *s)
{
    if (GCOLL_UNLIKELY(test_declines(algo)))
        return GCOLL_ERROR(GCOLL_ERR_NOT_SUPPORTED,
                           "%s %s declines: GCOLL_TEST_DECLINE (testing only)",
                           gcoll_coll_name(algo->coll), algo->name);
    gcoll_sched_reset(s, dtype, op == GCOLL_AVG ? GCOLL_SUM : op);
    GCOLL_TRY(algo->build(args, group, s));
    if (op == GCOLL_AVG) {
        gcoll_sched_round(s);
        gcoll_sched_avg(s, args->dst, avg_output_bytes(args, group), group->size);
    }
    return gcoll_sched_finish(s);
}
