/* SPDX-License-Identifier: BSD-3-Clause */
/* The shared-memory executor (libgcoll/shm) against MPI's own collectives
 * and a serial reference, on a real segment with real MPI ranks.
 *
 *   mpirun -np N test_shm        correctness matrix (N = 1..4; all ranks
 *                                must share one node)
 *   mpirun -np 2 test_shm -b     timing: gcoll_shm_allreduce vs MPI_Allreduce,
 *                                interleaved blocks, medians
 *
 * Data are small integers, so every op is exact in every dtype and results
 * compare bit for bit.  Any mismatch prints a line starting "FAIL" and the
 * program exits 1. */
#define _GNU_SOURCE   /* sched_getaffinity, CPU_COUNT */
#include <math.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <mpi.h>
#include "gcoll.h"
#include "shm/shm_int.h"   /* the ring's depth and slot size, the windows */
#include "shm/shm_cma.h"
#include "algos/peers.h"

/* The segments' configuration (a communicator's snapshot in the library);
 * the tests change it under them (timeout, write ways). */
static gcoll_config_t cfg;
#include "base/config.h"
#include "base/coll_kind.h"

static int rank, size, failures;
static gcoll_shm_t *shm;

#define FAIL(...) \
    do { \
        if (failures++ < 20) { \
            fprintf(stderr, "FAIL rank %d: ", rank); \
            fprintf(stderr, __VA_ARGS__); \
            fprintf(stderr, "\n"); \
        } \
    } while (0)

/* ---- typed access to small integer values ------------------------------- */

static const gcoll_dtype_t dtypes[] = { GCOLL_INT32, GCOLL_INT64, GCOLL_FLOAT32, GCOLL_FLOAT64,
                                        GCOLL_BFLOAT16 };
static const gcoll_op_t ops[] = { GCOLL_SUM, GCOLL_MAX, GCOLL_MIN, GCOLL_PROD };
static const size_t counts[] = { 0, 1, 7, 1023, 65537, (1u << 20) + 3 };

#define NELEMS(a) (sizeof(a) / sizeof((a)[0]))

static void put(void *buf, size_t i, gcoll_dtype_t dt, double v)
{
    switch (dt) {
    case GCOLL_INT32:   ((int32_t *)buf)[i] = (int32_t)v; break;
    case GCOLL_INT64:   ((int64_t *)buf)[i] = (int64_t)v; break;
    case GCOLL_FLOAT32: ((float *)buf)[i] = (float)v; break;
    case GCOLL_FLOAT64: ((double *)buf)[i] = v; break;
    default: {   /* bfloat16: small integers are exact, truncation is exact */
        float f = (float)v;
        uint32_t u;
        memcpy(&u, &f, 4);
        ((uint16_t *)buf)[i] = (uint16_t)(u >> 16);
    }
    }
}

static double get(const void *buf, size_t i, gcoll_dtype_t dt)
{
    switch (dt) {
    case GCOLL_INT32:   return ((const int32_t *)buf)[i];
    case GCOLL_INT64:   return (double)((const int64_t *)buf)[i];
    case GCOLL_FLOAT32: return ((const float *)buf)[i];
    case GCOLL_FLOAT64: return ((const double *)buf)[i];
    default: {
        uint32_t u = (uint32_t)((const uint16_t *)buf)[i] << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    }
}

static MPI_Datatype mpi_dtype(gcoll_dtype_t dt)
{
    switch (dt) {
    case GCOLL_INT32:   return MPI_INT32_T;
    case GCOLL_INT64:   return MPI_INT64_T;
    case GCOLL_FLOAT32: return MPI_FLOAT;
    case GCOLL_FLOAT64: return MPI_DOUBLE;
    default:            return MPI_DATATYPE_NULL;   /* no MPI bfloat16 */
    }
}

static MPI_Op mpi_op(gcoll_op_t op)
{
    return op == GCOLL_SUM ? MPI_SUM : op == GCOLL_PROD ? MPI_PROD : op == GCOLL_MIN ? MPI_MIN : MPI_MAX;
}

/* Input of rank r at element i: in [-8, 8] (PROD: in {-2, -1, 1, 2}, so a
 * product over 4 ranks stays within bfloat16's exact integers). */
static double value(int r, size_t i, unsigned seed, gcoll_op_t op)
{
    uint32_t h = (uint32_t)i * 2654435761u ^ (uint32_t)r * 40503u ^ seed * 0x9e3779b9u;
    h ^= h >> 15;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    if (op == GCOLL_PROD) {
        static const double v[4] = { -2, -1, 1, 2 };
        return v[h & 3];
    }
    return (double)(h % 17) - 8;
}

static double reference(size_t i, unsigned seed, gcoll_op_t op)
{
    double acc = value(0, i, seed, op);
    for (int r = 1; r < size; r++) {
        double v = value(r, i, seed, op);
        acc = op == GCOLL_SUM ? acc + v : op == GCOLL_PROD ? acc * v
            : op == GCOLL_MIN ? fmin(acc, v) : fmax(acc, v);
    }
    return acc;
}

static void fill(void *buf, size_t off, size_t n, gcoll_dtype_t dt, gcoll_op_t op, unsigned seed)
{
    for (size_t i = 0; i < n; i++) put(buf, i, dt, value(rank, off + i, seed, op));
}

/* Elements [0, n) of got against the reference of elements [off, off + n). */
static void expect_ref(const char *what, const void *got, size_t off, size_t n, gcoll_dtype_t dt,
                       gcoll_op_t op, unsigned seed)
{
    for (size_t i = 0; i < n; i++) {
        double want = reference(off + i, seed, op), g = get(got, i, dt);
        if (g != want) {
            FAIL("%s: element %zu is %g, want %g", what, off + i, g, want);
            return;
        }
    }
}

static void expect_same(const char *what, const void *got, const void *want, size_t bytes)
{
    if (bytes && memcmp(got, want, bytes) != 0) FAIL("%s: differs from MPI's result", what);
}

static void *xmalloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "FAIL rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    memset(p, 0x5a, bytes);   /* garbage, not zeros: an unwritten result shows */
    return p;
}

/* ---- one test per collective ---------------------------------------------- */

static void test_allreduce(size_t n, gcoll_dtype_t dt, gcoll_op_t op, int inplace, unsigned seed)
{
    char what[160];
    size_t dts = gcoll_dtype_size(dt);
    snprintf(what, sizeof(what), "allreduce n=%zu %s %s%s", n, gcoll_dtype_name(dt),
             gcoll_op_name(op), inplace ? " in-place" : "");
    void *src = xmalloc(n * dts), *dst = inplace ? src : xmalloc(n * dts), *mpi = xmalloc(n * dts);
    fill(src, 0, n, dt, op, seed);
    if (mpi_dtype(dt) != MPI_DATATYPE_NULL)
        MPI_Allreduce(src, mpi, (int)n, mpi_dtype(dt), mpi_op(op), MPI_COMM_WORLD);
    gcoll_status_t st = gcoll_shm_allreduce(shm, src, dst, n, dt, op);
    if (st) FAIL("%s: %s: %s", what, gcoll_strerror(st), gcoll_last_error());
    expect_ref(what, dst, 0, n, dt, op, seed);
    if (mpi_dtype(dt) != MPI_DATATYPE_NULL) expect_same(what, dst, mpi, n * dts);
    free(mpi);
    if (!inplace) free(dst);
    free(src);
}

static void test_reduce_scatter(size_t n, gcoll_dtype_t dt, gcoll_op_t op, int inplace,
                                unsigned seed)
{
    char what[160];
    size_t dts = gcoll_dtype_size(dt), off = gcoll_block_off(n, size, rank);
    size_t len = gcoll_block_len(n, size, rank);
    snprintf(what, sizeof(what), "reduce_scatter n=%zu %s %s%s", n, gcoll_dtype_name(dt),
             gcoll_op_name(op), inplace ? " in-place" : "");
    unsigned char *src = xmalloc(n * dts), *dst = inplace ? src + off * dts : xmalloc(len * dts);
    void *mpi = xmalloc(len * dts);
    fill(src, 0, n, dt, op, seed);
    if (mpi_dtype(dt) != MPI_DATATYPE_NULL) {
        int rc[size];
        for (int j = 0; j < size; j++) rc[j] = (int)gcoll_block_len(n, size, j);
        MPI_Reduce_scatter(src, mpi, rc, mpi_dtype(dt), mpi_op(op), MPI_COMM_WORLD);
    }
    gcoll_status_t st = gcoll_shm_reduce_scatter(shm, src, dst, n, dt, op);
    if (st) FAIL("%s: %s: %s", what, gcoll_strerror(st), gcoll_last_error());
    expect_ref(what, dst, off, len, dt, op, seed);
    if (mpi_dtype(dt) != MPI_DATATYPE_NULL) expect_same(what, dst, mpi, len * dts);
    free(mpi);
    if (!inplace) free(dst);
    free(src);
}

static void test_reduce(size_t n, gcoll_dtype_t dt, gcoll_op_t op, int inplace, int root,
                        unsigned seed)
{
    char what[160];
    size_t dts = gcoll_dtype_size(dt);
    snprintf(what, sizeof(what), "reduce n=%zu %s %s root %d%s", n, gcoll_dtype_name(dt),
             gcoll_op_name(op), root, inplace ? " in-place" : "");
    void *src = xmalloc(n * dts), *mpi = xmalloc(n * dts), *dst = NULL;
    if (rank == root) dst = inplace ? src : xmalloc(n * dts);
    fill(src, 0, n, dt, op, seed);
    if (mpi_dtype(dt) != MPI_DATATYPE_NULL)
        MPI_Reduce(src, mpi, (int)n, mpi_dtype(dt), mpi_op(op), root, MPI_COMM_WORLD);
    gcoll_status_t st = gcoll_shm_reduce(shm, src, dst, n, dt, op, root);
    if (st) FAIL("%s: %s: %s", what, gcoll_strerror(st), gcoll_last_error());
    if (rank == root) {
        expect_ref(what, dst, 0, n, dt, op, seed);
        if (mpi_dtype(dt) != MPI_DATATYPE_NULL) expect_same(what, dst, mpi, n * dts);
    } else {   /* a non-root's input must be left alone */
        void *again = xmalloc(n * dts);
        fill(again, 0, n, dt, op, seed);
        if (n && memcmp(again, src, n * dts)) FAIL("%s: non-root's src was modified", what);
        free(again);
    }
    if (rank == root && !inplace) free(dst);
    free(mpi);
    free(src);
}

static unsigned char byte_of(size_t i, unsigned seed) { return (unsigned char)(i * 131 + seed * 7 + 1); }

static void test_allgather(size_t n, size_t dts, int inplace, unsigned seed)
{
    char what[160];
    size_t off = gcoll_block_off(n, size, rank) * dts, len = gcoll_block_len(n, size, rank) * dts;
    snprintf(what, sizeof(what), "allgather n=%zu elem %zu B%s", n, dts, inplace ? " in-place" : "");
    unsigned char *dst = xmalloc(n * dts), *mpi = xmalloc(n * dts), *src = inplace ? dst + off : xmalloc(len);
    for (size_t i = 0; i < len; i++) src[i] = byte_of(off + i, seed);
    int rc[size], displ[size];
    for (int j = 0; j < size; j++) {
        rc[j] = (int)(gcoll_block_len(n, size, j) * dts);
        displ[j] = (int)(gcoll_block_off(n, size, j) * dts);
    }
    MPI_Allgatherv(src, (int)len, MPI_BYTE, mpi, rc, displ, MPI_BYTE, MPI_COMM_WORLD);
    gcoll_status_t st = gcoll_shm_allgather(shm, src, dst, n, dts);
    if (st) FAIL("%s: %s: %s", what, gcoll_strerror(st), gcoll_last_error());
    for (size_t i = 0; i < n * dts; i++)
        if (dst[i] != byte_of(i, seed)) {
            FAIL("%s: byte %zu is %u, want %u", what, i, dst[i], byte_of(i, seed));
            break;
        }
    expect_same(what, dst, mpi, n * dts);
    if (!inplace) free(src);
    free(mpi);
    free(dst);
}

static void test_bcast(size_t bytes, int root, unsigned seed)
{
    char what[160];
    snprintf(what, sizeof(what), "bcast %zu B root %d", bytes, root);
    unsigned char *buf = xmalloc(bytes), *mpi = xmalloc(bytes);
    if (rank == root)
        for (size_t i = 0; i < bytes; i++) buf[i] = mpi[i] = byte_of(i, seed);
    MPI_Bcast(mpi, (int)bytes, MPI_BYTE, root, MPI_COMM_WORLD);
    gcoll_status_t st = gcoll_shm_bcast(shm, buf, bytes, root);
    if (st) FAIL("%s: %s: %s", what, gcoll_strerror(st), gcoll_last_error());
    expect_same(what, buf, mpi, bytes);
    free(mpi);
    free(buf);
}

/* Each rank bumps its counter in an MPI shared window, arriving at staggered
 * times; after the barrier every counter must show the same round. */
static void test_barrier(void)
{
    MPI_Win win;
    volatile int *mine, *base;
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Win_allocate_shared(sizeof(int), sizeof(int), MPI_INFO_NULL, node, (void *)&mine, &win);
    MPI_Aint sz;
    int du;
    MPI_Win_shared_query(win, 0, &sz, &du, (void *)&base);
    *mine = 0;
    MPI_Barrier(node);
    for (int round = 1; round <= 200; round++) {
        if ((round + rank) % 7 == 0) usleep(200);
        __atomic_store_n(mine, round, __ATOMIC_RELEASE);
        gcoll_status_t st = gcoll_shm_barrier(shm);
        if (st) { FAIL("barrier: %s", gcoll_last_error()); break; }
        for (int j = 0; j < size; j++) {
            int v = __atomic_load_n(&base[j], __ATOMIC_ACQUIRE);
            if (v < round) { FAIL("barrier round %d: rank %d had not arrived (%d)", round, j, v); break; }
        }
        st = gcoll_shm_barrier(shm);   /* nobody bumps again before all checked */
        if (st) { FAIL("barrier: %s", gcoll_last_error()); break; }
    }
    MPI_Win_free(&win);
    MPI_Comm_free(&node);
}

/* ---- drivers ------------------------------------------------------------------ */

static void run_matrix(void)
{
    unsigned seed = 1;
    for (size_t c = 0; c < NELEMS(counts); c++)
        for (size_t d = 0; d < NELEMS(dtypes); d++)
            for (size_t o = 0; o < NELEMS(ops); o++)
                for (int ip = 0; ip < 2; ip++) {
                    size_t n = counts[c];
                    /* the largest count exercises chunking, which the op
                     * does not change: two ops keep the run short */
                    if (n > 100000 && ops[o] != GCOLL_SUM && ops[o] != GCOLL_MIN) continue;
                    test_allreduce(n, dtypes[d], ops[o], ip, seed++);
                    test_reduce_scatter(n, dtypes[d], ops[o], ip, seed++);
                    /* every root at the small sizes, two roots at the big ones */
                    for (int root = 0; root < size; root++)
                        if (n < 100000 || root == 0 || root == size - 1)
                            test_reduce(n, dtypes[d], ops[o], ip, root, seed++);
                }
    /* 32 MiB and more: results are written with streaming stores */
    for (int ip = 0; ip < 2; ip++) {
        test_allreduce((4u << 20) + 5, GCOLL_FLOAT64, GCOLL_SUM, ip, seed++);
        test_reduce((4u << 20) + 5, GCOLL_FLOAT64, GCOLL_MAX, ip, size - 1, seed++);
    }
    size_t dts[] = { 1, 2, 3, 4, 8 };
    for (size_t c = 0; c < NELEMS(counts); c++)
        for (size_t d = 0; d < NELEMS(dts); d++)
            for (int ip = 0; ip < 2; ip++) test_allgather(counts[c], dts[d], ip, seed++);
    size_t bytes[] = { 0, 1, 8, 56, 57, 1000, 65537, (3u << 20) + 5 };
    for (size_t b = 0; b < NELEMS(bytes); b++)
        for (int root = 0; root < size; root++) test_bcast(bytes[b], root, seed++);
}

/* Many collectives back to back with no MPI call between them (an MPI call
 * would resynchronise the ranks and hide a slot-reuse race); results are
 * kept and checked at the end. */
static void run_back_to_back(void)
{
    enum { ROUNDS = 300 };
    static const size_t sizes[] = { 1, 7, 14, 15, 100, 4000, 4097, 20000, 70000 };
    void *res[ROUNDS];
    size_t cnt[ROUNDS];
    for (int it = 0; it < ROUNDS; it++) {
        size_t n = sizes[(size_t)it % NELEMS(sizes)];
        if (it < 60) n = (size_t)1 + (size_t)it % 14;   /* first 60: tiny, inline */
        cnt[it] = n;
        res[it] = xmalloc(n * sizeof(float));
        float *src = xmalloc(n * sizeof(float));
        fill(src, 0, n, GCOLL_FLOAT32, GCOLL_SUM, 1000u + (unsigned)it);
        gcoll_status_t st = gcoll_shm_allreduce(shm, src, res[it], n, GCOLL_FLOAT32, GCOLL_SUM);
        if (st) FAIL("back-to-back allreduce %d: %s", it, gcoll_last_error());
        if (it % 5 == 4) {   /* interleave other collectives on the same slots */
            unsigned char b[64];
            if (rank == it % size) memset(b, it, sizeof(b));
            st = gcoll_shm_bcast(shm, b, (size_t)(it % 64) + 1, it % size);
            if (st) FAIL("back-to-back bcast %d: %s", it, gcoll_last_error());
            for (int i = 0; !st && i <= it % 64; i++)
                if (b[i] != (unsigned char)it) { FAIL("back-to-back bcast %d byte %d", it, i); break; }
            st = gcoll_shm_barrier(shm);
            if (st) FAIL("back-to-back barrier %d: %s", it, gcoll_last_error());
        }
        free(src);
    }
    for (int it = 0; it < ROUNDS; it++) {
        char what[64];
        snprintf(what, sizeof(what), "back-to-back allreduce %d (n=%zu)", it, cnt[it]);
        expect_ref(what, res[it], 0, cnt[it], GCOLL_FLOAT32, GCOLL_SUM, 1000u + (unsigned)it);
        free(res[it]);
    }
}

/* The ring of small rooted collectives (shm_ring.c): writers run up to
 * GCOLL_SHM_RING_LINES calls ahead of a late reader, or as many as the
 * size class has slots where that is fewer (GCOLL_SHM_RING_MID of up to
 * 2 KiB, shm->ring_depth larger ones), and no further.  The
 * late rank sleeps 300 ms; the ring's first DEPTH calls must not wait for
 * it, the next one must, and every call must deliver its own payload
 * (a writer that ran further ahead would overwrite an unread slot). */
#define RING_LATE_S 0.3

static void ring_fill(unsigned char *b, size_t bytes, int call)
{
    for (size_t i = 0; i < bytes; i++) b[i] = (unsigned char)(i * 7 + (size_t)call * 13 + 1);
}

static void ring_check(const char *what, const unsigned char *b, size_t bytes, int call)
{
    for (size_t i = 0; i < bytes; i++)
        if (b[i] != (unsigned char)(i * 7 + (size_t)call * 13 + 1)) {
            FAIL("%s call %d: byte %zu is %u", what, call, i, b[i]);
            return;
        }
}

static int ring_depth(size_t bytes)
{
    size_t k = bytes <= 56 ? GCOLL_SHM_RING_LINES
               : bytes <= GCOLL_SHM_RING_MID_SLOT ? GCOLL_SHM_RING_MID : shm->ring_depth;
    return k < GCOLL_SHM_RING_LINES ? (int)k : GCOLL_SHM_RING_LINES;
}

static void ring_bcast_ahead(size_t bytes, int root)
{
    enum { CALLS = 2 * GCOLL_SHM_RING_LINES };
    const int D = ring_depth(bytes);
    unsigned char *buf[CALLS];
    char what[64];
    snprintf(what, sizeof(what), "ring bcast %zu B root %d", bytes, root);
    for (int c = 0; c < 2 * D; c++) buf[c] = xmalloc(bytes);
    int late = (root + 1) % size;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime(), ahead = 0;
    if (rank == late) usleep((useconds_t)(RING_LATE_S * 1e6));
    for (int c = 0; c < 2 * D; c++) {
        if (rank == root) ring_fill(buf[c], bytes, c);
        gcoll_status_t st = gcoll_shm_bcast(shm, buf[c], bytes, root);
        if (st) FAIL("%s call %d: %s", what, c, gcoll_last_error());
        if (c == D - 1) ahead = MPI_Wtime() - t0;
    }
    double all = MPI_Wtime() - t0;
    if (rank == root && ahead > RING_LATE_S / 2)
        FAIL("%s: the first %d calls took %.3f s: the root waited for the late reader", what, D, ahead);
    if (rank == root && all < RING_LATE_S * 0.8)
        FAIL("%s: %d calls took only %.3f s: the root ran more than %d calls ahead", what, 2 * D, all, D);
    for (int c = 0; c < 2 * D; c++) {
        ring_check(what, buf[c], bytes, c);
        free(buf[c]);
    }
}

/* Reduce: the non-roots run ahead of a late root; int32 sums of known inputs. */
static void ring_reduce_ahead(size_t count, int root)
{
    enum { CALLS = 2 * GCOLL_SHM_RING_LINES };
    const int D = ring_depth(count * 4);
    int32_t *src = xmalloc(count * 4), *dst[CALLS];
    char what[64];
    snprintf(what, sizeof(what), "ring reduce %zu x int32 root %d", count, root);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime(), ahead = 0;
    if (rank == root) usleep((useconds_t)(RING_LATE_S * 1e6));
    for (int c = 0; c < 2 * D; c++) {
        for (size_t i = 0; i < count; i++) src[i] = (int32_t)(c * 1000 + rank * 10 + (int)(i % 7));
        dst[c] = xmalloc(count * 4);
        gcoll_status_t st = gcoll_shm_reduce(shm, src, rank == root ? dst[c] : NULL, count,
                                             GCOLL_INT32, GCOLL_SUM, root);
        if (st) FAIL("%s call %d: %s", what, c, gcoll_last_error());
        if (c == D - 1) ahead = MPI_Wtime() - t0;
    }
    double all = MPI_Wtime() - t0;
    if (rank != root && ahead > RING_LATE_S / 2)
        FAIL("%s: the first %d calls took %.3f s: a non-root waited for the late root", what, D, ahead);
    if (rank != root && all < RING_LATE_S * 0.8)
        FAIL("%s: %d calls took only %.3f s: a non-root ran more than %d calls ahead", what, 2 * D, all, D);
    for (int c = 0; c < 2 * D; c++) {
        for (size_t i = 0; rank == root && i < count; i++) {
            int32_t want = (int32_t)(size * (c * 1000 + (int)(i % 7)) + 10 * size * (size - 1) / 2);
            if (dst[c][i] != want) {
                FAIL("%s call %d: element %zu is %d, want %d", what, c, i, dst[c][i], want);
                break;
            }
        }
        free(dst[c]);
    }
    free(src);
}

/* Ring ops and step ops mixed with no MPI call between them, roots
 * rotating, sizes inline, in the slot area, and just past the ring (the
 * step form); results kept and checked at the end. */
static void ring_mixed(void)
{
    enum { CALLS = 240 };
    static const size_t sizes[] = { 1, 56, 57, 2048, 2049, 4000, GCOLL_SHM_RING_SLOT,
                                    GCOLL_SHM_RING_SLOT + 1 };
    unsigned char *buf[CALLS];
    float *red[CALLS];
    for (int c = 0; c < CALLS; c++) {
        size_t bytes = sizes[(size_t)c % NELEMS(sizes)];
        int root = (c / 3) % size;
        buf[c] = xmalloc(bytes);
        red[c] = NULL;
        if (c % 3 == 2) {   /* a reduce of bytes / 4 floats, then an allreduce */
            size_t n = bytes / 4 + 1;
            float *src = xmalloc(n * 4);
            fill(src, 0, n, GCOLL_FLOAT32, GCOLL_SUM, 500u + (unsigned)c);
            red[c] = xmalloc(n * 4);
            gcoll_status_t st = gcoll_shm_reduce(shm, src, rank == root ? red[c] : NULL, n,
                                                 GCOLL_FLOAT32, GCOLL_SUM, root);
            if (st) FAIL("ring mixed reduce %d: %s", c, gcoll_last_error());
            float x = (float)rank, sum;
            st = gcoll_shm_allreduce(shm, &x, &sum, 1, GCOLL_FLOAT32, GCOLL_SUM);
            if (st || sum != (float)(size * (size - 1) / 2)) FAIL("ring mixed allreduce %d", c);
            free(src);
        }
        if (rank == root) ring_fill(buf[c], bytes, c);
        gcoll_status_t st = gcoll_shm_bcast(shm, buf[c], bytes, root);
        if (st) FAIL("ring mixed bcast %d: %s", c, gcoll_last_error());
    }
    for (int c = 0; c < CALLS; c++) {
        size_t bytes = sizes[(size_t)c % NELEMS(sizes)];
        ring_check("ring mixed bcast", buf[c], bytes, c);
        if (red[c] && rank == (c / 3) % size)
            expect_ref("ring mixed reduce", red[c], 0, bytes / 4 + 1, GCOLL_FLOAT32, GCOLL_SUM,
                       500u + (unsigned)c);
        free(buf[c]);
        free(red[c]);
    }
}

/* Many more ring bcasts of one class than it has slots, back to back (the
 * root runs ahead as far as the flow rule lets it): each slot is reused
 * several times and every call delivers its own payload. */
static void ring_wrap(size_t bytes, size_t slots)
{
    size_t calls = 3 * slots + 5;
    unsigned char *buf = xmalloc(bytes);
    char what[64];
    snprintf(what, sizeof(what), "ring bcast %zu B over %zu slots", bytes, slots);
    for (size_t c = 0; c < calls; c++) {
        int root = (int)(c / 7) % size;
        if (rank == root) ring_fill(buf, bytes, (int)c);
        else memset(buf, 0, bytes);
        gcoll_status_t st = gcoll_shm_bcast(shm, buf, bytes, root);
        if (st) FAIL("%s call %zu: %s", what, c, gcoll_last_error());
        ring_check(what, buf, bytes, (int)c);
    }
    free(buf);
}

static void run_ring(void)
{
    if (size < 2) return;
    ring_wrap(GCOLL_SHM_RING_MID_SLOT, GCOLL_SHM_RING_MID);
    ring_wrap(20000, shm->ring_depth);
    size_t bytes[] = { 8, 56, 57, GCOLL_SHM_RING_MID_SLOT, GCOLL_SHM_RING_MID_SLOT + 1, 20000,
                       GCOLL_SHM_RING_SLOT };
    for (size_t b = 0; b < NELEMS(bytes); b++) ring_bcast_ahead(bytes[b], (int)b % size);
    ring_reduce_ahead(2, 0);
    ring_reduce_ahead(100, size - 1);
    ring_reduce_ahead(3000, size - 1);
    ring_mixed();
}

/* A rank that never arrives: the others must return GCOLL_ERR_TIMEOUT naming
 * it, and later calls on that executor must fail rather than hang. */
/* Wake-ups (shm_int.h, "Waiting"): one rank at a time arrives late by a
 * random 0-2 ms, so the others spin, yield or sleep, and the late one's
 * signal must wake them.  With the light fence (signallers without a full
 * barrier, sleepers with membarrier) a lost wake-up costs the sleeper its
 * 50 ms nap; no wait may take 45 ms more than the delay (room for a
 * scheduler's slices where ranks share CPUs under a sanitizer, none for a
 * nap slept out).  Step ops (allreduce) and ring ops (bcast and reduce of
 * 8 bytes). */
static void run_wakeups(void)
{
    if (size < 2) return;
    if (rank == 0) printf("  wake-ups: %s fence on signals\n", shm->light_fence ? "light" : "full");
    unsigned seed = 4242;
    double worst = 0;
    float in[2] = { 1, 2 }, out[2];
    for (int i = 0; i < 240; i++) {
        int late = i % size;
        seed = seed * 1103515245u + 12345u;
        long delay_us = (long)((seed >> 8) % 2000);
        if (rank == late) usleep((useconds_t)delay_us);
        double t0 = MPI_Wtime();
        gcoll_status_t st;
        switch (i % 3) {
        case 0:  st = gcoll_shm_allreduce(shm, in, out, 2, GCOLL_FLOAT32, GCOLL_SUM); break;
        case 1:  st = gcoll_shm_bcast(shm, out, 8, late); break;
        default: st = gcoll_shm_reduce(shm, in, out, 2, GCOLL_FLOAT32, GCOLL_SUM, late); break;
        }
        double waited = MPI_Wtime() - t0 - (rank == late ? 0 : 1e-6 * (double)delay_us);
        if (st) FAIL("wake-ups, call %d: %s", i, gcoll_last_error());
        if (waited > worst) worst = waited;
    }
    if (worst > 0.045)
        FAIL("wake-ups: a wait took %.1f ms beyond the late rank's delay (a lost wake-up "
             "sleeps out its 50 ms nap)", worst * 1e3);
}

static void run_timeout(void)
{
    if (size < 2) return;
    gcoll_shm_t *t;
    if (gcoll_shm_create(MPI_COMM_WORLD, MPI_COMM_WORLD, &cfg, &t)) { FAIL("create for timeout test: %s", gcoll_last_error()); return; }
    double saved = cfg.timeout;
    cfg.timeout = 0.3;
    if (rank != 0) {
        gcoll_status_t st = gcoll_shm_barrier(t);
        if (st != GCOLL_ERR_TIMEOUT) FAIL("timeout test: got %s, want a timeout", gcoll_strerror(st));
        else if (!strstr(gcoll_last_error(), "local rank(s) 0"))
            FAIL("timeout test: message does not name rank 0: %s", gcoll_last_error());
        if (gcoll_shm_barrier(t) != GCOLL_ERR_TRANSPORT) FAIL("timeout test: a broken executor still ran");
    }
    /* the same for a ring op: readers of a bcast whose root never writes */
    gcoll_shm_t *r;
    if (gcoll_shm_create(MPI_COMM_WORLD, MPI_COMM_WORLD, &cfg, &r)) { FAIL("create for ring timeout test: %s", gcoll_last_error()); return; }
    cfg.timeout = 0.3;
    if (rank != 0) {
        char b[8];
        gcoll_status_t st = gcoll_shm_bcast(r, b, sizeof(b), 0);
        if (st != GCOLL_ERR_TIMEOUT) FAIL("ring timeout test: got %s, want a timeout", gcoll_strerror(st));
        else if (!strstr(gcoll_last_error(), "ring op") || !strstr(gcoll_last_error(), "local rank(s) 0"))
            FAIL("ring timeout test: message does not name the ring and rank 0: %s", gcoll_last_error());
        if (gcoll_shm_bcast(r, b, sizeof(b), 0) != GCOLL_ERR_TRANSPORT) FAIL("ring timeout test: a broken executor still ran");
    }
    cfg.timeout = saved;
    MPI_Barrier(MPI_COMM_WORLD);
    gcoll_shm_destroy(r);
    cfg.timeout = saved;
    MPI_Barrier(MPI_COMM_WORLD);
    gcoll_shm_destroy(t);
}

static void run_args(void)
{
    float x = 1;
    if (gcoll_shm_allreduce(shm, &x, &x, 1, GCOLL_FLOAT32, GCOLL_AVG) != GCOLL_ERR_INVALID_ARG)
        FAIL("allreduce accepted AVG");
    if (gcoll_shm_allreduce(shm, NULL, &x, 1, GCOLL_FLOAT32, GCOLL_SUM) != GCOLL_ERR_INVALID_ARG)
        FAIL("allreduce accepted a NULL src");
    if (gcoll_shm_bcast(shm, &x, 4, size) != GCOLL_ERR_INVALID_ARG) FAIL("bcast accepted root == size");
    if (gcoll_shm_reduce(shm, &x, &x, 1, (gcoll_dtype_t)99, GCOLL_SUM, 0) != GCOLL_ERR_INVALID_ARG)
        FAIL("reduce accepted dtype 99");
}

/* ---- timing ----------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Seconds per call of `iters` calls, slowest rank. */
static double time_block(int use_mpi, float *src, float *dst, size_t n, int iters)
{
    int failed = 0;   /* said once; the peers run the same count of calls */
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) {
        if (use_mpi) {
            MPI_Allreduce(src, dst, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        } else {
            gcoll_status_t st = gcoll_shm_allreduce(shm, src, dst, n, GCOLL_FLOAT32, GCOLL_SUM);
            if (st && !failed++) FAIL("timed allreduce of %zu floats: %s", n, gcoll_last_error());
        }
    }
    double t = (MPI_Wtime() - t0) / iters, tmax;
    MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return tmax;
}

static void run_bench(void)
{
    static const size_t sizes[] = { 8, 64u << 10, 1u << 20, 4u << 20, 16u << 20, 64u << 20 };
    enum { BLOCKS = 9 };
    if (rank == 0)
        printf("# float32 sum, %d ranks, median of %d interleaved blocks\n"
               "# %10s %12s %12s %8s %14s %14s\n", size, BLOCKS, "bytes", "shm_us", "mpi_us",
               "mpi/shm", "shm_busbw_GB/s", "mpi_busbw_GB/s");
    for (size_t s = 0; s < NELEMS(sizes); s++) {
        size_t n = sizes[s] / sizeof(float);
        float *src = xmalloc(sizes[s]), *dst = xmalloc(sizes[s]);
        for (size_t i = 0; i < n; i++) src[i] = (float)(i % 7);
        int iters = sizes[s] <= 8 ? 20000 : (int)(((size_t)256 << 20) / sizes[s]);
        if (iters < 3) iters = 3;
        double t[2][BLOCKS];
        time_block(0, src, dst, n, 1 + iters / 10);   /* warm up both */
        time_block(1, src, dst, n, 1 + iters / 10);
        for (int b = 0; b < BLOCKS; b++) {
            t[0][b] = time_block(0, src, dst, n, iters);
            t[1][b] = time_block(1, src, dst, n, iters);
        }
        qsort(t[0], BLOCKS, sizeof(double), cmp_double);
        qsort(t[1], BLOCKS, sizeof(double), cmp_double);
        double ts = t[0][BLOCKS / 2], tm = t[1][BLOCKS / 2];
        double f = size > 1 ? 2.0 * (size - 1) / size : 1;   /* nccl-tests busbw factor */
        if (rank == 0)
            printf("  %10zu %12.3f %12.3f %8.2f %14.2f %14.2f\n", sizes[s], ts * 1e6, tm * 1e6,
                   tm / ts, f * (double)sizes[s] / ts * 1e-9, f * (double)sizes[s] / tm * 1e-9);
        free(src);
        free(dst);
    }
}

/* Start op o and run it to the end on the current segment (what the
 * executor does, without it); o stays for the caller to inspect. */
static gcoll_status_t op_run(gcoll_shm_op_t *o, int coll, const void *src, void *dst, size_t n,
                             gcoll_dtype_t dt, gcoll_op_t op, int root, unsigned flags)
{
    gcoll_status_t st = gcoll_shm_op_start(shm, o, coll, src, dst, n, dt, op, root, flags);
    int done = 0;
    while (!st && !done) st = gcoll_shm_op_progress(shm, o, &done);
    return st;
}

/* One op of collective coll started and run to the end under way; the
 * rank that copies into the segment (every rank, or the root where only
 * it does) must report the way it was told. */
static void check_way(int coll, const void *src, void *dst, size_t n, gcoll_dtype_t dt, int way,
                      int copies, const char *what)
{
    gcoll_shm_op_t o;
    gcoll_status_t st = op_run(&o, coll, src, dst, n, dt, GCOLL_SUM, 0, 0);
    if (st) FAIL("write way %d, %s: %s", way, what, gcoll_last_error());
    if (copies && o.form != 0 && o.stream != (way == GCOLL_SHM_STREAM_ON))
        FAIL("write way %d: the %s streamed=%d", way, what, o.stream);
}

/* Whether op (coll, n elements of dt) streams its result into dst (o.nt):
 * allgathers and bcasts from 16 MiB of result do, smaller ones do not. */
static void check_nt(int coll, size_t n, gcoll_dtype_t dt, size_t dts, int want, const char *what)
{
    unsigned char *src = xmalloc(n * dts), *dst = xmalloc(n * dts);
    memset(src, 1, n * dts);
    gcoll_shm_op_t o;
    gcoll_status_t st = op_run(&o, coll, coll == GCOLL_COLL_BCAST ? NULL : src,
                               coll == GCOLL_COLL_BCAST ? src : dst, n, dt, GCOLL_SUM, 0, 0);
    if (st) FAIL("%s of %zu B: %s", what, n * dts, gcoll_last_error());
    if (size > 1 && o.nt != want)
        FAIL("%s with a result of %zu B: nt=%d, want %d", what, n * dts, o.nt, want);
    free(dst);
    free(src);
}

/* Results from 16 MiB bypass the caches (o.nt) in the copying allgather
 * and bcast; bit for bit against MPI's either way. */
static void run_nt_results(unsigned *seed)
{
    size_t mib16 = 16u << 20;
    check_nt(GCOLL_COLL_ALLGATHER, mib16 / 4 - (size_t)size, GCOLL_FLOAT32, 4, 0, "allgather");
    check_nt(GCOLL_COLL_ALLGATHER, mib16 / 4 + 3, GCOLL_FLOAT32, 4, 1, "allgather");
    check_nt(GCOLL_COLL_BCAST, mib16 - 1, GCOLL_UINT8, 1, 0, "bcast");
    check_nt(GCOLL_COLL_BCAST, mib16, GCOLL_UINT8, 1, 1, "bcast");
    for (int ip = 0; ip < 2; ip++) test_allgather(mib16 / 4 + 3, 4, ip, (*seed)++);
    test_bcast(mib16 + 5, size - 1, (*seed)++);
}

/* The two ways a rank writes what its peers read (shm_coll.c, "Writing the
 * reduced slice": a reducer's slice and inputs, a bcast root's, an
 * allgather's and a reduce_scatter's copies into the segment): auto picks
 * one per call, usually the same, so each is forced here in turn; the op
 * must report the way it was told, and the results must not depend on it
 * (in place at every rank, so the accumulator aliases a later input on
 * ranks >= 2). */
/* A new segment, made with cfg as it is now, in the main one's place
 * (nothing learnt yet); 0, failed, where it could not be made. */
static int segment_swap_in(const char *what, gcoll_shm_t **main_shm)
{
    gcoll_shm_t *fresh = NULL;
    if (gcoll_shm_create(MPI_COMM_WORLD, MPI_COMM_WORLD, &cfg, &fresh)) {
        FAIL("create %s: %s", what, gcoll_last_error());
        return 0;
    }
    *main_shm = shm;
    shm = fresh;
    return 1;
}

static void segment_swap_out(gcoll_shm_t *main_shm)
{
    gcoll_shm_destroy(shm);
    shm = main_shm;
}

/* A fresh segment made with GCOLL_SHM_STREAM=auto (nothing learnt yet)
 * in place of the main one, and back. */
static int auto_segment_in(gcoll_shm_t **main_shm, int *saved)
{
    *saved = cfg.shm_stream;
    cfg.shm_stream = GCOLL_SHM_STREAM_AUTO;
    if (segment_swap_in("with GCOLL_SHM_STREAM=auto", main_shm)) return 1;
    cfg.shm_stream = *saved;
    return 0;
}

static void auto_segment_out(gcoll_shm_t *main_shm, int saved)
{
    segment_swap_out(main_shm);
    cfg.shm_stream = saved;
}

static void write_way_tries(void);
static void reduce_write_way(void);
static void ring_bcast_way(void);
static void ring_bcast_way_sum(void);

static void run_write_ways(void)
{
    static const int ways[] = { GCOLL_SHM_STREAM_OFF, GCOLL_SHM_STREAM_ON };
    int saved = cfg.shm_stream;
    unsigned seed = 7000;
    /* On a segment without the single-copy reduce (GCOLL_SHM_CMA=off), whose
     * large reduces copy through the segment and so choose a way. */
    gcoll_shm_t *main_shm = shm, *copying = NULL;
    int saved_cma = cfg.shm_cma;
    cfg.shm_cma = GCOLL_SHM_CMA_OFF;
    if (gcoll_shm_create(MPI_COMM_WORLD, MPI_COMM_WORLD, &cfg, &copying)) {
        FAIL("create without the single copy: %s", gcoll_last_error());
        cfg.shm_cma = saved_cma;
        return;
    }
    cfg.shm_cma = saved_cma;
    shm = copying;
    for (size_t w = 0; w < NELEMS(ways); w++) {
        cfg.shm_stream = ways[w];
        if (size > 1) {
            float *buf = xmalloc(1u << 20), *out = xmalloc(1u << 20);
            check_way(GCOLL_COLL_ALLREDUCE, buf, buf, (1u << 20) / 4, GCOLL_FLOAT32, ways[w], 1,
                      "allreduce");
            check_way(GCOLL_COLL_BCAST, NULL, buf, 1u << 20, GCOLL_UINT8, ways[w], rank == 0,
                      "bcast root");
            check_way(GCOLL_COLL_BCAST, NULL, buf, 16u << 10, GCOLL_UINT8, ways[w], rank == 0,
                      "ring bcast root");
            check_way(GCOLL_COLL_ALLGATHER, buf, out, 1u << 20, GCOLL_UINT8, ways[w], 1,
                      "allgather");
            check_way(GCOLL_COLL_REDUCE_SCATTER, buf, out, (1u << 20) / 4, GCOLL_FLOAT32, ways[w],
                      1, "reduce_scatter");
            free(out);
            free(buf);
        }
        for (int ip = 0; ip < 2; ip++) {
            test_allreduce((1u << 20) + 3, GCOLL_FLOAT32, GCOLL_SUM, ip, seed++);
            test_allreduce((4u << 20) + 5, GCOLL_FLOAT64, GCOLL_SUM, ip, seed++);   /* dst streamed too */
            test_allreduce(65537, GCOLL_INT32, GCOLL_MAX, ip, seed++);
            test_reduce((1u << 20) + 3, GCOLL_INT64, GCOLL_SUM, ip, size - 1, seed++);
            test_allgather((1u << 20) + 3, 4, ip, seed++);
            test_allgather(40009, 1, ip, seed++);   /* one chunk, streamed from 16 KiB blocks */
            test_reduce_scatter((1u << 20) + 3, GCOLL_FLOAT32, GCOLL_SUM, ip, seed++);
            test_reduce_scatter(65537, GCOLL_INT32, GCOLL_MAX, ip, seed++);
        }
        test_bcast((3u << 20) + 5, size - 1, seed++);
        test_bcast(65537, 0, seed++);
        test_bcast(GCOLL_SHM_RING_SLOT, size - 1, seed++);   /* the ring's largest */
        test_bcast(1031, 0, seed++);                         /* its smallest that chooses */
    }
    cfg.shm_stream = saved;
    write_way_tries();
    reduce_write_way();
    ring_bcast_way();
    ring_bcast_way_sum();
    run_nt_results(&seed);
    if (gcoll_shm_cma_calls(copying))
        FAIL("a segment made with GCOLL_SHM_CMA=off ran %llu single copies",
             (unsigned long long)gcoll_shm_cma_calls(copying));
    gcoll_shm_destroy(copying);
    shm = main_shm;
}

/* GCOLL_SHM_STREAM=auto on a fresh segment: a size class's calls 1-15 go
 * the first way (through the cache), and the try of the other way at the
 * 16th is gcoll_shm_adapt_try_calls calls (5 at 16 KiB), the first untimed (it pays for the change of way: a
 * try timed cold lost every time at 8 KiB and left the class on the slower
 * way, 1.5-1.9 against 0.7-0.9 us); the results match MPI's throughout. */
static void write_way_tries(void)
{
    gcoll_shm_t *main_shm;
    int saved;
    if (size < 2 || !auto_segment_in(&main_shm, &saved)) return;
    size_t n = (16u << 10) / 4 + 3;   /* a one-step allreduce that chooses its way */
    int end = 15 + (int)gcoll_shm_adapt_try_calls(gcoll_shm_adapt_class(n * 4));   /* the try's last */
    float *src = xmalloc(n * 4), *dst = xmalloc(n * 4), *ref = xmalloc(n * 4);
    for (int call = 1; call <= end + 3; call++) {
        for (size_t i = 0; i < n; i++) src[i] = (float)((i * 7 + (size_t)rank + (size_t)call) % 13);
        MPI_Allreduce(src, ref, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        gcoll_shm_op_t o;
        gcoll_status_t st = op_run(&o, GCOLL_COLL_ALLREDUCE, src, dst, n, GCOLL_FLOAT32,
                                   GCOLL_SUM, 0, 0);
        if (st) FAIL("auto write way, call %d: %s", call, gcoll_last_error());
        if (memcmp(dst, ref, n * 4)) FAIL("auto write way, call %d: result differs from MPI's", call);
        int want = call >= 16 && call <= end;
        if (call <= end && o.stream != want)
            FAIL("auto write way, call %d: streamed=%d, want %d (calls 1-15 through the cache, "
                 "16-%d the try)", call, o.stream, want, end);
    }
    free(ref);
    free(dst);
    free(src);
    auto_segment_out(main_shm, saved);
}

/* A reduce's non-roots write what its root reads, so the root times the
 * write way and its non-roots take the root's way from the segment (a
 * hint).  On a fresh segment with GCOLL_SHM_STREAM=auto, reduces to rank
 * 0 through the ring (16 KiB) and the pipeline (128 KiB): calls 1-15
 * through the cache on every rank, the root's try streamed (calls 16-20 at
 * 16 KiB, 16-17 at 128 KiB: gcoll_shm_adapt_try_calls), and a non-root,
 * which takes the root's way of this call or the last (a barrier before
 * each call: ring writers may run calls ahead), streams from call 17 to the
 * try's last; the results match MPI's. */
static void reduce_write_way(void)
{
    gcoll_shm_t *main_shm;
    int saved;
    if (size < 2 || !auto_segment_in(&main_shm, &saved)) return;
    static const size_t kib[] = { 16, 128 };   /* the ring; the pipeline, no single copy */
    for (int f = 0; f < 2; f++) {
        size_t n = (kib[f] << 10) / 4 + 3;
        int end = 15 + (int)gcoll_shm_adapt_try_calls(gcoll_shm_adapt_class(n * 4));
        float *src = xmalloc(n * 4), *dst = xmalloc(n * 4), *ref = xmalloc(n * 4);
        for (int call = 1; call <= end + 3; call++) {
            for (size_t i = 0; i < n; i++) src[i] = (float)((i * 5 + (size_t)rank + (size_t)call) % 11);
            MPI_Reduce(src, ref, (int)n, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
            MPI_Barrier(MPI_COMM_WORLD);
            gcoll_shm_op_t o;
            gcoll_status_t st = op_run(&o, GCOLL_COLL_REDUCE, src, dst, n, GCOLL_FLOAT32,
                                       GCOLL_SUM, 0, 0);
            if (st) FAIL("auto reduce write way, %zu KiB, call %d: %s", kib[f], call, gcoll_last_error());
            if (f == 0 ? o.seq == 0 : o.seq != 0 || o.last != o.n + 1)
                FAIL("auto reduce write way, %zu KiB: not the %s", kib[f],
                     f == 0 ? "ring" : "pipeline");
            if (rank == 0 && memcmp(dst, ref, n * 4))
                FAIL("auto reduce write way, %zu KiB, call %d: result differs from MPI's", kib[f], call);
            int want = call >= (rank == 0 ? 16 : 17) && call <= end;
            if ((call <= 15 || (call >= 17 && call <= end) || (rank == 0 && call == 16)) &&
                o.stream != want)
                FAIL("auto reduce write way, %zu KiB, %s, call %d: streamed=%d, want %d (calls "
                     "1-15 through the cache, the root's try at 16-%d, its non-roots' 17-%d)",
                     kib[f], rank == 0 ? "root" : "non-root", call, o.stream, want, end, end);
        }
        free(ref);
        free(dst);
        free(src);
    }
    auto_segment_out(main_shm, saved);
}

/* A ring bcast's root chooses its write way from its own copy's time and
 * the reader's, which the rank after the root measures on the payloads it
 * copies out (each marked with its way) and publishes in its control
 * block (shm_ring.c).  On a fresh segment with GCOLL_SHM_STREAM=auto, 20
 * bcasts of 16 KiB from each root in turn, a barrier before each: the root
 * streams exactly at its try (calls 16-20: gcoll_shm_adapt_try_calls;
 * after it, either way); the measuring reader sees each payload's way
 * (o.stream) and, by the try's end, has published the cost of both ways; the other readers time nothing (o.cls 0); the results match
 * MPI's. */
static void ring_bcast_way(void)
{
    gcoll_shm_t *main_shm;
    int saved;
    if (size < 2 || !auto_segment_in(&main_shm, &saved)) return;
    size_t n = (16u << 10) + 3;
    int cls = gcoll_shm_adapt_class(n) - GCOLL_SHM_RING_WAY_CLS0;
    unsigned char *buf = xmalloc(n), *ref = xmalloc(n);
    int end = 15 + (int)gcoll_shm_adapt_try_calls(gcoll_shm_adapt_class(n));   /* the try's last */
    for (int root = 0; root < size && root < 3; root++) {
        int reader = (root + 1) % size;
        for (int call = 1; call <= end + 3; call++) {
            for (size_t i = 0; i < n; i++) buf[i] = ref[i] = byte_of(i, (unsigned)(call * 31 + root));
            if (rank != root) memset(buf, 0, n);
            MPI_Bcast(ref, (int)n, MPI_BYTE, root, MPI_COMM_WORLD);
            MPI_Barrier(MPI_COMM_WORLD);
            gcoll_shm_op_t o;
            gcoll_status_t st = op_run(&o, GCOLL_COLL_BCAST, NULL, buf, n, GCOLL_UINT8, GCOLL_SUM,
                                       root, 0);
            if (st) FAIL("ring bcast way, root %d, call %d: %s", root, call, gcoll_last_error());
            if (o.seq == 0) FAIL("ring bcast way, root %d: not the ring", root);
            if (memcmp(buf, ref, n)) FAIL("ring bcast way, root %d, call %d: result differs from MPI's",
                                          root, call);
            int want = call >= 16 && call <= end;
            if ((rank == root || rank == reader) && call <= end && o.stream != want)
                FAIL("ring bcast way, root %d, call %d, %s: streamed=%d, want %d (calls 1-15 through "
                     "the cache, the try at 16-%d)", root, call, rank == root ? "root" : "reader",
                     o.stream, want, end);
            if (rank != root && rank != reader && o.cls)
                FAIL("ring bcast way, root %d: rank %d timed its copy; only rank %d measures", root,
                     rank, reader);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        for (int w = 0; w < 2; w++)
            if (!atomic_load(&shm->ctrl[reader].ring_cost[cls][w]))
                FAIL("ring bcast way, root %d: rank %d published no cost of way %d", root, reader, w);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    free(ref);
    free(buf);
    auto_segment_out(main_shm, saved);
}

/* The root's way costs its own copy plus the reader's.  With the
 * reader's published cost of the streamed way made huge (1000 ns per
 * byte; rank 1 writes it after each of its calls, over what it measured,
 * and a barrier orders that before the root's next call), 32 KiB bcasts
 * from rank 0 must stay through the cache after the try (calls 16-18).
 * The root's own copy alone is cheaper streamed at 32 KiB in both of the
 * Zen 4 guest's states (0.043 against 0.077 ns per byte slow, 0.04
 * against 0.39 busy), so a root that left the reader's cost out would
 * switch there. */
static void ring_bcast_way_sum(void)
{
    gcoll_shm_t *main_shm;
    int saved;
    if (size < 2 || !auto_segment_in(&main_shm, &saved)) return;
    size_t n = GCOLL_SHM_RING_SLOT;
    int cls = gcoll_shm_adapt_class(n) - GCOLL_SHM_RING_WAY_CLS0;
    float cheap = 1e-6f, dear = 1e3f;
    uint32_t bits[2];
    memcpy(&bits[0], &cheap, sizeof(cheap));
    memcpy(&bits[1], &dear, sizeof(dear));
    int end = 15 + (int)gcoll_shm_adapt_try_calls(gcoll_shm_adapt_class(n));   /* the try's last */
    unsigned char *buf = xmalloc(n);
    for (int call = 1; call <= end + 7; call++) {
        memset(buf, rank == 0 ? call : 0, n);
        MPI_Barrier(MPI_COMM_WORLD);
        gcoll_shm_op_t o;
        gcoll_status_t st = op_run(&o, GCOLL_COLL_BCAST, NULL, buf, n, GCOLL_UINT8, GCOLL_SUM, 0, 0);
        if (st) FAIL("ring bcast way sum, call %d: %s", call, gcoll_last_error());
        if (buf[0] != (unsigned char)call || buf[n - 1] != (unsigned char)call)
            FAIL("ring bcast way sum, call %d: wrong bytes", call);
        if (rank == 1)
            for (int w = 0; w < 2; w++) atomic_store(&shm->ctrl[1].ring_cost[cls][w], bits[w]);
        if (rank == 0 && call > end && o.stream)
            FAIL("ring bcast way sum: the root streamed at call %d, though its reader's cost of "
                 "that way is 1000 ns per byte", call);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    free(buf);
    auto_segment_out(main_shm, saved);
}

/* Reduces of float32 (4 B) that take the single copy where each rank's
 * slice reaches GCOLL_SHM_CMA_REDUCE_SLICE: just under it, at it, and with
 * slices over one phase's 1 MiB, not divisible by the ranks; every root
 * (an in-place root after rank 1 accumulates in scratch), in place or not,
 * against MPI's and the serial reference. */
static void single_copy_reduces(int on, unsigned *seed)
{
    size_t at = GCOLL_SHM_CMA_REDUCE_SLICE / 4 * (size_t)size;
    size_t elems[] = { at - 1, at, (1u << 18) * (size_t)size + 5 };
    int takes[] = { 0, 1, 1 };
    for (size_t c = 0; c < NELEMS(elems); c++)
        for (int root = 0; root < size; root++)
            for (int ip = 0; ip < 2; ip++) {
                uint64_t before = gcoll_shm_cma_calls(shm);
                test_reduce(elems[c], GCOLL_FLOAT32, ip ? GCOLL_SUM : GCOLL_PROD, ip, root, (*seed)++);
                uint64_t want = before + (size > 1 && on && takes[c]);
                if (gcoll_shm_cma_calls(shm) != want)
                    FAIL("reduce of %zu x 4 B to %d%s: %llu single-copy calls, want %llu", elems[c],
                         root, ip ? " in place" : "", (unsigned long long)gcoll_shm_cma_calls(shm),
                         (unsigned long long)want);
            }
}

/* An allreduce started with flags and run to the end (a busy loop, as
 * check_way); its pipeline chunks in *chunks (0: the one-step form). */
static void allreduce_flags(size_t n, gcoll_dtype_t dt, gcoll_op_t op, int inplace,
                            unsigned flags, unsigned seed, size_t *chunks)
{
    char what[160];
    size_t dts = gcoll_dtype_size(dt);
    snprintf(what, sizeof(what), "allreduce flags=%u n=%zu %s %s%s", flags, n,
             gcoll_dtype_name(dt), gcoll_op_name(op), inplace ? " in-place" : "");
    void *src = xmalloc(n * dts), *dst = inplace ? src : xmalloc(n * dts), *mpi = xmalloc(n * dts);
    fill(src, 0, n, dt, op, seed);
    MPI_Allreduce(src, mpi, (int)n, mpi_dtype(dt), mpi_op(op), MPI_COMM_WORLD);
    gcoll_shm_op_t o;
    gcoll_status_t st = op_run(&o, GCOLL_COLL_ALLREDUCE, src, dst, n, dt, op, 0, flags);
    if (st) FAIL("%s: %s: %s", what, gcoll_strerror(st), gcoll_last_error());
    *chunks = o.n;
    expect_ref(what, dst, 0, n, dt, op, seed);
    expect_same(what, dst, mpi, n * dts);
    free(mpi);
    if (!inplace) free(dst);
    free(src);
}

/* shm_sliced's form (GCOLL_SHM_SLICED): the pipeline at every size, where
 * shm runs one step below shm_small_max; each size must run the form it
 * names, and give MPI's result bit for bit: tiny (inline for shm), fewer
 * elements than ranks' 64-byte slices, primes, past one chunk. */
static void run_sliced(void)
{
    static const size_t ns[] = { 1, 7, 14, 15, 17, 1023, 4099, 16411, 65537, (1u << 17) + 3 };
    static const gcoll_dtype_t dts[] = { GCOLL_FLOAT32, GCOLL_INT32, GCOLL_FLOAT64 };
    unsigned seed = 11000;
    for (size_t i = 0; i < NELEMS(ns); i++)
        for (size_t d = 0; d < NELEMS(dts); d++)
            for (int ip = 0; ip < 2; ip++) {
                gcoll_op_t op = dts[d] == GCOLL_INT32 ? GCOLL_MAX : GCOLL_SUM;
                size_t sliced, plain;
                allreduce_flags(ns[i], dts[d], op, ip, GCOLL_SHM_SLICED, seed++, &sliced);
                allreduce_flags(ns[i], dts[d], op, ip, 0, seed++, &plain);
                if (size > 1 && !sliced)
                    FAIL("allreduce of %zu %s, sliced: ran the one-step form", ns[i],
                         gcoll_dtype_name(dts[d]));
                if (size > 1 && ns[i] == 1023 && plain)
                    FAIL("allreduce of 1023 %s without the flag: ran the pipeline (%zu chunks), "
                         "so this test cannot tell the forms apart", gcoll_dtype_name(dts[d]),
                         plain);
            }
}

/* Where an op puts its data (shm_coll.c): one-step allreduces of 32 KiB
 * take a new place each time they use a parity's window, inside it; 4 KiB
 * ones stay at its start.  Each op's phase-0 place is read off before it
 * runs; ops i and i + 2 write the same parity. */
static void run_places(void)
{
    if (size < 2) return;
    static const size_t counts_[] = { 8192, 1024 };   /* float32: 32 KiB, 4 KiB */
    for (size_t c = 0; c < NELEMS(counts_); c++) {
        size_t n = counts_[c];
        float *src = xmalloc(n * 4), *dst = xmalloc(n * 4);
        fill(src, 0, n, GCOLL_FLOAT32, GCOLL_SUM, 12000);
        unsigned char *at[6];
        for (int i = 0; i < 6; i++) {
            gcoll_shm_op_t o;
            gcoll_status_t st = gcoll_shm_op_start(shm, &o, GCOLL_COLL_ALLREDUCE, src, dst, n,
                                                   GCOLL_FLOAT32, GCOLL_SUM, 0, 0);
            int wp = gcoll_shm_wpar(shm);
            at[i] = gcoll_shm_area(shm, rank, wp);
            int done = 0;
            while (!st && !done) st = gcoll_shm_op_progress(shm, &o, &done);
            if (st) FAIL("places, %zu floats: %s", n, gcoll_last_error());
            expect_ref("places", dst, 0, n, GCOLL_FLOAT32, GCOLL_SUM, 12000);
        }
        int moved = at[0] != at[2] && at[2] != at[4] && at[1] != at[3];
        if (n * 4 >= 8192 && !moved)
            FAIL("allreduces of %zu B: the same place in consecutive uses of a window", n * 4);
        if (n * 4 < 8192 && moved)
            FAIL("allreduces of %zu B moved through the window (below 8 KiB they stay)", n * 4);
        unsigned char *windows = shm->data + (size_t)rank * shm->region;   /* both parities */
        for (int i = 0; i < 6; i++)
            if (at[i] < windows || at[i] + n * 4 > windows + 2 * shm->window)
                FAIL("allreduce of %zu B placed outside this rank's windows", n * 4);
        free(dst);
        free(src);
    }
}

/* 40 reduces of n float32 to root, back to back, each checked on the root
 * against the serial sum (small integers: exact); the forms every rank
 * took must agree (a disagreement hangs or corrupts). */
static void reduce_back_to_back(size_t n, int root)
{
    enum { CALLS = 40 };
    float *in = xmalloc(n * 4 * CALLS), *out = xmalloc(n * 4 * CALLS);
    for (int i = 0; i < CALLS; i++)
        for (size_t k = 0; k < n; k++)
            in[(size_t)i * n + k] = (float)(((size_t)rank * 7 + (size_t)i * 3 + k) % 17);
    uint64_t cma0 = gcoll_shm_cma_calls(shm);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < CALLS; i++) {
        gcoll_status_t st = gcoll_shm_reduce(shm, in + (size_t)i * n, out + (size_t)i * n, n,
                                             GCOLL_FLOAT32, GCOLL_SUM, root);
        if (st) FAIL("back-to-back reduce %d of %zu B to %d: %s", i, n * 4, root, gcoll_last_error());
    }
    for (int i = 0; rank == root && i < CALLS; i++)
        for (size_t k = 0; k < n; k++) {
            float want = 0;
            for (int r = 0; r < size; r++) want += (float)(((size_t)r * 7 + (size_t)i * 3 + k) % 17);
            if (out[(size_t)i * n + k] != want) {
                FAIL("back-to-back reduce %d of %zu B to %d: [%zu] = %g, want %g", i, n * 4, root,
                     k, (double)out[(size_t)i * n + k], (double)want);
                break;
            }
        }
    long long got = (long long)(gcoll_shm_cma_calls(shm) - cma0), lo, hi;
    MPI_Allreduce(&got, &lo, 1, MPI_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&got, &hi, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    if (lo != hi)
        FAIL("back-to-back reduces of %zu B to %d: ranks disagree on the single copies (%lld-%lld)",
             n * 4, root, lo, hi);
    free(out);
    free(in);
}

/* GCOLL_SHM_CMA=auto (shm_coll.c, "The reduce's form") on a new segment
 * (nothing learnt yet): per root, 40 large reduces of one size class start
 * with the single copy, and the root's scheduled try of the copying form
 * comes by its 17th call whatever the timings; every rank must count the
 * same forms (they agree per call through the segment: a disagreement
 * hangs or corrupts, which the checks against MPI see), the results right
 * either way. */
static void reduce_forms_auto(unsigned *seed)
{
    int saved = cfg.shm_cma;
    gcoll_shm_t *main_shm;
    cfg.shm_cma = GCOLL_SHM_CMA_AUTO;
    if (!segment_swap_in("with GCOLL_SHM_CMA=auto", &main_shm)) {
        cfg.shm_cma = saved;
        return;
    }
    size_t n = GCOLL_SHM_CMA_REDUCE_SLICE / 4 * (size_t)size * 2 + 3;
    for (int root = 0; root < size; root++) {
        uint64_t cma0 = gcoll_shm_cma_calls(shm), copies0 = shm->reduce_copies;
        for (int i = 0; i < 40; i++)
            test_reduce(n, GCOLL_FLOAT32, GCOLL_SUM, i % 3 == 0, root, (*seed)++);
        long long got[2] = { (long long)(gcoll_shm_cma_calls(shm) - cma0),
                             (long long)(shm->reduce_copies - copies0) }, lo[2], hi[2];
        MPI_Allreduce(got, lo, 2, MPI_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
        MPI_Allreduce(got, hi, 2, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
        if (lo[0] != hi[0] || lo[1] != hi[1])
            FAIL("auto reduce forms, root %d: ranks disagree (single copy %lld-%lld, copying "
                 "%lld-%lld)", root, lo[0], hi[0], lo[1], hi[1]);
        if (got[0] + got[1] != 40 || got[0] < 16 || got[1] < 2)
            FAIL("auto reduce forms, root %d: %lld single copies and %lld copying of 40 (want 16 "
                 "or more single copies first, then a try of the copying form: two calls or more)", root,
                 got[0], got[1]);
    }
    /* back to back, no MPI call between them to hold a rank back: a
     * non-root leaves each reduce at its last step and starts the next one
     * before the root has finished */
    for (int root = 0; root < size; root++) reduce_back_to_back(n, root);
    segment_swap_out(main_shm);
    cfg.shm_cma = saved;
}

/* Whether this rank's single-copy calls grew by want since before. */
static void expect_single(const char *what, uint64_t before, int want)
{
    uint64_t got = gcoll_shm_cma_calls(shm) - before;
    if (got != (uint64_t)want)
        FAIL("%s: %llu single-copy calls, want %d", what, (unsigned long long)got, want);
}

/* An allgather of n float32 with GCOLL_SHM_SINGLE (shm_cma): every peer's
 * block read straight into dst, against MPI's; one single copy on every
 * rank where the node has CMA (on), none where it copies instead. */
static void single_copy_allgather(size_t n, int inplace, int on, unsigned seed)
{
    char what[160];
    size_t off = gcoll_block_off(n, size, rank) * 4, len = gcoll_block_len(n, size, rank) * 4;
    snprintf(what, sizeof(what), "single-copy allgather of %zu float32%s", n, inplace ? " in place" : "");
    unsigned char *dst = xmalloc(n * 4), *mpi = xmalloc(n * 4), *src = inplace ? dst + off : xmalloc(len);
    for (size_t i = 0; i < len; i++) src[i] = byte_of(off + i, seed);
    int rc[size], displ[size];
    for (int j = 0; j < size; j++) {
        rc[j] = (int)(gcoll_block_len(n, size, j) * 4);
        displ[j] = (int)(gcoll_block_off(n, size, j) * 4);
    }
    MPI_Allgatherv(src, (int)len, MPI_BYTE, mpi, rc, displ, MPI_BYTE, MPI_COMM_WORLD);
    uint64_t before = gcoll_shm_cma_calls(shm);
    gcoll_shm_op_t o;
    gcoll_status_t st = op_run(&o, GCOLL_COLL_ALLGATHER, src, dst, n, GCOLL_FLOAT32, GCOLL_SUM, 0,
                               GCOLL_SHM_SINGLE);
    if (st) FAIL("%s: %s", what, gcoll_last_error());
    expect_same(what, dst, mpi, n * 4);
    expect_single(what, before, size > 1 && on);
    if (!inplace) free(src);
    free(mpi);
    free(dst);
}

/* A bcast of `bytes` from root with GCOLL_SHM_SINGLE: every rank reads the
 * root's buffer, against MPI's. */
static void single_copy_bcast(size_t bytes, int root, int on, unsigned seed)
{
    char what[160];
    snprintf(what, sizeof(what), "single-copy bcast of %zu B from %d", bytes, root);
    unsigned char *buf = xmalloc(bytes), *mpi = xmalloc(bytes);
    for (size_t i = 0; i < bytes; i++) buf[i] = mpi[i] = rank == root ? byte_of(i, seed) : 0;
    MPI_Bcast(mpi, (int)bytes, MPI_BYTE, root, MPI_COMM_WORLD);
    uint64_t before = gcoll_shm_cma_calls(shm);
    gcoll_shm_op_t o;
    gcoll_status_t st = op_run(&o, GCOLL_COLL_BCAST, NULL, buf, bytes, GCOLL_UINT8, GCOLL_SUM, root,
                               GCOLL_SHM_SINGLE);
    if (st) FAIL("%s: %s", what, gcoll_last_error());
    expect_same(what, buf, mpi, bytes);
    expect_single(what, before, size > 1 && on);
    free(mpi);
    free(buf);
}

/* shm_cma's forms: sizes of one element (fewer than the ranks), a prime,
 * and a result past 16 MiB (GCOLL_SHM_NT_MIN: the own block is streamed
 * into it) in blocks past one phase's 4 MiB, not divisible by the ranks. */
static void single_copy_forms(int on, unsigned *seed)
{
    static const size_t elems[] = { 1, 4099 };
    for (size_t c = 0; c <= NELEMS(elems); c++)
        for (int ip = 0; ip < 2; ip++)
            single_copy_allgather(c < NELEMS(elems) ? elems[c] : (4u << 20) + 5, ip,
                                  on, (*seed)++);
    static const size_t bytes[] = { 1, 4099, (4u << 20) + 3 };
    for (size_t c = 0; c < NELEMS(bytes); c++)
        for (int root = 0; root < size; root++) single_copy_bcast(bytes[c], root, on, (*seed)++);
}

/* The single copy (shm_cma.c) on the main segment: with GCOLL_SHM_CMA=on
 * every reduce whose slices reach GCOLL_SHM_CMA_REDUCE_SLICE takes it
 * (with auto, see reduce_forms_auto), no allgather or bcast
 * does unless its flags ask for it (shm_cma, single_copy_forms); the
 * results match MPI's either way.  run_shm.sh sets
 * GCOLL_TEST_EXPECT_CMA=1 where the ranks may read each other's memory
 * (no Yama restriction), so a probe that wrongly says no fails here. */
static void run_single_copy(void)
{
    int on = gcoll_shm_cma_takes(shm, SIZE_MAX);
    const char *expect = getenv("GCOLL_TEST_EXPECT_CMA");
    if (size > 1 && !on && expect && !strcmp(expect, "1"))
        FAIL("the single-copy reduce is off, and this machine allows it (see the INFO log)");
    if (rank == 0 && size > 1 && !on) printf("test_shm: single-copy reduce off here\n");
    /* allgathers and bcasts copy through the segment at every size */
    unsigned seed = 9000;
    uint64_t before = gcoll_shm_cma_calls(shm);
    for (int ip = 0; ip < 2; ip++) test_allgather((1u << 19) * (size_t)size + 7, 4, ip, seed++);
    test_bcast((1u << 20) + 1, size - 1, seed++);
    if (gcoll_shm_cma_calls(shm) != before)
        FAIL("allgathers and bcasts ran %llu single copies (they copy through the segment)",
             (unsigned long long)(gcoll_shm_cma_calls(shm) - before));
    single_copy_forms(on, &seed);
    int saved = cfg.shm_cma;
    cfg.shm_cma = GCOLL_SHM_CMA_ON;
    single_copy_reduces(on, &seed);
    cfg.shm_cma = saved;
    if (on) reduce_forms_auto(&seed);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int bench = argc > 1 && !strcmp(argv[1], "-b");
    if (gcoll_config_load(&cfg) != GCOLL_SUCCESS) {
        fprintf(stderr, "FAIL rank %d: gcoll_config_load: %s\n", rank, gcoll_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    gcoll_status_t st = gcoll_shm_create(MPI_COMM_WORLD, MPI_COMM_WORLD, &cfg, &shm);
    if (st) {
        fprintf(stderr, "FAIL rank %d: gcoll_shm_create: %s\n", rank, gcoll_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (bench) {
        run_bench();
    } else {
        run_args();
        run_matrix();
        run_write_ways();
        run_single_copy();
        run_sliced();
        run_places();
        run_back_to_back();
        run_ring();
        test_barrier();
        run_wakeups();
        run_timeout();
    }
    gcoll_shm_destroy(shm);
    int all;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && !bench) printf("test_shm: %d ranks: %s (%d failures)\n", size, all ? "FAIL" : "ok", all);
    MPI_Finalize();
    return all ? 1 : 0;
}
