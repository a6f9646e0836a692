/* SPDX-License-Identifier: BSD-3-Clause */
/* Where a buffer lives.  Detected per call: cudaPointerGetAttributes when
 * built with CUDA and a device is present; host otherwise.  Allreduce of
 * device buffers runs on the CUDA IPC path (libgcoll/cuda/); the other
 * collectives, and allreduce where that path is unavailable, stage device
 * buffers through host memory with the two copy helpers below. */
#ifndef GCOLL_MEMTYPE_H
#define GCOLL_MEMTYPE_H

#include <stddef.h>
#include "gcoll.h"

typedef enum { GCOLL_MEM_HOST = 0, GCOLL_MEM_CUDA, GCOLL_MEM_COUNT } gcoll_memtype_t;

gcoll_memtype_t gcoll_memtype_of(const void *ptr);
/* The CUDA device holding ptr, or -1 for host memory. */
int gcoll_cuda_device_of(const void *ptr);
const char *gcoll_memtype_name(gcoll_memtype_t m);

/* Number of CUDA devices visible (0 without CUDA or without a GPU). */
int gcoll_cuda_device_count(void);

/* Page-locked host memory for staging device buffers: cudaMemcpy from and to
 * it runs at the link's full speed without a bounce copy of its own.  NULL
 * where it cannot be had (no CUDA, or the allocation failed). */
void *gcoll_cuda_host_alloc(size_t bytes);
void gcoll_cuda_host_free(void *p);

/* Copy between a CUDA buffer and host memory (cudaMemcpy, default stream). */
gcoll_status_t gcoll_cuda_to_host(void *host, const void *dev, size_t bytes);
gcoll_status_t gcoll_cuda_from_host(void *dev, const void *host, size_t bytes);

#endif
