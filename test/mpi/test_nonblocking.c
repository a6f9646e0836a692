/* SPDX-License-Identifier: BSD-3-Clause */
/* The progress engine under mpirun: nonblocking and persistent collectives
 * against MPI's own blocking collectives on the same inputs, bit for bit.
 *
 *   test_nonblocking many      every collective: 8 requests of 0 B .. 4 MiB
 *                              posted back to back with a blocking call among
 *                              them, completed by wait in reverse order, by
 *                              test loops and by waitall; two communicators
 *                              outstanding at once, completed in the other
 *                              order; persistent allreduce and bcast started
 *                              50 times with new inputs; misuse refused;
 *                              the wait hook runs while a rank waits
 *   test_nonblocking background GCOLL_PROGRESS=thread: a 4 MiB iallreduce
 *                              posted before a 400 ms sleep outside libgcoll
 *                              is complete at the first test; then the idle
 *                              thread uses < 1% of a core over 5 s
 *   test_nonblocking fault     a transport receive fails mid-collective (the
 *                              ranks pass different counts): every rank gets
 *                              an error; the communicator is revoked (later
 *                              calls fail at once, naming the failed rank);
 *                              a new communicator works
 *   test_nonblocking pipeline N  N pipelined hierarchical allreduces at
 *                              rendezvous sizes, each checked
 *   test_nonblocking compress  compressed allreduces as engine tasks: two
 *                              compressors and a plain iallreduce outstanding
 *                              at once, waited in reverse order, 10 steps,
 *                              bit for bit against twin compressors used
 *                              blocking on the same inputs (run with nodes)
 *   test_nonblocking direct E  repeated small blocking allreduce, bcast and
 *                              reduce against MPI: with E=1 (one node) every
 *                              call takes the direct path (core/coll.c), and
 *                              a late root's readers hand theirs to the
 *                              engine; E=0 (simulated nodes): none of rank
 *                              0's calls does (it talks across nodes); then
 *                              a blocking bcast behind an ibcast, in order
 *
 * Inputs are small integers (float32 sums exact), so results compare with
 * memcmp.  Prints one "FAIL ..." line per failure and "ok N checks" at the
 * end on rank 0; exit 1 on any failure. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <mpi.h>
#include "gcoll.h"
#include "core/comm.h"   /* gcoll_comm_direct_stats */

static int rank, size, failures, checks;

#define FAIL(...)                                                        \
    do {                                                                 \
        fprintf(stderr, "FAIL rank %d: ", rank);                         \
        fprintf(stderr, __VA_ARGS__);                                    \
        fprintf(stderr, " (%s)\n", gcoll_last_error());                 \
        failures++;                                                      \
    } while (0)

#define EXPECT(_cond, ...)                  \
    do {                                    \
        checks++;                           \
        if (!(_cond)) FAIL(__VA_ARGS__);    \
    } while (0)

enum { C_ALLREDUCE, C_BCAST, C_REDUCE, C_ALLGATHER, C_REDUCE_SCATTER, C_ALLTOALL, C_BARRIER,
       C_COUNT };
static const char *const coll_name[C_COUNT] = { "allreduce", "bcast", "reduce", "allgather",
                                                 "reduce_scatter", "alltoall", "barrier" };

/* One collective call and its reference: float32 sum or int32 max. */
typedef struct {
    int     coll, is_int, root;
    size_t  count;          /* as the gcoll call takes it */
    size_t  send_n, recv_n; /* elements of the two buffers */
    void   *send, *recv, *ref;
} job_t;

static size_t elem(const job_t *j) { (void)j; return 4; }

static void job_sizes(job_t *j)
{
    size_t n = j->count, p = (size_t)size;
    switch (j->coll) {
    case C_ALLGATHER:      j->send_n = n;     j->recv_n = n * p; break;
    case C_REDUCE_SCATTER: j->send_n = n * p; j->recv_n = n;     break;
    case C_ALLTOALL:       j->send_n = n * p; j->recv_n = n * p; break;
    case C_BARRIER:        j->send_n = 0;     j->recv_n = 0;     break;
    default:               j->send_n = n;     j->recv_n = n;     break;
    }
}

/* Values depend on rank, index and seed; small enough that sums are exact. */
static void job_fill(job_t *j, int seed)
{
    for (size_t i = 0; i < j->send_n; i++) {
        int v = (int)((i * 7 + (size_t)rank * 13 + (size_t)seed * 5) % 61) - 30;
        if (j->is_int) ((int32_t *)j->send)[i] = v;
        else ((float *)j->send)[i] = (float)v;
    }
    memset(j->recv, 0xee, j->recv_n * elem(j) + 1);
    if (j->coll == C_BCAST && rank == j->root) memcpy(j->recv, j->send, j->send_n * elem(j));
}

static void job_init(job_t *j, int coll, size_t count, int is_int, int root, int seed)
{
    memset(j, 0, sizeof(*j));
    j->coll = coll;
    j->count = count;
    j->is_int = is_int;
    j->root = root % size;
    job_sizes(j);
    j->send = malloc(j->send_n * elem(j) + 1);
    j->recv = malloc(j->recv_n * elem(j) + 1);
    j->ref = malloc(j->recv_n * elem(j) + 1);
    job_fill(j, seed);
}

static void job_free(job_t *j)
{
    free(j->send);
    free(j->recv);
    free(j->ref);
}

/* MPI's own blocking collective on the same inputs. */
static void job_reference(job_t *j)
{
    MPI_Datatype t = j->is_int ? MPI_INT : MPI_FLOAT;
    MPI_Op op = j->is_int ? MPI_MAX : MPI_SUM;
    int n = (int)j->count;
    memset(j->ref, 0xee, j->recv_n * elem(j) + 1);
    switch (j->coll) {
    case C_ALLREDUCE: MPI_Allreduce(j->send, j->ref, n, t, op, MPI_COMM_WORLD); break;
    case C_BCAST:
        if (rank == j->root) memcpy(j->ref, j->send, j->send_n * elem(j));
        MPI_Bcast(j->ref, n, t, j->root, MPI_COMM_WORLD);
        break;
    case C_REDUCE: MPI_Reduce(j->send, j->ref, n, t, op, j->root, MPI_COMM_WORLD); break;
    case C_ALLGATHER: MPI_Allgather(j->send, n, t, j->ref, n, t, MPI_COMM_WORLD); break;
    case C_REDUCE_SCATTER:
        MPI_Reduce_scatter_block(j->send, j->ref, n, t, op, MPI_COMM_WORLD);
        break;
    case C_ALLTOALL: MPI_Alltoall(j->send, n, t, j->ref, n, t, MPI_COMM_WORLD); break;
    default: break;
    }
}

static gcoll_status_t job_call(job_t *j, gcoll_comm_t c, gcoll_request_t *req, int persistent)
{
    gcoll_dtype_t dt = j->is_int ? GCOLL_INT32 : GCOLL_FLOAT32;
    gcoll_op_t op = j->is_int ? GCOLL_MAX : GCOLL_SUM;
    void *s = j->send, *r = j->recv;
    if (j->coll == C_BCAST) {
        return persistent ? gcoll_bcast_init(r, j->count, dt, j->root, c, req)
                          : gcoll_ibcast(r, j->count, dt, j->root, c, req);
    }
    if (persistent) {
        switch (j->coll) {
        case C_ALLREDUCE: return gcoll_allreduce_init(s, r, j->count, dt, op, c, req);
        default: return GCOLL_ERR_INTERNAL;
        }
    }
    switch (j->coll) {
    case C_ALLREDUCE: return gcoll_iallreduce(s, r, j->count, dt, op, c, req);
    case C_REDUCE: return gcoll_ireduce(s, r, j->count, dt, op, j->root, c, req);
    case C_ALLGATHER: return gcoll_iallgather(s, r, j->count, dt, c, req);
    case C_REDUCE_SCATTER: return gcoll_ireduce_scatter(s, r, j->count, dt, op, c, req);
    case C_ALLTOALL: return gcoll_ialltoall(s, r, j->count, dt, c, req);
    case C_BARRIER: return gcoll_ibarrier(c, req);
    default: return GCOLL_ERR_INTERNAL;
    }
}

static void job_check(const job_t *j, const char *how)
{
    size_t bytes = j->recv_n * elem(j);
    if (j->coll == C_REDUCE && rank != j->root) return;   /* recvbuf unspecified there */
    EXPECT(memcmp(j->recv, j->ref, bytes) == 0, "%s %s count=%zu %s: result differs from MPI's",
           coll_name[j->coll], j->is_int ? "int32/max" : "float32/sum", j->count, how);
    EXPECT(((unsigned char *)j->recv)[bytes] == 0xee, "%s count=%zu %s: wrote past recvbuf",
           coll_name[j->coll], j->count, how);
}

/* ---- many requests outstanding ------------------------------------------ */

#define NREQ 8

/* Per-rank counts of 0 B .. 4 MiB of whole buffer, scaled by how much of it
 * one rank's count makes. */
static size_t job_count(int coll, int k)
{
    static const size_t total[NREQ] = { 0, 1, 7, 1000, 4099, 65537, 300001, 1u << 20 };
    size_t n = total[k];
    if (coll == C_ALLGATHER || coll == C_REDUCE_SCATTER || coll == C_ALLTOALL)
        n = (n + (size_t)size - 1) / (size_t)size;
    return n;
}

static int finish(gcoll_request_t *reqs, int mode)
{
    gcoll_status_t st = GCOLL_SUCCESS;
    if (mode == 0) {               /* wait, newest first */
        for (int k = NREQ - 1; k >= 0; k--) {
            gcoll_status_t s = gcoll_wait(&reqs[k]);
            if (s != GCOLL_SUCCESS) st = s;
        }
    } else if (mode == 1) {        /* test loops, round robin */
        int left = NREQ;
        while (left) {
            left = 0;
            for (int k = 0; k < NREQ; k++) {
                int done = 0;
                if (reqs[k] == GCOLL_REQUEST_NULL) continue;
                gcoll_status_t s = gcoll_test(&reqs[k], &done);
                if (s != GCOLL_SUCCESS) st = s;
                if (done) EXPECT(reqs[k] == GCOLL_REQUEST_NULL, "test: done but not freed");
                left += !done;
            }
        }
    } else {
        st = gcoll_waitall(NREQ, reqs);
    }
    for (int k = 0; k < NREQ; k++) EXPECT(reqs[k] == GCOLL_REQUEST_NULL, "request %d not nulled", k);
    return st;
}

static void test_many_coll(gcoll_comm_t c, int coll, int mode)
{
    static const char *const how[3] = { "wait-reverse", "test-loop", "waitall" };
    job_t jobs[NREQ], mid;
    gcoll_request_t reqs[NREQ];
    for (int k = 0; k < NREQ; k++) {
        job_init(&jobs[k], coll, job_count(coll, k), k & 1, k, k + mode);
        job_reference(&jobs[k]);
    }
    job_init(&mid, C_ALLREDUCE, 1000, 0, 0, 99);
    job_reference(&mid);
    for (int k = 0; k < NREQ; k++) {
        if (k == NREQ / 2) {   /* a blocking call among the outstanding ones */
            EXPECT(gcoll_allreduce(mid.send, mid.recv, mid.count, GCOLL_FLOAT32, GCOLL_SUM, c) ==
                       GCOLL_SUCCESS, "blocking allreduce among requests failed");
            job_check(&mid, "blocking, among requests");
        }
        EXPECT(job_call(&jobs[k], c, &reqs[k], 0) == GCOLL_SUCCESS, "post %s #%d failed",
               coll_name[coll], k);
    }
    EXPECT(finish(reqs, mode) == GCOLL_SUCCESS, "%s: completing %s failed", coll_name[coll],
           how[mode]);
    for (int k = 0; k < NREQ; k++) {
        job_check(&jobs[k], how[mode]);
        job_free(&jobs[k]);
    }
    job_free(&mid);
}

/* Two communicators with requests outstanding at once, completed in the
 * other order than posted. */
static void test_two_comms(gcoll_comm_t a, gcoll_comm_t b)
{
    job_t ja, jb;
    gcoll_request_t ra, rb;
    job_init(&ja, C_ALLREDUCE, 300001, 0, 0, 1);
    job_init(&jb, C_ALLGATHER, 40001, 1, 0, 2);
    job_reference(&ja);
    job_reference(&jb);
    EXPECT(job_call(&ja, a, &ra, 0) == GCOLL_SUCCESS, "post on comm a");
    EXPECT(job_call(&jb, b, &rb, 0) == GCOLL_SUCCESS, "post on comm b");
    EXPECT(gcoll_wait(&rb) == GCOLL_SUCCESS, "wait on comm b");
    EXPECT(gcoll_wait(&ra) == GCOLL_SUCCESS, "wait on comm a");
    job_check(&ja, "two comms");
    job_check(&jb, "two comms");
    job_free(&ja);
    job_free(&jb);
}

static void test_persistent(gcoll_comm_t c, int coll, size_t count)
{
    job_t j;
    gcoll_request_t req = GCOLL_REQUEST_NULL;
    job_init(&j, coll, count, 0, 1, 0);
    EXPECT(job_call(&j, c, &req, 1) == GCOLL_SUCCESS, "%s_init failed", coll_name[coll]);
    int done = 0;
    EXPECT(gcoll_test(&req, &done) == GCOLL_SUCCESS && done && req != GCOLL_REQUEST_NULL,
           "test of an inactive persistent request must succeed at once and keep it");
    for (int it = 0; it < 50; it++) {
        job_fill(&j, it);
        job_reference(&j);
        if (coll == C_BCAST && rank == j.root) memcpy(j.recv, j.send, j.send_n * 4);
        /* rank 0 starts late twice, so the others' requests are surely
         * still active when they misuse them (the thread may otherwise
         * have completed them already) */
        if (it < 2 && rank == 0 && size > 1) usleep(100 * 1000);
        EXPECT(gcoll_start(req) == GCOLL_SUCCESS, "start #%d", it);
        if (it == 0 && rank != 0)
            EXPECT(gcoll_start(req) == GCOLL_ERR_INVALID_ARG, "start of an active request");
        if (it == 1 && rank != 0)
            EXPECT(gcoll_request_free(&req) == GCOLL_ERR_INVALID_ARG && req,
                   "free of an active request");
        if (it & 1) {
            EXPECT(gcoll_wait(&req) == GCOLL_SUCCESS, "wait #%d", it);
        } else {
            gcoll_status_t st = GCOLL_SUCCESS;
            for (done = 0; !done && st == GCOLL_SUCCESS;) st = gcoll_test(&req, &done);
            EXPECT(st == GCOLL_SUCCESS, "test #%d", it);
        }
        EXPECT(req != GCOLL_REQUEST_NULL, "a persistent request survives completion");
        job_check(&j, "persistent");
    }
    EXPECT(gcoll_request_free(&req) == GCOLL_SUCCESS && req == GCOLL_REQUEST_NULL,
           "free of an inactive persistent request");
    job_free(&j);
}

static void test_misuse(gcoll_comm_t c)
{
    float x[4] = { 1, 2, 3, 4 };
    gcoll_request_t req = GCOLL_REQUEST_NULL;
    int done = 0;
    EXPECT(gcoll_iallreduce(x, x, 4, GCOLL_FLOAT32, GCOLL_SUM, c, NULL) == GCOLL_ERR_INVALID_ARG,
           "NULL request pointer");
    EXPECT(gcoll_iallreduce(x, x, 4, (gcoll_dtype_t)99, GCOLL_SUM, c, &req) ==
               GCOLL_ERR_INVALID_ARG && req == GCOLL_REQUEST_NULL, "bad dtype");
    EXPECT(gcoll_ibcast(x, 4, GCOLL_FLOAT32, size, c, &req) == GCOLL_ERR_INVALID_ARG, "bad root");
    EXPECT(gcoll_wait(&req) == GCOLL_SUCCESS, "wait on GCOLL_REQUEST_NULL");
    EXPECT(gcoll_test(&req, &done) == GCOLL_SUCCESS && done, "test on GCOLL_REQUEST_NULL");
    EXPECT(gcoll_start(GCOLL_REQUEST_NULL) == GCOLL_ERR_INVALID_ARG, "start of NULL");
    EXPECT(gcoll_wait(NULL) == GCOLL_ERR_INVALID_ARG, "wait(NULL)");
    /* start of a non-persistent request, destroy with one outstanding */
    EXPECT(gcoll_iallreduce(x, x, 4, GCOLL_FLOAT32, GCOLL_SUM, c, &req) == GCOLL_SUCCESS, "post");
    EXPECT(gcoll_start(req) == GCOLL_ERR_INVALID_ARG, "start of a non-persistent request");
    EXPECT(gcoll_comm_destroy(c) == GCOLL_ERR_INVALID_ARG, "destroy with a request outstanding");
    EXPECT(gcoll_wait(&req) == GCOLL_SUCCESS, "the request still completes after the refusal");
    /* the communicator still works after every refusal */
    for (int i = 0; i < 4; i++) x[i] = (float)(i + rank);
    EXPECT(gcoll_allreduce(x, x, 4, GCOLL_FLOAT32, GCOLL_SUM, c) == GCOLL_SUCCESS,
           "allreduce after misuse");
    float want = (float)(size * (size - 1) / 2);
    EXPECT(x[0] == want, "allreduce after misuse: %g, want %g", (double)x[0], (double)want);
}

/* gcoll_wait_hook_set: a rank that waits for a late peer calls the hook,
 * from its own thread only (never the progress thread), in a blocking
 * collective and in gcoll_wait; removed, it is not called. */
static unsigned long hook_calls, hook_foreign;
static pthread_t hook_owner;

static void count_hook(void *arg)
{
    hook_calls++;
    if (!pthread_equal(pthread_self(), hook_owner)) hook_foreign++;
    *(int *)arg = 1;
}

static void test_wait_hook(gcoll_comm_t c)
{
    if (size < 2) return;
    int touched = 0;
    float x[4] = { 1, 1, 1, 1 };
    hook_owner = pthread_self();
    EXPECT(gcoll_wait_hook_set(count_hook, &touched) == GCOLL_SUCCESS, "wait_hook_set");
    for (int form = 0; form < 2; form++) {
        hook_calls = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) usleep(50 * 1000);   /* the others wait inside libgcoll */
        gcoll_status_t st;
        if (form == 0) {
            st = gcoll_allreduce(x, x, 4, GCOLL_FLOAT32, GCOLL_SUM, c);
        } else {
            gcoll_request_t req;
            st = gcoll_iallreduce(x, x, 4, GCOLL_FLOAT32, GCOLL_SUM, c, &req);
            if (st == GCOLL_SUCCESS) st = gcoll_wait(&req);
        }
        EXPECT(st == GCOLL_SUCCESS, "allreduce with a wait hook (%s)", form ? "wait" : "blocking");
        if (rank != 0)
            EXPECT(hook_calls > 0 && touched, "waiting 50 ms for rank 0 (%s): the hook ran %lu times",
                   form ? "gcoll_wait" : "blocking", hook_calls);
    }
    EXPECT(hook_foreign == 0, "the wait hook ran %lu times outside the waiting thread", hook_foreign);
    EXPECT(gcoll_wait_hook_set(NULL, NULL) == GCOLL_SUCCESS, "wait_hook_set(NULL)");
    hook_calls = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) usleep(20 * 1000);
    EXPECT(gcoll_allreduce(x, x, 4, GCOLL_FLOAT32, GCOLL_SUM, c) == GCOLL_SUCCESS,
           "allreduce after the hook was removed");
    EXPECT(hook_calls == 0, "a removed wait hook ran %lu times", hook_calls);
}

static int mode_many(void)
{
    gcoll_comm_t a, b;
    if (gcoll_comm_create(MPI_COMM_WORLD, &a) != GCOLL_SUCCESS ||
        gcoll_comm_create(MPI_COMM_WORLD, &b) != GCOLL_SUCCESS) {
        FAIL("comm_create");
        return 1;
    }
    for (int coll = 0; coll < C_COUNT; coll++)
        for (int mode = 0; mode < 3; mode++) test_many_coll(a, coll, mode);
    test_two_comms(a, b);
    test_persistent(a, C_ALLREDUCE, 65537);
    test_persistent(a, C_BCAST, 300001);
    test_misuse(a);
    test_wait_hook(a);
    EXPECT(gcoll_comm_destroy(b) == GCOLL_SUCCESS, "destroy b");
    EXPECT(gcoll_comm_destroy(a) == GCOLL_SUCCESS, "destroy a");
    return 0;
}

/* ---- the direct path of blocking calls (core/coll.c, run_host) ----------- */

static gcoll_status_t job_call_blocking(job_t *j, gcoll_comm_t c)
{
    switch (j->coll) {
    case C_ALLREDUCE:
        return gcoll_allreduce(j->send, j->recv, j->count, GCOLL_FLOAT32, GCOLL_SUM, c);
    case C_BCAST:  return gcoll_bcast(j->recv, j->count, GCOLL_FLOAT32, j->root, c);
    case C_REDUCE:
        return gcoll_reduce(j->send, j->recv, j->count, GCOLL_FLOAT32, GCOLL_SUM, j->root, c);
    default:       return GCOLL_ERR_INTERNAL;
    }
}

/* reps identical blocking calls (new inputs each time, the same buffers),
 * each against MPI's; the root sleeps delay_us before every fourth. */
static void direct_loop(gcoll_comm_t c, int coll, size_t count, int root, int reps, int delay_us)
{
    job_t j;
    job_init(&j, coll, count, 0, root, 0);
    for (int rep = 0; rep < reps; rep++) {
        job_fill(&j, rep);
        job_reference(&j);
        if (delay_us && rank == j.root && rep % 4 == 1) usleep((useconds_t)delay_us);
        EXPECT(job_call_blocking(&j, c) == GCOLL_SUCCESS, "blocking %s count=%zu rep %d: %s",
               coll_name[coll], count, rep, gcoll_last_error());
        job_check(&j, "blocking, repeated");
    }
    job_free(&j);
}

static void direct_counts(gcoll_comm_t c, uint64_t *done, uint64_t *handed)
{
    EXPECT(gcoll_comm_direct_stats(c, done, handed) == GCOLL_SUCCESS, "direct_stats: %s",
           gcoll_last_error());
}

/* expect 1: one node, where a small blocking call is one NODE step and
 * must take the direct path (every call: the first builds its schedule,
 * the others keep it); 0: simulated nodes, where no call may. */
static int mode_direct(int expect)
{
    gcoll_comm_t c;
    gcoll_stats_t st0, st1;
    uint64_t d0, h0, d1, h1;
    const int reps = 100;
    if (gcoll_comm_create(MPI_COMM_WORLD, &c) != GCOLL_SUCCESS) {
        FAIL("comm_create");
        return 1;
    }
    gcoll_comm_get_stats(c, &st0);
    direct_counts(c, &d0, &h0);
    direct_loop(c, C_ALLREDUCE, 3, 0, reps, 0);
    direct_loop(c, C_BCAST, 2, size - 1, reps, 0);
    direct_loop(c, C_REDUCE, 5, 0, reps, 0);
    direct_counts(c, &d1, &h1);
    gcoll_comm_get_stats(c, &st1);
    /* across nodes a rank whose part is one NODE step (a reader of its
     * node's bcast) may take it too; rank 0 leads node 0 and sends or
     * receives across nodes in every one of these calls */
    uint64_t want = expect ? 3 * (uint64_t)reps : 0;
    if (expect || rank == 0)
        EXPECT(d1 - d0 + h1 - h0 == want, "direct path: %llu calls finished and %llu handed "
               "over, expected %llu in all", (unsigned long long)(d1 - d0),
               (unsigned long long)(h1 - h0), (unsigned long long)want);
    EXPECT(st1.calls - st0.calls == 3 * (uint64_t)reps, "stats count %llu calls, made %d",
           (unsigned long long)(st1.calls - st0.calls), 3 * reps);

    /* a late root: the readers' spin runs out, the engine waits for the rest */
    direct_counts(c, &d0, &h0);
    direct_loop(c, C_BCAST, 2, size - 1, 40, 20000);
    direct_loop(c, C_REDUCE, 5, 0, 40, 20000);
    direct_counts(c, &d1, &h1);
    if (expect) {
        int late = rank != size - 1 ? 10 : 0;   /* the bcast's readers wait 10 times */
        EXPECT(h1 - h0 >= (uint64_t)late, "a late root: %llu calls handed to the engine, expected "
               "at least %d", (unsigned long long)(h1 - h0), late);
    } else if (rank == 0) {
        EXPECT(d1 - d0 + h1 - h0 == 0, "simulated nodes: %llu calls of node 0's leader took "
               "the direct path", (unsigned long long)(d1 - d0 + h1 - h0));
    }

    /* a request outstanding: the same blocking call goes after it, in order */
    job_t nb, bl;
    job_init(&nb, C_BCAST, 7, 0, 0, 1);
    job_init(&bl, C_BCAST, 2, 0, size - 1, 2);
    for (int rep = 0; rep < 5; rep++) {
        gcoll_request_t req;
        job_fill(&nb, rep);
        job_fill(&bl, rep + 9);
        job_reference(&nb);
        job_reference(&bl);
        EXPECT(job_call(&nb, c, &req, 0) == GCOLL_SUCCESS, "ibcast");
        EXPECT(job_call_blocking(&bl, c) == GCOLL_SUCCESS, "bcast behind an ibcast: %s",
               gcoll_last_error());
        EXPECT(gcoll_wait(&req) == GCOLL_SUCCESS, "wait: %s", gcoll_last_error());
        job_check(&nb, "ibcast, then a blocking bcast");
        job_check(&bl, "blocking bcast behind an ibcast");
    }
    job_free(&nb);
    job_free(&bl);
    EXPECT(gcoll_comm_destroy(c) == GCOLL_SUCCESS, "destroy after direct calls: %s",
           gcoll_last_error());
    return 0;
}

/* ---- background progress -------------------------------------------------- */

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int mode_background(void)
{
    gcoll_comm_t c;
    job_t j;
    if (gcoll_comm_create(MPI_COMM_WORLD, &c) != GCOLL_SUCCESS) {
        FAIL("comm_create");
        return 1;
    }
    int touched = 0;
    hook_owner = pthread_self();   /* the thread progresses, but must not run the hook */
    gcoll_wait_hook_set(count_hook, &touched);
    for (int rep = 0; rep < 3; rep++) {
        gcoll_request_t req;
        int done = 0;
        job_init(&j, C_ALLREDUCE, 1u << 20, 0, 0, rep);
        job_reference(&j);
        MPI_Barrier(MPI_COMM_WORLD);
        EXPECT(job_call(&j, c, &req, 0) == GCOLL_SUCCESS, "post 4 MiB iallreduce");
        usleep(400 * 1000);   /* outside libgcoll: only the thread can progress it */
        EXPECT(gcoll_test(&req, &done) == GCOLL_SUCCESS, "test");
        EXPECT(done, "4 MiB iallreduce not complete after 400 ms of background progress (rep %d)",
               rep);
        if (!done) gcoll_wait(&req);
        job_check(&j, "background");
        job_free(&j);
    }
    /* idle: the thread must sleep (after a linger of at most 2 s) */
    MPI_Barrier(MPI_COMM_WORLD);
    sleep(3);
    double t0 = cpu_seconds();
    sleep(5);
    double used = cpu_seconds() - t0;
    EXPECT(used < 0.05, "idle progress thread used %.3f s of CPU in 5 s (limit 1%%)", used);
    if (rank == 0) printf("idle CPU over 5 s: %.4f s\n", used);
    EXPECT(hook_foreign == 0, "the progress thread ran the wait hook %lu times", hook_foreign);
    gcoll_wait_hook_set(NULL, NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    EXPECT(gcoll_comm_destroy(c) == GCOLL_SUCCESS, "destroy");
    return 0;
}

/* ---- a transport failure mid-collective ---------------------------------- */

static int mode_fault(void)
{
    gcoll_comm_t c;
    if (gcoll_comm_create(MPI_COMM_WORLD, &c) != GCOLL_SUCCESS) {
        FAIL("comm_create");
        return 1;
    }
    /* rank 0 passes one element more: its messages do not match the
     * receives its peers posted, which fail (or time out) mid-schedule */
    size_t n = 200000 + (rank == 0);
    float *x = calloc(n, sizeof(float));
    gcoll_request_t req;
    gcoll_status_t st = gcoll_iallreduce(x, x, n, GCOLL_FLOAT32, GCOLL_SUM, c, &req);
    if (st == GCOLL_SUCCESS) st = gcoll_wait(&req);
    int failed = st != GCOLL_SUCCESS, all_failed = 0;
    MPI_Allreduce(&failed, &all_failed, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    EXPECT(failed, "a mismatched allreduce returned success");
    if (rank == 0) printf("mismatched call: every rank failed: %s\n", all_failed ? "yes" : "no");
    free(x);
    /* revoked: later calls, blocking and not, fail at once on every rank
     * (no hang, no timeout), naming the rank that failed */
    for (int it = 0; it < 4; it++) {
        int y = 1, z = 0;
        gcoll_request_t r;
        st = it & 1 ? gcoll_allreduce(&y, &z, 1, GCOLL_INT32, GCOLL_SUM, c)
                    : gcoll_iallreduce(&y, &z, 1, GCOLL_INT32, GCOLL_SUM, c, &r);
        EXPECT(st != GCOLL_SUCCESS && strstr(gcoll_last_error(), "revoked") &&
                   strstr(gcoll_last_error(), "failed"),
               "call %d on the revoked communicator: status %d, '%s'", it, (int)st,
               gcoll_last_error());
    }
    EXPECT(gcoll_comm_destroy(c) == GCOLL_SUCCESS, "destroy the revoked communicator");
    if (gcoll_comm_create(MPI_COMM_WORLD, &c) != GCOLL_SUCCESS) {
        FAIL("comm_create after the failure");
        return 1;
    }
    /* a new communicator is unharmed */
    for (int it = 0; it < 20; it++) {
        job_t j;
        gcoll_request_t r;
        job_init(&j, it & 1 ? C_ALLGATHER : C_ALLREDUCE, 70001 + (size_t)it, 0, 0, it);
        job_reference(&j);
        EXPECT(job_call(&j, c, &r, 0) == GCOLL_SUCCESS && gcoll_wait(&r) == GCOLL_SUCCESS,
               "call %d after the failure", it);
        job_check(&j, "on a new communicator after a failure");
        job_free(&j);
    }
    EXPECT(gcoll_comm_destroy(c) == GCOLL_SUCCESS, "destroy");
    return 0;
}

/* ---- pipelined hierarchical allreduce at rendezvous sizes ------------------ */

static int mode_pipeline(int reps)
{
    gcoll_comm_t c;
    if (gcoll_comm_create(MPI_COMM_WORLD, &c) != GCOLL_SUCCESS) {
        FAIL("comm_create");
        return 1;
    }
    for (int it = 0; it < reps; it++) {
        job_t j[2];
        gcoll_request_t r[2];
        for (int k = 0; k < 2; k++) {
            job_init(&j[k], C_ALLREDUCE, (size_t)(1 + (it + k) % 4) << 20, 0, 0, it + k);
            job_reference(&j[k]);
            EXPECT(job_call(&j[k], c, &r[k], 0) == GCOLL_SUCCESS, "post %d", it);
        }
        EXPECT(gcoll_waitall(2, r) == GCOLL_SUCCESS, "waitall %d", it);
        for (int k = 0; k < 2; k++) {
            job_check(&j[k], "pipelined");
            job_free(&j[k]);
        }
    }
    EXPECT(gcoll_comm_destroy(c) == GCOLL_SUCCESS, "destroy");
    return 0;
}

/* ---- compressed allreduces as engine tasks -------------------------------- */

static int mode_compress(void)
{
    static const gcoll_compress_t kinds[2] = { GCOLL_COMPRESS_TOPK, GCOLL_COMPRESS_ONEBIT };
    const size_t n = 100003;
    gcoll_comm_t c;
    gcoll_compressor_t async[2], twin[2];
    if (gcoll_comm_create(MPI_COMM_WORLD, &c) != GCOLL_SUCCESS) {
        FAIL("comm_create");
        return 1;
    }
    for (int k = 0; k < 2; k++) {
        gcoll_compress_params_t p = { .kind = kinds[k] };
        EXPECT(gcoll_compressor_create(c, n, &p, &async[k]) == GCOLL_SUCCESS &&
               gcoll_compressor_create(c, n, &p, &twin[k]) == GCOLL_SUCCESS, "compressor_create");
    }
    float *in = malloc(n * sizeof(float)), *out[2], *ref[2];
    for (int k = 0; k < 2; k++) {
        out[k] = malloc(n * sizeof(float));
        ref[k] = malloc(n * sizeof(float));
    }
    job_t plain;
    for (int step = 0; step < 10; step++) {
        gcoll_request_t r[3];
        for (size_t i = 0; i < n; i++)
            in[i] = (float)((int)((i * 31 + (size_t)rank * 7 + (size_t)step * 3) % 97) - 48) / 8;
        job_init(&plain, C_ALLREDUCE, 70001, 0, 0, step);
        job_reference(&plain);
        for (int k = 0; k < 2; k++)
            EXPECT(gcoll_iallreduce_compressed(in, out[k], n, GCOLL_FLOAT32, GCOLL_AVG, async[k],
                                               &r[k]) == GCOLL_SUCCESS, "post compressed %d", k);
        EXPECT(job_call(&plain, c, &r[2], 0) == GCOLL_SUCCESS, "post plain");
        if (step == 0) {
            gcoll_request_t extra;
            /* long enough for the progress thread to finish the task on
             * some ranks: still busy until waited, on every rank alike */
            usleep(200 * 1000);
            EXPECT(gcoll_iallreduce_compressed(in, out[0], n, GCOLL_FLOAT32, GCOLL_AVG, async[0],
                                               &extra) == GCOLL_ERR_INVALID_ARG,
                   "a second call on a busy compressor must be refused");
            EXPECT(gcoll_compressor_destroy(async[0]) == GCOLL_ERR_INVALID_ARG,
                   "destroying a busy compressor must be refused");
        }
        for (int k = 2; k >= 0; k--) EXPECT(gcoll_wait(&r[k]) == GCOLL_SUCCESS, "wait %d", k);
        for (int k = 0; k < 2; k++) {
            EXPECT(gcoll_allreduce_compressed(in, ref[k], n, GCOLL_FLOAT32, GCOLL_AVG, twin[k]) ==
                       GCOLL_SUCCESS, "blocking twin %d", k);
            EXPECT(memcmp(out[k], ref[k], n * sizeof(float)) == 0,
                   "step %d codec %d: the task differs from its blocking twin", step, k);
        }
        job_check(&plain, "beside compressed tasks");
        job_free(&plain);
    }
    for (int k = 0; k < 2; k++) {
        EXPECT(gcoll_compressor_destroy(async[k]) == GCOLL_SUCCESS, "destroy");
        gcoll_compressor_destroy(twin[k]);
        free(out[k]);
        free(ref[k]);
    }
    free(in);
    EXPECT(gcoll_comm_destroy(c) == GCOLL_SUCCESS, "destroy comm");
    return 0;
}

int main(int argc, char **argv)
{
    int provided;
    const char *mode = argc > 1 ? argv[1] : "many";
    /* GCOLL_TEST_MPI_THREAD=serialized: one application thread at a time,
     * where the engine's lock is biased towards the caller (engine.c) */
    const char *level = getenv("GCOLL_TEST_MPI_THREAD");
    int want = level && !strcmp(level, "serialized") ? MPI_THREAD_SERIALIZED : MPI_THREAD_MULTIPLE;
    MPI_Init_thread(&argc, &argv, want, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (!strcmp(mode, "many")) mode_many();
    else if (!strcmp(mode, "background")) mode_background();
    else if (!strcmp(mode, "fault")) mode_fault();
    else if (!strcmp(mode, "pipeline")) mode_pipeline(argc > 2 ? atoi(argv[2]) : 10);
    else if (!strcmp(mode, "compress")) mode_compress();
    else if (!strcmp(mode, "direct")) mode_direct(argc > 2 ? atoi(argv[2]) : 1);
    else FAIL("unknown mode %s", mode);
    int bad = failures, any = 0, total = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Reduce(&checks, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("%s: %d checks, %d failures\n", mode, total, any);
    MPI_Finalize();
    return any ? 1 : 0;
}
