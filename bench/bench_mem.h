/* SPDX-License-Identifier: BSD-3-Clause */
/* Buffer placement of the benchmarks (-d host|cuda). */
#ifndef GCOLL_BENCH_MEM_H
#define GCOLL_BENCH_MEM_H

#include <stddef.h>

/* Prepare placement (cuda: pick this rank's device).  0, or -1 with a
 * sentence in why when device buffers cannot be used here. */
int   gcoll_bench_mem_init(int cuda, int local_rank, char *why, size_t len);
void *gcoll_bench_mem_alloc(int cuda, size_t bytes);
void  gcoll_bench_mem_free(int cuda, void *p);
/* Copy a host image to its buffer and back; no-ops for host buffers. */
void  gcoll_bench_mem_upload(int cuda, void *dev, const void *host, size_t bytes);
void  gcoll_bench_mem_download(int cuda, void *host, const void *dev, size_t bytes);
/* 1 if the MPI library accepts CUDA device buffers. */
int   gcoll_bench_mpi_cuda_aware(void);

#endif
