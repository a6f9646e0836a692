/* SPDX-License-Identifier: BSD-3-Clause */
/* Test data of the benchmarks: small integers stored in any libgcoll dtype,
 * chosen so that every correct result is known in closed form and exact,
 * which lets -c compare outputs bit for bit.  Also the nccl-tests bandwidth
 * conventions, shared by the seven programs. */
#include <string.h>
#include "bench.h"

/* ---- bandwidth ---------------------------------------------------------- */

double gcoll_bench_bytes_count(size_t count, size_t dt_size, int nranks)
{
    (void)nranks;
    return (double)count * (double)dt_size;
}

double gcoll_bench_bytes_all(size_t count, size_t dt_size, int nranks)
{
    return (double)count * (double)dt_size * nranks;
}

double gcoll_bench_factor_one(int nranks)
{
    (void)nranks;
    return 1.0;
}

double gcoll_bench_factor_allreduce(int nranks)
{
    return 2.0 * (nranks - 1) / nranks;
}

double gcoll_bench_factor_nm1(int nranks)
{
    return (double)(nranks - 1) / nranks;
}

/* ---- 16-bit float conversion ------------------------------------------- */

/* float -> IEEE binary16, round to nearest even (kept independent of the
 * library's own conversion so that a bug there cannot hide itself). */
static uint16_t f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint32_t sign = (x >> 16) & 0x8000u, mant = x & 0x7fffffu;
    int exp = (int)((x >> 23) & 0xffu), e = exp - 127 + 15;
    if (exp == 0xff) return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0));
    if (e >= 31) return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) {                              /* subnormal half, or zero */
        if (e < -10) return (uint16_t)sign;
        mant |= 0x800000u;
        int shift = 14 - e;
        uint32_t h = mant >> shift, rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1))) h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((uint32_t)e << 10) | (mant >> 13), rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++;   /* may carry into exp: correct */
    return (uint16_t)(sign | h);
}

static float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu, x;
    if (exp == 0x1f) {
        x = sign | 0x7f800000u | (mant << 13);
    } else if (exp == 0) {
        float v = (float)mant / 16777216.0f;   /* mant * 2^-24 */
        return sign ? -v : v;
    } else {
        x = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

static uint16_t f32_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);  /* NaN */
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

static float bf16_to_f32(uint16_t b)
{
    uint32_t x = (uint32_t)b << 16;
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

/* ---- elements ----------------------------------------------------------- */

void gcoll_bench_elem_set(void *buf, size_t i, gcoll_dtype_t t, int64_t v)
{
    switch (t) {
    case GCOLL_INT8: case GCOLL_UINT8:   ((uint8_t *)buf)[i]  = (uint8_t)v;  break;
    case GCOLL_INT32: case GCOLL_UINT32: ((uint32_t *)buf)[i] = (uint32_t)v; break;
    case GCOLL_INT64: case GCOLL_UINT64: ((uint64_t *)buf)[i] = (uint64_t)v; break;
    case GCOLL_FLOAT16:  ((uint16_t *)buf)[i] = f32_to_f16((float)v);  break;
    case GCOLL_BFLOAT16: ((uint16_t *)buf)[i] = f32_to_bf16((float)v); break;
    case GCOLL_FLOAT32:  ((float *)buf)[i]  = (float)v;  break;
    case GCOLL_FLOAT64:  ((double *)buf)[i] = (double)v; break;
    default: break;
    }
}

double gcoll_bench_elem_get(const void *buf, size_t i, gcoll_dtype_t t)
{
    switch (t) {
    case GCOLL_INT8:     return ((const int8_t *)buf)[i];
    case GCOLL_UINT8:    return ((const uint8_t *)buf)[i];
    case GCOLL_INT32:    return ((const int32_t *)buf)[i];
    case GCOLL_UINT32:   return ((const uint32_t *)buf)[i];
    case GCOLL_INT64:    return (double)((const int64_t *)buf)[i];
    case GCOLL_UINT64:   return (double)((const uint64_t *)buf)[i];
    case GCOLL_FLOAT16:  return f16_to_f32(((const uint16_t *)buf)[i]);
    case GCOLL_BFLOAT16: return bf16_to_f32(((const uint16_t *)buf)[i]);
    case GCOLL_FLOAT32:  return ((const float *)buf)[i];
    case GCOLL_FLOAT64:  return ((const double *)buf)[i];
    default:             return 0.0;
    }
}

int gcoll_bench_elem_equal(const void *buf, size_t i, gcoll_dtype_t t, int64_t v)
{
    unsigned char want[8];
    size_t sz = gcoll_dtype_size(t);
    gcoll_bench_elem_set(want, 0, t, v);
    return memcmp((const unsigned char *)buf + i * sz, want, sz) == 0;
}

/* ---- values ------------------------------------------------------------- */

/* Ranges of red_a (1..A) and red_b (0..B-1): a sum over n ranks is at most
 * n*(A+B-1); bfloat16 holds integers exactly only up to 256. */
static void red_ranges(gcoll_dtype_t t, int64_t *A, int64_t *B)
{
    *A = 8, *B = 8;
    if (t == GCOLL_FLOAT16) *A = 4, *B = 4;
    if (t == GCOLL_BFLOAT16) *A = 2, *B = 2;
}

int64_t gcoll_bench_red_a(int rank, unsigned salt, gcoll_dtype_t t)
{
    int64_t A, B;
    red_ranges(t, &A, &B);
    return ((int64_t)rank + salt) % A + 1;
}

int64_t gcoll_bench_red_b(size_t j, gcoll_dtype_t t)
{
    int64_t A, B;
    red_ranges(t, &A, &B);
    return (int64_t)(j % (size_t)B);
}

/* Sum over ranks 0..n-1 of red_a: whole cycles of 1..A, then the rest. */
int64_t gcoll_bench_red_sum(int nranks, unsigned salt, size_t j, gcoll_dtype_t t)
{
    int64_t A, B, q, sum;
    red_ranges(t, &A, &B);
    q = nranks / A;
    sum = q * A * (A + 1) / 2;
    for (int64_t r = q * A; r < nranks; r++) sum += (r + salt) % A + 1;
    return sum + (int64_t)nranks * gcoll_bench_red_b(j, t);
}

int gcoll_bench_red_exact(int nranks, gcoll_dtype_t t)
{
    int64_t A, B, max, limit;
    red_ranges(t, &A, &B);
    max = (int64_t)nranks * (A + B - 1);
    switch (t) {
    case GCOLL_FLOAT16:  limit = 2048; break;
    case GCOLL_BFLOAT16: limit = 256; break;
    case GCOLL_FLOAT32:  limit = (int64_t)1 << 24; break;
    case GCOLL_FLOAT64:  limit = (int64_t)1 << 53; break;
    default:             return 1;                 /* integers wrap, exactly */
    }
    return max <= limit;
}

int64_t gcoll_bench_move_val(int src, int dst, size_t i, unsigned salt)
{
    uint64_t v = (uint64_t)src * 31u + (uint64_t)dst * 17u + (i % 97u) + (uint64_t)salt * 7u;
    return (int64_t)(v % 97u) + 1;
}
