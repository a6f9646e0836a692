/* SPDX-License-Identifier: BSD-3-Clause */
/* The one list of codecs, and their parameters. */
#include <math.h>
#include "compress/codec.h"
#include "base/status.h"

static const gcoll_codec_t *const codecs[] = {
    &gcoll_codec_bf16,
    &gcoll_codec_topk,
    &gcoll_codec_onebit,
};

const gcoll_codec_t *gcoll_codec_find(gcoll_compress_t kind)
{
    for (size_t i = 0; i < sizeof(codecs) / sizeof(codecs[0]); i++)
        if (codecs[i]->kind == kind) return codecs[i];
    return NULL;
}

const char *gcoll_compress_name(gcoll_compress_t kind)
{
    if (kind == GCOLL_COMPRESS_NONE) return "none";
    const gcoll_codec_t *c = gcoll_codec_find(kind);
    return c ? c->name : "unknown";
}

#define TOPK_RATIO_DEFAULT   0.01
#define ONEBIT_BLOCK_DEFAULT 2048   /* 32 bits of scale per 2048 signs: 1.6% */

gcoll_status_t gcoll_codec_params(const gcoll_compress_params_t *in, gcoll_compress_params_t *out)
{
    if ((unsigned)in->kind >= GCOLL_COMPRESS_COUNT)
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "gcoll_compressor_create: unknown codec %d",
                           (int)in->kind);
    *out = *in;
    if (out->topk_ratio == 0) out->topk_ratio = TOPK_RATIO_DEFAULT;
    if (!(out->topk_ratio > 0 && out->topk_ratio <= 1))   /* NaN fails too */
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG,
                           "gcoll_compressor_create: topk_ratio %g is outside (0, 1]",
                           in->topk_ratio);
    if (out->onebit_block == 0) out->onebit_block = ONEBIT_BLOCK_DEFAULT;
    return GCOLL_SUCCESS;
}

size_t gcoll_codec_topk_k(const gcoll_compress_params_t *p, size_t n)
{
    if (n == 0) return 0;
    /* ratio * n rounded up, but not past an integer that rounding error
     * overshot (0.07 * 100 is 7.000000000000001 in binary) */
    double x = p->topk_ratio * (double)n, k = ceil(x - x * 1e-12);
    return k < 1 ? 1 : k > (double)n ? n : (size_t)k;
}

static size_t round8(size_t b) { return (b + 7) / 8 * 8; }

size_t gcoll_codec_plan(const gcoll_compress_params_t *p, size_t share, size_t N,
                        size_t *stride)
{
    const gcoll_codec_t *c = gcoll_codec_find(p->kind);
    size_t cs = N ? (share + N - 1) / N : share;
    if (!c) {
        *stride = 0;
        return 0;
    }
    if (c->kind == GCOLL_COMPRESS_BF16) {
        *stride = cs * 2;
        return cs;
    }
    size_t whole = round8(c->payload_bytes(p, share)), part = round8(c->payload_bytes(p, cs));
    if (N > 1 && 2 * part < whole) {
        *stride = part;
        return cs;
    }
    *stride = whole;
    return 0;
}
