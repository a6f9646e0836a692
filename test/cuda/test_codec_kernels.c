/* SPDX-License-Identifier: BSD-3-Clause */
/* The gradient codecs as device kernels (cuda/codec_kernels.cu) against the
 * host codecs (compress/codec_*.c), bit for bit: for each codec (BF16; TOPK
 * at several ratios; ONEBIT at the default block, a small one and one block
 * for everything), with and without error feedback, over sizes around the
 * kernels' tiles and blocks (0, 1, 2, 7, 31, 1025, 2049, 8193, 1000003 -- a
 * prime larger than any block or tile --, 2^20 and a few random ones) and
 * three kinds of input:
 *
 *   mixed  moderate values, small integers (magnitude ties), and one in 32
 *          a special: quiet and signalling NaN of both signs, infinities,
 *          signed zeros, denormals, FLT_MAX, bf16 rounding ties;
 *   ties   magnitudes 0, 0.5, 1, 2 with random signs (-0 included): TOPK's
 *          tie-break to the lower index across the device's tiles;
 *   bits   any finite bit pattern (huge, tiny, denormal).
 *
 * Each case runs the host codec and the device kernel on the same input and
 * compares:
 *   payload  byte for byte (the two sides start from different fill bytes,
 *            so a byte one side leaves unwritten shows), except ONEBIT's
 *            float scales, compared as floats (below); 64 guard bytes past
 *            the device payload must stay untouched;
 *   resid    the residual left in x (no error feedback) or in the residual
 *            buffer (error feedback, as compressor.c's encode_share: e = x
 *            + e, encode e, non-finite e zeroed), bit for bit as floats;
 *            with error feedback also x, which must stay as it was; two
 *            steps, the second from the first's residual;
 *   acc      the accumulate (decode) of the host's payload into the same
 *            starting values on both sides, bit for bit as floats.
 * "As floats": equal bits, or both NaN (NaN bits from arithmetic follow the
 * GPU's canonical NaN, not x86's: a known gap written in codec_kernels.cu;
 * such differences are counted as "nan-bits" and reported, not failed).
 * Without error feedback the second step calls encode_ef with no residual,
 * the other entry point of the same encode.
 *
 * One line per case ("ok ..." or "FAIL ..."), FAIL lines before it naming
 * the codec, size, input, step, buffer and first differing indices, a
 * summary, exit 1 on any mismatch.  Without
 * a CUDA device it says SKIP and why, and exits 77.  Nothing here has run
 * on a GPU yet when this was written: the first run is the kernels' first. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <float.h>
#include <cuda_runtime_api.h>
#include "gcoll.h"
#include "compress/codec.h"
#include "cuda/codec_kernels.h"

#define GUARD 64          /* bytes past each device buffer that must stay as filled */
#define GUARD_BYTE 0xA5
#define HOST_FILL 0x5A    /* the host payload's fill: not the device's */
#define MAX_FAIL_LINES 80

static int failures, fail_lines;
static long long cases, nan_bit_diffs;
static const char *label;   /* the case, for FAIL lines */

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
    failures++;
    if (fail_lines++ < MAX_FAIL_LINES) {
        va_list ap;
        va_start(ap, fmt);
        printf("FAIL %s: ", label);
        vprintf(fmt, ap);
        putchar('\n');
        va_end(ap);
    }
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float float_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* ---- inputs ------------------------------------------------------------- */

enum { IN_MIXED, IN_TIES, IN_BITS, IN_COUNT };
static const char *const input_name[IN_COUNT] = { "mixed", "ties", "bits" };

static const uint32_t specials[] = {
    0x7fc00000u, 0xffc00000u, 0x7fa12345u, 0xff812345u,   /* qNaN, -qNaN, sNaN, -sNaN */
    0x7f800000u, 0xff800000u, 0x00000000u, 0x80000000u,   /* +-inf, +-0 */
    0x00000001u, 0x807fffffu, 0x00008000u, 0x80018000u,   /* denormals (bf16 ties too) */
    0x7f7fffffu, 0xff7fffffu, 0x7f7f8000u, 0x3f808000u,   /* +-FLT_MAX, ties to inf and even */
    0x3f818000u, 0x3f80c000u, 0x00800000u, 0x80800000u,   /* tie to odd-up, above tie, +-FLT_MIN */
};

static void fill_input(float *x, size_t n, int kind)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t r = rnd();
        switch (kind) {
        case IN_MIXED:
            if ((r & 31) == 0)
                x[i] = float_of(specials[(r >> 8) % (sizeof(specials) / sizeof(specials[0]))]);
            else if ((r & 7) == 1)
                x[i] = (float)((r >> 50) & 3) * ((r >> 40) & 1 ? -1.0f : 1.0f);
            else
                x[i] = (float)((int64_t)(r >> 40) - (1 << 23)) / 4096.0f;
            break;
        case IN_TIES: {
            static const float mag[4] = { 0.0f, 0.5f, 1.0f, 2.0f };
            x[i] = (r >> 40) & 1 ? -mag[(r >> 50) & 3] : mag[(r >> 50) & 3];
            break;
        }
        default: {
            uint32_t u = (uint32_t)(r >> 32);
            if ((u & 0x7f800000u) == 0x7f800000u) u &= ~0x40000000u;   /* finite */
            x[i] = float_of(u);
            break;
        }
        }
    }
}

/* Residuals and accumulators to start from: moderate, finite, nonzero. */
static void fill_moderate(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) x[i] = (float)((int64_t)(rnd() >> 40) - (1 << 23)) / 65536.0f;
}

/* ---- device buffers with a guard ------------------------------------------ */

static void *dev_alloc(size_t bytes)
{
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, bytes + GUARD);
    if (e != cudaSuccess) {
        printf("FAIL: cudaMalloc(%zu): %s\n", bytes + GUARD, cudaGetErrorString(e));
        exit(1);
    }
    if (cudaMemset(p, GUARD_BYTE, bytes + GUARD) != cudaSuccess) exit(1);
    return p;
}

static void put(void *dev, const void *host, size_t bytes)
{
    cudaError_t e = bytes ? cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice) : cudaSuccess;
    if (e != cudaSuccess) {
        printf("FAIL: cudaMemcpy to the device: %s\n", cudaGetErrorString(e));
        exit(1);
    }
}

static void get(void *host, const void *dev, size_t bytes)
{
    cudaError_t e = bytes ? cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost) : cudaSuccess;
    if (e != cudaSuccess) {
        printf("FAIL: cudaMemcpy from the device: %s\n", cudaGetErrorString(e));
        exit(1);
    }
}

/* The GUARD bytes after bytes of dev still hold GUARD_BYTE. */
static void check_guard(const char *what, const void *dev, size_t bytes)
{
    unsigned char g[GUARD];
    get(g, (const unsigned char *)dev + bytes, GUARD);
    for (int i = 0; i < GUARD; i++)
        if (g[i] != GUARD_BYTE) {
            fail("%s: written past its end (byte %zu + %d)", what, bytes, i);
            return;
        }
}

/* ---- comparisons ------------------------------------------------------------ */

/* Floats: equal bits, or both NaN (counted).  Returns the mismatches. */
static size_t compare_f32(const char *what, const float *host, const float *dev, size_t n)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t h = bits_of(host[i]), d = bits_of(dev[i]);
        if (h == d) continue;
        if (isnan(host[i]) && isnan(dev[i])) {
            nan_bit_diffs++;
            continue;
        }
        if (bad++ < 4)
            fail("%s[%zu]: host %08x (%g), device %08x (%g)", what, i, (unsigned)h,
                 (double)host[i], (unsigned)d, (double)dev[i]);
    }
    if (bad > 4) fail("%s: %zu of %zu elements differ", what, bad, n);
    return bad;
}

static size_t compare_bytes(const char *what, const unsigned char *host, const unsigned char *dev,
                            size_t n)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (host[i] == dev[i]) continue;
        if (bad++ < 4)
            fail("%s byte %zu: host %02x, device %02x", what, i, host[i], dev[i]);
    }
    if (bad > 4) fail("%s: %zu of %zu bytes differ", what, bad, n);
    return bad;
}

/* ONEBIT's block count, as codec_onebit.c's. */
static size_t onebit_nblocks(const gcoll_compress_params_t *p, size_t n)
{
    size_t b = p->onebit_block < n ? p->onebit_block : n ? n : 1;
    return n / b + (n % b != 0);
}

/* The payloads: bytes, but ONEBIT's leading scales as floats. */
static size_t compare_payload(const gcoll_compress_params_t *p, const unsigned char *host,
                              const unsigned char *dev, size_t n, size_t bytes)
{
    size_t floats = p->kind == GCOLL_COMPRESS_ONEBIT && n ? onebit_nblocks(p, n) : 0;
    size_t bad = 0;
    if (floats) {
        float *h = malloc(floats * sizeof(float)), *d = malloc(floats * sizeof(float));
        memcpy(h, host, floats * sizeof(float));
        memcpy(d, dev, floats * sizeof(float));
        bad += compare_f32("payload scale", h, d, floats);
        free(h), free(d);
    }
    size_t off = floats * sizeof(float);
    return bad + compare_bytes("payload", host + off, dev + off, bytes - off);
}

/* ---- one case ---------------------------------------------------------------- */

typedef struct {
    const char             *name;
    gcoll_compress_params_t p;   /* filled in by gcoll_codec_params */
} codec_conf_t;

/* Host reference of compressor.c's encode_share (which is static there). */
static void host_encode_ef(const gcoll_codec_t *c, const gcoll_compress_params_t *p, float *x,
                           float *e, size_t n, void *payload)
{
    for (size_t i = 0; i < n; i++) e[i] = x[i] + e[i];
    c->encode(p, e, n, payload);
    for (size_t i = 0; i < n; i++) e[i] = isfinite(e[i]) ? e[i] : 0.0f;
}

static void check_status(const char *what, gcoll_status_t st)
{
    cudaError_t e = cudaDeviceSynchronize();
    if (st != GCOLL_SUCCESS || e != cudaSuccess)
        fail("%s: status %d (%s), cuda %s", what, (int)st,
             st != GCOLL_SUCCESS ? gcoll_last_error() : "-", cudaGetErrorString(e));
}

static void run_case(const codec_conf_t *cc, int ef, size_t n, int input)
{
    static char buf[256], step_label[300];
    const gcoll_compress_params_t *p = &cc->p;
    const gcoll_codec_t *codec = gcoll_codec_find(p->kind);
    size_t pb = codec->payload_bytes(p, n), fb = n * sizeof(float);
    size_t sb = gcoll_cuda_codec_scratch_bytes(p, n);
    int fails0 = failures;
    long long nan0 = nan_bit_diffs;
    snprintf(buf, sizeof buf, "%s ef=%d n=%zu input=%s", cc->name, ef, n, input_name[input]);
    label = buf;
    cases++;

    float *x = malloc(fb + 4), *hx = malloc(fb + 4), *dx_back = malloc(fb + 4);
    float *he = malloc(fb + 4), *de_back = malloc(fb + 4);
    float *acc0 = malloc(fb + 4), *hacc = malloc(fb + 4), *dacc_back = malloc(fb + 4);
    unsigned char *hp = malloc(pb + 1), *dp_back = malloc(pb + 1);
    fill_input(x, n, input);
    fill_moderate(he, n);   /* error feedback: the residual the first step starts from */
    float *dx = dev_alloc(fb), *de = dev_alloc(fb), *dacc = dev_alloc(fb);
    unsigned char *dp = dev_alloc(pb);
    void *scratch = sb ? dev_alloc(sb) : NULL;
    put(de, he, fb);

    for (int step = 0; step < 2; step++) {
        snprintf(step_label, sizeof step_label, "%s step=%d", buf, step + 1);
        label = step_label;
        /* encode: the host's on copies, the device's on its own */
        memcpy(hx, x, fb);
        memset(hp, HOST_FILL, pb);
        put(dx, x, fb);
        if (cudaMemset(dp, GUARD_BYTE, pb + GUARD) != cudaSuccess) exit(1);
        gcoll_status_t st;
        if (ef) {
            host_encode_ef(codec, p, hx, he, n, hp);
            st = gcoll_cuda_codec_encode_ef(p, dx, de, n, dp, scratch, 0);
        } else {
            codec->encode(p, hx, n, hp);
            st = step == 0 ? gcoll_cuda_codec_encode(p, dx, n, dp, scratch, 0)
                           : gcoll_cuda_codec_encode_ef(p, dx, NULL, n, dp, scratch, 0);
        }
        check_status("encode", st);
        get(dp_back, dp, pb);
        get(dx_back, dx, fb);
        compare_payload(p, hp, dp_back, n, pb);
        check_guard("payload", dp, pb);
        check_guard("x", dx, fb);
        if (ef) {
            get(de_back, de, fb);
            compare_f32("resid", he, de_back, n);
            compare_f32("x (must stay as it was)", hx, dx_back, n);
            check_guard("resid", de, fb);
        } else {
            compare_f32("resid (in x)", hx, dx_back, n);
        }

        /* accumulate the host's payload into the same start on both sides */
        fill_moderate(acc0, n);
        memcpy(hacc, acc0, fb);
        put(dacc, acc0, fb);
        put(dp, hp, pb);
        codec->accumulate(p, hp, n, hacc);
        check_status("accumulate", gcoll_cuda_codec_accumulate(p, dp, n, dacc, 0));
        get(dacc_back, dacc, fb);
        compare_f32("acc", hacc, dacc_back, n);
        check_guard("acc", dacc, fb);
        /* the second step's input: the first's with a few changes */
        for (size_t i = 0; i < n; i += 97) x[i] = -x[i];
    }

    label = buf;
    printf("%s %s: %zu payload bytes, %zu elements, 2 steps%s", failures == fails0 ? "ok  " : "FAIL",
           buf, pb, n, ef ? " (resid, x, acc)" : " (resid, acc)");
    if (nan_bit_diffs != nan0) printf(", %lld nan-bits", nan_bit_diffs - nan0);
    if (failures != fails0) printf(", %d failed checks", failures - fails0);
    putchar('\n');
    cudaFree(dx), cudaFree(de), cudaFree(dacc), cudaFree(dp), cudaFree(scratch);
    free(x), free(hx), free(dx_back), free(he), free(de_back);
    free(acc0), free(hacc), free(dacc_back), free(hp), free(dp_back);
}

/* ---- arguments ------------------------------------------------------------------ */

static void check_args(void)
{
    gcoll_compress_params_t in = { 0 }, p;
    label = "arguments";
    in.kind = GCOLL_COMPRESS_TOPK;
    gcoll_codec_params(&in, &p);
    if (gcoll_cuda_codec_encode(&p, NULL, (size_t)UINT32_MAX + 1, NULL, NULL, 0) !=
        GCOLL_ERR_INVALID_ARG)
        fail("TOPK of 2^32 elements accepted (indices are 32-bit)");
    if (gcoll_cuda_codec_encode(&p, NULL, 0, NULL, NULL, 0) != GCOLL_SUCCESS)
        fail("0 elements refused: %s", gcoll_last_error());
    in.kind = GCOLL_COMPRESS_NONE;
    gcoll_codec_params(&in, &p);
    if (gcoll_cuda_codec_encode(&p, NULL, 1, NULL, NULL, 0) != GCOLL_ERR_INVALID_ARG ||
        gcoll_cuda_codec_accumulate(&p, NULL, 1, NULL, 0) != GCOLL_ERR_INVALID_ARG)
        fail("kind NONE accepted");
    in.kind = GCOLL_COMPRESS_ONEBIT;
    p = in;   /* onebit_block 0: not filled in */
    if (gcoll_cuda_codec_encode_ef(&p, NULL, NULL, 1, NULL, NULL, 0) != GCOLL_ERR_INVALID_ARG)
        fail("ONEBIT with onebit_block 0 accepted");
    in.kind = GCOLL_COMPRESS_BF16;
    gcoll_codec_params(&in, &p);
    if (gcoll_cuda_codec_scratch_bytes(&p, 1000) != 0) fail("BF16 asks for scratch");
    if (cudaGetLastError() != cudaSuccess) fail("a refused call left a CUDA error");
}

int main(void)
{
    int ndev = 0;
    cudaError_t e = cudaGetDeviceCount(&ndev);
    if (e != cudaSuccess || ndev == 0) {
        printf("SKIP: no CUDA device visible (cudaGetDeviceCount: %s, %d devices): the codec "
               "kernels cannot run here\n", e == cudaSuccess ? "ok" : cudaGetErrorString(e), ndev);
        return 77;
    }
    static const struct { const char *name; gcoll_compress_t kind; double ratio; size_t block; }
    confs_in[] = {
        { "bf16", GCOLL_COMPRESS_BF16, 0, 0 },
        { "topk(0.001)", GCOLL_COMPRESS_TOPK, 0.001, 0 },
        { "topk(0.01)", GCOLL_COMPRESS_TOPK, 0, 0 },   /* the default */
        { "topk(0.1)", GCOLL_COMPRESS_TOPK, 0.1, 0 },
        { "topk(0.5)", GCOLL_COMPRESS_TOPK, 0.5, 0 },
        { "topk(1)", GCOLL_COMPRESS_TOPK, 1.0, 0 },
        { "onebit(2048)", GCOLL_COMPRESS_ONEBIT, 0, 0 },   /* the default */
        { "onebit(7)", GCOLL_COMPRESS_ONEBIT, 0, 7 },
        { "onebit(2^40)", GCOLL_COMPRESS_ONEBIT, 0, (size_t)1 << 40 },   /* one block */
    };
    enum { NCONF = sizeof(confs_in) / sizeof(confs_in[0]) };
    codec_conf_t confs[NCONF];
    for (int i = 0; i < NCONF; i++) {
        gcoll_compress_params_t in = { 0 };
        in.kind = confs_in[i].kind;
        in.topk_ratio = confs_in[i].ratio;
        in.onebit_block = confs_in[i].block;
        confs[i].name = confs_in[i].name;
        if (gcoll_codec_params(&in, &confs[i].p) != GCOLL_SUCCESS) {
            printf("FAIL: gcoll_codec_params(%s): %s\n", confs_in[i].name, gcoll_last_error());
            return 1;
        }
    }
    size_t sizes[16] = { 0, 1, 2, 7, 31, 1025, 2049, 8193, 1000003, (size_t)1 << 20 };
    int nsizes = 10;
    for (int i = 0; i < 3; i++) sizes[nsizes++] = 3 + rnd() % 300000;

    for (int c = 0; c < NCONF; c++)
        for (int ef = 0; ef <= 1; ef++)
            for (int s = 0; s < nsizes; s++)
                for (int in = 0; in < IN_COUNT; in++) {
                    /* the one-block ONEBIT sums serially in one thread: large
                     * sizes once per input is enough */
                    if (confs_in[c].block > ((size_t)1 << 30) && sizes[s] > 100000 &&
                        sizes[s] != ((size_t)1 << 20))
                        continue;
                    run_case(&confs[c], ef, sizes[s], in);
                }
    check_args();
    printf("test_codec_kernels: %lld cases, %d failed checks, %lld NaNs equal as NaN but not in "
           "bits (device %d of %d)\n", cases, failures, nan_bit_diffs, 0, ndev);
    return failures ? 1 : 0;
}
