/* TOPK: keep the k = ceil(ratio * n) elements of largest magnitude (ties go
 * to the lower index), as k uint32 indices followed by k float32 values,
 * indices ascending.  The rest is left to error feedback.
 *
 * Selection is a radix select on the magnitude's bit pattern: for a float
 * with the sign cleared, the unsigned order of the bits is the numeric
 * order of |x|, with NaN above infinity (so a NaN gradient is always sent
 * and reaches every rank, as it would uncompressed).  Histogram passes fix
 * the k-th largest key one digit at a time: O(n), no data-dependent worst
 * case, unlike quickselect. */
/* Hot loops over whole gradients: O3 so gcc 12 vectorizes them (the
 * library's -O2 does not; see core/reduce.c). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif

#include <stdint.h>
#include <string.h>
#include "compress/codec.h"

static uint32_t mag_key(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u & 0x7fffffffu;
}

static size_t topk_payload(const gcoll_compress_params_t *p, size_t n)
{
    return gcoll_codec_topk_k(p, n) * (sizeof(uint32_t) + sizeof(float));
}


/* The k-th largest key, and how many keys equal to it are kept (all keys
 * above it are).  Three histogram passes over digits of 11, 11 and 10
 * bits.  Each pass counts into four interleaved histograms (32 KiB: L1),
 * because neighbouring gradients often share a digit and a single counter
 * would serialise on its own increments. */
static uint32_t topk_threshold(const float *x, size_t n, size_t k, size_t *take_equal)
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
                uint32_t key = mag_key(x[i + (size_t)h]);
                hist[h][(key >> shift) & digit_mask] += (key & mask) == prefix;
            }
        for (; i < n; i++) {
            uint32_t key = mag_key(x[i]);
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
