/* SPDX-License-Identifier: BSD-3-Clause */
/* The device reduction kernels against the host kernels, bit for bit: every
 * dtype x op (and AVG), 1 to 16 inputs, counts around the 16-byte pack
 * width, and pointers off the 16-byte alignment (the scalar path).  The host
 * kernels are themselves checked against an independent serial reference
 * (test/unit/test_reduce), so agreeing with them is agreeing with that.
 * Inputs are random bit patterns (integers) and random finite values with
 * NaN, infinities, signed zeros and subnormals mixed in (floats).
 *
 * Without a CUDA device it says SKIP and why, and exits 77. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include "gcoll.h"
#include "base/reduce.h"
#include "cuda/cuda_kernels.h"

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

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static uint64_t rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}

/* Float values that exercise the numerics: mostly moderate random values
 * (sums and products stay finite), a few specials. */
static void fill(void *buf, size_t count, gcoll_dtype_t dt)
{
    size_t sz = gcoll_dtype_size(dt);
    unsigned char *p = buf;
    for (size_t i = 0; i < count; i++, p += sz) {
        uint64_t r = rnd();
        int special = (r & 63) == 0;
        switch (dt) {
        case GCOLL_FLOAT32: {
            float f = special ? (float[]){ 0.0f / 0.0f, 1.0f / 0.0f, -0.0f, 1e-40f }[r >> 60 & 3]
                              : (float)((int64_t)(r >> 40) - (1 << 23)) / 4096.0f;
            memcpy(p, &f, 4);
            break;
        }
        case GCOLL_FLOAT64: {
            double f = special ? (double[]){ 0.0 / 0.0, -1.0 / 0.0, -0.0, 1e-310 }[r >> 60 & 3]
                               : (double)((int64_t)(r >> 20) - (1ll << 43)) / 65536.0;
            memcpy(p, &f, 8);
            break;
        }
        case GCOLL_FLOAT16: case GCOLL_BFLOAT16: {
            /* any bit pattern but keep most exponents moderate */
            uint16_t h = (uint16_t)r;
            if (!special) h = (uint16_t)((h & 0x83ffu) | (dt == GCOLL_FLOAT16 ? 0x3800u : 0x3f00u));
            memcpy(p, &h, 2);
            break;
        }
        default:
            memcpy(p, &r, sz);
            break;
        }
    }
}

static void *dev_alloc(size_t bytes)
{
    void *p = NULL;
    if (cudaMalloc(&p, bytes ? bytes : 1) != cudaSuccess) {
        printf("FAIL: cudaMalloc(%zu)\n", bytes);
        exit(1);
    }
    return p;
}

static void put(void *dev, const void *host, size_t bytes)
{
    if (bytes && cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice) != cudaSuccess) exit(1);
}

static void get(void *host, const void *dev, size_t bytes)
{
    if (bytes && cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost) != cudaSuccess) exit(1);
}

/* One case: nsrc inputs of count elements at byte offset skew. */
static void check_reduce(gcoll_dtype_t dt, gcoll_op_t op, int nsrc, size_t count, size_t skew)
{
    size_t sz = gcoll_dtype_size(dt), bytes = count * sz;
    unsigned char *h_in[GCOLL_CUDA_MAX_INPUTS] = { 0 }, *ref = malloc(bytes + 1), *got = malloc(bytes + 1),
                  *got2 = malloc(bytes + 1);
    unsigned char *d_base[GCOLL_CUDA_MAX_INPUTS + 2];
    const void *d_in[GCOLL_CUDA_MAX_INPUTS];
    for (int s = 0; s < nsrc; s++) {
        h_in[s] = malloc(bytes + 1);
        fill(h_in[s], count, dt);
        d_base[s] = dev_alloc(bytes + skew);
        put(d_base[s] + skew, h_in[s], bytes);
        d_in[s] = d_base[s] + skew;
    }
    memcpy(ref, h_in[0], bytes);
    for (int s = 1; s < nsrc; s++) gcoll_reduce_host(ref, ref, h_in[s], count, dt, op);
    d_base[nsrc] = dev_alloc(bytes + skew);
    d_base[nsrc + 1] = dev_alloc(bytes + skew);
    void *const out[2] = { d_base[nsrc] + skew, d_base[nsrc + 1] + skew };
    gcoll_status_t st = gcoll_cuda_reduce(out, d_in, nsrc, count, dt, op, 0);
    cudaError_t e = cudaDeviceSynchronize();
    checks++;
    if (st != GCOLL_SUCCESS || e != cudaSuccess) {
        fail("%s %s nsrc=%d count=%zu skew=%zu: status %d (%s), cuda %s", gcoll_dtype_name(dt),
             gcoll_op_name(op), nsrc, count, skew, (int)st, gcoll_last_error(),
             cudaGetErrorString(e));
    } else {
        get(got, out[0], bytes);
        get(got2, out[1], bytes);
        checks++;
        if (memcmp(got, ref, bytes) || memcmp(got2, ref, bytes))
            fail("%s %s nsrc=%d count=%zu skew=%zu: device result differs from the host's",
                 gcoll_dtype_name(dt), gcoll_op_name(op), nsrc, count, skew);
    }
    for (int s = 0; s < nsrc + 2; s++) cudaFree(d_base[s]);
    for (int s = 0; s < nsrc; s++) free(h_in[s]);
    free(ref), free(got), free(got2);
}

static void check_avg(gcoll_dtype_t dt, size_t count, int divisor)
{
    size_t bytes = count * gcoll_dtype_size(dt);
    unsigned char *h = malloc(bytes + 1), *got = malloc(bytes + 1);
    fill(h, count, dt);
    void *d = dev_alloc(bytes);
    put(d, h, bytes);
    gcoll_reduce_avg_host(h, count, dt, divisor);
    gcoll_status_t st = gcoll_cuda_avg(d, count, dt, divisor, 0);
    cudaError_t e = cudaDeviceSynchronize();
    get(got, d, bytes);
    checks++;
    if (st != GCOLL_SUCCESS || e != cudaSuccess || memcmp(got, h, bytes))
        fail("avg %s count=%zu divisor=%d: status %d, cuda %s, or a result differing from the "
             "host's", gcoll_dtype_name(dt), count, divisor, (int)st, cudaGetErrorString(e));
    cudaFree(d);
    free(h), free(got);
}

int main(void)
{
    int ndev = 0;
    cudaError_t e = cudaGetDeviceCount(&ndev);
    if (e != cudaSuccess || ndev == 0) {
        printf("SKIP: no CUDA device visible (cudaGetDeviceCount: %s, %d devices): the device "
               "kernels cannot run here\n", e == cudaSuccess ? "ok" : cudaGetErrorString(e), ndev);
        return 77;
    }
    static const size_t counts[] = { 0, 1, 2, 7, 8, 15, 16, 17, 33, 1000, 65537, 1 << 20 };
    static const int nsrcs[] = { 1, 2, 3, 8, GCOLL_CUDA_MAX_INPUTS };
    /* past what 8-bit types hold: the division must stay an int's */
    static const int divisors[] = { 1, 4, 7, 128, 255, 256, 300 };
    for (int dt = 0; dt < GCOLL_DTYPE_COUNT; dt++)
        for (int op = GCOLL_SUM; op <= GCOLL_MAX; op++)
            for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
                for (size_t n = 0; n < sizeof(nsrcs) / sizeof(nsrcs[0]); n++) {
                    if (counts[c] > 65537 && nsrcs[n] > 3) continue;   /* keep it to seconds */
                    check_reduce(dt, op, nsrcs[n], counts[c], 0);
                    /* off the 16-byte packs, still naturally aligned: the scalar path */
                    if (counts[c] > 16)
                        check_reduce(dt, op, nsrcs[n], counts[c], gcoll_dtype_size(dt));
                }
    for (int dt = 0; dt < GCOLL_DTYPE_COUNT; dt++)
        for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
            for (size_t d = 0; d < sizeof(divisors) / sizeof(divisors[0]); d++)
                check_avg(dt, counts[c], divisors[d]);

    /* bad arguments: a sentence, not a launch */
    void *const none[2] = { NULL, NULL };
    checks += 2;
    if (gcoll_cuda_reduce(none, NULL, 0, 1, GCOLL_FLOAT32, GCOLL_SUM, 0) != GCOLL_ERR_INVALID_ARG)
        fail("0 inputs accepted");
    if (gcoll_cuda_avg(NULL, 1, GCOLL_FLOAT32, 0, 0) != GCOLL_ERR_INVALID_ARG)
        fail("divisor 0 accepted");

    printf("%d checks, %d failures (device %d of %d)\n", checks, failures, 0, ndev);
    return failures ? 1 : 0;
}
