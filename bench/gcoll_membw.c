/* The memory-system ceiling a shared-memory collective runs against: every
 * rank of the job (one per core) streams over 64 MiB arrays at the same time,
 * as an allreduce's ranks do, and rank 0 prints the aggregate bytes moved per
 * second (bytes read + bytes written, summed over ranks) for memcpy, c = a + b
 * and a += b.  Medians of 10 repetitions; MPI_Barrier aligns the ranks. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N ((size_t)16 << 20)   /* floats: 64 MiB per array */
#define REPS 10

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median_time(int kind, float *a, float *b, float *c)
{
    double t[REPS];
    for (int r = 0; r < REPS; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (kind == 0) memcpy(c, a, N * sizeof(float));
        else if (kind == 1) for (size_t i = 0; i < N; i++) c[i] = a[i] + b[i];
        else for (size_t i = 0; i < N; i++) a[i] += b[i];
        double mine = MPI_Wtime() - t0;
        MPI_Allreduce(&mine, &t[r], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    }
    qsort(t, REPS, sizeof(double), cmp);
    return t[REPS / 2];
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    float *a = malloc(N * sizeof(float)), *b = malloc(N * sizeof(float)),
          *c = malloc(N * sizeof(float));
    if (!a || !b || !c) MPI_Abort(MPI_COMM_WORLD, 1);
    for (size_t i = 0; i < N; i++) { a[i] = (float)i; b[i] = 1.0f; c[i] = 0.0f; }
    static const char *const names[] = { "memcpy (c = a)", "c = a + b", "a += b" };
    static const int streams[] = { 2, 3, 3 };
    for (int k = 0; k < 3; k++) {
        double t = median_time(k, a, b, c);
        double gbs = (double)streams[k] * N * sizeof(float) * size / t / 1e9;
        if (rank == 0)
            printf("%-16s %d ranks x 64 MiB arrays: %6.2f ms, %6.1f GB/s aggregate (read + written)\n",
                   names[k], size, t * 1e3, gbs);
    }
    free(a); free(b); free(c);
    MPI_Finalize();
    return 0;
}
