/* SPDX-License-Identifier: BSD-3-Clause */
/* Several threads, each creating its own communicator and running
 * collectives on it at the same time as the others (the thread model of
 * gcoll.h: concurrent calls on different communicators under
 * MPI_THREAD_MULTIPLE).  Results are checked against serial sums; the
 * point is also a ThreadSanitizer build (run_threads.sh says how), which
 * must report no race in libgcoll: configuration is per communicator, so
 * one thread's create does not rewrite what another's collectives read.
 * (Every thread creates under the same environment: setenv would race
 * with getenv in the others.) */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include "gcoll.h"

#define NTHREADS 3
#define ITERS    40

static int rank, size;
static MPI_Comm comms[NTHREADS];
static int failures[NTHREADS];

static void *worker(void *arg)
{
    int t = (int)(long)arg;
    gcoll_comm_t c = NULL;
    enum { N = 3001 };
    static _Thread_local double a[N * 4], b[N * 4];
    if (gcoll_comm_create(comms[t], &c) != GCOLL_SUCCESS) {
        fprintf(stderr, "FAIL rank %d thread %d: create: %s\n", rank, t, gcoll_last_error());
        failures[t]++;
        return NULL;
    }
    for (int it = 0; it < ITERS && !failures[t]; it++) {
        size_t n = (size_t)(1 + (it * 97 + t * 31) % N);
        for (size_t i = 0; i < n; i++) a[i] = rank + t + (double)(i % 7);
        gcoll_status_t st = gcoll_allreduce(a, b, n, GCOLL_FLOAT64, GCOLL_SUM, c);
        for (size_t i = 0; st == GCOLL_SUCCESS && i < n; i++) {
            double want = (double)size * (t + (double)(i % 7)) + size * (size - 1) / 2.0;
            if (b[i] != want) {
                fprintf(stderr, "FAIL rank %d thread %d: allreduce[%zu] %g != %g\n", rank, t, i,
                        b[i], want);
                failures[t]++;
                break;
            }
        }
        gcoll_request_t req;
        if (st == GCOLL_SUCCESS) st = gcoll_iallgather(a, b, n, GCOLL_FLOAT64, c, &req);
        if (st == GCOLL_SUCCESS) st = gcoll_wait(&req);
        for (int r = 0; st == GCOLL_SUCCESS && r < size; r++)
            if (b[(size_t)r * n] != r + t) {
                fprintf(stderr, "FAIL rank %d thread %d: allgather block %d\n", rank, t, r);
                failures[t]++;
            }
        if (st == GCOLL_SUCCESS) st = gcoll_bcast(a, n, GCOLL_FLOAT64, it % size, c);
        if (st != GCOLL_SUCCESS) {
            fprintf(stderr, "FAIL rank %d thread %d: %s\n", rank, t, gcoll_last_error());
            failures[t]++;
        }
    }
    gcoll_stats_t s;
    if (gcoll_comm_get_stats(c, &s) != GCOLL_SUCCESS || s.calls != 3 * ITERS) {
        fprintf(stderr, "FAIL rank %d thread %d: %llu calls counted, expected %d\n", rank, t,
                (unsigned long long)s.calls, 3 * ITERS);
        failures[t]++;
    }
    if (gcoll_comm_destroy(c) != GCOLL_SUCCESS) failures[t]++;
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (provided < MPI_THREAD_MULTIPLE) {
        if (rank == 0) printf("SKIP: the MPI library does not provide MPI_THREAD_MULTIPLE\n");
        MPI_Finalize();
        return 77;
    }
    /* the MPI communicators are made in order (collective on one parent);
     * the gcoll communicators on them concurrently */
    for (int t = 0; t < NTHREADS; t++) MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]);
    pthread_t th[NTHREADS];
    for (int t = 0; t < NTHREADS; t++) pthread_create(&th[t], NULL, worker, (void *)(long)t);
    int mine = 0, all = 0;
    for (int t = 0; t < NTHREADS; t++) {
        pthread_join(th[t], NULL);
        mine += failures[t];
        MPI_Comm_free(&comms[t]);
    }
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("test_threads: %d threads x %d iterations, %d failures\n", NTHREADS, ITERS, all);
    MPI_Finalize();
    return all ? 1 : 0;
}
