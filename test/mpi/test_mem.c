/* SPDX-License-Identifier: BSD-3-Clause */
/* Zero-copy buffers (gcoll_mem_alloc): every node-level collective on them,
 * bit for bit against MPI's own collective on the same inputs, and proof of
 * the path each call took (gcoll_comm_zcopy_stats): zero-copy when every
 * rank's buffers are shareable, the copying path when some are not.
 *
 *   mpirun -np N test_mem           the matrix, on one node (N = 1..4);
 *                                   the shm algorithms are forced
 *   mpirun -np N test_mem hier      the same calls with the built-in
 *                                   selection (run with GCOLL_NODE_SIZE):
 *                                   results only, the path is not asserted
 *   GCOLL_TEST_ZCOPY_OFF=R          local rank R sets GCOLL_ZCOPY=0: then no
 *                                   call may take the zero-copy path
 *
 * Data are small integers, so every op is exact in every type.  Prints
 * "test_mem: N ranks: ok (K checks)" and exits 0, or FAIL lines and 1. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <mpi.h>
#include "gcoll.h"
#include "core/comm.h"
#include "shm/shm_mem.h"
#include "shm/shm_zcopy.h"   /* GCOLL_SHM_ZC_MIN */

static int rank, size, failures, checks;
static int hier_mode, zcopy_off;
static gcoll_comm_t comm;

#define FAIL(...) \
    do { \
        if (failures++ < 30) { \
            fprintf(stderr, "FAIL rank %d: ", rank); \
            fprintf(stderr, __VA_ARGS__); \
            fprintf(stderr, "\n"); \
        } \
    } while (0)

#define CHECK(cond, ...) \
    do { \
        checks++; \
        if (!(cond)) FAIL(__VA_ARGS__); \
    } while (0)

/* ---- buffers ------------------------------------------------------------- */

enum { PLAIN = 0, SHARED = 1 };

static void *buf_alloc(int kind, size_t bytes)
{
    void *p = NULL;
    if (!bytes) bytes = 1;
    if (kind == SHARED) {
        gcoll_status_t st = gcoll_mem_alloc(bytes, &p);
        if (st != GCOLL_SUCCESS) FAIL("gcoll_mem_alloc(%zu): %s", bytes, gcoll_last_error());
    } else {
        p = malloc(bytes);
    }
    if (!p) {
        fprintf(stderr, "rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

static void buf_free(int kind, void *p)
{
    if (kind == SHARED) {
        gcoll_status_t st = gcoll_mem_free(p);
        if (st != GCOLL_SUCCESS) FAIL("gcoll_mem_free: %s", gcoll_last_error());
    } else {
        free(p);
    }
}

/* ---- types ------------------------------------------------------------------ */

typedef struct {
    gcoll_dtype_t dt;
    MPI_Datatype  mdt;
    gcoll_op_t    op;
    MPI_Op        mop;
    const char   *name;
} kind_t;

static const kind_t kinds[] = {
    { GCOLL_FLOAT32, MPI_FLOAT, GCOLL_SUM, MPI_SUM, "float32 sum" },
    { GCOLL_INT32, MPI_INT32_T, GCOLL_MAX, MPI_MAX, "int32 max" },
    { GCOLL_FLOAT64, MPI_DOUBLE, GCOLL_PROD, MPI_PROD, "float64 prod" },
    { GCOLL_INT64, MPI_INT64_T, GCOLL_MIN, MPI_MIN, "int64 min" },
};

static void put(void *buf, size_t i, gcoll_dtype_t dt, int v)
{
    switch (dt) {
    case GCOLL_INT32:   ((int32_t *)buf)[i] = v; break;
    case GCOLL_INT64:   ((int64_t *)buf)[i] = v; break;
    case GCOLL_FLOAT32: ((float *)buf)[i] = (float)v; break;
    default:            ((double *)buf)[i] = v; break;
    }
}

/* Rank r's element i: 1..4, so products of 4 ranks stay exact. */
static int value(int r, size_t i, unsigned salt)
{
    return (int)((i * 7 + (size_t)r * 3 + salt) % 4) + 1;
}

static void fill(void *buf, size_t n, gcoll_dtype_t dt, int r, unsigned salt)
{
    for (size_t i = 0; i < n; i++) put(buf, i, dt, value(r, i, salt));
}

static void fill_byte(void *buf, size_t bytes, int c)
{
    if (bytes) memset(buf, c, bytes);
}

/* ---- the path taken ---------------------------------------------------------- */

static uint64_t taken0, declined0;

static void path_mark(void)
{
    gcoll_comm_zcopy_stats(comm, &taken0, &declined0);
}

/* taken: 1 taken, 0 not taken, -1 either (no assertion); declined: 1 if
 * the call must have looked at zero-copy and copied. */
static void path_check(int taken, int declined, const char *what)
{
    uint64_t t, d;
    gcoll_comm_zcopy_stats(comm, &t, &d);
    if (hier_mode) return;
    if (taken >= 0)
        CHECK(t - taken0 == (uint64_t)taken, "%s: zero-copy path %s (taken %llu -> %llu)", what,
              taken ? "NOT taken though every buffer is shareable" : "taken though some are not",
              (unsigned long long)taken0, (unsigned long long)t);
    if (declined >= 0)
        CHECK(d - declined0 == (uint64_t)declined, "%s: declined %llu times, want %d", what,
              (unsigned long long)(d - declined0), declined);
}

/* ---- one collective on one shape ----------------------------------------- */

enum { C_ALLREDUCE, C_REDUCE, C_BCAST, C_ALLGATHER, C_REDUCE_SCATTER, C_COUNT };
static const char *const coll_names[C_COUNT] = { "allreduce", "reduce", "bcast", "allgather",
                                                 "reduce_scatter" };

/* Registration patterns of a call. */
enum { M_ALL, M_NONE, M_RANK0, M_SRC_ONLY, M_LAST_DST, M_COUNT };
static const char *const mode_names[M_COUNT] = { "all shareable", "none shareable",
                                                 "only rank 0 shareable", "src shareable, dst not",
                                                 "last rank's dst not shareable" };

static void mode_kinds(int mode, int *src, int *dst)
{
    *src = *dst = PLAIN;
    switch (mode) {
    case M_ALL: *src = *dst = SHARED; break;
    case M_RANK0: if (rank == 0) *src = *dst = SHARED; break;
    case M_SRC_ONLY: *src = SHARED; break;
    case M_LAST_DST: *src = SHARED; *dst = rank == size - 1 ? PLAIN : SHARED; break;
    default: break;
    }
}

/* Compare n elements of dt with the MPI reference. */
static void compare(const char *what, const void *got, const void *want, size_t n, size_t dts)
{
    CHECK(!n || memcmp(got, want, n * dts) == 0, "%s: differs from MPI's result", what);
    if (n && memcmp(got, want, n * dts) != 0) {
        for (size_t i = 0; i < n; i++)
            if (memcmp((const char *)got + i * dts, (const char *)want + i * dts, dts)) {
                fprintf(stderr, "  rank %d: first difference at element %zu of %zu\n", rank, i, n);
                break;
            }
    }
}

/* Does the call move enough for its large shared-memory form and the
 * zero-copy threshold?  (Conservative: 256 KiB.  Below that, results only.) */
static int surely_large(size_t bytes) { return bytes >= (256u << 10); }

static void run_case(int c, const kind_t *k, size_t n, int inplace, int mode, unsigned salt)
{
    size_t dts = gcoll_dtype_size(k->dt), P = (size_t)size, me = (size_t)rank;
    int sk, dk, root = (int)((n + salt) % P);
    char what[200];
    snprintf(what, sizeof(what), "%s %s n=%zu%s, %s", coll_names[c], k->name, n,
             inplace ? " in place" : "", mode_names[mode]);
    mode_kinds(mode, &sk, &dk);
    if (inplace) dk = sk;   /* one buffer */
    size_t in_n = n, out_n = n, total = n * dts;   /* elements of src, dst */
    if (c == C_ALLGATHER) out_n = n * P, total = out_n * dts;
    if (c == C_REDUCE_SCATTER) in_n = n * P, total = in_n * dts;
    void *in_ref = malloc(in_n * dts + 1), *want = malloc(out_n * dts + 1);
    void *src = NULL, *dst = NULL;
    gcoll_status_t st = GCOLL_SUCCESS;
    fill(in_ref, in_n, k->dt, rank, salt);

    path_mark();
    switch (c) {
    case C_ALLREDUCE:
    case C_REDUCE:
        dst = buf_alloc(dk, n * dts);
        src = inplace && (c == C_ALLREDUCE || rank == root) ? dst : buf_alloc(sk, n * dts);
        memcpy(src, in_ref, n * dts);
        if (dst != src) fill_byte(dst, n * dts, 0x7f);
        if (c == C_ALLREDUCE) {
            st = gcoll_allreduce(src, dst, n, k->dt, k->op, comm);
            MPI_Allreduce(in_ref, want, (int)n, k->mdt, k->mop, MPI_COMM_WORLD);
        } else {
            st = gcoll_reduce(src, dst, n, k->dt, k->op, root, comm);
            MPI_Reduce(in_ref, want, (int)n, k->mdt, k->mop, root, MPI_COMM_WORLD);
        }
        if (c == C_ALLREDUCE || rank == root) compare(what, dst, want, n, dts);
        break;
    case C_BCAST:
        src = dst = buf_alloc(sk, n * dts);
        memcpy(want, in_ref, n * dts);
        MPI_Bcast(want, (int)n, k->mdt, root, MPI_COMM_WORLD);
        if (rank == root) memcpy(dst, in_ref, n * dts);
        else fill_byte(dst, n * dts, 0x7f);
        st = gcoll_bcast(dst, n, k->dt, root, comm);
        compare(what, dst, want, n, dts);
        break;
    case C_ALLGATHER:
        dst = buf_alloc(dk, out_n * dts);
        fill_byte(dst, out_n * dts, 0x7f);
        src = inplace ? (char *)dst + me * n * dts : buf_alloc(sk, n * dts);
        memcpy(src, in_ref, n * dts);
        MPI_Allgather(in_ref, (int)n, k->mdt, want, (int)n, k->mdt, MPI_COMM_WORLD);
        st = gcoll_allgather(src, dst, n, k->dt, comm);
        compare(what, dst, want, out_n, dts);
        break;
    case C_REDUCE_SCATTER:
        src = buf_alloc(sk, in_n * dts);
        memcpy(src, in_ref, in_n * dts);
        dst = inplace ? (char *)src + me * n * dts : buf_alloc(dk, n * dts);
        if (!inplace) fill_byte(dst, n * dts, 0x7f);
        MPI_Reduce_scatter_block(in_ref, want, (int)n, k->mdt, k->mop, MPI_COMM_WORLD);
        st = gcoll_reduce_scatter(src, dst, n, k->dt, k->op, comm);
        compare(what, dst, want, n, dts);
        break;
    default: break;
    }
    CHECK(st == GCOLL_SUCCESS, "%s: %s", what, gcoll_last_error());
    /* the path: zero-copy exactly when every rank's buffers (those the call
     * uses: not recvbuf off the root of a reduce) are shareable */
    int mine = c == C_BCAST ? sk == SHARED
             : sk == SHARED && (dk == SHARED || (c == C_REDUCE && rank != root)), all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    int live = !zcopy_off && size > 1;   /* the node can map each other's memory */
    int taken = !all || !live || total < GCOLL_SHM_ZC_MIN ? 0 : surely_large(total) ? 1 : -1;
    int declined = live && !all && surely_large(total);
    if (live && !all && !surely_large(total)) declined = -1;
    path_check(taken, declined, what);

    /* free what was allocated (in-place aliases once) */
    int one = inplace && (c == C_ALLREDUCE || (c == C_REDUCE && rank == root) ||
                          c == C_ALLGATHER || c == C_REDUCE_SCATTER);
    if (c == C_BCAST) buf_free(sk, src);
    else if (one && c == C_REDUCE_SCATTER) buf_free(sk, src);
    else if (one) buf_free(dk, dst);
    else {
        buf_free(sk, src);
        buf_free(dk, dst);
    }
    free(in_ref);
    free(want);
}

/* Every collective, every shape, every registration pattern. */
static void test_matrix(void)
{
    static const size_t counts[] = { 0, 1, 7, 13, 4099, 65537, 262147, (1u << 20) + 3 };
    unsigned salt = 0;
    for (int c = 0; c < C_COUNT; c++)
        for (size_t s = 0; s < sizeof(counts) / sizeof(counts[0]); s++) {
            size_t n = counts[s];
            if ((c == C_ALLGATHER || c == C_REDUCE_SCATTER) && n > 262147) n = 65537 * 3;
            const kind_t *k = &kinds[(c + s) % (sizeof(kinds) / sizeof(kinds[0]))];
            for (int inplace = 0; inplace < 2; inplace++)
                for (int mode = 0; mode < M_COUNT; mode++) {
                    if (c == C_BCAST && inplace) continue;   /* one buffer anyway */
                    if (inplace && (mode == M_SRC_ONLY || mode == M_LAST_DST)) continue;
                    if (size == 1 && mode >= M_RANK0) continue;
                    run_case(c, k, n, inplace, mode, ++salt);
                }
        }
}

/* ---- reuse: freed and reallocated buffers, the mapping history ------------ */

/* An allreduce of n floats on shareable buffers x (in place) against MPI. */
static void allreduce_on(float *x, size_t n, unsigned salt, const char *what, int expect)
{
    float *want = malloc(n * sizeof(float)), *in = malloc(n * sizeof(float));
    fill(in, n, GCOLL_FLOAT32, rank, salt);
    memcpy(x, in, n * sizeof(float));
    MPI_Allreduce(in, want, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    path_mark();
    gcoll_status_t st = gcoll_allreduce(x, x, n, GCOLL_FLOAT32, GCOLL_SUM, comm);
    CHECK(st == GCOLL_SUCCESS, "%s: %s", what, gcoll_last_error());
    compare(what, x, want, n, sizeof(float));
    path_check(expect, 0, what);
    free(want);
    free(in);
}

static void test_reuse(void)
{
    const size_t n = 1u << 18;   /* 1 MiB */
    int expect = size > 1 && !zcopy_off;
    char what[128];
    /* freed and reallocated: the same size (likely the same address and
     * descriptor number: a new id must not be taken for the old one), then
     * other sizes */
    for (int round = 0; round < 6; round++) {
        size_t m = round < 3 ? n : n / 2 + 1000u * (size_t)round;
        float *x;
        gcoll_mem_alloc(m * sizeof(float), (void **)&x);
        snprintf(what, sizeof(what), "reallocated buffer, round %d (%zu floats)", round, m);
        allreduce_on(x, m, 100u + (unsigned)round, what, expect);
        allreduce_on(x, m, 200u + (unsigned)round, what, expect);
        gcoll_mem_free(x);
    }
    /* double buffering (the fast path), then more buffers than the history
     * keeps, round robin (evicted ones are mapped again) */
    enum { NB = 12 };
    float *b[NB];
    for (int i = 0; i < NB; i++) gcoll_mem_alloc(n / 4 * sizeof(float), (void **)&b[i]);
    for (int it = 0; it < 6; it++) {
        snprintf(what, sizeof(what), "double buffering, call %d", it);
        allreduce_on(b[it % 2], n / 4, 300u + (unsigned)it, what, expect);
    }
    for (int it = 0; it < 2 * NB; it++) {
        snprintf(what, sizeof(what), "%d buffers round robin, call %d", NB, it);
        allreduce_on(b[it % NB], n / 4, 400u + (unsigned)it, what, expect);
    }
    for (int i = 0; i < NB; i++) gcoll_mem_free(b[i]);
    /* a fresh allocation is zeroed */
    unsigned char *z;
    gcoll_mem_alloc(100000, (void **)&z);
    size_t nz = 0;
    for (size_t i = 0; i < 100000; i++) nz += z[i] != 0;
    CHECK(nz == 0, "gcoll_mem_alloc: %zu of 100000 bytes are not zero", nz);
    gcoll_mem_free(z);
}

/* A rank that cannot map a peer's buffer (here: the last rank's memfd was
 * replaced by /dev/null behind libgcoll's back, so its peers' open gives an
 * empty file) makes the whole node copy that call, with the right result;
 * the next call on sound buffers is zero-copy again. */
static void test_map_failure(void)
{
    const size_t n = (1u << 18) + 11;
    int live = size > 1 && !zcopy_off;
    float *x, *y;
    gcoll_mem_alloc(n * sizeof(float), (void **)&x);
    gcoll_mem_alloc(n * sizeof(float), (void **)&y);
    if (rank == size - 1 && live) {
        gcoll_mem_ref_t ref;
        int null = open("/dev/null", O_RDWR);
        CHECK(gcoll_mem_find(x, n * sizeof(float), &ref) && null >= 0 && dup2(null, ref.fd) >= 0,
              "cannot clobber the memfd of the test buffer");
        close(null);
    }
    float *in = malloc(n * sizeof(float)), *want = malloc(n * sizeof(float));
    fill(in, n, GCOLL_FLOAT32, rank, 700);
    memcpy(x, in, n * sizeof(float));
    MPI_Allreduce(in, want, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    path_mark();
    CHECK(gcoll_allreduce(x, x, n, GCOLL_FLOAT32, GCOLL_SUM, comm) == GCOLL_SUCCESS,
          "allreduce on an unmappable buffer: %s", gcoll_last_error());
    compare("allreduce on an unmappable buffer", x, want, n, sizeof(float));
    path_check(0, live, "allreduce on an unmappable buffer");
    allreduce_on(y, n, 701, "allreduce after a mapping failure", live);
    gcoll_mem_free(x);   /* its descriptor is /dev/null on the last rank: freed all the same */
    gcoll_mem_free(y);
    free(in);
    free(want);
}

/* ---- nonblocking and persistent requests on shareable buffers ------------- */

static void test_requests(void)
{
    enum { NR = 3 };
    const size_t n = (1u << 18) + 5;
    float *x[NR], *want[NR];
    gcoll_request_t req[NR];
    int expect = size > 1 && !zcopy_off;
    path_mark();
    for (int i = 0; i < NR; i++) {
        float *in = malloc(n * sizeof(float));
        gcoll_mem_alloc(n * sizeof(float), (void **)&x[i]);
        want[i] = malloc(n * sizeof(float));
        fill(in, n, GCOLL_FLOAT32, rank, 500u + (unsigned)i);
        memcpy(x[i], in, n * sizeof(float));
        MPI_Allreduce(in, want[i], (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        free(in);
    }
    for (int i = 0; i < NR; i++)
        CHECK(gcoll_iallreduce(x[i], x[i], n, GCOLL_FLOAT32, GCOLL_SUM, comm, &req[i]) ==
                  GCOLL_SUCCESS, "iallreduce: %s", gcoll_last_error());
    CHECK(gcoll_waitall(NR, req) == GCOLL_SUCCESS, "waitall: %s", gcoll_last_error());
    for (int i = 0; i < NR; i++) compare("iallreduce on shareable buffers", x[i], want[i], n, 4);
    uint64_t t, d;
    gcoll_comm_zcopy_stats(comm, &t, &d);
    if (!hier_mode)
        CHECK(t - taken0 == (uint64_t)(expect ? NR : 0), "iallreduce: %llu zero-copy calls of %d",
              (unsigned long long)(t - taken0), NR);
    /* persistent: started three times on new data */
    gcoll_request_t p;
    CHECK(gcoll_allreduce_init(x[0], x[1], n, GCOLL_FLOAT32, GCOLL_SUM, comm, &p) == GCOLL_SUCCESS,
          "allreduce_init: %s", gcoll_last_error());
    for (int it = 0; it < 3; it++) {
        float *in = malloc(n * sizeof(float));
        fill(in, n, GCOLL_FLOAT32, rank, 600u + (unsigned)it);
        memcpy(x[0], in, n * sizeof(float));
        MPI_Allreduce(in, want[0], (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        path_mark();
        CHECK(gcoll_start(p) == GCOLL_SUCCESS && gcoll_wait(&p) == GCOLL_SUCCESS,
              "persistent allreduce: %s", gcoll_last_error());
        compare("persistent allreduce on shareable buffers", x[1], want[0], n, 4);
        path_check(expect, 0, "persistent allreduce");
        free(in);
    }
    gcoll_request_free(&p);
    for (int i = 0; i < NR; i++) {
        gcoll_mem_free(x[i]);
        free(want[i]);
    }
}

/* ---- bad input ---------------------------------------------------------------- */

static void expect_error(gcoll_status_t got, gcoll_status_t want, const char *what)
{
    CHECK(got == want, "%s: status %s, want %s", what, gcoll_strerror(got), gcoll_strerror(want));
    CHECK(gcoll_last_error()[0] != '\0', "%s: no sentence in gcoll_last_error()", what);
}

static void test_bad_input(void)
{
    void *p = (void *)1, *q;
    size_t live = gcoll_mem_live();
    expect_error(gcoll_mem_alloc(0, &p), GCOLL_ERR_INVALID_ARG, "gcoll_mem_alloc(0)");
    CHECK(p == NULL, "gcoll_mem_alloc(0) left *ptr set");
    expect_error(gcoll_mem_alloc(64, NULL), GCOLL_ERR_INVALID_ARG, "gcoll_mem_alloc(64, NULL)");
    expect_error(gcoll_mem_alloc(SIZE_MAX, &p), GCOLL_ERR_NO_MEMORY, "gcoll_mem_alloc(SIZE_MAX)");
    char *m = malloc(64);
    expect_error(gcoll_mem_free(m), GCOLL_ERR_INVALID_ARG, "gcoll_mem_free(malloc'd)");
    free(m);
    CHECK(gcoll_mem_alloc(10000, &q) == GCOLL_SUCCESS, "gcoll_mem_alloc(10000): %s",
          gcoll_last_error());
    expect_error(gcoll_mem_free((char *)q + 4096), GCOLL_ERR_INVALID_ARG,
                 "gcoll_mem_free(inside an allocation)");
    CHECK(strstr(gcoll_last_error(), "inside") != NULL, "interior pointer: sentence '%s'",
          gcoll_last_error());
    CHECK(gcoll_mem_free(q) == GCOLL_SUCCESS, "gcoll_mem_free: %s", gcoll_last_error());
    expect_error(gcoll_mem_free(q), GCOLL_ERR_INVALID_ARG, "gcoll_mem_free twice");
    CHECK(gcoll_mem_free(NULL) == GCOLL_SUCCESS, "gcoll_mem_free(NULL): %s", gcoll_last_error());
    CHECK(gcoll_mem_live() == live, "gcoll_mem_live: %zu allocations, want %zu",
          gcoll_mem_live(), live);
    /* the communicator still works */
    float x = (float)rank, s = 0;
    CHECK(gcoll_allreduce(&x, &s, 1, GCOLL_FLOAT32, GCOLL_SUM, comm) == GCOLL_SUCCESS &&
              s == (float)(size * (size - 1) / 2), "allreduce after bad input");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    hier_mode = argc > 1 && !strcmp(argv[1], "hier");
    const char *off = getenv("GCOLL_TEST_ZCOPY_OFF");
    if (off && atoi(off) == rank) setenv("GCOLL_ZCOPY", "0", 1);
    zcopy_off = off != NULL && size > 1;
    /* GCOLL_TEST_SINGLE: the bcast and allgather by single copy (shm_cma),
     * whose zero-copy negotiation hands a declined call to that form */
    const char *single = getenv("GCOLL_TEST_SINGLE");
    if (!hier_mode)
        setenv("GCOLL_ALGO", single && atoi(single)
                   ? "allreduce=shm,reduce=shm,bcast=shm_cma,allgather=shm_cma,reduce_scatter=shm"
                   : "allreduce=shm,reduce=shm,bcast=shm,allgather=shm,reduce_scatter=shm", 1);
    size_t live0 = gcoll_mem_live();
    if (gcoll_comm_create(MPI_COMM_WORLD, &comm) != GCOLL_SUCCESS) {
        fprintf(stderr, "rank %d: gcoll_comm_create: %s\n", rank, gcoll_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    test_bad_input();
    test_matrix();
    test_reuse();
    test_map_failure();
    test_requests();
    CHECK(gcoll_mem_live() == live0, "%zu allocations left at the end, want %zu",
          gcoll_mem_live(), live0);
    uint64_t t, d;
    gcoll_comm_zcopy_stats(comm, &t, &d);
    gcoll_comm_destroy(comm);
    int all_fail = 0, all_checks = 0;
    MPI_Allreduce(&failures, &all_fail, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&checks, &all_checks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        if (all_fail) printf("test_mem: %d ranks: %d failures\n", size, all_fail);
        else printf("test_mem: %d ranks: ok (%d checks; rank 0: %llu calls zero-copy, %llu "
                    "looked and copied)\n", size, all_checks, (unsigned long long)t,
                    (unsigned long long)d);
    }
    MPI_Finalize();
    return all_fail ? 1 : 0;
}
