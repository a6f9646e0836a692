/* SPDX-License-Identifier: BSD-3-Clause */
/* Bad input never crashes and never hangs (gcoll.h): every invalid argument
 * returns its documented status with a sentence in gcoll_last_error().
 *
 * Every rank passes the same bad argument, so each rank can detect it on its
 * own: a bad argument seen by one rank only may legitimately leave the others
 * waiting (gcoll.h), which is not what this test is about.  An alarm turns a
 * hang into a failure.
 *
 * Prints one line per failure and, on rank 0, "test_bad_input: N checks, M
 * failures"; exits non-zero on any failure. */
#include <signal.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <mpi.h>
#include "gcoll.h"
#include "core/memtype.h"   /* the test hook of device-memory detection */

#define HANG_SECONDS 120
#define BAD_DTYPE ((gcoll_dtype_t)99)
#define BAD_OP    ((gcoll_op_t)99)

static int  rank, size;
static long checks, failures;

static void fail(const char *what, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void fail(const char *what, const char *fmt, ...)
{
    va_list ap;
    failures++;
    printf("FAIL rank %d: %s: ", rank, what);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
}

/* One check: `st` is `want`; a failure also leaves a sentence behind. */
static void expect(const char *what, gcoll_status_t st, gcoll_status_t want)
{
    checks++;
    if (st != want) {
        fail(what, "returned %d (%s), expected %d", (int)st, gcoll_strerror(st), (int)want);
        if (st != GCOLL_SUCCESS) printf("    last error: %s\n", gcoll_last_error());
        return;
    }
    if (want == GCOLL_SUCCESS) return;
    const char *msg = gcoll_last_error();
    checks++;
    if (msg == NULL || msg[0] == '\0') fail(what, "gcoll_last_error() is empty");
}

static void expect_invalid(const char *what, gcoll_status_t st)
{
    expect(what, st, GCOLL_ERR_INVALID_ARG);
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "FAIL: test_bad_input hung (no return within the alarm)\n";
    ssize_t ignored = write(STDOUT_FILENO, msg, sizeof(msg) - 1);
    (void)ignored;
    _exit(1);
}

/* ----------------------------------------------------------- status ---- */

static void test_strings(void)
{
    for (int a = 0; a < GCOLL_STATUS_COUNT; a++) {
        const char *sa = gcoll_strerror((gcoll_status_t)a);
        checks++;
        if (sa == NULL || sa[0] == '\0') { fail("gcoll_strerror", "code %d is NULL or empty", a); continue; }
        for (int b = 0; b < a; b++) {
            checks++;
            if (strcmp(sa, gcoll_strerror((gcoll_status_t)b)) == 0)
                fail("gcoll_strerror", "two codes share the text \"%s\"", sa);
        }
    }
    checks += 4;
    if (gcoll_strerror((gcoll_status_t)99) == NULL) fail("gcoll_strerror(99)", "NULL");
    if (gcoll_strerror((gcoll_status_t)-1) == NULL) fail("gcoll_strerror(-1)", "NULL");
    if (strcmp(gcoll_dtype_name(BAD_DTYPE), "unknown") != 0) fail("gcoll_dtype_name(99)", "%s", gcoll_dtype_name(BAD_DTYPE));
    if (strcmp(gcoll_op_name(BAD_OP), "unknown") != 0) fail("gcoll_op_name(99)", "%s", gcoll_op_name(BAD_OP));
    checks += 2;
    if (gcoll_dtype_size(BAD_DTYPE) != 0) fail("gcoll_dtype_size(99)", "not 0");
    if (gcoll_get_version() != GCOLL_VERSION) fail("gcoll_get_version", "%d differs from GCOLL_VERSION", gcoll_get_version());
}

/* ------------------------------------------------------ communicator ---- */

/* A malformed GCOLL_* setting fails gcoll_comm_create with a sentence that
 * names the bad value. */
static void test_bad_env(const char *var, const char *value, const char *named)
{
    char what[160];
    snprintf(what, sizeof(what), "gcoll_comm_create with %s=%s", var, value);
    setenv(var, value, 1);
    gcoll_comm_t c = NULL;
    gcoll_status_t st = gcoll_comm_create(MPI_COMM_WORLD, &c);
    unsetenv(var);
    expect_invalid(what, st);
    if (st == GCOLL_SUCCESS) { gcoll_comm_destroy(c); return; }
    checks++;
    if (strstr(gcoll_last_error(), named) == NULL)
        fail(what, "last error does not name the bad value: \"%s\"", gcoll_last_error());
}

static void test_create(void)
{
    gcoll_comm_t c = NULL;
    expect_invalid("gcoll_comm_create(MPI_COMM_NULL)", gcoll_comm_create(MPI_COMM_NULL, &c));
    expect_invalid("gcoll_comm_create(comm=NULL)", gcoll_comm_create(MPI_COMM_WORLD, NULL));
    test_bad_env("GCOLL_ALGO", "allreduce=nosuch", "nosuch");
    test_bad_env("GCOLL_ALGO", "nosuchcoll=ring", "nosuchcoll");
    test_bad_env("GCOLL_TRANSPORT", "carrier-pigeon", "carrier-pigeon");
    test_bad_env("GCOLL_NODE_SIZE", "lots", "lots");
}

/* Every call on a NULL or destroyed handle. */
static void test_dead_handle(const char *how, gcoll_comm_t c)
{
    char what[96];
    int buf[4] = {0}, out[4 * 64], r;
    gcoll_stats_t st;
#define DEAD(call) (snprintf(what, sizeof(what), "%s on %s comm", #call, how), expect_invalid(what, call))
    DEAD(gcoll_allreduce(buf, out, 1, GCOLL_INT32, GCOLL_SUM, c));
    DEAD(gcoll_bcast(buf, 1, GCOLL_INT32, 0, c));
    DEAD(gcoll_reduce(buf, out, 1, GCOLL_INT32, GCOLL_SUM, 0, c));
    DEAD(gcoll_allgather(buf, out, 1, GCOLL_INT32, c));
    DEAD(gcoll_reduce_scatter(out, buf, 1, GCOLL_INT32, GCOLL_SUM, c));
    DEAD(gcoll_alltoall(out, out + 64, 1, GCOLL_INT32, c));
    DEAD(gcoll_barrier(c));
    DEAD(gcoll_comm_rank(c, &r));
    DEAD(gcoll_comm_size(c, &r));
    DEAD(gcoll_comm_get_stats(c, &st));
    DEAD(gcoll_comm_destroy(c));
#undef DEAD
}

static void test_destroyed(void)
{
    gcoll_comm_t c = NULL;
    gcoll_status_t st = gcoll_comm_create(MPI_COMM_WORLD, &c);
    expect("gcoll_comm_create (to destroy)", st, GCOLL_SUCCESS);
    if (st != GCOLL_SUCCESS) return;
    /* the same calls as test_dead_handle's first ones, while c is live: a
     * handle and a call that were checked once (core/live.c, core/coll.c
     * keep them) must still be refused once c is destroyed */
    int buf[4] = {0}, out[4] = {0};
    expect("gcoll_allreduce (before destroy)",
           gcoll_allreduce(buf, out, 1, GCOLL_INT32, GCOLL_SUM, c), GCOLL_SUCCESS);
    expect("gcoll_barrier (before destroy)", gcoll_barrier(c), GCOLL_SUCCESS);
    expect("gcoll_comm_destroy", gcoll_comm_destroy(c), GCOLL_SUCCESS);
    test_dead_handle("destroyed", c);
}

/* ---------------------------------------- MPI failures (ERRORS_RETURN) ---- */

/* The library's communicators return MPI errors as codes; a call that
 * fails leaves its output undefined, and the library must not use it.  The
 * test interposes the MPI collectives the library calls (definitions in the
 * executable take precedence over libmpi's): while armed, the nth call of
 * one function completes normally through PMPI, then its output is
 * overwritten with 0xa5 bytes (undefined data) and it returns
 * MPI_ERR_OTHER.  Every rank fails the same call, so ranks that follow the
 * same path stay in step; the library must then neither crash nor hang nor
 * compute a wrong result, and each failure must come with a sentence.
 * (The library's WARN lines for the failures go to stderr.) */
static struct {
    int         armed;
    const char *fn;
    long        nth, count;
    int         fired;
} mf;

static void mf_arm(const char *fn, long nth)
{
    mf.fn = fn;
    mf.nth = nth;
    mf.count = 0;
    mf.fired = 0;
    mf.armed = fn != NULL;
}

static int mf_fail(const char *fn)
{
    if (!mf.armed || strcmp(fn, mf.fn) || ++mf.count != mf.nth) return 0;
    mf.fired = 1;
    return 1;
}

static void mf_poison(void *buf, long count, MPI_Datatype t)
{
    int sz = 0;
    if (buf && buf != MPI_IN_PLACE && count > 0 && PMPI_Type_size(t, &sz) == MPI_SUCCESS)
        memset(buf, 0xa5, (size_t)count * (size_t)sz);
}

static int mf_size(MPI_Comm c)
{
    int n = 0;
    PMPI_Comm_size(c, &n);
    return n;
}

int MPI_Allreduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c)
{
    int rc = PMPI_Allreduce(s, r, n, t, op, c);
    if (rc != MPI_SUCCESS || !mf_fail("MPI_Allreduce")) return rc;
    mf_poison(r, n, t);
    return MPI_ERR_OTHER;
}

int MPI_Bcast(void *buf, int n, MPI_Datatype t, int root, MPI_Comm c)
{
    int rc = PMPI_Bcast(buf, n, t, root, c), me = 0;
    if (rc != MPI_SUCCESS || !mf_fail("MPI_Bcast")) return rc;
    PMPI_Comm_rank(c, &me);
    if (me != root) mf_poison(buf, n, t);
    return MPI_ERR_OTHER;
}

int MPI_Allgather(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt,
                  MPI_Comm c)
{
    int rc = PMPI_Allgather(s, sn, st, r, rn, rt, c);
    if (rc != MPI_SUCCESS || !mf_fail("MPI_Allgather")) return rc;
    mf_poison(r, (long)rn * mf_size(c), rt);
    return MPI_ERR_OTHER;
}

int MPI_Allgatherv(const void *s, int sn, MPI_Datatype st, void *r, const int rn[],
                   const int displs[], MPI_Datatype rt, MPI_Comm c)
{
    int rc = PMPI_Allgatherv(s, sn, st, r, rn, displs, rt, c);
    if (rc != MPI_SUCCESS || !mf_fail("MPI_Allgatherv")) return rc;
    long end = 0;
    for (int i = 0; i < mf_size(c); i++)
        if (displs[i] + rn[i] > end) end = displs[i] + rn[i];
    mf_poison(r, end, rt);
    return MPI_ERR_OTHER;
}

int MPI_Gather(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt,
               int root, MPI_Comm c)
{
    int rc = PMPI_Gather(s, sn, st, r, rn, rt, root, c), me = 0;
    if (rc != MPI_SUCCESS || !mf_fail("MPI_Gather")) return rc;
    PMPI_Comm_rank(c, &me);
    if (me == root) mf_poison(r, (long)rn * mf_size(c), rt);
    return MPI_ERR_OTHER;
}

int MPI_Ibarrier(MPI_Comm c, MPI_Request *req)
{
    int rc = PMPI_Ibarrier(c, req);
    if (rc != MPI_SUCCESS || !mf_fail("MPI_Ibarrier")) return rc;
    PMPI_Wait(req, MPI_STATUS_IGNORE);   /* the real one completes; the caller gets junk */
    memset(req, 0xa5, sizeof(*req));
    return MPI_ERR_OTHER;
}

/* The same status on every rank (the failures are symmetric). */
static int mf_agree(const char *what, gcoll_status_t st)
{
    int v[2] = { (int)st, -(int)st }, r[2];
    PMPI_Allreduce(v, r, 2, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    checks++;
    if (r[0] != -r[1]) {
        fail(what, "the ranks disagree: status %d here, %d..%d over all ranks", (int)st, r[0],
             -r[1]);
        return 0;
    }
    if (st != GCOLL_SUCCESS) {
        checks++;
        if (!gcoll_last_error()[0]) fail(what, "status %d without a sentence", (int)st);
    }
    return 1;
}

/* Create, a few collectives, destroy, with the nth call of fn failing
 * (nth 0: none); returns the calls of fn made. */
static long mf_cycle(const char *fn, long nth)
{
    char what[96];
    snprintf(what, sizeof(what), "%s failing at call %ld", fn, nth);
    mf_arm(fn, nth);
    gcoll_comm_t c = NULL;
    gcoll_status_t st = gcoll_comm_create(MPI_COMM_WORLD, &c);
    if (mf_agree(what, st) && st == GCOLL_SUCCESS) {
        int x[1000], y[1000], g[64];
        for (int i = 0; i < 1000; i++) x[i] = i + rank;
        st = gcoll_allreduce(x, y, 1000, GCOLL_INT32, GCOLL_SUM, c);
        if (mf_agree(what, st) && st == GCOLL_SUCCESS)
            for (int i = 0; i < 1000; i++)
                if (y[i] != i * size + size * (size - 1) / 2) {
                    fail(what, "allreduce element %d is %d", i, y[i]);
                    break;
                }
        int me = rank + 7;
        st = gcoll_allgather(&me, g, 1, GCOLL_INT32, c);
        if (mf_agree(what, st) && st == GCOLL_SUCCESS)
            for (int i = 0; i < size && i < 64; i++)
                if (g[i] != i + 7) {
                    fail(what, "allgather element %d is %d", i, g[i]);
                    break;
                }
        mf_agree(what, gcoll_barrier(c));
        mf_agree(what, gcoll_comm_destroy(c));
    }
    long n = mf.count;
    checks++;
    if (nth > 0 && nth <= n && !mf.fired) fail(what, "the failure was not injected");
    mf_arm(NULL, 0);
    return n;
}

/* Every call of each function in turn.  One simulated node of all ranks
 * (GCOLL_NODE_SIZE): the node split of the real node (comm.c) is outside
 * this test; no calibration. */
static void test_mpi_failures(void)
{
    static const char *const fns[] = { "MPI_Allreduce", "MPI_Bcast", "MPI_Allgather",
                                       "MPI_Allgatherv", "MPI_Gather", "MPI_Ibarrier" };
    char node[16], *keep_node = getenv("GCOLL_NODE_SIZE"), *keep_cache = getenv("GCOLL_TUNE_CACHE");
    char saved_node[32] = "", saved_cache[256] = "";
    if (keep_node) snprintf(saved_node, sizeof(saved_node), "%s", keep_node);
    if (keep_cache) snprintf(saved_cache, sizeof(saved_cache), "%s", keep_cache);
    snprintf(node, sizeof(node), "%d", size);
    setenv("GCOLL_NODE_SIZE", node, 1);
    setenv("GCOLL_TUNE_CACHE", "off", 1);
    long total = 0;
    for (size_t f = 0; f < sizeof(fns) / sizeof(fns[0]); f++) {
        long n = mf_cycle(fns[f], 0);
        for (long k = 1; k <= n; k++) mf_cycle(fns[f], k);
        total += n;
    }
    if (keep_node) setenv("GCOLL_NODE_SIZE", saved_node, 1);
    else unsetenv("GCOLL_NODE_SIZE");
    if (keep_cache) setenv("GCOLL_TUNE_CACHE", saved_cache, 1);
    else unsetenv("GCOLL_TUNE_CACHE");
    checks++;
    if (total < 3) fail("MPI failures", "only %ld interposed calls were made: not interposed?", total);
    if (rank == 0) printf("test_bad_input: %ld MPI calls failed in turn\n", total);
}

/* ------------------------------------------------------ collectives ---- */

static void test_null_buffers(gcoll_comm_t c)
{
    int a[64] = {0}, b[64];
    expect_invalid("allreduce sendbuf=NULL", gcoll_allreduce(NULL, b, 4, GCOLL_INT32, GCOLL_SUM, c));
    expect_invalid("allreduce recvbuf=NULL", gcoll_allreduce(a, NULL, 4, GCOLL_INT32, GCOLL_SUM, c));
    expect_invalid("bcast buf=NULL", gcoll_bcast(NULL, 4, GCOLL_INT32, 0, c));
    expect_invalid("reduce sendbuf=NULL", gcoll_reduce(NULL, b, 4, GCOLL_INT32, GCOLL_SUM, 0, c));
    expect_invalid("allgather sendbuf=NULL", gcoll_allgather(NULL, b, 4, GCOLL_INT32, c));
    expect_invalid("allgather recvbuf=NULL", gcoll_allgather(a, NULL, 4, GCOLL_INT32, c));
    expect_invalid("reduce_scatter sendbuf=NULL", gcoll_reduce_scatter(NULL, b, 4, GCOLL_INT32, GCOLL_SUM, c));
    expect_invalid("reduce_scatter recvbuf=NULL", gcoll_reduce_scatter(a, NULL, 4, GCOLL_INT32, GCOLL_SUM, c));
    expect_invalid("alltoall sendbuf=NULL", gcoll_alltoall(NULL, b, 4, GCOLL_INT32, c));
    expect_invalid("alltoall recvbuf=NULL", gcoll_alltoall(a, NULL, 4, GCOLL_INT32, c));
}

static void test_bad_types(gcoll_comm_t c, gcoll_dtype_t dt, gcoll_op_t op, const char *label)
{
    char what[96];
    int a[64] = {0}, b[64];
#define BAD(name, call) (snprintf(what, sizeof(what), "%s %s", name, label), expect_invalid(what, call))
    BAD("allreduce", gcoll_allreduce(a, b, 4, dt, op, c));
    BAD("reduce", gcoll_reduce(a, b, 4, dt, op, 0, c));
    BAD("reduce_scatter", gcoll_reduce_scatter(a, b, 4, dt, op, c));
    if (op == GCOLL_SUM) {  /* no op argument: only a bad dtype applies */
        BAD("bcast", gcoll_bcast(a, 4, dt, 0, c));
        BAD("allgather", gcoll_allgather(a, b, 4, dt, c));
        BAD("alltoall", gcoll_alltoall(a, b, 4, dt, c));
    }
#undef BAD
}

static void test_bad_root(gcoll_comm_t c, int root)
{
    char what[96];
    int a[4] = {0}, b[4];
    snprintf(what, sizeof(what), "bcast root=%d", root);
    expect_invalid(what, gcoll_bcast(a, 4, GCOLL_INT32, root, c));
    snprintf(what, sizeof(what), "reduce root=%d", root);
    expect_invalid(what, gcoll_reduce(a, b, 4, GCOLL_INT32, GCOLL_SUM, root, c));
}

static void test_bad_out_pointers(gcoll_comm_t c)
{
    expect_invalid("gcoll_comm_rank(rank=NULL)", gcoll_comm_rank(c, NULL));
    expect_invalid("gcoll_comm_size(size=NULL)", gcoll_comm_size(c, NULL));
    expect_invalid("gcoll_comm_get_stats(stats=NULL)", gcoll_comm_get_stats(c, NULL));
}

/* count 0 returns at once, buffers may be NULL (gcoll.h). */
static void test_count_zero(gcoll_comm_t c)
{
    expect("allreduce count=0 NULL", gcoll_allreduce(NULL, NULL, 0, GCOLL_FLOAT32, GCOLL_SUM, c), GCOLL_SUCCESS);
    expect("bcast count=0 NULL", gcoll_bcast(NULL, 0, GCOLL_FLOAT32, 0, c), GCOLL_SUCCESS);
    expect("reduce count=0 NULL", gcoll_reduce(NULL, NULL, 0, GCOLL_FLOAT32, GCOLL_SUM, 0, c), GCOLL_SUCCESS);
    expect("allgather count=0 NULL", gcoll_allgather(NULL, NULL, 0, GCOLL_FLOAT32, c), GCOLL_SUCCESS);
    expect("reduce_scatter count=0 NULL",
           gcoll_reduce_scatter(NULL, NULL, 0, GCOLL_FLOAT32, GCOLL_SUM, c), GCOLL_SUCCESS);
    expect("alltoall count=0 NULL", gcoll_alltoall(NULL, NULL, 0, GCOLL_FLOAT32, c), GCOLL_SUCCESS);
}

/* Buffers overlapping outside the in-place forms are refused on the rank
 * that passes them (gcoll.h), before any communication; the in-place forms
 * still work. */
static void test_overlap(gcoll_comm_t c)
{
    enum { N = 4 };   /* elements per block */
    int *buf = calloc((size_t)(2 * size + 2) * N, sizeof(int));
    /* one element past the in-place position, on every rank */
    expect_invalid("allgather sendbuf == recvbuf + rank*count + 1",
                   gcoll_allgather(buf + rank * N + 1, buf, N, GCOLL_INT32, c));
    expect_invalid("reduce_scatter recvbuf == sendbuf + rank*count + 1",
                   gcoll_reduce_scatter(buf, buf + rank * N + 1, N, GCOLL_INT32, GCOLL_SUM, c));
    expect_invalid("allreduce sendbuf == recvbuf + 1",
                   gcoll_allreduce(buf + 1, buf, N, GCOLL_INT32, GCOLL_SUM, c));
    expect_invalid("alltoall sendbuf == recvbuf + 1",
                   gcoll_alltoall(buf + 1, buf, N, GCOLL_INT32, c));
    gcoll_request_t req = GCOLL_REQUEST_NULL;
    expect_invalid("iallgather sendbuf == recvbuf + rank*count + 1",
                   gcoll_iallgather(buf + rank * N + 1, buf, N, GCOLL_INT32, c, &req));
    expect_invalid("allgather_init sendbuf == recvbuf + rank*count + 1",
                   gcoll_allgather_init(buf + rank * N + 1, buf, N, GCOLL_INT32, c, &req));

    /* the in-place forms: exact */
    for (int i = 0; i < size * N; i++) buf[i] = i / N == rank ? rank + 1 : -1;
    gcoll_status_t st = gcoll_allgather(buf + rank * N, buf, N, GCOLL_INT32, c);
    expect("allgather in place", st, GCOLL_SUCCESS);
    for (int i = 0; st == GCOLL_SUCCESS && i < size * N; i++)
        if (buf[i] != i / N + 1) {
            fail("allgather in place", "element %d is %d, expected %d", i, buf[i], i / N + 1);
            break;
        }
    for (int i = 0; i < size * N; i++) buf[i] = i;
    st = gcoll_reduce_scatter(buf, buf + rank * N, N, GCOLL_INT32, GCOLL_SUM, c);
    expect("reduce_scatter in place", st, GCOLL_SUCCESS);
    for (int i = 0; st == GCOLL_SUCCESS && i < N; i++)
        if (buf[rank * N + i] != (rank * N + i) * size) {
            fail("reduce_scatter in place", "element %d is %d, expected %d", i, buf[rank * N + i],
                 (rank * N + i) * size);
            break;
        }
    free(buf);
}

/* sendbuf == recvbuf is allgather's in-place form on rank 0 only: elsewhere
 * the send block overlaps block 0 of the output, and copying it there
 * would read bytes already overwritten.  Those ranks are refused at once
 * (rank 0 does not call: it could not tell, and would wait for them).  On
 * a communicator of its own with a short GCOLL_TIMEOUT, so that a library
 * that took the call as a collective fails quickly instead of hanging. */
static void test_allgather_same_pointer(void)
{
    if (size < 2) return;
    const char *old = getenv("GCOLL_TIMEOUT");
    char keep[64] = "";
    if (old) snprintf(keep, sizeof(keep), "%s", old);
    setenv("GCOLL_TIMEOUT", "5", 1);
    gcoll_comm_t c = NULL;
    gcoll_status_t st = gcoll_comm_create(MPI_COMM_WORLD, &c);
    if (old) setenv("GCOLL_TIMEOUT", keep, 1);
    else unsetenv("GCOLL_TIMEOUT");
    expect("gcoll_comm_create (GCOLL_TIMEOUT=5)", st, GCOLL_SUCCESS);
    if (st != GCOLL_SUCCESS) return;
    int *buf = calloc((size_t)size * 4, sizeof(int));
    if (rank != 0)
        expect_invalid("allgather sendbuf == recvbuf on a rank other than 0",
                       gcoll_allgather(buf, buf, 4, GCOLL_INT32, c));
    free(buf);
    expect("gcoll_comm_destroy", gcoll_comm_destroy(c), GCOLL_SUCCESS);
}

/* A build without CUDA refuses device buffers with GCOLL_ERR_NOT_SUPPORTED
 * (gcoll.h) instead of reading them as host memory.  The driver cannot be
 * had here, so the test answers the detection's query itself (the same
 * path, through gcoll_memtype_set_driver_query): [fake, fake + FAKE_BYTES)
 * is "device memory".  It is host memory in truth, so a library that read
 * it would return success, not crash.  Every rank passes the same buffers:
 * every rank refuses alike. */
enum { FAKE_BYTES = 4096 };
static unsigned char fake[FAKE_BYTES];

static int fake_driver(void *data, int attribute, unsigned long long ptr)
{
    if (ptr < (uintptr_t)fake || ptr >= (uintptr_t)fake + FAKE_BYTES) return 1;   /* invalid value */
    *(unsigned int *)data = attribute == 2 ? 2u : 0u;   /* memory type: device; not managed */
    return 0;
}

static void expect_refused(const char *what, gcoll_status_t st)
{
    expect(what, st, GCOLL_ERR_NOT_SUPPORTED);
    checks++;
    if (st == GCOLL_ERR_NOT_SUPPORTED && !strstr(gcoll_last_error(), "without CUDA"))
        fail(what, "the sentence does not say why: \"%s\"", gcoll_last_error());
}

/* The compressed allreduce refuses them too, blocking and not, in both of
 * its paths: the exact one (one node: gcoll_allreduce's check) and its own
 * (every rank a node of its own, GCOLL_NODE_SIZE=1, at 2 ranks and more);
 * the compressor still works on host buffers afterwards. */
static void compressed_refusals(gcoll_comm_t c, gcoll_compress_t kind, void *d, void *d2)
{
    char what[160];
    gcoll_compress_params_t p = { .kind = kind };
    gcoll_compressor_t z = NULL;
    gcoll_status_t st = gcoll_compressor_create(c, 4, &p, &z);
    snprintf(what, sizeof(what), "gcoll_compressor_create (%s)", gcoll_compress_name(kind));
    expect(what, st, GCOLL_SUCCESS);
    if (st != GCOLL_SUCCESS) return;
    float f[4] = { 0 }, g[4] = { 1, 2, 3, 4 };
    gcoll_request_t req = GCOLL_REQUEST_NULL;
    static const char *const forms[] = { "device sendbuf", "device recvbuf", "device in place",
                                         "i device sendbuf", "i device recvbuf" };
    for (int k = 0; k < 5; k++) {
        void *s = k == 1 || k == 4 ? (void *)g : d, *r = k == 2 ? d : k == 1 || k == 4 ? d2 : f;
        st = k < 3 ? gcoll_allreduce_compressed(s, r, 4, GCOLL_FLOAT32, GCOLL_SUM, z)
                   : gcoll_iallreduce_compressed(s, r, 4, GCOLL_FLOAT32, GCOLL_SUM, z, &req);
        snprintf(what, sizeof(what), "allreduce_compressed (%s) %s", gcoll_compress_name(kind),
                 forms[k]);
        expect_refused(what, st);
        checks++;
        if (req != GCOLL_REQUEST_NULL) fail(what, "the request is not NULL");
    }
    /* sums of small integers: BF16 holds them exactly */
    st = gcoll_allreduce_compressed(g, f, 4, GCOLL_FLOAT32, GCOLL_SUM, z);
    snprintf(what, sizeof(what), "allreduce_compressed (%s) host buffers after the refusals",
             gcoll_compress_name(kind));
    expect(what, st, GCOLL_SUCCESS);
    checks++;
    if (st == GCOLL_SUCCESS && kind == GCOLL_COMPRESS_BF16 && f[3] != 4.0f * (float)size)
        fail(what, "element 3 is %g, expected %d", (double)f[3], 4 * size);
    expect("gcoll_compressor_destroy", gcoll_compressor_destroy(z), GCOLL_SUCCESS);
}

static void test_device_compressed(gcoll_comm_t c, void *d, void *d2)
{
    compressed_refusals(c, GCOLL_COMPRESS_BF16, d, d2);   /* one node: the exact path */
    char *keep = getenv("GCOLL_NODE_SIZE"), saved[32] = "";
    if (keep) snprintf(saved, sizeof(saved), "%s", keep);
    setenv("GCOLL_NODE_SIZE", "1", 1);
    gcoll_comm_t nodes = NULL;
    gcoll_status_t st = gcoll_comm_create(MPI_COMM_WORLD, &nodes);
    if (keep) setenv("GCOLL_NODE_SIZE", saved, 1);
    else unsetenv("GCOLL_NODE_SIZE");
    expect("gcoll_comm_create (GCOLL_NODE_SIZE=1)", st, GCOLL_SUCCESS);
    if (st != GCOLL_SUCCESS) return;
    for (int kind = GCOLL_COMPRESS_BF16; kind < GCOLL_COMPRESS_COUNT; kind++)
        compressed_refusals(nodes, (gcoll_compress_t)kind, d, d2);
    expect("gcoll_comm_destroy (GCOLL_NODE_SIZE=1)", gcoll_comm_destroy(nodes), GCOLL_SUCCESS);
}

static void test_device_buffers(gcoll_comm_t c)
{
    if (!gcoll_memtype_set_driver_query(fake_driver)) {
        if (rank == 0) printf("test_bad_input: built with CUDA, device buffers are served: "
                              "their refusal is not tested\n");
        return;
    }
    int host[64] = { 0 }, out[64];
    void *d = fake, *d2 = fake + FAKE_BYTES / 2;   /* room for 4 ints per rank, 2 ranks */
    gcoll_request_t req = GCOLL_REQUEST_NULL;
    expect_refused("allreduce device sendbuf", gcoll_allreduce(d, host, 4, GCOLL_INT32, GCOLL_SUM, c));
    expect_refused("allreduce device recvbuf", gcoll_allreduce(host, d, 4, GCOLL_INT32, GCOLL_SUM, c));
    expect_refused("allreduce device in place", gcoll_allreduce(d, d, 4, GCOLL_INT32, GCOLL_SUM, c));
    expect_refused("bcast device buf", gcoll_bcast(d, 4, GCOLL_INT32, 0, c));
    expect_refused("reduce device sendbuf", gcoll_reduce(d, out, 4, GCOLL_INT32, GCOLL_SUM, 0, c));
    expect_refused("allgather device sendbuf", gcoll_allgather(d, out, 1, GCOLL_INT32, c));
    expect_refused("allgather device recvbuf", gcoll_allgather(host, d, 1, GCOLL_INT32, c));
    expect_refused("reduce_scatter device sendbuf",
                   gcoll_reduce_scatter(d, out, 1, GCOLL_INT32, GCOLL_SUM, c));
    expect_refused("reduce_scatter device recvbuf",
                   gcoll_reduce_scatter(host, d, 1, GCOLL_INT32, GCOLL_SUM, c));
    expect_refused("alltoall device sendbuf", gcoll_alltoall(d, out, 1, GCOLL_INT32, c));
    expect_refused("alltoall device recvbuf", gcoll_alltoall(host, d2, 1, GCOLL_INT32, c));
    expect_refused("iallreduce device sendbuf",
                   gcoll_iallreduce(d, host, 4, GCOLL_INT32, GCOLL_SUM, c, &req));
    expect_refused("ibcast device buf", gcoll_ibcast(d, 4, GCOLL_INT32, 0, c, &req));
    expect_refused("ireduce device sendbuf",
                   gcoll_ireduce(d, out, 4, GCOLL_INT32, GCOLL_SUM, 0, c, &req));
    expect_refused("iallgather device recvbuf", gcoll_iallgather(host, d, 1, GCOLL_INT32, c, &req));
    expect_refused("ireduce_scatter device sendbuf",
                   gcoll_ireduce_scatter(d, out, 1, GCOLL_INT32, GCOLL_SUM, c, &req));
    expect_refused("ialltoall device sendbuf", gcoll_ialltoall(d, out, 1, GCOLL_INT32, c, &req));
    expect_refused("allreduce_init device recvbuf",
                   gcoll_allreduce_init(host, d, 4, GCOLL_INT32, GCOLL_SUM, c, &req));
    expect_refused("bcast_init device buf", gcoll_bcast_init(d, 4, GCOLL_INT32, 0, c, &req));
    expect_refused("reduce_init device sendbuf",
                   gcoll_reduce_init(d, out, 4, GCOLL_INT32, GCOLL_SUM, 0, c, &req));
    expect_refused("allgather_init device sendbuf",
                   gcoll_allgather_init(d, out, 1, GCOLL_INT32, c, &req));
    expect_refused("reduce_scatter_init device recvbuf",
                   gcoll_reduce_scatter_init(host, d, 1, GCOLL_INT32, GCOLL_SUM, c, &req));
    expect_refused("alltoall_init device recvbuf",
                   gcoll_alltoall_init(host, d2, 1, GCOLL_INT32, c, &req));
    checks++;
    if (req != GCOLL_REQUEST_NULL) fail("refused requests", "the request is not NULL");
    test_device_compressed(c, d, d2);
    /* host buffers are still host buffers, and count 0 asks nothing */
    expect("allreduce host buffers with the fake driver",
           gcoll_allreduce(host, out, 4, GCOLL_INT32, GCOLL_SUM, c), GCOLL_SUCCESS);
    expect("allreduce count=0 on a device pointer",
           gcoll_allreduce(d, d, 0, GCOLL_INT32, GCOLL_SUM, c), GCOLL_SUCCESS);
    gcoll_memtype_set_driver_query(NULL);
}

/* After all that, the communicator still works. */
static void test_still_works(gcoll_comm_t c)
{
    int one = 1, sum = 0;
    expect("allreduce after bad calls", gcoll_allreduce(&one, &sum, 1, GCOLL_INT32, GCOLL_SUM, c), GCOLL_SUCCESS);
    checks++;
    if (sum != size) fail("allreduce after bad calls", "sum %d, expected %d", sum, size);
    expect("barrier after bad calls", gcoll_barrier(c), GCOLL_SUCCESS);
}

static void test_collectives(void)
{
    gcoll_comm_t c = NULL;
    gcoll_status_t st = gcoll_comm_create(MPI_COMM_WORLD, &c);
    expect("gcoll_comm_create", st, GCOLL_SUCCESS);
    if (st != GCOLL_SUCCESS) return;
    test_null_buffers(c);
    test_bad_types(c, BAD_DTYPE, GCOLL_SUM, "dtype=99");
    test_bad_types(c, (gcoll_dtype_t)-1, GCOLL_SUM, "dtype=-1");
    test_bad_types(c, GCOLL_DTYPE_COUNT, GCOLL_SUM, "dtype=GCOLL_DTYPE_COUNT");
    test_bad_types(c, GCOLL_INT32, BAD_OP, "op=99");
    test_bad_types(c, GCOLL_INT32, GCOLL_OP_COUNT, "op=GCOLL_OP_COUNT");
    test_bad_root(c, -1);
    test_bad_root(c, size);
    test_bad_out_pointers(c);
    test_count_zero(c);
    test_overlap(c);
    test_device_buffers(c);
    test_still_works(c);
    expect("gcoll_comm_destroy", gcoll_comm_destroy(c), GCOLL_SUCCESS);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    signal(SIGALRM, on_alarm);
    alarm(HANG_SECONDS);
    test_strings();
    test_create();
    test_dead_handle("NULL", NULL);
    test_collectives();
    test_allgather_same_pointer();
    test_mpi_failures();
    test_destroyed();
    alarm(0);

    long mine[2] = {checks, failures}, sum[2];
    MPI_Allreduce(mine, sum, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("test_bad_input: %ld checks, %ld failures\n", sum[0], sum[1]);
    MPI_Finalize();
    return sum[1] ? 1 : 0;
}
