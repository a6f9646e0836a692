/* SPDX-License-Identifier: BSD-3-Clause */
/* Where a buffer lives.  Detected per call: cudaPointerGetAttributes when
 * built with CUDA and a device is present; host otherwise.  Allreduce of
 * device buffers runs on the CUDA IPC path (libgcoll/cuda/); the other
 * collectives, and allreduce where that path is unavailable, stage device
 * buffers through host memory with the two copy helpers below.
 *
 * A build without CUDA cannot serve device buffers, but must not read them
 * as host memory either (gcoll.h: GCOLL_ERR_NOT_SUPPORTED): it asks the
 * driver, when libcuda.so.1 can be loaded (dlopen, once), with
 * cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_MEMORY_TYPE); gcoll_memtype_of
 * then says GCOLL_MEM_CUDA for device memory (managed memory, which the
 * host may read, stays host), and the public calls refuse it.  No CUDA
 * header is needed: the few driver values are declared in memtype.c.  A
 * process that never initialised CUDA has no device pointers, and the
 * driver says so (CUDA_ERROR_NOT_INITIALIZED) without initialising it. */
#ifndef GCOLL_MEMTYPE_H
#define GCOLL_MEMTYPE_H

#include <stddef.h>
#include "gcoll.h"

typedef enum { GCOLL_MEM_HOST = 0, GCOLL_MEM_CUDA, GCOLL_MEM_COUNT } gcoll_memtype_t;

gcoll_memtype_t gcoll_memtype_of(const void *ptr);
/* The CUDA device holding ptr, or -1 for host memory (always -1 in a build
 * without CUDA, which serves no device: gcoll_memtype_of detects them). */
int gcoll_cuda_device_of(const void *ptr);
const char *gcoll_memtype_name(gcoll_memtype_t m);

/* The driver's cuPointerGetAttribute as a build without CUDA calls it
 * (CUresult, CUpointer_attribute and CUdeviceptr as plain integers). */
typedef int (*gcoll_cu_pointer_attribute_fn)(void *data, int attribute,
                                             unsigned long long ptr);
/* For tests: make the detection of a build without CUDA ask fn instead of
 * the driver (NULL: the driver again), so that a test can fake device
 * memory through the same path.  Returns 1, or 0 in a build with CUDA,
 * where detection goes through the runtime and fn is not used. */
int gcoll_memtype_set_driver_query(gcoll_cu_pointer_attribute_fn fn);

/* Number of CUDA devices visible (0 without CUDA or without a GPU). */
int gcoll_cuda_device_count(void);

/* Page-locked host memory for staging device buffers: cudaMemcpy from and to
 * it runs at the link's full speed without a bounce copy of its own.  NULL
 * where it cannot be had (no CUDA, or the allocation failed). */
void *gcoll_cuda_host_alloc(size_t bytes);
void gcoll_cuda_host_free(void *p);

/* A kept page-locked area (*area of *size bytes, NULL and 0 at first) grown
 * to at least bytes: the staging images of the communicator (coll.c) and of
 * each compressor (several compressors' calls may be in flight at once).
 * GCOLL_ERR_NO_MEMORY with a sentence where it cannot be had. */
gcoll_status_t gcoll_cuda_host_reserve(void **area, size_t *size, size_t bytes);

/* GCOLL_ERR_NOT_SUPPORTED with a sentence (fn: name is CUDA device memory,
 * but this libgcoll was built without CUDA) where ptr is device memory and
 * the build cannot serve it; GCOLL_SUCCESS otherwise (always with CUDA). */
gcoll_status_t gcoll_memtype_servable(const char *fn, const char *name, const void *ptr);

/* Copy between a CUDA buffer and host memory (cudaMemcpy, default stream). */
gcoll_status_t gcoll_cuda_to_host(void *host, const void *dev, size_t bytes);
gcoll_status_t gcoll_cuda_from_host(void *dev, const void *host, size_t bytes);

#endif
