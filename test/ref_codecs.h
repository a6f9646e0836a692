/* SPDX-License-Identifier: BSD-3-Clause */
/* Reference codecs for the compression tests (unit and MPI), written apart
 * from libgcoll/compress on purpose: bfloat16 rounding through frexp and
 * nearbyint in double, TopK through a full sort, the 1-bit scale through a
 * plain double loop.  Each returns the *decoded* dense vector, which is all
 * a test needs: the library's result is the sum, in node order, of the
 * decoded payloads. */
#ifndef GCOLL_TEST_REF_CODECS_H
#define GCOLL_TEST_REF_CODECS_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Nearest bfloat16 (8 significant bits, float32's exponent range), ties to
 * even; overflow to infinity, NaN stays NaN. */
static inline float ref_bf16(float x)
{
    if (x == 0 || !isfinite(x)) return x;
    int e;
    frexp((double)x, &e);              /* |x| = fr * 2^e, fr in [0.5, 1) */
    int qe = (e - 1 > -126 ? e - 1 : -126) - 7;
    double r = ldexp(nearbyint(ldexp((double)x, -qe)), qe);
    return fabs(r) > 3.3895313892515355e38 ? (float)copysign(INFINITY, r) : (float)r;
}

static inline size_t ref_topk_k(double ratio, size_t n)
{
    if (n == 0) return 0;
    double x = ratio * (double)n;   /* ceil, forgiving binary rounding error */
    size_t k = (size_t)ceil(x * (1 - 1e-12));
    return k < 1 ? 1 : k > n ? n : k;
}

/* Order for TopK: larger magnitude first (NaN above everything), then the
 * lower index. */
static const float *ref_topk_x;
static inline int ref_topk_cmp(const void *pa, const void *pb)
{
    size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
    float xa = fabsf(ref_topk_x[a]), xb = fabsf(ref_topk_x[b]);
    int na = isnan(xa), nb = isnan(xb);
    if (na != nb) return na ? -1 : 1;
    if (!na && xa != xb) return xa > xb ? -1 : 1;
    return a < b ? -1 : a > b;
}

/* out = x where x is among the k kept elements, 0 elsewhere. */
static inline void ref_topk_decode(const float *x, size_t n, size_t k, float *out)
{
    size_t *order = malloc((n ? n : 1) * sizeof(size_t));
    for (size_t i = 0; i < n; i++) order[i] = i;
    ref_topk_x = x;
    qsort(order, n, sizeof(size_t), ref_topk_cmp);
    memset(out, 0, n * sizeof(float));
    for (size_t j = 0; j < k; j++) out[order[j]] = x[order[j]];
    free(order);
}

/* out_i = +s or -s by the sign of x_i, s the mean |x| of i's block. */
static inline void ref_onebit_decode(const float *x, size_t n, size_t block, float *out)
{
    if (block > n) block = n;   /* one scale for all */
    for (size_t o = 0; o < n; o += block) {
        size_t e = o + block < n ? o + block : n;
        double sum = 0;
        for (size_t i = o; i < e; i++) sum += fabs((double)x[i]);
        float s = (float)(sum / (double)(e - o));
        for (size_t i = o; i < e; i++) out[i] = signbit(x[i]) ? -s : s;
    }
}

#endif
