/* SPDX-License-Identifier: BSD-3-Clause */
/* Rivals tried as the job runs.  A table row may name rivals of its
 * algorithm (try=A,B; the calibration writes them where they came within
 * GCOLL_CALIB_RIVAL_WITHIN of the winner).  Then, per communicator,
 * collective and power-of-two size class, the job's own blocking calls
 * time the row's algorithm and its rivals in turn, the ranks agree on the
 * costs (the largest of the ranks' mean times: one PMPI_Allreduce per try),
 * and the fastest runs until the next try.  Intel MPI's autotuner
 * (I_MPI_TUNING_MODE=auto) does the same with the MPI's algorithms.
 *
 * Why: where the costs depend on something a calibration cannot fix, such
 * as where the kernel places unbound ranks that outnumber the CPUs, the
 * fastest algorithm differs from launch to launch (4 ranks as 2 simulated
 * nodes on 2 CPUs, 64 KiB allreduce: rdouble 27-29 us with ranks 0 and 2
 * on one CPU, 42-44 otherwise; hier_leader 28-35 or 36-43), and no choice
 * made beforehand is within 10% of the best in every launch.
 *
 * Every rank makes the same blocking calls of a communicator in the same
 * order (MPI's rule for collectives), so the schedule of tries, counted in
 * those calls, is the same on every rank, and the one decision that uses
 * measured times is agreed: all ranks run the same algorithm in every
 * call, blocking or not.  Nonblocking calls run the current choice and are
 * neither counted nor timed (their time is the application's overlap).
 *
 * GCOLL_TRY=0 or GCOLL_ALGO turns it off; rows without try= never pay for
 * it.  Under the engine's lock, as selection is, except
 * gcoll_select_online_step (the caller's thread, after its call). */
#ifndef GCOLL_SELECT_ONLINE_H
#define GCOLL_SELECT_ONLINE_H

#include <stddef.h>
#include "core/comm.h"
#include "core/tune_table.h"

typedef struct gcoll_select_online gcoll_select_online_t;

/* States per communicator, one per (collective, size class) met with
 * rivals, in a fixed array allocated when the communicator is made: a
 * rank that failed to allocate one later would run the row's algorithm
 * while the others tried, and hang them.  Classes met after all are taken
 * keep their row's algorithm (on every rank alike). */
#define GCOLL_SELECT_ONLINE_SLOTS 16

/* At gcoll_comm_create (its outcome agreed there), and when a new table is
 * put in force (reset: every state forgotten); free at destroy. */
gcoll_status_t gcoll_select_online_init(gcoll_comm_t comm);
void gcoll_select_online_reset(gcoll_comm_t comm);
void gcoll_select_online_free(gcoll_comm_t comm);

/* The algorithm that a call of `bytes` matching row (which names rivals)
 * runs now: the candidate being tried, else the current choice.  Takes a
 * slot for the size class on first use; the row's algorithm where none is
 * left. */
const gcoll_algo_t *gcoll_select_online_algo(gcoll_comm_t comm, const gcoll_tune_row_t *row,
                                             gcoll_coll_t coll, size_t bytes);

/* The state of a blocking call's size class, or NULL where nothing is
 * tried (no state, another row's call, GCOLL_ALGO); *timed: whether the
 * call's time is wanted (a try is on). */
gcoll_select_online_t *gcoll_select_online_of(gcoll_comm_t comm, gcoll_coll_t coll, size_t bytes,
                                              int *timed);

/* After a blocking call that succeeded on this rank (and so, by the
 * failure protocol, on every rank): count it, record secs where timed, and
 * move the schedule on; the end of a try agrees on the costs (collective:
 * every rank gets here at the same call).  Outside the engine's lock. */
void gcoll_select_online_step(gcoll_comm_t comm, gcoll_select_online_t *o, double secs);

/* For tests and gcoll_info: the class's candidates (n of them, the row's
 * algorithm first), the one in use between tries, the agreed cost of each
 * in seconds per call at the last try (0 before one), the tries made and
 * their calls per sample.
 * GCOLL_ERR_INVALID_ARG where the class has no state. */
typedef struct {
    int                 n, current, tries, switches;
    int                 per;   /* calls per timed sample in the last try */
    const gcoll_algo_t *cand[1 + GCOLL_TUNE_RIVALS];
    double              cost[1 + GCOLL_TUNE_RIVALS];
} gcoll_select_online_report_t;

gcoll_status_t gcoll_select_online_report(gcoll_comm_t comm, gcoll_coll_t coll, size_t bytes,
                                          gcoll_select_online_report_t *out);

#endif
