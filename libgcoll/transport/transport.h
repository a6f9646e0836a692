/* SPDX-License-Identifier: BSD-3-Clause */
/* Point-to-point transports the executor drives: UCX (default where built)
 * and MPI point-to-point (portable fallback).  A transport is a table of
 * operations chosen at gcoll_comm_create; everything is nonblocking and the
 * executor tests its operations from the progress engine (core/engine.h),
 * which serialises every call into one context.
 *
 * Matching: a message is identified by (source rank, tag) within the
 * communicator; messages with the same source and tag match in the order they
 * were sent (MPI's non-overtaking rule; UCX tag matching is ordered per
 * endpoint).  The executor uses one tag per collective call.
 *
 * Tags: UCX matches all 32 bits; MPI matches the low bits that fit under
 * MPI_TAG_UB (at least 15 bits, 31 with Open MPI).  So two tags outstanding at
 * the same time must differ in their low 15 bits.
 *
 * Sizes: any size_t.  A receive must be posted with exactly the size sent; a
 * different size completes the receive with GCOLL_ERR_TRANSPORT.
 *
 * Requests: a gcoll_tl_req_t must stay in place (not be moved or reused)
 * from isend/irecv until it is done or cancelled; the transports allocate
 * nothing per operation beyond what the underlying library pools. */
#ifndef GCOLL_TRANSPORT_H
#define GCOLL_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>
#include "gcoll.h"

struct gcoll_comm;

/* One outstanding operation.  The transport owns h; done/status are set by
 * progress()/test() (or a completion callback). */
typedef struct gcoll_tl_req {
    volatile int   done;
    gcoll_status_t status;
    int            peer;       /* for error messages */
    union {
        void    *ptr;
        uint64_t u64[4];       /* room for an MPI_Request of any MPI */
    } h;
} gcoll_tl_req_t;

typedef struct gcoll_tl_ops {
    const char *name;   /* "ucx", "mpi" */
    /* Collective over comm->mpi_comm: create the context and connect.  Uses
     * comm->mpi_comm, rank and size, and keeps mpi_comm until fini. */
    gcoll_status_t (*init)(struct gcoll_comm *comm, void **ctx);
    /* Collective: release the context, after every request is done or
     * cancelled, and before comm->mpi_comm is freed. */
    void           (*fini)(void *ctx);
    /* Post an operation.  On an error the request is also done, with the
     * same status; otherwise the operation may already be done on return. */
    gcoll_status_t (*isend)(void *ctx, int peer, uint32_t tag, const void *buf, size_t bytes,
                            gcoll_tl_req_t *req);
    gcoll_status_t (*irecv)(void *ctx, int peer, uint32_t tag, void *buf, size_t bytes,
                            gcoll_tl_req_t *req);
    /* Make progress on everything outstanding. */
    gcoll_status_t (*progress)(void *ctx);
    /* Set req->done (and req->status) if req has completed; progresses the
     * transport when it has not.  Returns req->status (GCOLL_SUCCESS while
     * pending). */
    gcoll_status_t (*test)(void *ctx, gcoll_tl_req_t *req);
    /* Abandon an incomplete request (after a timeout).  Afterwards req is
     * done with GCOLL_ERR_TIMEOUT (no sentence set: the caller explains) and
     * the transport never touches req again; a send may still complete in
     * the background, reading its buffer.  No-op on a done request. */
    void           (*cancel)(void *ctx, gcoll_tl_req_t *req);
    /* Description for gcoll_info / INFO logs, e.g. "ucx 1.13.1 (posix,cma,tcp)". */
    const char    *(*describe)(void *ctx);
} gcoll_tl_ops_t;

extern const gcoll_tl_ops_t gcoll_tl_mpi;
#ifdef HAVE_UCX
extern const gcoll_tl_ops_t gcoll_tl_ucx;
#endif

/* Version string of the UCX library linked, or NULL without UCX. */
const char *gcoll_tl_ucx_version(void);

#endif
