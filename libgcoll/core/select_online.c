/* SPDX-License-Identifier: BSD-3-Clause */
/* Rivals tried as the job runs (select_online.h says what and why).
 *
 * One state per communicator, collective and size class (2^(k-1), 2^k]:
 *
 *   steady    the current choice runs; every blocking call counts, and at
 *             `next` calls a try starts
 *   trying    each candidate in turn runs TRY_WARM untimed calls (its
 *             first after another algorithm finds its buffers and the
 *             segment's places cold) and TRY_TIMED timed ones, in
 *             TRY_PASSES passes over the candidates (a machine whose speed
 *             drifts during the try slows them alike); after the last, the
 *             ranks agree on the costs (per candidate the largest of the
 *             ranks' medians), and the fastest becomes the choice if it
 *             beats the current one by SWITCH_MARGIN
 *
 * Tries come at call FIRST_TRY, then GAP_FIRST calls later, the gap
 * doubling up to GAP_MAX: a try of three rivals that are 25% slower costs
 * about 7.5 calls' time, under 1.5% of the calls between tries from the
 * third, and a placement or machine state that changes is still found
 * within GAP_MAX calls. */
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "base/alloc.h"
#include "base/log.h"
#include "base/status.h"
#include "core/engine.h"
#include "core/select_online.h"

#define SIZE_CLASSES  64
#define FIRST_TRY     8
#define TRY_PASSES    2      /* over the candidates: a drift in the machine's speed */
#define TRY_WARM      1      /* per candidate and pass */
#define TRY_TIMED     4      /*   "                      */
#define SAMPLES       (TRY_PASSES * TRY_TIMED)
#define GAP_FIRST     256
#define GAP_MAX       16384
#define SWITCH_MARGIN 0.97   /* a rival's cost under this x the current one's */
#define NCAND         (1 + GCOLL_TUNE_RIVALS)

struct gcoll_select_online {
    const gcoll_tune_row_t *row;     /* NULL: no state */
    const gcoll_algo_t     *cand[NCAND];
    int                     n, cur;
    int                     trying;  /* the candidate being timed, -1 between tries */
    int                     pass;    /* of the try over the candidates */
    int                     k;       /* the candidate's calls so far in this pass */
    uint64_t                calls, next, gap;
    double                  t[NCAND][SAMPLES];
    double                  cost[NCAND];   /* agreed at the last try */
    int                     tries, switches;
};

/* k with 2^(k-1) < bytes <= 2^k (0 for 0 and 1 byte), capped at 63. */
static int size_class(size_t bytes)
{
    if (bytes <= 1) return 0;
    int k = 64 - __builtin_clzll((unsigned long long)(bytes - 1));
    return k < SIZE_CLASSES ? k : SIZE_CLASSES - 1;
}

static gcoll_select_online_t *state_of(gcoll_comm_t comm, gcoll_coll_t coll, size_t bytes)
{
    return comm->online[coll] ? &comm->online[coll][size_class(bytes)] : NULL;
}

/* The decisions of coll may change: kept schedules and the last decision
 * are rebuilt (every rank at the same call). */
static void invalidate(gcoll_comm_t comm, gcoll_coll_t coll)
{
    comm->select_epoch++;
    comm->last_select[coll].bytes = SIZE_MAX;
}

static void state_init(gcoll_select_online_t *o, const gcoll_tune_row_t *row)
{
    memset(o, 0, sizeof(*o));
    o->row = row;
    o->cand[o->n++] = row->algo;
    for (int i = 0; i < row->nrivals; i++) o->cand[o->n++] = row->rival[i];
    o->trying = -1;
    o->next = FIRST_TRY;
    o->gap = GAP_FIRST;
}

const gcoll_algo_t *gcoll_select_online_algo(gcoll_comm_t comm, const gcoll_tune_row_t *row,
                                             gcoll_coll_t coll, size_t bytes)
{
    if (!comm->cfg.try_rivals || !row->nrivals) return row->algo;
    if (!comm->online[coll] &&
        !(comm->online[coll] = gcoll_calloc(SIZE_CLASSES, sizeof(gcoll_select_online_t))))
        return row->algo;   /* no memory for it: the row's algorithm, as without try= */
    gcoll_select_online_t *o = state_of(comm, coll, bytes);
    if (!o->row) state_init(o, row);
    if (o->row != row) return row->algo;   /* another row shares the class: not tried */
    return o->cand[o->trying >= 0 ? o->trying : o->cur];
}

gcoll_select_online_t *gcoll_select_online_of(gcoll_comm_t comm, gcoll_coll_t coll, size_t bytes,
                                              int *timed)
{
    gcoll_select_online_t *o = state_of(comm, coll, bytes);
    *timed = 0;
    if (!o || !o->row || comm->forced[coll]) return NULL;
    *timed = o->trying >= 0 && o->k >= TRY_WARM;
    return o;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The end of a try: the costs agreed, the choice made (collective). */
static void decide(gcoll_comm_t comm, gcoll_select_online_t *o)
{
    double mine[NCAND], all[NCAND];
    for (int i = 0; i < o->n; i++) {
        qsort(o->t[i], SAMPLES, sizeof(double), cmp_double);
        mine[i] = 0.5 * (o->t[i][SAMPLES / 2 - 1] + o->t[i][SAMPLES / 2]);
    }
    o->tries++;
    if (PMPI_Allreduce(mine, all, o->n, MPI_DOUBLE, MPI_MAX, comm->mpi_comm) != MPI_SUCCESS) {
        gcoll_warn("select: agreeing on the tried algorithms' costs failed; keeping %s",
                   o->cand[o->cur]->name);
        return;
    }
    int best = o->cur;
    for (int i = 0; i < o->n; i++)
        if (all[i] < all[best] * (best == o->cur ? SWITCH_MARGIN : 1.0)) best = i;
    memcpy(o->cost, all, sizeof(all));
    if (best != o->cur) {
        gcoll_info("select %s %s: %s (%.2f us) replaces %s (%.2f us), timed on this job's calls",
                   gcoll_coll_name(o->row->coll), o->row->src, o->cand[best]->name,
                   all[best] * 1e6, o->cand[o->cur]->name, all[o->cur] * 1e6);
        o->cur = best;
        o->switches++;
    }
}

void gcoll_select_online_step(gcoll_comm_t comm, gcoll_select_online_t *o, double secs)
{
    if (o->trying < 0) {
        if (++o->calls < o->next) return;
        o->trying = 0, o->pass = 0, o->k = 0;
    } else {
        if (o->k >= TRY_WARM) o->t[o->trying][o->pass * TRY_TIMED + o->k - TRY_WARM] = secs;
        if (++o->k < TRY_WARM + TRY_TIMED) return;
        o->k = 0;
        if (++o->trying == o->n && ++o->pass < TRY_PASSES) o->trying = 0;
        if (o->trying == o->n) {
            decide(comm, o);
            o->trying = -1;
            o->calls = 0;
            o->next = o->gap;
            if (o->gap < GAP_MAX) o->gap *= 2;
        }
    }
    gcoll_engine_lock();
    invalidate(comm, o->row->coll);
    gcoll_engine_unlock();
}

void gcoll_select_online_free(gcoll_comm_t comm)
{
    for (int c = 0; c < GCOLL_COLL_COUNT; c++) {
        free(comm->online[c]);
        comm->online[c] = NULL;
    }
}

gcoll_status_t gcoll_select_online_report(gcoll_comm_t comm, gcoll_coll_t coll, size_t bytes,
                                          gcoll_select_online_report_t *out)
{
    const gcoll_select_online_t *o = state_of(comm, coll, bytes);
    if (!o || !o->row)
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "%s of %zu bytes: no rivals tried",
                           gcoll_coll_name(coll), bytes);
    memset(out, 0, sizeof(*out));
    out->n = o->n, out->current = o->cur, out->tries = o->tries, out->switches = o->switches;
    for (int i = 0; i < o->n; i++) out->cand[i] = o->cand[i], out->cost[i] = o->cost[i];
    return GCOLL_SUCCESS;
}
