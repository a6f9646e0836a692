/* SPDX-License-Identifier: BSD-3-Clause */
/* Nonblocking collectives' requests.
 *
 * Decision: the MPI_Request handed to the application is a real MPI
 * generalized request (MPI_Grequest_start), and this library wraps
 * MPI_Wait, MPI_Test, MPI_Waitall, MPI_Testall, MPI_Waitany, MPI_Testany,
 * MPI_Waitsome, MPI_Testsome, MPI_Request_free and MPI_Request_get_status:
 * for each of our requests in the array they advance the libgcoll request
 * (gcoll_test) and, once it is done, call MPI_Grequest_complete on the
 * caller's thread; then they hand the whole array to PMPI_*, which now sees
 * our requests complete beside the application's own.
 *
 * - Generalized requests alone would need someone to call
 *   MPI_Grequest_complete when libgcoll finishes: a thread of ours, so
 *   MPI_THREAD_MULTIPLE, which most applications do not ask for.  Wrapping
 *   alone (fake handles) would crash in any MPI call we do not wrap.  Both
 *   together: the handle is valid everywhere (MPI_Request_get_status,
 *   MPI_Cancel, statuses, MPI_Waitall over mixed arrays all work as MPI
 *   defines them), and completion happens in the calls that wait.
 * - Mixed arrays: while our requests are not done, the wait loops also
 *   poke MPI's progress (PMPI_Iprobe) so the application's MPI requests, and
 *   peers waiting on them (rendezvous sends), keep moving: no deadlock
 *   between MPI's progress and libgcoll's.  The same loop drives the
 *   blocking collectives libgcoll serves (gmpi_wait_gcoll).
 * - Fortran's MPI_WAIT calls PMPI_Wait directly, so Fortran's nonblocking
 *   collectives are not intercepted (they go to MPI): a request of ours is
 *   only ever waited for through the C calls wrapped here. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include "gmpi.h"

typedef struct {
    gcoll_request_t g;
    MPI_Request     mreq;
    int             done;
    int             err;      /* MPI error code of the outcome */
    gmpi_fn_t       fn;
} wrap_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static wrap_t **table;
static size_t n_out, cap;

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

static int free_fn(void *extra)
{
    wrap_t *w = extra;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < n_out; i++)
        if (table[i] == w) {
            table[i] = table[--n_out];
            break;
        }
    pthread_mutex_unlock(&lock);
    free(w);
    return MPI_SUCCESS;
}

static int cancel_fn(void *extra, int complete)
{
    return MPI_SUCCESS;   /* a collective cannot be cancelled; it completes */
}

int gmpi_request_wrap(gcoll_request_t greq, MPI_Comm comm, gmpi_fn_t fn, MPI_Request *req)
{
    wrap_t *w = calloc(1, sizeof(*w));
    if (!w) return MPI_ERR_NO_MEM;
    w->g = greq;
    w->fn = fn;
    w->err = MPI_SUCCESS;
    pthread_mutex_lock(&lock);
    if (n_out == cap) {
        size_t nc = cap ? 2 * cap : 64;
        wrap_t **t = realloc(table, nc * sizeof(*t));
        if (!t) { pthread_mutex_unlock(&lock); free(w); return MPI_ERR_NO_MEM; }
        table = t;
        cap = nc;
    }
    pthread_mutex_unlock(&lock);
    int rc = PMPI_Grequest_start(query_fn, free_fn, cancel_fn, w, &w->mreq);
    if (rc != MPI_SUCCESS) { free(w); return rc; }
    pthread_mutex_lock(&lock);
    table[n_out] = w;
    __atomic_store_n(&n_out, n_out + 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&lock);
    *req = w->mreq;
    return MPI_SUCCESS;
}

/* Advance w once; complete its generalized request when libgcoll is done. */
static void progress_one(wrap_t *w)
{
    if (w->done) return;
    int done = 0;
    gmpi_inside++;
    gcoll_status_t st = gcoll_test(&w->g, &done);
    gmpi_inside--;
    if (st != GCOLL_SUCCESS) {
        fprintf(stderr, "gcoll_mpi: %s: %s\n", gmpi_fn_name(w->fn), gcoll_last_error());
        w->err = MPI_ERR_OTHER;
        done = 1;
    }
    if (done) {
        w->done = 1;
        PMPI_Grequest_complete(w->mreq);
    }
}

/* MPI's own progress, for the application's requests and its peers. */
static void poke_mpi(unsigned iter)
{
    int flag;
    PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_SELF, &flag, MPI_STATUS_IGNORE);
    (void)iter;
    sched_yield();   /* as libgcoll's own waiter: an oversubscribed peer needs the core */
}

gcoll_status_t gmpi_wait_gcoll(gcoll_request_t *greq)
{
    gcoll_status_t st;
    int done = 0;
    for (unsigned iter = 0;; iter++) {
        gmpi_inside++;
        st = gcoll_test(greq, &done);
        gmpi_inside--;
        if (st != GCOLL_SUCCESS || done) return st;
        if (iter >= 64 && (iter & 7) == 7) poke_mpi(iter);
    }
}

/* Our not-yet-done requests among reqs: advance each once.  Returns how
 * many of ours are still not done (0 if none of them is ours). */
static size_t progress_array(int n, MPI_Request reqs[])
{
    if (__atomic_load_n(&n_out, __ATOMIC_RELAXED) == 0) return 0;
    size_t pending = 0;
    for (int i = 0; i < n; i++) {
        wrap_t *w = lookup(reqs[i]);
        if (!w) continue;
        progress_one(w);
        pending += !w->done;
    }
    return pending;
}

int MPI_Wait(MPI_Request *req, MPI_Status *status)
{
    wrap_t *w = req ? lookup(*req) : NULL;
    if (w)
        for (unsigned iter = 0; !w->done; iter++) {
            progress_one(w);
            if (!w->done && (iter & 63) == 63) poke_mpi(iter);
        }
    return PMPI_Wait(req, status);
}

int MPI_Test(MPI_Request *req, int *flag, MPI_Status *status)
{
    wrap_t *w = req ? lookup(*req) : NULL;
    if (w) progress_one(w);
    return PMPI_Test(req, flag, status);
}

int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status statuses[])
{
    if (reqs && n > 0)
        for (unsigned iter = 0; progress_array(n, reqs); iter++)
            if ((iter & 7) == 7) poke_mpi(iter / 8);
    return PMPI_Waitall(n, reqs, statuses);
}

int MPI_Testall(int n, MPI_Request reqs[], int *flag, MPI_Status statuses[])
{
    if (reqs && n > 0) progress_array(n, reqs);
    return PMPI_Testall(n, reqs, flag, statuses);
}

int MPI_Testany(int n, MPI_Request reqs[], int *idx, int *flag, MPI_Status *status)
{
    if (reqs && n > 0) progress_array(n, reqs);
    return PMPI_Testany(n, reqs, idx, flag, status);
}

int MPI_Testsome(int n, MPI_Request reqs[], int *outcount, int idx[], MPI_Status statuses[])
{
    if (reqs && n > 0) progress_array(n, reqs);
    return PMPI_Testsome(n, reqs, outcount, idx, statuses);
}

/* Any/some: test everything (ours advanced first) until something is done. */
int MPI_Waitany(int n, MPI_Request reqs[], int *idx, MPI_Status *status)
{
    if (!reqs || n <= 0 || __atomic_load_n(&n_out, __ATOMIC_RELAXED) == 0)
        return PMPI_Waitany(n, reqs, idx, status);
    for (unsigned iter = 0;; iter++) {
        int flag = 0;
        size_t ours = progress_array(n, reqs);
        int rc = PMPI_Testany(n, reqs, idx, &flag, status);
        if (rc != MPI_SUCCESS || flag) return rc;
        if (!ours && !progress_array(n, reqs)) return PMPI_Waitany(n, reqs, idx, status);
        if (iter >= 1024) sched_yield();
    }
}

int MPI_Waitsome(int n, MPI_Request reqs[], int *outcount, int idx[], MPI_Status statuses[])
{
    if (!reqs || n <= 0 || __atomic_load_n(&n_out, __ATOMIC_RELAXED) == 0)
        return PMPI_Waitsome(n, reqs, outcount, idx, statuses);
    for (unsigned iter = 0;; iter++) {
        progress_array(n, reqs);
        int rc = PMPI_Testsome(n, reqs, outcount, idx, statuses);
        if (rc != MPI_SUCCESS || *outcount != 0) return rc;
        if (iter >= 1024) sched_yield();
    }
}

/* Freeing an active request of ours: the collective still has to run (its
 * peers take part), so finish it here, then let MPI free the handle. */
int MPI_Request_free(MPI_Request *req)
{
    wrap_t *w = req ? lookup(*req) : NULL;
    if (w)
        for (unsigned iter = 0; !w->done; iter++) {
            progress_one(w);
            if (!w->done && (iter & 63) == 63) poke_mpi(iter);
        }
    return PMPI_Request_free(req);
}

int MPI_Request_get_status(MPI_Request req, int *flag, MPI_Status *status)
{
    wrap_t *w = lookup(req);
    if (w) progress_one(w);
    return PMPI_Request_get_status(req, flag, status);
}
