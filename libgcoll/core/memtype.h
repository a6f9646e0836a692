/* Where a buffer lives.  Detected per call (cudaPointerGetAttributes when
 * built with CUDA and a device is present; host otherwise). */
#ifndef GCOLL_MEMTYPE_H
#define GCOLL_MEMTYPE_H

typedef enum { GCOLL_MEM_HOST = 0, GCOLL_MEM_CUDA, GCOLL_MEM_COUNT } gcoll_memtype_t;

gcoll_memtype_t gcoll_memtype_of(const void *ptr);
const char *gcoll_memtype_name(gcoll_memtype_t m);

#endif
