/* SPDX-License-Identifier: BSD-3-Clause */
/* Elementwise math shared by the host kernels (gcc) and the device kernels
 * (nvcc): the reduction of one element and the fp16/bf16 <-> float32
 * conversions.  One definition for both, so the numerics the CPU tests check
 * are the numerics the GPU computes.
 *
 * Everything here is branch-free (selects, not jumps) so that gcc can
 * vectorize a loop over these functions and a GPU warp does not diverge.
 *
 * Numerics (see also gcoll.h):
 * - fp16 and bf16 are converted in software, round-to-nearest-even, with
 *   subnormals, overflow to infinity, and NaN kept a quiet NaN (sign and top
 *   payload bits preserved).  The conversions are exact under flush-to-zero /
 *   denormals-are-zero modes too: the float arithmetic they use never takes a
 *   float32 subnormal as an operand that matters.
 * - Integer SUM and PROD wrap as two's complement.  Signed types are computed
 *   through their unsigned type (signed overflow is undefined behaviour in C);
 *   converting back to the signed type is modulo 2^N on every compiler we
 *   support (gcc, clang, nvcc document it).
 * - MIN/MAX on floats: if either operand is NaN the result is NaN (NaN
 *   propagates, like IEEE 754-2019 minimum/maximum, unlike C fmin/fmax);
 *   -0.0 and +0.0 compare equal and either may be returned.
 * - 16-bit floats are reduced in float32 and rounded back after each step.
 *
 * Do not build users of this header with -ffinite-math-only / -ffast-math: the
 * NaN tests (x != x) would be folded away. */
#ifndef GCOLL_DTYPE_MATH_H
#define GCOLL_DTYPE_MATH_H

#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define GCOLL_HD __host__ __device__ inline
#else
#define GCOLL_HD static inline
#endif

/* ---- bit casts ---------------------------------------------------------- */

GCOLL_HD uint32_t gcoll_math_f32_bits(float f)
{
#ifdef __CUDA_ARCH__
    return __float_as_uint(f);
#else
    uint32_t u;
    memcpy(&u, &f, sizeof(u));   /* compiles to a register move */
    return u;
#endif
}

GCOLL_HD float gcoll_math_bits_f32(uint32_t u)
{
#ifdef __CUDA_ARCH__
    return __uint_as_float(u);
#else
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
#endif
}

/* c ? x : y as bit masks.  The fp16 conversions compute every candidate and
 * combine them with masks: written as ?: gcc sinks each float operation into
 * its arm and, since a float operation may trap (-ftrapping-math, the
 * default), then refuses to if-convert and vectorize the loop. */
GCOLL_HD uint32_t gcoll_math_select(int c, uint32_t x, uint32_t y)
{
    uint32_t m = 0u - (uint32_t)(c != 0);
    return (x & m) | (y & ~m);
}

/* ---- fp16 (IEEE binary16) ------------------------------------------------ */

/* Exact widening (every fp16 is a float32). */
GCOLL_HD float gcoll_math_fp16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t em   = (uint32_t)(h & 0x7fffu);       /* exponent and mantissa */
    uint32_t exp  = em & 0x7c00u;
    /* Normal: move the fields into place and rebias the exponent 15 -> 127. */
    uint32_t normal = (em << 13) + ((127u - 15u) << 23);
    /* Inf/NaN: all-ones exponent; a NaN gets the quiet bit. */
    uint32_t infnan = (em << 13) | 0x7f800000u | ((em & 0x3ffu) ? 0x00400000u : 0u);
    /* Subnormal or zero, m * 2^-24: build 2^-14 * (1 + m/1024) and subtract
     * 2^-14.  Both operands are normal float32 and the difference is exact,
     * so this holds under denormals-are-zero too. */
    float sub = gcoll_math_bits_f32((em << 13) + (113u << 23)) - gcoll_math_bits_f32(113u << 23);
    uint32_t r = gcoll_math_select(exp == 0x7c00u, infnan,
                                   gcoll_math_select(exp == 0, gcoll_math_f32_bits(sub), normal));
    return gcoll_math_bits_f32(r | sign);
}

/* Round to nearest even; overflow (|f| >= 65520) gives infinity. */
GCOLL_HD uint16_t gcoll_math_f32_to_fp16(float f)
{
    uint32_t u    = gcoll_math_f32_bits(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t a    = u & 0x7fffffffu;
    /* |f| >= 65536, inf or NaN.  (Smaller overflows carry into the exponent
     * in the normal path below.)  NaN keeps its top payload bits, made quiet. */
    uint32_t big = a > 0x7f800000u ? (0x7e00u | ((a >> 13) & 0x3ffu)) : 0x7c00u;
    /* Normal: rebias 127 -> 15, then round the 13 dropped bits to nearest
     * even by adding 0xfff plus the lowest kept bit; a mantissa carry moves
     * into the exponent, which is what rounding up to the next binade (or to
     * infinity) needs. */
    uint32_t normal = (a - ((127u - 15u) << 23) + 0xfffu + ((a >> 13) & 1u)) >> 13;
    /* Result subnormal (|f| < 2^-14): adding 0.5 puts the fp16 subnormal unit
     * 2^-24 at the last mantissa bit of the float32 sum, so the FPU's
     * round-to-nearest-even does the rounding; subtracting 0.5's bits leaves
     * the fp16 encoding (0x400 when it rounds up to the smallest normal). */
    float biased = gcoll_math_bits_f32(a) + 0.5f;
    uint32_t sub = gcoll_math_f32_bits(biased) - (126u << 23);
    uint32_t r = gcoll_math_select(a >= 0x47800000u, big,
                                   gcoll_math_select(a < 0x38800000u, sub, normal));
    return (uint16_t)(r | sign);
}

/* ---- bf16 (top half of a float32) ---------------------------------------- */

GCOLL_HD float gcoll_math_bf16_to_f32(uint16_t h)
{
    uint32_t quiet = (h & 0x7fffu) > 0x7f80u ? 0x00400000u : 0u;
    return gcoll_math_bits_f32(((uint32_t)h << 16) | quiet);
}

/* Round to nearest even; the carry of rounding up past the largest finite
 * value yields infinity.  NaN is kept (truncated, made quiet) because the
 * rounding carry could otherwise turn a NaN into infinity. */
GCOLL_HD uint16_t gcoll_math_f32_to_bf16(float f)
{
    uint32_t u       = gcoll_math_f32_bits(f);
    uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    uint32_t nan     = (u >> 16) | 0x0040u;
    return (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

/* ---- one element of SUM / PROD / MIN / MAX --------------------------------- */

/* Signed: through the unsigned type (wraps; see the top of the file).  For
 * 8-bit types the operands promote to int, where 255 * 255 cannot overflow. */
GCOLL_HD int8_t   gcoll_math_sum_int8(int8_t a, int8_t b)     { return (int8_t)(uint8_t)((uint8_t)a + (uint8_t)b); }
GCOLL_HD int8_t   gcoll_math_prod_int8(int8_t a, int8_t b)    { return (int8_t)(uint8_t)((uint8_t)a * (uint8_t)b); }
GCOLL_HD uint8_t  gcoll_math_sum_uint8(uint8_t a, uint8_t b)  { return (uint8_t)(a + b); }
GCOLL_HD uint8_t  gcoll_math_prod_uint8(uint8_t a, uint8_t b) { return (uint8_t)(a * b); }
GCOLL_HD int32_t  gcoll_math_sum_int32(int32_t a, int32_t b)  { return (int32_t)((uint32_t)a + (uint32_t)b); }
GCOLL_HD int32_t  gcoll_math_prod_int32(int32_t a, int32_t b) { return (int32_t)((uint32_t)a * (uint32_t)b); }
GCOLL_HD uint32_t gcoll_math_sum_uint32(uint32_t a, uint32_t b)  { return a + b; }
GCOLL_HD uint32_t gcoll_math_prod_uint32(uint32_t a, uint32_t b) { return a * b; }
GCOLL_HD int64_t  gcoll_math_sum_int64(int64_t a, int64_t b)  { return (int64_t)((uint64_t)a + (uint64_t)b); }
GCOLL_HD int64_t  gcoll_math_prod_int64(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }
GCOLL_HD uint64_t gcoll_math_sum_uint64(uint64_t a, uint64_t b)  { return a + b; }
GCOLL_HD uint64_t gcoll_math_prod_uint64(uint64_t a, uint64_t b) { return a * b; }

GCOLL_HD int8_t   gcoll_math_min_int8(int8_t a, int8_t b)       { return a < b ? a : b; }
GCOLL_HD int8_t   gcoll_math_max_int8(int8_t a, int8_t b)       { return a > b ? a : b; }
GCOLL_HD uint8_t  gcoll_math_min_uint8(uint8_t a, uint8_t b)    { return a < b ? a : b; }
GCOLL_HD uint8_t  gcoll_math_max_uint8(uint8_t a, uint8_t b)    { return a > b ? a : b; }
GCOLL_HD int32_t  gcoll_math_min_int32(int32_t a, int32_t b)    { return a < b ? a : b; }
GCOLL_HD int32_t  gcoll_math_max_int32(int32_t a, int32_t b)    { return a > b ? a : b; }
GCOLL_HD uint32_t gcoll_math_min_uint32(uint32_t a, uint32_t b) { return a < b ? a : b; }
GCOLL_HD uint32_t gcoll_math_max_uint32(uint32_t a, uint32_t b) { return a > b ? a : b; }
GCOLL_HD int64_t  gcoll_math_min_int64(int64_t a, int64_t b)    { return a < b ? a : b; }
GCOLL_HD int64_t  gcoll_math_max_int64(int64_t a, int64_t b)    { return a > b ? a : b; }
GCOLL_HD uint64_t gcoll_math_min_uint64(uint64_t a, uint64_t b) { return a < b ? a : b; }
GCOLL_HD uint64_t gcoll_math_max_uint64(uint64_t a, uint64_t b) { return a > b ? a : b; }

/* Floats: NaN propagates.  When a is NaN the test picks a; when only b is
 * NaN every comparison is false and b is picked. */
GCOLL_HD float  gcoll_math_sum_f32(float a, float b)    { return a + b; }
GCOLL_HD float  gcoll_math_prod_f32(float a, float b)   { return a * b; }
GCOLL_HD float  gcoll_math_min_f32(float a, float b)    { return (a < b || a != a) ? a : b; }
GCOLL_HD float  gcoll_math_max_f32(float a, float b)    { return (a > b || a != a) ? a : b; }
GCOLL_HD double gcoll_math_sum_f64(double a, double b)  { return a + b; }
GCOLL_HD double gcoll_math_prod_f64(double a, double b) { return a * b; }
GCOLL_HD double gcoll_math_min_f64(double a, double b)  { return (a < b || a != a) ? a : b; }
GCOLL_HD double gcoll_math_max_f64(double a, double b)  { return (a > b || a != a) ? a : b; }

/* 16-bit floats: widen, reduce in float32, round back (each step). */
GCOLL_HD uint16_t gcoll_math_sum_fp16(uint16_t a, uint16_t b)
{
    return gcoll_math_f32_to_fp16(gcoll_math_fp16_to_f32(a) + gcoll_math_fp16_to_f32(b));
}
GCOLL_HD uint16_t gcoll_math_prod_fp16(uint16_t a, uint16_t b)
{
    return gcoll_math_f32_to_fp16(gcoll_math_fp16_to_f32(a) * gcoll_math_fp16_to_f32(b));
}
GCOLL_HD uint16_t gcoll_math_min_fp16(uint16_t a, uint16_t b)
{
    return gcoll_math_f32_to_fp16(gcoll_math_min_f32(gcoll_math_fp16_to_f32(a), gcoll_math_fp16_to_f32(b)));
}
GCOLL_HD uint16_t gcoll_math_max_fp16(uint16_t a, uint16_t b)
{
    return gcoll_math_f32_to_fp16(gcoll_math_max_f32(gcoll_math_fp16_to_f32(a), gcoll_math_fp16_to_f32(b)));
}
GCOLL_HD uint16_t gcoll_math_sum_bf16(uint16_t a, uint16_t b)
{
    return gcoll_math_f32_to_bf16(gcoll_math_bf16_to_f32(a) + gcoll_math_bf16_to_f32(b));
}
GCOLL_HD uint16_t gcoll_math_prod_bf16(uint16_t a, uint16_t b)
{
    return gcoll_math_f32_to_bf16(gcoll_math_bf16_to_f32(a) * gcoll_math_bf16_to_f32(b));
}
GCOLL_HD uint16_t gcoll_math_min_bf16(uint16_t a, uint16_t b)
{
    return gcoll_math_f32_to_bf16(gcoll_math_min_f32(gcoll_math_bf16_to_f32(a), gcoll_math_bf16_to_f32(b)));
}
GCOLL_HD uint16_t gcoll_math_max_bf16(uint16_t a, uint16_t b)
{
    return gcoll_math_f32_to_bf16(gcoll_math_max_f32(gcoll_math_bf16_to_f32(a), gcoll_math_bf16_to_f32(b)));
}

#endif /* GCOLL_DTYPE_MATH_H */
