/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit test of the host reduction kernels, the AVG division and the fp16/bf16
 * conversions, against a serial reference computed independently:
 * integers in 128-bit arithmetic then truncated; floats in double, with 16-bit
 * results rounded by a frexp/nearbyint encoder that shares no code with
 * dtype_math.h.  Exit status 0 on success, 1 on any failure. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gcoll.h"
#include "base/reduce.h"
#include "base/dtype_math.h"

static int failures, checks;
#define MAX_REPORTS 40

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
    if (failures++ < MAX_REPORTS) {
        va_list ap;
        va_start(ap, fmt);
        fputs("FAIL: ", stdout);
        vprintf(fmt, ap);
        putchar('\n');
        va_end(ap);
    }
}

#define CHECK(cond, ...) do { checks++; if (!(cond)) fail(__VA_ARGS__); } while (0)

/* ---- deterministic random numbers (xorshift64*) ------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}

/* ---- independent reference for the 16-bit float formats ------------------ */

static float bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static uint32_t f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static double bits_f64(uint64_t u) { double f; memcpy(&f, &u, 8); return f; }
static uint64_t f64_bits(double f) { uint64_t u; memcpy(&u, &f, 8); return u; }

/* x rounded to nearest even with p significand bits and minimum normal
 * exponent emin (subnormals below it); no overflow handling. */
static double round_fmt(double x, int p, int emin)
{
    if (x == 0 || !isfinite(x)) return x;
    int e;
    frexp(x, &e);                       /* x = fr * 2^e, fr in [0.5, 1) */
    int qe = (e - 1 > emin ? e - 1 : emin) - (p - 1);
    return ldexp(nearbyint(ldexp(x, -qe)), qe);
}

static double ref_fp16_decode(uint16_t h)
{
    int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
    return s ? -v : v;
}

static uint16_t ref_fp16_encode(double x)
{
    if (isnan(x)) return 0x7e00;
    uint16_t s = signbit(x) ? 0x8000 : 0;
    double r = fabs(round_fmt(x, 11, -14));
    if (r >= 65536.0) return s | 0x7c00;
    if (r < ldexp(1, -14)) return s | (uint16_t)ldexp(r, 24);
    int e;
    frexp(r, &e);                       /* r in [2^(e-1), 2^e) */
    uint16_t m = (uint16_t)(ldexp(r, 11 - e) - 1024);
    return s | (uint16_t)((e - 1 + 15) << 10) | m;
}

static double ref_bf16_decode(uint16_t h) { return bits_f32((uint32_t)h << 16); }

static uint16_t ref_bf16_encode(double x)
{
    if (isnan(x)) return 0x7fc0;
    /* Representable in bf16 after rounding, so the float keeps it exactly;
     * 2^128 becomes infinity in the conversion, as it must. */
    return (uint16_t)(f32_bits((float)round_fmt(x, 8, -126)) >> 16);
}

static int fp16_isnan(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff); }
static int bf16_isnan(uint16_t h) { return (h & 0x7f80) == 0x7f80 && (h & 0x7f); }

/* ---- element access by dtype ------------------------------------------------ */

static int is_float(gcoll_dtype_t t) { return t >= GCOLL_FLOAT16; }
static int is_signed(gcoll_dtype_t t) { return t == GCOLL_INT8 || t == GCOLL_INT32 || t == GCOLL_INT64; }

static uint64_t get_bits(const void *p, size_t i, size_t sz)
{
    uint64_t v = 0;
    memcpy(&v, (const char *)p + i * sz, sz);   /* little-endian */
    return v;
}

static void put_bits(void *p, size_t i, size_t sz, uint64_t v)
{
    memcpy((char *)p + i * sz, &v, sz);
}

/* Signed value of the low sz bytes of v. */
static __int128 sext(uint64_t v, size_t sz)
{
    if (sz == 8) return (int64_t)v;
    uint64_t sign = 1ull << (sz * 8 - 1);
    return (__int128)(int64_t)((v ^ sign) - sign);
}

static double float_value(uint64_t bits, gcoll_dtype_t t)
{
    switch (t) {
    case GCOLL_FLOAT16:  return ref_fp16_decode((uint16_t)bits);
    case GCOLL_BFLOAT16: return ref_bf16_decode((uint16_t)bits);
    case GCOLL_FLOAT32:  return bits_f32((uint32_t)bits);
    default:             return bits_f64(bits);
    }
}

/* Round a double result to dtype t's bits.  16-bit types round to float32
 * first: the documented semantics is "reduce in float32, round back". */
static uint64_t float_bits(double v, gcoll_dtype_t t)
{
    switch (t) {
    case GCOLL_FLOAT16:  return ref_fp16_encode((float)v);
    case GCOLL_BFLOAT16: return ref_bf16_encode((float)v);
    case GCOLL_FLOAT32:  return f32_bits((float)v);
    default:             return f64_bits(v);
    }
}

static int float_bits_isnan(uint64_t b, gcoll_dtype_t t)
{
    switch (t) {
    case GCOLL_FLOAT16:  return fp16_isnan((uint16_t)b);
    case GCOLL_BFLOAT16: return bf16_isnan((uint16_t)b);
    case GCOLL_FLOAT32:  return isnan(bits_f32((uint32_t)b));
    default:             return isnan(bits_f64(b));
    }
}

/* ---- reference reduction of one element --------------------------------- */

static uint64_t ref_int(uint64_t xa, uint64_t xb, gcoll_dtype_t t, gcoll_op_t op, size_t sz)
{
    __int128 a = is_signed(t) ? sext(xa, sz) : (__int128)xa;
    __int128 b = is_signed(t) ? sext(xb, sz) : (__int128)xb;
    unsigned __int128 r;
    switch (op) {
    case GCOLL_PROD: r = (unsigned __int128)a * (unsigned __int128)b; break;
    case GCOLL_MIN:  r = (unsigned __int128)(a < b ? a : b); break;
    case GCOLL_MAX:  r = (unsigned __int128)(a > b ? a : b); break;
    default:         r = (unsigned __int128)(a + b); break;
    }
    return sz == 8 ? (uint64_t)r : (uint64_t)r & ((1ull << (sz * 8)) - 1);
}

/* Double of the exact sum/product: exact for our inputs (see gen_value), and
 * double has more than 2*24+2 bits, so rounding it to float is the correctly
 * rounded float32 operation. */
static double ref_float(double a, double b, gcoll_op_t op)
{
    if (op == GCOLL_MIN || op == GCOLL_MAX) {
        if (isnan(a) || isnan(b)) return NAN;
        return op == GCOLL_MIN ? (a < b ? a : b) : (a > b ? a : b);
    }
    return op == GCOLL_PROD ? a * b : a + b;
}

/* Does result bits `got` match reference value `want` for dtype t? */
static int float_matches(uint64_t got, double want, gcoll_dtype_t t, gcoll_op_t op)
{
    if (isnan(want)) return float_bits_isnan(got, t);
    uint64_t wb = float_bits(want, t);
    if (got == wb) return 1;
    /* MIN/MAX may return either zero. */
    return (op == GCOLL_MIN || op == GCOLL_MAX) && want == 0 && float_value(got, t) == 0;
}

/* ---- inputs --------------------------------------------------------------- */

/* Random element of dtype t.  Integers: all bit patterns (overflow is the
 * common case).  16-bit floats: any non-NaN pattern, infinities and
 * subnormals included.  float32: any non-NaN pattern.  float64: integers
 * times powers of two, so that the double reference is exact. */
static uint64_t gen_value(gcoll_dtype_t t, size_t sz)
{
    for (;;) {
        uint64_t r = rnd();
        if (!is_float(t)) return sz == 8 ? r : r & ((1ull << (sz * 8)) - 1);
        if (t == GCOLL_FLOAT64) {
            double v = ldexp((double)((int64_t)(r % (1u << 21)) - (1 << 20)), (int)((r >> 32) % 17) - 8);
            return f64_bits(v);
        }
        uint64_t b = t == GCOLL_FLOAT32 ? r & 0xffffffffu : r & 0xffff;
        if (!float_bits_isnan(b, t)) return b;
    }
}

/* ---- the dtype x op x count x aliasing matrix -------------------------------- */

enum { ALIAS_NONE, ALIAS_A, ALIAS_B };
static const char *const alias_names[] = { "dst!=a,b", "dst==a", "dst==b" };

/* Check dst[0..n) against the reference and the guard element after it. */
static void check_result(const char *what, const void *d, const void *a, const void *b, size_t n,
                         gcoll_dtype_t t, gcoll_op_t op, uint64_t guard)
{
    size_t sz = gcoll_dtype_size(t);
    int reported = 0;
    for (size_t i = 0; i < n && !reported; i++) {
        uint64_t xa = get_bits(a, i, sz), xb = get_bits(b, i, sz), got = get_bits(d, i, sz);
        int ok;
        uint64_t want_bits = 0;
        if (is_float(t)) {
            double want = ref_float(float_value(xa, t), float_value(xb, t), op);
            ok = float_matches(got, want, t, op);
            want_bits = float_bits(want, t);
        } else {
            want_bits = ref_int(xa, xb, t, op, sz);
            ok = got == want_bits;
        }
        checks++;
        if (!ok) {
            fail("%s %s %s n=%zu: element %zu: 0x%llx op 0x%llx = 0x%llx, expected 0x%llx", what,
                 gcoll_dtype_name(t), gcoll_op_name(op), n, i, (unsigned long long)xa,
                 (unsigned long long)xb, (unsigned long long)got, (unsigned long long)want_bits);
            reported = 1;
        }
    }
    CHECK(get_bits(d, n, sz) == guard, "%s %s %s n=%zu: wrote past the end", what,
          gcoll_dtype_name(t), gcoll_op_name(op), n);
}

/* One case; the buffers start one element past a 64-byte boundary when
 * `misalign`, so vector loops see unaligned heads. */
static void run_case(gcoll_dtype_t t, gcoll_op_t op, size_t n, int alias, int misalign)
{
    size_t sz = gcoll_dtype_size(t), off = misalign ? 1 : 0;
    char *ba = aligned_alloc(64, ((n + 2) * sz + 63) / 64 * 64);
    char *bb = aligned_alloc(64, ((n + 2) * sz + 63) / 64 * 64);
    char *bd = aligned_alloc(64, ((n + 2) * sz + 63) / 64 * 64);
    char *ra = malloc((n + 1) * sz), *rb = malloc((n + 1) * sz);   /* pristine inputs */
    void *a = ba + off * sz, *b = bb + off * sz, *d = bd + off * sz;
    uint64_t guard = gen_value(t, sz);
    for (size_t i = 0; i < n; i++) {
        put_bits(a, i, sz, gen_value(t, sz));
        put_bits(b, i, sz, gen_value(t, sz));
    }
    put_bits(a, n, sz, guard);
    put_bits(b, n, sz, guard);
    put_bits(d, n, sz, guard);
    memcpy(ra, a, (n + 1) * sz);
    memcpy(rb, b, (n + 1) * sz);
    void *dst = alias == ALIAS_A ? a : alias == ALIAS_B ? b : d;
    gcoll_status_t st = gcoll_reduce_host(dst, a, b, n, t, op);
    CHECK(st == GCOLL_SUCCESS, "reduce %s %s n=%zu returned %d", gcoll_dtype_name(t),
          gcoll_op_name(op), n, (int)st);
    char what[64];
    snprintf(what, sizeof(what), "%s%s", alias_names[alias], misalign ? ",misaligned" : "");
    check_result(what, dst, ra, rb, n, t, op, guard);
    free(ba); free(bb); free(bd); free(ra); free(rb);
}

static void test_matrix(void)
{
    static const size_t counts[] = { 0, 1, 7, 1023, 65537 };
    for (int t = 0; t < GCOLL_DTYPE_COUNT; t++)
        for (int op = GCOLL_SUM; op <= GCOLL_MAX; op++)
            for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
                for (int alias = ALIAS_NONE; alias <= ALIAS_B; alias++)
                    run_case((gcoll_dtype_t)t, (gcoll_op_t)op, counts[c], alias,
                             counts[c] == 65537 || (counts[c] == 7 && alias == ALIAS_NONE));
}

/* ---- fixed cases ---------------------------------------------------------- */

/* Reduce one pair through the library, as a 1-element and, to reach the
 * vector body, a 37-element array with the pair in the middle. */
static uint64_t reduce1(gcoll_dtype_t t, gcoll_op_t op, uint64_t x, uint64_t y)
{
    size_t sz = gcoll_dtype_size(t);
    uint64_t one = 0, arr_a[37], arr_b[37], arr_d[37];
    memset(arr_a, 0, sizeof(arr_a));
    memset(arr_b, 0, sizeof(arr_b));
    put_bits(arr_a, 20, sz, x);
    put_bits(arr_b, 20, sz, y);
    gcoll_reduce_host(arr_d, arr_a, arr_b, 37, t, op);
    gcoll_reduce_host(&one, &x, &y, 1, t, op);
    uint64_t vec = get_bits(arr_d, 20, sz);
    CHECK(vec == one, "%s %s 0x%llx, 0x%llx: vector lane 0x%llx differs from scalar 0x%llx",
          gcoll_dtype_name(t), gcoll_op_name(op), (unsigned long long)x, (unsigned long long)y,
          (unsigned long long)vec, (unsigned long long)one);
    return one;
}

#define EXPECT_RED(t, op, x, y, want) do { \
    uint64_t _g = reduce1((t), (op), (uint64_t)(x), (uint64_t)(y)); \
    CHECK(_g == (uint64_t)(want), "%s %s(%s, %s) = 0x%llx, expected 0x%llx (%s)", \
          gcoll_dtype_name(t), gcoll_op_name(op), #x, #y, (unsigned long long)_g, \
          (unsigned long long)(uint64_t)(want), #want); \
} while (0)

static void test_wraparound(void)
{
    EXPECT_RED(GCOLL_INT8, GCOLL_SUM, 127, 1, 0x80);                 /* -128 */
    EXPECT_RED(GCOLL_INT8, GCOLL_SUM, 0x80, 0xff, 0x7f);             /* -128 + -1 = 127 */
    EXPECT_RED(GCOLL_INT8, GCOLL_PROD, 0x80, 0xff, 0x80);            /* -128 * -1 = -128 */
    EXPECT_RED(GCOLL_INT8, GCOLL_PROD, 16, 16, 0);
    EXPECT_RED(GCOLL_UINT8, GCOLL_SUM, 255, 1, 0);
    EXPECT_RED(GCOLL_UINT8, GCOLL_PROD, 255, 255, 1);
    EXPECT_RED(GCOLL_INT8, GCOLL_MIN, 0x80, 0x7f, 0x80);             /* signed compare */
    EXPECT_RED(GCOLL_UINT8, GCOLL_MIN, 0x80, 0x7f, 0x7f);            /* unsigned compare */
    EXPECT_RED(GCOLL_INT32, GCOLL_SUM, 0x7fffffff, 1, 0x80000000);
    EXPECT_RED(GCOLL_INT32, GCOLL_PROD, 0x10000, 0x10000, 0);
    EXPECT_RED(GCOLL_INT32, GCOLL_MAX, 0xffffffff, 0, 0);            /* -1 < 0 */
    EXPECT_RED(GCOLL_UINT32, GCOLL_SUM, 0xffffffff, 2, 1);
    EXPECT_RED(GCOLL_UINT32, GCOLL_MAX, 0xffffffff, 0, 0xffffffff);
    EXPECT_RED(GCOLL_INT64, GCOLL_SUM, INT64_MAX, 1, 0x8000000000000000ull);
    EXPECT_RED(GCOLL_INT64, GCOLL_PROD, INT64_MIN, -1, 0x8000000000000000ull);
    EXPECT_RED(GCOLL_INT64, GCOLL_MIN, INT64_MIN, INT64_MAX, 0x8000000000000000ull);
    EXPECT_RED(GCOLL_UINT64, GCOLL_SUM, UINT64_MAX, UINT64_MAX, UINT64_MAX - 1);
    EXPECT_RED(GCOLL_UINT64, GCOLL_PROD, 1ull << 32, 1ull << 32, 0);
}

static uint64_t F32(float f) { return f32_bits(f); }
static uint64_t F64(double f) { return f64_bits(f); }

/* NaN propagates from either side; infinities order normally. */
static void test_min_max_special(void)
{
    const gcoll_op_t mm[2] = { GCOLL_MIN, GCOLL_MAX };
    for (int k = 0; k < 2; k++) {
        gcoll_op_t op = mm[k];
        CHECK(isnan(bits_f32((uint32_t)reduce1(GCOLL_FLOAT32, op, F32(NAN), F32(1)))), "f32 %s(NaN, 1) not NaN", gcoll_op_name(op));
        CHECK(isnan(bits_f32((uint32_t)reduce1(GCOLL_FLOAT32, op, F32(1), F32(NAN)))), "f32 %s(1, NaN) not NaN", gcoll_op_name(op));
        CHECK(isnan(bits_f32((uint32_t)reduce1(GCOLL_FLOAT32, op, F32(NAN), F32(INFINITY)))), "f32 %s(NaN, inf) not NaN", gcoll_op_name(op));
        CHECK(isnan(bits_f32((uint32_t)reduce1(GCOLL_FLOAT32, op, F32(-INFINITY), F32(NAN)))), "f32 %s(-inf, NaN) not NaN", gcoll_op_name(op));
        CHECK(isnan(bits_f64(reduce1(GCOLL_FLOAT64, op, F64(NAN), F64(1)))), "f64 %s(NaN, 1) not NaN", gcoll_op_name(op));
        CHECK(isnan(bits_f64(reduce1(GCOLL_FLOAT64, op, F64(1), F64(NAN)))), "f64 %s(1, NaN) not NaN", gcoll_op_name(op));
        CHECK(fp16_isnan((uint16_t)reduce1(GCOLL_FLOAT16, op, 0x7e00, 0x3c00)), "fp16 %s(NaN, 1) not NaN", gcoll_op_name(op));
        CHECK(fp16_isnan((uint16_t)reduce1(GCOLL_FLOAT16, op, 0x3c00, 0x7c01)), "fp16 %s(1, sNaN) not NaN", gcoll_op_name(op));
        CHECK(bf16_isnan((uint16_t)reduce1(GCOLL_BFLOAT16, op, 0x7fc0, 0x3f80)), "bf16 %s(NaN, 1) not NaN", gcoll_op_name(op));
        CHECK(bf16_isnan((uint16_t)reduce1(GCOLL_BFLOAT16, op, 0x3f80, 0xff81)), "bf16 %s(1, -sNaN) not NaN", gcoll_op_name(op));
    }
    EXPECT_RED(GCOLL_FLOAT32, GCOLL_MIN, F32(-INFINITY), F32(1), F32(-INFINITY));
    EXPECT_RED(GCOLL_FLOAT32, GCOLL_MAX, F32(-INFINITY), F32(1), F32(1));
    EXPECT_RED(GCOLL_FLOAT32, GCOLL_MAX, F32(INFINITY), F32(-INFINITY), F32(INFINITY));
    EXPECT_RED(GCOLL_FLOAT32, GCOLL_MIN, F32(3), F32(INFINITY), F32(3));
    EXPECT_RED(GCOLL_FLOAT64, GCOLL_MIN, F64(INFINITY), F64(-INFINITY), F64(-INFINITY));
    EXPECT_RED(GCOLL_FLOAT64, GCOLL_MAX, F64(-2.5), F64(-INFINITY), F64(-2.5));
    EXPECT_RED(GCOLL_FLOAT16, GCOLL_MIN, 0xfc00, 0x7c00, 0xfc00);     /* -inf, inf */
    EXPECT_RED(GCOLL_FLOAT16, GCOLL_MAX, 0xfc00, 0x3c00, 0x3c00);
    EXPECT_RED(GCOLL_BFLOAT16, GCOLL_MAX, 0x7f80, 0xff80, 0x7f80);
    EXPECT_RED(GCOLL_BFLOAT16, GCOLL_MIN, 0x7f80, 0xc000, 0xc000);    /* inf, -2 */

    /* NaN in every lane position of a vector body and its tail. */
    for (size_t pos = 0; pos < 37; pos++) {
        float a[37], b[37], d[37];
        for (int i = 0; i < 37; i++) { a[i] = (float)i; b[i] = (float)(40 - i); }
        (pos & 1 ? a : b)[pos] = NAN;
        gcoll_reduce_host(d, a, b, 37, GCOLL_FLOAT32, pos % 3 ? GCOLL_MAX : GCOLL_MIN);
        for (size_t i = 0; i < 37; i++) {
            int want_nan = i == pos;
            CHECK((isnan(d[i]) != 0) == want_nan, "f32 min/max NaN at %zu: element %zu is %g", pos, i,
                  (double)d[i]);
        }
    }
}

static void test_16bit_sums(void)
{
    EXPECT_RED(GCOLL_FLOAT16, GCOLL_SUM, 0x3c00, 0x3c00, 0x4000);      /* 1 + 1 = 2 */
    EXPECT_RED(GCOLL_FLOAT16, GCOLL_SUM, 0x7bff, 0x7bff, 0x7c00);      /* max + max = inf */
    EXPECT_RED(GCOLL_FLOAT16, GCOLL_SUM, 0x7bff, 0x4c00, 0x7c00);      /* 65504 + 16 = 65520: tie, to inf */
    EXPECT_RED(GCOLL_FLOAT16, GCOLL_SUM, 0x7bff, 0x4b00, 0x7bff);      /* 65504 + 14 stays finite */
    EXPECT_RED(GCOLL_FLOAT16, GCOLL_SUM, 0x0001, 0x0001, 0x0002);      /* subnormals add exactly */
    EXPECT_RED(GCOLL_FLOAT16, GCOLL_SUM, 0x3c00, 0x1000, 0x3c00);      /* 1 + 2^-11: tie, stays even */
    EXPECT_RED(GCOLL_FLOAT16, GCOLL_SUM, 0x3c01, 0x1000, 0x3c02);      /* 1+2^-10 + 2^-11: tie, up to even */
    EXPECT_RED(GCOLL_FLOAT16, GCOLL_PROD, 0x0001, 0x3800, 0x0000);     /* 2^-25: tie to even 0 */
    EXPECT_RED(GCOLL_FLOAT16, GCOLL_PROD, 0x0003, 0x3800, 0x0002);     /* 1.5 * 2^-24: tie to 2 */
    EXPECT_RED(GCOLL_BFLOAT16, GCOLL_SUM, 0x3f80, 0x3b80, 0x3f80);     /* 1 + 2^-8: tie, stays even */
    EXPECT_RED(GCOLL_BFLOAT16, GCOLL_SUM, 0x3f81, 0x3b80, 0x3f82);     /* tie, up to even */
    EXPECT_RED(GCOLL_BFLOAT16, GCOLL_SUM, 0x7f7f, 0x7f7f, 0x7f80);     /* overflow: inf */
    EXPECT_RED(GCOLL_BFLOAT16, GCOLL_SUM, 0x7f80, 0x3f80, 0x7f80);     /* inf + 1 */
    CHECK(bf16_isnan((uint16_t)reduce1(GCOLL_BFLOAT16, GCOLL_SUM, 0x7f80, 0xff80)), "bf16 inf + -inf not NaN");
    CHECK(fp16_isnan((uint16_t)reduce1(GCOLL_FLOAT16, GCOLL_PROD, 0x7c00, 0x0000)), "fp16 inf * 0 not NaN");
}

/* ---- conversions against known bit patterns ------------------------------------ */

static void expect_to_fp16(float f, uint16_t want)
{
    uint16_t got = gcoll_math_f32_to_fp16(f);
    CHECK(got == want, "fp16(%a) = 0x%04x, expected 0x%04x", (double)f, got, want);
}

static void expect_to_bf16(uint32_t fbits, uint16_t want)
{
    uint16_t got = gcoll_math_f32_to_bf16(bits_f32(fbits));
    CHECK(got == want, "bf16(f32 0x%08x) = 0x%04x, expected 0x%04x", fbits, got, want);
}

static void test_conversions_known(void)
{
    expect_to_fp16(1.0f, 0x3c00);
    expect_to_fp16(-2.0f, 0xc000);
    expect_to_fp16(-0.0f, 0x8000);
    expect_to_fp16(65504.0f, 0x7bff);
    expect_to_fp16(65519.996f, 0x7bff);
    expect_to_fp16(65520.0f, 0x7c00);                      /* tie rounds to even = inf */
    expect_to_fp16(1e10f, 0x7c00);
    expect_to_fp16(-INFINITY, 0xfc00);
    expect_to_fp16(ldexpf(1, -24), 0x0001);                 /* smallest subnormal */
    expect_to_fp16(ldexpf(1, -25), 0x0000);                 /* tie to even: 0 */
    expect_to_fp16(ldexpf(1, -25) * 1.0001f, 0x0001);       /* just above the tie */
    expect_to_fp16(ldexpf(3, -25), 0x0002);                 /* 1.5 units: tie to even 2 */
    expect_to_fp16(ldexpf(5, -25), 0x0002);                 /* 2.5 units: tie to even 2 */
    expect_to_fp16(-ldexpf(1023, -24), 0x83ff);             /* largest subnormal */
    expect_to_fp16(ldexpf(1, -14) - ldexpf(1, -26), 0x0400); /* rounds up to smallest normal */
    expect_to_fp16(ldexpf(1, -140), 0x0000);                /* float32 subnormal */
    expect_to_fp16(1.0f + ldexpf(1, -11), 0x3c00);          /* tie, stays even */
    expect_to_fp16(1.0f + ldexpf(3, -11), 0x3c02);          /* tie, up to even */
    expect_to_fp16(1.0f + ldexpf(1, -11) + ldexpf(1, -20), 0x3c01);
    expect_to_fp16(2.0f - ldexpf(1, -13), 0x4000);          /* mantissa carry into exponent */
    uint16_t n = gcoll_math_f32_to_fp16(bits_f32(0x7f800001));   /* sNaN, low payload only */
    CHECK(fp16_isnan(n) && (n & 0x0200), "fp16(sNaN 0x7f800001) = 0x%04x, expected a quiet NaN", n);
    n = gcoll_math_f32_to_fp16(bits_f32(0xffc00000));
    CHECK(n == 0xfe00, "fp16(-qNaN) = 0x%04x, expected 0xfe00", n);

    CHECK(gcoll_math_fp16_to_f32(0x3c00) == 1.0f, "fp16 0x3c00 is not 1.0");
    CHECK(gcoll_math_fp16_to_f32(0x7bff) == 65504.0f, "fp16 0x7bff is not 65504");
    CHECK(gcoll_math_fp16_to_f32(0x0001) == ldexpf(1, -24), "fp16 0x0001 is not 2^-24");
    CHECK(gcoll_math_fp16_to_f32(0x83ff) == -ldexpf(1023, -24), "fp16 0x83ff is not -1023*2^-24");
    CHECK(gcoll_math_fp16_to_f32(0xfc00) == -INFINITY, "fp16 0xfc00 is not -inf");
    uint32_t qb = f32_bits(gcoll_math_fp16_to_f32(0x7c01));
    CHECK(isnan(bits_f32(qb)) && (qb & 0x00400000), "fp16 sNaN 0x7c01 widened to 0x%08x, not a quiet NaN", qb);

    expect_to_bf16(0x3f800000, 0x3f80);                     /* 1.0 */
    expect_to_bf16(0x3f808000, 0x3f80);                     /* halfway, even below */
    expect_to_bf16(0x3f818000, 0x3f82);                     /* halfway, even above */
    expect_to_bf16(0x3f808001, 0x3f81);                     /* above halfway */
    expect_to_bf16(0x3f807fff, 0x3f80);                     /* below halfway */
    expect_to_bf16(0x7f7fffff, 0x7f80);                     /* FLT_MAX rounds to inf */
    expect_to_bf16(0xff800000, 0xff80);                     /* -inf */
    expect_to_bf16(0x00018000, 0x0002);                     /* subnormal tie, up to even */
    expect_to_bf16(0x00008000, 0x0000);                     /* subnormal tie, down to even */
    expect_to_bf16(0x80000000, 0x8000);                     /* -0 */
    uint16_t bn = gcoll_math_f32_to_bf16(bits_f32(0x7f800001));  /* truncation would say inf */
    CHECK(bf16_isnan(bn) && (bn & 0x40), "bf16(sNaN 0x7f800001) = 0x%04x, expected quiet NaN", bn);
    bn = gcoll_math_f32_to_bf16(bits_f32(0x7fffffff));           /* rounding carry would wrap */
    CHECK(bf16_isnan(bn), "bf16(NaN 0x7fffffff) = 0x%04x, expected NaN", bn);
    bn = gcoll_math_f32_to_bf16(bits_f32(0xffc00000));
    CHECK(bn == 0xffc0, "bf16(-qNaN) = 0x%04x, expected 0xffc0", bn);
    CHECK(gcoll_math_bf16_to_f32(0x3f80) == 1.0f, "bf16 0x3f80 is not 1.0");
    qb = f32_bits(gcoll_math_bf16_to_f32(0x7f81));
    CHECK(isnan(bits_f32(qb)) && (qb & 0x00400000), "bf16 sNaN 0x7f81 widened to 0x%08x", qb);
}

/* Every 16-bit pattern widens to the reference value and narrows back to
 * itself; random float32 patterns narrow as the reference encoder says. */
static void test_conversions_exhaustive(void)
{
    for (uint32_t h = 0; h <= 0xffff; h++) {
        float f = gcoll_math_fp16_to_f32((uint16_t)h);
        double want = ref_fp16_decode((uint16_t)h);
        CHECK(isnan(want) ? isnan(f) : (double)f == want && !!signbit(f) == !!signbit(want),
              "fp16 0x%04x widened to %a, expected %a", h, (double)f, want);
        uint16_t back = gcoll_math_f32_to_fp16(f);
        CHECK(fp16_isnan((uint16_t)h) ? fp16_isnan(back) : back == h,
              "fp16 0x%04x round trip gave 0x%04x", h, back);
        float g = gcoll_math_bf16_to_f32((uint16_t)h);
        CHECK(bf16_isnan((uint16_t)h) ? isnan(g) : f32_bits(g) == h << 16,
              "bf16 0x%04x widened to 0x%08x", h, f32_bits(g));
        uint16_t gb = gcoll_math_f32_to_bf16(g);
        CHECK(bf16_isnan((uint16_t)h) ? bf16_isnan(gb) : gb == h, "bf16 0x%04x round trip gave 0x%04x", h, gb);
    }
    for (int i = 0; i < 1 << 20; i++) {
        uint32_t u = (uint32_t)rnd();
        if (i & 1) u = (u & 0x87ffffff) | 0x30000000;   /* half of them near fp16's range */
        float f = bits_f32(u);
        uint16_t h = gcoll_math_f32_to_fp16(f), wh = ref_fp16_encode(f);
        CHECK(isnan(f) ? fp16_isnan(h) : h == wh, "fp16(f32 0x%08x) = 0x%04x, expected 0x%04x", u, h, wh);
        uint16_t b = gcoll_math_f32_to_bf16(f), wb = ref_bf16_encode(f);
        CHECK(isnan(f) ? bf16_isnan(b) : b == wb, "bf16(f32 0x%08x) = 0x%04x, expected 0x%04x", u, b, wb);
    }
}

/* ---- AVG ---------------------------------------------------------------- */

#define EXPECT_AVG(t, ctype, x, d, want) do { \
    ctype _v[3] = { (ctype)(x), (ctype)(x), (ctype)(x) }; \
    gcoll_status_t _s = gcoll_reduce_avg_host(_v, 3, (t), (d)); \
    CHECK(_s == GCOLL_SUCCESS && _v[0] == (ctype)(want) && _v[2] == (ctype)(want), \
          "avg %s %s / %d gave %lld, expected %s", gcoll_dtype_name(t), #x, (d), \
          (long long)_v[0], #want); \
} while (0)

static void test_avg(void)
{
    EXPECT_AVG(GCOLL_INT8, int8_t, -1, 2, 0);                /* {-1, 0} over 2 ranks */
    EXPECT_AVG(GCOLL_INT8, int8_t, -7, 2, -3);               /* toward zero, not -4 */
    EXPECT_AVG(GCOLL_INT8, int8_t, -128, 3, -42);
    EXPECT_AVG(GCOLL_INT8, int8_t, 127, 1, 127);
    EXPECT_AVG(GCOLL_UINT8, uint8_t, 255, 2, 127);
    EXPECT_AVG(GCOLL_INT32, int32_t, -7, 2, -3);
    EXPECT_AVG(GCOLL_INT32, int32_t, INT32_MIN, 2, -1073741824);
    EXPECT_AVG(GCOLL_UINT32, uint32_t, UINT32_MAX, 3, 1431655765u);
    EXPECT_AVG(GCOLL_INT64, int64_t, -9, 4, -2);
    EXPECT_AVG(GCOLL_INT64, int64_t, INT64_MIN, 7, INT64_MIN / 7);
    EXPECT_AVG(GCOLL_UINT64, uint64_t, UINT64_MAX, 16, UINT64_MAX >> 4);

    float f[2] = { 7.0f, -1.0f };
    gcoll_reduce_avg_host(f, 2, GCOLL_FLOAT32, 2);
    CHECK(f[0] == 3.5f && f[1] == -0.5f, "avg float32 {7,-1}/2 gave {%g,%g}", (double)f[0], (double)f[1]);
    double g[1] = { 1.0 };
    gcoll_reduce_avg_host(g, 1, GCOLL_FLOAT64, 3);
    CHECK(g[0] == 1.0 / 3.0, "avg float64 1/3 gave %a", g[0]);
    uint16_t h[2] = { 0x4200, 0x3c00 };                      /* fp16 3, 1 */
    gcoll_reduce_avg_host(h, 2, GCOLL_FLOAT16, 2);
    CHECK(h[0] == 0x3e00 && h[1] == 0x3800, "avg fp16 {3,1}/2 gave {0x%04x,0x%04x}", h[0], h[1]);
    uint16_t bf[1] = { 0x4040 };                             /* bf16 3 */
    gcoll_reduce_avg_host(bf, 1, GCOLL_BFLOAT16, 2);
    CHECK(bf[0] == 0x3fc0, "avg bf16 3/2 gave 0x%04x", bf[0]);

    /* Random values through the vector loops, against a double / 128-bit reference. */
    for (int t = 0; t < GCOLL_DTYPE_COUNT; t++) {
        size_t sz = gcoll_dtype_size((gcoll_dtype_t)t), n = 1023;
        int d = 3 + t;
        char *buf = malloc(n * sz), *orig = malloc(n * sz);
        for (size_t i = 0; i < n; i++) put_bits(buf, i, sz, gen_value((gcoll_dtype_t)t, sz));
        memcpy(orig, buf, n * sz);
        gcoll_reduce_avg_host(buf, n, (gcoll_dtype_t)t, d);
        for (size_t i = 0; i < n; i++) {
            uint64_t x = get_bits(orig, i, sz), got = get_bits(buf, i, sz), want;
            if (is_float((gcoll_dtype_t)t)) {
                double v = float_value(x, (gcoll_dtype_t)t) / d;
                if (t == GCOLL_FLOAT64) v = (double)((long double)float_value(x, (gcoll_dtype_t)t) / d);
                want = float_bits(v, (gcoll_dtype_t)t);
                checks++;
                if (isnan(v) ? !float_bits_isnan(got, (gcoll_dtype_t)t) : got != want) {
                    fail("avg %s 0x%llx / %d = 0x%llx, expected 0x%llx", gcoll_dtype_name((gcoll_dtype_t)t),
                         (unsigned long long)x, d, (unsigned long long)got, (unsigned long long)want);
                    break;
                }
            } else {
                __int128 v = is_signed((gcoll_dtype_t)t) ? sext(x, sz) : (__int128)x;
                __int128 q = v < 0 ? -(-v / d) : v / d;         /* toward zero, spelled out */
                want = sz == 8 ? (uint64_t)q : (uint64_t)q & ((1ull << (sz * 8)) - 1);
                CHECK(got == want, "avg %s 0x%llx / %d = 0x%llx, expected 0x%llx",
                      gcoll_dtype_name((gcoll_dtype_t)t), (unsigned long long)x, d,
                      (unsigned long long)got, (unsigned long long)want);
            }
        }
        free(buf);
        free(orig);
    }
}

/* ---- metadata and argument errors ------------------------------------------- */

static void test_metadata_and_errors(void)
{
    static const char *const names[] = { "int8", "uint8", "int32", "uint32", "int64", "uint64",
                                         "float16", "bfloat16", "float32", "float64" };
    static const size_t sizes[] = { 1, 1, 4, 4, 8, 8, 2, 2, 4, 8 };
    for (int t = 0; t < GCOLL_DTYPE_COUNT; t++) {
        CHECK(gcoll_dtype_size((gcoll_dtype_t)t) == sizes[t], "size of %s", names[t]);
        CHECK(strcmp(gcoll_dtype_name((gcoll_dtype_t)t), names[t]) == 0, "name of dtype %d is %s",
              t, gcoll_dtype_name((gcoll_dtype_t)t));
    }
    CHECK(gcoll_dtype_size(GCOLL_DTYPE_COUNT) == 0, "size of an unknown dtype is not 0");
    CHECK(gcoll_dtype_size((gcoll_dtype_t)-1) == 0, "size of dtype -1 is not 0");
    CHECK(strcmp(gcoll_dtype_name((gcoll_dtype_t)99), "unknown") == 0, "name of dtype 99");
    static const char *const ops[] = { "sum", "prod", "min", "max", "avg" };
    for (int op = 0; op < GCOLL_OP_COUNT; op++)
        CHECK(strcmp(gcoll_op_name((gcoll_op_t)op), ops[op]) == 0, "name of op %d", op);
    CHECK(strcmp(gcoll_op_name(GCOLL_OP_COUNT), "unknown") == 0, "name of an unknown op");

    int x = 1, y = 2, z = 0;
    CHECK(gcoll_reduce_host(&z, &x, &y, 1, GCOLL_DTYPE_COUNT, GCOLL_SUM) == GCOLL_ERR_INVALID_ARG,
          "unknown dtype accepted");
    CHECK(gcoll_reduce_host(&z, &x, &y, 1, GCOLL_INT32, (gcoll_op_t)-1) == GCOLL_ERR_INVALID_ARG,
          "op -1 accepted");
    CHECK(z == 0, "a rejected reduction wrote its output");
    CHECK(gcoll_reduce_host(&z, &x, &y, 1, GCOLL_INT32, GCOLL_AVG) == GCOLL_SUCCESS && z == 3,
          "AVG's reduction step is not SUM");
    CHECK(gcoll_reduce_host(NULL, NULL, NULL, 0, GCOLL_FLOAT32, GCOLL_SUM) == GCOLL_SUCCESS,
          "count 0 with NULL buffers failed");
    CHECK(gcoll_reduce_avg_host(&x, 1, GCOLL_INT32, 0) == GCOLL_ERR_INVALID_ARG, "divisor 0 accepted");
    CHECK(gcoll_reduce_avg_host(&x, 1, GCOLL_INT32, -2) == GCOLL_ERR_INVALID_ARG, "divisor -2 accepted");
    CHECK(gcoll_reduce_avg_host(&x, 1, GCOLL_DTYPE_COUNT, 2) == GCOLL_ERR_INVALID_ARG,
          "avg of an unknown dtype accepted");
    CHECK(x == 1, "a rejected average wrote its buffer");
}

int main(void)
{
    test_metadata_and_errors();
    test_conversions_known();
    test_conversions_exhaustive();
    test_wraparound();
    test_min_max_special();
    test_16bit_sums();
    test_avg();
    test_matrix();
    if (failures > MAX_REPORTS) printf("(%d more failures not shown)\n", failures - MAX_REPORTS);
    printf("test_reduce: %d checks, %d failures: %s\n", checks, failures, failures ? "FAIL" : "PASS");
    return failures ? 1 : 0;
}
