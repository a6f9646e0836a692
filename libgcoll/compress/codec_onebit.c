/* ONEBIT: one sign bit per element and, per block of onebit_block elements,
 * one float32 scale, the block's mean magnitude (sum |x| / len, summed in
 * double): decoded x_i = +scale or -scale.  This is the scaled-sign
 * compressor of EF-SignSGD / 1-bit Adam; with error feedback the mean of
 * the decoded values over steps follows the true gradient.  Payload: the
 * scales, then the bits (element i is bit i % 8 of byte i / 8, 1 = not
 * negative). */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "compress/codec.h"

static size_t nblocks(const gcoll_compress_params_t *p, size_t n)
{
    return (n + p->onebit_block - 1) / p->onebit_block;
}

static size_t onebit_payload(const gcoll_compress_params_t *p, size_t n)
{
    return nblocks(p, n) * sizeof(float) + (n + 7) / 8;
}


static void onebit_encode(const gcoll_compress_params_t *p, float *x, size_t n, void *payload)
{
    float *scale = payload;
    unsigned char *bits = (unsigned char *)(scale + nblocks(p, n));
    memset(bits, 0, (n + 7) / 8);
    for (size_t b = 0, o = 0; o < n; b++, o += p->onebit_block) {
        size_t e = o + p->onebit_block < n ? o + p->onebit_block : n;
        double sum = 0;
        for (size_t i = o; i < e; i++) sum += fabs((double)x[i]);
        float s = scale[b] = (float)(sum / (double)(e - o));
        for (size_t i = o; i < e; i++) {
            int plus = !signbit(x[i]);
            bits[i / 8] |= (unsigned char)((unsigned)plus << (i % 8));
            x[i] -= plus ? s : -s;
        }
    }
}

static void onebit_accumulate(const gcoll_compress_params_t *p, const void *payload, size_t n,
                              float *acc)
{
    const float *scale = payload;
    const unsigned char *bits = (const unsigned char *)(scale + nblocks(p, n));
    for (size_t b = 0, o = 0; o < n; b++, o += p->onebit_block) {
        size_t e = o + p->onebit_block < n ? o + p->onebit_block : n;
        float s = scale[b];
        for (size_t i = o; i < e; i++) acc[i] += (bits[i / 8] >> (i % 8)) & 1u ? s : -s;
    }
}

const gcoll_codec_t gcoll_codec_onebit = {
    "onebit", GCOLL_COMPRESS_ONEBIT, onebit_payload, onebit_encode,
    onebit_accumulate,
};
