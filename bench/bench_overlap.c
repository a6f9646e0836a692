/* SPDX-License-Identifier: BSD-3-Clause */
/* The overlap measurement of gcoll_bench_i<collective>, in the manner of
 * OSU's osu_iallreduce:
 *
 *   1. Pure communication: post + wait, nothing between (OSU's latency).
 *   2. A dummy compute calibrated to take about that time (per impl: the
 *      average over ranks of its pure time, so all ranks compute alike).
 *   3. Overall: post, compute, wait, timed as one; the compute's own time
 *      and the time in the post and in the wait are kept too.
 *   Overlap(%) = max(0, 100 * (1 - (overall - compute) / pure)): the share
 *   of the pure communication time that the compute hid.
 *
 * Each call is followed by an MPI_Barrier outside the timed region, as in
 * OSU, so that every call starts with the ranks together.  With --impl both
 * the gcoll and MPI blocks alternate (phase 1 for all blocks, then phase 3)
 * on the same buffers; pure is the median of its blocks, and the overlapped
 * times are those of the median block by overall time.
 *
 * The compute is a dependent floating-point loop on a small array whose
 * result stays live; it makes no libgcoll or MPI call (nor does it read the
 * clock), so whatever communication advances during it was advanced by
 * someone else: libgcoll's progress thread, or the MPI library's own
 * (Open MPI has none for collectives; OSU's default makes no MPI_Test
 * either).  Timing uses clock_gettime, outside the compute. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "bench_int.h"

#define OVL_DIM 16

static double ovl_x[OVL_DIM];     /* the compute's state, carried between calls */
static double ovl_ns_per_loop = 1.0;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* loops passes over OVL_DIM elements, each element a function of itself and
 * its neighbour (the last of the already updated first): a chain of
 * floating-point operations the compiler must perform in order (no
 * -ffast-math reassociation) and whose result goes to memory.  The fixed
 * point is x = 4, approached from below, so no value is ever denormal. */
__attribute__((noinline)) static void dummy_compute(long loops)
{
    double x[OVL_DIM];
    memcpy(x, ovl_x, sizeof x);
    for (long i = 0; i < loops; i++)
        for (int k = 0; k < OVL_DIM; k++)
            x[k] = 0.5 * x[k] + 0.25 * x[(k + 1) % OVL_DIM] + 1.0;
    memcpy(ovl_x, x, sizeof x);
}

static double time_compute(long loops)
{
    double t0 = now();
    dummy_compute(loops);
    return now() - t0;
}

void gcoll_bench_compute_calibrate(void)
{
    long n = 256;
    double t, best;
    for (int k = 0; k < OVL_DIM; k++) ovl_x[k] = (double)k / OVL_DIM;
    /* Grow until one run takes 2 ms, then the best of five: the rate of an
     * undisturbed core (a disturbed one shows in the Compute column). */
    while ((t = time_compute(n)) < 2e-3 && n < (1L << 40)) n *= 2;
    best = t;
    for (int k = 0; k < 5; k++)
        if ((t = time_compute(n)) < best) best = t;
    ovl_ns_per_loop = best * 1e9 / (double)n;
    if (ovl_ns_per_loop <= 0) ovl_ns_per_loop = 1e-3;
}

long gcoll_bench_compute_loops(double us)
{
    double n = us * 1e3 / ovl_ns_per_loop;
    return n < 1.0 ? (us > 0 ? 1 : 0) : (long)(n + 0.5);
}

/* ---- one call ------------------------------------------------------------ */

typedef struct {
    double overall, compute, post, wait;   /* seconds, summed over calls */
} ovl_acc_t;

static void gcoll_fail(const gcoll_bench_coll_t *coll, const gcoll_bench_args_t *a,
                       const char *what, gcoll_status_t st)
{
    fprintf(stderr, "rank %d: gcoll_i%s %s failed: %s: %s\n", a->rank,
            coll->algo_key ? coll->algo_key : coll->name, what, gcoll_strerror(st),
            gcoll_last_error());
    MPI_Abort(MPI_COMM_WORLD, GCOLL_BENCH_EXIT_FAIL);
}

static void timed_call(const gcoll_bench_coll_t *coll, const gcoll_bench_args_t *a, int impl,
                       long loops, ovl_acc_t *acc)
{
    gcoll_request_t greq = GCOLL_REQUEST_NULL;
    MPI_Request mreq = MPI_REQUEST_NULL;
    gcoll_status_t st = GCOLL_SUCCESS;
    double t0, t1, t2, t3;
    t0 = now();
    if (impl == GCOLL_BENCH_MPI) coll->post_mpi(a, &mreq);
    else st = coll->post_gcoll(a, &greq);
    t1 = now();
    if (st != GCOLL_SUCCESS) gcoll_fail(coll, a, "post", st);
    if (loops > 0) dummy_compute(loops);
    t2 = now();
    if (impl == GCOLL_BENCH_MPI) MPI_Wait(&mreq, MPI_STATUS_IGNORE);
    else st = gcoll_wait(&greq);
    t3 = now();
    if (st != GCOLL_SUCCESS) gcoll_fail(coll, a, "wait", st);
    if (acc) {
        acc->overall += t3 - t0, acc->compute += t2 - t1;
        acc->post += t1 - t0, acc->wait += t3 - t2;
    }
}

void gcoll_bench_nb_call(const gcoll_bench_coll_t *coll, const gcoll_bench_args_t *a, int impl,
                         long loops)
{
    timed_call(coll, a, impl, loops, NULL);
}

/* n calls, each followed by a barrier outside the timing; per-call means in
 * microseconds. */
static ovl_acc_t time_block(const gcoll_bench_coll_t *coll, const gcoll_bench_args_t *a,
                            int impl, long n, long loops)
{
    ovl_acc_t acc = { 0 };
    MPI_Barrier(MPI_COMM_WORLD);
    for (long i = 0; i < n; i++) {
        timed_call(coll, a, impl, loops, &acc);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    double s = 1e6 / (double)n;
    acc.overall *= s, acc.compute *= s, acc.post *= s, acc.wait *= s;
    return acc;
}

/* ---- one size ------------------------------------------------------------ */

enum { Q_OVERALL, Q_COMPUTE, Q_PURE, Q_POST, Q_WAIT, Q_N };

/* The middle block(s) of v[0..n) by value: *lo == *hi for odd n. */
static void median_blocks(const double *v, int n, int *lo, int *hi)
{
    int rank_of[2] = { (n - 1) / 2, n / 2 };
    int *out[2] = { lo, hi };
    for (int m = 0; m < 2; m++)
        for (int i = 0; i < n; i++) {
            int below = 0, equal_before = 0;
            for (int j = 0; j < n; j++) {
                below += v[j] < v[i];
                equal_before += j < i && v[j] == v[i];
            }
            if (below + equal_before == rank_of[m]) {   /* i's place in a stable sort */
                *out[m] = i;
                break;
            }
        }
}

long gcoll_bench_overlap_measure(const gcoll_bench_coll_t *coll, const gcoll_bench_opts_t *o,
                                 const gcoll_bench_args_t *a, long iters, gcoll_bench_row_t *row)
{
    const int NI = GCOLL_BENCH_NIMPL;
    int both = o->use[GCOLL_BENCH_GCOLL] && o->use[GCOLL_BENCH_MPI];
    int nb = both ? o->blocks : 1;
    long block = both ? (iters / nb > 0 ? iters / nb : 1) : iters;
    double *t = malloc(sizeof(double) * (size_t)nb * NI * Q_N);
    double q[GCOLL_BENCH_NIMPL * Q_N] = { 0 }, sum[GCOLL_BENCH_NIMPL * Q_N];
    double mine[GCOLL_BENCH_NIMPL], target[GCOLL_BENCH_NIMPL];
    double mn[GCOLL_BENCH_NIMPL], mx[GCOLL_BENCH_NIMPL];
    long loops[GCOLL_BENCH_NIMPL] = { 0 };
    if (!t) MPI_Abort(MPI_COMM_WORLD, GCOLL_BENCH_EXIT_FAIL);
#define T(impl, quant, k) t[((impl) * Q_N + (quant)) * nb + (k)]

    /* 1: pure communication.  Which side goes first alternates by block. */
    for (int k = 0; k < nb; k++)
        for (int j = 0; j < NI; j++) {
            int impl = (j + k) % NI;
            if (o->use[impl]) T(impl, Q_PURE, k) = time_block(coll, a, impl, block, 0).overall;
        }
    for (int impl = 0; impl < NI; impl++)
        mine[impl] = o->use[impl] ? gcoll_bench_median(&T(impl, Q_PURE, 0), nb) : 0.0;
    double pure[GCOLL_BENCH_NIMPL];
    memcpy(pure, mine, sizeof pure);

    /* 2: the compute each impl gets: as long as its pure time, averaged
     * over ranks so that every rank computes for the same time. */
    MPI_Allreduce(mine, target, NI, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    double est = 0.0;
    for (int impl = 0; impl < NI; impl++) {
        target[impl] /= a->size;
        if (o->use[impl]) loops[impl] = gcoll_bench_compute_loops(target[impl]);
        if (o->use[impl]) est += 2.0 * target[impl] * (double)(block * nb) * 1e-6;
    }
    if (a->rank == 0 && est > 2.0) {   /* a long phase 3: say what is going on */
        fprintf(stderr, "# %s: %zu bytes: pure comm.", coll->name, row->size);
        for (int impl = 0; impl < NI; impl++)
            if (o->use[impl]) fprintf(stderr, " %s %.1f us", gcoll_bench_impl_name(impl),
                                      target[impl]);
        fprintf(stderr, "; overlapped runs next (about %.0f s)\n", est);
        fflush(stderr);
    }

    /* 3: post + compute + wait. */
    for (int k = 0; k < nb; k++)
        for (int j = 0; j < NI; j++) {
            int impl = (j + k) % NI;
            if (!o->use[impl]) continue;
            ovl_acc_t r = time_block(coll, a, impl, block, loops[impl]);
            T(impl, Q_OVERALL, k) = r.overall, T(impl, Q_COMPUTE, k) = r.compute;
            T(impl, Q_POST, k) = r.post, T(impl, Q_WAIT, k) = r.wait;
        }
    /* The median block by overall time (the mean of the middle two for an
     * even count), all its quantities: post + compute + wait stays overall,
     * and the overlap is of one block's numbers. */
    for (int impl = 0; impl < NI; impl++) {
        if (!o->use[impl]) continue;
        double *v = q + impl * Q_N;
        int lo, hi;
        median_blocks(&T(impl, Q_OVERALL, 0), nb, &lo, &hi);
        for (int qu = 0; qu < Q_N; qu++)
            if (qu != Q_PURE) v[qu] = 0.5 * (T(impl, qu, lo) + T(impl, qu, hi));
        v[Q_PURE] = pure[impl];
    }
#undef T
    free(t);

    /* Averages over ranks, and the spread of the overall time. */
    for (int impl = 0; impl < NI; impl++) mine[impl] = q[impl * Q_N + Q_OVERALL];
    MPI_Reduce(q, sum, NI * Q_N, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(mine, mn, NI, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    MPI_Reduce(mine, mx, NI, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    for (int impl = 0; a->rank == 0 && impl < NI; impl++) {
        gcoll_bench_ovl_t *v = &row->ov[impl];
        const double *s = sum + impl * Q_N;
        v->overall = s[Q_OVERALL] / a->size, v->compute = s[Q_COMPUTE] / a->size;
        v->pure = s[Q_PURE] / a->size, v->post = s[Q_POST] / a->size;
        v->wait = s[Q_WAIT] / a->size;
        v->overall_min = mn[impl], v->overall_max = mx[impl];
        v->overlap = v->pure > 0 ? 100.0 * (1.0 - (v->overall - v->compute) / v->pure) : 0.0;
        if (v->overlap < 0.0) v->overlap = 0.0;
        if (v->overlap > 100.0) v->overlap = 100.0;
    }
    return block * nb;
}
