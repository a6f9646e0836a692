/* SPDX-License-Identifier: BSD-3-Clause */
/* peer_harness: one timing harness for libgcoll and the MPIs beside it.
 *
 * One source, compiled twice: plain MPI collectives (by each peer MPI's own
 * compiler), or with -DPEER_GCOLL the same loop calling libgcoll on a
 * communicator made from MPI_COMM_WORLD.  scripts/peers_report.sh builds and
 * launches every variant and turns the lines printed here into tables.
 *
 * Per collective and size, float32, op sum, root 0, out of place:
 *
 * | step      | what                                                        |
 * | --------- | ----------------------------------------------------------- |
 * | validate  | one untimed call on rank-dependent integers-in-float (sums   |
 * |           | exact in any order); every output element checked            |
 * | warm-up   | 1, 4, 16, ... calls until a round takes >= -w ms (at least   |
 * |           | two rounds); the slowest rank's fastest round calibrates     |
 * | blocks    | -b blocks of ceil(-t ms / per-call) calls; before each an    |
 * |           | MPI_Barrier, after each an MPI_Allreduce(MAX) of its time,   |
 * |           | on MPI_COMM_WORLD, as an application would; median of the    |
 * |           | block averages                                               |
 * | per-call  | about -p ms of calls (at least -P), each timed alone; one    |
 * |           | MPI_Reduce(MAX) afterwards makes sample i the slowest rank's |
 * |           | time of call i; p50, p99, mean                               |
 *
 * Bytes: the buffer of one call for allreduce, bcast and reduce; the block
 * of one rank for allgather (its send buffer) and reduce_scatter (its
 * receive block), as bench/gcoll_bench_*.  Clock: CLOCK_MONOTONIC for every
 * implementation (not each MPI's own MPI_Wtime).
 *
 * Output (rank 0, stdout), one line per (collective, size):
 *   peer impl=L coll=C ranks=N bytes=B count=E iters=I block_us=M
 *        block_min_us=. block_max_us=. calls=K p50_us=. p99_us=. mean_us=.
 *        valid=1|0
 * preceded by a "# peer_harness ..." line naming the library.  Exit status:
 * 0, 1 (a validation failed: its rows say valid=0), 2 (usage).
 * PEER_HARNESS_INJECT_ERROR=1 corrupts one result on rank 0 after each
 * validating call (a test hook: proves a wrong result is caught).
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <mpi.h>
#ifdef PEER_GCOLL
#include <gcoll.h>
#endif

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)
#define SENTINEL (-1.0f)            /* never a valid output: inputs are >= 0 */
#define MAX_CALLS 100000L           /* per-call samples kept per size */

typedef enum { C_ALLREDUCE, C_BCAST, C_REDUCE, C_ALLGATHER, C_REDUCE_SCATTER, C_COUNT } coll_t;

static const char *const coll_names[C_COUNT] = {
    "allreduce", "bcast", "reduce", "allgather", "reduce_scatter",
};

typedef struct {
    int     use[C_COUNT];
    size_t  min_bytes, max_bytes;
    size_t  factor;
    int     blocks;
    double  block_s, warm_s, percall_s;
    long    percall_min;
    const char *label;
} opts_t;

typedef struct {
    int     rank, size;
    int     inject;                 /* PEER_HARNESS_INJECT_ERROR=1: corrupt a result */
    float  *send, *recv;
    double *samples, *samples_max;
#ifdef PEER_GCOLL
    gcoll_comm_t gc;
#endif
} ctx_t;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- the collectives ---------------------------------------------------- */

#ifdef PEER_GCOLL
static void run(const ctx_t *c, coll_t coll, size_t count)
{
    gcoll_status_t st = GCOLL_SUCCESS;
    switch (coll) {
    case C_ALLREDUCE:
        st = gcoll_allreduce(c->send, c->recv, count, GCOLL_FLOAT32, GCOLL_SUM, c->gc);
        break;
    case C_BCAST:
        st = gcoll_bcast(c->recv, count, GCOLL_FLOAT32, 0, c->gc);
        break;
    case C_REDUCE:
        st = gcoll_reduce(c->send, c->recv, count, GCOLL_FLOAT32, GCOLL_SUM, 0, c->gc);
        break;
    case C_ALLGATHER:
        st = gcoll_allgather(c->send, c->recv, count, GCOLL_FLOAT32, c->gc);
        break;
    case C_REDUCE_SCATTER:
        st = gcoll_reduce_scatter(c->send, c->recv, count, GCOLL_FLOAT32, GCOLL_SUM, c->gc);
        break;
    default:
        break;
    }
    if (st != GCOLL_SUCCESS) {
        fprintf(stderr, "rank %d: gcoll_%s failed: %s: %s\n", c->rank, coll_names[coll],
                gcoll_strerror(st), gcoll_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}
#else
static void run(const ctx_t *c, coll_t coll, size_t count)
{
    int n = (int)count, rc = MPI_SUCCESS;
    switch (coll) {
    case C_ALLREDUCE:
        rc = MPI_Allreduce(c->send, c->recv, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        break;
    case C_BCAST:
        rc = MPI_Bcast(c->recv, n, MPI_FLOAT, 0, MPI_COMM_WORLD);
        break;
    case C_REDUCE:
        rc = MPI_Reduce(c->send, c->recv, n, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
        break;
    case C_ALLGATHER:
        rc = MPI_Allgather(c->send, n, MPI_FLOAT, c->recv, n, MPI_FLOAT, MPI_COMM_WORLD);
        break;
    case C_REDUCE_SCATTER:
        rc = MPI_Reduce_scatter_block(c->send, c->recv, n, MPI_FLOAT, MPI_SUM,
                                      MPI_COMM_WORLD);
        break;
    default:
        break;
    }
    if (rc != MPI_SUCCESS) {   /* MPI_ERRORS_ARE_FATAL makes this unreachable by default */
        fprintf(stderr, "rank %d: MPI %s failed (%d)\n", c->rank, coll_names[coll], rc);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}
#endif

/* ---- validation --------------------------------------------------------- */

/* Rank r's input element j: a small integer, so that any sum over up to
 * thousands of ranks is exact in float32 whatever the order. */
static float input(int r, size_t j)
{
    return (float)((j * 7 + (size_t)r * 13) % 1021 + (size_t)r % 64);
}

static float sum_over_ranks(int nranks, size_t j)
{
    double s = 0.0;
    for (int r = 0; r < nranks; r++) s += input(r, j);
    return (float)s;
}

/* Elements of the send and receive buffers of one call. */
static void buf_elems(coll_t coll, size_t count, int nranks, size_t *ns, size_t *nr)
{
    *ns = coll == C_REDUCE_SCATTER ? count * (size_t)nranks : coll == C_BCAST ? 0 : count;
    *nr = coll == C_ALLGATHER ? count * (size_t)nranks : count;
}

static float expected(const ctx_t *c, coll_t coll, size_t count, size_t i)
{
    switch (coll) {
    case C_ALLREDUCE:
    case C_REDUCE:         return sum_over_ranks(c->size, i);
    case C_BCAST:          return input(0, i);
    case C_ALLGATHER:      return input((int)(i / count), i % count);
    case C_REDUCE_SCATTER: return sum_over_ranks(c->size, (size_t)c->rank * count + i);
    default:               return SENTINEL;
    }
}

/* One untimed call on fresh inputs, every output element compared.
 * Returns 1 if every rank's output is right. */
static int validate(const ctx_t *c, coll_t coll, size_t count)
{
    size_t ns, nr, bad = 0, first = 0;
    long long bad_all, bad_here;
    int checks = coll != C_REDUCE || c->rank == 0;
    buf_elems(coll, count, c->size, &ns, &nr);
    for (size_t j = 0; j < ns; j++) c->send[j] = input(c->rank, j);
    for (size_t i = 0; i < nr; i++)
        c->recv[i] = coll == C_BCAST && c->rank == 0 ? input(0, i) : SENTINEL;
    run(c, coll, count);
    if (c->inject && c->rank == 0 && nr > 0) c->recv[0] += 1.0f;   /* test hook */
    for (size_t i = 0; checks && i < nr; i++)
        if (c->recv[i] != expected(c, coll, count, i) && bad++ == 0) first = i;
    if (bad)
        fprintf(stderr, "rank %d: VALIDATION FAILED: %s, %zu bytes: element %zu is %g, "
                "expected %g (%zu of %zu wrong)\n", c->rank, coll_names[coll],
                count * sizeof(float), first, (double)c->recv[first],
                (double)expected(c, coll, count, first), bad, nr);
    bad_here = (long long)bad;
    MPI_Allreduce(&bad_here, &bad_all, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    return bad_all == 0;
}

/* ---- timing ------------------------------------------------------------- */

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Warm up; returns seconds per call: the slowest rank's time of a round
 * over its calls, the least over the rounds after the first that took at
 * least an eighth of -w (one stalled round must not shrink every block).
 * The same value on every rank, so every rank derives the same counts. */
static double warm_up(const ctx_t *c, const opts_t *o, coll_t coll, size_t count)
{
    double per = 0.0;
    long n = 1;
    for (int round = 0;; round++, n *= 4) {
        double t0, t;
        int last;
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = now();
        for (long i = 0; i < n; i++) run(c, coll, count);
        t = now() - t0;
        MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        last = (round >= 1 && t >= o->warm_s) || n >= (1L << 26);
        if (round >= 1 && (t >= o->warm_s / 8 || last) && (per == 0.0 || t / (double)n < per))
            per = t / (double)n;
        if (last) break;
    }
    return per;
}

static long clamp_long(double v, long lo, long hi)
{
    return v < (double)lo ? lo : v > (double)hi ? hi : (long)(v + 0.5);
}

/* Median of the blocks' average time per call, in seconds.  A block that
 * ran in less than half of -t was sized from a warm-up that caught the
 * library slow (a size's first calls can be 30x slower for tens of ms on
 * a guest whose host reclaims idle memory): it is not kept, and the next
 * block is sized from it, so every kept block lasts about -t.  The same
 * decision on every rank (the slowest rank's time). */
static double time_blocks(const ctx_t *c, const opts_t *o, coll_t coll, size_t count,
                          long iters, double *lo, double *hi)
{
    double blk[64], med;
    int nb = o->blocks, k = 0;
    for (int tries = 0; k < nb && tries < 4 * nb; tries++) {
        double t0, t;
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = now();
        for (long i = 0; i < iters; i++) run(c, coll, count);
        t = now() - t0;
        MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (t < o->block_s / 2 && tries < 4 * nb - 1) {
            iters = clamp_long(o->block_s / (t > 0 ? t / (double)iters : 1e-9), iters + 1,
                               1L << 30);
            continue;
        }
        blk[k++] = t / (double)iters;
    }
    med = median(blk, k);   /* sorts */
    *lo = blk[0], *hi = blk[k - 1];
    return med;
}

/* Per-call times (slowest rank's per call) sorted on rank 0; p50/p99/mean. */
static void time_calls(const ctx_t *c, coll_t coll, size_t count, long calls, double *p50,
                       double *p99, double *mean)
{
    double s = 0.0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (long i = 0; i < calls; i++) {
        double t0 = now();
        run(c, coll, count);
        c->samples[i] = now() - t0;
    }
    MPI_Reduce(c->samples, c->samples_max, (int)calls, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (c->rank != 0) return;
    qsort(c->samples_max, (size_t)calls, sizeof(double), cmp_double);
    for (long i = 0; i < calls; i++) s += c->samples_max[i];
    *p50 = c->samples_max[(calls - 1) / 2];
    *p99 = c->samples_max[(long)ceil(0.99 * (double)calls) - 1];
    *mean = s / (double)calls;
}

/* Validate, warm up, time; rank 0 prints the row.  Returns 1 if valid. */
static int measure(const ctx_t *c, const opts_t *o, coll_t coll, size_t bytes)
{
    size_t count = bytes / sizeof(float);
    int ok = validate(c, coll, count);
    double per = warm_up(c, o, coll, count);
    long iters = clamp_long(o->block_s / per, 1, 1L << 30);
    double lo, hi, p50 = 0, p99 = 0, mean = 0;
    double blk = time_blocks(c, o, coll, count, iters, &lo, &hi);
    /* sized from the blocks (the warm-up may have caught a slow start) */
    long calls = clamp_long(o->percall_s / blk, o->percall_min, MAX_CALLS);
    time_calls(c, coll, count, calls, &p50, &p99, &mean);
    if (c->rank == 0) {
        printf("peer impl=%s coll=%s ranks=%d bytes=%zu count=%zu iters=%ld block_us=%.4f "
               "block_min_us=%.4f block_max_us=%.4f calls=%ld p50_us=%.4f p99_us=%.4f "
               "mean_us=%.4f valid=%d\n", o->label, coll_names[coll], c->size, bytes, count,
               iters, blk * 1e6, lo * 1e6, hi * 1e6, calls, p50 * 1e6, p99 * 1e6, mean * 1e6,
               ok);
        fflush(stdout);
    }
    return ok;
}

/* ---- options ------------------------------------------------------------ */

static void usage(const char *prog)
{
    printf("Usage: mpiexec -n N %s [options]\n"
           "Times MPI's (or, built with -DPEER_GCOLL, libgcoll's) collectives on float32\n"
           "sums, out of place, root 0, for scripts/peers_report.sh.\n\n"
           "  -c LIST    collectives: allreduce,bcast,reduce,allgather,reduce_scatter\n"
           "             (default all)\n"
           "  -m MIN:MAX sizes in bytes, K/M/G suffixes (default 8:64M); MAX is always\n"
           "             included\n"
           "  -f N       size step factor (default 4; 2 for every power of two)\n"
           "  -b N       timed blocks per size (default 7, at most 64)\n"
           "  -t MS      target milliseconds per block (default 20)\n"
           "  -w MS      warm-up: rounds until one takes this long (default 10)\n"
           "  -p MS      per-call loop: about this long (default 100)\n"
           "  -P N       per-call loop: at least N calls (default 50; p99 of fewer than\n"
           "             100 calls is the maximum)\n"
           "  -l LABEL   impl= label of the output lines (default %s)\n"
           "  -h         this text\n\n"
           "Bytes are one call's buffer (allreduce, bcast, reduce) or one rank's block\n"
           "(allgather, reduce_scatter).  Output: one 'peer key=value ...' line per\n"
           "collective and size on rank 0.  Exit status 0, 1 (a result was wrong), 2\n"
           "(usage).\n", prog,
#ifdef PEER_GCOLL
           "gcoll"
#else
           "mpi"
#endif
           );
}

static int parse_bytes(const char *s, size_t *out)
{
    char *end;
    unsigned long long v;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno || end == s) return -1;
    switch (*end) {
    case 'k': case 'K': v <<= 10, end++; break;
    case 'm': case 'M': v <<= 20, end++; break;
    case 'g': case 'G': v <<= 30, end++; break;
    default: break;
    }
    if (*end == 'B' || *end == 'b') end++;
    if (*end) return -1;
    *out = (size_t)v;
    return 0;
}

static int parse_colls(char *list, int use[C_COUNT])
{
    memset(use, 0, sizeof(int) * C_COUNT);
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        int k;
        for (k = 0; k < C_COUNT && strcmp(tok, coll_names[k]); k++) {}
        if (k == C_COUNT) return -1;
        use[k] = 1;
    }
    return 0;
}

static int parse_opts(int argc, char **argv, opts_t *o, int rank)
{
    char range[256], *colon;
    *o = (opts_t){ .min_bytes = 8, .max_bytes = 64 * MIB, .factor = 4, .blocks = 7,
                   .block_s = 0.020, .warm_s = 0.010, .percall_s = 0.100, .percall_min = 50,
#ifdef PEER_GCOLL
                   .label = "gcoll",
#else
                   .label = "mpi",
#endif
    };
    for (int k = 0; k < C_COUNT; k++) o->use[k] = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            if (rank == 0) usage(argv[0]);
            return 1;
        }
        if (a[0] != '-' || !a[1] || a[2] || !v || strlen(v) >= sizeof range) goto err_usage;
        i++;
        switch (a[1]) {
        case 'c':
            snprintf(range, sizeof range, "%s", v);
            if (parse_colls(range, o->use)) goto err_usage;
            break;
        case 'm':   /* on a copy: ps shows the arguments as given */
            snprintf(range, sizeof range, "%s", v);
            colon = strchr(range, ':');
            if (colon) *colon = '\0';
            if (parse_bytes(range, &o->min_bytes) ||
                parse_bytes(colon ? colon + 1 : range, &o->max_bytes))
                goto err_usage;
            if (!colon) o->min_bytes = o->max_bytes;
            break;
        case 'f': o->factor = (size_t)strtoul(v, NULL, 10); break;
        case 'b': o->blocks = atoi(v); break;
        case 't': o->block_s = atof(v) * 1e-3; break;
        case 'w': o->warm_s = atof(v) * 1e-3; break;
        case 'p': o->percall_s = atof(v) * 1e-3; break;
        case 'P': o->percall_min = atol(v); break;
        case 'l': o->label = v; break;
        default: goto err_usage;
        }
    }
    o->min_bytes &= ~(sizeof(float) - 1);
    o->max_bytes &= ~(sizeof(float) - 1);
    if (o->min_bytes < sizeof(float)) o->min_bytes = sizeof(float);
    if (o->factor < 2 || o->blocks < 1 || o->blocks > 64 || o->block_s <= 0 ||
        o->percall_min < 1 || o->percall_min > MAX_CALLS || o->max_bytes < o->min_bytes ||
        o->max_bytes / sizeof(float) > (size_t)1 << 30)
        goto err_usage;
    return 0;
err_usage:
    if (rank == 0) fprintf(stderr, "%s: bad arguments (see -h)\n", argv[0]);
    return 2;
}

/* ---- main --------------------------------------------------------------- */

static int alloc_buffers(ctx_t *c, const opts_t *o)
{
    size_t ms = 0, mr = 0;
    size_t count = o->max_bytes / sizeof(float);
    for (int k = 0; k < C_COUNT; k++) {
        size_t ns, nr;
        if (!o->use[k]) continue;
        buf_elems((coll_t)k, count, c->size, &ns, &nr);
        ms = ns > ms ? ns : ms, mr = nr > mr ? nr : mr;
    }
    if (posix_memalign((void **)&c->send, 4096, (ms ? ms : 1) * sizeof(float)) ||
        posix_memalign((void **)&c->recv, 4096, mr * sizeof(float)))
        return -1;
    memset(c->send, 0, (ms ? ms : 1) * sizeof(float));   /* fault the pages in now */
    memset(c->recv, 0, mr * sizeof(float));
    c->samples = malloc(MAX_CALLS * sizeof(double));
    c->samples_max = malloc(MAX_CALLS * sizeof(double));
    return c->samples && c->samples_max ? 0 : -1;
}

static void print_header(const ctx_t *c, const opts_t *o)
{
    char ver[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(ver, &len);
    ver[strcspn(ver, "\n")] = '\0';
    if (c->rank != 0) return;
#ifdef PEER_GCOLL
    printf("# peer_harness impl=%s lib=\"libgcoll %d\" mpi=\"%s\" ranks=%d\n", o->label,
           gcoll_get_version(), ver, c->size);
#else
    printf("# peer_harness impl=%s mpi=\"%s\" ranks=%d\n", o->label, ver, c->size);
#endif
    fflush(stdout);
}

int main(int argc, char **argv)
{
    ctx_t c = { 0 };
    opts_t o;
    int rc, all_ok = 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &c.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &c.size);
    c.inject = getenv("PEER_HARNESS_INJECT_ERROR") && atoi(getenv("PEER_HARNESS_INJECT_ERROR"));
    rc = parse_opts(argc, argv, &o, c.rank);
    if (rc) {
        MPI_Finalize();
        return rc == 1 ? 0 : rc;
    }
    if (alloc_buffers(&c, &o)) {
        fprintf(stderr, "rank %d: out of memory\n", c.rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
#ifdef PEER_GCOLL
    if (gcoll_comm_create(MPI_COMM_WORLD, &c.gc) != GCOLL_SUCCESS) {
        fprintf(stderr, "rank %d: gcoll_comm_create: %s\n", c.rank, gcoll_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
#endif
    print_header(&c, &o);
    for (int k = 0; k < C_COUNT; k++) {
        size_t bytes = o.min_bytes;
        if (!o.use[k]) continue;
        for (;;) {
            all_ok &= measure(&c, &o, (coll_t)k, bytes);
            if (bytes == o.max_bytes) break;
            bytes = bytes * o.factor > o.max_bytes ? o.max_bytes : bytes * o.factor;
        }
    }
#ifdef PEER_GCOLL
    gcoll_comm_destroy(c.gc);
#endif
    free(c.send), free(c.recv), free(c.samples), free(c.samples_max);
    MPI_Finalize();
    return all_ok ? 0 : 1;
}
