/* SPDX-License-Identifier: BSD-3-Clause */
/* The gradient codecs (compress/codec_*.c) as device kernels
 * (codec_kernels.cu): the same payload bytes and the same residual as the
 * host codec on the same input, so a rank encoding on its GPU and a rank
 * encoding on its CPU send the same thing.  How each kernel reproduces the
 * host's bits is written at each kernel.  Every pointer is device memory;
 * the calls queue work on stream and return once it is queued.  Only built
 * with CUDA (HAVE_CUDA). */
#ifndef GCOLL_CUDA_CODEC_KERNELS_H
#define GCOLL_CUDA_CODEC_KERNELS_H

#include <stddef.h>
#include <cuda_runtime_api.h>
#include "gcoll.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes of device scratch gcoll_cuda_codec_encode* needs for n elements
 * (0 for BF16 and ONEBIT; TOPK's selection counters).  p as filled in by
 * gcoll_codec_params. */
size_t gcoll_cuda_codec_scratch_bytes(const gcoll_compress_params_t *p, size_t n);

/* The host codec's encode: payload (payload_bytes(n) bytes) = C(x), and x
 * left holding x - decoded.  scratch: gcoll_cuda_codec_scratch_bytes(p, n)
 * bytes, 8-aligned (cudaMalloc'd), NULL when that is 0.  payload 4-aligned.
 * n < 2^32 (TOPK's indices are uint32).  GCOLL_ERR_INVALID_ARG for NONE or
 * an unknown kind; GCOLL_ERR_TRANSPORT when a launch fails. */
gcoll_status_t gcoll_cuda_codec_encode(const gcoll_compress_params_t *p, float *x, size_t n,
                                       void *payload, void *scratch, cudaStream_t stream);

/* With error feedback, as compressor.c's encode_share: resid += x; payload
 * = C(resid); resid = what the payload misses, non-finite values zeroed.
 * resid NULL: no error feedback, x itself encoded (and overwritten with
 * the residual, as on the host). */
gcoll_status_t gcoll_cuda_codec_encode_ef(const gcoll_compress_params_t *p, float *x,
                                          float *resid, size_t n, void *payload, void *scratch,
                                          cudaStream_t stream);

/* The host codec's accumulate: acc[i] += decoded payload[i], i < n. */
gcoll_status_t gcoll_cuda_codec_accumulate(const gcoll_compress_params_t *p, const void *payload,
                                           size_t n, float *acc, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
