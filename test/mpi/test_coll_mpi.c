/* SPDX-License-Identifier: BSD-3-Clause */
/* MPI correctness driver: every libgcoll collective against the system MPI's
 * own collective on the same inputs, compared bit for bit.
 *
 * Inputs are integer-valued (floats too), small enough that sums and products
 * are exact in every type, so any reduction order gives the same bits and a
 * bit-for-bit comparison is fair.  float16/bfloat16 have no MPI type in Open
 * MPI 4.1: their reductions are checked against a serial reference computed
 * here from all ranks' inputs (gathered with MPI_Allgather, reduced in double,
 * rounded with this file's own round-to-nearest-even encoder, independent of
 * the library's).  Data-movement collectives use MPI_UINT16_T for them.
 *
 * Matrix: counts 0, 1, 7, 1023 run every dtype x op, in place and out of
 * place, every root; the two large counts (65537, 2^20+3) run a subset
 * (float32/int64/bfloat16 x sum/max) so one run at 4 oversubscribed ranks
 * stays within a couple of minutes.  Also: barrier synchronisation, NaN
 * propagation of min/max, gcoll_comm_get_stats counters, const-ness of send
 * buffers.
 *
 * Usage: test_coll_mpi [--coll NAME] [--log PREFIX] [-v]
 * Prints one line per failure and, on rank 0, "test_coll_mpi: N checks, M
 * failures"; exits non-zero on any failure on any rank.  --log: each rank's
 * stderr (libgcoll's GCOLL_DEBUG lines) goes to PREFIX.<rank>, whole lines
 * (mpirun forwards the ranks' stderr in pieces that can interleave), for
 * run_coll.sh to tell from them which algorithm ran. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <mpi.h>
#include "gcoll.h"

enum { K_SINT, K_UINT, K_FLOAT, K_HALF };

typedef struct {
    gcoll_dtype_t dt;
    MPI_Datatype  mpi;       /* MPI_DATATYPE_NULL: reductions use the serial reference */
    size_t        size;
    int           kind;
    int           mant_bits; /* K_HALF: stored significand bits */
    int           bias;      /* K_HALF: exponent bias */
} dtinfo_t;

#define MAX_FAIL_LINES 40   /* per rank: one broken kernel must not flood the log */
#define NO_ROOT (-1)
#define NO_OP   ((gcoll_op_t)-1)

static struct {
    gcoll_comm_t comm;
    int          rank, size;
    int          verbose;
    const char  *only;       /* --coll */
    const char  *log;        /* --log */
    long         checks, failures;
    dtinfo_t     types[GCOLL_DTYPE_COUNT];
} T;

/* What one check is about, for its failure line. */
typedef struct {
    const char     *coll;
    const dtinfo_t *d;
    gcoll_op_t      op;
    size_t          count;
    int             root;
    int             inplace;
} case_t;

static const size_t counts[] = {0, 1, 7, 1023, 65537, (1u << 20) + 3};
#define NCOUNTS (sizeof(counts) / sizeof(counts[0]))
#define SMALL_MAX 1023

/* ------------------------------------------------------------ types ---- */

static void types_init(void)
{
    static const struct { gcoll_dtype_t dt; int kind, mb, bias; } k[] = {
        {GCOLL_INT8, K_SINT, 0, 0},    {GCOLL_UINT8, K_UINT, 0, 0},
        {GCOLL_INT32, K_SINT, 0, 0},   {GCOLL_UINT32, K_UINT, 0, 0},
        {GCOLL_INT64, K_SINT, 0, 0},   {GCOLL_UINT64, K_UINT, 0, 0},
        {GCOLL_FLOAT16, K_HALF, 10, 15}, {GCOLL_BFLOAT16, K_HALF, 7, 127},
        {GCOLL_FLOAT32, K_FLOAT, 0, 0}, {GCOLL_FLOAT64, K_FLOAT, 0, 0},
    };
    MPI_Datatype mpi[] = {MPI_INT8_T, MPI_UINT8_T, MPI_INT32_T, MPI_UINT32_T, MPI_INT64_T,
                          MPI_UINT64_T, MPI_DATATYPE_NULL, MPI_DATATYPE_NULL, MPI_FLOAT, MPI_DOUBLE};
    size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8};
    for (int i = 0; i < GCOLL_DTYPE_COUNT; i++)
        T.types[k[i].dt] = (dtinfo_t){k[i].dt, mpi[i], sizes[i], k[i].kind, k[i].mb, k[i].bias};
}

/* Type MPI moves the bytes of d with (no arithmetic). */
static MPI_Datatype move_type(const dtinfo_t *d)
{
    return d->kind == K_HALF ? MPI_UINT16_T : d->mpi;
}

/* Encode x in a 16-bit float with `mb` significand bits, round to nearest
 * even (nearbyint in the default rounding mode).  Written from the format's
 * definition, not shared with the library, so it is an independent reference. */
static uint16_t half_encode(const dtinfo_t *d, double x)
{
    int mb = d->mant_bits, bias = d->bias, e;
    uint16_t sign = signbit(x) ? 0x8000 : 0, inf = (uint16_t)((2 * bias + 1) << mb);
    if (isnan(x)) return (uint16_t)(inf | (1u << (mb - 1)));
    x = fabs(x);
    if (x == 0) return sign;
    if (isinf(x)) return sign | inf;
    frexp(x, &e);
    int ex = e - 1 < 1 - bias ? 1 - bias : e - 1;  /* subnormals share the minimum exponent */
    double q = ldexp(1.0, ex - mb);
    double r = nearbyint(x / q) * q;
    frexp(r, &e);
    ex = e - 1;
    if (ex > bias) return sign | inf;
    if (ex < 1 - bias) return (uint16_t)(sign | (uint16_t)(r / ldexp(1.0, 1 - bias - mb)));
    uint32_t m = (uint32_t)(r / ldexp(1.0, ex - mb)) - (1u << mb);
    return (uint16_t)(sign | ((uint32_t)(ex + bias) << mb) | m);
}

static double half_decode(const dtinfo_t *d, uint16_t h)
{
    int mb = d->mant_bits, bias = d->bias;
    unsigned e = (h & 0x7fff) >> mb, m = h & ((1u << mb) - 1), emax = 2 * bias + 1;
    double s = (h & 0x8000) ? -1.0 : 1.0;
    if (e == emax) return m ? NAN : s * INFINITY;
    if (e == 0) return s * ldexp(m, 1 - bias - mb);
    return s * ldexp(m + (1u << mb), (int)e - bias - mb);
}

static double load(const dtinfo_t *d, const void *buf, size_t i)
{
    switch (d->dt) {
    case GCOLL_INT8:     return ((const int8_t *)buf)[i];
    case GCOLL_UINT8:    return ((const uint8_t *)buf)[i];
    case GCOLL_INT32:    return ((const int32_t *)buf)[i];
    case GCOLL_UINT32:   return ((const uint32_t *)buf)[i];
    case GCOLL_INT64:    return (double)((const int64_t *)buf)[i];
    case GCOLL_UINT64:   return (double)((const uint64_t *)buf)[i];
    case GCOLL_FLOAT32:  return ((const float *)buf)[i];
    case GCOLL_FLOAT64:  return ((const double *)buf)[i];
    default:             return half_decode(d, ((const uint16_t *)buf)[i]);
    }
}

static void store(const dtinfo_t *d, void *buf, size_t i, double v)
{
    switch (d->dt) {
    case GCOLL_INT8:     ((int8_t *)buf)[i] = (int8_t)v; break;
    case GCOLL_UINT8:    ((uint8_t *)buf)[i] = (uint8_t)v; break;
    case GCOLL_INT32:    ((int32_t *)buf)[i] = (int32_t)v; break;
    case GCOLL_UINT32:   ((uint32_t *)buf)[i] = (uint32_t)v; break;
    case GCOLL_INT64:    ((int64_t *)buf)[i] = (int64_t)v; break;
    case GCOLL_UINT64:   ((uint64_t *)buf)[i] = (uint64_t)v; break;
    case GCOLL_FLOAT32:  ((float *)buf)[i] = (float)v; break;
    case GCOLL_FLOAT64:  ((double *)buf)[i] = v; break;
    default:             ((uint16_t *)buf)[i] = half_encode(d, v); break;
    }
}

/* Element i as text, exact for 64-bit integers, with its bits for floats. */
static void format_elem(const dtinfo_t *d, const void *buf, size_t i, char *out, size_t len)
{
    const unsigned char *p = (const unsigned char *)buf + i * d->size;
    uint64_t bits = 0;
    memcpy(&bits, p, d->size);  /* little-endian hosts: low bytes first */
    if (d->dt == GCOLL_INT64)
        snprintf(out, len, "%lld", (long long)((const int64_t *)buf)[i]);
    else if (d->dt == GCOLL_UINT64)
        snprintf(out, len, "%llu", (unsigned long long)bits);
    else if (d->kind == K_SINT || d->kind == K_UINT)
        snprintf(out, len, "%.0f", load(d, buf, i));
    else
        snprintf(out, len, "%.9g (0x%llx)", load(d, buf, i), (unsigned long long)bits);
}

/* ----------------------------------------------------------- inputs ---- */

static uint32_t mix(int rank, size_t i)
{
    uint32_t h = (uint32_t)(i * 2654435761u) ^ (uint32_t)(rank + 1) * 0x9E3779B9u;
    h ^= h >> 15;
    h *= 0x85ebca6bu;
    return h ^ (h >> 13);
}

/* Wide types get high bits set too, so a kernel that truncates shows. */
static double scale_of(const dtinfo_t *d)
{
    if (d->kind == K_HALF || d->size == 1) return 1;
    if (d->size == 8) return d->kind == K_FLOAT ? 0x1p30 : 0x1p40;
    return d->kind == K_FLOAT ? 0x1p10 : 0x1p16;
}

/* Value of element i on rank `rank` for a reduction by `op`: small enough
 * that sums over dozens of ranks and products over any count stay exact and
 * in range (int8 sums: |v| <= 5, so MPI's saturating int8 sum, ompi#8045,
 * never saturates). */
static double gen_value(const dtinfo_t *d, gcoll_op_t op, int rank, size_t i)
{
    uint32_t h = mix(rank, i);
    int sgn = d->kind != K_UINT;
    if (op == GCOLL_PROD) {
        if (rank < 4 && h % 3 == 0) return 2;  /* at most 2^4 */
        return sgn && (h >> 8) % 2 ? -1 : 1;
    }
    double v = (op == GCOLL_SUM || op == GCOLL_AVG) ? (double)(h % 11) - 5 * sgn
                                                    : (double)(h % 201) - 100 * sgn;
    double s = scale_of(d);
    return s > 1 ? v * s + (double)((h >> 20) % 7) : v;
}

static void fill(const dtinfo_t *d, gcoll_op_t op, int rank, void *buf, size_t n)
{
    for (size_t i = 0; i < n; i++) store(d, buf, i, gen_value(d, op, rank, i));
}

static void *xmalloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "test_coll_mpi: out of memory (%zu bytes)\n", bytes);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

/* Output buffers start as garbage, so an element the library never wrote shows. */
static void *garbage(size_t bytes)
{
    return memset(xmalloc(bytes), 0xA5, bytes ? bytes : 1);
}

static void *dup_buf(const void *src, size_t bytes)
{
    return memcpy(xmalloc(bytes), src, bytes);
}

/* ------------------------------------------------------- reporting ---- */

static void describe(const case_t *c, char *out, size_t len)
{
    int n = snprintf(out, len, "%s dtype=%s", c->coll, gcoll_dtype_name(c->d->dt));
    if (c->op != NO_OP) n += snprintf(out + n, len - (size_t)n, " op=%s", gcoll_op_name(c->op));
    n += snprintf(out + n, len - (size_t)n, " count=%zu", c->count);
    if (c->root != NO_ROOT) n += snprintf(out + n, len - (size_t)n, " root=%d", c->root);
    snprintf(out + n, len - (size_t)n, " inplace=%d", c->inplace);
}

static void fail(const case_t *c, const char *fmt, ...)
{
    char what[256] = "";
    if (++T.failures > MAX_FAIL_LINES) return;
    if (c) describe(c, what, sizeof(what));
    va_list ap;
    va_start(ap, fmt);
    char msg[512];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    printf("FAIL rank %d: %s%s%s\n", T.rank, what, c ? ": " : "", msg);
    if (T.failures == MAX_FAIL_LINES) printf("FAIL rank %d: further failure lines suppressed\n", T.rank);
    fflush(stdout);
}

/* One check: false (and a failure line) if the call did not succeed. */
static int check_status(const case_t *c, gcoll_status_t st)
{
    T.checks++;
    if (st == GCOLL_SUCCESS) return 1;
    fail(c, "returned %d (%s): %s", (int)st, gcoll_strerror(st), gcoll_last_error());
    return 0;
}

/* One check: n elements of got against expected, bit for bit. */
static void check_equal(const case_t *c, const char *what, const void *got, const void *exp, size_t n)
{
    size_t sz = c->d->size;
    T.checks++;
    if (memcmp(got, exp, n * sz) == 0) return;
    size_t i = 0, bad = 0;
    while (memcmp((const char *)got + i * sz, (const char *)exp + i * sz, sz) == 0) i++;
    for (size_t j = i; j < n; j++)
        bad += memcmp((const char *)got + j * sz, (const char *)exp + j * sz, sz) != 0;
    char g[64], e[64];
    format_elem(c->d, got, i, g, sizeof(g));
    format_elem(c->d, exp, i, e, sizeof(e));
    fail(c, "%s: first bad index %zu got %s expected %s (%zu of %zu elements differ)",
         what, i, g, e, bad, n);
}

/* ------------------------------------------------------------ stats ---- */

static gcoll_stats_t stats_now(void)
{
    gcoll_stats_t s = {0, 0, 0};
    gcoll_status_t st = gcoll_comm_get_stats(T.comm, &s);
    if (st != GCOLL_SUCCESS) fail(NULL, "gcoll_comm_get_stats returned %d: %s", (int)st, gcoll_last_error());
    return s;
}

/* calls grows by one per collective (a count-0 call, which returns at once,
 * may or may not count); a non-empty allreduce over >1 ranks sends bytes. */
static void check_stats(const case_t *c, const gcoll_stats_t *before)
{
    gcoll_stats_t after = stats_now();
    uint64_t calls = after.calls - before->calls;
    T.checks++;
    if (calls != 1 && !(c->count == 0 && calls == 0))
        fail(c, "stats.calls grew by %llu, expected 1", (unsigned long long)calls);
    if (strcmp(c->coll, "allreduce") == 0 && c->count > 0 && T.size > 1) {
        T.checks++;
        if (after.bytes_sent == before->bytes_sent) fail(c, "stats.bytes_sent did not grow");
    }
}

/* -------------------------------------------------------- reference ---- */

static MPI_Op mpi_op(gcoll_op_t op)
{
    switch (op) {
    case GCOLL_PROD: return MPI_PROD;
    case GCOLL_MIN:  return MPI_MIN;
    case GCOLL_MAX:  return MPI_MAX;
    default:         return MPI_SUM;  /* AVG: sum, divided afterwards */
    }
}

/* The documented AVG: float IEEE division, integer C division (truncation). */
#define DIVIDE_ALL(T_, buf, n, p) \
    for (size_t i_ = 0; i_ < (n); i_++) ((T_ *)(buf))[i_] = (T_)(((T_ *)(buf))[i_] / (T_)(p))

static void divide(const dtinfo_t *d, void *buf, size_t n, int p)
{
    switch (d->dt) {
    case GCOLL_INT8:    DIVIDE_ALL(int8_t, buf, n, p); break;
    case GCOLL_UINT8:   DIVIDE_ALL(uint8_t, buf, n, p); break;
    case GCOLL_INT32:   DIVIDE_ALL(int32_t, buf, n, p); break;
    case GCOLL_UINT32:  DIVIDE_ALL(uint32_t, buf, n, p); break;
    case GCOLL_INT64:   DIVIDE_ALL(int64_t, buf, n, p); break;
    case GCOLL_UINT64:  DIVIDE_ALL(uint64_t, buf, n, p); break;
    case GCOLL_FLOAT32: DIVIDE_ALL(float, buf, n, p); break;
    case GCOLL_FLOAT64: DIVIDE_ALL(double, buf, n, p); break;
    default: break;  /* 16-bit floats: done in serial_reduce */
    }
}

static double apply(gcoll_op_t op, double a, double b)
{
    switch (op) {
    case GCOLL_PROD: return a * b;
    case GCOLL_MIN:  return isnan(a) || isnan(b) ? NAN : (b < a ? b : a);
    case GCOLL_MAX:  return isnan(a) || isnan(b) ? NAN : (b > a ? b : a);
    default:         return a + b;
    }
}

/* Reduction of n elements over all ranks, for types MPI cannot reduce: all
 * inputs gathered here, reduced in double (exact for these inputs), AVG's
 * division done in float32 as the library documents for 16-bit types. */
static void serial_reduce(const dtinfo_t *d, gcoll_op_t op, const void *send, void *out, size_t n)
{
    size_t bytes = n * d->size;
    char *all = xmalloc(bytes * (size_t)T.size);
    MPI_Allgather(send, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, MPI_COMM_WORLD);
    for (size_t i = 0; i < n; i++) {
        double acc = load(d, all, i);
        for (int r = 1; r < T.size; r++) acc = apply(op, acc, load(d, all + (size_t)r * bytes, i));
        if (op == GCOLL_AVG) acc = (double)((float)acc / (float)T.size);
        store(d, out, i, acc);
    }
    free(all);
}

/* Expected result of a reducing collective, computed by MPI's own collective
 * (or serially for 16-bit floats): allreduce/reduce: count elements (reduce:
 * on root only); reduce_scatter: this rank's count-element block. */
static void reference(const case_t *c, const void *send, void *out)
{
    const dtinfo_t *d = c->d;
    int n = (int)c->count;
    size_t full = strcmp(c->coll, "reduce_scatter") == 0 ? c->count * (size_t)T.size : c->count;
    if (d->mpi == MPI_DATATYPE_NULL) {
        char *tmp = xmalloc(full * d->size);
        serial_reduce(d, c->op, send, tmp, full);
        size_t off = full == c->count ? 0 : (size_t)T.rank * c->count * d->size;
        memcpy(out, tmp + off, c->count * d->size);
        free(tmp);
        return;
    }
    if (strcmp(c->coll, "allreduce") == 0)
        MPI_Allreduce(send, out, n, d->mpi, mpi_op(c->op), MPI_COMM_WORLD);
    else if (strcmp(c->coll, "reduce") == 0)
        MPI_Reduce(send, out, n, d->mpi, mpi_op(c->op), c->root, MPI_COMM_WORLD);
    else
        MPI_Reduce_scatter_block(send, out, n, d->mpi, mpi_op(c->op), MPI_COMM_WORLD);
    if (c->op == GCOLL_AVG) divide(d, out, c->count, T.size);
}

/* ------------------------------------------------------ collectives ---- */

static int selected(const char *coll)
{
    return T.only == NULL || strcmp(T.only, coll) == 0;
}

/* Full dtype x op matrix up to SMALL_MAX; a subset for the large counts. */
static int in_matrix(size_t count, const dtinfo_t *d, gcoll_op_t op)
{
    if (count <= SMALL_MAX) return 1;
    int dt_ok = d->dt == GCOLL_FLOAT32 || d->dt == GCOLL_INT64 || d->dt == GCOLL_BFLOAT16;
    return dt_ok && (op == NO_OP || op == GCOLL_SUM || op == GCOLL_MAX);
}

/* Every root, except at the largest count: first and last. */
static int root_in_matrix(size_t count, int root)
{
    return count <= counts[NCOUNTS - 2] || root == 0 || root == T.size - 1;
}

static void test_allreduce(const case_t *c)
{
    size_t bytes = c->count * c->d->size;
    void *send = xmalloc(bytes), *ref = xmalloc(bytes);
    fill(c->d, c->op, T.rank, send, c->count);
    void *keep = dup_buf(send, bytes);
    void *recv = c->inplace ? dup_buf(send, bytes) : garbage(bytes);
    reference(c, send, ref);
    const void *sbuf = c->inplace ? recv : send;
    void *rbuf = recv;
    if (c->count == 0 && !c->inplace) sbuf = rbuf = NULL;  /* count 0: NULL is valid */
    gcoll_stats_t before = stats_now();
    if (check_status(c, gcoll_allreduce(sbuf, rbuf, c->count, c->d->dt, c->op, T.comm))) {
        check_stats(c, &before);
        if (rbuf) check_equal(c, "recvbuf", rbuf, ref, c->count);
        if (!c->inplace) check_equal(c, "sendbuf modified", send, keep, c->count);
    }
    free(send); free(ref); free(keep); free(recv);
}

/* Out of place, non-roots pass recvbuf NULL (allowed: used on root only). */
static void test_reduce(const case_t *c)
{
    size_t bytes = c->count * c->d->size;
    int me_root = T.rank == c->root;
    void *send = xmalloc(bytes), *ref = xmalloc(bytes);
    fill(c->d, c->op, T.rank, send, c->count);
    void *keep = dup_buf(send, bytes);
    void *recv = c->inplace ? dup_buf(send, bytes) : me_root ? garbage(bytes) : NULL;
    reference(c, send, ref);
    const void *sbuf = c->inplace ? recv : send;
    gcoll_stats_t before = stats_now();
    if (check_status(c, gcoll_reduce(sbuf, recv, c->count, c->d->dt, c->op, c->root, T.comm))) {
        check_stats(c, &before);
        if (me_root) check_equal(c, "recvbuf on root", recv, ref, c->count);
        if (!c->inplace) check_equal(c, "sendbuf modified", send, keep, c->count);
    }
    free(send); free(ref); free(keep); free(recv);
}

static void test_reduce_scatter(const case_t *c)
{
    size_t blk = c->count * c->d->size, all = blk * (size_t)T.size;
    char *send = xmalloc(all);
    void *ref = xmalloc(blk);
    fill(c->d, c->op, T.rank, send, c->count * (size_t)T.size);
    void *keep = dup_buf(send, all);
    reference(c, send, ref);
    char *recv = c->inplace ? send + (size_t)T.rank * blk : garbage(blk);
    gcoll_stats_t before = stats_now();
    if (check_status(c, gcoll_reduce_scatter(send, recv, c->count, c->d->dt, c->op, T.comm))) {
        check_stats(c, &before);
        check_equal(c, "recvbuf", recv, ref, c->count);
        if (!c->inplace) check_equal(c, "sendbuf modified", send, keep, c->count * (size_t)T.size);
    }
    if (!c->inplace) free(recv);
    free(send); free(ref); free(keep);
}

static void test_bcast(const case_t *c)
{
    size_t bytes = c->count * c->d->size;
    void *ref = xmalloc(bytes);
    fill(c->d, GCOLL_MAX, T.rank, ref, c->count);
    void *buf = T.rank == c->root ? dup_buf(ref, bytes) : garbage(bytes);
    MPI_Bcast(ref, (int)c->count, move_type(c->d), c->root, MPI_COMM_WORLD);
    gcoll_stats_t before = stats_now();
    if (check_status(c, gcoll_bcast(buf, c->count, c->d->dt, c->root, T.comm))) {
        check_stats(c, &before);
        check_equal(c, "buf", buf, ref, c->count);
    }
    free(ref); free(buf);
}

static void test_allgather(const case_t *c)
{
    size_t blk = c->count * c->d->size, all = blk * (size_t)T.size;
    void *send = xmalloc(blk), *ref = xmalloc(all);
    char *recv = garbage(all);
    fill(c->d, GCOLL_MAX, T.rank, send, c->count);
    MPI_Allgather(send, (int)c->count, move_type(c->d), ref, (int)c->count, move_type(c->d),
                  MPI_COMM_WORLD);
    const void *sbuf = send;
    if (c->inplace) sbuf = memcpy(recv + (size_t)T.rank * blk, send, blk);
    gcoll_stats_t before = stats_now();
    if (check_status(c, gcoll_allgather(sbuf, recv, c->count, c->d->dt, T.comm))) {
        check_stats(c, &before);
        check_equal(c, "recvbuf", recv, ref, c->count * (size_t)T.size);
    }
    free(send); free(ref); free(recv);
}

static void test_alltoall(const case_t *c)
{
    size_t n = c->count * (size_t)T.size, all = n * c->d->size;
    void *send = xmalloc(all), *ref = xmalloc(all), *recv = garbage(all);
    fill(c->d, GCOLL_MAX, T.rank, send, n);
    void *keep = dup_buf(send, all);
    MPI_Alltoall(send, (int)c->count, move_type(c->d), ref, (int)c->count, move_type(c->d),
                 MPI_COMM_WORLD);
    gcoll_stats_t before = stats_now();
    if (check_status(c, gcoll_alltoall(send, recv, c->count, c->d->dt, T.comm))) {
        check_stats(c, &before);
        check_equal(c, "recvbuf", recv, ref, n);
        check_equal(c, "sendbuf modified", send, keep, n);
    }
    free(send); free(ref); free(recv); free(keep);
}

/* ------------------------------------------------------------ loops ---- */

typedef void (*test_fn)(const case_t *c);

static const struct { const char *name; test_fn fn; int reduces, rooted, has_inplace; } colls[] = {
    {"allreduce", test_allreduce, 1, 0, 1},   {"reduce", test_reduce, 1, 1, 1},
    {"reduce_scatter", test_reduce_scatter, 1, 0, 1},
    {"bcast", test_bcast, 0, 1, 0},           {"allgather", test_allgather, 0, 0, 1},
    {"alltoall", test_alltoall, 0, 0, 0},
};
#define NCOLLS (sizeof(colls) / sizeof(colls[0]))

static void run_case(int k, case_t *c)
{
    for (c->inplace = 0; c->inplace <= colls[k].has_inplace; c->inplace++) {
        if (!colls[k].rooted) { colls[k].fn(c); continue; }
        for (c->root = 0; c->root < T.size; c->root++)
            if (root_in_matrix(c->count, c->root)) colls[k].fn(c);
    }
}

static void run_coll(int k)
{
    long before = T.failures, checks = T.checks;
    double t0 = MPI_Wtime();
    for (size_t ci = 0; ci < NCOUNTS; ci++)
        for (int dt = 0; dt < GCOLL_DTYPE_COUNT; dt++)
            for (int op = 0; op < (colls[k].reduces ? GCOLL_OP_COUNT : 1); op++) {
                case_t c = {colls[k].name, &T.types[dt], colls[k].reduces ? (gcoll_op_t)op : NO_OP,
                            counts[ci], NO_ROOT, 0};
                if (in_matrix(c.count, c.d, c.op)) run_case(k, &c);
            }
    if (T.verbose && T.rank == 0)
        printf("%-15s %6ld checks %4ld failures (rank 0) %.2f s\n", colls[k].name,
               T.checks - checks, T.failures - before, MPI_Wtime() - t0);
}

/* ------------------------------------------------- special checks ---- */

/* A barrier must hold everyone until the last rank enters: the sleeper enters
 * DELAY late, so every other rank's barrier must last nearly DELAY. */
static void test_barrier_sync(int sleeper)
{
    const double delay = 0.3, slack = 0.1;
    case_t c = {"barrier", &T.types[GCOLL_UINT8], NO_OP, 0, NO_ROOT, 0};
    gcoll_stats_t before = stats_now();
    MPI_Barrier(MPI_COMM_WORLD);
    if (T.rank == sleeper) usleep((useconds_t)(delay * 1e6));
    double t0 = MPI_Wtime();
    if (!check_status(&c, gcoll_barrier(T.comm))) return;
    double waited = MPI_Wtime() - t0;
    T.checks++;
    if (T.rank != sleeper && waited < delay - slack)
        fail(&c, "left after %.3f s though rank %d entered %.3f s late", waited, sleeper, delay);
    c.count = 1;  /* a barrier always counts as a call */
    check_stats(&c, &before);
}

static void test_barrier(void)
{
    case_t c = {"barrier", &T.types[GCOLL_UINT8], NO_OP, 0, NO_ROOT, 0};
    for (int i = 0; i < 10; i++) check_status(&c, gcoll_barrier(T.comm));
    test_barrier_sync(0);
    if (T.size > 1) test_barrier_sync(T.size - 1);
}

/* MIN/MAX propagate NaN (gcoll.h): the last rank puts a NaN at index 3. */
static void test_nan(void)
{
    static const gcoll_dtype_t fl[] = {GCOLL_FLOAT16, GCOLL_BFLOAT16, GCOLL_FLOAT32, GCOLL_FLOAT64};
    for (int t = 0; t < 4; t++)
        for (int op = GCOLL_MIN; op <= GCOLL_MAX; op++) {
            case_t c = {"allreduce(nan)", &T.types[fl[t]], (gcoll_op_t)op, 7, NO_ROOT, 0};
            double buf[7], out[7];  /* room and alignment for any float type */
            fill(c.d, c.op, T.rank, buf, 7);
            if (T.rank == T.size - 1) store(c.d, buf, 3, NAN);
            if (!check_status(&c, gcoll_allreduce(buf, out, 7, c.d->dt, c.op, T.comm))) continue;
            T.checks++;
            for (size_t i = 0; i < 7; i++)
                if (isnan(load(c.d, out, i)) != (i == 3))
                    fail(&c, "index %zu is %g, NaN expected only at index 3", i, load(c.d, out, i));
        }
}

/* One set of buffers for calls that differ from the one before in a single
 * argument (op, count, dtype, root, in place), each run twice: a request
 * keeps its schedule for an identical call (core/coll.c) and must rebuild
 * it for any of these.  int32 values, MPI's own collective as reference. */
static void same_buffers_step(const char *what, int coll, int n, MPI_Datatype t, gcoll_dtype_t dt,
                              gcoll_op_t op, int root, int inplace, int32_t *send, int32_t *recv,
                              int32_t *ref)
{
    case_t c = {what, &T.types[dt], op, (size_t)n, root, inplace};
    for (int rep = 0; rep < 2; rep++) {
        for (int i = 0; i < 2 * n; i++) send[i] = (int32_t)((i * 31 + T.rank * 7 + rep) % 1000);
        memcpy(recv, send, 2 * (size_t)n * sizeof(int32_t));
        gcoll_status_t st;
        if (coll == 0) {
            MPI_Allreduce(send, ref, n, t, mpi_op(op), MPI_COMM_WORLD);
            st = gcoll_allreduce(inplace ? recv : send, recv, (size_t)n, dt, op, T.comm);
        } else if (coll == 1) {
            MPI_Reduce(send, ref, n, t, mpi_op(op), root, MPI_COMM_WORLD);
            st = gcoll_reduce(send, recv, (size_t)n, dt, op, root, T.comm);
        } else {
            memcpy(ref, send, (size_t)n * sizeof(int32_t));
            MPI_Bcast(ref, n, t, root, MPI_COMM_WORLD);
            st = gcoll_bcast(recv, (size_t)n, dt, root, T.comm);
        }
        if (!check_status(&c, st)) return;
        if (coll != 1 || T.rank == root) check_equal(&c, "same buffers", recv, ref, (size_t)n);
    }
}

static void test_same_buffers(void)
{
    enum { N = 1031 };
    int32_t *send = xmalloc(2 * N * sizeof(int32_t)), *recv = xmalloc(2 * N * sizeof(int32_t));
    int32_t *ref = xmalloc(2 * N * sizeof(int32_t));
    if (selected("allreduce")) {
        same_buffers_step("allreduce(same buffers)", 0, N, MPI_INT32_T, GCOLL_INT32, GCOLL_SUM, 0, 0, send, recv, ref);
        same_buffers_step("allreduce(same buffers, op)", 0, N, MPI_INT32_T, GCOLL_INT32, GCOLL_MAX, 0, 0, send, recv, ref);
        same_buffers_step("allreduce(same buffers, count)", 0, N - 2, MPI_INT32_T, GCOLL_INT32, GCOLL_MAX, 0, 0, send, recv, ref);
        same_buffers_step("allreduce(same buffers, in place)", 0, N - 2, MPI_INT32_T, GCOLL_INT32, GCOLL_MAX, 0, 1, send, recv, ref);
        same_buffers_step("allreduce(same buffers, dtype)", 0, (N - 2) / 2, MPI_INT64_T, GCOLL_INT64, GCOLL_MAX, 0, 1, send, recv, ref);
    }
    for (int root = 0; root < T.size; root++) {
        if (selected("reduce")) {
            same_buffers_step("reduce(same buffers, root)", 1, N, MPI_INT32_T, GCOLL_INT32, GCOLL_SUM, root, 0, send, recv, ref);
            same_buffers_step("reduce(same buffers, op)", 1, N, MPI_INT32_T, GCOLL_INT32, GCOLL_MIN, root, 0, send, recv, ref);
        }
        if (selected("bcast")) {
            same_buffers_step("bcast(same buffers, root)", 2, N, MPI_INT32_T, GCOLL_INT32, GCOLL_SUM, root, 0, send, recv, ref);
            same_buffers_step("bcast(same buffers, count)", 2, 7, MPI_INT32_T, GCOLL_INT32, GCOLL_SUM, root, 0, send, recv, ref);
        }
    }
    free(send); free(recv); free(ref);
}

/* Single node without GCOLL_NODE_SIZE: nothing crosses nodes.  With
 * GCOLL_NODE_SIZE < size something must. */
static void test_inter_node_bytes(void)
{
    MPI_Comm node;
    int node_size, sim = 0;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &node_size);
    MPI_Comm_free(&node);
    const char *env = getenv("GCOLL_NODE_SIZE");
    if (env && *env) sim = atoi(env);
    gcoll_stats_t s = stats_now();
    unsigned long long inter = s.bytes_sent_inter_node, total = 0;
    MPI_Allreduce(&inter, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    T.checks++;
    if (sim == 0 && node_size == T.size && inter != 0)
        fail(NULL, "stats.bytes_sent_inter_node = %llu on a single node", inter);
    if (sim > 0 && sim < T.size && total == 0 && selected("allreduce"))
        fail(NULL, "GCOLL_NODE_SIZE=%d < %d ranks but no rank sent inter-node bytes", sim, T.size);
}

/* -------------------------------------------------------------- main ---- */

static int parse_args(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-v") == 0) T.verbose = 1;
        else if (strcmp(argv[i], "--coll") == 0 && i + 1 < argc) T.only = argv[++i];
        else if (strcmp(argv[i], "--log") == 0 && i + 1 < argc) T.log = argv[++i];
        else return 0;
    }
    if (!T.only || strcmp(T.only, "barrier") == 0) return 1;
    for (size_t k = 0; k < NCOLLS; k++)
        if (strcmp(T.only, colls[k].name) == 0) return 1;
    return 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &T.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &T.size);
    if (!parse_args(argc, argv)) {
        if (T.rank == 0) fprintf(stderr, "usage: test_coll_mpi [--coll allreduce|bcast|reduce|"
                                         "allgather|reduce_scatter|alltoall|barrier] "
                                         "[--log PREFIX] [-v]\n");
        MPI_Finalize();
        return 2;
    }
    if (T.log) {   /* before gcoll_comm_create, which reads GCOLL_DEBUG */
        char path[4096];
        snprintf(path, sizeof(path), "%s.%d", T.log, T.rank);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || dup2(fd, STDERR_FILENO) < 0) {
            fprintf(stderr, "rank %d: cannot send stderr to %s\n", T.rank, path);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        close(fd);
    }
    types_init();
    gcoll_status_t st = gcoll_comm_create(MPI_COMM_WORLD, &T.comm);
    if (st != GCOLL_SUCCESS) {
        fprintf(stderr, "rank %d: gcoll_comm_create: %s: %s\n", T.rank, gcoll_strerror(st), gcoll_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    double t0 = MPI_Wtime();
    for (size_t k = 0; k < NCOLLS; k++)
        if (selected(colls[k].name)) run_coll((int)k);
    if (selected("allreduce")) test_nan();
    if (selected("barrier")) test_barrier();
    test_same_buffers();
    test_inter_node_bytes();
    if (gcoll_comm_destroy(T.comm) != GCOLL_SUCCESS) fail(NULL, "gcoll_comm_destroy: %s", gcoll_last_error());

    long mine[2] = {T.checks, T.failures}, sum[2];
    MPI_Allreduce(mine, sum, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (T.verbose && T.rank == 0) printf("%d ranks, %.1f s\n", T.size, MPI_Wtime() - t0);
    if (T.rank == 0) printf("test_coll_mpi: %ld checks, %ld failures\n", sum[0], sum[1]);
    MPI_Finalize();
    return sum[1] ? 1 : 0;
}
