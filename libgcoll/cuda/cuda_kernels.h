/* SPDX-License-Identifier: BSD-3-Clause */
/* Device reduction kernels (cuda_kernels.cu).  The elementwise math is the
 * host kernels' (core/dtype_math.h, compiled by nvcc as well), so a device
 * reduction gives the same bits as the host one, NaN and fp16/bf16 rounding
 * included.  Only built with CUDA (HAVE_CUDA). */
#ifndef GCOLL_CUDA_KERNELS_H
#define GCOLL_CUDA_KERNELS_H

#include <stddef.h>
#include <cuda_runtime_api.h>
#include "gcoll.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most inputs one reduction reads: the ranks of one node (8 GPUs on the
 * largest common boards, 16 with two ranks per GPU). */
#define GCOLL_CUDA_MAX_INPUTS 16

/* dst[0][i] = src[0][i] op src[1][i] op ... op src[nsrc-1][i], in that order,
 * for i < count, and the same into dst[1] unless it is NULL.  Every pointer
 * is device memory (local, or a peer's mapped through CUDA IPC); dst may
 * equal a src exactly.  op is SUM, PROD, MIN or MAX.  Queued on stream;
 * returns once it is queued. */
gcoll_status_t gcoll_cuda_reduce(void *const dst[2], const void *const *src, int nsrc,
                                 size_t count, gcoll_dtype_t dtype, gcoll_op_t op,
                                 cudaStream_t stream);

/* buf[i] = buf[i] / divisor with the host's rounding (gcoll_reduce_avg_host):
 * the last step of AVG.  Queued on stream. */
gcoll_status_t gcoll_cuda_avg(void *buf, size_t count, gcoll_dtype_t dtype, int divisor,
                              cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
