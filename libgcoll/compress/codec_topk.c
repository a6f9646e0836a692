/* SPDX-License-Identifier: BSD-3-Clause */
/* TOPK: keep the k = ceil(ratio * n) elements of largest magnitude (ties go
 * to the lower index), as k uint32 indices followed by k float32 values,
 * indices ascending.  The rest is left to error feedback.
 *
 * Selection is a radix select on the magnitude's bit pattern: for a float
 * with the sign cleared, the unsigned order of the bits is the numeric
 * order of |x|, with NaN above infinity (so a NaN gradient is always sent
 * and reaches every rank, as it would uncompressed).  Histogram passes fix
 * the k-th largest key one digit at a time: O(n), no data-dependent worst
 * case, unlike quickselect; for small k a sampled lower bound first cuts
 * the keys to select from to a few times k (topk_threshold). */
/* Hot loops over whole gradients: O3 so gcc 12 vectorizes them (the
 * library's -O2 does not; see core/reduce.c). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "base/alloc.h"
#include "compress/codec.h"
#include "base/dtype_math.h"

static uint32_t mag_key(float x) { return gcoll_math_f32_bits(x) & 0x7fffffffu; }

static size_t topk_payload(const gcoll_compress_params_t *p, size_t n)
{
    return gcoll_codec_topk_k(p, n) * (sizeof(uint32_t) + sizeof(float));
}


/* Key i: of the floats x, or taken from keys when that is not NULL (gcc
 * unswitches the loop-invariant test). */
static uint32_t key_at(const float *x, const uint32_t *keys, size_t i)
{
    return keys ? keys[i] : mag_key(x[i]);
}

/* The k-th largest of n keys, and how many keys equal to it are kept (all
 * keys above it are).  Three histogram passes over digits of 11, 11 and 10
 * bits.  Each pass counts into four interleaved histograms (32 KiB: L1),
 * because neighbouring gradients often share a digit and a single counter
 * would serialise on its own increments. */
static uint32_t radix_select(const float *x, const uint32_t *keys, size_t n, size_t k,
                             size_t *take_equal)
{
    static const int width[3] = { 11, 11, 10 };
    uint32_t hist[4][1u << 11], prefix = 0, mask = 0;
    size_t need = k;
    for (int d = 0, shift = 32; d < 3; d++) {
        uint32_t digit_mask = (1u << width[d]) - 1u;
        shift -= width[d];
        memset(hist, 0, sizeof hist);
        size_t i = 0;
        for (; i + 4 <= n; i += 4)
            for (int h = 0; h < 4; h++) {
                uint32_t key = key_at(x, keys, i + (size_t)h);
                hist[h][(key >> shift) & digit_mask] += (key & mask) == prefix;
            }
        for (; i < n; i++) {
            uint32_t key = key_at(x, keys, i);
            hist[0][(key >> shift) & digit_mask] += (key & mask) == prefix;
        }
        uint32_t b = digit_mask;
        for (;; b--) {   /* stops: k <= keys under prefix */
            size_t c = (size_t)hist[0][b] + hist[1][b] + hist[2][b] + hist[3][b];
            if (c >= need) break;
            need -= c;
        }
        prefix |= b << shift;
        mask |= digit_mask << shift;
    }
    *take_equal = need;
    return prefix;
}

#define SAMPLE 1024   /* keys sampled to guess a lower bound of the threshold */

/* The k-th largest key of x, in one pass over x when k is small.  A
 * strided sample guesses a bound t0 that about 2k + n/64 keys exceed; one
 * pass copies the keys >= t0 (if there are at least k, and not more than
 * the buffer's twice that, they include every key the top k needs) and the
 * radix select runs on those few.  Otherwise (a bad guess, k large, n small, no
 * memory) it runs on all of x.  Same answer either way: only the work
 * differs. */
static uint32_t topk_threshold(const float *x, size_t n, size_t k, size_t *take_equal)
{
    size_t want = 2 * k * SAMPLE / (n ? n : 1) + 16, cap = 2 * want * (n / SAMPLE) + 64;
    uint32_t *cand = n >= 8 * SAMPLE && want < SAMPLE / 2 ? gcoll_malloc(cap * sizeof(uint32_t)) : NULL;
    if (cand) {
        uint32_t sample[SAMPLE];
        size_t eq, c = 0;
        for (size_t j = 0; j < SAMPLE; j++) sample[j] = mag_key(x[j * (n / SAMPLE)]);
        uint32_t t0 = radix_select(NULL, sample, SAMPLE, want, &eq);
        for (size_t i = 0; i < n; i++) {
            uint32_t key = mag_key(x[i]);
            if (key >= t0) {
                if (c < cap) cand[c] = key;
                c++;
            }
        }
        uint32_t t = c >= k && c <= cap ? radix_select(NULL, cand, c, k, take_equal) : 0;
        free(cand);
        if (c >= k && c <= cap) return t;
    }
    return radix_select(x, NULL, n, k, take_equal);
}

static void topk_encode(const gcoll_compress_params_t *p, float *x, size_t n, void *payload)
{
    size_t k = gcoll_codec_topk_k(p, n), eq = 0, j = 0;
    if (!k) return;
    uint32_t *idx = payload;
    float *val = (float *)(idx + k);
    uint32_t t = topk_threshold(x, n, k, &eq);
    for (size_t i = 0; i < n && j < k; i++) {
        uint32_t key = mag_key(x[i]);
        if (key > t || (key == t && eq && eq--)) {
            idx[j] = (uint32_t)i;
            val[j++] = x[i];
            x[i] -= x[i];   /* 0, or NaN for an infinity: what x - decoded gives */
        }
    }
}

static void topk_accumulate(const gcoll_compress_params_t *p, const void *payload, size_t n,
                            float *acc)
{
    size_t k = gcoll_codec_topk_k(p, n);
    const uint32_t *idx = payload;
    const float *val = (const float *)(idx + k);
    for (size_t j = 0; j < k; j++) acc[idx[j]] += val[j];
}

const gcoll_codec_t gcoll_codec_topk = {
    "topk", GCOLL_COMPRESS_TOPK, topk_payload, topk_encode, topk_accumulate,
};
