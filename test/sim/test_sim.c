/* SPDX-License-Identifier: BSD-3-Clause */
/* Every registered algorithm, through the simulator, against a serial
 * reference computed here from the inputs (not with the library's kernels).
 *
 * Data are chosen so that the exact result is known whatever the reduction
 * order: integer-valued floats small enough that every partial sum is exact
 * (bf16 has 8 significant bits, so its values are in {-1, 0, 1}), products of
 * +-1 and a few 2s, MIN/MAX exact by nature, integers wrapping modulo 2^n
 * (associative and commutative).  Results are compared bit for bit.
 *
 * Beyond values: send buffers must come back unchanged, reduce must leave
 * non-root destinations untouched, every rank's allreduce of random
 * non-integer floats must be bitwise identical, a barrier must make every rank
 * wait for every other (checked by running its schedules with "who has heard
 * from whom" as data), and the simulator must reject inconsistent schedules
 * instead of hanging.  A builder may decline (GCOLL_ERR_NOT_SUPPORTED) only
 * the shapes expected_declines lists, for the reason listed, and must decline
 * those.  The checker itself is checked: small direct algorithms written here
 * must pass and deliberately broken variants must fail.
 *
 * Output: one line per failing case, then a summary; exit status 1 on any
 * failure.  GCOLL_SIM_TEST_QUICK=1 runs a reduced matrix. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "gcoll.h"
#include "algos/algo.h"
#include "algos/peers.h"
#include "base/log.h"
#include "base/status.h"
#include "sim/sim.h"

static long n_cases, n_fail;
static int  quiet;         /* while running cases that are meant to fail */
static long algo_lines;    /* failure lines printed for the current algorithm */
#define ALGO_LINES_MAX 30  /* then the rest are only counted */

#define GARBAGE 0x5a  /* fill of receive buffers; reduce's non-root sentinel */

/* ------------------------------------------------------------ values ---- */

static uint64_t mix64(uint64_t x)   /* splitmix64 finaliser */
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t hash3(uint64_t a, uint64_t b, uint64_t c)
{
    return mix64(a * 0x9e3779b97f4a7c15ull + b * 0xc2b2ae3d27d4eb4full + c);
}

static int is_float(gcoll_dtype_t dt) { return dt >= GCOLL_FLOAT16; }

static int is_signed_int(gcoll_dtype_t dt)
{
    return dt == GCOLL_INT8 || dt == GCOLL_INT32 || dt == GCOLL_INT64;
}

/* x rounded to `bits` significant bits, ties to even (the default rounding
 * mode of nearbyint).  Normal range only, which is all these tests produce. */
static double round_sig(double x, int bits)
{
    int e;
    double m = frexp(x, &e);
    return ldexp(nearbyint(ldexp(m, bits)), e - bits);
}

/* Encode a value exactly representable as a normal 16-bit float (or zero):
 * mant_bits explicit mantissa bits, bias of the exponent. */
static uint16_t enc16(double v, int mant_bits, int bias)
{
    uint16_t sign = v < 0 ? 0x8000 : 0;
    if (v == 0) return sign;
    int e;
    double m = frexp(fabs(v), &e);                /* v = m * 2^e, m in [0.5, 1) */
    if (e - 1 + bias <= 0) return sign;           /* below the normals: use zero */
    uint16_t mant = (uint16_t)ldexp(2 * m - 1, mant_bits);
    return (uint16_t)(sign | (uint16_t)((e - 1 + bias) << mant_bits) | mant);
}

static double dec16(uint16_t h, int mant_bits, int bias)
{
    int exp_max = (1 << (15 - mant_bits)) - 1;
    int e = (h >> mant_bits) & exp_max, mant = h & ((1 << mant_bits) - 1);
    double s = (h & 0x8000) ? -1 : 1;
    if (e == exp_max) return mant ? NAN : s * INFINITY;
    if (e == 0) return s * ldexp(mant, 1 - bias - mant_bits);
    return s * ldexp(mant + (1 << mant_bits), e - bias - mant_bits);
}

/* An element as the reference sees it: integers sign- or zero-extended to 64
 * bits (arithmetic modulo 2^64 then truncates to the width correctly), floats
 * as double. */
typedef union { uint64_t u; double f; } tval_t;

static tval_t load(const void *p, gcoll_dtype_t dt)
{
    tval_t v = { 0 };
    uint16_t h;
    switch (dt) {
    case GCOLL_INT8:     v.u = (uint64_t)(int64_t)*(const int8_t *)p; break;
    case GCOLL_UINT8:    v.u = *(const uint8_t *)p; break;
    case GCOLL_INT32:    v.u = (uint64_t)(int64_t)*(const int32_t *)p; break;
    case GCOLL_UINT32:   v.u = *(const uint32_t *)p; break;
    case GCOLL_INT64:
    case GCOLL_UINT64:   memcpy(&v.u, p, 8); break;
    case GCOLL_FLOAT16:  memcpy(&h, p, 2); v.f = dec16(h, 10, 15); break;
    case GCOLL_BFLOAT16: memcpy(&h, p, 2); v.f = dec16(h, 7, 127); break;
    case GCOLL_FLOAT32:  v.f = *(const float *)p; break;
    case GCOLL_FLOAT64:  v.f = *(const double *)p; break;
    default: break;
    }
    return v;
}

/* Store v, exact by construction (16-bit floats are rounded first). */
static void store(void *p, gcoll_dtype_t dt, tval_t v)
{
    uint16_t h;
    switch (dt) {
    case GCOLL_FLOAT16:  h = enc16(round_sig(v.f, 11), 10, 15); memcpy(p, &h, 2); break;
    case GCOLL_BFLOAT16: h = enc16(round_sig(v.f, 8), 7, 127); memcpy(p, &h, 2); break;
    case GCOLL_FLOAT32:  *(float *)p = (float)v.f; break;
    case GCOLL_FLOAT64:  *(double *)p = v.f; break;
    default:             memcpy(p, &v.u, gcoll_dtype_size(dt)); break;   /* little endian */
    }
}

static tval_t fold(gcoll_dtype_t dt, gcoll_op_t op, tval_t a, tval_t b)
{
    tval_t r = a;
    if (is_float(dt)) {
        switch (op) {
        case GCOLL_PROD: r.f = a.f * b.f; break;
        case GCOLL_MIN:  r.f = b.f < a.f ? b.f : a.f; break;
        case GCOLL_MAX:  r.f = b.f > a.f ? b.f : a.f; break;
        default:         r.f = a.f + b.f; break;
        }
        return r;
    }
    int lt = is_signed_int(dt) ? (int64_t)b.u < (int64_t)a.u : b.u < a.u;
    switch (op) {
    case GCOLL_PROD: r.u = a.u * b.u; break;
    case GCOLL_MIN:  r = lt ? b : a; break;
    case GCOLL_MAX:  r = lt ? a : b; break;
    default:         r.u = a.u + b.u; break;
    }
    return r;
}

/* AVG as gcoll.h defines it: IEEE division of the sum (float32 for the 16-bit
 * types, then rounded), C division of the wrapped integer sum. */
static tval_t average(gcoll_dtype_t dt, tval_t sum, int nranks)
{
    unsigned char tmp[8];
    switch (dt) {
    case GCOLL_FLOAT64: sum.f = sum.f / nranks; return sum;
    case GCOLL_FLOAT32:
    case GCOLL_FLOAT16:
    case GCOLL_BFLOAT16: sum.f = (double)((float)sum.f / (float)nranks); return sum;
    default: break;
    }
    store(tmp, dt, sum);          /* wrap to the width, then extend again */
    sum = load(tmp, dt);
    if (is_signed_int(dt)) sum.u = (uint64_t)((int64_t)sum.u / nranks);
    else sum.u /= (uint64_t)nranks;
    return sum;
}

/* Input value of rank r, element i, for which every reduction order is exact. */
static tval_t gen_exact(gcoll_dtype_t dt, gcoll_op_t op, int r, size_t i, uint64_t salt)
{
    uint64_t h = hash3(salt, (uint64_t)r, i);
    tval_t v = { 0 };
    if (!is_float(dt)) {
        if (op == GCOLL_PROD) v.u = (uint64_t)(int64_t)((int[]){ 1, -1, 2, 3 }[h % 4]);
        else if (op == GCOLL_MIN || op == GCOLL_MAX) v.u = h;   /* any bits: wraps to width */
        else v.u = (uint64_t)((int64_t)(h % 2001) - 1000);
        return v;
    }
    if (op == GCOLL_PROD) {
        v.f = (h & 1) ? -1.0 : 1.0;
        if (r < 4 && (h & 2)) v.f *= 2;   /* at most 2^4: exact in every type */
        return v;
    }
    int mm = op == GCOLL_MIN || op == GCOLL_MAX;
    switch (dt) {
    case GCOLL_BFLOAT16: v.f = mm ? (double)((int64_t)(h % 513) - 256) : (double)((int)(h % 3) - 1); break;
    case GCOLL_FLOAT16:  v.f = mm ? (double)((int64_t)(h % 4097) - 2048) : (double)((int)(h % 9) - 4); break;
    default:             v.f = mm ? ((double)((int64_t)(h % 200001) - 100000)) / 64
                                  : (double)((int)(h % 17) - 8); break;
    }
    return v;
}

/* Random non-integer floats in [-1, 1): sums depend on order. */
static tval_t gen_random(int r, size_t i, uint64_t salt)
{
    tval_t v;
    v.f = (double)(hash3(salt, (uint64_t)r, i) >> 11) / 4503599627370496.0 - 1.0;
    return v;
}

/* ------------------------------------------------------------- cases ---- */

typedef struct {
    const gcoll_algo_t *algo;
    int           nranks;
    size_t        count;
    gcoll_dtype_t dt;
    gcoll_op_t    op;
    int           root;
    int           inplace;
    size_t        chunk;     /* args.chunk_bytes */
    int           random;    /* random floats: check only that ranks agree */
    int           layout;    /* node layout: index into layouts[] */
} tcase_t;

/* How ranks are spread over nodes (the simulator's node_of): hierarchical
 * algorithms must work with any of these, flat ones ignore them. */
enum { LAYOUT_ONE = 0, LAYOUT_COUNT = 7 };
static const struct { const char *name; int block, rr; } layouts[LAYOUT_COUNT] = {
    { "one", 0, 0 },          /* a single node: node_of NULL */
    { "2/node", 2, 0 },
    { "4/node", 4, 0 },
    { "3/node", 3, 0 },       /* last node smaller unless 3 divides P */
    { "rr2", 0, 2 },          /* round-robin over 2 nodes: not contiguous */
    { "1/node", 1, 0 },
    { "8/node", 8, 0 },
};

/* node_of for a layout, in out[P]; NULL for a single node. */
static const int *make_nodes(int layout, int P, int *out)
{
    if (layout == LAYOUT_ONE) return NULL;
    for (int r = 0; r < P; r++)
        out[r] = layouts[layout].rr ? r % layouts[layout].rr : r / layouts[layout].block;
    return out;
}

static long n_declined;   /* cases a builder declined with GCOLL_ERR_NOT_SUPPORTED */

/* The declines the builders are allowed, and obliged, to make: a builder
 * that declines any other case fails it (the simulator would otherwise test
 * nothing there and pass), and so does one that serves a case listed here
 * (the list would be stale).  Shapes are judged from node_of by this test. */
enum { SHAPE_SEVERAL_NODES, SHAPE_UNEQUAL_NODES, SHAPE_NOT_REGULAR };
static const char *const shape_names[] = {
    "more than one node", "nodes of unequal size", "unequal or non-consecutive nodes"
};
static struct {
    gcoll_coll_t coll;     /* GCOLL_COLL_COUNT: every collective */
    const char  *algo;
    int          shape;    /* SHAPE_*: the cases it declines, and only those */
    const char  *reason;   /* part of the builder's sentence */
    long         seen;
} expected_declines[] = {
    { GCOLL_COLL_COUNT, "shm", SHAPE_SEVERAL_NODES, "serves one node only", 0 },
    { GCOLL_COLL_ALLREDUCE, "shm_sliced", SHAPE_SEVERAL_NODES, "serves one node only", 0 },
    { GCOLL_COLL_ALLGATHER, "shm_cma", SHAPE_SEVERAL_NODES, "serves one node only", 0 },
    { GCOLL_COLL_BCAST, "shm_cma", SHAPE_SEVERAL_NODES, "serves one node only", 0 },
    { GCOLL_COLL_ALLGATHER, "hier", SHAPE_NOT_REGULAR,
      "needs nodes of equal size holding consecutive ranks", 0 },
    { GCOLL_COLL_REDUCE_SCATTER, "hier", SHAPE_NOT_REGULAR,
      "needs nodes of equal size holding consecutive ranks", 0 },
    { GCOLL_COLL_ALLREDUCE, "hier_p2p", SHAPE_UNEQUAL_NODES, "needs nodes of equal size", 0 },
};
#define N_EXPECTED_DECLINES (sizeof(expected_declines) / sizeof(expected_declines[0]))

/* Whether P ranks over node_of (NULL: one node) have the shape, computed
 * here rather than with the library's node map. */
static int has_shape(int shape, int P, const int *node_of)
{
    int count[1024] = { 0 }, nn = 0, contiguous = 1, uniform = 1;
    for (int r = 0; node_of && r < P; r++) {
        int k = node_of[r];
        if (k >= nn) nn = k + 1;
        if (count[k] && node_of[r - 1] != k) contiguous = 0;
        count[k]++;
    }
    for (int k = 1; k < nn; k++) uniform &= count[k] == count[0];
    switch (shape) {
    case SHAPE_SEVERAL_NODES: return nn > 1;
    case SHAPE_UNEQUAL_NODES: return !uniform;
    default:                  return !uniform || !contiguous;
    }
}

/* The entry of expected_declines that covers algo over this shape, or -1. */
static int decline_entry(const gcoll_algo_t *algo, int P, const int *node_of)
{
    for (size_t i = 0; i < N_EXPECTED_DECLINES; i++)
        if ((expected_declines[i].coll == GCOLL_COLL_COUNT ||
             expected_declines[i].coll == algo->coll) &&
            strcmp(expected_declines[i].algo, algo->name) == 0 &&
            has_shape(expected_declines[i].shape, P, node_of))
            return (int)i;
    return -1;
}

/* Judge a builder's answer st for P ranks over node_of: 0 if it is as
 * expected_declines says (why: the failure's sentence otherwise).  A
 * decline must also give the listed reason. */
static int judge_decline(const gcoll_algo_t *algo, int P, const int *node_of,
                         gcoll_status_t st, char *why, size_t len)
{
    int e = decline_entry(algo, P, node_of);
    if (st == GCOLL_ERR_NOT_SUPPORTED) {
        if (e < 0) {
            snprintf(why, len, "declined, which expected_declines does not allow: %s",
                     gcoll_last_error());
            return 1;
        }
        if (!strstr(gcoll_last_error(), expected_declines[e].reason)) {
            snprintf(why, len, "declined on %s, but not because it %s: %s",
                     shape_names[expected_declines[e].shape], expected_declines[e].reason,
                     gcoll_last_error());
            return 1;
        }
        expected_declines[e].seen++;
        return 0;
    }
    if (e >= 0 && st == GCOLL_SUCCESS) {
        snprintf(why, len, "ran on %s, where expected_declines says it declines (%s)",
                 shape_names[expected_declines[e].shape], expected_declines[e].reason);
        return 1;
    }
    return 0;
}

/* After an algorithm's matrix: each entry for it must have been met. */
static long check_declines_seen(const gcoll_algo_t *algo)
{
    long bad = 0;
    for (size_t i = 0; i < N_EXPECTED_DECLINES; i++)
        if ((expected_declines[i].coll == GCOLL_COLL_COUNT ||
             expected_declines[i].coll == algo->coll) &&
            strcmp(expected_declines[i].algo, algo->name) == 0 && !expected_declines[i].seen) {
            printf("FAIL %s/%s: never declined on %s (expected_declines is stale?)\n",
                   gcoll_coll_name(algo->coll), algo->name, shape_names[expected_declines[i].shape]);
            bad++;
        }
    for (size_t i = 0; i < N_EXPECTED_DECLINES; i++) expected_declines[i].seen = 0;
    return bad;
}

/* Buffers of one case, per rank. */
typedef struct {
    int                 nranks;
    size_t              es, in_bytes, recv_bytes;
    unsigned char     **in;     /* pristine inputs */
    unsigned char     **send;   /* sendbufs (NULL in place) */
    unsigned char     **recv;
    unsigned char      *ref;    /* reference reduction, reducing collectives */
    gcoll_coll_args_t  *args;
} tbufs_t;

static int is_reducing(gcoll_coll_t c)
{
    return c == GCOLL_COLL_ALLREDUCE || c == GCOLL_COLL_REDUCE || c == GCOLL_COLL_REDUCE_SCATTER;
}

/* Collectives whose per-rank buffers hold P blocks of count. */
static int has_blocks(gcoll_coll_t c)
{
    return c == GCOLL_COLL_ALLGATHER || c == GCOLL_COLL_REDUCE_SCATTER || c == GCOLL_COLL_ALLTOALL;
}

static int has_root(gcoll_coll_t c) { return c == GCOLL_COLL_BCAST || c == GCOLL_COLL_REDUCE; }

static int has_inplace(gcoll_coll_t c)
{
    return c == GCOLL_COLL_ALLREDUCE || c == GCOLL_COLL_REDUCE || c == GCOLL_COLL_ALLGATHER ||
           c == GCOLL_COLL_REDUCE_SCATTER;
}

static void fail_line(const tcase_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void fail_line(const tcase_t *c, const char *fmt, ...)
{
    if (quiet || ++algo_lines > ALGO_LINES_MAX) {
        if (!quiet && algo_lines == ALGO_LINES_MAX + 1)
            printf("FAIL %s/%s: further failures are counted, not shown\n",
                   gcoll_coll_name(c->algo->coll), c->algo->name);
        return;
    }
    va_list ap;
    printf("FAIL %s/%s P=%d count=%zu dtype=%s op=%s root=%d inplace=%d chunk=%zu nodes=%s%s: ",
           gcoll_coll_name(c->algo->coll), c->algo->name, c->nranks, c->count,
           gcoll_dtype_name(c->dt), gcoll_op_name(c->op), c->root, c->inplace, c->chunk,
           layouts[c->layout].name, c->random ? " random" : "");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
}

/* Where rank r's input sits in its receive buffer in place, in bytes. */
static size_t inplace_off(const tcase_t *c, const tbufs_t *b, int r)
{
    return c->algo->coll == GCOLL_COLL_ALLGATHER ? (size_t)r * c->count * b->es : 0;
}

static void fill_inputs(const tcase_t *c, tbufs_t *b, uint64_t salt)
{
    size_t n = b->in_bytes / (b->es ? b->es : 1);
    for (int r = 0; r < b->nranks; r++) {
        for (size_t i = 0; i < n; i++) {
            unsigned char *p = b->in[r] + i * b->es;
            if (!is_reducing(c->algo->coll)) {
                uint64_t h = hash3(salt, (uint64_t)r, i);
                memcpy(p, &h, b->es);   /* data movement: any bits */
            } else {
                store(p, c->dt, c->random ? gen_random(r, i, salt) : gen_exact(c->dt, c->op, r, i, salt));
            }
        }
    }
}

static void set_args(const tcase_t *c, const tbufs_t *b, int r)
{
    gcoll_coll_args_t *a = &b->args[r];
    gcoll_coll_t coll = c->algo->coll;
    memset(a, 0, sizeof(*a));
    a->coll = coll;
    a->count = c->count;
    a->dt_size = b->es;
    a->root = c->root;
    a->chunk_bytes = c->chunk;
    a->src = gcoll_bref(GCOLL_BUF_SEND, 0);
    a->dst = gcoll_bref(GCOLL_BUF_RECV, 0);
    int inplace = c->inplace && !(coll == GCOLL_COLL_REDUCE && r != c->root);
    if (coll == GCOLL_COLL_BCAST) a->src = a->dst;
    if (!inplace) return;
    if (coll == GCOLL_COLL_REDUCE_SCATTER) {
        a->src = gcoll_bref(GCOLL_BUF_RECV, 0);
        a->dst = gcoll_bref(GCOLL_BUF_RECV, (size_t)r * c->count * b->es);
    } else {
        a->src = gcoll_bref(GCOLL_BUF_RECV, inplace_off(c, b, r));
    }
}

static int setup(const tcase_t *c, tbufs_t *b)
{
    gcoll_coll_args_t probe = { .coll = c->algo->coll, .count = c->count,
                                .dt_size = gcoll_dtype_size(c->dt) };
    size_t src_bytes, dst_bytes;
    int P = c->nranks;
    gcoll_coll_buf_bytes(&probe, P, &src_bytes, &dst_bytes);
    memset(b, 0, sizeof(*b));
    b->nranks = P;
    b->es = probe.dt_size;
    b->in_bytes = src_bytes;
    b->recv_bytes = (c->inplace && c->algo->coll == GCOLL_COLL_REDUCE_SCATTER) ? src_bytes : dst_bytes;
    b->in = calloc((size_t)P, sizeof(*b->in));
    b->send = calloc((size_t)P, sizeof(*b->send));
    b->recv = calloc((size_t)P, sizeof(*b->recv));
    b->args = calloc((size_t)P, sizeof(*b->args));
    if (!b->in || !b->send || !b->recv || !b->args) return -1;
    for (int r = 0; r < P; r++) {
        b->in[r] = malloc(b->in_bytes + 1);
        b->recv[r] = malloc(b->recv_bytes + 1);
        if (!b->in[r] || !b->recv[r]) return -1;
        memset(b->recv[r], GARBAGE, b->recv_bytes);
    }
    fill_inputs(c, b, hash3((uint64_t)P, c->count, (uint64_t)c->dt * 8 + (uint64_t)c->op));
    for (int r = 0; r < P; r++) {
        set_args(c, b, r);
        if (b->args[r].src.buf == GCOLL_BUF_SEND) {
            b->send[r] = malloc(b->in_bytes + 1);
            if (!b->send[r]) return -1;
            memcpy(b->send[r], b->in[r], b->in_bytes);
        } else {   /* in place (and bcast): the input starts in the receive buffer */
            memcpy(b->recv[r] + b->args[r].src.off, b->in[r], b->in_bytes);
        }
    }
    return 0;
}

static void teardown(tbufs_t *b)
{
    for (int r = 0; b->in && r < b->nranks; r++) {
        free(b->in[r]);
        if (b->send) free(b->send[r]);
        if (b->recv) free(b->recv[r]);
    }
    free(b->in);
    free(b->send);
    free(b->recv);
    free(b->ref);
    free(b->args);
}

/* ref[i] = op over ranks of in[*][i], for every element of the inputs. */
static int compute_ref(const tcase_t *c, tbufs_t *b)
{
    size_t n = b->in_bytes / b->es;
    b->ref = malloc(b->in_bytes + 1);
    if (!b->ref) return -1;
    for (size_t i = 0; i < n; i++) {
        tval_t acc = load(b->in[0] + i * b->es, c->dt);
        for (int r = 1; r < b->nranks; r++)
            acc = fold(c->dt, c->op, acc, load(b->in[r] + i * b->es, c->dt));
        if (c->op == GCOLL_AVG) acc = average(c->dt, acc, b->nranks);
        store(b->ref + i * b->es, c->dt, acc);
    }
    return 0;
}

static const char *fmt_elem(char *buf, size_t len, const unsigned char *p, gcoll_dtype_t dt,
                            size_t es)
{
    tval_t v = load(p, dt);
    uint64_t bits = 0;
    memcpy(&bits, p, es);
    if (is_float(dt))
        snprintf(buf, len, "%.9g (0x%0*llx)", v.f, (int)(2 * es), (unsigned long long)bits);
    else if (is_signed_int(dt))
        snprintf(buf, len, "%lld (0x%0*llx)", (long long)(int64_t)v.u, (int)(2 * es),
                 (unsigned long long)bits);
    else
        snprintf(buf, len, "%llu", (unsigned long long)v.u);
    return buf;
}

/* Compare n elements of rank r's result with the expected ones. */
static int expect(const tcase_t *c, const tbufs_t *b, int r, const unsigned char *got,
                  const unsigned char *want, size_t n, size_t base, const char *what)
{
    if (memcmp(got, want, n * b->es) == 0) return 0;
    size_t i = 0;
    char g[64], w[64];
    while (memcmp(got + i * b->es, want + i * b->es, b->es) == 0) i++;
    fail_line(c, "rank %d %s element %zu: got %s expected %s", r, what, base + i,
              fmt_elem(g, sizeof(g), got + i * b->es, c->dt, b->es),
              fmt_elem(w, sizeof(w), want + i * b->es, c->dt, b->es));
    return 1;
}

static int check_untouched(const tcase_t *c, const tbufs_t *b, int r)
{
    for (size_t i = 0; i < b->recv_bytes; i++) {
        if (b->recv[r][i] == GARBAGE) continue;
        fail_line(c, "non-root rank %d's destination was written (byte %zu is 0x%02x)", r, i,
                  b->recv[r][i]);
        return 1;
    }
    return 0;
}

/* Rank r's result; returns 1 (after printing) on a mismatch. */
static int check_rank(const tcase_t *c, const tbufs_t *b, int r)
{
    size_t n = c->count, es = b->es, blk = n * es;
    const unsigned char *out = b->recv[r];
    switch (c->algo->coll) {
    case GCOLL_COLL_ALLREDUCE:
        return expect(c, b, r, out, b->ref, n, 0, "result");
    case GCOLL_COLL_REDUCE:
        if (r != c->root) return check_untouched(c, b, r);
        return expect(c, b, r, out, b->ref, n, 0, "result");
    case GCOLL_COLL_REDUCE_SCATTER:
        return expect(c, b, r, out + (c->inplace ? (size_t)r * blk : 0), b->ref + (size_t)r * blk,
                      n, (size_t)r * n, "result");
    case GCOLL_COLL_BCAST:
        return expect(c, b, r, out, b->in[c->root], n, 0, "result");
    case GCOLL_COLL_ALLGATHER:
        for (int j = 0; j < b->nranks; j++)
            if (expect(c, b, r, out + (size_t)j * blk, b->in[j], n, (size_t)j * n, "result"))
                return 1;
        return 0;
    case GCOLL_COLL_ALLTOALL:
        for (int j = 0; j < b->nranks; j++)
            if (expect(c, b, r, out + (size_t)j * blk, b->in[j] + (size_t)r * blk, n,
                       (size_t)j * n, "result"))
                return 1;
        return 0;
    default:
        return 0;
    }
}

/* Random floats: every rank's allreduce must equal rank 0's bit for bit. */
static int check_agree(const tcase_t *c, const tbufs_t *b)
{
    for (int r = 1; r < b->nranks; r++)
        if (expect(c, b, r, b->recv[r], b->recv[0], c->count, 0, "result (vs rank 0's)"))
            return 1;
    return 0;
}

static int check_all(const tcase_t *c, tbufs_t *b)
{
    if (c->random) return check_agree(c, b);
    if (is_reducing(c->algo->coll) && compute_ref(c, b)) {
        fail_line(c, "no memory for the reference");
        return 1;
    }
    for (int r = 0; r < b->nranks; r++) {
        if (b->send[r] && memcmp(b->send[r], b->in[r], b->in_bytes)) {
            fail_line(c, "rank %d's send buffer was modified", r);
            return 1;
        }
        if (check_rank(c, b, r)) return 1;
    }
    return 0;
}

/* ---------------------------------------------- early NODE steps ---- */

/* An early NODE step (schedule.h) runs while its round's messages are in
 * flight and before the round's other local steps; the simulator runs it
 * after them, so the data check cannot see it touch what they use.  This
 * check does: it must not write what another step of its round reads or
 * writes, nor read what one writes. */
typedef struct { int buf; size_t lo, hi; } span_t;   /* bytes [lo, hi) of one buffer */

static long n_early;   /* cases whose schedules hold early steps (pipelined) */

static span_t span_of(gcoll_bref_t r, size_t bytes)
{
    span_t s = { r.buf, r.off, r.off + bytes };
    return s;
}

static int spans_meet(span_t a, span_t b)
{
    return a.buf == b.buf && a.lo < a.hi && b.lo < b.hi && a.lo < b.hi && b.lo < a.hi;
}

/* What st reads (rd[2]) and writes (*wr) on local rank l of a node of L. */
static void step_spans(const gcoll_sched_t *s, const gcoll_step_t *st, int l, int L, span_t rd[2],
                       span_t *wr)
{
    span_t none = { 0, 0, 0 };
    size_t n = s->dt_size ? st->bytes / s->dt_size : 0;
    size_t blk = gcoll_block_len(n, L, l) * s->dt_size;
    rd[0] = rd[1] = *wr = none;
    switch (st->type) {
    case GCOLL_STEP_SEND:   rd[0] = span_of(st->src, st->bytes); break;
    case GCOLL_STEP_RECV:   *wr = span_of(st->dst, st->bytes); break;
    case GCOLL_STEP_REDUCE: rd[1] = span_of(st->src2, st->bytes); /* fall through */
    case GCOLL_STEP_COPY:   rd[0] = span_of(st->src, st->bytes); *wr = span_of(st->dst, st->bytes); break;
    case GCOLL_STEP_AVG:    rd[0] = *wr = span_of(st->dst, st->bytes); break;
    case GCOLL_STEP_NODE:
        switch (st->node_coll) {
        case GCOLL_COLL_ALLREDUCE:
            rd[0] = span_of(st->src, st->bytes); *wr = span_of(st->dst, st->bytes); break;
        case GCOLL_COLL_REDUCE_SCATTER:
            rd[0] = span_of(st->src, st->bytes); *wr = span_of(st->dst, blk); break;
        case GCOLL_COLL_ALLGATHER:
            rd[0] = span_of(st->src, blk); *wr = span_of(st->dst, st->bytes); break;
        case GCOLL_COLL_BCAST:
            if (l == st->peer) rd[0] = span_of(st->dst, st->bytes);
            else *wr = span_of(st->dst, st->bytes);
            break;
        case GCOLL_COLL_REDUCE:
            rd[0] = span_of(st->src, st->bytes);
            if (l == st->peer) *wr = span_of(st->dst, st->bytes);
            break;
        default: break;
        }
        break;
    default: break;
    }
}

/* Whether early step e and step x of the same round may run in any order. */
static int steps_commute(const gcoll_sched_t *s, const gcoll_step_t *e, const gcoll_step_t *x,
                         int l, int L)
{
    span_t er[2], ew, xr[2], xw;
    step_spans(s, e, l, L, er, &ew);
    step_spans(s, x, l, L, xr, &xw);
    return !spans_meet(ew, xw) && !spans_meet(ew, xr[0]) && !spans_meet(ew, xr[1]) &&
           !spans_meet(xw, er[0]) && !spans_meet(xw, er[1]);
}

/* Rank r's early steps against the other steps of their rounds; 1 on a hazard. */
static int check_early_rank(const tcase_t *c, const gcoll_sched_t *s, int r, const int *node_of)
{
    int l = 0, L = 0;
    for (int j = 0; j < c->nranks; j++) {
        if (node_of && node_of[j] != node_of[r]) continue;
        L++;
        l += j < r;
    }
    for (uint32_t rd = 0; rd < s->nrounds; rd++) {
        uint32_t b = gcoll_sched_round_begin(s, rd), e = s->round_end[rd];
        for (uint32_t i = b; i < e; i++) {
            if (!(s->steps[i].flags & GCOLL_STEP_EARLY)) continue;
            for (uint32_t j = b; j < e; j++) {
                if ((s->steps[j].flags & GCOLL_STEP_EARLY) ||
                    steps_commute(s, &s->steps[i], &s->steps[j], l, L))
                    continue;
                fail_line(c, "rank %d round %u: early NODE step %u touches what step %u uses", r,
                          rd, i - b, j - b);
                return 1;
            }
        }
    }
    return 0;
}

/* Rebuild every rank's schedule (as the simulator did) and check its early steps. */
static int check_early(const tcase_t *c, const tbufs_t *b, const int *node_of)
{
    gcoll_sched_t s;
    int bad = 0, found = 0;
    gcoll_sched_init(&s);
    for (int r = 0; r < c->nranks && !bad; r++) {
        gcoll_group_t g = { c->nranks, r, NULL, node_of };
        gcoll_coll_args_t a = b->args[r];
        a.flags |= GCOLL_ARGS_NODE_STEPS;
        if (gcoll_algo_build(c->algo, &a, &g, c->dt, c->op, &s) != GCOLL_SUCCESS) {
            fail_line(c, "rank %d's schedule did not build again", r);
            bad = 1;
            break;
        }
        for (uint32_t i = 0; i < s.nsteps; i++) found |= s.steps[i].flags & GCOLL_STEP_EARLY;
        bad = check_early_rank(c, &s, r, node_of);
    }
    gcoll_sched_fini(&s);
    n_early += found != 0;
    return bad;
}

/* Run one case; returns 1 if it failed (and printed why), -1 if the builder
 * declined it as expected_declines allows (GCOLL_ERR_NOT_SUPPORTED: counted,
 * not a failure; any other decline is one). */
static int run_case(const tcase_t *c)
{
    tbufs_t b;
    int bad = 1, nodes[1024];
    n_cases++;
    if (c->nranks > 1024 || setup(c, &b)) {
        fail_line(c, "no memory for the test buffers");
    } else {
        gcoll_sim_t sim = { .nranks = c->nranks, .node_of = make_nodes(c->layout, c->nranks, nodes) };
        int save = gcoll_log_level;
        gcoll_log_level = -1;   /* a declining builder WARNs; the count below says it */
        gcoll_status_t st = gcoll_sim_run_algo(&sim, c->algo, b.args, c->dt, c->op,
                                               (const void *const *)b.send, (void *const *)b.recv);
        gcoll_log_level = save;
        char why[600];
        if (judge_decline(c->algo, c->nranks, sim.node_of, st, why, sizeof(why)))
            fail_line(c, "%s", why);
        else if (st == GCOLL_ERR_NOT_SUPPORTED)
            bad = -1;
        else if (st != GCOLL_SUCCESS)
            fail_line(c, "simulator returned %s: %s", gcoll_strerror(st), gcoll_last_error());
        else
            bad = check_all(c, &b);
        if (bad == 0 && strncmp(c->algo->name, "hier", 4) == 0) bad = check_early(c, &b, sim.node_of);
    }
    teardown(&b);
    if (bad == -1) n_declined++;
    if (bad == 1 && !quiet) n_fail++;
    return bad;
}

/* ------------------------------------------------- the barrier check ---- */

/* Run a barrier's schedules with "which ranks have I heard from" as data:
 * every send carries the sender's set, every receive merges (uint8 MAX) the
 * set received into the receiver's after the round.  A barrier is correct
 * only if at the end every rank has heard, directly or not, from all. */
static int check_barrier(const gcoll_algo_t *algo, int P, int layout)
{
    tcase_t c = { .algo = algo, .nranks = P, .dt = GCOLL_UINT8, .op = GCOLL_MAX, .layout = layout };
    int nodes[1024];
    const int *node_of = make_nodes(layout, P, nodes);
    gcoll_sched_t *orig = calloc((size_t)P, sizeof(*orig)), *know = calloc((size_t)P, sizeof(*know));
    gcoll_sched_t **ptrs = calloc((size_t)P, sizeof(*ptrs));
    unsigned char **sets = calloc((size_t)P, sizeof(*sets));
    gcoll_coll_args_t args = { .coll = GCOLL_COLL_BARRIER, .dt_size = 1,
                               .flags = GCOLL_ARGS_NODE_STEPS };
    gcoll_status_t st = GCOLL_SUCCESS;
    int bad = 0, save = gcoll_log_level;
    n_cases++;
    gcoll_log_level = -1;   /* a declining builder WARNs; n_declined says it */
    for (int r = 0; r < P && st == GCOLL_SUCCESS; r++) {
        gcoll_group_t g = { P, r, NULL, node_of };
        sets[r] = calloc((size_t)P, 1);
        sets[r][r] = 1;
        ptrs[r] = &know[r];
        st = gcoll_algo_build(algo, &args, &g, GCOLL_UINT8, GCOLL_SUM, &orig[r]);
        if (st != GCOLL_SUCCESS) break;
        gcoll_sched_reset(&know[r], GCOLL_UINT8, GCOLL_MAX);
        for (uint32_t rd = 0; rd < orig[r].nrounds; rd++) {
            uint32_t nrecv = 0, end = orig[r].round_end[rd];
            for (uint32_t i = gcoll_sched_round_begin(&orig[r], rd); i < end; i++) {
                const gcoll_step_t *sp = &orig[r].steps[i];
                if (sp->type == GCOLL_STEP_SEND)
                    gcoll_sched_send(&know[r], sp->peer, gcoll_bref(GCOLL_BUF_RECV, 0), (size_t)P);
                if (sp->type == GCOLL_STEP_RECV)
                    gcoll_sched_recv(&know[r], sp->peer,
                                     gcoll_bref(GCOLL_BUF_SCRATCH, (size_t)P * nrecv++), (size_t)P);
            }
            for (uint32_t k = 0; k < nrecv; k++)
                gcoll_sched_reduce(&know[r], gcoll_bref(GCOLL_BUF_RECV, 0), gcoll_bref(GCOLL_BUF_RECV, 0),
                                   gcoll_bref(GCOLL_BUF_SCRATCH, (size_t)P * k), (size_t)P);
            /* A node barrier: everyone on the node learns what anyone there knew. */
            for (uint32_t i = gcoll_sched_round_begin(&orig[r], rd); i < end; i++)
                if (orig[r].steps[i].type == GCOLL_STEP_NODE)
                    gcoll_sched_node(&know[r], GCOLL_COLL_ALLREDUCE, gcoll_bref(GCOLL_BUF_RECV, 0),
                                     gcoll_bref(GCOLL_BUF_RECV, 0), (size_t)P, 0);
            if (know[r].scratch_bytes < (size_t)P * nrecv) know[r].scratch_bytes = (size_t)P * nrecv;
            gcoll_sched_round(&know[r]);
        }
        st = gcoll_sched_finish(&know[r]);
    }
    gcoll_log_level = save;
    if (st == GCOLL_SUCCESS) {
        gcoll_sim_t sim = { .nranks = P, .node_of = node_of };
        st = gcoll_sim_run(&sim, ptrs, NULL, (void *const *)sets);
    }
    char why[600];
    if (judge_decline(algo, P, node_of, st, why, sizeof(why))) {
        fail_line(&c, "barrier: %s", why);
        bad = 1;
    } else if (st == GCOLL_ERR_NOT_SUPPORTED) {
        n_declined++;
        bad = -1;
    } else if (st != GCOLL_SUCCESS) {
        fail_line(&c, "barrier: %s: %s", gcoll_strerror(st), gcoll_last_error());
        bad = 1;
    }
    for (int r = 0; r < P && !bad; r++)
        for (int j = 0; j < P && !bad; j++)
            if (!sets[r][j]) {
                fail_line(&c, "barrier: rank %d can leave without hearing from rank %d", r, j);
                bad = 1;
            }
    for (int r = 0; r < P; r++) {
        gcoll_sched_fini(&orig[r]);
        gcoll_sched_fini(&know[r]);
        free(sets[r]);
    }
    free(orig); free(know); free(ptrs); free(sets);
    n_fail += bad == 1;
    return bad;
}

/* ------------------------------------ direct algorithms, to test the test ---- */

/* Direct algorithms written here, with known-bad variants: the checker must
 * pass the former and fail the latter, or it proves nothing. */
enum { DIRECT_OK = 0, DIRECT_SKIP_ONE, DIRECT_TOUCH_DST, DIRECT_DECLINE };
static int direct_mode;

/* Everyone sends its input to everyone, then reduces what it received. */
static gcoll_status_t direct_allreduce(const gcoll_coll_args_t *a, const gcoll_group_t *g,
                                       gcoll_sched_t *s)
{
    size_t bytes = a->count * a->dt_size;
    if (direct_mode == DIRECT_DECLINE)
        return GCOLL_ERROR(GCOLL_ERR_NOT_SUPPORTED, "direct declines (a checker self-test)");
    gcoll_bref_t tmp = gcoll_sched_scratch(s, bytes * (size_t)g->size);
    for (int j = 0; j < g->size; j++) {
        if (j == g->me) continue;
        gcoll_sched_send(s, gcoll_group_rank(g, j), a->src, bytes);
        gcoll_sched_recv(s, gcoll_group_rank(g, j), gcoll_bref_add(tmp, (size_t)j * bytes), bytes);
    }
    gcoll_sched_copy(s, a->dst, a->src, bytes);
    for (int j = 0; j < g->size; j++) {
        if (j == g->me || (direct_mode == DIRECT_SKIP_ONE && j == g->size - 1)) continue;
        gcoll_sched_reduce(s, a->dst, a->dst, gcoll_bref_add(tmp, (size_t)j * bytes), bytes);
    }
    return GCOLL_SUCCESS;
}

/* Everyone sends to the root; DIRECT_TOUCH_DST also scribbles on non-roots' dst. */
static gcoll_status_t direct_reduce(const gcoll_coll_args_t *a, const gcoll_group_t *g,
                                    gcoll_sched_t *s)
{
    size_t bytes = a->count * a->dt_size;
    if (g->me != a->root) {
        gcoll_sched_send(s, gcoll_group_rank(g, a->root), a->src, bytes);
        if (direct_mode == DIRECT_TOUCH_DST) gcoll_sched_copy(s, a->dst, a->src, bytes);
        return GCOLL_SUCCESS;
    }
    gcoll_bref_t tmp = gcoll_sched_scratch(s, bytes * (size_t)g->size);
    for (int j = 0; j < g->size; j++)
        if (j != g->me)
            gcoll_sched_recv(s, gcoll_group_rank(g, j), gcoll_bref_add(tmp, (size_t)j * bytes), bytes);
    gcoll_sched_copy(s, a->dst, a->src, bytes);
    for (int j = 0; j < g->size; j++)
        if (j != g->me)
            gcoll_sched_reduce(s, a->dst, a->dst, gcoll_bref_add(tmp, (size_t)j * bytes), bytes);
    return GCOLL_SUCCESS;
}

static const gcoll_algo_t direct_allreduce_algo = {
    "direct", GCOLL_COLL_ALLREDUCE, "test only", direct_allreduce
};
static const gcoll_algo_t direct_reduce_algo = {
    "direct", GCOLL_COLL_REDUCE, "test only", direct_reduce
};
/* Named like the single-node algorithm, which must decline several nodes. */
static const gcoll_algo_t direct_as_shm_algo = {
    "shm", GCOLL_COLL_ALLREDUCE, "test only", direct_allreduce
};

static void checker_expect(const char *what, int failed, int want_fail)
{
    n_cases++;
    if (failed == want_fail) return;
    printf("FAIL checker self-test: %s %s\n", what, want_fail ? "was not caught" : "failed");
    n_fail++;
}

static int run_quiet(const tcase_t *c)
{
    int save = gcoll_log_level, bad;
    quiet = 1;
    gcoll_log_level = -1;
    bad = run_case(c);
    quiet = 0;
    gcoll_log_level = save;
    return bad;
}

static void test_checker(void)
{
    static const gcoll_dtype_t dts[] = { GCOLL_INT8, GCOLL_UINT32, GCOLL_FLOAT16, GCOLL_BFLOAT16,
                                         GCOLL_FLOAT64 };
    for (int P = 1; P <= 5; P++)
        for (int k = 0; k < 5; k++)
            for (int op = 0; op < GCOLL_OP_COUNT; op++) {
                tcase_t c = { &direct_allreduce_algo, P, 13, dts[k], (gcoll_op_t)op, 0, P & 1, 0, 0,
                              LAYOUT_ONE };
                checker_expect("direct allreduce", run_quiet(&c), 0);
                c.algo = &direct_reduce_algo;
                c.root = P - 1;
                checker_expect("direct reduce", run_quiet(&c), 0);
            }
    tcase_t c = { &direct_allreduce_algo, 3, 7, GCOLL_INT32, GCOLL_SUM, 0, 0, 0, 0, LAYOUT_ONE };
    direct_mode = DIRECT_SKIP_ONE;
    checker_expect("an allreduce that skips one rank's data", run_quiet(&c), 1);
    c.dt = GCOLL_FLOAT32;
    c.op = GCOLL_MAX;
    checker_expect("an allreduce (max) that skips one rank's data", run_quiet(&c), 1);
    direct_mode = DIRECT_TOUCH_DST;
    c.algo = &direct_reduce_algo;
    c.root = 1;
    checker_expect("a reduce that writes non-root destinations", run_quiet(&c), 1);
    /* declines: only those of expected_declines pass, and those must happen */
    direct_mode = DIRECT_DECLINE;
    c.algo = &direct_allreduce_algo;
    c.root = 0;
    checker_expect("a decline that expected_declines does not list", run_quiet(&c), 1);
    c.algo = &direct_as_shm_algo;
    c.nranks = 4;
    c.layout = 1;   /* 2/node */
    checker_expect("a listed decline (shm, several nodes) with another reason", run_quiet(&c), 1);
    direct_mode = DIRECT_OK;
    checker_expect("an algorithm serving a shape it is listed to decline", run_quiet(&c), 1);
    for (size_t i = 0; i < N_EXPECTED_DECLINES; i++) expected_declines[i].seen = 0;
}

/* Rank 1 of a node of 2 receives 8 B at offset 0 and runs an early node
 * bcast from local rank 0 (a write on rank 1) at offset `at`: the early
 * check must fail iff the two meet. */
static int early_case(size_t at)
{
    tcase_t c = { .algo = &direct_reduce_algo, .nranks = 2, .layout = LAYOUT_ONE };
    gcoll_sched_t s;
    gcoll_sched_init(&s);
    gcoll_sched_reset(&s, GCOLL_INT32, GCOLL_SUM);
    gcoll_sched_recv(&s, 0, gcoll_bref(GCOLL_BUF_RECV, 0), 8);
    gcoll_sched_round(&s);
    gcoll_sched_insert_node_early(&s, 0, GCOLL_COLL_BCAST, gcoll_bref(GCOLL_BUF_RECV, at),
                                  gcoll_bref(GCOLL_BUF_RECV, at), 8, 0);
    gcoll_sched_finish(&s);
    quiet = 1;
    int bad = check_early_rank(&c, &s, 1, NULL);
    quiet = 0;
    gcoll_sched_fini(&s);
    return bad;
}

static void test_early_checker(void)
{
    checker_expect("an early node step beside a receive", early_case(8), 0);
    checker_expect("an early node step over a receive's buffer", early_case(4), 1);
}

/* ------------------------------------------- the simulator on its own ---- */

#define SIM_MAX_P 4

/* Hand-built schedules of up to SIM_MAX_P ranks; recv buffers of 64 B each,
 * rank r's filled with int32 values 100*r + i. */
typedef struct {
    int             P;
    gcoll_sched_t   s[SIM_MAX_P];
    gcoll_sched_t  *ptrs[SIM_MAX_P];
    int32_t         buf[SIM_MAX_P][16];
    void           *recv[SIM_MAX_P];
    uint64_t        sent[SIM_MAX_P], inter[SIM_MAX_P];
    gcoll_sim_t     sim;
} hand_t;

static void hand_init(hand_t *h, int P)
{
    memset(h, 0, sizeof(*h));
    h->P = P;
    for (int r = 0; r < P; r++) {
        gcoll_sched_init(&h->s[r]);
        gcoll_sched_reset(&h->s[r], GCOLL_INT32, GCOLL_SUM);
        h->ptrs[r] = &h->s[r];
        h->recv[r] = h->buf[r];
        for (int i = 0; i < 16; i++) h->buf[r][i] = 100 * r + i;
    }
    h->sim.nranks = P;
    h->sim.bytes_sent = h->sent;
    h->sim.bytes_inter = h->inter;
}

static gcoll_status_t hand_run(hand_t *h)
{
    for (int r = 0; r < h->P; r++) gcoll_sched_finish(&h->s[r]);
    int save = gcoll_log_level;
    gcoll_log_level = -1;   /* the failures below are expected: keep stderr clean */
    gcoll_status_t st = gcoll_sim_run(&h->sim, h->ptrs, NULL, h->recv);
    gcoll_log_level = save;
    for (int r = 0; r < h->P; r++) gcoll_sched_fini(&h->s[r]);
    return st;
}

static gcoll_bref_t R(size_t off) { return gcoll_bref(GCOLL_BUF_RECV, off); }

static void sim_expect(const char *what, gcoll_status_t got, gcoll_status_t want,
                       const char *needle)
{
    n_cases++;
    if (got == want && (!needle || strstr(gcoll_last_error(), needle))) return;
    printf("FAIL simulator: %s: got %s (\"%s\"), expected %s%s%s\n", what, gcoll_strerror(got),
           got ? gcoll_last_error() : "", gcoll_strerror(want), needle ? " mentioning " : "",
           needle ? needle : "");
    n_fail++;
}

static void sim_check(const char *what, int ok)
{
    n_cases++;
    if (ok) return;
    printf("FAIL simulator: %s\n", what);
    n_fail++;
}

/* Rank 0 sends 8 B to ranks 1 and 2 in one round; rank 1 adds them to its own. */
static void build_fanout(hand_t *h)
{
    gcoll_sched_send(&h->s[0], 1, R(0), 8);
    gcoll_sched_send(&h->s[0], 2, R(8), 8);
    gcoll_sched_recv(&h->s[1], 0, R(16), 8);
    gcoll_sched_reduce(&h->s[1], R(16), R(16), R(0), 8);
    gcoll_sched_recv(&h->s[2], 0, R(16), 8);
}

static void test_sim_cost(void)
{
    static const gcoll_sim_cost_t cost = { .alpha_intra = 1, .beta_intra = 0.5,
                                           .alpha_inter = 10, .beta_inter = 1, .gamma = 0.25 };
    static const int nodes[3] = { 0, 0, 1 };
    hand_t h;

    /* Two nodes: rank 0's intra and inter links work side by side. */
    hand_init(&h, 3);
    h.sim.cost = &cost;
    h.sim.node_of = nodes;
    build_fanout(&h);
    sim_expect("fan-out over two nodes", hand_run(&h), GCOLL_SUCCESS, NULL);
    sim_check("fan-out data: rank 1 got and reduced rank 0's bytes",
              h.buf[1][4] == 0 + 100 && h.buf[1][5] == 1 + 101 && h.buf[2][4] == 2 && h.buf[2][5] == 3);
    sim_check("inter-node message time: alpha_inter + 8 B * beta_inter = 18", h.sim.time == 18);
    sim_check("bytes counted: 16 sent by rank 0, 8 of them inter-node",
              h.sent[0] == 16 && h.inter[0] == 8 && h.sent[1] == 0 && h.inter[1] == 0);

    /* One node: the second send leaves after the first (4 + 4 + alpha). */
    hand_init(&h, 3);
    h.sim.cost = &cost;
    build_fanout(&h);
    sim_expect("fan-out in one node", hand_run(&h), GCOLL_SUCCESS, NULL);
    sim_check("send serialisation: second message arrives at 9", h.sim.time == 9);

    /* Receiver side: rank 1 ends at arrival 5 + reduce 8 B * gamma = 7. */
    hand_init(&h, 2);
    h.sim.cost = &cost;
    gcoll_sched_send(&h.s[0], 1, R(0), 8);
    gcoll_sched_recv(&h.s[1], 0, R(16), 8);
    gcoll_sched_reduce(&h.s[1], R(16), R(16), R(0), 8);
    sim_expect("send + reduce", hand_run(&h), GCOLL_SUCCESS, NULL);
    sim_check("reduce cost: 1 + 4 + 2 = 7", h.sim.time == 7);
}

static void test_sim_errors(void)
{
    hand_t h;

    hand_init(&h, 2);
    gcoll_sched_recv(&h.s[1], 0, R(0), 4);
    sim_expect("receive without a send", hand_run(&h), GCOLL_ERR_INTERNAL, "rank 1 (round 0");

    hand_init(&h, 2);
    gcoll_sched_send(&h.s[0], 1, R(0), 8);
    gcoll_sched_recv(&h.s[1], 0, R(0), 4);
    sim_expect("size mismatch", hand_run(&h), GCOLL_ERR_INTERNAL, "expects 4 B");

    hand_init(&h, 2);
    gcoll_sched_send(&h.s[0], 1, R(0), 4);
    sim_expect("send never received", hand_run(&h), GCOLL_ERR_INTERNAL, "never received");

    hand_init(&h, 2);   /* each waits for the other before sending */
    for (int r = 0; r < 2; r++) {
        gcoll_sched_recv(&h.s[r], 1 - r, R(0), 4);
        gcoll_sched_round(&h.s[r]);
        gcoll_sched_send(&h.s[r], 1 - r, R(4), 4);
    }
    sim_expect("cyclic wait", hand_run(&h), GCOLL_ERR_INTERNAL, "deadlock, 2 of 2");

    hand_init(&h, 2);
    gcoll_sched_send(&h.s[0], 5, R(0), 4);
    sim_expect("peer out of range", hand_run(&h), GCOLL_ERR_INTERNAL, "outside [0, 2)");

    hand_init(&h, 2);
    gcoll_sched_copy(&h.s[0], gcoll_bref(GCOLL_BUF_SEND, 0), R(0), 4);
    sim_expect("write to the send buffer", hand_run(&h), GCOLL_ERR_INTERNAL, "read-only");

    static const size_t sizes[2] = { 64, 64 };
    hand_init(&h, 2);
    h.sim.recv_bytes = sizes;
    gcoll_sched_send(&h.s[0], 1, R(0), 8);
    gcoll_sched_recv(&h.s[1], 0, R(60), 8);
    sim_expect("receive past the buffer end", hand_run(&h), GCOLL_ERR_INTERNAL, "reaches outside");

    hand_init(&h, 2);
    gcoll_sched_reduce(&h.s[0], R(0), R(4), R(32), 8);
    sim_expect("partially overlapping reduce", hand_run(&h), GCOLL_ERR_INTERNAL, "overlapping");
}

/* The one-node algorithms are one NODE step each, carrying the segment's
 * form flag that makes them what their name says (shm_sliced: the sliced
 * pipeline, shm_cma: the single copy); a lost flag would run shm's form
 * under their name, with the same results, so only this sees it. */
static void test_node_flags(void)
{
    static const struct { gcoll_coll_t coll; const char *name; unsigned flags; } want[] = {
        { GCOLL_COLL_ALLREDUCE, "shm", 0 },
        { GCOLL_COLL_ALLREDUCE, "shm_sliced", GCOLL_STEP_SLICED },
        { GCOLL_COLL_BCAST, "shm", 0 },
        { GCOLL_COLL_BCAST, "shm_cma", GCOLL_STEP_SINGLE },
        { GCOLL_COLL_ALLGATHER, "shm", 0 },
        { GCOLL_COLL_ALLGATHER, "shm_cma", GCOLL_STEP_SINGLE },
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        char what[96];
        snprintf(what, sizeof(what), "%s %s: one NODE step with flags %u",
                 gcoll_coll_name(want[i].coll), want[i].name, want[i].flags);
        const gcoll_algo_t *algo = gcoll_algo_find(want[i].coll, want[i].name);
        gcoll_coll_args_t a = { .coll = want[i].coll, .count = 64, .dt_size = 4,
                                .src = gcoll_bref(GCOLL_BUF_SEND, 0),
                                .dst = gcoll_bref(GCOLL_BUF_RECV, 0),
                                .flags = GCOLL_ARGS_NODE_STEPS };
        gcoll_group_t g = { 2, 0, NULL, NULL };
        gcoll_sched_t s;
        gcoll_sched_init(&s);
        int ok = algo && gcoll_algo_build(algo, &a, &g, GCOLL_FLOAT32, GCOLL_SUM, &s) == 0 &&
                 s.nsteps == 1 && gcoll_step_is_node(&s.steps[0]) &&
                 s.steps[0].flags == want[i].flags;
        gcoll_sched_fini(&s);
        sim_check(what, ok);
    }
}

/* Two messages from one peer match that peer's receives in order. */
static void test_sim_order(void)
{
    hand_t h;
    hand_init(&h, 2);
    gcoll_sched_send(&h.s[0], 1, R(0), 4);
    gcoll_sched_send(&h.s[0], 1, R(4), 8);
    gcoll_sched_recv(&h.s[1], 0, R(32), 4);
    gcoll_sched_round(&h.s[1]);
    gcoll_sched_recv(&h.s[1], 0, R(48), 8);
    sim_expect("two messages, matched in order across rounds", hand_run(&h), GCOLL_SUCCESS, NULL);
    sim_check("in-order data", h.buf[1][8] == 0 && h.buf[1][12] == 1 && h.buf[1][13] == 2);

    hand_init(&h, 2);
    gcoll_sched_send(&h.s[0], 1, R(0), 4);
    gcoll_sched_send(&h.s[0], 1, R(4), 8);
    gcoll_sched_recv(&h.s[1], 0, R(32), 8);
    gcoll_sched_recv(&h.s[1], 0, R(48), 4);
    sim_expect("two messages received in the wrong order", hand_run(&h), GCOLL_ERR_INTERNAL,
               "expects 8 B");
}

/* A ring shift of 256 ranks x 64 rounds x 64 KiB, and a 256-rank deadlock:
 * both must be quick (the scheduler is not O(P) per message). */
static void test_sim_scale(void)
{
    enum { P = 256, ROUNDS = 64, BYTES = 1 << 16 };
    gcoll_sched_t *s = calloc(P, sizeof(*s));
    gcoll_sched_t **ptrs = calloc(P, sizeof(*ptrs));
    void **bufs = calloc(P, sizeof(*bufs));
    clock_t t0 = clock();
    for (int r = 0; r < P; r++) {
        gcoll_sched_init(&s[r]);
        gcoll_sched_reset(&s[r], GCOLL_UINT8, GCOLL_SUM);
        ptrs[r] = &s[r];
        bufs[r] = calloc(2, BYTES);
        for (int k = 0; k < ROUNDS; k++) {
            gcoll_sched_send(&s[r], (r + 1) % P, R((size_t)(k & 1) * BYTES), BYTES);
            gcoll_sched_recv(&s[r], (r + P - 1) % P, R((size_t)(~k & 1) * BYTES), BYTES);
            gcoll_sched_round(&s[r]);
        }
        gcoll_sched_finish(&s[r]);
    }
    gcoll_sim_t sim = { .nranks = P };
    sim_expect("256-rank ring shift", gcoll_sim_run(&sim, ptrs, NULL, bufs), GCOLL_SUCCESS, NULL);
    double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    sim_check("256 ranks x 64 rounds x 64 KiB simulated in under 5 s", secs < 5);
    double one = gcoll_sim_cost_default.alpha_intra + BYTES * gcoll_sim_cost_default.beta_intra;
    sim_check("ring shift time = rounds x (alpha + bytes beta)",
              fabs(sim.time - ROUNDS * one) < 1e-9 * ROUNDS * one + 1e-15);
    for (int r = 0; r < P; r++) {   /* rank 0 never sends: everyone waits */
        gcoll_sched_reset(&s[r], GCOLL_UINT8, GCOLL_SUM);
        if (r) gcoll_sched_send(&s[r], (r + 1) % P, R(0), 8);
        gcoll_sched_recv(&s[r], (r + P - 1) % P, R(8), 8);
        gcoll_sched_finish(&s[r]);
    }
    int save = gcoll_log_level;
    gcoll_log_level = -1;
    sim_expect("256-rank chain with a missing send", gcoll_sim_run(&sim, ptrs, NULL, bufs),
               GCOLL_ERR_INTERNAL, "deadlock, 1 of 256");
    gcoll_log_level = save;
    for (int r = 0; r < P; r++) {
        gcoll_sched_fini(&s[r]);
        free(bufs[r]);
    }
    free(s); free(ptrs); free(bufs);
}

/* ------------------------------------------------------------ matrix ---- */

typedef struct { gcoll_dtype_t dt; gcoll_op_t op; } combo_t;

/* Skip cases whose buffers would exceed this in total (alltoall at P = 128). */
#define CASE_BYTES_MAX ((size_t)96 << 20)

static int quick;          /* GCOLL_SIM_TEST_QUICK: a reduced matrix */
static long n_skipped;

static size_t case_bytes(const gcoll_algo_t *algo, int P, size_t count, gcoll_dtype_t dt)
{
    gcoll_coll_args_t a = { .coll = algo->coll, .count = count, .dt_size = gcoll_dtype_size(dt) };
    size_t src, dst;
    gcoll_coll_buf_bytes(&a, P, &src, &dst);
    return (size_t)P * (3 * src + dst);   /* inputs, send buffers, messages; outputs */
}

/* One case in the given node layout, or on one node if the builder declines
 * that layout (hierarchical algorithms may need regular nodes). */
static void run_layout(tcase_t c)
{
    if (run_case(&c) == -1 && c.layout != LAYOUT_ONE) {
        c.layout = LAYOUT_ONE;
        run_case(&c);
    }
}

enum { ROOTS_ALL = -1, ROOTS_FEW = -2 };   /* else one root, taken modulo P */

/* Roots to try: every one, or 0, 1, P/2, P-1 (distinct), or the one asked. */
static int roots_for(const gcoll_algo_t *algo, int P, int pick, int *roots)
{
    int cand[4] = { 0, 1, P / 2, P - 1 }, n = 0;
    if (!has_root(algo->coll) || pick >= 0) {
        roots[0] = has_root(algo->coll) ? pick % P : 0;
        return 1;
    }
    if (pick == ROOTS_ALL) {
        for (int r = 0; r < P; r++) roots[n++] = r;
        return n;
    }
    for (int i = 0; i < 4; i++) {
        int dup = cand[i] >= P;
        for (int j = 0; j < n; j++) dup |= roots[j] == cand[i];
        if (!dup) roots[n++] = cand[i];
    }
    return n;
}

/* Every in-place choice of one (P, count, dtype, op) for the given roots. */
static void run_roots(const gcoll_algo_t *algo, int P, size_t count, combo_t k, size_t chunk,
                      int layout, int pick)
{
    gcoll_coll_t coll = algo->coll;
    int roots[256], nroots = roots_for(algo, P, pick, roots);
    if (case_bytes(algo, P, count, k.dt) > CASE_BYTES_MAX) {
        n_skipped++;
        return;
    }
    for (int i = 0; i < nroots; i++) {
        int root = roots[i];
        for (int inplace = 0; inplace <= has_inplace(coll); inplace++) {
            tcase_t c = { algo, P, count, k.dt, k.op, root, inplace, chunk, 0, layout };
            run_layout(c);
        }
    }
}

/* The (dtype, op) pairs of one (algorithm, P, count). */
static int combos_for(const gcoll_algo_t *algo, int P, size_t count, combo_t *out)
{
    static const gcoll_dtype_t movers[] = { GCOLL_INT8, GCOLL_FLOAT16, GCOLL_FLOAT32, GCOLL_FLOAT64 };
    int n = 0;
    if (!is_reducing(algo->coll)) {
        if (P <= 8) {
            for (int i = 0; i < 4; i++) out[n++] = (combo_t){ movers[i], GCOLL_SUM };
        } else {
            out[n++] = (combo_t){ GCOLL_INT32, GCOLL_SUM };
            out[n++] = (combo_t){ movers[(P + count) % 4], GCOLL_SUM };
        }
        return n;
    }
    if (P <= 8 && !quick) {
        for (int d = 0; d < GCOLL_DTYPE_COUNT; d++)
            for (int o = 0; o < GCOLL_OP_COUNT; o++) out[n++] = (combo_t){ (gcoll_dtype_t)d, (gcoll_op_t)o };
        return n;
    }
    size_t x = (size_t)P * 7 + count;   /* one varying over the matrix */
    combo_t vary = { (gcoll_dtype_t)(x % GCOLL_DTYPE_COUNT), (gcoll_op_t)(x / 3 % GCOLL_OP_COUNT) };
    out[n++] = (combo_t){ GCOLL_INT32, GCOLL_SUM };
    if (has_blocks(algo->coll) && P >= 64) {   /* P*P*count work: two suffice */
        out[n++] = vary;
        return n;
    }
    out[n++] = (combo_t){ GCOLL_FLOAT32, GCOLL_MAX };
    out[n++] = (combo_t){ GCOLL_BFLOAT16, GCOLL_AVG };
    out[n++] = vary;
    return n;
}

static void run_matrix(const gcoll_algo_t *algo)
{
    static const int big_P[] = { 24, 32, 33, 64, 100, 128 };
    int Ps[32], nP = 0;
    for (int P = 1; P <= (quick ? 8 : 17); P++) Ps[nP++] = P;
    for (int i = 0; i < (quick ? 2 : 6); i++) Ps[nP++] = big_P[i];
    for (int ip = 0; ip < nP; ip++) {
        int P = Ps[ip];
        if (algo->coll == GCOLL_COLL_BARRIER) {
            for (int l = 0; l < LAYOUT_COUNT; l++) check_barrier(algo, P, l);
            continue;
        }
        size_t counts[6] = { 0, 1, 7, 1021, (size_t)P - 1, 3 * (size_t)P + 1 };
        for (int ic = 0; ic < 6; ic++) {
            /* P blocks per rank: keep P*P*count (the work of a case) small */
            if (has_blocks(algo->coll) && ((counts[ic] == 1021 && P > 17) ||
                                           (counts[ic] > (size_t)P && P >= 64)))
                continue;
            int dup = 0;
            for (int j = 0; j < ic; j++) dup |= counts[j] == counts[ic];
            if (dup) continue;
            combo_t k[GCOLL_DTYPE_COUNT * GCOLL_OP_COUNT];
            int nk = combos_for(algo, P, counts[ic], k);
            /* every root (P <= 8) or a few with the first (dtype, op); the
             * others each with one root, rotating */
            for (int i = 0; i < nk; i++)
                run_roots(algo, P, counts[ic], k[i], 0, (ip + ic + i) % LAYOUT_COUNT,
                          i ? (int)(ic + i) : P <= 8 ? ROOTS_ALL : ROOTS_FEW);
        }
    }
}

/* Sizes beyond the pipelining chunk: a forced 256 B chunk, and the default
 * chunk with ~300 kB per rank block. */
static void run_big(const gcoll_algo_t *algo)
{
    static const int small_chunk_P[] = { 2, 3, 5, 8, 13 }, big_P[] = { 2, 3, 7, 16 };
    if (algo->coll == GCOLL_COLL_BARRIER) return;
    combo_t sum = { GCOLL_FLOAT32, GCOLL_SUM }, max = { GCOLL_INT32, GCOLL_MAX };
    for (int i = 0; i < (quick ? 2 : 5); i++) {
        run_roots(algo, small_chunk_P[i], 5000, sum, 256, i % LAYOUT_COUNT, ROOTS_FEW);
        if (is_reducing(algo->coll)) run_roots(algo, small_chunk_P[i], 4999, max, 256, LAYOUT_ONE, ROOTS_FEW);
    }
    for (int i = 0; i < (quick ? 1 : 4); i++) {
        size_t count = 75000;   /* 300 kB of float32 */
        if (has_blocks(algo->coll)) count /= (size_t)big_P[i];   /* ~300 kB per rank */
        run_roots(algo, big_P[i], count, sum, 0, (i + 1) % LAYOUT_COUNT, ROOTS_FEW);
    }
}

/* Random non-integer floats: all ranks must agree bit for bit. */
static void run_agree(const gcoll_algo_t *algo)
{
    static const int Ps[] = { 3, 5, 8, 13, 32 };
    static const gcoll_dtype_t dts[] = { GCOLL_FLOAT32, GCOLL_BFLOAT16, GCOLL_FLOAT16 };
    if (algo->coll != GCOLL_COLL_ALLREDUCE) return;
    for (int ip = 0; ip < (quick ? 2 : 5); ip++)
        for (int d = 0; d < 3; d++)
            for (int big = 0; big < 2; big++) {
                tcase_t c = { algo, Ps[ip], big ? 5000 : 1021, dts[d], GCOLL_SUM, 0,
                              ip & 1, big ? 256 : 0, 1, (ip + d) % LAYOUT_COUNT };
                run_layout(c);
                c.op = GCOLL_AVG;
                run_layout(c);
            }
}

/* Every node layout on a smaller matrix. */
static void run_layouts(const gcoll_algo_t *algo)
{
    static const int Ps[] = { 2, 3, 4, 5, 6, 7, 8, 9, 12, 16 };
    static const size_t counts[] = { 7, 1021 };
    combo_t k[2] = { { GCOLL_INT32, GCOLL_SUM }, { GCOLL_FLOAT32, GCOLL_AVG } };
    if (algo->coll == GCOLL_COLL_BARRIER) return;
    for (int ip = 0; ip < (quick ? 4 : 10); ip++)
        for (int l = 0; l < LAYOUT_COUNT; l++)
            for (int ic = 0; ic < 2; ic++)
                for (int ik = 0; ik < (is_reducing(algo->coll) ? 2 : 1); ik++)
                    for (int root = 0; root < (has_root(algo->coll) ? 2 : 1); root++)
                        for (int inplace = 0; inplace <= has_inplace(algo->coll); inplace++) {
                            tcase_t c = { algo, Ps[ip], counts[ic], k[ik].dt, k[ik].op,
                                          root ? Ps[ip] - 1 : 0, inplace, 0, 0, l };
                            run_case(&c);
                        }
}

/* The hierarchical pipelines (segments of args->chunk_bytes, else 4 MiB):
 * with 256 B segments of float32 (64 elements) one segment, two with a
 * one-element tail, many with and without a tail; every root; even and
 * uneven node shapes.  Then 4 MiB + 12 B at the default segment.
 * allgather and reduce_scatter pipeline along the leaders' ring, from 3
 * regular nodes and a region of chunk_bytes (else 1 MiB): { 5, 5 } and the
 * last four shapes have 3 or more, and 1 MiB + 24 B regions over 3 nodes of
 * 2 check the default threshold. */
static void run_pipeline(const gcoll_algo_t *algo)
{
    static const struct { int P, layout; } shapes[] = {
        { 4, 1 }, { 5, 1 }, { 6, 3 }, { 7, 3 }, { 9, 2 }, { 6, 4 }, { 5, 5 }, { 8, 2 },
        { 6, 1 }, { 9, 3 }, { 12, 2 }, { 8, 1 },
    };
    static const size_t counts[] = { 64, 65, 128, 200, 1000 };
    combo_t sum = { GCOLL_FLOAT32, GCOLL_SUM }, max = { GCOLL_INT32, GCOLL_MAX };
    if (strncmp(algo->name, "hier", 4) != 0 || algo->coll == GCOLL_COLL_BARRIER) return;
    int nshapes = quick ? 3 : (int)(sizeof(shapes) / sizeof(shapes[0]));
    for (int i = 0; i < nshapes; i++)
        for (int ic = 0; ic < 5; ic++) {
            run_roots(algo, shapes[i].P, counts[ic], sum, 256, shapes[i].layout, ROOTS_ALL);
            if (is_reducing(algo->coll))
                run_roots(algo, shapes[i].P, counts[ic], max, 256, shapes[i].layout, ROOTS_FEW);
        }
    if (!has_blocks(algo->coll))
        run_roots(algo, 4, ((size_t)1 << 20) + 3, sum, 0, 1, ROOTS_FEW);
    else if (algo->coll != GCOLL_COLL_ALLTOALL)
        run_roots(algo, 6, ((size_t)1 << 17) + 3, sum, 0, 1, ROOTS_FEW);
}

/* P = 128 with 1e5 elements, 8 ranks a node: the simulator must take this in
 * its stride. */
static void run_scale(const gcoll_algo_t *algo)
{
    if (quick || (algo->coll != GCOLL_COLL_ALLREDUCE && algo->coll != GCOLL_COLL_BCAST)) return;
    tcase_t c = { algo, 128, 100000, GCOLL_FLOAT32, GCOLL_SUM, 5, 0, 0, 0, 6 };
    run_layout(c);
}

static int selected(const gcoll_algo_t *algo, int argc, char **argv)
{
    char full[128];
    if (argc < 2) return 1;
    snprintf(full, sizeof(full), "%s/%s", gcoll_coll_name(algo->coll), algo->name);
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], full) == 0 || strcmp(argv[i], gcoll_coll_name(algo->coll)) == 0)
            return 1;
    return 0;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Usage: test_sim [collective | collective/algorithm ...] (default: all). */
int main(int argc, char **argv)
{
    double t0 = now();
    const char *q = getenv("GCOLL_SIM_TEST_QUICK");
    quick = q && *q && strcmp(q, "0") != 0;
    setvbuf(stdout, NULL, _IOLBF, 0);

    test_sim_cost();
    test_sim_errors();
    test_sim_order();
    test_sim_scale();
    test_checker();
    test_early_checker();
    test_node_flags();
    printf("simulator and checker self-tests: %ld failures\n", n_fail);

    for (const gcoll_algo_t *const *a = gcoll_algos; *a; a++) {
        if (!selected(*a, argc, argv)) continue;
        long f0 = n_fail, c0 = n_cases, d0 = n_declined, e0 = n_early;
        double t1 = now();
        algo_lines = 0;
        run_matrix(*a);
        run_big(*a);
        run_agree(*a);
        run_layouts(*a);
        run_scale(*a);
        run_pipeline(*a);
        n_fail += check_declines_seen(*a);
        printf("%-15s %-18s %6ld cases %5ld failed %5ld declined %6.2f s\n",
               gcoll_coll_name((*a)->coll), (*a)->name, n_cases - c0, n_fail - f0,
               n_declined - d0, now() - t1);
        if (n_early > e0)
            printf("%-15s %-18s %6ld of them pipelined (early NODE steps checked)\n",
                   gcoll_coll_name((*a)->coll), (*a)->name, n_early - e0);
    }
    printf("test_sim: %ld cases, %ld failed, %ld declined as expected (not run), %ld skipped "
           "as too large, %.1f s%s\n", n_cases, n_fail, n_declined, n_skipped, now() - t0,
           quick ? " (quick matrix)" : "");
    return n_fail ? 1 : 0;
}
