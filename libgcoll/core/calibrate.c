/* SPDX-License-Identifier: BSD-3-Clause */
/* The measuring core shared by gcoll_tune and the calibration at
 * communicator creation (calibrate.h says how a size is measured and how
 * rows are derived).  Everything here is collective over the communicator
 * except the pure functions (pick, write). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "base/alloc.h"
#include "core/calibrate.h"
#include "core/comm.h"
#include "base/log.h"
#include "base/shuffle.h"
#include "core/memtype.h"
#include "core/select.h"
#include "base/status.h"
#include "core/tune_table.h"
#include "shm/shm.h"

#define KEEP_SLACK 1.03
/* The MPI candidate takes a size from libgcoll's winner when it is 5%
 * faster, and keeps the next sizes while it is faster at all. */
#define MPI_ENTER 1.05
#define MPI_STAY  1.00
/* ... and is timed again by gcoll_calib_confirm where it is this close. */
#define MPI_CLOSE 1.25
/* gcoll_calib_steady times at most this many more blocks (about 0.75 s of
 * 5 ms blocks): where the whole machine is slow for the run, timing again
 * does not make it quiet (seen: 300 more blocks, 6.6 s in all). */
#define STEADY_MAX_BLOCKS 150
/* gcoll_calib_confirm times the winner and up to this many rivals, the
 * first always, the others where within CONFIRM_WITHIN of the winner. */
#define CONFIRM_RIVALS 3
#define CONFIRM_WITHIN 1.5

const gcoll_calib_timing_t gcoll_calib_timing_tune = {
    .block_s = 50e-3, .nblocks = 5, .max_iters = 2000, .warmup_calls = 2, .probe_calls = 4,
};

/* 5 ms blocks, 3 per pass (gcoll_calib_confirm adds a second pass for the
 * finalists); pruning keeps the clear losers to one or two blocks.  10 ms
 * blocks (2-3 scheduler ticks) were first chosen for ranks that share
 * CPUs; halving them took the calibration from 5.3 to 3.3 s at 2 ranks and
 * from 8-8.7 to 5.2-5.7 s at 4 ranks as 2 nodes on 2 cores (Intel Xeon
 * guest), and the selection check did as well (2 ranks: every size in 3
 * runs; 4 as 2 nodes: 4 misses in 15 sizes, against 5 with 10 ms blocks,
 * all from launches that place the ranks differently). */
const gcoll_calib_timing_t gcoll_calib_timing_quick = {
    .block_s = 5e-3, .nblocks = 3, .max_iters = 2000, .warmup_calls = 0, .probe_calls = 1,
    .prune1 = 2.0, .prune2 = 1.25,
};

gcoll_status_t gcoll_calib_init(gcoll_calib_t *c, gcoll_comm_t comm, size_t send_cap,
                                size_t recv_cap, const gcoll_calib_timing_t *timing)
{
    memset(c, 0, sizeof(*c));
    c->comm   = comm;
    c->timing = *timing;
    c->shm_stream = comm->cfg.shm_stream;
    size_t send_elems = send_cap / sizeof(float) + 1, recv_elems = recv_cap / sizeof(float) + 1;
    c->send_cap = send_elems * sizeof(float);
    c->recv_cap = recv_elems * sizeof(float);
    /* Page aligned, as the benchmarks' buffers and a framework's large
     * tensors are, not 16 bytes into a page as malloc puts a large block:
     * the candidates are timed on the buffers the calls they choose for
     * will most often have.  (Suspected, and not, the cause of the 16 MiB
     * picks that the launches contradicted: that was the candidates'
     * fixed order, base/shuffle.h.) */
    if (gcoll_posix_memalign((void **)&c->send, 4096, c->send_cap) != 0) c->send = NULL;
    if (gcoll_posix_memalign((void **)&c->recv, 4096, c->recv_cap) != 0) c->recv = NULL;
    if (!c->send || !c->recv) {
        gcoll_calib_fini(c);
        return GCOLL_ERROR(GCOLL_ERR_NO_MEMORY, "cannot allocate %zu + %zu bytes to measure "
                           "collectives in", send_elems * sizeof(float), recv_elems * sizeof(float));
    }
    for (size_t i = 0; i < send_elems; i++) c->send[i] = (float)((i + (size_t)comm->rank) % 7);
    memset(c->recv, 0, c->recv_cap);
    return GCOLL_SUCCESS;
}

void gcoll_calib_fini(gcoll_calib_t *c)
{
    free(c->send);
    free(c->recv);
    c->send = c->recv = NULL;
}

/* ---- plans ------------------------------------------------------------------ */

static void plan_algos(gcoll_calib_sweep_t *w, gcoll_coll_t coll)
{
    w->coll = coll;
    for (const gcoll_algo_t *const *a = gcoll_algos; *a && w->nalgos < GCOLL_CALIB_MAX_ALGOS; a++)
        if ((*a)->coll == coll) w->algos[w->nalgos++] = *a;
}

void gcoll_calib_plan(gcoll_calib_sweep_t *w, gcoll_coll_t coll, size_t min, size_t max, int step)
{
    memset(w, 0, sizeof(*w));
    if (coll == GCOLL_COLL_BARRIER) w->sizes[w->nsizes++] = 0;
    for (size_t s = min; coll != GCOLL_COLL_BARRIER && s <= max && w->nsizes < GCOLL_CALIB_MAX_SIZES;
         s *= (size_t)step)
        w->sizes[w->nsizes++] = s < sizeof(float) ? sizeof(float) : s;
    plan_algos(w, coll);
}

void gcoll_calib_plan_sizes(gcoll_calib_sweep_t *w, gcoll_coll_t coll, const size_t *sizes, int n)
{
    memset(w, 0, sizeof(*w));
    for (int i = 0; i < n && w->nsizes < GCOLL_CALIB_MAX_SIZES; i++)
        w->sizes[w->nsizes++] = coll == GCOLL_COLL_BARRIER ? 0 : sizes[i];
    if (coll == GCOLL_COLL_BARRIER) w->nsizes = 1;
    plan_algos(w, coll);
}

void gcoll_calib_add_mpi(gcoll_calib_sweep_t *w)
{
    if (w->coll == GCOLL_COLL_ALLREDUCE && w->nalgos < GCOLL_CALIB_MAX_ALGOS)
        w->algos[w->nalgos++] = &gcoll_tune_mpi;
}

void gcoll_calib_rival_only(gcoll_calib_sweep_t *w, const char *name)
{
    for (int a = 0; a < w->nalgos; a++)
        if (!strcmp(w->algos[a]->name, name)) w->rival_only |= 1u << a;
}

void gcoll_calib_drop(gcoll_calib_sweep_t *w, const char *name)
{
    int n = 0;
    unsigned only = 0;
    for (int a = 0; a < w->nalgos; a++)
        if (strcmp(w->algos[a]->name, name) != 0) {
            only |= (w->rival_only >> a & 1u) << n;
            w->algos[n++] = w->algos[a];
        }
    w->nalgos = n;
    w->rival_only = only;
}

static int is_mpi(const gcoll_calib_sweep_t *w, int a)
{
    return w->algos[a] == &gcoll_tune_mpi;
}

/* ---- timing ------------------------------------------------------------------- */

/* PMPI_: under the drop-in, MPI_Allreduce would be libgcoll again. */
static gcoll_status_t call_mpi(gcoll_calib_t *c, size_t n)
{
    if (PMPI_Allreduce(c->send, c->recv, (int)n, MPI_FLOAT, MPI_SUM, c->comm->mpi_comm) ==
        MPI_SUCCESS)
        return GCOLL_SUCCESS;
    return GCOLL_ERROR(GCOLL_ERR_TRANSPORT, "the MPI's own MPI_Allreduce of %zu floats failed "
                       "while it was measured", n);
}

static gcoll_status_t call(gcoll_calib_t *c, gcoll_coll_t coll, size_t n)
{
    if (c->via_mpi) return call_mpi(c, n);
    switch (coll) {
    case GCOLL_COLL_ALLREDUCE:
        return gcoll_allreduce(c->send, c->recv, n, GCOLL_FLOAT32, GCOLL_SUM, c->comm);
    case GCOLL_COLL_BCAST:     return gcoll_bcast(c->recv, n, GCOLL_FLOAT32, 0, c->comm);
    case GCOLL_COLL_REDUCE:
        return gcoll_reduce(c->send, c->recv, n, GCOLL_FLOAT32, GCOLL_SUM, 0, c->comm);
    case GCOLL_COLL_ALLGATHER: return gcoll_allgather(c->send, c->recv, n, GCOLL_FLOAT32, c->comm);
    case GCOLL_COLL_REDUCE_SCATTER:
        return gcoll_reduce_scatter(c->send, c->recv, n, GCOLL_FLOAT32, GCOLL_SUM, c->comm);
    case GCOLL_COLL_ALLTOALL:  return gcoll_alltoall(c->send, c->recv, n, GCOLL_FLOAT32, c->comm);
    default:                   return gcoll_barrier(c->comm);
    }
}

/* Seconds per call over iters calls, the slowest rank's.  One untimed call
 * after the barrier lines the ranks up: MPI_Barrier can release them a
 * scheduler tick apart when they share CPUs, and that skew would be charged
 * to the algorithm timed first. */
static gcoll_status_t time_block(gcoll_calib_t *c, gcoll_coll_t coll, size_t n, long iters,
                                 double *secs)
{
    MPI_Comm mc = c->comm->mpi_comm;
    gcoll_status_t st = GCOLL_SUCCESS;
    double t0 = 0, mine[2], all[2];
    MPI_Barrier(mc);
    for (long i = -1; i < iters && st == GCOLL_SUCCESS; i++) {
        if (i == 0) t0 = MPI_Wtime();
        st = call(c, coll, n);
    }
    mine[0] = (MPI_Wtime() - t0) / (double)iters;
    mine[1] = st != GCOLL_SUCCESS;
    if (MPI_Allreduce(mine, all, 2, MPI_DOUBLE, MPI_MAX, mc) != MPI_SUCCESS)
        return st != GCOLL_SUCCESS ? st : GCOLL_ERROR(GCOLL_ERR_TRANSPORT, "MPI_Allreduce of "
                                                      "the times of %s failed",
                                                      gcoll_coll_name(coll));
    c->timed++;
    if (all[1] != 0)
        return st != GCOLL_SUCCESS ? st
                                   : GCOLL_ERROR(GCOLL_ERR_INTERNAL, "%s failed on another rank "
                                                 "while it was measured", gcoll_coll_name(coll));
    *secs = all[0];
    return GCOLL_SUCCESS;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* Every rank agrees: the algorithm builds a schedule for this call here.
 * Declines (shm across nodes) are expected, so they are not logged. */
static int applies(gcoll_calib_t *c, const gcoll_algo_t *a, size_t n)
{
    if (a == &gcoll_tune_mpi) return 1;   /* MPI serves every call (only allreduce is planned) */
    int level = gcoll_log_level;
    gcoll_log_level = -1;
    int ok = gcoll_select_try(c->comm, a, n, GCOLL_FLOAT32) == GCOLL_SUCCESS, all = 0;
    gcoll_log_level = level;
    gcoll_error_clear();
    if (MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, c->comm->mpi_comm) != MPI_SUCCESS)
        return 0;   /* not known to apply everywhere: not timed */
    return all;
}

typedef struct {
    long   iters[GCOLL_CALIB_MAX_ALGOS];     /* 0: not timed */
    int    nb[GCOLL_CALIB_MAX_ALGOS];        /* blocks timed */
    double b[GCOLL_CALIB_MAX_ALGOS][GCOLL_CALIB_MAX_BLOCKS];
} blocks_t;

static double min_of(const double *v, int n)
{
    double m = v[0];
    for (int i = 1; i < n; i++) m = v[i] < m ? v[i] : m;
    return m;
}

static double max_of(const double *v, int n)
{
    double m = v[0];
    for (int i = 1; i < n; i++) m = v[i] > m ? v[i] : m;
    return m;
}

/* After a round of blocks: stop timing the clear losers, those whose best
 * block is slower than prune1 (one block timed) or prune2 (two or more) x
 * the worst block of the leader (the algorithm with the best worst block).
 * Identical on every rank (the times are the ranks' maximum). */
static void prune(const gcoll_calib_timing_t *tm, blocks_t *k, int nalgos)
{
    int lead = -1;
    for (int a = 0; a < nalgos; a++)
        if (k->iters[a] > 0 && k->nb[a] &&
            (lead < 0 || max_of(k->b[a], k->nb[a]) < max_of(k->b[lead], k->nb[lead])))
            lead = a;
    if (lead < 0) return;
    double worst = max_of(k->b[lead], k->nb[lead]);
    for (int a = 0; a < nalgos; a++) {
        double factor = k->nb[a] >= 2 ? tm->prune2 : tm->prune1;
        if (a != lead && k->iters[a] > 0 && k->nb[a] && factor > 1 &&
            min_of(k->b[a], k->nb[a]) > factor * worst)
            k->iters[a] = -1;
    }
}

/* How many calls make a block of about timing.block_s.  A single call is a
 * poor guide where ranks share CPUs (it may run in one turn of the
 * scheduler, the next take a tick), so probes grow, at most 8x at a time,
 * until one lasts a quarter block; the count follows from that one.  Where
 * the last probe had that many calls (calls longer than a block: one), it
 * is a block like the others and is kept as the first (*first >= 0).
 * hint > 0: seconds per call already seen (pick_way's blocks); the first
 * probe is then sized to last a quarter block, which saves the 3-4 growing
 * probes of a small call. */
static gcoll_status_t calls_per_block(gcoll_calib_t *c, gcoll_coll_t coll, size_t n, double hint,
                                      long *iters, double *first)
{
    const gcoll_calib_timing_t *tm = &c->timing;
    double per = 0;
    long probe = tm->probe_calls > 0 ? tm->probe_calls : 1;
    double quarter = hint > 0 ? tm->block_s / 4 / hint : 0;   /* calls in a quarter block */
    if (quarter > (double)probe)
        probe = quarter >= (double)tm->max_iters ? tm->max_iters : (long)quarter + 1;
    if (tm->warmup_calls) GCOLL_TRY(time_block(c, coll, n, tm->warmup_calls, &per));
    for (;;) {
        GCOLL_TRY(time_block(c, coll, n, probe, &per));
        if (per * (double)probe >= tm->block_s / 4 || probe >= tm->max_iters) break;
        double want = tm->block_s / 4 / (per > 1e-8 ? per : 1e-8);
        long next = want < (double)(8 * probe) ? (long)want + 1 : 8 * probe;
        probe = next > tm->max_iters ? tm->max_iters : next;
    }
    double it = tm->block_s / (per > 1e-8 ? per : 1e-8);
    *iters = it < 1 ? 1 : it > (double)tm->max_iters ? tm->max_iters : (long)it;
    *first = *iters == probe ? per : -1;
    return GCOLL_SUCCESS;
}

/* An algorithm's time at a size from all its blocks: the median, or where
 * it was pruned the mean (how far behind it is). */
static void settle(gcoll_calib_sweep_t *w, int si, int a, int pruned)
{
    int n = w->nblk[si][a];
    double v[GCOLL_CALIB_MAX_BLOCKS], sum = 0;
    memcpy(v, w->blk[si][a], sizeof(double) * (size_t)n);
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    for (int b = 0; b < n; b++) sum += v[b];
    w->t[si][a] = pruned ? sum / n : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    w->spread[si][a] = !pruned && v[0] > 0 ? v[n - 1] / v[0] : 0;
}

static void keep_block(gcoll_calib_sweep_t *w, int si, int a, double secs)
{
    if (w->nblk[si][a] < GCOLL_CALIB_MAX_BLOCKS) w->blk[si][a][w->nblk[si][a]++] = secs;
}

/* Calls go to candidate a from now on: a libgcoll algorithm forced as
 * GCOLL_ALGO would, or the MPI's collective; the node's segment writes
 * the way chosen for it at this size (below). */
static void use_candidate(gcoll_calib_t *c, const gcoll_calib_sweep_t *w, int si, int a)
{
    c->via_mpi = is_mpi(w, a);
    gcoll_select_force(c->comm, w->coll, c->via_mpi ? NULL : w->algos[a]);
    c->comm->cfg.shm_stream = (gcoll_shm_stream_t)(w->way[si][a] ? w->way[si][a] : c->shm_stream);
}

/* With GCOLL_SHM_STREAM=auto the node's segment times its write ways as the
 * job runs and keeps the faster (shm_adapt.h), but not within the few
 * calls a calibration makes: timed in the way a fresh segment starts with
 * (through the cache), the node's algorithms lost where streaming is the
 * faster way, and the entry kept the loser for good (Zen 4 guest, busy
 * state, 2 ranks: allgathers from 4 MiB blocks went to rdouble, 11 ms at
 * 32 MiB against 8 for shm once it streams, and the slow state's shm took
 * 8.6).  So from GCOLL_SHM_STREAM_IN_MIN each candidate is timed in each
 * way, and its blocks go the faster way: the time it will have once its
 * segment has learnt.  One call per way (as first built) was too few: at
 * 8-16 KiB a call is 1-3 us, of the order of the ranks' skew leaving the
 * barrier, and in the slow state shm was timed streamed (1.75 us at 8 KiB,
 * 2.6x its cached time), lost to hier, and the entry gave 8-32 KiB to hier.
 * So each way is timed in WAY_ROUNDS short blocks of about WAY_BYTES of
 * payload (1-64 calls), in the order cache, stream, stream, cache, cache,
 * stream (neither way always first after the other), and keeps its
 * fastest block.  Three rounds and 1 MiB, not two and 256 KiB as first
 * built: a size's first blocks run slow, and the bcast's segment took
 * three or four (Intel Xeon guest, 2 ranks, 64 KiB: 43, 35, 31, 14, then
 * 4.7 us per call), so a way's two blocks were both still warming up in
 * half the calibrations, shm's bcast was timed streamed at 16-64 KiB
 * (6.7-7.1 us at 64 KiB against 4.2-4.7 through the cache) and lost those
 * sizes to binomial and scatter_allgather; blocks of 16 calls at 16 KiB
 * (25 us) were also within the barrier's skew.
 * Candidates that do not use the segment pay those calls too (none where
 * the communicator has no segment).  The cache key holds GCOLL_SHM_STREAM:
 * an entry timed in one way only does not serve auto. */
#define WAY_ROUNDS 3
#define WAY_BYTES (1u << 20)
#define WAY_MAX_CALLS 64

/* Whether the calls since the segment's count was ops_before touched the
 * segment on some rank (collective). */
static int touched_segment(gcoll_calib_t *c, uint64_t ops_before)
{
    int mine = gcoll_shm_ops(c->comm->shm) != ops_before, any = 1;
    if (MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, c->comm->mpi_comm) != MPI_SUCCESS)
        return 1;   /* not known: time both ways */
    return any;
}

/* *per: seconds per call in the faster way's fastest block (-1: no way
 * timed).  A candidate whose first block did not touch the segment (the
 * transports' algorithms on one node) has no way to choose: it keeps that
 * block as *per and skips the other five (picking ways took 0.9 s of a
 * 6.9 s calibration at 2 ranks, Intel Xeon guest). */
static gcoll_status_t pick_way(gcoll_calib_t *c, gcoll_calib_sweep_t *w, int si, int a,
                               double *per)
{
    static const gcoll_shm_stream_t ways[2] = { GCOLL_SHM_STREAM_OFF, GCOLL_SHM_STREAM_ON };
    double best[2] = { -1, -1 };
    size_t bytes = w->sizes[si];
    w->way[si][a] = 0;   /* the communicator's */
    *per = -1;
    if (c->shm_stream != GCOLL_SHM_STREAM_AUTO || !c->comm->shm || is_mpi(w, a) ||
        bytes < GCOLL_SHM_STREAM_IN_MIN)
        return GCOLL_SUCCESS;
    long calls = (long)(WAY_BYTES / bytes);
    calls = calls < 1 ? 1 : calls > WAY_MAX_CALLS ? WAY_MAX_CALLS : calls;
    gcoll_status_t st = GCOLL_SUCCESS;
    uint64_t ops = gcoll_shm_ops(c->comm->shm);
    for (int r = 0; r < 2 * WAY_ROUNDS && st == GCOLL_SUCCESS; r++) {
        int k = (r + r / 2) & 1;   /* 0 1 1 0 0 1 ... */
        double t;
        c->comm->cfg.shm_stream = ways[k];
        st = time_block(c, w->coll, bytes / sizeof(float), calls, &t);
        if (st == GCOLL_SUCCESS && (best[k] < 0 || t < best[k])) best[k] = t;
        if (r == 0 && st == GCOLL_SUCCESS && !touched_segment(c, ops)) break;
    }
    c->comm->cfg.shm_stream = (gcoll_shm_stream_t)c->shm_stream;
    if (st != GCOLL_SUCCESS) return st;
    int faster = best[1] >= 0 && best[1] < best[0];
    if (best[1] >= 0) w->way[si][a] = (unsigned char)ways[faster];
    *per = best[faster];
    return GCOLL_SUCCESS;
}

/* Time the algorithms marked in use[] (all when NULL) at w->sizes[si],
 * nblocks more blocks each; the others keep their times. */
static gcoll_status_t measure(gcoll_calib_t *c, gcoll_calib_sweep_t *w, int si, const int *use,
                              int nblocks)
{
    const gcoll_calib_timing_t *tm = &c->timing;
    size_t n = w->sizes[si] / sizeof(float);
    if (nblocks > GCOLL_CALIB_MAX_BLOCKS) nblocks = GCOLL_CALIB_MAX_BLOCKS;
    blocks_t k;
    gcoll_status_t st = GCOLL_SUCCESS;
    memset(&k, 0, sizeof(k));
    for (int a = 0; a < w->nalgos && st == GCOLL_SUCCESS; a++) {
        if (use && !use[a]) continue;
        w->t[si][a] = -1;
        if (!applies(c, w->algos[a], n)) continue;
        use_candidate(c, w, si, a);
        double first = -1, per = -1;
        if (!w->iters[si][a]) {   /* first sized here: pick its way, then take it */
            if ((st = pick_way(c, w, si, a, &per)) != GCOLL_SUCCESS) break;
            use_candidate(c, w, si, a);
        }
        if (w->iters[si][a] > 0) {   /* sized on an earlier pass: warm up only */
            k.iters[a] = w->iters[si][a];
            /* not where a block is one call: its block's own untimed call
             * warms it as well, and at 16-32 MiB those calls were half of
             * the confirming step (2 ranks: 1.25 s of allgather's) */
            if (k.iters[a] > 1) st = time_block(c, w->coll, n, 1, &first);
            first = -1;
        } else {
            st = calls_per_block(c, w->coll, n, per, &k.iters[a], &first);
            w->iters[si][a] = k.iters[a];
        }
        if (st == GCOLL_SUCCESS && first >= 0) {
            k.b[a][k.nb[a]++] = first;
            keep_block(w, si, a, first);
        }
    }
    /* interleaved, in a new order each round (base/shuffle.h says why) */
    for (int b = 0, more = 1; more && st == GCOLL_SUCCESS; b++) {
        int order[GCOLL_CALIB_MAX_ALGOS];
        gcoll_shuffle_order(order, w->nalgos, (unsigned)(si * GCOLL_CALIB_MAX_BLOCKS + b));
        prune(tm, &k, w->nalgos);
        more = 0;
        for (int j = 0; j < w->nalgos && st == GCOLL_SUCCESS; j++) {
            int a = order[j];
            if (k.iters[a] <= 0 || k.nb[a] >= nblocks) continue;
            more = 1;
            use_candidate(c, w, si, a);
            st = time_block(c, w->coll, n, k.iters[a], &k.b[a][k.nb[a]]);
            if (st == GCOLL_SUCCESS) keep_block(w, si, a, k.b[a][k.nb[a]]);
            k.nb[a]++;
        }
    }
    c->via_mpi = 0;
    c->comm->cfg.shm_stream = (gcoll_shm_stream_t)c->shm_stream;
    gcoll_select_force(c->comm, w->coll, NULL);
    for (int a = 0; a < w->nalgos && st == GCOLL_SUCCESS; a++)
        if (k.nb[a]) settle(w, si, a, k.iters[a] < 0);
    return st;
}

gcoll_status_t gcoll_calib_measure(gcoll_calib_t *c, gcoll_calib_sweep_t *w, int si)
{
    return measure(c, w, si, NULL, c->timing.nblocks);
}

/* ---- winners -------------------------------------------------------------------- */

/* A libgcoll algorithm timed at size s that may win it (w->best). */
static int timed_lib(const gcoll_calib_sweep_t *w, int s, int a)
{
    return w->t[s][a] >= 0 && !is_mpi(w, a) && !(w->rival_only >> a & 1);
}

/* Where the MPI candidate beats libgcoll's winner: by MPI_ENTER to start a
 * run of sizes, by MPI_STAY to go on with one. */
static void pick_mpi(gcoll_calib_sweep_t *w)
{
    int m = -1;
    for (int a = 0; a < w->nalgos; a++)
        if (is_mpi(w, a)) m = a;
    for (int s = 0; s < w->nsizes; s++) {
        int b = w->best[s];
        double margin = s && w->mpi_best[s - 1] ? MPI_STAY : MPI_ENTER;
        w->mpi_best[s] = m >= 0 && b >= 0 && w->t[s][m] >= 0 && w->t[s][m] * margin < w->t[s][b];
    }
}

/* The fastest applicable algorithm per size, where ties (within the slack)
 * go to the previous size's winner, else to the algorithm that is fastest
 * at the most sizes: noise between algorithms that are level (shm and hier
 * on one node run the same node-level code) does not split ranges. */
void gcoll_calib_pick(gcoll_calib_sweep_t *w)
{
    int fastest[GCOLL_CALIB_MAX_SIZES], wins[GCOLL_CALIB_MAX_ALGOS] = { 0 };
    for (int s = 0; s < w->nsizes; s++) {
        fastest[s] = -1;
        for (int a = 0; a < w->nalgos; a++)
            if (timed_lib(w, s, a) && (fastest[s] < 0 || w->t[s][a] < w->t[s][fastest[s]]))
                fastest[s] = a;
        if (fastest[s] >= 0) wins[fastest[s]]++;
    }
    for (int s = 0; s < w->nsizes; s++) {
        int best = fastest[s], prev = s ? w->best[s - 1] : -1;
        if (best >= 0) {
            double bar = KEEP_SLACK * w->t[s][best];
            for (int a = 0; a < w->nalgos; a++)
                if (timed_lib(w, s, a) && w->t[s][a] <= bar && wins[a] > wins[best]) best = a;
            if (prev >= 0 && w->t[s][prev] >= 0 && w->t[s][prev] <= bar) best = prev;
        }
        w->best[s] = best;
    }
    pick_mpi(w);
}

void gcoll_calib_noise(const gcoll_calib_sweep_t *w, double *median, double *worst)
{
    double v[GCOLL_CALIB_MAX_SIZES];
    int n = 0;
    for (int s = 0; s < w->nsizes; s++)
        if (w->best[s] >= 0 && w->spread[s][w->best[s]] > 0) v[n++] = w->spread[s][w->best[s]];
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    *median = n ? v[n / 2] : 0;
    *worst = n ? v[n - 1] : 0;
}

/* The power of two strictly between two sizes nearest their geometric
 * middle, or 0 if there is none. */
static size_t midpoint(size_t lo, size_t hi)
{
    int l0 = 0, l1 = 0;
    while (l0 < 62 && ((size_t)1 << (l0 + 1)) <= lo) l0++;
    while (l1 < 62 && ((size_t)1 << (l1 + 1)) <= hi) l1++;
    int m = (l0 + l1 + 1) / 2;
    size_t p = (size_t)1 << m;
    return p > lo && p < hi ? p : 0;
}

/* Make room at index i (shifting the later sizes up). */
static void insert_size(gcoll_calib_sweep_t *w, int i, size_t bytes)
{
    memmove(&w->sizes[i + 1], &w->sizes[i], sizeof(w->sizes[0]) * (size_t)(w->nsizes - i));
    memmove(&w->t[i + 1], &w->t[i], sizeof(w->t[0]) * (size_t)(w->nsizes - i));
    memmove(&w->best[i + 1], &w->best[i], sizeof(w->best[0]) * (size_t)(w->nsizes - i));
    memmove(&w->mpi_best[i + 1], &w->mpi_best[i], sizeof(w->mpi_best[0]) * (size_t)(w->nsizes - i));
    memmove(&w->spread[i + 1], &w->spread[i], sizeof(w->spread[0]) * (size_t)(w->nsizes - i));
    memmove(&w->blk[i + 1], &w->blk[i], sizeof(w->blk[0]) * (size_t)(w->nsizes - i));
    memmove(&w->nblk[i + 1], &w->nblk[i], sizeof(w->nblk[0]) * (size_t)(w->nsizes - i));
    memmove(&w->iters[i + 1], &w->iters[i], sizeof(w->iters[0]) * (size_t)(w->nsizes - i));
    memmove(&w->way[i + 1], &w->way[i], sizeof(w->way[0]) * (size_t)(w->nsizes - i));
    memset(w->nblk[i], 0, sizeof(w->nblk[i]));
    memset(w->iters[i], 0, sizeof(w->iters[i]));
    memset(w->way[i], 0, sizeof(w->way[i]));
    w->sizes[i] = bytes;
    for (int a = 0; a < w->nalgos; a++) w->t[i][a] = -1, w->spread[i][a] = 0;
    w->best[i] = -1;
    w->mpi_best[i] = 0;
    w->nsizes++;
}

gcoll_status_t gcoll_calib_refine(gcoll_calib_t *c, gcoll_calib_sweep_t *w, int max_new)
{
    gcoll_calib_pick(w);
    int added = 0;
    for (int s = 0; s + 1 < w->nsizes && added < max_new && w->nsizes < GCOLL_CALIB_MAX_SIZES; s++) {
        int a = w->best[s], b = w->best[s + 1];
        size_t mid = midpoint(w->sizes[s], w->sizes[s + 1]);
        if (a < 0 || b < 0 || a == b || !mid || w->sizes[s + 1] < 4 * w->sizes[s]) continue;
        int use[GCOLL_CALIB_MAX_ALGOS] = { 0 };
        use[a] = use[b] = 1;
        insert_size(w, s + 1, mid);
        GCOLL_TRY(measure(c, w, s + 1, use, c->timing.nblocks));
        added++;
        s++;   /* the new point's right neighbour: next pair */
    }
    gcoll_calib_pick(w);
    return GCOLL_SUCCESS;
}

/* The finalists of size s: its winner, the runner-up, up to
 * CONFIRM_RIVALS - 1 more within CONFIRM_WITHIN of the winner, and the MPI
 * where it may take the size.  Where ranks outnumber cores, one 5-10 ms block
 * of a small call is a few scheduler slices, and an algorithm's blocks
 * differ 2-4x with where the slices fell (4 ranks as 2 nodes on 2 cores:
 * hier at 8 B timed 13 us against rdouble's 8.9, then 4.6 against 8.1 in 7
 * alternated launches), so the third is often the true winner. */
static void finalists(const gcoll_calib_sweep_t *w, int s, int *use)
{
    int a = w->best[s];
    memset(use, 0, sizeof(int) * GCOLL_CALIB_MAX_ALGOS);
    if (a < 0) return;
    use[a] = 1;
    for (int k = 0; k < CONFIRM_RIVALS; k++) {   /* the next fastest, in order */
        int b = -1;
        for (int i = 0; i < w->nalgos; i++)
            if (!use[i] && !is_mpi(w, i) && w->t[s][i] >= 0 &&
                (b < 0 || w->t[s][i] < w->t[s][b]))
                b = i;
        if (b < 0 || (k > 0 && w->t[s][b] > CONFIRM_WITHIN * w->t[s][a])) break;
        use[b] = 1;
    }
    for (int m = 0; m < w->nalgos; m++)
        if (is_mpi(w, m) && w->t[s][m] >= 0 && w->t[s][m] < MPI_CLOSE * w->t[s][a]) use[m] = 1;
}

/* The confirming blocks go one per round over all the sizes, so those of a
 * size are as far apart in time as the whole step: a VM whose vCPUs move
 * between host cores changes state every few hundred milliseconds (which
 * slows the shared-memory hand-offs 2-3x and UCX's single copies hardly),
 * and blocks taken back to back would all see one state. */
gcoll_status_t gcoll_calib_confirm(gcoll_calib_t *c, gcoll_calib_sweep_t *w)
{
    int use[GCOLL_CALIB_MAX_SIZES][GCOLL_CALIB_MAX_ALGOS];
    gcoll_calib_pick(w);
    for (int s = 0; s < w->nsizes; s++) finalists(w, s, use[s]);
    for (int r = 0; r < c->timing.nblocks; r++)
        for (int s = 0; s < w->nsizes; s++)
            if (w->best[s] >= 0) GCOLL_TRY(measure(c, w, s, use[s], 1));
    gcoll_calib_pick(w);
    return GCOLL_SUCCESS;
}

/* Algorithm a's median block over its fastest one at size s (0: not
 * timed, or pruned). */
static double disturbance_of(const gcoll_calib_sweep_t *w, int s, int a)
{
    int n = a >= 0 ? w->nblk[s][a] : 0;
    if (n == 0 || w->spread[s][a] <= 0) return 0;
    double fastest = min_of(w->blk[s][a], n);
    return fastest > 0 ? w->t[s][a] / fastest : 0;
}

static double disturbance(const gcoll_calib_sweep_t *w, int s)
{
    return disturbance_of(w, s, w->best[s]);
}

/* A rival of the winner a at size s that may be the true winner: its
 * fastest block beats a's median, and its own median is disturbed (a
 * disturbance slows algorithms unequally: the shared-memory hand-offs more
 * than UCX's single copies, so a steady winner can hide a disturbed one). */
static int hidden_rival(const gcoll_calib_sweep_t *w, int s, int a, int i)
{
    return i != a && disturbance_of(w, s, i) > GCOLL_CALIB_DISTURBED &&
           min_of(w->blk[s][i], w->nblk[s][i]) < w->t[s][a];
}

/* Algorithm i's time at size s cannot be its own speed, given its time at
 * a neighbouring size: more than 3x what a linear growth from the smaller
 * size gives (falling out of a cache level costs up to about 2.5x), or more
 * than 3x its time at the larger size.  Another program on the CPUs, or a
 * rank descheduled, for the blocks of one size and not the next, does this:
 * and one such block is enough to drop the true winner (pruning). */
static int implausible(const gcoll_calib_sweep_t *w, int s, int i)
{
    double t = w->t[s][i];
    if (s > 0 && w->t[s - 1][i] > 0 &&
        t > 3.0 * w->t[s - 1][i] * (double)w->sizes[s] / (double)w->sizes[s - 1])
        return 1;
    return s + 1 < w->nsizes && w->t[s + 1][i] > 0 && t > 3.0 * w->t[s + 1][i];
}

/* nblocks more blocks of algorithm a at size s still fit. */
static int fits(const gcoll_calib_sweep_t *w, int s, int a, int nblocks)
{
    return w->nblk[s][a] + nblocks <= GCOLL_CALIB_MAX_BLOCKS;
}

int gcoll_calib_again(const gcoll_calib_sweep_t *w, int s, int nblocks, unsigned char *retried,
                      int *use)
{
    int a = w->best[s], any = 0;
    memset(use, 0, sizeof(int) * GCOLL_CALIB_MAX_ALGOS);
    if (a < 0) return 0;
    int room = fits(w, s, a, nblocks);
    if (room && disturbance(w, s) > GCOLL_CALIB_DISTURBED)
        for (int i = 0; i < w->nalgos; i++)
            any |= use[i] = w->t[s][i] >= 0 && (i == a || w->t[s][i] < 1.5 * w->t[s][a]);
    for (int i = 0; room && i < w->nalgos; i++)
        if (hidden_rival(w, s, a, i) && fits(w, s, i, nblocks)) any = use[a] = use[i] = 1;
    for (int i = 0; i < w->nalgos; i++)
        if (w->t[s][i] >= 0 && !retried[i] && implausible(w, s, i)) {
            retried[i] = 1;
            any = use[a] = use[i] = 1;
        }
    return any;
}

gcoll_status_t gcoll_calib_steady(gcoll_calib_t *c, gcoll_calib_sweep_t *w, int *left)
{
    unsigned char retried[GCOLL_CALIB_MAX_SIZES][GCOLL_CALIB_MAX_ALGOS] = { { 0 } };
    int use[GCOLL_CALIB_MAX_ALGOS];
    int budget = c->timed + STEADY_MAX_BLOCKS;   /* c->timed: the same on every rank */
    gcoll_calib_pick(w);
    for (int again = 1; again && c->timed < budget;) {   /* ends: blocks run out, retries once */
        again = 0;
        for (int s = 0; s < w->nsizes && c->timed < budget; s++)
            if (gcoll_calib_again(w, s, c->timing.nblocks, retried[s], use)) {
                GCOLL_TRY(measure(c, w, s, use, c->timing.nblocks));
                again = 1;
            }
        gcoll_calib_pick(w);
    }
    *left = 0;
    for (int s = 0; s < w->nsizes; s++) *left += disturbance(w, s) > GCOLL_CALIB_DISTURBED;
    return GCOLL_SUCCESS;
}

/* Where a, faster at size s, hands over to b, faster at size n (a later
 * size): the crossing of their log-log lines, rounded to a power of two
 * inside (s, n]. */
static size_t crossover(const gcoll_calib_sweep_t *w, int s, int n, int a, int b)
{
    double x0 = log2((double)w->sizes[s]), x1 = log2((double)w->sizes[n]);
    double x = 0.5 * (x0 + x1);
    if (w->t[s][b] > 0 && w->t[n][a] > 0) {
        double d0 = log(w->t[s][a] / w->t[s][b]), d1 = log(w->t[n][a] / w->t[n][b]);
        if (d1 - d0 > 0) x = x0 + (x1 - x0) * (-d0) / (d1 - d0);
    }
    double p = floor(x + 0.5);
    if (p <= x0) p = floor(x0) + 1;
    if (p > x1) p = x1;
    return (size_t)1 << (int)p;
}

/* ---- rows ------------------------------------------------------------------------ */

/* A row of this sweep's key (host memory, nodes_lo..nodes_hi, ppn). */
static gcoll_tune_row_t sweep_row(gcoll_coll_t coll, int nodes_lo, int nodes_hi, int ppn,
                                  size_t lo, size_t hi, const gcoll_algo_t *algo)
{
    return (gcoll_tune_row_t){ .coll = coll, .mem = GCOLL_MEM_HOST, .nodes_lo = nodes_lo,
                               .nodes_hi = nodes_hi, .ppn_lo = ppn, .ppn_hi = ppn,
                               .bytes_lo = lo, .bytes_hi = hi, .algo = algo };
}

static void write_row(FILE *f, const gcoll_tune_row_t *r)
{
    char line[512];
    gcoll_tune_format_row(line, sizeof line, r);
    fprintf(f, "%s\n", line);
}

/* The mpi rows: each run of sizes the MPI candidate wins, from where it
 * overtakes the libgcoll winner before the run to where the one after it
 * overtakes the MPI again (0 and inf at the ends). */
static void write_mpi_rows(FILE *f, const gcoll_calib_sweep_t *w, int nodes_lo, int nodes_hi,
                           int ppn)
{
    int m = -1, prev = -1;   /* prev: the last size with a libgcoll winner */
    for (int a = 0; a < w->nalgos; a++)
        if (is_mpi(w, a)) m = a;
    for (int s = 0; m >= 0 && s < w->nsizes; s++) {
        if (w->best[s] < 0) continue;
        if (!w->mpi_best[s]) { prev = s; continue; }
        int end = s, next = s + 1;
        for (; next < w->nsizes && (w->best[next] < 0 || w->mpi_best[next]); next++)
            if (w->best[next] >= 0) end = next;
        size_t lo = prev < 0 ? 0 : crossover(w, prev, s, w->best[prev], m);
        size_t hi = next >= w->nsizes ? GCOLL_TUNE_INF_SIZE
                                      : crossover(w, end, next, m, w->best[next]);
        gcoll_tune_row_t r = sweep_row(w->coll, nodes_lo, nodes_hi, ppn, lo, hi, &gcoll_tune_mpi);
        write_row(f, &r);
        s = next - 1;
    }
}

/* How close to a winner a rival is (w->rival_within, else the default). */
static double rival_within(const gcoll_calib_sweep_t *w)
{
    return w->rival_within > 0 ? w->rival_within : GCOLL_CALIB_RIVAL_WITHIN;
}

/* Whether size s has rivals: its winner's call is in the range where they
 * are tried (GCOLL_CALIB_RIVAL_MIN_SECS to _MAX_SECS), and another libgcoll
 * algorithm came within w->rival_within of it. */
static int has_rivals(const gcoll_calib_sweep_t *w, int s)
{
    int win = w->best[s];
    double t = w->t[s][win], within = rival_within(w);
    if (t < GCOLL_CALIB_RIVAL_MIN_SECS || t > GCOLL_CALIB_RIVAL_MAX_SECS) return 0;
    for (int a = 0; a < w->nalgos; a++)
        if (a != win && !is_mpi(w, a) && w->t[s][a] >= 0 && w->t[s][a] <= within * t) return 1;
    return 0;
}

/* The rivals of a row covering sizes first..last (one winner, every size
 * with rivals): the libgcoll algorithms within w->rival_within of the
 * winner at one of them at least, the closest first, at most
 * GCOLL_TUNE_RIVALS.  The same on every rank (the times are the ranks'
 * maximum). */
static void row_rivals(const gcoll_calib_sweep_t *w, int first, int last, gcoll_tune_row_t *r)
{
    double close[GCOLL_CALIB_MAX_ALGOS], within = rival_within(w);
    int win = w->best[last];
    for (int a = 0; a < w->nalgos; a++) {
        close[a] = 0;
        if (a == win || is_mpi(w, a)) continue;   /* rival_only ones may be rivals */
        for (int s = first; s <= last; s++) {
            if (w->best[s] != win || w->t[s][a] < 0 || w->t[s][win] <= 0) continue;
            double q = w->t[s][a] / w->t[s][win];
            if (q <= within && (!close[a] || q < close[a])) close[a] = q;
        }
    }
    while (r->nrivals < GCOLL_TUNE_RIVALS) {
        int pick = -1;
        for (int a = 0; a < w->nalgos; a++)
            if (close[a] && (pick < 0 || close[a] < close[pick])) pick = a;
        if (pick < 0) break;
        r->rival[r->nrivals++] = w->algos[pick];
        close[pick] = 0;
    }
}

void gcoll_calib_write_rows(FILE *f, const gcoll_calib_sweep_t *w, int nodes_lo, int nodes_hi,
                            int ppn)
{
    write_mpi_rows(f, w, nodes_lo, nodes_hi, ppn);
    size_t lo = w->rows_from;
    for (int s = 0, first = -1; s < w->nsizes; s++) {
        if (w->best[s] < 0) continue;
        if (first < 0) first = s;
        int next = s + 1;
        while (next < w->nsizes && w->best[next] < 0) next++;
        int last = next >= w->nsizes;
        int tried = has_rivals(w, s), same = !last && w->best[next] == w->best[s];
        if (same && has_rivals(w, next) == tried) continue;
        size_t hi = last ? GCOLL_TUNE_INF_SIZE
                  : same ? w->sizes[next] : crossover(w, s, next, w->best[s], w->best[next]);
        if (w->coll == GCOLL_COLL_BARRIER) lo = 0, hi = GCOLL_TUNE_INF_SIZE;
        gcoll_tune_row_t r = sweep_row(w->coll, nodes_lo, nodes_hi, ppn, lo, hi,
                                       w->algos[w->best[s]]);
        if (tried) row_rivals(w, first, s, &r);
        write_row(f, &r);
        lo = hi;
        first = -1;
        if (last) break;
    }
}

/* The write way each candidate was timed in (pick_way), where it chose. */
static void write_ways(FILE *f, const gcoll_calib_sweep_t *w)
{
    int any = 0;
    for (int s = 0; s < w->nsizes; s++)
        for (int a = 0; a < w->nalgos; a++) any |= w->t[s][a] >= 0 && w->way[s][a];
    if (!any) return;
    fprintf(f, "# %s write ways (c: through the cache, s: streamed; the segment's algorithms "
               "were timed in the faster):\n", gcoll_coll_name(w->coll));
    for (int s = 0; s < w->nsizes; s++) {
        char sz[32], line[1024];
        size_t len = 0;
        for (int a = 0; a < w->nalgos && len < sizeof(line) - 64; a++)
            if (w->t[s][a] >= 0 && w->way[s][a])
                len += (size_t)snprintf(line + len, sizeof(line) - len, " %s=%c",
                                        w->algos[a]->name,
                                        w->way[s][a] == GCOLL_SHM_STREAM_ON ? 's' : 'c');
        if (!len) continue;
        gcoll_tune_format_size(sz, sizeof sz, w->sizes[s]);
        fprintf(f, "#   %-6s%s\n", sz, line);
    }
}

void gcoll_calib_write_medians(FILE *f, const gcoll_calib_sweep_t *w, const char *note)
{
    fprintf(f, "# %s medians%s (us):\n", gcoll_coll_name(w->coll), note);
    for (int s = 0; s < w->nsizes; s++) {
        char sz[32];
        gcoll_tune_format_size(sz, sizeof sz, w->sizes[s]);
        fprintf(f, "#   %-6s", w->coll == GCOLL_COLL_BARRIER ? "-" : sz);
        for (int a = 0; a < w->nalgos; a++)
            if (w->t[s][a] >= 0)
                fprintf(f, " %s%s=%.2f",
                        a == w->best[s] || (is_mpi(w, a) && w->mpi_best[s]) ? "*" : "",
                        w->algos[a]->name, w->t[s][a] * 1e6);
        fprintf(f, "\n");
    }
    write_ways(f, w);
}
