/* SPDX-License-Identifier: BSD-3-Clause */
/* UCX transport: one ucp context and one worker per communicator, tag
 * send/receive with UCX's own protocol choice (eager for small messages,
 * zero-copy rendezvous for large ones, any size).
 *
 * Decisions:
 * - Endpoints are created lazily, on the first send to a peer.  Worker
 *   addresses of all ranks are exchanged once at init (MPI_Allgatherv), which
 *   costs memory but no connections; an eager all-to-all connect would create
 *   P-1 endpoints per rank (and their wireup traffic) although hierarchical
 *   algorithms talk to O(log P) peers.  A receive needs no endpoint.
 * - Matching: UCX tag receives have no source argument, so the 64-bit UCX tag
 *   is [source rank : 32 | gcoll tag : 32] and receives use a full mask.
 * - Requests: the nbx API with user_data = the gcoll_tl_req_t.  UCX allocates
 *   its request from the worker's memory pool (no malloc per operation); the
 *   completion callback fills req->status/done and releases the UCX request
 *   at once, so a completed gcoll_tl_req_t holds nothing.  A send that
 *   completes immediately (NULL returned) completes req inside isend;
 *   receives deny immediate completion (see irecv).
 * - Threads: UCS_THREAD_MODE_SERIALIZED when MPI allows several threads
 *   (calls on one communicator are serialised by the caller, gcoll.h), else
 *   SINGLE; the worker is private to the communicator either way.
 * - Teardown: endpoints close in flush mode.  Force mode would need
 *   UCP_ERR_HANDLING_MODE_PEER on every endpoint (and its keepalive cost) and
 *   can cause transport errors on the peer; flush completes at once when the
 *   executor has finished everything, which is the normal case.  Every rank
 *   keeps progressing its worker until an MPI_Ibarrier shows that all ranks
 *   have closed, so a close that needs the peer's progress cannot hang, and
 *   no worker is destroyed while a peer still needs it. */
#ifdef HAVE_CONFIG_H
#include "gcoll_build.h"  /* configure results (HAVE_UCX, ...) */
#endif

#include "base/clock.h"
#include "base/alloc.h"
#include "transport/transport.h"

#ifndef HAVE_UCX

const char *gcoll_tl_ucx_version(void)
{
    return NULL;
}

#else /* HAVE_UCX */

#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucp/api/ucp.h>
#include "core/comm.h"
#include "base/log.h"
#include "base/status.h"

/* The one UCX checking macro: a UCX status variable to a gcoll status. */
#define GCOLL_UCX_CHECK(_ucs_st, _what) \
    ((_ucs_st) == UCS_OK ? GCOLL_SUCCESS \
                         : GCOLL_ERROR(GCOLL_ERR_TRANSPORT, "ucx %s failed: %s", (_what), \
                                       ucs_status_string(_ucs_st)))

#define GCOLL_TL_UCX_FULL_MASK ((ucp_tag_t)-1)
/* After a cancel, a flush-mode close may wait on a send no peer will take. */
#define GCOLL_TL_UCX_CLOSE_GRACE_S 5.0

typedef struct {
    ucp_context_h  context;
    ucp_worker_h   worker;
    ucp_ep_h      *eps;         /* [size], NULL until the first send to that rank */
    char          *addrs;       /* every rank's worker address, concatenated */
    int           *addr_off;    /* [size] offset of rank r's address in addrs */
    int           *addr_len;    /* [size] its length */
    ucp_address_t *my_addr;     /* held only during init */
    size_t         my_addr_len;
    MPI_Comm       comm;        /* the communicator's duplicate, for fini */
    int            rank, size;
    int            cancelled;   /* a request was abandoned: bound the close wait */
    char           desc[128];
} gcoll_tl_ucx_ctx_t;

/* What a request keeps in req->h. */
typedef struct {
    void  *ucp_req;           /* valid only while !req->done */
    size_t bytes;             /* expected size of a receive */
    int    is_recv;
} gcoll_tl_ucx_req_t;

_Static_assert(sizeof(gcoll_tl_ucx_req_t) <= sizeof(((gcoll_tl_req_t *)0)->h),
               "UCX request state must fit in gcoll_tl_req_t.h");

static inline gcoll_tl_ucx_req_t *gcoll_tl_ucx_req(gcoll_tl_req_t *req)
{
    return (gcoll_tl_ucx_req_t *)(void *)&req->h;
}

static inline ucp_tag_t gcoll_tl_ucx_tag(int src, uint32_t tag)
{
    return ((ucp_tag_t)(uint32_t)src << 32) | tag;
}

const char *gcoll_tl_ucx_version(void)
{
    return ucp_get_version_string();
}

/* ------------------------------------------------------------ completion -- */

static void gcoll_tl_ucx_complete(gcoll_tl_req_t *req, ucs_status_t st, size_t length)
{
    gcoll_tl_ucx_req_t *u = gcoll_tl_ucx_req(req);
    const char *what = u->is_recv ? "receive from" : "send to";

    if (st == UCS_ERR_CANCELED) {
        req->status = GCOLL_ERR_TIMEOUT;   /* only cancel() cancels; it explains */
    } else if (st != UCS_OK) {
        req->status = GCOLL_ERROR(GCOLL_ERR_TRANSPORT, "ucx %s rank %d failed: %s", what,
                                  req->peer, ucs_status_string(st));
    } else if (u->is_recv && length != u->bytes) {
        /* The two ranks built different schedules. */
        req->status = GCOLL_ERROR(GCOLL_ERR_TRANSPORT,
                                  "ucx receive from rank %d got %zu bytes where %zu were expected",
                                  req->peer, length, u->bytes);
    } else {
        req->status = GCOLL_SUCCESS;
    }
    u->ucp_req = NULL;
    req->done  = 1;
}

static void gcoll_tl_ucx_send_cb(void *request, ucs_status_t st, void *user_data)
{
    gcoll_tl_ucx_complete(user_data, st, 0);
    ucp_request_free(request);
}

static void gcoll_tl_ucx_recv_cb(void *request, ucs_status_t st, const ucp_tag_recv_info_t *info,
                                 void *user_data)
{
    gcoll_tl_ucx_complete(user_data, st, info ? info->length : 0);
    ucp_request_free(request);
}

/* Record what ucp_tag_*_nbx returned: a request to wait for, or completion.
 * A request whose callback already ran (done) has been released. */
static gcoll_status_t gcoll_tl_ucx_posted(gcoll_tl_req_t *req, ucs_status_ptr_t sp, size_t length)
{
    if (UCS_PTR_IS_PTR(sp)) {
        if (!req->done) {
            gcoll_tl_ucx_req(req)->ucp_req = sp;
        }
        return req->status;
    }
    gcoll_tl_ucx_complete(req, UCS_PTR_STATUS(sp), length);
    return req->status;
}

static void gcoll_tl_ucx_req_init(gcoll_tl_req_t *req, int peer, size_t bytes, int is_recv)
{
    gcoll_tl_ucx_req_t *u = gcoll_tl_ucx_req(req);

    req->done   = 0;
    req->status = GCOLL_SUCCESS;
    req->peer   = peer;
    u->ucp_req  = NULL;
    u->bytes    = bytes;
    u->is_recv  = is_recv;
}

/* ------------------------------------------------------- point-to-point -- */

static gcoll_status_t gcoll_tl_ucx_check_peer(const gcoll_tl_ucx_ctx_t *c, int peer)
{
    if (GCOLL_UNLIKELY(peer < 0 || peer >= c->size)) {
        return GCOLL_ERROR(GCOLL_ERR_INTERNAL, "ucx transport asked for rank %d of %d", peer,
                           c->size);
    }
    return GCOLL_SUCCESS;
}

/* The endpoint to peer, connected on first use (see the file comment). */
static gcoll_status_t gcoll_tl_ucx_ep(gcoll_tl_ucx_ctx_t *c, int peer, ucp_ep_h *ep)
{
    ucp_ep_params_t params;
    ucs_status_t st;

    if (GCOLL_LIKELY(c->eps[peer] != NULL)) {
        *ep = c->eps[peer];
        return GCOLL_SUCCESS;
    }
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    params.address    = (const ucp_address_t *)(c->addrs + c->addr_off[peer]);
    params.err_mode   = UCP_ERR_HANDLING_MODE_NONE;
    st = ucp_ep_create(c->worker, &params, &c->eps[peer]);
    if (st != UCS_OK) {
        c->eps[peer] = NULL;
        return GCOLL_ERROR(GCOLL_ERR_TRANSPORT, "ucx cannot connect to rank %d: %s", peer,
                           ucs_status_string(st));
    }
    gcoll_trace("ucx: connected to rank %d", peer);
    *ep = c->eps[peer];
    return GCOLL_SUCCESS;
}

static gcoll_status_t gcoll_tl_ucx_isend(void *ctx, int peer, uint32_t tag, const void *buf,
                                         size_t bytes, gcoll_tl_req_t *req)
{
    gcoll_tl_ucx_ctx_t *c = ctx;
    ucp_request_param_t param;
    ucp_ep_h ep = NULL;

    gcoll_tl_ucx_req_init(req, peer, bytes, 0);
    req->status = gcoll_tl_ucx_check_peer(c, peer);
    if (req->status == GCOLL_SUCCESS) {
        req->status = gcoll_tl_ucx_ep(c, peer, &ep);
    }
    if (GCOLL_UNLIKELY(req->status != GCOLL_SUCCESS)) {
        req->done = 1;
        return req->status;
    }
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.send      = gcoll_tl_ucx_send_cb;
    param.user_data    = req;
    return gcoll_tl_ucx_posted(req, ucp_tag_send_nbx(ep, buf, bytes,
                                                     gcoll_tl_ucx_tag(c->rank, tag), &param), 0);
}

/* Receives deny immediate completion: UCX 1.13 returns NULL for an eager
 * message found in the unexpected queue without filling recv_info, and the
 * callback's length is what catches a size mismatch.  The callback may then
 * run before ucp_tag_recv_nbx returns. */
static gcoll_status_t gcoll_tl_ucx_irecv(void *ctx, int peer, uint32_t tag, void *buf,
                                         size_t bytes, gcoll_tl_req_t *req)
{
    gcoll_tl_ucx_ctx_t *c = ctx;
    ucp_request_param_t param;

    gcoll_tl_ucx_req_init(req, peer, bytes, 1);
    req->status = gcoll_tl_ucx_check_peer(c, peer);
    if (GCOLL_UNLIKELY(req->status != GCOLL_SUCCESS)) {
        req->done = 1;
        return req->status;
    }
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                         UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    param.cb.recv      = gcoll_tl_ucx_recv_cb;
    param.user_data    = req;
    return gcoll_tl_ucx_posted(req, ucp_tag_recv_nbx(c->worker, buf, bytes,
                                                     gcoll_tl_ucx_tag(peer, tag),
                                                     GCOLL_TL_UCX_FULL_MASK, &param), 0);
}

static void gcoll_tl_ucx_poll(void *ctx)
{
    ucp_worker_progress(((gcoll_tl_ucx_ctx_t *)ctx)->worker);
}

static gcoll_status_t gcoll_tl_ucx_progress(void *ctx)
{
    gcoll_tl_ucx_poll(ctx);
    return GCOLL_SUCCESS;
}

static gcoll_status_t gcoll_tl_ucx_test(void *ctx, gcoll_tl_req_t *req)
{
    if (!req->done) {
        gcoll_tl_ucx_poll(ctx);
    }
    return req->status;
}

static void gcoll_tl_ucx_cancel(void *ctx, gcoll_tl_req_t *req)
{
    gcoll_tl_ucx_ctx_t *c = ctx;
    void *ucp_req = gcoll_tl_ucx_req(req)->ucp_req;

    if (req->done || ucp_req == NULL) {
        return;
    }
    c->cancelled = 1;
    /* A posted receive completes (CANCELED) inside this call, through the
     * callback.  A send may continue in the background: releasing it below
     * guarantees no later callback writes to req. */
    ucp_request_cancel(c->worker, ucp_req);
    if (!req->done) {
        ucp_request_free(ucp_req);
        gcoll_tl_ucx_req(req)->ucp_req = NULL;
        req->done   = 1;
        req->status = GCOLL_ERR_TIMEOUT;
    }
}

static const char *gcoll_tl_ucx_describe(void *ctx)
{
    return ((gcoll_tl_ucx_ctx_t *)ctx)->desc;
}

/* ---------------------------------------------------------------- setup -- */

/* Serialized: the progress engine's lock makes every call to the worker
 * one at a time, from the application's threads or the progress thread. */
static ucs_thread_mode_t gcoll_tl_ucx_thread_mode(void)
{
    return UCS_THREAD_MODE_SERIALIZED;
}

/* Local part of init: context, worker, its address and the tables.  No MPI
 * communication, so a failure here is agreed on before any exchange. */
static gcoll_status_t gcoll_tl_ucx_open(gcoll_tl_ucx_ctx_t *c)
{
    ucp_params_t params;
    ucp_worker_params_t wparams;
    ucp_config_t *config;
    ucs_status_t st;

    c->eps      = gcoll_calloc((size_t)c->size, sizeof(*c->eps));
    c->addr_off = gcoll_malloc((size_t)c->size * sizeof(int));
    c->addr_len = gcoll_malloc((size_t)c->size * sizeof(int));
    if (c->eps == NULL || c->addr_off == NULL || c->addr_len == NULL) {
        return GCOLL_ERROR(GCOLL_ERR_NO_MEMORY, "cannot allocate the ucx endpoint tables");
    }
    st = ucp_config_read(NULL, NULL, &config);  /* honours UCX_TLS, UCX_NET_DEVICES, ... */
    if (st != UCS_OK) {
        return GCOLL_UCX_CHECK(st, "reading the configuration");
    }
    memset(&params, 0, sizeof(params));
    params.field_mask        = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED |
                               UCP_PARAM_FIELD_ESTIMATED_NUM_EPS;
    params.features          = UCP_FEATURE_TAG;
    params.mt_workers_shared = 0;
    params.estimated_num_eps = (size_t)c->size;
    st = ucp_init(&params, config, &c->context);
    ucp_config_release(config);
    if (st != UCS_OK) {
        c->context = NULL;
        return GCOLL_UCX_CHECK(st, "context creation");
    }
    memset(&wparams, 0, sizeof(wparams));
    wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = gcoll_tl_ucx_thread_mode();
    st = ucp_worker_create(c->context, &wparams, &c->worker);
    if (st != UCS_OK) {
        c->worker = NULL;
        return GCOLL_UCX_CHECK(st, "worker creation");
    }
    st = ucp_worker_get_address(c->worker, &c->my_addr, &c->my_addr_len);
    if (st != UCS_OK) {
        c->my_addr = NULL;
        return GCOLL_UCX_CHECK(st, "worker address query");
    }
    if (c->my_addr_len > INT_MAX) {
        return GCOLL_ERROR(GCOLL_ERR_TRANSPORT, "ucx worker address of %zu bytes is too long",
                           c->my_addr_len);
    }
    return GCOLL_SUCCESS;
}

/* Every rank learns whether all succeeded, so that all continue or all stop
 * (a rank that stopped alone would leave the others in a collective). */
static gcoll_status_t gcoll_tl_ucx_agree(MPI_Comm comm, gcoll_status_t status)
{
    int ok = status == GCOLL_SUCCESS, all_ok = 0;

    if (MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS) {
        return GCOLL_ERROR(GCOLL_ERR_TRANSPORT, "ucx setup could not reach the other ranks");
    }
    if (all_ok || status != GCOLL_SUCCESS) {
        return status;
    }
    return GCOLL_ERROR(GCOLL_ERR_TRANSPORT, "ucx could not start on another rank");
}

/* Sizes first, then the addresses themselves. */
static gcoll_status_t gcoll_tl_ucx_exchange(gcoll_tl_ucx_ctx_t *c)
{
    int len = (int)c->my_addr_len, r, rc;
    size_t total = 0;

    rc = MPI_Allgather(&len, 1, MPI_INT, c->addr_len, 1, MPI_INT, c->comm);
    if (rc != MPI_SUCCESS) {
        return GCOLL_ERROR(GCOLL_ERR_TRANSPORT, "exchanging ucx address sizes failed");
    }
    for (r = 0; r < c->size; r++) {
        c->addr_off[r] = (int)total;
        total += (size_t)c->addr_len[r];
    }
    c->addrs = total <= INT_MAX ? gcoll_malloc(total) : NULL;
    GCOLL_TRY(gcoll_tl_ucx_agree(c->comm, c->addrs != NULL ? GCOLL_SUCCESS
                                 : GCOLL_ERROR(GCOLL_ERR_NO_MEMORY,
                                               "cannot hold %zu bytes of ucx addresses", total)));
    rc = MPI_Allgatherv(c->my_addr, len, MPI_BYTE, c->addrs, c->addr_len, c->addr_off, MPI_BYTE,
                        c->comm);
    if (rc != MPI_SUCCESS) {
        return GCOLL_ERROR(GCOLL_ERR_TRANSPORT, "exchanging ucx worker addresses failed");
    }
    return GCOLL_SUCCESS;
}

static void gcoll_tl_ucx_describe_init(gcoll_tl_ucx_ctx_t *c)
{
    const char *tls = getenv("UCX_TLS");

    snprintf(c->desc, sizeof(c->desc), "ucx %s (UCX_TLS=%.80s)", ucp_get_version_string(),
             tls != NULL ? tls : "all");
}

/* Releases whatever exists; endpoints must be closed already. */
static void gcoll_tl_ucx_free(gcoll_tl_ucx_ctx_t *c)
{
    if (c->my_addr != NULL) {
        ucp_worker_release_address(c->worker, c->my_addr);
    }
    if (c->worker != NULL) {
        ucp_worker_destroy(c->worker);
    }
    if (c->context != NULL) {
        ucp_cleanup(c->context);
    }
    free(c->eps);
    free(c->addrs);
    free(c->addr_off);
    free(c->addr_len);
    free(c);
}

static gcoll_status_t gcoll_tl_ucx_init(struct gcoll_comm *comm, void **ctx)
{
    gcoll_tl_ucx_ctx_t *c = gcoll_calloc(1, sizeof(*c));
    gcoll_status_t status;

    if (c == NULL) {   /* the others still wait for this rank's vote */
        return gcoll_tl_ucx_agree(comm->mpi_comm,
                                  GCOLL_ERROR(GCOLL_ERR_NO_MEMORY,
                                              "cannot allocate the ucx transport context"));
    }
    c->comm = comm->mpi_comm;
    c->rank = comm->rank;
    c->size = comm->size;
    status  = gcoll_tl_ucx_agree(c->comm, gcoll_tl_ucx_open(c));
    if (status == GCOLL_SUCCESS) {
        status = gcoll_tl_ucx_exchange(c);
    }
    if (status != GCOLL_SUCCESS) {
        gcoll_tl_ucx_free(c);
        return status;
    }
    ucp_worker_release_address(c->worker, c->my_addr);
    c->my_addr = NULL;
    gcoll_tl_ucx_describe_init(c);
    gcoll_info("transport: %s, endpoints created on first use", c->desc);
    *ctx = c;
    return GCOLL_SUCCESS;
}

/* ------------------------------------------------------------- teardown -- */

/* Progress the worker; after many idle rounds give the core away, so that
 * oversubscribed peers get to run. */
static void gcoll_tl_ucx_progress_polite(gcoll_tl_ucx_ctx_t *c, unsigned *idle)
{
    if (ucp_worker_progress(c->worker) != 0) {
        *idle = 0;
    } else if (++*idle > 64) {
        sched_yield();
    }
}

/* Start a flush-mode close of every endpoint; pending closes go to reqs. */
static size_t gcoll_tl_ucx_close_start(gcoll_tl_ucx_ctx_t *c, void **reqs)
{
    ucp_request_param_t param;
    ucs_status_ptr_t sp;
    size_t n = 0;
    int r;

    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags        = 0;   /* flush, not force: see the file comment */
    for (r = 0; r < c->size; r++) {
        if (c->eps[r] == NULL) {
            continue;
        }
        sp = ucp_ep_close_nbx(c->eps[r], &param);
        c->eps[r] = NULL;
        if (UCS_PTR_IS_PTR(sp)) {
            reqs[n++] = sp;
        } else if (UCS_PTR_STATUS(sp) != UCS_OK) {
            gcoll_warn("ucx: closing the endpoint to rank %d failed: %s", r,
                       ucs_status_string(UCS_PTR_STATUS(sp)));
        }
    }
    return n;
}

/* Wait for the closes to finish; bounded only after a cancel, when a flush
 * may wait for a send that no peer will ever receive. */
static void gcoll_tl_ucx_close_wait(gcoll_tl_ucx_ctx_t *c, void **reqs, size_t n)
{
    double deadline = gcoll_clock_now() + GCOLL_TL_UCX_CLOSE_GRACE_S;
    unsigned idle = 0;
    size_t i;

    while (n > 0) {
        gcoll_tl_ucx_progress_polite(c, &idle);
        for (i = 0; i < n;) {
            if (ucp_request_check_status(reqs[i]) != UCS_INPROGRESS) {
                ucp_request_free(reqs[i]);
                reqs[i] = reqs[--n];
            } else {
                i++;
            }
        }
        if (n > 0 && c->cancelled && gcoll_clock_now() > deadline) {
            gcoll_warn("ucx: %zu endpoint(s) did not close after a cancelled operation", n);
            while (n > 0) {
                ucp_request_free(reqs[--n]);
            }
        }
    }
}

static void gcoll_tl_ucx_fini(void *ctx)
{
    gcoll_tl_ucx_ctx_t *c = ctx;
    void **reqs;
    MPI_Request barrier;
    unsigned idle = 0;
    int done = 0;

    reqs = gcoll_malloc((size_t)c->size * sizeof(*reqs));
    if (reqs != NULL) {
        gcoll_tl_ucx_close_wait(c, reqs, gcoll_tl_ucx_close_start(c, reqs));
        free(reqs);
    } else {
        gcoll_warn("ucx: no memory to close endpoints; the worker will release them");
    }
    /* Keep serving peers whose closes still need us until all are done.
     * Without the barrier (it failed: its request is undefined) the worker
     * is released at once; peers still closing see their endpoint fail. */
    if (MPI_Ibarrier(c->comm, &barrier) != MPI_SUCCESS) {
        gcoll_warn("ucx: MPI_Ibarrier at shutdown failed; not waiting for the peers' closes");
        done = 1;
    }
    while (!done) {
        gcoll_tl_ucx_progress_polite(c, &idle);
        if (MPI_Test(&barrier, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
            gcoll_warn("ucx: MPI_Test of the shutdown barrier failed; not waiting further");
            done = 1;
        }
    }
    gcoll_tl_ucx_free(c);
}

const gcoll_tl_ops_t gcoll_tl_ucx = {
    .name     = "ucx",
    .init     = gcoll_tl_ucx_init,
    .fini     = gcoll_tl_ucx_fini,
    .isend    = gcoll_tl_ucx_isend,
    .irecv    = gcoll_tl_ucx_irecv,
    .progress = gcoll_tl_ucx_progress,
    .test     = gcoll_tl_ucx_test,
    .cancel   = gcoll_tl_ucx_cancel,
    .describe = gcoll_tl_ucx_describe,
};

#endif /* HAVE_UCX */
