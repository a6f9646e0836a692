/* Progress of libgcoll's transports from inside the MPI library, between
 * libgcoll calls.
 *
 * Why: with UCX a rank's requests can all be complete while a peer's are
 * not, and the peer's finish only when this rank progresses its worker
 * again (seen with UCX 1.13.1: a rendezvous sender stays incomplete after
 * its receiver completed, flushed its worker and polled it until idle; the
 * sender completes as soon as the receiver polls again later).  A rank that
 * leaves a collective and blocks in MPI_Barrier would leave its peers hung.
 * So while no libgcoll call drives a transport, the MPI library's progress
 * loop does: every blocking MPI call then also polls libgcoll's workers.
 *
 * How: Open MPI lets components add callbacks to its progress loop
 * (opal_progress_register, found with dlsym; Open MPI's own UCC component
 * uses it for the same reason).  With an MPI that has no such hook nothing is
 * registered and gcoll_bg_progress_active() says so.
 *
 * Ownership: a registered transport is driven either by its communicator's
 * caller (between gcoll_bg_progress_enter and _leave) or by the background
 * callback, never both: an atomic owner word, which the callback only
 * try-acquires, so it never waits in MPI's progress loop. */
#ifndef GCOLL_BG_PROGRESS_H
#define GCOLL_BG_PROGRESS_H

#include <stdatomic.h>

typedef struct gcoll_bg_progress {
    struct gcoll_bg_progress *next;
    atomic_int                owner;           /* 0 free, 1 caller, 2 background */
    void                    (*progress)(void *arg);
    void                     *arg;
} gcoll_bg_progress_t;

/* Start polling p->progress(p->arg) from MPI's progress loop (registers the
 * callback with the MPI library on the first entry).  p stays the caller's. */
void gcoll_bg_progress_add(gcoll_bg_progress_t *p);

/* Stop; on return the callback is not running p and never will again. */
void gcoll_bg_progress_remove(gcoll_bg_progress_t *p);

/* The caller drives the transport from here to _leave (waits out a
 * background poll in progress: one worker poll, microseconds). */
void gcoll_bg_progress_enter(gcoll_bg_progress_t *p);
void gcoll_bg_progress_leave(gcoll_bg_progress_t *p);

/* 1 if the MPI library polls registered transports (Open MPI), else 0. */
int gcoll_bg_progress_active(void);

#endif
