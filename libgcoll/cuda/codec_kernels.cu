/* SPDX-License-Identifier: BSD-3-Clause */
/* The gradient codecs as device kernels, bit for bit the host codecs
 * (compress/codec_bf16.c, codec_topk.c, codec_onebit.c): same payload
 * bytes, same residual.  How each one gets there:
 *
 * - BF16 is elementwise: the conversions are dtype_math.h's, the very
 *   functions the host codec calls (GCOLL_HD, compiled by nvcc too), so
 *   nearest-even rounding, the carry to infinity and NaN (kept, made
 *   quiet) are the host's by construction.  The residual x - decoded is
 *   one float32 subtraction, IEEE on both sides.
 * - ONEBIT's scale is a reduction, and the host's order is part of its
 *   bits: per block, sum += fabs((double)x[i]) from the block's first
 *   element to its last, then (float)(sum / len).  The device does exactly
 *   that, one thread per block, serially, in double: the same additions in
 *   the same order, each IEEE round-to-nearest (no multiply is involved,
 *   so contraction cannot change it; --fmad=false anyway), and the double
 *   division and the conversion to float are the round-to-nearest ones
 *   (div.rn.f64, cvt.rn.f32.f64), as on x86-64.  Parallelism is across
 *   blocks (2048 elements each by default); a huge onebit_block is one
 *   thread summing everything, slow but still the host's bits.  The sign
 *   bits and the residual (x -= +-scale) are elementwise, packed per byte
 *   by one thread, as the host packs them.
 * - TOPK's selection is fixed by the keys alone: the k-th largest key t of
 *   the magnitudes' bit patterns (sign cleared: NaN above infinity) and
 *   need = k - #(keys > t); the host takes every key > t and the first
 *   `need` keys == t in index order (ties to the lower index), writing
 *   them in index order.  Whatever route the host's select takes (sampled
 *   bound or not) it returns that same t and need.  The device finds t by
 *   the host's radix select (digits of 11, 11, 10 bits; the histograms are
 *   integer counts, so the atomics' order does not matter), then a stable
 *   compaction by index: per tile of TILE elements, counts of keys > t and
 *   == t; a serial scan of the tiles gives each tile the number of equal
 *   keys and of selected elements before it; in the tile a block scan gives
 *   each element its rank among equal keys (selected if < need) and its
 *   output slot.  The residual x - x is the host's (0, or NaN for an
 *   infinity). */
#include <cuda_runtime.h>
#include <stdint.h>
#include <cub/block/block_scan.cuh>
/* gcoll.h includes mpi.h: take it here, as C++ without MPI's C++ bindings
 * (see cuda_kernels.cu). */
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
extern "C" {
#include "base/status.h"
#include "compress/codec.h"
}
#include "base/dtype_math.h"
#include "cuda/codec_kernels.h"

namespace {

const int THREADS = 256;

/* Enough blocks to cover the work, at most a few waves: grid-stride loops
 * do the rest (as cuda_kernels.cu). */
unsigned grid_for(size_t items)
{
    size_t blocks = (items + THREADS - 1) / THREADS;
    return (unsigned)(blocks < 1 ? 1 : blocks > 2048 ? 2048 : blocks);
}

#define GRID_STRIDE(i, n) \
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
         i += (size_t)gridDim.x * blockDim.x)

/* ---- error feedback (compressor.c: encode_share, keep_finite) ----------- */

__global__ void ef_add_kernel(const float *x, float *e, size_t n)
{
    GRID_STRIDE(i, n) e[i] = x[i] + e[i];   /* the host's operand order */
}

__global__ void keep_finite_kernel(float *e, size_t n)
{
    GRID_STRIDE(i, n) e[i] = isfinite(e[i]) ? e[i] : 0.0f;
}

/* ---- BF16 ------------------------------------------------------------------ */

__global__ void bf16_encode_kernel(float *x, size_t n, uint16_t *h)
{
    GRID_STRIDE(i, n) {
        uint16_t b = gcoll_math_f32_to_bf16(x[i]);
        h[i] = b;
        x[i] -= gcoll_math_bf16_to_f32(b);
    }
}

__global__ void bf16_accumulate_kernel(const uint16_t *h, size_t n, float *acc)
{
    GRID_STRIDE(i, n) acc[i] += gcoll_math_bf16_to_f32(h[i]);
}

/* ---- ONEBIT ---------------------------------------------------------------- */

/* codec_onebit.c's block_of and nblocks. */
size_t onebit_block(const gcoll_compress_params_t *p, size_t n)
{
    return p->onebit_block < n ? p->onebit_block : n ? n : 1;
}

size_t onebit_nblocks(const gcoll_compress_params_t *p, size_t n)
{
    size_t b = onebit_block(p, n);
    return n / b + (n % b != 0);
}

__device__ unsigned plus_bit(float x) { return ~gcoll_math_f32_bits(x) >> 31; }

__device__ float signed_scale(uint32_t scale_bits, unsigned plus)
{
    return gcoll_math_bits_f32(scale_bits ^ ((uint32_t)(plus ^ 1u) << 31));
}

/* One thread per block, the host's serial double sum (see the top). */
__global__ void onebit_scale_kernel(const float *x, size_t n, size_t blk, size_t nb, float *scale)
{
    GRID_STRIDE(b, nb) {
        size_t o = b * blk, e = n - o > blk ? o + blk : n;
        double sum = 0;
        for (size_t i = o; i < e; i++) sum += fabs((double)x[i]);
        scale[b] = (float)(sum / (double)(e - o));
    }
}

/* One thread per payload byte: its 8 sign bits (from the input, as the
 * host's first pass), then those elements' residuals. */
__global__ void onebit_bits_kernel(float *x, size_t n, size_t blk, const float *scale,
                                   unsigned char *bits)
{
    GRID_STRIDE(j, (n + 7) / 8) {
        unsigned b = 0;
        for (unsigned k = 0; k < 8 && 8 * j + k < n; k++) b |= plus_bit(x[8 * j + k]) << k;
        bits[j] = (unsigned char)b;
        for (unsigned k = 0; k < 8 && 8 * j + k < n; k++) {
            size_t i = 8 * j + k;
            x[i] -= signed_scale(gcoll_math_f32_bits(scale[i / blk]), (b >> k) & 1u);
        }
    }
}

__global__ void onebit_accumulate_kernel(const float *scale, const unsigned char *bits, size_t n,
                                         size_t blk, float *acc)
{
    GRID_STRIDE(i, n)
        acc[i] += signed_scale(gcoll_math_f32_bits(scale[i / blk]), (bits[i / 8] >> (i % 8)) & 1u);
}

/* ---- TOPK ------------------------------------------------------------------ */

const int TILE_ITEMS = 4;                  /* consecutive elements per thread */
const int TILE = THREADS * TILE_ITEMS;     /* elements per compaction tile */
const int RADIX_BINS = 1 << 11;

__device__ uint32_t mag_key(float x) { return gcoll_math_f32_bits(x) & 0x7fffffffu; }

/* The select's state: the key prefix fixed so far and how many keys equal
 * to the final threshold are still to be taken (the host's `need`). */
struct select_t {
    uint32_t           prefix, mask;
    unsigned long long need;
};

/* Scratch: the state, one histogram, four per-tile arrays. */
struct topk_scratch_t {
    select_t *sel;
    uint32_t *hist, *tile_gt, *tile_eq, *tile_eq_off, *tile_sel_off;
};

size_t topk_tiles(size_t n) { return (n + TILE - 1) / TILE; }

size_t topk_scratch_bytes(size_t n)
{
    return sizeof(select_t) + RADIX_BINS * sizeof(uint32_t) + 4 * topk_tiles(n) * sizeof(uint32_t);
}

topk_scratch_t topk_scratch(void *s, size_t n)
{
    topk_scratch_t t;
    size_t nt = topk_tiles(n);
    t.sel = (select_t *)s;
    t.hist = (uint32_t *)(t.sel + 1);
    t.tile_gt = t.hist + RADIX_BINS;
    t.tile_eq = t.tile_gt + nt;
    t.tile_eq_off = t.tile_eq + nt;
    t.tile_sel_off = t.tile_eq_off + nt;
    return t;
}

__global__ void select_init_kernel(select_t *s, unsigned long long k)
{
    s->prefix = 0;
    s->mask = 0;
    s->need = k;
}

/* One digit's histogram of the keys under the prefix (shared-memory counts,
 * then added into the global histogram: integers, any order). */
__global__ void radix_hist_kernel(const float *x, size_t n, int shift, uint32_t digit_mask,
                                  const select_t *s, uint32_t *hist)
{
    __shared__ uint32_t h[RADIX_BINS];
    for (int b = threadIdx.x; b < RADIX_BINS; b += blockDim.x) h[b] = 0;
    __syncthreads();
    uint32_t prefix = s->prefix, mask = s->mask;
    GRID_STRIDE(i, n) {
        uint32_t key = mag_key(x[i]);
        if ((key & mask) == prefix) atomicAdd(&h[(key >> shift) & digit_mask], 1u);
    }
    __syncthreads();
    for (int b = threadIdx.x; b < RADIX_BINS; b += blockDim.x)
        if (h[b]) atomicAdd(&hist[b], h[b]);
}

/* The host's digit pick, from the top bin down (one thread). */
__global__ void radix_pick_kernel(const uint32_t *hist, int shift, uint32_t digit_mask, select_t *s)
{
    unsigned long long need = s->need;
    uint32_t b = digit_mask;
    for (;; b--) {   /* stops: k <= keys under prefix (b == 0 only guards a broken count) */
        if (hist[b] >= need || b == 0) break;
        need -= hist[b];
    }
    s->need = need;
    s->prefix |= b << shift;
    s->mask |= digit_mask << shift;
}

/* Per tile: how many keys are above the threshold and how many equal it. */
__global__ void topk_count_kernel(const float *x, size_t n, const select_t *s, uint32_t *tile_gt,
                                  uint32_t *tile_eq)
{
    __shared__ uint32_t gt, eq;
    if (threadIdx.x == 0) gt = eq = 0;
    __syncthreads();
    uint32_t t = s->prefix, my_gt = 0, my_eq = 0;
    size_t o = (size_t)blockIdx.x * TILE;
    for (int j = threadIdx.x; j < TILE && o + j < n; j += blockDim.x) {
        uint32_t key = mag_key(x[o + j]);
        my_gt += key > t;
        my_eq += key == t;
    }
    atomicAdd(&gt, my_gt);
    atomicAdd(&eq, my_eq);
    __syncthreads();
    if (threadIdx.x == 0) {
        tile_gt[blockIdx.x] = gt;
        tile_eq[blockIdx.x] = eq;
    }
}

/* Exclusive prefixes over the tiles, in index order (one thread): equal
 * keys before each tile, and selected elements before it (the first `need`
 * equal keys are selected). */
__global__ void topk_scan_kernel(size_t ntiles, const select_t *s, const uint32_t *tile_gt,
                                 const uint32_t *tile_eq, uint32_t *eq_off, uint32_t *sel_off)
{
    unsigned long long need = s->need, eq_before = 0, sel_before = 0;
    for (size_t t = 0; t < ntiles; t++) {
        eq_off[t] = (uint32_t)eq_before;
        sel_off[t] = (uint32_t)sel_before;
        unsigned long long left = eq_before < need ? need - eq_before : 0;
        sel_before += tile_gt[t] + (tile_eq[t] < left ? tile_eq[t] : left);
        eq_before += tile_eq[t];
    }
}

typedef cub::BlockScan<uint32_t, THREADS> block_scan_t;

/* Per tile, a block: each thread takes TILE_ITEMS consecutive elements, so
 * thread order is index order and two block scans give every element its
 * rank among the tile's equal keys and its output slot. */
__global__ void topk_write_kernel(float *x, size_t n, const select_t *s, const uint32_t *eq_off,
                                  const uint32_t *sel_off, uint32_t *idx, float *val)
{
    __shared__ typename block_scan_t::TempStorage tmp;
    uint32_t t = s->prefix;
    unsigned long long need = s->need;
    size_t o = (size_t)blockIdx.x * TILE + (size_t)threadIdx.x * TILE_ITEMS;
    uint32_t key[TILE_ITEMS], n_eq = 0, n_sel = 0, eq_rank, slot;
    int sel[TILE_ITEMS];
    for (int j = 0; j < TILE_ITEMS; j++) {
        key[j] = o + j < n ? mag_key(x[o + j]) : 0;
        n_eq += o + j < n && key[j] == t;
    }
    block_scan_t(tmp).ExclusiveSum(n_eq, eq_rank);
    __syncthreads();   /* tmp is used again */
    unsigned long long rank = (unsigned long long)eq_off[blockIdx.x] + eq_rank;
    for (int j = 0; j < TILE_ITEMS; j++) {
        int in = o + j < n, eq = in && key[j] == t;
        sel[j] = in && (key[j] > t || (eq && rank < need));
        rank += eq;
        n_sel += sel[j];
    }
    block_scan_t(tmp).ExclusiveSum(n_sel, slot);
    slot += sel_off[blockIdx.x];
    for (int j = 0; j < TILE_ITEMS; j++)
        if (sel[j]) {
            float v = x[o + j];
            idx[slot] = (uint32_t)(o + j);
            val[slot++] = v;
            x[o + j] = v - v;   /* 0, or NaN for an infinity: what x - decoded gives */
        }
}

__global__ void topk_accumulate_kernel(const uint32_t *idx, const float *val, size_t k, float *acc)
{
    GRID_STRIDE(j, k) acc[idx[j]] += val[j];   /* indices are distinct: no race */
}

void topk_encode(const gcoll_compress_params_t *p, float *x, size_t n, void *payload,
                 void *scratch, cudaStream_t stream)
{
    static const int width[3] = { 11, 11, 10 };
    size_t k = gcoll_codec_topk_k(p, n), nt = topk_tiles(n);
    if (!k) return;
    topk_scratch_t s = topk_scratch(scratch, n);
    select_init_kernel<<<1, 1, 0, stream>>>(s.sel, k);
    for (int d = 0, shift = 32; d < 3; d++) {
        uint32_t digit_mask = (1u << width[d]) - 1u;
        shift -= width[d];
        cudaMemsetAsync(s.hist, 0, RADIX_BINS * sizeof(uint32_t), stream);
        radix_hist_kernel<<<grid_for(n), THREADS, 0, stream>>>(x, n, shift, digit_mask, s.sel,
                                                              s.hist);
        radix_pick_kernel<<<1, 1, 0, stream>>>(s.hist, shift, digit_mask, s.sel);
    }
    topk_count_kernel<<<(unsigned)nt, THREADS, 0, stream>>>(x, n, s.sel, s.tile_gt, s.tile_eq);
    topk_scan_kernel<<<1, 1, 0, stream>>>(nt, s.sel, s.tile_gt, s.tile_eq, s.tile_eq_off,
                                          s.tile_sel_off);
    uint32_t *idx = (uint32_t *)payload;
    topk_write_kernel<<<(unsigned)nt, THREADS, 0, stream>>>(x, n, s.sel, s.tile_eq_off,
                                                            s.tile_sel_off, idx,
                                                            (float *)(idx + k));
}

/* ---- dispatch ------------------------------------------------------------ */

gcoll_status_t launched(const char *what, gcoll_compress_t kind, size_t n)
{
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) return GCOLL_SUCCESS;
    return GCOLL_ERROR(GCOLL_ERR_TRANSPORT, "device %s %s of %zu elements failed to launch: %s",
                       gcoll_compress_name(kind), what, n, cudaGetErrorString(e));
}

gcoll_status_t check_args(const gcoll_compress_params_t *p, size_t n, const char *fn)
{
    if (!p || !gcoll_codec_find(p->kind))
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "%s: not a codec (kind %d)", fn,
                           p ? (int)p->kind : -1);
    if (p->kind == GCOLL_COMPRESS_TOPK && n > UINT32_MAX)
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "%s: TOPK of %zu elements: indices are 32-bit",
                           fn, n);
    if (p->kind == GCOLL_COMPRESS_ONEBIT && p->onebit_block == 0)
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "%s: onebit_block 0 (fill the parameters in "
                           "with gcoll_codec_params)", fn);
    return GCOLL_SUCCESS;
}

void encode(const gcoll_compress_params_t *p, float *x, size_t n, void *payload, void *scratch,
            cudaStream_t stream)
{
    if (p->kind == GCOLL_COMPRESS_BF16) {
        bf16_encode_kernel<<<grid_for(n), THREADS, 0, stream>>>(x, n, (uint16_t *)payload);
    } else if (p->kind == GCOLL_COMPRESS_ONEBIT) {
        size_t blk = onebit_block(p, n), nb = onebit_nblocks(p, n);
        float *scale = (float *)payload;
        onebit_scale_kernel<<<grid_for(nb), THREADS, 0, stream>>>(x, n, blk, nb, scale);
        onebit_bits_kernel<<<grid_for((n + 7) / 8), THREADS, 0, stream>>>(
            x, n, blk, scale, (unsigned char *)(scale + nb));
    } else {
        topk_encode(p, x, n, payload, scratch, stream);
    }
}

} // namespace

extern "C" size_t gcoll_cuda_codec_scratch_bytes(const gcoll_compress_params_t *p, size_t n)
{
    return p && p->kind == GCOLL_COMPRESS_TOPK && n ? topk_scratch_bytes(n) : 0;
}

extern "C" gcoll_status_t gcoll_cuda_codec_encode(const gcoll_compress_params_t *p, float *x,
                                                  size_t n, void *payload, void *scratch,
                                                  cudaStream_t stream)
{
    GCOLL_TRY(check_args(p, n, "gcoll_cuda_codec_encode"));
    if (!n) return GCOLL_SUCCESS;
    encode(p, x, n, payload, scratch, stream);
    return launched("encode", p->kind, n);
}

extern "C" gcoll_status_t gcoll_cuda_codec_encode_ef(const gcoll_compress_params_t *p, float *x,
                                                     float *resid, size_t n, void *payload,
                                                     void *scratch, cudaStream_t stream)
{
    GCOLL_TRY(check_args(p, n, "gcoll_cuda_codec_encode_ef"));
    if (!n) return GCOLL_SUCCESS;
    if (!resid) {
        encode(p, x, n, payload, scratch, stream);
        return launched("encode", p->kind, n);
    }
    ef_add_kernel<<<grid_for(n), THREADS, 0, stream>>>(x, resid, n);
    encode(p, resid, n, payload, scratch, stream);
    keep_finite_kernel<<<grid_for(n), THREADS, 0, stream>>>(resid, n);
    return launched("encode", p->kind, n);
}

extern "C" gcoll_status_t gcoll_cuda_codec_accumulate(const gcoll_compress_params_t *p,
                                                      const void *payload, size_t n, float *acc,
                                                      cudaStream_t stream)
{
    GCOLL_TRY(check_args(p, n, "gcoll_cuda_codec_accumulate"));
    if (!n) return GCOLL_SUCCESS;
    if (p->kind == GCOLL_COMPRESS_BF16) {
        bf16_accumulate_kernel<<<grid_for(n), THREADS, 0, stream>>>((const uint16_t *)payload, n,
                                                                    acc);
    } else if (p->kind == GCOLL_COMPRESS_ONEBIT) {
        size_t blk = onebit_block(p, n), nb = onebit_nblocks(p, n);
        const float *scale = (const float *)payload;
        onebit_accumulate_kernel<<<grid_for(n), THREADS, 0, stream>>>(
            scale, (const unsigned char *)(scale + nb), n, blk, acc);
    } else {
        size_t k = gcoll_codec_topk_k(p, n);
        const uint32_t *idx = (const uint32_t *)payload;
        topk_accumulate_kernel<<<grid_for(k), THREADS, 0, stream>>>(idx, (const float *)(idx + k),
                                                                    k, acc);
    }
    return launched("accumulate", p->kind, n);
}
