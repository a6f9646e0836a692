/* SPDX-License-Identifier: BSD-3-Clause */
/* ONEBIT: one sign bit per element and, per block of onebit_block elements,
 * one float32 scale, the block's mean magnitude (sum |x| / len, summed in
 * double): decoded x_i = +scale or -scale.  This is the scaled-sign
 * compressor of EF-SignSGD / 1-bit Adam; with error feedback the mean of
 * the decoded values over steps follows the true gradient.  Payload: the
 * scales, then the bits (element i is bit i % 8 of byte i / 8, 1 = not
 * negative). */
/* Hot loops over whole gradients: O3 so gcc 12 vectorizes them (the
 * library's -O2 does not; see core/reduce.c). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif

#include <math.h>
#include <stdint.h>
#include <string.h>
#include "compress/codec.h"
#include "base/dtype_math.h"

/* Elements per scale: onebit_block, at most n (a huge block means one
 * scale for all, and must not overflow the arithmetic below). */
static size_t block_of(const gcoll_compress_params_t *p, size_t n)
{
    return p->onebit_block < n ? p->onebit_block : n ? n : 1;
}

static size_t nblocks(const gcoll_compress_params_t *p, size_t n)
{
    size_t b = block_of(p, n);
    return n / b + (n % b != 0);
}

static size_t onebit_payload(const gcoll_compress_params_t *p, size_t n)
{
    return nblocks(p, n) * sizeof(float) + (n + 7) / 8;
}


/* 1 unless x's sign bit is set (as signbit(), so -0.0 and negative NaN
 * count as negative). */
static unsigned plus_bit(float x) { return ~gcoll_math_f32_bits(x) >> 31; }

/* The decoded value of an element: the scale with the element's sign (bit
 * 1 = not negative), by flipping the sign bit: branch-free, since signs are
 * as unpredictable as coin tosses. */
static float signed_scale(uint32_t scale_bits, unsigned plus)
{
    return gcoll_math_bits_f32(scale_bits ^ ((uint32_t)(plus ^ 1u) << 31));
}

/* Three passes per block, each a simple loop gcc can vectorize except the
 * first (a sum in order, so every build gets the same scale): the scale,
 * the sign bits (from the input), then the residual. */
static void onebit_encode(const gcoll_compress_params_t *p, float *x, size_t n, void *payload)
{
    float *scale = payload;
    unsigned char *bits = (unsigned char *)(scale + nblocks(p, n));
    for (size_t j = 0; j < n / 8; j++) {
        unsigned b = 0;
        for (unsigned k = 0; k < 8; k++) b |= plus_bit(x[8 * j + k]) << k;
        bits[j] = (unsigned char)b;
    }
    if (n % 8) {
        unsigned b = 0;
        for (size_t i = n / 8 * 8; i < n; i++) b |= plus_bit(x[i]) << (i % 8);
        bits[n / 8] = (unsigned char)b;
    }
    size_t blk = block_of(p, n);
    for (size_t b = 0, o = 0; o < n; b++, o += blk) {
        size_t e = n - o > blk ? o + blk : n;
        double sum = 0;
        for (size_t i = o; i < e; i++) sum += fabs((double)x[i]);
        scale[b] = (float)(sum / (double)(e - o));
        uint32_t sb = gcoll_math_f32_bits(scale[b]);
        for (size_t i = o; i < e; i++) x[i] -= signed_scale(sb, plus_bit(x[i]));
    }
}

static void onebit_accumulate(const gcoll_compress_params_t *p, const void *payload, size_t n,
                              float *acc)
{
    const float *scale = payload;
    const unsigned char *bits = (const unsigned char *)(scale + nblocks(p, n));
    size_t blk = block_of(p, n);
    for (size_t b = 0, o = 0; o < n; b++, o += blk) {
        size_t e = n - o > blk ? o + blk : n;
        uint32_t sb = gcoll_math_f32_bits(scale[b]);
        for (size_t i = o; i < e; i++) acc[i] += signed_scale(sb, (bits[i / 8] >> (i % 8)) & 1u);
    }
}

const gcoll_codec_t gcoll_codec_onebit = {
    "onebit", GCOLL_COMPRESS_ONEBIT, onebit_payload, onebit_encode,
    onebit_accumulate,
};
