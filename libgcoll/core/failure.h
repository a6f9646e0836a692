/* SPDX-License-Identifier: BSD-3-Clause */
/* Failures that one rank sees alone (docs/design.md, "Failures one rank
 * sees alone").  Two mechanisms, one for each kind of work:
 *
 *   set-up (communicator, sub-communicator, compressor create/destroy):
 *     every rank meets at gcoll_agree() before each collective step, so a
 *     rank that failed locally never skips an MPI collective the others
 *     entered; all return the same status.
 *
 *   calls (every collective after its arguments were checked): agreeing
 *     on every call would double a small allreduce's latency, so a rank
 *     that fails revokes the communicator instead, as ULFM's
 *     MPI_Comm_revoke does: it sends a notice to every other rank on a
 *     private duplicate; a rank that waits on a revoked communicator polls
 *     that notice (only while idle, at most once per millisecond), abandons
 *     the communicator's requests and returns the failing rank's status
 *     with a sentence naming it.  From then on every call on it (and on its
 *     level sub-communicators) returns that status at once; destroy still
 *     works.  Argument errors (GCOLL_ERR_INVALID_ARG from the checks) do
 *     not revoke: they are the caller's, and come before any message. */
#ifndef GCOLL_FAILURE_H
#define GCOLL_FAILURE_H

#include <mpi.h>
#include <stdint.h>
#include "gcoll.h"

struct gcoll_comm;

#define GCOLL_NOTICE_TEXT 240

/* What a notice carries: the failing rank's status, rank, call and sentence. */
typedef struct {
    int      status;
    int      rank;
    uint32_t seq;
    char     text[GCOLL_NOTICE_TEXT];
} gcoll_notice_t;

/* A communicator's failure state (in struct gcoll_comm). */
typedef struct {
    MPI_Comm       comm;        /* duplicate of mpi_comm for notices only */
    MPI_Request    recv;        /* posted from any source */
    gcoll_notice_t in, out;
    MPI_Request   *sends;       /* [size], allocated at create */
    int            to_send;     /* notices queued by the progress thread */
    double         polled;      /* when the receive was last tested */
    gcoll_status_t status;      /* GCOLL_SUCCESS until revoked */
    char           why[320];    /* "rank 1 failed call 7: ..." */
} gcoll_failure_t;

/* Collective over comm: st is this rank's outcome of a set-up step.
 * Returns st where it failed here; else the status of the lowest rank with
 * the highest failing status, with a sentence naming that rank and what
 * (e.g. "gcoll_comm_create: the node map"); else GCOLL_SUCCESS. */
gcoll_status_t gcoll_agree(MPI_Comm comm, gcoll_status_t st, const char *what);

/* Collective at create: the notice channel (a duplicate of comm->mpi_comm
 * and its posted receive).  fini: after every request of c is done. */
gcoll_status_t gcoll_failure_init(struct gcoll_comm *c);
void           gcoll_failure_fini(struct gcoll_comm *c);

/* Receive and drop every message that has arrived on comm and matches
 * nothing, then free comm.  A collective abandoned by a failure or a
 * timeout leaves its peers' messages behind; MPICH aborts the job when a
 * communicator holding unmatched messages is freed (whatever its error
 * handler), Open MPI drops them.  One probe when there are none; after a
 * failure (failed: the communicator was revoked) until none came for a
 * moment, since the peers' last messages may still be in flight. */
void gcoll_failure_comm_free(MPI_Comm *comm, int failed);

/* GCOLL_SUCCESS, or the status c was revoked with and its sentence. */
gcoll_status_t gcoll_comm_usable(struct gcoll_comm *c);

/* This rank failed a call on c with st (and the sentence in force): revoke
 * c and its levels, abandon their requests, and queue the notices.  Under
 * the engine lock; from the progress thread too (it may not call MPI: the
 * notices go out at the next gcoll_failure_poll). */
void gcoll_comm_fail(struct gcoll_comm *c, gcoll_status_t st);

/* From a caller's thread, under the engine lock: send the notices the
 * progress thread queued (nothing to do unless it did). */
void gcoll_failure_flush(void);

/* From a caller's thread, under the engine lock, while it waits for a
 * request of c: flush, and at most once per millisecond test for a notice
 * on c and its parents.  1 if one of them was revoked by it. */
int gcoll_failure_poll(struct gcoll_comm *c);

#endif
