/* SPDX-License-Identifier: BSD-3-Clause */
/* What the public calls (coll.c) offer inside the library: the staged
 * path's layout, revoking after a failure, posting a child collective from
 * an engine task. */
#ifndef GCOLL_COLL_H
#define GCOLL_COLL_H

#include "core/request.h"

struct gcoll_comm;

/* Where the staged path (device buffers through page-locked host memory)
 * puts the host images of sendbuf (sbytes) and recvbuf (dbytes) in one
 * staging area of `need` bytes.  An image whose buffer lies wholly inside
 * the other's (the in-place forms) lies at the same place inside the
 * other's image and is not copied on its own; otherwise the images are
 * apart.  A NULL buffer, or one of 0 bytes outside the other, has none.
 * Pure, for test/unit/test_cuda_host.c. */
typedef struct {
    size_t need;
    int    has_send, has_recv;
    size_t send_off, recv_off;   /* where the images start in the area */
    int    send_in_recv;         /* the send image is inside the recv image */
    int    recv_in_send;         /* the recv image is inside the send image */
} gcoll_stage_layout_t;

void gcoll_stage_layout(const void *sendbuf, size_t sbytes, const void *recvbuf, size_t dbytes,
                        gcoll_stage_layout_t *l);

/* A call failed on this rank after its arguments were checked (st, with
 * its sentence in force): revoke comm, so that no peer waits for this rank
 * for ever (core/failure.h), and hand st back with its sentence.  Not under
 * the engine lock.  GCOLL_SUCCESS passes through. */
gcoll_status_t gcoll_coll_failed(struct gcoll_comm *comm, gcoll_status_t st);

/* Give the communicator's direct requests (coll.c, run_host) back to its
 * pool: at destroy, before the count of outstanding requests is checked. */
void gcoll_coll_direct_free(struct gcoll_comm *comm);

/* Under the engine lock, from a task: post collective k on comm (a
 * sub-communicator) as a regular request on the engine's list.  The task
 * finds it done when !child->active, takes child->status (and child->err)
 * and gives it back with gcoll_request_put.  Host buffers only; no
 * GCOLL_CHECK (that would call MPI from the progress thread). */
gcoll_status_t gcoll_coll_post_child(struct gcoll_comm *comm, const gcoll_call_t *k,
                                     struct gcoll_request **child);

#endif
