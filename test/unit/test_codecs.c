/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit test of the compression codecs (libgcoll/compress) against the
 * independent reference codecs of test/ref_codecs.h: for each codec, the
 * payload decoded by the library (accumulate into zeros) must equal the
 * reference's decoded vector bit for bit, and what encode leaves behind must
 * be x - decoded (the error-feedback residual), over sizes 1..10^4, ties, signed
 * zeros, subnormals, infinities and NaN; plus payload sizes, TopK's index
 * order, parameter defaults and rejections; and the compressor's plan
 * (gather or two-phase, slot sizes) against the rule gcoll.h states.  Exit
 * 0 on success, 1 on any failure. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gcoll.h"
#include "compress/codec.h"
#include "ref_codecs.h"

static int failures, checks;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
    if (failures++ < 40) {
        va_list ap;
        va_start(ap, fmt);
        fputs("FAIL: ", stdout);
        vprintf(fmt, ap);
        putchar('\n');
        va_end(ap);
    }
}

#define CHECK(cond, ...) do { checks++; if (!(cond)) fail(__VA_ARGS__); } while (0)

static uint64_t rng = 0x243f6a8885a308d3ull;
static uint64_t rnd(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 0x2545f4914f6cdd1dull;
}

static int same(float a, float b)   /* bitwise, any NaN equal to any NaN */
{
    return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0;
}

/* Test data of several kinds. */
enum { D_WIDE, D_TIES, D_SPECIAL, D_KINDS };

static void fill(float *x, size_t n, int kind)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t r = rnd();
        switch (kind) {
        case D_WIDE:   /* signs and exponents over float's whole range */
            x[i] = ldexpf((float)(r % 100000) / 100000.0f + 0.5f, (int)(r >> 20) % 250 - 140) *
                   ((r >> 40) & 1 ? -1.0f : 1.0f);
            break;
        case D_TIES:   /* few distinct magnitudes: TopK ties everywhere */
            x[i] = (float)((int)(r % 7) - 3);
            break;
        default:       /* mostly ordinary, some specials */
            x[i] = (float)((double)(int64_t)(r % 2000001) - 1000000.0) / 1024.0f;
            if (r % 97 == 0) x[i] = -0.0f;
            if (r % 101 == 0) x[i] = 1e-42f;               /* subnormal */
            if (r % 499 == 0) x[i] = (r >> 33) & 1 ? INFINITY : -INFINITY;
        }
    }
    if (kind == D_SPECIAL && n > 3) x[n / 3] = NAN;
}

/* Encode x with the library's codec: out = decoded payload (accumulated
 * into +0.0), resid = what encode left in its copy of x. */
static void decode(const gcoll_codec_t *c, const gcoll_compress_params_t *p, const float *x,
                   size_t n, float *out, float *resid)
{
    /* exactly payload_bytes, then 16 guard bytes that encode must not touch */
    size_t bytes = c->payload_bytes(p, n);
    unsigned char *payload = malloc(bytes + 16), guard[16];
    memset(guard, 0xa5, sizeof guard);
    memcpy(payload + bytes, guard, sizeof guard);
    memcpy(resid, x, n * sizeof(float));
    c->encode(p, resid, n, payload);
    CHECK(!memcmp(payload + bytes, guard, sizeof guard), "%s n=%zu: encode wrote past its %zu "
          "payload bytes", c->name, n, bytes);
    memset(out, 0, n * sizeof(float));
    c->accumulate(p, payload, n, out);
    free(payload);
}

/* got was accumulated into +0.0, so a decoded -0.0 reads +0.0 there: compare
 * with the reference added to +0.0 likewise (what the allreduce sums).  The
 * residual must be x - decoded (zeros of either sign alike). */
static void compare(const char *what, size_t n, int kind, const float *x, const float *got,
                    float *want, const float *resid)
{
    size_t bad = 0, first = 0, rbad = 0, rfirst = 0;
    for (size_t i = 0; i < n; i++) want[i] = 0.0f + want[i];
    for (size_t i = 0; i < n; i++) {
        float e = x[i] - want[i];
        if (!same(got[i], want[i]) && !bad++) first = i;
        if (!(resid[i] == e || (isnan(resid[i]) && isnan(e))) && !rbad++) rfirst = i;
    }
    CHECK(!bad, "%s n=%zu data=%d: %zu elements differ, first [%zu] %a vs reference %a", what, n,
          kind, bad, first, bad ? got[first] : 0.0, bad ? want[first] : 0.0);
    CHECK(!rbad, "%s n=%zu data=%d: %zu residuals differ, first [%zu] %a vs x - decoded %a",
          what, n, kind, rbad, rfirst, rbad ? resid[rfirst] : 0.0,
          rbad ? x[rfirst] - want[rfirst] : 0.0);
}

static const size_t sizes[] = { 1, 2, 3, 7, 8, 9, 100, 1000, 2047, 2048, 2049, 4099, 10007, 70001 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static void test_bf16(void)
{
    gcoll_compress_params_t p = { .kind = GCOLL_COMPRESS_BF16 };
    for (size_t s = 0; s < NSIZES; s++)
        for (int kind = 0; kind < D_KINDS; kind++) {
            size_t n = sizes[s];
            float *x = malloc(n * 4), *got = malloc(n * 4), *want = malloc(n * 4),
                  *resid = malloc(n * 4);
            fill(x, n, kind);
            decode(&gcoll_codec_bf16, &p, x, n, got, resid);
            for (size_t i = 0; i < n; i++) want[i] = ref_bf16(x[i]);
            compare("bf16", n, kind, x, got, want, resid);
            CHECK(gcoll_codec_bf16.payload_bytes(&p, n) == 2 * n, "bf16 payload of %zu", n);
            free(x), free(got), free(want), free(resid);
        }
    /* rounding edges: halfway cases to even, and overflow to infinity */
    float edge[] = { 1.00390625f /* 1 + 2^-8: tie, to 1 */, 1.01171875f /* 1 + 3*2^-8: to 1+2^-6 */,
                     3.3999e38f /* past halfway above bf16's max: to inf */, -0.0f, 5e-39f };
    float got[5], resid[5];
    decode(&gcoll_codec_bf16, &p, edge, 5, got, resid);
    for (int i = 0; i < 5; i++)
        CHECK(same(got[i], 0.0f + ref_bf16(edge[i])), "bf16 edge %a: %a, want %a", edge[i], got[i],
              ref_bf16(edge[i]));
    CHECK(got[0] == 1.0f && got[1] == 1.015625f && isinf(got[2]), "bf16 edges by hand");
}

static void test_topk(void)
{
    static const double ratios[] = { 0.001, 0.01, 0.1, 0.37, 1.0 };
    for (size_t r = 0; r < sizeof(ratios) / sizeof(ratios[0]); r++)
        for (size_t s = 0; s < NSIZES; s++)
            for (int kind = 0; kind < D_KINDS; kind++) {
                gcoll_compress_params_t p = { .kind = GCOLL_COMPRESS_TOPK, .topk_ratio = ratios[r] };
                size_t n = sizes[s], k = ref_topk_k(ratios[r], n);
                float *x = malloc(n * 4), *got = malloc(n * 4), *want = malloc(n * 4),
                      *resid = malloc(n * 4);
                fill(x, n, kind);
                decode(&gcoll_codec_topk, &p, x, n, got, resid);
                ref_topk_decode(x, n, k, want);
                char what[64];
                snprintf(what, sizeof what, "topk ratio %g", ratios[r]);
                compare(what, n, kind, x, got, want, resid);
                CHECK(gcoll_codec_topk_k(&p, n) == k && gcoll_codec_topk.payload_bytes(&p, n) == 8 * k,
                      "topk k/payload for n=%zu ratio %g", n, ratios[r]);
                /* indices strictly ascending and in range */
                uint32_t *payload = malloc(8 * k + 8);
                memcpy(resid, x, n * 4);
                gcoll_codec_topk.encode(&p, resid, n, payload);
                int ok = 1;
                for (size_t j = 0; j < k; j++)
                    ok &= payload[j] < n && (j == 0 || payload[j] > payload[j - 1]);
                CHECK(ok, "topk indices ascending, n=%zu ratio %g data %d", n, ratios[r], kind);
                free(payload), free(x), free(got), free(want), free(resid);
            }
}

static void test_onebit(void)
{
    static const size_t blocks[] = { 1, 3, 64, 2048, SIZE_MAX };   /* SIZE_MAX: one scale */
    for (size_t b = 0; b < sizeof(blocks) / sizeof(blocks[0]); b++)
        for (size_t s = 0; s < NSIZES; s++)
            for (int kind = 0; kind < D_KINDS; kind++) {
                if (kind == D_SPECIAL) continue;   /* inf/NaN make every scale inf/NaN */
                gcoll_compress_params_t p = { .kind = GCOLL_COMPRESS_ONEBIT,
                                              .onebit_block = blocks[b] };
                size_t n = sizes[s];
                float *x = malloc(n * 4), *got = malloc(n * 4), *want = malloc(n * 4),
                      *resid = malloc(n * 4);
                fill(x, n, kind);
                decode(&gcoll_codec_onebit, &p, x, n, got, resid);
                ref_onebit_decode(x, n, blocks[b], want);
                char what[64];
                snprintf(what, sizeof what, "onebit block %zu", blocks[b]);
                compare(what, n, kind, x, got, want, resid);
                size_t blk = blocks[b] < n ? blocks[b] : n, nb = (n + blk - 1) / blk;
                CHECK(gcoll_codec_onebit.payload_bytes(&p, n) == 4 * nb + (n + 7) / 8,
                      "onebit payload of n=%zu block %zu", n, blocks[b]);
                free(x), free(got), free(want), free(resid);
            }
}

static void test_params(void)
{
    gcoll_compress_params_t in = { .kind = GCOLL_COMPRESS_TOPK }, out;
    CHECK(gcoll_codec_params(&in, &out) == GCOLL_SUCCESS && out.topk_ratio == 0.01 &&
          out.onebit_block == 2048, "defaults: ratio %g block %zu", out.topk_ratio,
          out.onebit_block);
    in.topk_ratio = 0.07;   /* 0.07 * 100 is 7.000000000000001 in binary */
    CHECK(gcoll_codec_params(&in, &out) == GCOLL_SUCCESS && gcoll_codec_topk_k(&out, 100) == 7 &&
          gcoll_codec_topk_k(&out, 101) == 8 && gcoll_codec_topk_k(&out, 1) == 1,
          "topk k of 0.07: %zu of 100, %zu of 101", gcoll_codec_topk_k(&out, 100),
          gcoll_codec_topk_k(&out, 101));
    double bad[] = { -0.5, 1.5, NAN, INFINITY };
    for (int i = 0; i < 4; i++) {
        in.topk_ratio = bad[i];
        CHECK(gcoll_codec_params(&in, &out) == GCOLL_ERR_INVALID_ARG &&
              strstr(gcoll_last_error(), "topk_ratio"), "ratio %g accepted", bad[i]);
    }
    in.topk_ratio = 0;
    in.kind = GCOLL_COMPRESS_COUNT;
    CHECK(gcoll_codec_params(&in, &out) == GCOLL_ERR_INVALID_ARG, "unknown codec accepted");
    CHECK(!strcmp(gcoll_compress_name(GCOLL_COMPRESS_TOPK), "topk") &&
          !strcmp(gcoll_compress_name(GCOLL_COMPRESS_NONE), "none") &&
          !strcmp(gcoll_compress_name((gcoll_compress_t)99), "unknown"), "codec names");
    for (int k = 1; k < GCOLL_COMPRESS_COUNT; k++)
        CHECK(gcoll_codec_find((gcoll_compress_t)k) &&
              gcoll_codec_find((gcoll_compress_t)k)->kind == (gcoll_compress_t)k,
              "codec %d registered", k);
}

/* gcoll_codec_plan against the rule gcoll.h states, with the payload sizes
 * of the formats written out here: BF16 two-phase always (2 bytes per
 * element of a chunk of ceil(s/N)); TopK and 1-bit two-phase exactly when
 * two chunk payloads (rounded up to 8) are fewer bytes than one share
 * payload, so never at N = 2; and then within issue 14's bounds: 1-bit
 * 2 (N-1) slots of about s/(8N) plus scales, TopK 2 (N-1) slots under
 * 16 r s + 16 (N-1)(1 + r) bytes in all. */
static size_t want_payload(const gcoll_compress_params_t *p, size_t n)
{
    size_t b;
    if (p->kind == GCOLL_COMPRESS_TOPK) {
        b = 8 * ref_topk_k(p->topk_ratio, n);
    } else {
        size_t blk = p->onebit_block < n ? p->onebit_block : n ? n : 1;
        b = 4 * ((n + blk - 1) / blk) + (n + 7) / 8;
    }
    return (b + 7) / 8 * 8;
}

static void test_plan(void)
{
    static const gcoll_compress_params_t ps[] = {
        { .kind = GCOLL_COMPRESS_BF16 },
        { .kind = GCOLL_COMPRESS_TOPK, .topk_ratio = 0.01 },
        { .kind = GCOLL_COMPRESS_TOPK, .topk_ratio = 0.1 },
        { .kind = GCOLL_COMPRESS_ONEBIT, .onebit_block = 64 },
        { .kind = GCOLL_COMPRESS_ONEBIT, .onebit_block = 2048 },
        { .kind = GCOLL_COMPRESS_ONEBIT, .onebit_block = SIZE_MAX } };
    static const size_t shares[] = { 1, 2, 7, 100, 1000, 4099, 65536, 131072, 1u << 20 };
    static const size_t Ns[] = { 2, 3, 4, 5, 8, 16, 64, 512 };
    for (size_t k = 0; k < sizeof(ps) / sizeof(ps[0]); k++)
        for (size_t i = 0; i < sizeof(shares) / sizeof(shares[0]); i++)
            for (size_t j = 0; j < sizeof(Ns) / sizeof(Ns[0]); j++) {
                const gcoll_compress_params_t *p = &ps[k];
                size_t s = shares[i], N = Ns[j], cs = (s + N - 1) / N, stride = 12345;
                size_t got = gcoll_codec_plan(p, s, N, &stride);
                size_t want, want_stride;
                if (p->kind == GCOLL_COMPRESS_BF16) {
                    want = cs;
                    want_stride = 2 * cs;
                } else if (2 * want_payload(p, cs) < want_payload(p, s)) {
                    want = cs;
                    want_stride = want_payload(p, cs);
                } else {
                    want = 0;
                    want_stride = want_payload(p, s);
                }
                CHECK(got == want && stride == want_stride, "plan kind %d (ratio %g block %zu) "
                      "share %zu N %zu: chunk %zu stride %zu, want %zu %zu", (int)p->kind,
                      p->topk_ratio, p->onebit_block, s, N, got, stride, want, want_stride);
                if (p->kind != GCOLL_COMPRESS_BF16 && N == 2)
                    CHECK(!got, "plan kind %d share %zu: two-phase at N = 2", (int)p->kind, s);
                if (p->kind == GCOLL_COMPRESS_ONEBIT && got) {
                    size_t blk = p->onebit_block < cs ? p->onebit_block : cs;
                    CHECK(stride <= (cs + 7) / 8 + 4 * ((cs + blk - 1) / blk) + 7,
                          "onebit plan share %zu N %zu: slot %zu over signs + scales", s, N,
                          stride);
                }
                if (p->kind == GCOLL_COMPRESS_TOPK && got) {
                    double r = p->topk_ratio;
                    CHECK((double)(2 * (N - 1) * stride) <
                          16 * r * (double)s + 16.0 * (double)(N - 1) * (1 + r),
                          "topk plan share %zu N %zu ratio %g: %zu bytes per rank over the "
                          "bound", s, N, r, 2 * (N - 1) * stride);
                }
            }
    /* large shares go two-phase from N = 3 on */
    gcoll_compress_params_t t = { .kind = GCOLL_COMPRESS_TOPK, .topk_ratio = 0.01 },
                            o = { .kind = GCOLL_COMPRESS_ONEBIT, .onebit_block = 2048 };
    size_t st;
    for (size_t N = 3; N <= 64; N++)
        CHECK(gcoll_codec_plan(&t, 1u << 20, N, &st) && gcoll_codec_plan(&o, 1u << 20, N, &st),
              "a share of 2^20 gathers at N = %zu", N);
}

int main(void)
{
    test_bf16();
    test_topk();
    test_onebit();
    test_params();
    test_plan();
    printf("%s: %d checks, %d failures\n", failures ? "FAIL" : "PASS", checks, failures);
    return failures ? 1 : 0;
}
