/* SPDX-License-Identifier: BSD-3-Clause */
/* Host reduction kernels: one loop per dtype x op, chosen through a table.
 *
 * This is the inner loop of every host allreduce, so it must run near memory
 * bandwidth.  The loops are plain `dst[i] = f(a[i], b[i])` over the
 * branch-free element functions of dtype_math.h, which gcc vectorizes:
 * - the library is built with autoconf's default -O2, where gcc 12's
 *   "very cheap" vectorizer model refuses loops that need an epilogue or an
 *   alias check, so this file asks for O3 (before any #include, so the
 *   inline helpers get the same options and inline cleanly);
 * - dst may alias a or b exactly, so no `restrict`: gcc's runtime alias check
 *   accepts equal pointers (no cross-iteration dependence) and still takes
 *   the vector path;
 * - on x86-64, kernels bound by computation rather than memory (the 16-bit
 *   floats' software conversions, 64-bit multiply and compare, which SSE2
 *   lacks) are cloned for AVX-512 and AVX2 and chosen once at load time by
 *   ifunc: about 2x on 256 KiB fp16/bf16 arrays (AVX-512 Xeon VM).
 *   The memory-bound ones stay baseline SSE2: wider vectors measured no
 *   faster on 64 MiB arrays, where float32 a += b runs at memcpy's rate.
 */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif

#include <stdint.h>
#include "base/reduce.h"
#include "base/dtype_math.h"
#include "base/status.h"

typedef void (*reduce_fn_t)(void *dst, const void *a, const void *b, size_t n);
typedef void (*avg_fn_t)(void *buf, size_t n, int divisor);

/* Wider-vector clones, where the toolchain can make them (ifunc needs ELF
 * and glibc; clang spells the feature differently, so gcc only). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__ELF__) && \
    defined(__linux__) && !defined(__SANITIZE_THREAD__)
/* (not under ThreadSanitizer: it instruments the ifunc resolvers, which then
 * call into it before the loader has bound its symbols) */
#define WIDE __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define WIDE
#endif
#define NARROW

/* Defines static void NAME(dst, a, b, n) applying FN elementwise.  The name
 * is spelled out at each use so every kernel can be grepped. */
#define REDUCE_KERNEL(_attr, _name, _type, _fn) \
    _attr static void _name(void *dst, const void *a, const void *b, size_t n) \
    { \
        _type *d = (_type *)dst; \
        const _type *x = (const _type *)a, *y = (const _type *)b; \
        for (size_t i = 0; i < n; i++) d[i] = _fn(x[i], y[i]); \
    }

REDUCE_KERNEL(NARROW, reduce_sum_int8,   int8_t,   gcoll_math_sum_int8)
REDUCE_KERNEL(NARROW, reduce_prod_int8,  int8_t,   gcoll_math_prod_int8)
REDUCE_KERNEL(NARROW, reduce_min_int8,   int8_t,   gcoll_math_min_int8)
REDUCE_KERNEL(NARROW, reduce_max_int8,   int8_t,   gcoll_math_max_int8)
REDUCE_KERNEL(NARROW, reduce_sum_uint8,  uint8_t,  gcoll_math_sum_uint8)
REDUCE_KERNEL(NARROW, reduce_prod_uint8, uint8_t,  gcoll_math_prod_uint8)
REDUCE_KERNEL(NARROW, reduce_min_uint8,  uint8_t,  gcoll_math_min_uint8)
REDUCE_KERNEL(NARROW, reduce_max_uint8,  uint8_t,  gcoll_math_max_uint8)
REDUCE_KERNEL(NARROW, reduce_sum_int32,  int32_t,  gcoll_math_sum_int32)
REDUCE_KERNEL(NARROW, reduce_prod_int32, int32_t,  gcoll_math_prod_int32)
REDUCE_KERNEL(NARROW, reduce_min_int32,  int32_t,  gcoll_math_min_int32)
REDUCE_KERNEL(NARROW, reduce_max_int32,  int32_t,  gcoll_math_max_int32)
REDUCE_KERNEL(NARROW, reduce_sum_uint32, uint32_t, gcoll_math_sum_uint32)
REDUCE_KERNEL(NARROW, reduce_prod_uint32, uint32_t, gcoll_math_prod_uint32)
REDUCE_KERNEL(NARROW, reduce_min_uint32, uint32_t, gcoll_math_min_uint32)
REDUCE_KERNEL(NARROW, reduce_max_uint32, uint32_t, gcoll_math_max_uint32)
REDUCE_KERNEL(NARROW, reduce_sum_int64,  int64_t,  gcoll_math_sum_int64)
REDUCE_KERNEL(WIDE,   reduce_prod_int64, int64_t,  gcoll_math_prod_int64)
REDUCE_KERNEL(WIDE,   reduce_min_int64,  int64_t,  gcoll_math_min_int64)
REDUCE_KERNEL(WIDE,   reduce_max_int64,  int64_t,  gcoll_math_max_int64)
REDUCE_KERNEL(NARROW, reduce_sum_uint64, uint64_t, gcoll_math_sum_uint64)
REDUCE_KERNEL(WIDE,   reduce_prod_uint64, uint64_t, gcoll_math_prod_uint64)
REDUCE_KERNEL(WIDE,   reduce_min_uint64, uint64_t, gcoll_math_min_uint64)
REDUCE_KERNEL(WIDE,   reduce_max_uint64, uint64_t, gcoll_math_max_uint64)
REDUCE_KERNEL(WIDE,   reduce_sum_fp16,   uint16_t, gcoll_math_sum_fp16)
REDUCE_KERNEL(WIDE,   reduce_prod_fp16,  uint16_t, gcoll_math_prod_fp16)
REDUCE_KERNEL(WIDE,   reduce_min_fp16,   uint16_t, gcoll_math_min_fp16)
REDUCE_KERNEL(WIDE,   reduce_max_fp16,   uint16_t, gcoll_math_max_fp16)
REDUCE_KERNEL(WIDE,   reduce_sum_bf16,   uint16_t, gcoll_math_sum_bf16)
REDUCE_KERNEL(WIDE,   reduce_prod_bf16,  uint16_t, gcoll_math_prod_bf16)
REDUCE_KERNEL(WIDE,   reduce_min_bf16,   uint16_t, gcoll_math_min_bf16)
REDUCE_KERNEL(WIDE,   reduce_max_bf16,   uint16_t, gcoll_math_max_bf16)
REDUCE_KERNEL(NARROW, reduce_sum_f32,    float,    gcoll_math_sum_f32)
REDUCE_KERNEL(NARROW, reduce_prod_f32,   float,    gcoll_math_prod_f32)
REDUCE_KERNEL(NARROW, reduce_min_f32,    float,    gcoll_math_min_f32)
REDUCE_KERNEL(NARROW, reduce_max_f32,    float,    gcoll_math_max_f32)
REDUCE_KERNEL(NARROW, reduce_sum_f64,    double,   gcoll_math_sum_f64)
REDUCE_KERNEL(NARROW, reduce_prod_f64,   double,   gcoll_math_prod_f64)
REDUCE_KERNEL(NARROW, reduce_min_f64,    double,   gcoll_math_min_f64)
REDUCE_KERNEL(NARROW, reduce_max_f64,    double,   gcoll_math_max_f64)

/* AVG's reduction step is SUM (the division comes once, at the end), so the
 * AVG column repeats SUM: a caller passing the user's op through gets the
 * right kernel. */
static const reduce_fn_t reduce_table[GCOLL_DTYPE_COUNT][GCOLL_OP_COUNT] = {
    [GCOLL_INT8]     = { reduce_sum_int8,   reduce_prod_int8,   reduce_min_int8,   reduce_max_int8,   reduce_sum_int8 },
    [GCOLL_UINT8]    = { reduce_sum_uint8,  reduce_prod_uint8,  reduce_min_uint8,  reduce_max_uint8,  reduce_sum_uint8 },
    [GCOLL_INT32]    = { reduce_sum_int32,  reduce_prod_int32,  reduce_min_int32,  reduce_max_int32,  reduce_sum_int32 },
    [GCOLL_UINT32]   = { reduce_sum_uint32, reduce_prod_uint32, reduce_min_uint32, reduce_max_uint32, reduce_sum_uint32 },
    [GCOLL_INT64]    = { reduce_sum_int64,  reduce_prod_int64,  reduce_min_int64,  reduce_max_int64,  reduce_sum_int64 },
    [GCOLL_UINT64]   = { reduce_sum_uint64, reduce_prod_uint64, reduce_min_uint64, reduce_max_uint64, reduce_sum_uint64 },
    [GCOLL_FLOAT16]  = { reduce_sum_fp16,   reduce_prod_fp16,   reduce_min_fp16,   reduce_max_fp16,   reduce_sum_fp16 },
    [GCOLL_BFLOAT16] = { reduce_sum_bf16,   reduce_prod_bf16,   reduce_min_bf16,   reduce_max_bf16,   reduce_sum_bf16 },
    [GCOLL_FLOAT32]  = { reduce_sum_f32,    reduce_prod_f32,    reduce_min_f32,    reduce_max_f32,    reduce_sum_f32 },
    [GCOLL_FLOAT64]  = { reduce_sum_f64,    reduce_prod_f64,    reduce_min_f64,    reduce_max_f64,    reduce_sum_f64 },
};

gcoll_status_t gcoll_reduce_host(void *dst, const void *a, const void *b, size_t count,
                                 gcoll_dtype_t dtype, gcoll_op_t op)
{
    if (GCOLL_UNLIKELY((unsigned)dtype >= GCOLL_DTYPE_COUNT || (unsigned)op >= GCOLL_OP_COUNT))
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "cannot reduce dtype %d with op %d: unknown %s",
                           (int)dtype, (int)op,
                           (unsigned)dtype >= GCOLL_DTYPE_COUNT ? "dtype" : "op");
    if (count) reduce_table[dtype][op](dst, a, b, count);
    return GCOLL_SUCCESS;
}

/* ---- AVG: the final division ------------------------------------------- */

/* Integers: C division of the wrapped sum, truncating toward zero.  The
 * divisor is positive (checked by the caller below), so every quotient fits
 * its type and INT_MIN / -1 cannot occur.  x86 has no vector integer
 * division; this runs once per AVG, not per reduction step, so it is left
 * scalar. */
static void avg_int8(void *buf, size_t n, int d)
{
    int8_t *p = buf;
    for (size_t i = 0; i < n; i++) p[i] = (int8_t)(p[i] / d);
}

static void avg_uint8(void *buf, size_t n, int d)
{
    uint8_t *p = buf;
    for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(p[i] / d);
}

static void avg_int32(void *buf, size_t n, int d)
{
    int32_t *p = buf;
    for (size_t i = 0; i < n; i++) p[i] /= d;
}

static void avg_uint32(void *buf, size_t n, int d)
{
    uint32_t *p = buf;
    for (size_t i = 0; i < n; i++) p[i] /= (uint32_t)d;
}

static void avg_int64(void *buf, size_t n, int d)
{
    int64_t *p = buf;
    for (size_t i = 0; i < n; i++) p[i] /= (int64_t)d;
}

static void avg_uint64(void *buf, size_t n, int d)
{
    uint64_t *p = buf;
    for (size_t i = 0; i < n; i++) p[i] /= (uint64_t)d;
}

/* Floats: a true division (not a multiplication by the reciprocal, which
 * would round twice).  16-bit types divide in float32 and round back once. */
static void avg_fp16(void *buf, size_t n, int d)
{
    uint16_t *p = buf;
    float fd = (float)d;
    for (size_t i = 0; i < n; i++)
        p[i] = gcoll_math_f32_to_fp16(gcoll_math_fp16_to_f32(p[i]) / fd);
}

static void avg_bf16(void *buf, size_t n, int d)
{
    uint16_t *p = buf;
    float fd = (float)d;
    for (size_t i = 0; i < n; i++)
        p[i] = gcoll_math_f32_to_bf16(gcoll_math_bf16_to_f32(p[i]) / fd);
}

static void avg_f32(void *buf, size_t n, int d)
{
    float *p = buf;
    float fd = (float)d;   /* exact: rank counts are far below 2^24 */
    for (size_t i = 0; i < n; i++) p[i] /= fd;
}

static void avg_f64(void *buf, size_t n, int d)
{
    double *p = buf;
    double fd = (double)d;
    for (size_t i = 0; i < n; i++) p[i] /= fd;
}

static const avg_fn_t avg_table[GCOLL_DTYPE_COUNT] = {
    [GCOLL_INT8]    = avg_int8,   [GCOLL_UINT8]    = avg_uint8,
    [GCOLL_INT32]   = avg_int32,  [GCOLL_UINT32]   = avg_uint32,
    [GCOLL_INT64]   = avg_int64,  [GCOLL_UINT64]   = avg_uint64,
    [GCOLL_FLOAT16] = avg_fp16,   [GCOLL_BFLOAT16] = avg_bf16,
    [GCOLL_FLOAT32] = avg_f32,    [GCOLL_FLOAT64]  = avg_f64,
};

gcoll_status_t gcoll_reduce_avg_host(void *buf, size_t count, gcoll_dtype_t dtype, int divisor)
{
    if (GCOLL_UNLIKELY((unsigned)dtype >= GCOLL_DTYPE_COUNT))
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "cannot average dtype %d: unknown dtype",
                           (int)dtype);
    if (GCOLL_UNLIKELY(divisor <= 0))
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "cannot average over %d ranks: the divisor "
                           "must be positive", divisor);
    if (count) avg_table[dtype](buf, count, divisor);
    return GCOLL_SUCCESS;
}
