/* SPDX-License-Identifier: BSD-3-Clause */
/* The progress engine: every outstanding request of the process, in posting
 * order, advanced by one progress function (gcoll_engine_pass) that callers
 * run while they test or wait, and that the background thread runs while
 * the application computes (GCOLL_PROGRESS=thread).
 *
 * Locking: one mutex guards the request list, every request's state and
 * every transport context.  It is taken only where locking is needed (a
 * progress thread runs, or MPI was initialised with MPI_THREAD_MULTIPLE); a
 * single-threaded caller-mode process takes no lock at all.  Nothing here
 * calls MPI: the engine never runs inside MPI's progress loop. */
#ifndef GCOLL_ENGINE_H
#define GCOLL_ENGINE_H

#include "gcoll.h"
#include "core/request.h"

struct gcoll_comm;

/* Called by every communicator create (after its transport is up) and
 * destroy (before the transport goes): decides locking and the progress
 * mode, starts the thread with the first communicator that wants it, and
 * tells it which transports it may wait on. */
gcoll_status_t gcoll_engine_comm_add(struct gcoll_comm *comm);
void           gcoll_engine_comm_remove(struct gcoll_comm *comm);
/* Before a communicator's segment is unmapped: wait until the progress
 * thread no longer sleeps on it. */
void           gcoll_engine_shm_release(gcoll_shm_t *shm);

/* Take and give back the engine lock (no-ops while locking is off). */
void gcoll_engine_lock(void);
void gcoll_engine_unlock(void);

/* Under the lock: append r to the outstanding list (it was started with
 * gcoll_exec_start).  The thread is woken unless the caller is about to
 * wait for r itself. */
void gcoll_engine_enqueue(struct gcoll_request *r, int caller_waits);

/* Wait for r (under the lock; may drop it while yielding or sleeping).
 * Returns r's outcome; r is no longer outstanding afterwards. */
gcoll_status_t gcoll_engine_wait(struct gcoll_request *r);

/* One pass over every outstanding request (under the lock).  Returns
 * whether anything moved; requests that finished are marked done. */
int gcoll_engine_pass(int from_thread);

/* Wait (under the lock) until comm has nothing outstanding: the eager
 * paths (device buffers, compression) run only then. */
gcoll_status_t gcoll_engine_drain(struct gcoll_comm *comm);

/* Under the lock: post task request r (r->task set) on r->comm. */
void gcoll_engine_post_task(struct gcoll_request *r);

/* Whether no earlier outstanding task shares r's communicator: tasks of one
 * communicator run one at a time, in posting order, so the children they
 * post on shared sub-communicators come in the same order on every rank. */
int gcoll_engine_task_turn(const struct gcoll_request *r);

/* Under the lock, from task r in the progress thread: what is left of r is
 * the caller's to run (in its gcoll_test/gcoll_wait), not the thread's: a
 * copy into device memory, say, which needs the caller's CUDA device. */
void gcoll_engine_leave_to_caller(struct gcoll_request *r);

/* Mode in force, for gcoll_info and logs: "caller" or "thread". */
const char *gcoll_engine_mode(void);

/* 1 on the progress thread (which may not call MPI). */
int gcoll_engine_in_thread(void);

/* Under the lock: 1 when no request is outstanding (none queued, so a
 * blocking call may take its first steps itself: coll.c, run_host). */
int gcoll_engine_idle(void);

/* Under the lock: complete every outstanding schedule request of comm with
 * st, its sentence saying the communicator was revoked and why (failure.c). */
void gcoll_engine_abort_comm(struct gcoll_comm *comm, gcoll_status_t st, const char *why);

#endif
