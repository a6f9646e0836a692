/* SPDX-License-Identifier: BSD-3-Clause */
/* The host executor: one request's schedule as a state machine (schedule.h
 * gives the round semantics).  gcoll_exec_progress() runs whatever can run
 * now and returns without waiting: it posts a round's transport operations,
 * runs its early NODE steps while they fly, tests them, then runs the
 * round's local steps; a NODE step (a shared-memory collective) runs phase
 * by phase as the node's ranks arrive.  The progress engine (engine.c)
 * calls it for every outstanding request. */
#ifndef GCOLL_EXECUTOR_H
#define GCOLL_EXECUTOR_H

#include "gcoll.h"
#include "core/request.h"

/* Reset r's state for a new start: next tag of its communicator, round 0.
 * The communicator's tag sequence moves on every rank alike. */
void gcoll_exec_start(struct gcoll_request *r);

/* Advance r.  On success *done says whether it finished and *advanced
 * whether anything moved.  On an error every transport operation r had
 * posted has been cancelled (nothing can touch its buffers any more) and
 * r is finished. */
/* Abandon r where it stands: cancel its open transport operations (none
 * can write into its buffers afterwards) and break the node's step
 * protocol if r was inside a NODE step.  r must then be completed. */
void gcoll_exec_abort(struct gcoll_request *r);

gcoll_status_t gcoll_exec_progress(struct gcoll_request *r, int *done, int *advanced);

/* The direct path of a blocking call (coll.c, run_host): whether r's
 * schedule is one NODE step and nothing else; and that step started and
 * spun on by the caller, outside the engine's queue (as gcoll_exec_start
 * plus a first gcoll_exec_progress would).  *done = 1 when it finished
 * (or failed: r abandoned, as gcoll_exec_progress leaves it); else r is
 * left for the engine, which continues the step where it stands. */
int            gcoll_exec_lone_node(const struct gcoll_request *r);
gcoll_status_t gcoll_exec_direct(struct gcoll_request *r, int *done);

/* Shared segment r waits on with no transport operation open, or NULL:
 * a waiter with nothing else to do may sleep on it. */
gcoll_shm_t *gcoll_exec_parkable(const struct gcoll_request *r);

/* Release what r's state allocated (the transport slots). */
void gcoll_exec_fini(struct gcoll_request *r);

#endif
