/* SPDX-License-Identifier: BSD-3-Clause */
/* One run of the fault-injection sweep (run_fault.sh): a workload that
 * creates a communicator, runs every collective at four sizes, the
 * nonblocking and persistent forms, a compressor, a last allreduce (the
 * probe) and destroy, under GCOLL_FAULT_ALLOC=RANK:N, which fails the N-th
 * allocation of libgcoll on one rank.
 *
 * What must hold, whatever N:
 *   - no rank hangs (an alarm turns a hang into a failure; the script runs
 *     each job under a timeout as well);
 *   - if any rank saw an error, every rank saw one (a failure one rank
 *     meets alone reaches the others);
 *   - the probe, the last collective, succeeded on every rank or on none;
 *   - every call that returned GCOLL_SUCCESS produced the right result,
 *     checked against a serial computation.
 * Rank 0 prints "test_fault: fired=F allocs=A errors=E/P ok" or FAIL lines;
 * the exit status is 1 on any failure. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <mpi.h>
#include "gcoll.h"

/* The injector's counters (libgcoll/base/alloc.h, internal). */
long gcoll_fault_count(void);
int  gcoll_fault_fired(void);

#define HANG_SECONDS 30
#define MAX_STEPS    64

static int rank, size, nsteps, nerrors, wrong;
static gcoll_status_t status_of[MAX_STEPS];
static char first_error[256];

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "FAIL test_fault: a rank hung\n";
    if (write(2, msg, sizeof(msg) - 1) < 0) { /* exiting anyway */ }
    _exit(2);
}

static void record(const char *what, gcoll_status_t st)
{
    if (nsteps < MAX_STEPS) status_of[nsteps++] = st;
    if (st == GCOLL_SUCCESS) return;
    if (!nerrors++)
        snprintf(first_error, sizeof(first_error), "%s: %s: %s", what, gcoll_strerror(st),
                 gcoll_last_error());
}

static void check(const char *what, size_t i, double got, double want)
{
    if (got == want) return;
    if (wrong++ < 5)
        printf("FAIL rank %d: %s: element %zu is %g, expected %g\n", rank, what, i, got, want);
}

static float value(int r, size_t i)
{
    return (float)((r + 1) * 3 + (int)(i % 13));
}

/* Sum over ranks of value(r, i), exact in float32 at these sizes. */
static float sum_of(size_t i)
{
    float s = 0;
    for (int r = 0; r < size; r++) s += value(r, i);
    return s;
}

static void run_allreduce(gcoll_comm_t comm, size_t n, float *a, float *b)
{
    for (size_t i = 0; i < n; i++) a[i] = value(rank, i);
    gcoll_status_t st = gcoll_allreduce(a, b, n, GCOLL_FLOAT32, GCOLL_SUM, comm);
    record("gcoll_allreduce", st);
    for (size_t i = 0; st == GCOLL_SUCCESS && i < n; i++) check("allreduce", i, b[i], sum_of(i));
}

static void run_bcast(gcoll_comm_t comm, size_t n, float *a)
{
    int root = (int)(n % (size_t)size);
    for (size_t i = 0; i < n; i++) a[i] = rank == root ? value(root, i) : -1;
    gcoll_status_t st = gcoll_bcast(a, n, GCOLL_FLOAT32, root, comm);
    record("gcoll_bcast", st);
    for (size_t i = 0; st == GCOLL_SUCCESS && i < n; i++) check("bcast", i, a[i], value(root, i));
}

static void run_reduce(gcoll_comm_t comm, size_t n, float *a, float *b)
{
    int root = size - 1;
    for (size_t i = 0; i < n; i++) a[i] = value(rank, i);
    gcoll_status_t st = gcoll_reduce(a, b, n, GCOLL_FLOAT32, GCOLL_SUM, root, comm);
    record("gcoll_reduce", st);
    for (size_t i = 0; st == GCOLL_SUCCESS && rank == root && i < n; i++)
        check("reduce", i, b[i], sum_of(i));
}

static void run_allgather(gcoll_comm_t comm, size_t n, float *a, float *b)
{
    for (size_t i = 0; i < n; i++) a[i] = value(rank, i);
    gcoll_status_t st = gcoll_allgather(a, b, n, GCOLL_FLOAT32, comm);
    record("gcoll_allgather", st);
    for (size_t i = 0; st == GCOLL_SUCCESS && i < n * (size_t)size; i++)
        check("allgather", i, b[i], value((int)(i / n), i % n));
}

static void run_reduce_scatter(gcoll_comm_t comm, size_t n, float *a, float *b)
{
    for (size_t i = 0; i < n * (size_t)size; i++) a[i] = value(rank, i);
    gcoll_status_t st = gcoll_reduce_scatter(a, b, n, GCOLL_FLOAT32, GCOLL_SUM, comm);
    record("gcoll_reduce_scatter", st);
    for (size_t i = 0; st == GCOLL_SUCCESS && i < n; i++)
        check("reduce_scatter", i, b[i], sum_of((size_t)rank * n + i));
}

static void run_alltoall(gcoll_comm_t comm, size_t n, float *a, float *b)
{
    /* block d of rank r's send: value(r, d * n + i); we get block `rank` of each */
    for (size_t i = 0; i < n * (size_t)size; i++) a[i] = value(rank, i);
    gcoll_status_t st = gcoll_alltoall(a, b, n, GCOLL_FLOAT32, comm);
    record("gcoll_alltoall", st);
    for (size_t i = 0; st == GCOLL_SUCCESS && i < n * (size_t)size; i++)
        check("alltoall", i, b[i], value((int)(i / n), (size_t)rank * n + i % n));
}

static void run_requests(gcoll_comm_t comm, size_t n, float *a, float *b)
{
    gcoll_request_t req = GCOLL_REQUEST_NULL;
    for (size_t i = 0; i < n; i++) a[i] = value(rank, i);
    gcoll_status_t st = gcoll_iallreduce(a, b, n, GCOLL_FLOAT32, GCOLL_SUM, comm, &req);
    if (st == GCOLL_SUCCESS) st = gcoll_wait(&req);
    record("gcoll_iallreduce", st);
    for (size_t i = 0; st == GCOLL_SUCCESS && i < n; i++) check("iallreduce", i, b[i], sum_of(i));

    st = gcoll_allreduce_init(a, b, n, GCOLL_FLOAT32, GCOLL_SUM, comm, &req);
    if (st == GCOLL_SUCCESS) {
        for (int k = 0; k < 2 && st == GCOLL_SUCCESS; k++) {
            memset(b, 0, n * sizeof(float));
            st = gcoll_start(req);
            if (st == GCOLL_SUCCESS) st = gcoll_wait(&req);
        }
        gcoll_request_free(&req);
    }
    record("gcoll_allreduce_init", st);
    for (size_t i = 0; st == GCOLL_SUCCESS && i < n; i++) check("persistent", i, b[i], sum_of(i));
}

static void run_compressed(gcoll_comm_t comm, size_t n, float *a, float *b)
{
    gcoll_compressor_t cz = NULL;
    gcoll_compress_params_t p;
    memset(&p, 0, sizeof(p));
    p.kind = GCOLL_COMPRESS_BF16;
    gcoll_status_t st = gcoll_compressor_create(comm, n, &p, &cz);
    record("gcoll_compressor_create", st);
    if (st != GCOLL_SUCCESS) return;
    for (size_t i = 0; i < n; i++) a[i] = value(rank, i);
    st = gcoll_allreduce_compressed(a, b, n, GCOLL_FLOAT32, GCOLL_SUM, cz);
    record("gcoll_allreduce_compressed", st);
    /* bf16 keeps 8 significant bits: these small integers are exact */
    for (size_t i = 0; st == GCOLL_SUCCESS && i < n; i++) check("compressed", i, b[i], sum_of(i));
    record("gcoll_compressor_destroy", gcoll_compressor_destroy(cz));
}

static void workload(void)
{
    static const size_t sizes[] = { 1, 7, 1000, 70001 };
    enum { MAXN = 70001 };
    float *a = malloc(sizeof(float) * MAXN * (size_t)size);
    float *b = malloc(sizeof(float) * MAXN * (size_t)size);
    gcoll_comm_t comm = NULL;
    gcoll_status_t st = gcoll_comm_create(MPI_COMM_WORLD, &comm);
    record("gcoll_comm_create", st);
    if (st != GCOLL_SUCCESS) goto out;
    for (int s = 0; s < 4; s++) {
        size_t n = sizes[s];
        run_allreduce(comm, n, a, b);
        run_bcast(comm, n, a);
        run_reduce(comm, n, a, b);
        run_allgather(comm, n, a, b);
        run_reduce_scatter(comm, n, a, b);
        run_alltoall(comm, n, a, b);
    }
    record("gcoll_barrier", gcoll_barrier(comm));
    run_requests(comm, 1000, a, b);
    run_compressed(comm, 4096, a, b);
    run_allreduce(comm, 5, a, b);   /* the probe */
    record("gcoll_comm_destroy", gcoll_comm_destroy(comm));
out:
    free(a);
    free(b);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    signal(SIGALRM, on_alarm);
    alarm(HANG_SECONDS);
    workload();
    alarm(0);

    /* what each rank saw: fired, allocations, errors, probe outcome, wrong */
    int probe = nsteps >= 2 ? status_of[nsteps - 2] == GCOLL_SUCCESS : 0;
    long mine[5] = { gcoll_fault_fired(), gcoll_fault_count(), nerrors, probe, wrong };
    long all[5 * 64];
    int failures = 0;
    if (size > 64) MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Gather(mine, 5, MPI_LONG, all, 5, MPI_LONG, 0, MPI_COMM_WORLD);
    if (nerrors) printf("rank %d: %d error(s), first: %s\n", rank, nerrors, first_error);
    fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        long fired = 0, allocs = 0, with_errors = 0, probes = 0;
        for (int r = 0; r < size; r++) {
            fired += all[5 * r];
            if (all[5 * r]) allocs = all[5 * r + 1];
            if (all[5 * r + 1] > allocs && !fired) allocs = all[5 * r + 1];
            with_errors += all[5 * r + 2] > 0;
            probes += all[5 * r + 3];
            failures += all[5 * r + 4] > 0;
        }
        if (with_errors && with_errors != size) {
            printf("FAIL test_fault: %ld of %d ranks saw an error, the others none\n",
                   with_errors, size);
            failures++;
        }
        if (probes && probes != size) {
            printf("FAIL test_fault: the last allreduce succeeded on %ld of %d ranks\n", probes,
                   size);
            failures++;
        }
        printf("test_fault: fired=%ld allocs=%ld errors=%ld/%d probe=%ld/%d %s\n", fired, allocs,
               with_errors, size, probes, size, failures ? "FAILED" : "ok");
    }
    MPI_Bcast(&failures, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return failures ? 1 : 0;
}
