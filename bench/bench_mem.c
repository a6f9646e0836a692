/* SPDX-License-Identifier: BSD-3-Clause */
/* Buffer placement for -d host|cuda|gcoll|malloc.  Device buffers get host images:
 * inputs are written on the host and copied up, outputs copied down to be
 * checked, so the data and the checks are the same code for all placements. */
#include "gcoll_build.h"  /* configure results (HAVE_UCX, ...) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#ifdef HAVE_CUDA
#include <cuda_runtime.h>
#endif
#if defined(OPEN_MPI) && OPEN_MPI && defined(__has_include)
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif
#endif
#include "gcoll.h"
#include "bench_mem.h"

const char *gcoll_bench_mem_name(int mem)
{
    return mem == GCOLL_BENCH_MEM_CUDA     ? "cuda"
           : mem == GCOLL_BENCH_MEM_GCOLL  ? "gcoll"
           : mem == GCOLL_BENCH_MEM_MALLOC ? "malloc"
                                           : "host";
}

/* Host buffers are page aligned, as a framework's large tensors are; -d
 * gcoll ones too (gcoll_mem_alloc gives pages); -d malloc ones are what a
 * C or Fortran program's malloc gives: glibc puts a large block 16 bytes
 * into its first page, so every cache line of it is split. */
static void *host_alloc(int mem, size_t bytes)
{
    void *p = NULL;
    if (mem == GCOLL_BENCH_MEM_GCOLL)
        return gcoll_mem_alloc(bytes ? bytes : 1, &p) == GCOLL_SUCCESS ? p : NULL;
    if (mem == GCOLL_BENCH_MEM_MALLOC) return malloc(bytes ? bytes : 1);
    if (posix_memalign(&p, 4096, bytes ? bytes : 1) != 0) return NULL;
    return p;
}

static void host_free(int mem, void *p)
{
    if (mem == GCOLL_BENCH_MEM_GCOLL) gcoll_mem_free(p);
    else free(p);
}

#ifdef HAVE_CUDA
int gcoll_bench_mem_init(int mem, int local_rank, char *why, size_t len)
{
    int n = 0;
    cudaError_t e;
    if (mem != GCOLL_BENCH_MEM_CUDA) return 0;
    e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        snprintf(why, len, "-d cuda: no CUDA device is usable here (%s)",
                 e != cudaSuccess ? cudaGetErrorString(e) : "no devices");
        cudaGetLastError();   /* clear the sticky error */
        return -1;
    }
    /* One device per rank of a node, round robin, as OSU's CUDA tests do. */
    e = cudaSetDevice(local_rank % n);
    if (e != cudaSuccess) {
        snprintf(why, len, "-d cuda: cudaSetDevice(%d): %s", local_rank % n,
                 cudaGetErrorString(e));
        return -1;
    }
    return 0;
}

void *gcoll_bench_mem_alloc(int mem, size_t bytes)
{
    void *p = NULL;
    if (mem != GCOLL_BENCH_MEM_CUDA) return host_alloc(mem, bytes);
    if (cudaMalloc(&p, bytes ? bytes : 1) != cudaSuccess) return NULL;
    return p;
}

void gcoll_bench_mem_free(int mem, void *p)
{
    if (mem == GCOLL_BENCH_MEM_CUDA) cudaFree(p);
    else host_free(mem, p);
}

void gcoll_bench_mem_upload(int mem, void *dev, const void *host, size_t bytes)
{
    if (mem == GCOLL_BENCH_MEM_CUDA && bytes) cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice);
}

void gcoll_bench_mem_download(int mem, void *host, const void *dev, size_t bytes)
{
    if (mem == GCOLL_BENCH_MEM_CUDA && bytes)
        cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost);
}
#else
int gcoll_bench_mem_init(int mem, int local_rank, char *why, size_t len)
{
    (void)local_rank;
    if (mem != GCOLL_BENCH_MEM_CUDA) return 0;
    snprintf(why, len, "-d cuda: this libgcoll was built without CUDA "
             "(configure --with-cuda=DIR to enable device buffers)");
    return -1;
}

void *gcoll_bench_mem_alloc(int mem, size_t bytes)
{
    return host_alloc(mem, bytes);
}

void gcoll_bench_mem_free(int mem, void *p)
{
    host_free(mem, p);
}

void gcoll_bench_mem_upload(int mem, void *dev, const void *host, size_t bytes)
{
    (void)mem, (void)dev, (void)host, (void)bytes;
}

void gcoll_bench_mem_download(int mem, void *host, const void *dev, size_t bytes)
{
    (void)mem, (void)host, (void)dev, (void)bytes;
}
#endif

int gcoll_bench_mpi_cuda_aware(void)
{
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
    return MPIX_Query_cuda_support();
#else
    return 0;
#endif
}
