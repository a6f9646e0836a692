/* SPDX-License-Identifier: BSD-3-Clause */
/* Memory-type detection and host staging of CUDA buffers. */
#include "gcoll_build.h"  /* configure results (HAVE_UCX, ...) */
#include "core/memtype.h"
#include "base/status.h"
#ifdef HAVE_CUDA
#include <cuda_runtime_api.h>
#else
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
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

int gcoll_memtype_set_driver_query(gcoll_cu_pointer_attribute_fn fn)
{
    (void)fn;
    return 0;
}
#else
/* The driver API values used (cuda.h: CUresult, CUpointer_attribute,
 * CUmemorytype); they are part of the driver's ABI. */
enum {
    GCOLL_CU_SUCCESS                = 0,
    GCOLL_CU_ATTRIBUTE_MEMORY_TYPE  = 2,   /* CU_POINTER_ATTRIBUTE_MEMORY_TYPE, unsigned int */
    GCOLL_CU_ATTRIBUTE_IS_MANAGED   = 8,   /* CU_POINTER_ATTRIBUTE_IS_MANAGED, unsigned int */
    GCOLL_CU_MEMORYTYPE_DEVICE      = 2    /* CU_MEMORYTYPE_DEVICE */
};

static pthread_once_t                          cu_once = PTHREAD_ONCE_INIT;
static gcoll_cu_pointer_attribute_fn           cu_driver;   /* NULL: no libcuda.so.1 */
static _Atomic(gcoll_cu_pointer_attribute_fn)  cu_test;     /* the test hook */

/* Once per process; the library stays loaded (its handle is never closed). */
static void cu_load(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib) cu_driver = (gcoll_cu_pointer_attribute_fn)dlsym(lib, "cuPointerGetAttribute");
}

int gcoll_memtype_set_driver_query(gcoll_cu_pointer_attribute_fn fn)
{
    atomic_store(&cu_test, fn);
    return 1;
}

int gcoll_cuda_device_count(void) { return 0; }

int gcoll_cuda_device_of(const void *ptr)
{
    (void)ptr;
    return -1;
}

/* Device memory by the driver's word: any failure (not initialised, not a
 * pointer it knows) means host memory. */
gcoll_memtype_t gcoll_memtype_of(const void *ptr)
{
    if (!ptr) return GCOLL_MEM_HOST;
    gcoll_cu_pointer_attribute_fn q = atomic_load(&cu_test);
    if (!q) {
        pthread_once(&cu_once, cu_load);
        q = cu_driver;
    }
    unsigned int type = 0, managed = 0;
    if (!q || q(&type, GCOLL_CU_ATTRIBUTE_MEMORY_TYPE, (unsigned long long)(uintptr_t)ptr) !=
                  GCOLL_CU_SUCCESS || type != GCOLL_CU_MEMORYTYPE_DEVICE)
        return GCOLL_MEM_HOST;
    if (q(&managed, GCOLL_CU_ATTRIBUTE_IS_MANAGED, (unsigned long long)(uintptr_t)ptr) ==
            GCOLL_CU_SUCCESS && managed)
        return GCOLL_MEM_HOST;   /* the host may read managed memory */
    return GCOLL_MEM_CUDA;
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

gcoll_status_t gcoll_cuda_host_reserve(void **area, size_t *size, size_t bytes)
{
    if (bytes > *size || !*area) {   /* !*area: bytes may be 0 */
        void *p = gcoll_cuda_host_alloc(bytes);
        if (!p)
            return GCOLL_ERROR(GCOLL_ERR_NO_MEMORY, "cannot allocate %zu bytes of page-locked "
                               "host memory to stage device buffers", bytes);
        gcoll_cuda_host_free(*area);
        *area = p;
        *size = bytes;
    }
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll_memtype_servable(const char *fn, const char *name, const void *ptr)
{
#ifndef HAVE_CUDA
    /* Device buffers cannot be served here and must not be read as host
     * memory (gcoll.h); the driver tells them apart (memtype.h). */
    if (gcoll_memtype_of(ptr) == GCOLL_MEM_CUDA)
        return GCOLL_ERROR(GCOLL_ERR_NOT_SUPPORTED, "%s: %s %p is CUDA device memory, but this "
                           "libgcoll was built without CUDA (configure --with-cuda)", fn, name,
                           ptr);
#else
    (void)fn; (void)name; (void)ptr;
#endif
    return GCOLL_SUCCESS;
}
