/* TOPK: keep the k = ceil(ratio * n) elements of largest magnitude (ties go
 * to the lower index), as k uint32 indices followed by k float32 values,
 * indices ascending.  The rest is left to error feedback.
 *
 * Selection is a radix select on the magnitude's bit pattern: for a float
 * with the sign cleared, the unsigned order of the bits is the numeric
 * order of |x|, with NaN above infinity (so a NaN gradient is always sent
 * and reaches every rank, as it would uncompressed).  Four histogram passes
 * of 256 buckets fix the k-th largest key one byte at a time: O(n), no
 * scratch, no data-dependent worst case, unlike quickselect. */
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


/* The k-th largest key, and how many keys equal to it are kept (the others
 * above it are all kept). */
static uint32_t topk_threshold(const float *x, size_t n, size_t k, size_t *take_equal)
{
    uint32_t prefix = 0, mask = 0;
    size_t need = k;
    for (int shift = 24; shift >= 0; shift -= 8) {
        size_t hist[256] = { 0 };
        for (size_t i = 0; i < n; i++) {
            uint32_t key = mag_key(x[i]);
            if ((key & mask) == prefix) hist[(key >> shift) & 255u]++;
        }
        unsigned b = 255;
        while (hist[b] < need) need -= hist[b--];   /* stops: k <= keys under prefix */
        prefix |= (uint32_t)b << shift;
        mask |= 255u << shift;
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
