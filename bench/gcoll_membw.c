/* SPDX-License-Identifier: BSD-3-Clause */
/* The memory-system ceiling a shared-memory collective runs against: every
 * rank of the job (one per core) streams over arrays at the same time, as an
 * allreduce's ranks do, and rank 0 prints the aggregate bytes moved per
 * second (bytes read + bytes written, summed over ranks) and the time of one
 * pass.  Medians of 10 repetitions; MPI_Barrier aligns the ranks; the time of
 * a repetition is the slowest rank's.
 *
 *   memcpy (c = a)        glibc memcpy
 *   stream (c = a)        copy with non-temporal stores: no read for
 *                         ownership of c.  This is the least any allreduce
 *                         of N bytes per rank can cost: read its input once,
 *                         write its output once.
 *   c = a + b, a += b     the reduction kernels' memory patterns
 *
 * Usage: mpirun -n P gcoll_membw [BYTES]  (per array; default 64M; K/M/G). */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#define REPS 10

enum { K_MEMCPY, K_STREAM, K_ADD3, K_ADD2, K_COUNT };

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* c = a with streaming stores where the ISA has them (16-byte aligned c). */
static void stream_copy(float *c, const float *a, size_t n)
{
#if defined(__x86_64__)
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m128i x0 = _mm_loadu_si128((const __m128i *)(a + i));
        __m128i x1 = _mm_loadu_si128((const __m128i *)(a + i + 4));
        __m128i x2 = _mm_loadu_si128((const __m128i *)(a + i + 8));
        __m128i x3 = _mm_loadu_si128((const __m128i *)(a + i + 12));
        _mm_stream_si128((__m128i *)(c + i), x0);
        _mm_stream_si128((__m128i *)(c + i + 4), x1);
        _mm_stream_si128((__m128i *)(c + i + 8), x2);
        _mm_stream_si128((__m128i *)(c + i + 12), x3);
    }
    for (; i < n; i++) c[i] = a[i];
    _mm_sfence();
#else
    memcpy(c, a, n * sizeof(float));
#endif
}

static void run_kernel(int kind, float *a, const float *b, float *c, size_t n)
{
    switch (kind) {
    case K_MEMCPY: memcpy(c, a, n * sizeof(float)); break;
    case K_STREAM: stream_copy(c, a, n); break;
    case K_ADD3:   for (size_t i = 0; i < n; i++) c[i] = a[i] + b[i]; break;
    default:       for (size_t i = 0; i < n; i++) a[i] += b[i]; break;
    }
}

static double median_time(int kind, float *a, float *b, float *c, size_t n)
{
    double t[REPS];
    run_kernel(kind, a, b, c, n);   /* first touch, page faults, warm caches */
    for (int r = 0; r < REPS; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        run_kernel(kind, a, b, c, n);
        double mine = MPI_Wtime() - t0;
        MPI_Allreduce(&mine, &t[r], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    }
    qsort(t, REPS, sizeof(double), cmp);
    return t[REPS / 2];
}

static size_t parse_bytes(const char *s)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    switch (*end) {
    case 'G': case 'g': v <<= 10; /* fall through */
    case 'M': case 'm': v <<= 10; /* fall through */
    case 'K': case 'k': v <<= 10; end++; break;
    default: break;
    }
    return *end || v < 64 ? 0 : (size_t)v;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    size_t bytes = argc > 1 ? parse_bytes(argv[1]) : (size_t)64 << 20;
    if (!bytes) {
        if (rank == 0) fprintf(stderr, "usage: gcoll_membw [BYTES (K/M/G), at least 64]\n");
        MPI_Finalize();
        return 2;
    }
    size_t n = bytes / sizeof(float);
    float *a = aligned_alloc(64, n * sizeof(float)), *b = aligned_alloc(64, n * sizeof(float)),
          *c = aligned_alloc(64, n * sizeof(float));
    if (!a || !b || !c) MPI_Abort(MPI_COMM_WORLD, 1);
    for (size_t i = 0; i < n; i++) { a[i] = (float)i; b[i] = 1.0f; c[i] = 0.0f; }
    static const char *const names[K_COUNT] = { "memcpy (c = a)", "stream (c = a)", "c = a + b",
                                                "a += b" };
    static const int streams[K_COUNT] = { 2, 2, 3, 3 };
    for (int k = 0; k < K_COUNT; k++) {
        double t = median_time(k, a, b, c, n);
        double gbs = (double)streams[k] * (double)(n * sizeof(float)) * size / t / 1e9;
        if (rank == 0)
            printf("%-16s %d ranks x %zu KiB arrays: %9.1f us, %6.1f GB/s aggregate "
                   "(read + written)\n", names[k], size, n * sizeof(float) >> 10, t * 1e6, gbs);
    }
    free(a); free(b); free(c);
    MPI_Finalize();
    return 0;
}
