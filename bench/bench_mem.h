/* SPDX-License-Identifier: BSD-3-Clause */
/* Buffer placement of the benchmarks (-d host|cuda|gcoll). */
#ifndef GCOLL_BENCH_MEM_H
#define GCOLL_BENCH_MEM_H

#include <stddef.h>

/* -d: host (page-aligned malloc), cuda (cudaMalloc), gcoll (gcoll_mem_alloc:
 * host memory the node's peers map, so the node level runs zero-copy). */
typedef enum {
    GCOLL_BENCH_MEM_HOST = 0, GCOLL_BENCH_MEM_CUDA, GCOLL_BENCH_MEM_GCOLL, GCOLL_BENCH_MEM_MALLOC
} gcoll_bench_mem_t;

/* "host", "cuda", "gcoll". */
const char *gcoll_bench_mem_name(int mem);
/* Prepare placement (cuda: pick this rank's device).  0, or -1 with a
 * sentence in why when device buffers cannot be used here. */
int   gcoll_bench_mem_init(int mem, int local_rank, char *why, size_t len);
void *gcoll_bench_mem_alloc(int mem, size_t bytes);
void  gcoll_bench_mem_free(int mem, void *p);
/* Copy a host image to its buffer and back; no-ops for host buffers. */
void  gcoll_bench_mem_upload(int mem, void *dev, const void *host, size_t bytes);
void  gcoll_bench_mem_download(int mem, void *host, const void *dev, size_t bytes);
/* 1 if the MPI library accepts CUDA device buffers. */
int   gcoll_bench_mpi_cuda_aware(void);

#endif
