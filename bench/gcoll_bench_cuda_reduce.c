/* SPDX-License-Identifier: BSD-3-Clause */
/* Device reduction kernel throughput on one GPU: gcoll_cuda_reduce over
 * nsrc inputs of SIZE bytes each, into one output, timed with CUDA events
 * (median of 20 launches after 5 warm-ups), against a device-to-device
 * cudaMemcpy of the same size timed the same way in the same run.
 *
 * Columns: bytes moved per second (nsrc inputs read + 1 output written,
 * the kernel's least memory traffic) and that as a fraction of the copy's
 * rate (read + write): how close the kernel runs to the memory system.
 *
 *   gcoll_bench_cuda_reduce [-m MIN:MAX] [-T float32|bfloat16|...] [--csv F]
 *
 * No MPI job needed (a single process).  Exit 77 without a CUDA device. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include "gcoll.h"
#include "cuda/cuda_kernels.h"

#define REPS 20
#define WARMUP 5

static int cmpf(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

static size_t parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (*end == 'K' || *end == 'k') v *= 1024;
    else if (*end == 'M' || *end == 'm') v *= 1024 * 1024;
    else if (*end == 'G' || *end == 'g') v *= 1024.0 * 1024 * 1024;
    return (size_t)v;
}

/* Median time in ms of REPS runs of one reduction (or the copy, nsrc = 0). */
static float time_ms(void *const out[2], const void *const *in, int nsrc, size_t bytes,
                     gcoll_dtype_t dt, cudaEvent_t ev[2])
{
    float t[REPS];
    size_t count = bytes / gcoll_dtype_size(dt);
    for (int r = -WARMUP; r < REPS; r++) {
        cudaEventRecord(ev[0], 0);
        if (nsrc == 0) cudaMemcpyAsync(out[0], in[0], bytes, cudaMemcpyDeviceToDevice, 0);
        else if (gcoll_cuda_reduce(out, in, nsrc, count, dt, GCOLL_SUM, 0) != GCOLL_SUCCESS) {
            fprintf(stderr, "gcoll_cuda_reduce: %s\n", gcoll_last_error());
            exit(1);
        }
        cudaEventRecord(ev[1], 0);
        cudaEventSynchronize(ev[1]);
        if (r >= 0) cudaEventElapsedTime(&t[r], ev[0], ev[1]);
    }
    qsort(t, REPS, sizeof(float), cmpf);
    return t[REPS / 2];
}

int main(int argc, char **argv)
{
    size_t lo = 1 << 20, hi = (size_t)1 << 30;
    gcoll_dtype_t dt = GCOLL_FLOAT32;
    const char *csv = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-m") && i + 1 < argc) {
            char *c = strchr(argv[++i], ':');
            lo = parse_size(argv[i]);
            hi = c ? parse_size(c + 1) : lo;
        } else if (!strcmp(argv[i], "-T") && i + 1 < argc) {
            const char *name = argv[++i];
            for (dt = 0; dt < GCOLL_DTYPE_COUNT && strcmp(gcoll_dtype_name(dt), name); dt++) {}
            if (dt == GCOLL_DTYPE_COUNT) { fprintf(stderr, "-T %s: unknown dtype\n", name); return 2; }
        } else if (!strcmp(argv[i], "--csv") && i + 1 < argc) {
            csv = argv[++i];
        } else {
            fprintf(stderr, "usage: %s [-m MIN:MAX] [-T DTYPE] [--csv FILE]\n", argv[0]);
            return 2;
        }
    }
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("SKIP: no CUDA device: nothing to measure\n");
        return 77;
    }
    struct cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    static const int nsrcs[] = { 1, 2, 4, 8 };
    const int maxsrc = 8;
    void *buf[8 + 1];
    for (int s = 0; s <= maxsrc; s++)
        if (cudaMalloc(&buf[s], hi) != cudaSuccess || cudaMemset(buf[s], 0, hi) != cudaSuccess) {
            fprintf(stderr, "cannot allocate %d x %zu bytes on the device\n", maxsrc + 1, hi);
            return 1;
        }
    cudaEvent_t ev[2];
    cudaEventCreate(&ev[0]);
    cudaEventCreate(&ev[1]);
    FILE *f = csv ? fopen(csv, "w") : NULL;
    if (f) fprintf(f, "bytes,nsrc,us,gbps,copy_gbps,fraction_of_copy\n");
    printf("# gcoll_cuda_reduce, %s sum, on %s (%d SMs); medians of %d launches\n",
           gcoll_dtype_name(dt), prop.name, prop.multiProcessorCount, REPS);
    printf("# GB/s = (nsrc reads + 1 write) x bytes / time; copy = cudaMemcpy D2D, 2 x bytes / time\n");
    printf("# %12s %5s %12s %10s %10s %8s\n", "bytes", "nsrc", "time(us)", "GB/s", "copy GB/s",
           "of copy");
    for (size_t bytes = lo; bytes <= hi; bytes *= 2) {
        const void *in[8];
        for (int s = 0; s < maxsrc; s++) in[s] = buf[s];
        void *const out[2] = { buf[maxsrc], NULL };
        float copy_ms = time_ms(out, in, 0, bytes, dt, ev);
        double copy_gbps = 2.0 * (double)bytes / (copy_ms * 1e6);
        for (size_t k = 0; k < sizeof(nsrcs) / sizeof(nsrcs[0]); k++) {
            float ms = time_ms(out, in, nsrcs[k], bytes, dt, ev);
            double gbps = (double)(nsrcs[k] + 1) * (double)bytes / (ms * 1e6);
            printf("  %12zu %5d %12.1f %10.1f %10.1f %7.0f%%\n", bytes, nsrcs[k], ms * 1e3, gbps,
                   copy_gbps, 100.0 * gbps / copy_gbps);
            if (f) fprintf(f, "%zu,%d,%.2f,%.2f,%.2f,%.4f\n", bytes, nsrcs[k], ms * 1e3, gbps,
                           copy_gbps, gbps / copy_gbps);
        }
        fflush(stdout);
    }
    if (f) fclose(f);
    for (int s = 0; s <= maxsrc; s++) cudaFree(buf[s]);
    return 0;
}
