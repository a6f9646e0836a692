/* SPDX-License-Identifier: BSD-3-Clause */
/* Memory-type detection and host staging of CUDA buffers. */
#include "gcoll_build.h"  /* configure results (HAVE_UCX, ...) */
#include "core/memtype.h"
#include "base/status.h"
#ifdef HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

const char *gcoll_memtype_name(gcoll_memtype_t m)
{
    return m == GCOLL_MEM_CUDA ? "cuda" : "host";
}

#ifdef HAVE_CUDA
/* Queried once: with no device, never ask the runtime about pointers again
 * (each failing query costs microseconds on the small-message path). */
int gcoll_cuda_device_count(void)
{
    static _Atomic int count = -1;   /* threads may ask at once: both get the same */
    if (count < 0) {
        int n = 0;
        if (cudaGetDeviceCount(&n) != cudaSuccess) n = 0;
        (void)cudaGetLastError();   /* clear the sticky error of a failed query */
        count = n;
    }
    return count;
}

int gcoll_cuda_device_of(const void *ptr)
{
    if (!ptr || gcoll_cuda_device_count() == 0) return -1;
    struct cudaPointerAttributes attr;
    if (cudaPointerGetAttributes(&attr, ptr) != cudaSuccess) {
        (void)cudaGetLastError();
        return -1;
    }
    return attr.type == cudaMemoryTypeDevice ? attr.device : -1;
}

gcoll_memtype_t gcoll_memtype_of(const void *ptr)
{
    return gcoll_cuda_device_of(ptr) >= 0 ? GCOLL_MEM_CUDA : GCOLL_MEM_HOST;
}

static gcoll_status_t cuda_copy(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind k)
{
    cudaError_t e = cudaMemcpy(dst, src, bytes, k);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return GCOLL_ERROR(GCOLL_ERR_TRANSPORT, "cudaMemcpy of %zu bytes failed: %s", bytes,
                           cudaGetErrorString(e));
    }
    return GCOLL_SUCCESS;
}

void *gcoll_cuda_host_alloc(size_t bytes)
{
    void *p = NULL;
    if (cudaMallocHost(&p, bytes ? bytes : 1) != cudaSuccess) {
        (void)cudaGetLastError();
        return NULL;
    }
    return p;
}

void gcoll_cuda_host_free(void *p)
{
    if (p) (void)cudaFreeHost(p);
}

gcoll_status_t gcoll_cuda_to_host(void *host, const void *dev, size_t bytes)
{
    return cuda_copy(host, dev, bytes, cudaMemcpyDeviceToHost);
}

gcoll_status_t gcoll_cuda_from_host(void *dev, const void *host, size_t bytes)
{
    return cuda_copy(dev, host, bytes, cudaMemcpyHostToDevice);
}
#else
int gcoll_cuda_device_count(void) { return 0; }

int gcoll_cuda_device_of(const void *ptr)
{
    (void)ptr;
    return -1;
}

gcoll_memtype_t gcoll_memtype_of(const void *ptr)
{
    (void)ptr;
    return GCOLL_MEM_HOST;
}

void *gcoll_cuda_host_alloc(size_t bytes)
{
    (void)bytes;
    return NULL;
}

void gcoll_cuda_host_free(void *p)
{
    (void)p;
}

gcoll_status_t gcoll_cuda_to_host(void *host, const void *dev, size_t bytes)
{
    (void)host; (void)dev; (void)bytes;
    return GCOLL_ERROR(GCOLL_ERR_NOT_SUPPORTED, "libgcoll was built without CUDA");
}

gcoll_status_t gcoll_cuda_from_host(void *dev, const void *host, size_t bytes)
{
    return gcoll_cuda_to_host(dev, host, bytes);
}
#endif
