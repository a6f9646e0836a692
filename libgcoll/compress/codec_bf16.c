/* SPDX-License-Identifier: BSD-3-Clause */
/* BF16: each float32 rounded to bfloat16 (nearest-even, the same conversion
 * as the GCOLL_BFLOAT16 reductions: core/dtype_math.h).  Half the bytes of
 * float32, relative error at most 2^-8 per element before error feedback.
 * The compressor exchanges BF16 payloads in two phases (compressor.c:
 * rail_bf16) rather than by allgather, so that the traffic stays halved at
 * any node count. */
/* Hot loops over whole gradients: O3 so gcc 12 vectorizes them (the
 * library's -O2 does not; see core/reduce.c). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif

#include <stdint.h>
#include "compress/codec.h"
#include "base/dtype_math.h"

static size_t bf16_payload(const gcoll_compress_params_t *p, size_t n) { return n * 2; }

static void bf16_encode(const gcoll_compress_params_t *p, float *x, size_t n, void *payload)
{
    uint16_t *h = payload;
    for (size_t i = 0; i < n; i++) {
        h[i] = gcoll_math_f32_to_bf16(x[i]);
        x[i] -= gcoll_math_bf16_to_f32(h[i]);
    }
}

static void bf16_accumulate(const gcoll_compress_params_t *p, const void *payload, size_t n,
                            float *acc)
{
    const uint16_t *h = payload;
    for (size_t i = 0; i < n; i++) acc[i] += gcoll_math_bf16_to_f32(h[i]);
}

const gcoll_codec_t gcoll_codec_bf16 = {
    "bf16", GCOLL_COMPRESS_BF16, bf16_payload, bf16_encode, bf16_accumulate,
};
