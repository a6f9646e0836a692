/* SPDX-License-Identifier: BSD-3-Clause */
/* The per-communicator pool of requests (request_pool.h).  Callers hold
 * the engine lock (it is a no-op in a single-threaded caller-mode process):
 * requests are taken by posts and given back by whichever thread completes
 * them, and tasks post children from the progress thread. */
#include <stdlib.h>
#include <string.h>
#include "base/alloc.h"
#include "core/comm.h"
#include <stdio.h>
#include "core/engine.h"
#include "core/executor.h"
#include "core/request_pool.h"
#include "base/status.h"

gcoll_status_t gcoll_request_get(struct gcoll_comm *comm, struct gcoll_request **out)
{
    struct gcoll_request *r = comm->pool;
    if (r) {
        comm->pool = r->pool_next;
    } else {
        r = gcoll_calloc(1, sizeof(*r));
        if (!r) return GCOLL_ERROR(GCOLL_ERR_NO_MEMORY, "cannot allocate a request");
        gcoll_sched_init(&r->sched);
        r->comm = comm;
    }
    r->magic = GCOLL_REQUEST_MAGIC;
    r->pool_next = NULL;
    r->persistent = r->active = r->eager = r->started = 0;
    r->task = NULL;
    r->task_state = NULL;
    r->caller_only = (uint8_t)comm->caller_only;
    r->status = GCOLL_SUCCESS;
    r->err[0] = '\0';
    comm->nrequests++;
    *out = r;
    return GCOLL_SUCCESS;
}

void gcoll_request_put(struct gcoll_request *r)
{
    struct gcoll_comm *comm = r->comm;
    r->magic = 0;   /* a stale handle is refused, not reused silently */
    r->pool_next = comm->pool;
    comm->pool = r;
    comm->nrequests--;
}

gcoll_status_t gcoll_request_scratch(struct gcoll_request *r, size_t bytes)
{
    if (bytes <= r->scratch_size) return GCOLL_SUCCESS;
    void *p = NULL;
    if (gcoll_posix_memalign(&p, 4096, bytes) != 0)
        return GCOLL_ERROR(GCOLL_ERR_NO_MEMORY, "cannot allocate %zu bytes of scratch", bytes);
    memset(p, 0, bytes);   /* defined bytes even where only a token is sent */
    free(r->scratch);
    r->scratch = p;
    r->scratch_size = bytes;
    return GCOLL_SUCCESS;
}

void gcoll_request_pool_free(struct gcoll_comm *comm)
{
    while (comm->pool) {
        struct gcoll_request *r = comm->pool;
        comm->pool = r->pool_next;
        gcoll_sched_fini(&r->sched);
        gcoll_exec_fini(r);
        free(r->scratch);
        free(r);
    }
}

gcoll_status_t gcoll_request_completed(struct gcoll_comm *comm, gcoll_status_t outcome,
                                       struct gcoll_request **out)
{
    struct gcoll_request *r;
    gcoll_engine_lock();
    gcoll_status_t st = gcoll_request_get(comm, &r);
    gcoll_engine_unlock();
    GCOLL_TRY(st);
    r->eager = 1;
    r->started = 1;   /* its completion is reported by wait or test */
    r->status = outcome;
    if (outcome != GCOLL_SUCCESS) snprintf(r->err, sizeof(r->err), "%s", gcoll_last_error());
    *out = r;
    return GCOLL_SUCCESS;
}
