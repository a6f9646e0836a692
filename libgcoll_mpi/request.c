/* SPDX-License-Identifier: BSD-3-Clause */
/* Nonblocking and persistent collectives' requests.
 *
 * Decision: the MPI_Request handed to the application is a real MPI
 * request, and this library wraps MPI_Wait, MPI_Test, MPI_Waitall,
 * MPI_Testall, MPI_Waitany, MPI_Testany, MPI_Waitsome, MPI_Testsome,
 * MPI_Request_free, MPI_Request_get_status, MPI_Start and MPI_Startall: for
 * each of our requests in the array they advance the libgcoll request
 * (gcoll_test) and, once it is done, complete the MPI request on the
 * caller's thread; then they hand the whole array to PMPI_*, which now sees
 * our requests complete beside the application's own.
 *
 * - Nonblocking (MPI_I*): the MPI request is a generalized request
 *   (MPI_Grequest_start), completed with MPI_Grequest_complete.
 *   Generalized requests alone would need someone to call
 *   MPI_Grequest_complete when libgcoll finishes: a thread of ours, so
 *   MPI_THREAD_MULTIPLE, which most applications do not ask for.  Wrapping
 *   alone (fake handles) would crash in any MPI call we do not wrap.  Both
 *   together: the handle is valid everywhere (MPI_Request_get_status,
 *   MPI_Cancel, statuses, MPI_Waitall over mixed arrays all work as MPI
 *   defines them), and completion happens in the calls that wait.
 * - Persistent (MPI_*_init): a generalized request cannot be restarted, and
 *   MPI_Wait would free it.  The MPI request is instead a persistent
 *   receive of 0 bytes from this process (MPI_Recv_init on a duplicate of
 *   MPI_COMM_SELF, a tag of its own): MPI_Start starts libgcoll's request
 *   (gcoll_start) and the receive; when libgcoll is done, a 0-byte send to
 *   self with that tag completes the receive; MPI_Wait etc. then leave it
 *   inactive, as MPI does its own persistent requests, and MPI_Start can
 *   start it again.  A failure sends 1 byte instead: the wait then returns
 *   an error (MPI_ERR_TRUNCATE, the communicator's error handler having been
 *   called with MPI_ERR_OTHER first).
 * - Waiting: the blocking collectives that libgcoll serves, and MPI_Wait,
 *   MPI_Waitall and MPI_Request_free on our requests, wait inside libgcoll
 *   as a direct call does (spinning on node steps, then parking); its wait
 *   hook, gmpi_wait_hook, keeps MPI's progress going there, so the
 *   application's MPI requests in a mixed array, and peers waiting on them
 *   (rendezvous sends), keep moving.
 * - Fortran's MPI_WAIT & co. call PMPI_Wait directly, so fortran.c wraps
 *   the Fortran symbols too, with the helpers gmpi_requests_* of this file,
 *   then hands the call to the MPI's own Fortran function. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include "base/clock.h"
#include "gmpi.h"

typedef struct {
    gcoll_request_t g;
    MPI_Request     mreq;
    int             done;     /* libgcoll's part complete (persistent: or inactive) */
    int             err;      /* MPI error code of the outcome */
    gmpi_fn_t       fn;
    /* persistent requests only */
    int             persistent;
    int             tag;      /* of the proxy receive on proxy_comm */
    MPI_Comm        comm;     /* the application's, for its error handler */
    char            sink;     /* the proxy receive's buffer (0 bytes) */
} wrap_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static wrap_t **table;        /* our requests, outstanding or persistent */
static size_t n_out, cap;

/* Persistent requests' proxies: receives on a duplicate of MPI_COMM_SELF,
 * one tag each (freed tags are reused first). */
static MPI_Comm proxy_comm = MPI_COMM_NULL;
static int proxy_tag_ub, next_tag, *free_tags, n_free_tags;

static wrap_t *lookup_locked(MPI_Request r)
{
    for (size_t i = 0; i < n_out; i++)
        if (table[i]->mreq == r) return table[i];
    return NULL;
}

static wrap_t *lookup(MPI_Request r)
{
    if (__atomic_load_n(&n_out, __ATOMIC_RELAXED) == 0 || r == MPI_REQUEST_NULL) return NULL;
    pthread_mutex_lock(&lock);
    wrap_t *w = lookup_locked(r);
    pthread_mutex_unlock(&lock);
    return w;
}

static int query_fn(void *extra, MPI_Status *status)
{
    wrap_t *w = extra;
    PMPI_Status_set_elements(status, MPI_BYTE, 0);
    PMPI_Status_set_cancelled(status, 0);
    status->MPI_SOURCE = MPI_UNDEFINED;
    status->MPI_TAG = MPI_UNDEFINED;
    status->MPI_ERROR = w->err;
    return w->err;
}

static void table_remove(wrap_t *w);

static int free_fn(void *extra)
{
    wrap_t *w = extra;
    table_remove(w);
    free(w);
    return MPI_SUCCESS;
}

static int cancel_fn(void *extra, int complete)
{
    return MPI_SUCCESS;   /* a collective cannot be cancelled; it completes */
}

/* Add w to the table (under lock); -1 when out of memory. */
static int table_add_locked(wrap_t *w)
{
    if (n_out == cap) {
        size_t nc = cap ? 2 * cap : 64;
        wrap_t **t = realloc(table, nc * sizeof(*t));
        if (!t) return -1;
        table = t;
        cap = nc;
    }
    table[n_out] = w;
    __atomic_store_n(&n_out, n_out + 1, __ATOMIC_RELAXED);
    return 0;
}

static void table_remove(wrap_t *w)
{
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < n_out; i++)
        if (table[i] == w) {
            table[i] = table[n_out - 1];
            __atomic_store_n(&n_out, n_out - 1, __ATOMIC_RELAXED);
            break;
        }
    pthread_mutex_unlock(&lock);
}

/* A tag for a new proxy receive (under lock); -1 when none is left. */
static int tag_get_locked(void)
{
    if (proxy_comm == MPI_COMM_NULL) {
        int *ub = NULL, flag = 0;
        if (PMPI_Comm_dup(MPI_COMM_SELF, &proxy_comm) != MPI_SUCCESS) {
            proxy_comm = MPI_COMM_NULL;
            return -1;
        }
        /* errors of the proxies come back to the caller of the wait (the
         * application's communicator's handler is called by us first) */
        PMPI_Comm_set_errhandler(proxy_comm, MPI_ERRORS_RETURN);
        PMPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
        proxy_tag_ub = flag && ub ? *ub : 32767;
    }
    if (n_free_tags) return free_tags[--n_free_tags];
    if (next_tag > proxy_tag_ub || next_tag < 0) return -1;
    return next_tag++;
}

static void tag_put(int tag)
{
    pthread_mutex_lock(&lock);
    int *t = realloc(free_tags, (size_t)(n_free_tags + 1) * sizeof(*t));
    if (t) {   /* lost if not: the tag space is large */
        free_tags = t;
        free_tags[n_free_tags++] = tag;
    }
    pthread_mutex_unlock(&lock);
}

/* The MPI request is made under the table's lock, so that it is in the
 * table before any wait can see it, and room for it is there. */
int gmpi_request_wrap(gcoll_request_t greq, MPI_Comm comm, gmpi_fn_t fn, MPI_Request *req)
{
    wrap_t *w = calloc(1, sizeof(*w));
    if (!w) return MPI_ERR_NO_MEM;
    w->g = greq;
    w->fn = fn;
    w->err = MPI_SUCCESS;
    pthread_mutex_lock(&lock);
    int rc = table_add_locked(w) ? MPI_ERR_NO_MEM
                                 : PMPI_Grequest_start(query_fn, free_fn, cancel_fn, w, &w->mreq);
    if (rc != MPI_SUCCESS && n_out && table[n_out - 1] == w)
        __atomic_store_n(&n_out, n_out - 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&lock);
    if (rc != MPI_SUCCESS) { free(w); return rc; }
    *req = w->mreq;
    return MPI_SUCCESS;
}

int gmpi_request_wrap_persistent(gcoll_request_t greq, MPI_Comm comm, gmpi_fn_t fn,
                                 MPI_Request *req)
{
    wrap_t *w = calloc(1, sizeof(*w));
    int rc = MPI_ERR_NO_MEM;
    if (!w) goto err_free_g;
    w->g = greq;
    w->fn = fn;
    w->err = MPI_SUCCESS;
    w->persistent = 1;
    w->done = 1;   /* inactive */
    w->comm = comm;
    pthread_mutex_lock(&lock);
    w->tag = tag_get_locked();
    if (w->tag < 0) {
        pthread_mutex_unlock(&lock);
        fprintf(stderr, "gcoll_mpi: %s: no tag left for a persistent request's proxy\n",
                gmpi_fn_name(fn));
        rc = MPI_ERR_OTHER;
        goto err_free_w;
    }
    if (table_add_locked(w)) {
        pthread_mutex_unlock(&lock);
        goto err_put_tag;
    }
    rc = PMPI_Recv_init(&w->sink, 0, MPI_BYTE, 0, w->tag, proxy_comm, &w->mreq);
    if (rc != MPI_SUCCESS) __atomic_store_n(&n_out, n_out - 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&lock);
    if (rc != MPI_SUCCESS) goto err_put_tag;
    *req = w->mreq;
    return MPI_SUCCESS;

err_put_tag:
    tag_put(w->tag);
err_free_w:
    free(w);
err_free_g:
    gmpi_inside++;
    gcoll_request_free(&greq);
    gmpi_inside--;
    PMPI_Comm_call_errhandler(comm, rc);
    return rc;
}

/* The proxy receive of a persistent request: completed by a send to self,
 * 1 byte into its 0 when libgcoll failed (the wait then reports it). */
static void proxy_complete(wrap_t *w)
{
    static char byte;
    PMPI_Send(&byte, w->err == MPI_SUCCESS ? 0 : 1, MPI_BYTE, 0, w->tag, proxy_comm);
}

/* w's libgcoll part ended with st (done: 0 if still running): on an error
 * say so, then complete its MPI request. */
static void settle(wrap_t *w, gcoll_status_t st, int done)
{
    if (st != GCOLL_SUCCESS) {
        fprintf(stderr, "gcoll_mpi: %s: %s\n", gmpi_fn_name(w->fn), gcoll_last_error());
        w->err = MPI_ERR_OTHER;
        if (w->persistent) PMPI_Comm_call_errhandler(w->comm, MPI_ERR_OTHER);
        done = 1;
    }
    if (done) {
        w->done = 1;
        if (w->persistent) proxy_complete(w);
        else PMPI_Grequest_complete(w->mreq);
    }
}

/* Advance w once; complete its MPI request when libgcoll is done. */
static void progress_one(wrap_t *w)
{
    if (w->done) return;
    int done = 0;
    gmpi_inside++;
    gcoll_status_t st = gcoll_test(&w->g, &done);
    gmpi_inside--;
    settle(w, st, done);
}

/* Drive w to completion inside libgcoll's wait, which spins on node steps
 * and parks as a direct gcoll_wait does; its wait hook (gmpi_wait_hook)
 * keeps MPI's progress going meanwhile. */
static void finish_one(wrap_t *w)
{
    if (w->done) return;
    gmpi_inside++;
    gcoll_status_t st = gcoll_wait(&w->g);
    gmpi_inside--;
    settle(w, st, 1);
}

/* libgcoll's wait hook (gcoll_wait_hook_set): our waits (blocking
 * collectives, MPI_Wait & co. on our requests) wait inside libgcoll, which
 * calls this in each idle turn (the lone waiter's spin on its node step
 * already done); it runs MPI's progress, so the application's requests,
 * and a peer's rendezvous send to this rank, move meanwhile: no deadlock
 * between MPI's progress and libgcoll's.  At most once per
 * GMPI_PROBE_EVERY_S per thread: a probe costs about what a small
 * collective does, and with a count of idle turns a loop of small calls,
 * each idle for a turn or two, would pay one every few calls (measured: no
 * difference at 2 ranks against every 8th turn; the bound on the rate is
 * what is kept).  A parked waiter wakes at least every 2 ms, so a long
 * wait still probes at every wake.  The probe is on MPI_COMM_WORLD,
 * not MPI_COMM_SELF: MPICH serves a probe on a one-rank communicator
 * locally, without running its progress engine (test_dropin's
 * test_progress hung).  A probe matches nothing and receives nothing: the
 * application's messages stay where they are. */
#define GMPI_PROBE_EVERY_S 10e-6

void gmpi_wait_hook(void *arg)
{
    static __thread double probed;
    (void)arg;
    double now = gcoll_clock_now();
    if (now - probed < GMPI_PROBE_EVERY_S) return;
    probed = now;
    int flag;
    PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
}

/* Cheap test before a scan of reqs: none can be ours. */
static int none_ours(int n, const MPI_Request reqs[])
{
    return !reqs || n <= 0 || __atomic_load_n(&n_out, __ATOMIC_RELAXED) == 0;
}

/* Our not-yet-done requests among reqs: advance each once.  Returns how
 * many of ours are still not done (0 if none of them is ours). */
size_t gmpi_requests_progress(int n, const MPI_Request reqs[])
{
    if (none_ours(n, reqs)) return 0;
    size_t pending = 0;
    for (int i = 0; i < n; i++) {
        wrap_t *w = lookup(reqs[i]);
        if (!w) continue;
        progress_one(w);
        pending += !w->done;
    }
    return pending;
}

/* Finish ours among reqs, one after the other: each wait progresses all
 * of libgcoll's requests, and MPI's through the wait hook. */
void gmpi_requests_finish(int n, const MPI_Request reqs[])
{
    if (none_ours(n, reqs)) return;
    for (int i = 0; i < n; i++) {
        wrap_t *w = lookup(reqs[i]);
        if (w) finish_one(w);
    }
}

int gmpi_requests_any_ours(int n, const MPI_Request reqs[])
{
    if (none_ours(n, reqs)) return 0;
    for (int i = 0; i < n; i++)
        if (lookup(reqs[i])) return 1;
    return 0;
}

void gmpi_requests_yield(void)
{
    sched_yield();
}

/* Freeing an active request of ours: the collective still has to run (its
 * peers take part), so finish it here; then a persistent one's part is
 * dropped here, a generalized request's by its free_fn when MPI frees the
 * handle, which the caller does next. */
void gmpi_request_release(MPI_Request req)
{
    wrap_t *w = lookup(req);
    if (!w) return;
    finish_one(w);
    if (!w->persistent) return;
    table_remove(w);
    gmpi_inside++;
    gcoll_request_free(&w->g);
    gmpi_inside--;
    tag_put(w->tag);   /* its receive is inactive: a new one may take the tag */
    free(w);
}

int MPI_Wait(MPI_Request *req, MPI_Status *status)
{
    if (req) gmpi_requests_finish(1, req);
    return PMPI_Wait(req, status);
}

int MPI_Test(MPI_Request *req, int *flag, MPI_Status *status)
{
    if (req) gmpi_requests_progress(1, req);
    return PMPI_Test(req, flag, status);
}

int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status statuses[])
{
    gmpi_requests_finish(n, reqs);
    return PMPI_Waitall(n, reqs, statuses);
}

int MPI_Testall(int n, MPI_Request reqs[], int *flag, MPI_Status statuses[])
{
    gmpi_requests_progress(n, reqs);
    return PMPI_Testall(n, reqs, flag, statuses);
}

int MPI_Testany(int n, MPI_Request reqs[], int *idx, int *flag, MPI_Status *status)
{
    gmpi_requests_progress(n, reqs);
    return PMPI_Testany(n, reqs, idx, flag, status);
}

int MPI_Testsome(int n, MPI_Request reqs[], int *outcount, int idx[], MPI_Status statuses[])
{
    gmpi_requests_progress(n, reqs);
    return PMPI_Testsome(n, reqs, outcount, idx, statuses);
}

/* Any/some: test everything (ours advanced first) until something is done;
 * once none of ours is pending, MPI's own wait takes over. */
int MPI_Waitany(int n, MPI_Request reqs[], int *idx, MPI_Status *status)
{
    if (!gmpi_requests_any_ours(n, reqs)) return PMPI_Waitany(n, reqs, idx, status);
    for (unsigned iter = 0;; iter++) {
        int flag = 0;
        size_t ours = gmpi_requests_progress(n, reqs);
        int rc = PMPI_Testany(n, reqs, idx, &flag, status);
        if (rc != MPI_SUCCESS || flag) return rc;
        if (!ours && !gmpi_requests_progress(n, reqs)) return PMPI_Waitany(n, reqs, idx, status);
        if (iter >= 1024) sched_yield();
    }
}

int MPI_Waitsome(int n, MPI_Request reqs[], int *outcount, int idx[], MPI_Status statuses[])
{
    if (!gmpi_requests_any_ours(n, reqs)) return PMPI_Waitsome(n, reqs, outcount, idx, statuses);
    for (unsigned iter = 0;; iter++) {
        gmpi_requests_progress(n, reqs);
        int rc = PMPI_Testsome(n, reqs, outcount, idx, statuses);
        if (rc != MPI_SUCCESS || *outcount != 0) return rc;
        if (iter >= 1024) sched_yield();
    }
}

int MPI_Request_free(MPI_Request *req)
{
    if (req) gmpi_request_release(*req);
    return PMPI_Request_free(req);
}

/* Start one of ours: libgcoll's request, then the proxy receive. */
static int start_one(wrap_t *w, MPI_Request *req)
{
    gmpi_inside++;
    gcoll_status_t st = gcoll_start(w->g);
    gmpi_inside--;
    if (st != GCOLL_SUCCESS) {
        int rc = st == GCOLL_ERR_INVALID_ARG ? MPI_ERR_REQUEST : MPI_ERR_OTHER;
        fprintf(stderr, "gcoll_mpi: MPI_Start: %s\n", gcoll_last_error());
        PMPI_Comm_call_errhandler(w->comm, rc);
        return rc;
    }
    w->err = MPI_SUCCESS;
    w->done = 0;
    return PMPI_Start(req);
}

int MPI_Start(MPI_Request *req)
{
    wrap_t *w = req ? lookup(*req) : NULL;
    if (!w || !w->persistent) return PMPI_Start(req);
    return start_one(w, req);
}

/* In array order, so collectives are started in the order the program
 * gives them on every rank (ours by gcoll_start, MPI's by PMPI_Start). */
int MPI_Startall(int n, MPI_Request reqs[])
{
    if (!gmpi_requests_any_ours(n, reqs)) return PMPI_Startall(n, reqs);
    for (int i = 0; i < n; i++) {
        wrap_t *w = lookup(reqs[i]);
        int rc = w && w->persistent ? start_one(w, &reqs[i]) : PMPI_Start(&reqs[i]);
        if (rc != MPI_SUCCESS) return rc;
    }
    return MPI_SUCCESS;
}

int MPI_Request_get_status(MPI_Request req, int *flag, MPI_Status *status)
{
    gmpi_requests_progress(1, &req);
    return PMPI_Request_get_status(req, flag, status);
}
