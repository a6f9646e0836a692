/* SPDX-License-Identifier: BSD-3-Clause */
/* Device reduction kernels: one template over (element type, operation),
 * instantiated for every dtype x op by the dispatch tables below.  The
 * per-element functions are dtype_math.h's, the ones the host kernels call,
 * so the CPU tests of that header check the GPU's numerics too.
 *
 * Shape: a grid-stride loop over 16-byte packs (one uint4 load per input
 * and per pack: the widest single load, which is what peer reads over NVLink
 * need to reach bandwidth), then the unaligned tail element by element.
 * Inputs are combined in index order, acc = src[0]; acc = acc op src[k], so
 * the result is bitwise the host's left-to-right reduction. */
#include <cuda_runtime.h>
#include <stdint.h>
/* gcoll.h includes mpi.h: take it here, as C++ without MPI's C++ bindings,
 * so that the extern "C" block below sees it already included. */
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
extern "C" {
#include "base/status.h"
}
#include "base/dtype_math.h"
#include "cuda/cuda_kernels.h"

namespace {

struct inputs_t {
    const void *p[GCOLL_CUDA_MAX_INPUTS];
};

/* One functor per (type, op): T is the storage type (uint16_t for fp16/bf16). */
#define GCOLL_CUDA_OP(NAME, T, FN) \
    struct NAME { \
        typedef T type; \
        __device__ static T apply(T a, T b) { return FN(a, b); } \
    };
#define GCOLL_CUDA_OPS(TN, T) \
    GCOLL_CUDA_OP(sum_##TN, T, gcoll_math_sum_##TN) \
    GCOLL_CUDA_OP(prod_##TN, T, gcoll_math_prod_##TN) \
    GCOLL_CUDA_OP(min_##TN, T, gcoll_math_min_##TN) \
    GCOLL_CUDA_OP(max_##TN, T, gcoll_math_max_##TN)
GCOLL_CUDA_OPS(int8, int8_t)
GCOLL_CUDA_OPS(uint8, uint8_t)
GCOLL_CUDA_OPS(int32, int32_t)
GCOLL_CUDA_OPS(uint32, uint32_t)
GCOLL_CUDA_OPS(int64, int64_t)
GCOLL_CUDA_OPS(uint64, uint64_t)
GCOLL_CUDA_OPS(fp16, uint16_t)
GCOLL_CUDA_OPS(bf16, uint16_t)
GCOLL_CUDA_OPS(f32, float)
GCOLL_CUDA_OPS(f64, double)

template <class F> union pack_t {
    uint4 v;
    typename F::type e[sizeof(uint4) / sizeof(typename F::type)];
};

template <class F>
__global__ void reduce_kernel(typename F::type *d0, typename F::type *d1, inputs_t in, int nsrc,
                              size_t n, size_t npack)
{
    typedef typename F::type T;
    const int V = (int)(sizeof(uint4) / sizeof(T));
    size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (size_t i = tid; i < npack; i += stride) {
        pack_t<F> acc, x;
        acc.v = ((const uint4 *)in.p[0])[i];
        for (int s = 1; s < nsrc; s++) {
            x.v = ((const uint4 *)in.p[s])[i];
#pragma unroll
            for (int e = 0; e < V; e++) acc.e[e] = F::apply(acc.e[e], x.e[e]);
        }
        ((uint4 *)d0)[i] = acc.v;
        if (d1) ((uint4 *)d1)[i] = acc.v;
    }
    for (size_t i = npack * V + tid; i < n; i += stride) {
        T acc = ((const T *)in.p[0])[i];
        for (int s = 1; s < nsrc; s++) acc = F::apply(acc, ((const T *)in.p[s])[i]);
        d0[i] = acc;
        if (d1) d1[i] = acc;
    }
}

/* Enough blocks to cover the work, at most a few waves of a large GPU: the
 * grid-stride loop does the rest. */
unsigned grid_for(size_t items)
{
    size_t blocks = (items + 255) / 256;
    return (unsigned)(blocks < 1 ? 1 : blocks > 2048 ? 2048 : blocks);
}

int aligned16(const void *p)
{
    return ((uintptr_t)p & 15u) == 0;
}

template <class F>
void launch_reduce(void *const dst[2], const void *const *src, int nsrc, size_t n,
                   cudaStream_t stream)
{
    typedef typename F::type T;
    inputs_t in;
    int vec = aligned16(dst[0]) && (!dst[1] || aligned16(dst[1]));
    for (int s = 0; s < nsrc; s++) {
        in.p[s] = src[s];
        vec = vec && aligned16(src[s]);
    }
    size_t V = sizeof(uint4) / sizeof(T), npack = vec ? n / V : 0;
    reduce_kernel<F><<<grid_for(npack + (n - npack * V)), 256, 0, stream>>>(
        (T *)dst[0], (T *)dst[1], in, nsrc, n, npack);
}

typedef void (*reduce_launch_t)(void *const *, const void *const *, int, size_t, cudaStream_t);

#define GCOLL_CUDA_ROW(TN) \
    { launch_reduce<sum_##TN>, launch_reduce<prod_##TN>, launch_reduce<min_##TN>, \
      launch_reduce<max_##TN> }
/* [dtype][op], in gcoll.h's enum order. */
const reduce_launch_t reduce_table[GCOLL_DTYPE_COUNT][4] = {
    GCOLL_CUDA_ROW(int8),  GCOLL_CUDA_ROW(uint8),  GCOLL_CUDA_ROW(int32), GCOLL_CUDA_ROW(uint32),
    GCOLL_CUDA_ROW(int64), GCOLL_CUDA_ROW(uint64), GCOLL_CUDA_ROW(fp16),  GCOLL_CUDA_ROW(bf16),
    GCOLL_CUDA_ROW(f32),   GCOLL_CUDA_ROW(f64),
};

/* ---- AVG: the division, as gcoll_reduce_avg_host does it ---------------- */

template <class T> struct avg_int {   /* the host's (T)(a / d), d an int */
    typedef T type;
    __device__ static T apply(T a, int d) { return (T)(a / d); }
};
struct avg_fp16 {
    typedef uint16_t type;
    __device__ static uint16_t apply(uint16_t a, int d)
    {
        return gcoll_math_f32_to_fp16(gcoll_math_fp16_to_f32(a) / (float)d);
    }
};
struct avg_bf16 {
    typedef uint16_t type;
    __device__ static uint16_t apply(uint16_t a, int d)
    {
        return gcoll_math_f32_to_bf16(gcoll_math_bf16_to_f32(a) / (float)d);
    }
};
template <class T> struct avg_float {   /* a true division, as on the host */
    typedef T type;
    __device__ static T apply(T a, int d) { return a / (T)d; }
};

template <class F>
__global__ void avg_kernel(typename F::type *buf, size_t n, int d)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        buf[i] = F::apply(buf[i], d);
}

template <class F> void launch_avg(void *buf, size_t n, int d, cudaStream_t stream)
{
    avg_kernel<F><<<grid_for(n), 256, 0, stream>>>((typename F::type *)buf, n, d);
}

typedef void (*avg_launch_t)(void *, size_t, int, cudaStream_t);
/* Signed 8-bit: int8_t / int8_t promotes to int and truncates toward zero,
 * as the host's (int8_t)(p / d) does. */
const avg_launch_t avg_table[GCOLL_DTYPE_COUNT] = {
    launch_avg<avg_int<int8_t> >,  launch_avg<avg_int<uint8_t> >,
    launch_avg<avg_int<int32_t> >, launch_avg<avg_int<uint32_t> >,
    launch_avg<avg_int<int64_t> >, launch_avg<avg_int<uint64_t> >,
    launch_avg<avg_fp16>,          launch_avg<avg_bf16>,
    launch_avg<avg_float<float> >, launch_avg<avg_float<double> >,
};

gcoll_status_t launched(const char *what, size_t count)
{
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) return GCOLL_SUCCESS;
    return GCOLL_ERROR(GCOLL_ERR_TRANSPORT, "%s kernel over %zu elements failed to launch: %s",
                       what, count, cudaGetErrorString(e));
}

} // namespace

extern "C" gcoll_status_t gcoll_cuda_reduce(void *const dst[2], const void *const *src, int nsrc,
                                            size_t count, gcoll_dtype_t dtype, gcoll_op_t op,
                                            cudaStream_t stream)
{
    if ((unsigned)dtype >= GCOLL_DTYPE_COUNT || (unsigned)op > GCOLL_MAX)
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "device reduction of dtype %d, op %d: not a "
                           "dtype, or not sum, prod, min or max", (int)dtype, (int)op);
    if (nsrc < 1 || nsrc > GCOLL_CUDA_MAX_INPUTS)
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "device reduction of %d inputs: 1 to %d "
                           "are supported", nsrc, GCOLL_CUDA_MAX_INPUTS);
    if (count == 0) return GCOLL_SUCCESS;
    reduce_table[dtype][op](dst, src, nsrc, count, stream);
    return launched("reduction", count);
}

extern "C" gcoll_status_t gcoll_cuda_avg(void *buf, size_t count, gcoll_dtype_t dtype,
                                         int divisor, cudaStream_t stream)
{
    if ((unsigned)dtype >= GCOLL_DTYPE_COUNT || divisor <= 0)
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "device average of dtype %d over %d ranks: "
                           "unknown dtype or a divisor that is not positive", (int)dtype, divisor);
    if (count == 0) return GCOLL_SUCCESS;
    avg_table[dtype](buf, count, divisor, stream);
    return launched("average", count);
}
