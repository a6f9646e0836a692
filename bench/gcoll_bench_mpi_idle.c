/* SPDX-License-Identifier: BSD-3-Clause */
/* Does an idle libgcoll communicator slow the application's own MPI?
 *
 * Times MPI_Allreduce (float32 sum, MPI_COMM_WORLD) per size, alternating
 * two conditions in one launch: "alone" (no libgcoll communicator exists)
 * and "beside" (a libgcoll communicator was created, used once for a 1 MiB
 * allreduce over its transport and shared memory, and is left idle while MPI
 * runs).  Each condition runs REPS times per size, interleaved; the table
 * gives the medians and beside/alone.  libgcoll's only business here is to
 * stay out of the way: the ratio should be 1.
 *
 *   mpirun -n 2 gcoll_bench_mpi_idle [-m MIN:MAX] [-r REPS] [-t MS_PER_BLOCK]
 *
 * Progress lines go to stderr on rank 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include "gcoll.h"

#define MAX_REPS 32

static int rank, nranks;

static size_t parse_size(const char *s)
{
    char *end;
    size_t v = strtoull(s, &end, 10);
    if (*end == 'K' || *end == 'k') v <<= 10;
    if (*end == 'M' || *end == 'm') v <<= 20;
    return v;
}

/* Mean time per call of a block of about ms milliseconds, the iteration
 * count agreed by all ranks (rank 0's calibration). */
static double time_block(float *s, float *r, int n, double ms)
{
    int iters = 1;
    double t;
    for (;;) {   /* calibrate: double until a block takes ms */
        MPI_Barrier(MPI_COMM_WORLD);
        t = MPI_Wtime();
        for (int i = 0; i < iters; i++) MPI_Allreduce(s, r, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        t = MPI_Wtime() - t;
        int more = t < ms * 1e-3 && iters < (1 << 22);
        MPI_Bcast(&more, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (!more) break;
        iters *= 2;
    }
    MPI_Bcast(&t, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return t / iters;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* A communicator that has done real work, then sits idle. */
static gcoll_comm_t make_idle_comm(void)
{
    gcoll_comm_t c;
    size_t n = 1u << 18;
    float *x = calloc(n, sizeof(float));
    if (gcoll_comm_create(MPI_COMM_WORLD, &c) != GCOLL_SUCCESS ||
        gcoll_allreduce(x, x, n, GCOLL_FLOAT32, GCOLL_SUM, c) != GCOLL_SUCCESS) {
        fprintf(stderr, "gcoll_bench_mpi_idle: %s\n", gcoll_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    free(x);
    return c;
}

int main(int argc, char **argv)
{
    size_t lo = 8, hi = 2u << 20;
    int reps = 3;
    double ms = 20;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-m")) {
            char *colon = strchr(argv[i + 1], ':');
            lo = parse_size(argv[i + 1]);
            if (colon) hi = parse_size(colon + 1);
        } else if (!strcmp(argv[i], "-r")) {
            reps = atoi(argv[i + 1]);
        } else if (!strcmp(argv[i], "-t")) {
            ms = atof(argv[i + 1]);
        }
    }
    if (reps < 1) reps = 1;
    if (reps > MAX_REPS) reps = MAX_REPS;
    float *s = calloc(hi / 4 + 1, sizeof(float)), *r = calloc(hi / 4 + 1, sizeof(float));
    if (rank == 0) {
        printf("# MPI_Allreduce alone vs beside an idle libgcoll communicator, %d ranks\n", nranks);
        printf("# float32 sum; medians of %d interleaved blocks of ~%g ms each; progress mode "
               "from GCOLL_PROGRESS (default auto)\n", reps, ms);
        printf("# %-10s %14s %14s %14s\n", "bytes", "alone(us)", "beside(us)", "beside/alone");
    }
    for (size_t bytes = lo; bytes <= hi; bytes *= 4) {
        int n = (int)(bytes / 4 ? bytes / 4 : 1);
        double alone[MAX_REPS], beside[MAX_REPS];
        for (int k = 0; k < reps; k++) {
            alone[k] = time_block(s, r, n, ms);
            gcoll_comm_t c = make_idle_comm();
            beside[k] = time_block(s, r, n, ms);
            gcoll_comm_destroy(c);
        }
        double a = median(alone, reps), b = median(beside, reps);
        if (rank == 0) {
            printf("  %-10zu %14.2f %14.2f %14.3f\n", bytes, a * 1e6, b * 1e6, b / a);
            fflush(stdout);
            fprintf(stderr, "gcoll_bench_mpi_idle: %zu bytes done\n", bytes);
        }
    }
    free(s);
    free(r);
    MPI_Finalize();
    return 0;
}
