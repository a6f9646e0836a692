/* SPDX-License-Identifier: BSD-3-Clause */
/* MPI point-to-point transport: the portable fallback.  Every operation is an
 * MPI_Isend/MPI_Irecv on the communicator's private duplicate, so libgcoll's
 * messages never match the application's.
 *
 * Progress: MPI progresses inside MPI_Test, and the executor tests every
 * outstanding request while it waits, so progress() has nothing to add.
 *
 * Sizes: MPI counts are int.  A message above GCOLL_TL_MPI_MAX_COUNT bytes is
 * described by one derived datatype (n blocks of GCOLL_TL_MPI_BLOCK bytes and
 * a byte remainder) rather than split into several messages: it stays one
 * request, one match, and its type signature is still `bytes` MPI_BYTEs, so
 * the two sides match whatever datatype each side built. */
#ifdef HAVE_CONFIG_H
#include "gcoll_build.h"  /* configure results (HAVE_UCX, ...) */
#endif

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/alloc.h"
#include "core/comm.h"
#include "base/log.h"
#include "base/status.h"
#include "transport/transport.h"

#define GCOLL_TL_MPI_MAX_COUNT ((size_t)INT_MAX)
#define GCOLL_TL_MPI_BLOCK     ((size_t)1 << 30)

typedef struct {
    MPI_Comm     comm;
    int          size;
    int          tag_mask;  /* largest 2^k-1 <= MPI_TAG_UB: same on every rank */
    MPI_Request *orphans;   /* abandoned sends, still pending (see cancel) */
    int          norphans, orphans_cap;
    char         desc[96];
} gcoll_tl_mpi_ctx_t;

/* What a request keeps in req->h. */
typedef struct {
    MPI_Request mreq;
    size_t      bytes;      /* expected size of a receive, for a clear mismatch error */
    int         is_recv;
} gcoll_tl_mpi_req_t;

_Static_assert(sizeof(gcoll_tl_mpi_req_t) <= sizeof(((gcoll_tl_req_t *)0)->h),
               "MPI request state must fit in gcoll_tl_req_t.h");

static inline gcoll_tl_mpi_req_t *gcoll_tl_mpi_req(gcoll_tl_req_t *req)
{
    return (gcoll_tl_mpi_req_t *)(void *)&req->h;
}

static gcoll_status_t gcoll_tl_mpi_error(int rc, const char *what, int peer)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;

    if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) {
        snprintf(msg, sizeof(msg), "MPI error %d", rc);
    }
    return GCOLL_ERROR(GCOLL_ERR_TRANSPORT, "mpi %s with rank %d failed: %s", what, peer, msg);
}

static int gcoll_tl_mpi_tag_mask(MPI_Comm comm)
{
    int *ub = NULL, flag = 0, mask = 0x7fff;   /* MPI guarantees MPI_TAG_UB >= 32767 */

    if (MPI_Comm_get_attr(comm, MPI_TAG_UB, &ub, &flag) == MPI_SUCCESS && flag && ub) {
        while (mask <= INT_MAX / 2 && ((mask << 1) | 1) <= *ub) {
            mask = (mask << 1) | 1;
        }
    }
    return mask;
}

static gcoll_status_t gcoll_tl_mpi_init(struct gcoll_comm *comm, void **ctx)
{
    gcoll_tl_mpi_ctx_t *c = gcoll_calloc(1, sizeof(*c));
    int version, subversion;

    if (c == NULL) {
        return GCOLL_ERROR(GCOLL_ERR_NO_MEMORY, "cannot allocate the mpi transport context");
    }
    c->comm     = comm->mpi_comm;
    c->size     = comm->size;
    c->tag_mask = gcoll_tl_mpi_tag_mask(c->comm);
    MPI_Get_version(&version, &subversion);
    snprintf(c->desc, sizeof(c->desc), "mpi %d.%d point-to-point (tag mask 0x%x)", version,
             subversion, c->tag_mask);
    gcoll_info("transport: %s", c->desc);
    *ctx = c;
    return GCOLL_SUCCESS;
}

/* Test the abandoned sends once; those that completed leave the list. */
static void gcoll_tl_mpi_reap(gcoll_tl_mpi_ctx_t *c)
{
    int keep = 0;
    for (int i = 0; i < c->norphans; i++) {
        int done = 0;
        MPI_Test(&c->orphans[i], &done, MPI_STATUS_IGNORE);
        if (!done) c->orphans[keep++] = c->orphans[i];
    }
    c->norphans = keep;
}

static void gcoll_tl_mpi_fini(void *ctx)
{
    gcoll_tl_mpi_ctx_t *c = ctx;
    /* Nothing to disconnect (the communicator owns mpi_comm); sends a peer
     * never received stay with MPI, which then keeps the communicator. */
    gcoll_tl_mpi_reap(c);
    if (c->norphans)
        gcoll_warn("mpi: %d abandoned send(s) never completed; MPI keeps them and the "
                   "communicator", c->norphans);
    for (int i = 0; i < c->norphans; i++) MPI_Request_free(&c->orphans[i]);
    free(c->orphans);
    free(c);
}

/* Datatype and count describing `bytes` contiguous bytes with an int count.
 * *dtype is MPI_BYTE, or a committed type the caller frees after posting
 * (freeing a datatype does not affect operations already posted with it). */
static int gcoll_tl_mpi_type(size_t bytes, MPI_Datatype *dtype, int *count)
{
    size_t nblocks = bytes / GCOLL_TL_MPI_BLOCK;
    int blens[2] = { (int)nblocks, (int)(bytes % GCOLL_TL_MPI_BLOCK) };
    MPI_Aint displs[2] = { 0, (MPI_Aint)(nblocks * GCOLL_TL_MPI_BLOCK) };
    MPI_Datatype types[2] = { MPI_DATATYPE_NULL, MPI_BYTE };
    int rc;

    *dtype = MPI_BYTE;
    *count = (int)bytes;
    if (bytes <= GCOLL_TL_MPI_MAX_COUNT) {
        return MPI_SUCCESS;
    }
    rc = MPI_Type_contiguous((int)GCOLL_TL_MPI_BLOCK, MPI_BYTE, &types[0]);
    if (rc == MPI_SUCCESS) {
        rc = MPI_Type_create_struct(2, blens, displs, types, dtype);
        MPI_Type_free(&types[0]);
    }
    if (rc == MPI_SUCCESS) {
        rc = MPI_Type_commit(dtype);
    }
    *count = 1;
    return rc;
}

static gcoll_status_t gcoll_tl_mpi_post(gcoll_tl_mpi_ctx_t *c, int peer, uint32_t tag,
                                        void *buf, size_t bytes, int is_recv,
                                        gcoll_tl_req_t *req)
{
    gcoll_tl_mpi_req_t *m = gcoll_tl_mpi_req(req);
    int mtag = (int)(tag & (uint32_t)c->tag_mask);
    MPI_Datatype dtype;
    int count, rc;

    req->done    = 0;
    req->status  = GCOLL_SUCCESS;
    req->peer    = peer;
    m->bytes     = bytes;
    m->is_recv   = is_recv;
    m->mreq      = MPI_REQUEST_NULL;
    if (GCOLL_UNLIKELY(peer < 0 || peer >= c->size)) {
        req->done   = 1;
        req->status = GCOLL_ERROR(GCOLL_ERR_INTERNAL, "mpi transport asked for rank %d of %d",
                                  peer, c->size);
        return req->status;
    }
    rc = gcoll_tl_mpi_type(bytes, &dtype, &count);
    if (rc == MPI_SUCCESS) {
        rc = is_recv ? MPI_Irecv(buf, count, dtype, peer, mtag, c->comm, &m->mreq)
                     : MPI_Isend(buf, count, dtype, peer, mtag, c->comm, &m->mreq);
    }
    if (dtype != MPI_BYTE) {
        MPI_Type_free(&dtype);
    }
    if (rc != MPI_SUCCESS) {
        req->done   = 1;
        req->status = gcoll_tl_mpi_error(rc, is_recv ? "receive" : "send", peer);
        return req->status;
    }
    return GCOLL_SUCCESS;
}

static gcoll_status_t gcoll_tl_mpi_isend(void *ctx, int peer, uint32_t tag, const void *buf,
                                         size_t bytes, gcoll_tl_req_t *req)
{
    /* MPI-3 made the send buffer const; the cast only feeds the shared helper. */
    return gcoll_tl_mpi_post(ctx, peer, tag, (void *)buf, bytes, 0, req);
}

static gcoll_status_t gcoll_tl_mpi_irecv(void *ctx, int peer, uint32_t tag, void *buf,
                                         size_t bytes, gcoll_tl_req_t *req)
{
    return gcoll_tl_mpi_post(ctx, peer, tag, buf, bytes, 1, req);
}

static gcoll_status_t gcoll_tl_mpi_progress(void *ctx)
{
    gcoll_tl_mpi_ctx_t *c = ctx;
    if (c->norphans) gcoll_tl_mpi_reap(c);
    return GCOLL_SUCCESS;
}

/* A receive must get exactly the bytes it asked for: a shorter message means
 * the two ranks built different schedules.  A longer one is truncation, which
 * MPI_Test reports through its return code under MPI_ERRORS_RETURN, except
 * Open MPI's path to self that only sets MPI_ERROR (preset to MPI_SUCCESS by
 * test(), since MPI_Test need not write it). */
static gcoll_status_t gcoll_tl_mpi_check_count(gcoll_tl_req_t *req, MPI_Status *st)
{
    gcoll_tl_mpi_req_t *m = gcoll_tl_mpi_req(req);
    int got = 0;

    if (!m->is_recv) {
        return GCOLL_SUCCESS;
    }
    if (st->MPI_ERROR != MPI_SUCCESS) {
        return gcoll_tl_mpi_error(st->MPI_ERROR, "receive", req->peer);
    }
    if (m->bytes > GCOLL_TL_MPI_MAX_COUNT) {
        /* a large message travels as a derived type (freed once posted):
         * count its bytes, which MPI_Get_elements_x gives as the number of
         * MPI_BYTE elements received whatever type the receive used */
        MPI_Count n = 0;
        int rc = MPI_Get_elements_x(st, MPI_BYTE, &n);
        if (rc != MPI_SUCCESS) return gcoll_tl_mpi_error(rc, "receive size query", req->peer);
        if (n == MPI_UNDEFINED || n < 0 || (size_t)n != m->bytes) {
            return GCOLL_ERROR(GCOLL_ERR_TRANSPORT,
                               "mpi receive from rank %d got %lld bytes where %zu were expected",
                               req->peer, (long long)n, m->bytes);
        }
        return GCOLL_SUCCESS;
    }
    int rc = MPI_Get_count(st, MPI_BYTE, &got);
    if (rc != MPI_SUCCESS) return gcoll_tl_mpi_error(rc, "receive size query", req->peer);
    if (got == MPI_UNDEFINED || got < 0 || (size_t)got != m->bytes) {
        return GCOLL_ERROR(GCOLL_ERR_TRANSPORT,
                           "mpi receive from rank %d got %d bytes where %zu were expected",
                           req->peer, got, m->bytes);
    }
    return GCOLL_SUCCESS;
}

static gcoll_status_t gcoll_tl_mpi_test(void *ctx, gcoll_tl_req_t *req)
{
    gcoll_tl_mpi_req_t *m = gcoll_tl_mpi_req(req);
    MPI_Status st;
    int flag = 0, rc;

    (void)ctx;
    if (req->done) {
        return req->status;
    }
    st.MPI_ERROR = MPI_SUCCESS;
    rc = MPI_Test(&m->mreq, &flag, &st);
    if (rc != MPI_SUCCESS) {
        /* Only with MPI_ERRORS_RETURN on the communicator (e.g. truncation). */
        req->status = gcoll_tl_mpi_error(rc, m->is_recv ? "receive" : "send", req->peer);
        req->done   = 1;
        return req->status;
    }
    if (flag) {
        req->status = gcoll_tl_mpi_check_count(req, &st);
        req->done   = 1;
    }
    return req->status;
}

static int gcoll_tl_mpi_grow_orphans(gcoll_tl_mpi_ctx_t *c)
{
    int cap = c->orphans_cap ? 2 * c->orphans_cap : 16;
    MPI_Request *o = gcoll_realloc(c->orphans, (size_t)cap * sizeof(*o));
    if (o == NULL) {
        return 0;
    }
    c->orphans = o;
    c->orphans_cap = cap;
    return 1;
}

/* Abandon a request so that nothing touches req or its buffer afterwards.
 * A receive is cancelled and waited for (waiting on a cancelled request
 * completes locally; a receive already matched completes with its data).
 * Open MPI 4.1 cannot cancel sends (MPI_Cancel returns and does nothing,
 * and MPI-4 deprecates it): the send stays pending on an orphan list that
 * progress and fini test, so its buffer is read by MPI alone and its
 * request is not leaked silently. */
static void gcoll_tl_mpi_cancel(void *ctx, gcoll_tl_req_t *req)
{
    gcoll_tl_mpi_ctx_t *c = ctx;
    gcoll_tl_mpi_req_t *m = gcoll_tl_mpi_req(req);

    if (req->done || m->mreq == MPI_REQUEST_NULL) {
        return;
    }
    if (m->is_recv) {
        MPI_Cancel(&m->mreq);
        MPI_Wait(&m->mreq, MPI_STATUS_IGNORE);
    } else if (c->norphans < c->orphans_cap || gcoll_tl_mpi_grow_orphans(c)) {
        c->orphans[c->norphans++] = m->mreq;
        m->mreq = MPI_REQUEST_NULL;
    } else {
        MPI_Request_free(&m->mreq);   /* no memory to keep it: MPI completes it */
    }
    req->done   = 1;
    req->status = GCOLL_ERR_TIMEOUT;
}

static const char *gcoll_tl_mpi_describe(void *ctx)
{
    return ((gcoll_tl_mpi_ctx_t *)ctx)->desc;
}

const gcoll_tl_ops_t gcoll_tl_mpi = {
    .name     = "mpi",
    .init     = gcoll_tl_mpi_init,
    .fini     = gcoll_tl_mpi_fini,
    .isend    = gcoll_tl_mpi_isend,
    .irecv    = gcoll_tl_mpi_irecv,
    .progress = gcoll_tl_mpi_progress,
    .test     = gcoll_tl_mpi_test,
    .cancel   = gcoll_tl_mpi_cancel,
    .describe = gcoll_tl_mpi_describe,
};
