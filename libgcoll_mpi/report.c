/* SPDX-License-Identifier: BSD-3-Clause */
/* Counters and GCOLL_MPI_REPORT=1: at MPI_Finalize, rank 0 of
 * MPI_COMM_WORLD prints to stderr one line per intercepted function it
 * called, "gcoll_mpi: MPI_Allreduce served=N fallback=M", then the most
 * frequent fallback reasons (function and reason, with counts).  The
 * counters are rank 0's own: every rank takes the same decisions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gmpi.h"

/* GMPI_FN(coll, mode) order: the blocking forms, the MPI_I* ones, MPI-4's
 * persistent ones, Open MPI 4.1's MPIX_ persistent ones. */
static const char *const names[GMPI_FN_COUNT] = {
    "MPI_Allreduce", "MPI_Reduce", "MPI_Bcast", "MPI_Allgather", "MPI_Reduce_scatter_block",
    "MPI_Alltoall", "MPI_Barrier",
    "MPI_Iallreduce", "MPI_Ireduce", "MPI_Ibcast", "MPI_Iallgather",
    "MPI_Ireduce_scatter_block", "MPI_Ialltoall", "MPI_Ibarrier",
    "MPI_Allreduce_init", "MPI_Reduce_init", "MPI_Bcast_init", "MPI_Allgather_init",
    "MPI_Reduce_scatter_block_init", "MPI_Alltoall_init", "MPI_Barrier_init",
    "MPIX_Allreduce_init", "MPIX_Reduce_init", "MPIX_Bcast_init", "MPIX_Allgather_init",
    "MPIX_Reduce_scatter_block_init", "MPIX_Alltoall_init", "MPIX_Barrier_init",
};

static unsigned long served[GMPI_FN_COUNT], fallback[GMPI_FN_COUNT];

/* Reasons are string constants: a small table keyed by (fn, pointer). */
#define MAX_REASONS 64
static struct { gmpi_fn_t fn; const char *why; unsigned long n; } reasons[MAX_REASONS];
static int n_reasons;

const char *gmpi_fn_name(gmpi_fn_t fn)
{
    return fn >= 0 && fn < GMPI_FN_COUNT ? names[fn] : "?";
}

/* On every served call, so no atomic read-modify-write (its locked add was
 * the costliest instruction of the drop-in's path, perf annotate): threads
 * racing on one counter under MPI_THREAD_MULTIPLE may lose counts, which
 * only the report shows. */
void gmpi_count_served(gmpi_fn_t fn)
{
    __atomic_store_n(&served[fn], __atomic_load_n(&served[fn], __ATOMIC_RELAXED) + 1,
                     __ATOMIC_RELAXED);
}

void gmpi_count_fallback(gmpi_fn_t fn, const char *why)
{
    __atomic_fetch_add(&fallback[fn], 1, __ATOMIC_RELAXED);
    /* Racy under MPI_THREAD_MULTIPLE only in the report's reason counts. */
    for (int i = 0; i < n_reasons; i++)
        if (reasons[i].fn == fn && reasons[i].why == why) {
            reasons[i].n++;
            return;
        }
    if (n_reasons < MAX_REASONS) {
        reasons[n_reasons].fn = fn;
        reasons[n_reasons].why = why;
        reasons[n_reasons].n = 1;
        n_reasons++;
    }
}

static int by_count(const void *a, const void *b)
{
    unsigned long x = ((const __typeof__(reasons[0]) *)a)->n;
    unsigned long y = ((const __typeof__(reasons[0]) *)b)->n;
    return x < y ? 1 : x > y ? -1 : 0;
}

void gmpi_report_print(void)
{
    const char *v = getenv("GCOLL_MPI_REPORT");
    if (!v || !*v || !strcmp(v, "0")) return;
    int rank = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank != 0) return;
    for (int f = 0; f < GMPI_FN_COUNT; f++)
        if (served[f] || fallback[f])
            fprintf(stderr, "gcoll_mpi: %s served=%lu fallback=%lu\n", names[f], served[f],
                    fallback[f]);
    qsort(reasons, (size_t)n_reasons, sizeof(reasons[0]), by_count);
    for (int i = 0; i < n_reasons && i < 8; i++)
        fprintf(stderr, "gcoll_mpi: fallback %s: %s (%lu)\n", names[reasons[i].fn],
                reasons[i].why, reasons[i].n);
    fflush(stderr);
}
