/* SPDX-License-Identifier: BSD-3-Clause */
/* Rivals tried as the job runs (select_online.h says what and why).
 *
 * One state per communicator, collective and size class (2^(k-1), 2^k]:
 *
 *   steady    the current choice runs; every blocking call counts, and at
 *             `next` calls a try starts
 *   trying    each candidate in turn runs TRY_WARM untimed calls (its
 *             first after another algorithm finds its buffers and the
 *             segment's places cold) and TRY_TIMED samples of `per` calls
 *             each, in TRY_PASSES passes over the candidates (a machine
 *             whose speed drifts during the try slows them alike; the
 *             first try runs an untimed pass before them: a transport's
 *             algorithm connects its peers on its first calls); after the
 *             last, the ranks agree on the costs (per candidate the largest
 *             of the ranks' means of its samples: a loop's time per call,
 *             descheduled calls and all), and the fastest becomes the
 *             choice if it beats the current one by SWITCH_MARGIN
 *
 * A sample is the mean of `per` calls, each timed alone (the application's
 * work between calls is not in it), so that it lasts about SAMPLE_SECS: a
 * call of 2 us where ranks share CPUs is a few scheduler decisions, and
 * single calls put hier at 4.25 us against hier_leader's 3.97 early in a
 * launch that timed them at 2.05 and 2.97 over its whole length (4 ranks
 * as 2 nodes on 2 CPUs, 8 B).  `per` must be the same on every rank: the
 * first try takes it from the agreed mean of the PROBE calls before it,
 * later ones from the current choice's agreed cost.
 *
 * Tries come at call FIRST_TRY, then GAP_FIRST x per calls later, the gap
 * doubling up to GAP_MAX x per: a try of six rivals 25% slower costs
 * about 15 samples' worth of extra time, under 2% of the calls between
 * tries from the third, and a placement or machine state that changes is
 * still found. */
#include <mpi.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "base/alloc.h"
#include "base/log.h"
#include "base/status.h"
#include "core/engine.h"
#include "core/select_online.h"

#define SIZE_CLASSES  64
#define SLOTS         GCOLL_SELECT_ONLINE_SLOTS
#define FIRST_TRY     8
#define TRY_PASSES    2      /* over the candidates: a drift in the machine's speed */
#define TRY_WARM      1      /* per candidate and pass */
#define TRY_TIMED     4      /* samples per candidate and pass */
#define SAMPLE_SECS   20e-6  /* a sample's calls add up to about this ... */
#define PER_MAX       16     /* ... in at most this many calls */
#define PROBE         4      /* calls timed before the first try, for per */
#define GAP_FIRST     256
#define GAP_MAX       16384
#define SWITCH_MARGIN 0.97   /* a rival's cost under this x the current one's */
#define NCAND         (1 + GCOLL_TUNE_RIVALS)

struct gcoll_select_online {
    const gcoll_tune_row_t *row;     /* NULL: a free slot */
    int                     coll, cls;
    const gcoll_algo_t     *cand[NCAND];
    int                     n, cur;
    int                     trying;  /* the candidate being timed, -1 between tries */
    int                     pass;    /* of the try over the candidates; -1: untimed */
    int                     k;       /* the candidate's calls so far in this pass */
    int                     per;     /* calls per sample, the same on every rank */
    uint64_t                calls, next, gap;
    double                  probe;   /* the PROBE calls before the first try, summed */
    double                  secs[NCAND];   /* this try's timed calls, summed */
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

/* The class's state, or NULL: one bit test where it has none (every call
 * of a collective without rivals). */
static gcoll_select_online_t *state_of(gcoll_comm_t comm, gcoll_coll_t coll, int cls)
{
    if (!(comm->online_classes[coll] >> cls & 1)) return NULL;
    for (int i = 0; i < SLOTS; i++)
        if (comm->online[i].row && comm->online[i].coll == (int)coll && comm->online[i].cls == cls)
            return &comm->online[i];
    return NULL;
}

/* The decisions of coll may change: kept schedules and the last decision
 * are rebuilt (every rank at the same call). */
static void invalidate(gcoll_comm_t comm, gcoll_coll_t coll)
{
    comm->select_epoch++;
    comm->last_select[coll].bytes = SIZE_MAX;
}

static void state_init(gcoll_select_online_t *o, const gcoll_tune_row_t *row, int cls)
{
    memset(o, 0, sizeof(*o));
    o->row = row;
    o->coll = row->coll, o->cls = cls;
    o->cand[o->n++] = row->algo;
    for (int i = 0; i < row->nrivals; i++) o->cand[o->n++] = row->rival[i];
    o->trying = -1;
    o->next = FIRST_TRY;
    o->gap = GAP_FIRST;
}

/* A free slot for (coll, cls), or NULL when all are taken: every rank
 * meets the same classes in the same order, so all run out alike, and the
 * classes met later keep their row's algorithm. */
static gcoll_select_online_t *state_new(gcoll_comm_t comm, const gcoll_tune_row_t *row, int cls)
{
    for (int i = 0; i < SLOTS; i++)
        if (!comm->online[i].row) {
            state_init(&comm->online[i], row, cls);
            comm->online_classes[row->coll] |= (uint64_t)1 << cls;
            return &comm->online[i];
        }
    return NULL;
}

gcoll_status_t gcoll_select_online_init(gcoll_comm_t comm)
{
    memset(comm->online_classes, 0, sizeof(comm->online_classes));
    comm->online = gcoll_calloc(SLOTS, sizeof(gcoll_select_online_t));
    return comm->online ? GCOLL_SUCCESS
                        : GCOLL_ERROR(GCOLL_ERR_NO_MEMORY, "cannot allocate the selection's "
                                      "tried rivals");
}

void gcoll_select_online_reset(gcoll_comm_t comm)
{
    memset(comm->online_classes, 0, sizeof(comm->online_classes));
    if (comm->online) memset(comm->online, 0, SLOTS * sizeof(gcoll_select_online_t));
}

void gcoll_select_online_free(gcoll_comm_t comm)
{
    free(comm->online);
    comm->online = NULL;
    memset(comm->online_classes, 0, sizeof(comm->online_classes));
}

const gcoll_algo_t *gcoll_select_online_algo(gcoll_comm_t comm, const gcoll_tune_row_t *row,
                                             gcoll_coll_t coll, size_t bytes)
{
    if (!comm->cfg.try_rivals || !row->nrivals || !comm->online) return row->algo;
    int cls = size_class(bytes);
    gcoll_select_online_t *o = state_of(comm, coll, cls);
    if (!o && !(o = state_new(comm, row, cls))) return row->algo;
    if (o->row != row) return row->algo;   /* another row shares the class: not tried */
    return o->cand[o->trying >= 0 ? o->trying : o->cur];
}

gcoll_select_online_t *gcoll_select_online_of(gcoll_comm_t comm, gcoll_coll_t coll, size_t bytes,
                                              int *timed)
{
    *timed = 0;
    if (!comm->online_classes[coll] || comm->forced[coll]) return NULL;
    gcoll_select_online_t *o = state_of(comm, coll, size_class(bytes));
    if (!o) return NULL;
    *timed = o->trying >= 0 ? o->pass >= 0 && o->k >= TRY_WARM
                            : !o->tries && o->calls + PROBE >= o->next;
    return o;
}

/* in[0..n) -> out: the largest over the ranks (collective); 0 on failure. */
static int agree_max(gcoll_comm_t comm, const double *in, double *out, int n)
{
    return PMPI_Allreduce(in, out, n, MPI_DOUBLE, MPI_MAX, comm->mpi_comm) == MPI_SUCCESS;
}

/* Calls per sample for calls of `secs`. */
static int per_for(double secs)
{
    if (secs <= 0) return 1;
    double per = SAMPLE_SECS / secs;
    return per >= PER_MAX ? PER_MAX : per <= 1 ? 1 : (int)per + 1;
}

/* The end of a try: the costs agreed, the choice made (collective). */
static void decide(gcoll_comm_t comm, gcoll_select_online_t *o)
{
    double mine[NCAND], all[NCAND];
    for (int i = 0; i < o->n; i++)   /* the mean: a loop's time per call */
        mine[i] = o->secs[i] / (TRY_PASSES * TRY_TIMED * o->per);
    o->tries++;
    if (!agree_max(comm, mine, all, o->n)) {
        gcoll_warn("select: agreeing on the tried algorithms' costs failed; keeping %s",
                   o->cand[o->cur]->name);
        return;
    }
    int best = o->cur;
    for (int i = 0; i < o->n; i++)
        if (all[i] < all[best] * (best == o->cur ? SWITCH_MARGIN : 1.0)) best = i;
    memcpy(o->cost, all, sizeof(all));
    if (GCOLL_UNLIKELY(gcoll_log_level >= GCOLL_LOG_INFO)) {
        char costs[256];
        size_t len = 0;
        for (int i = 0; i < o->n && len < sizeof costs; i++)
            len += (size_t)snprintf(costs + len, sizeof costs - len, "%s%s %.2f", i ? ", " : "",
                                    o->cand[i]->name, all[i] * 1e6);
        gcoll_info("select %s %s, try %d (%d calls per sample): %s us per call agreed; %s %s",
                   gcoll_coll_name(o->row->coll), o->row->src, o->tries, o->per, costs,
                   best == o->cur ? "keeping" : "switching to", o->cand[best]->name);
    }
    if (best != o->cur) {
        o->cur = best;
        o->switches++;
    }
}

/* Steady: count the call; at `next` a try starts (collective before the
 * first: the calls per sample).  Returns whether it started. */
static int steady_step(gcoll_comm_t comm, gcoll_select_online_t *o, double secs)
{
    o->calls++;
    if (!o->tries && o->calls + PROBE > o->next) o->probe += secs;
    if (o->calls < o->next) return 0;
    double t = o->cost[o->cur];
    if (!o->tries) {
        double mine = o->probe / PROBE;
        if (!agree_max(comm, &mine, &t, 1)) t = 0;
    }
    o->per = per_for(t);
    o->trying = 0, o->k = 0;
    o->pass = o->tries ? 0 : -1;   /* the first try: a pass to warm every candidate first */
    memset(o->secs, 0, sizeof(o->secs));
    return 1;
}

/* Trying: add the call to its sample; returns whether the candidate changed. */
static int trying_step(gcoll_comm_t comm, gcoll_select_online_t *o, double secs)
{
    if (o->pass >= 0 && o->k >= TRY_WARM) o->secs[o->trying] += secs;
    if (++o->k < TRY_WARM + TRY_TIMED * o->per) return 0;
    o->k = 0;
    if (++o->trying == o->n && ++o->pass < TRY_PASSES) o->trying = 0;
    if (o->trying == o->n) {
        decide(comm, o);
        o->trying = -1;
        o->calls = 0;
        o->next = o->gap * (uint64_t)o->per;
        if (o->gap < GAP_MAX) o->gap *= 2;
    }
    return 1;
}

void gcoll_select_online_step(gcoll_comm_t comm, gcoll_select_online_t *o, double secs)
{
    if (!(o->trying < 0 ? steady_step(comm, o, secs) : trying_step(comm, o, secs))) return;
    gcoll_engine_lock();
    invalidate(comm, o->row->coll);
    gcoll_engine_unlock();
}

gcoll_status_t gcoll_select_online_report(gcoll_comm_t comm, gcoll_coll_t coll, size_t bytes,
                                          gcoll_select_online_report_t *out)
{
    const gcoll_select_online_t *o = state_of(comm, coll, size_class(bytes));
    if (!o)
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "%s of %zu bytes: no rivals tried",
                           gcoll_coll_name(coll), bytes);
    memset(out, 0, sizeof(*out));
    out->n = o->n, out->current = o->cur, out->tries = o->tries, out->switches = o->switches;
    out->per = o->per;
    for (int i = 0; i < o->n; i++) out->cand[i] = o->cand[i], out->cost[i] = o->cost[i];
    return GCOLL_SUCCESS;
}
