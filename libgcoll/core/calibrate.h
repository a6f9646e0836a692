/* SPDX-License-Identifier: BSD-3-Clause */
/* Measuring algorithms on a live communicator and turning the measurements
 * into selection-table rows.  The one measuring core of gcoll_tune (long,
 * thorough sweeps) and of the calibration at communicator creation
 * (core/tune_cache.c: a few seconds, cached per machine and shape).
 *
 * How a size is measured: every algorithm of the collective that builds a
 * schedule here (gcoll_select_try, agreed by all ranks) is forced in turn
 * (gcoll_select_force, what GCOLL_ALGO does) and timed in blocks: an
 * MPI_Barrier, one untimed call to line the ranks up, then calls timed with
 * MPI_Wtime; a block's time is the slowest rank's.  The algorithms' blocks
 * are interleaved (the order rotating per block), so a machine changing speed
 * affects all alike; an algorithm's time is the median of its blocks (of
 * every pass over the size: gcoll_calib_confirm adds a second, and
 * gcoll_calib_steady more where the machine was disturbed).  With
 * pruning, an algorithm clearly behind the leader after its first one or two
 * blocks is not timed further (its time is then the mean of those blocks).
 *
 * Winners and rows: per size the fastest algorithm wins (among those within
 * 3% of it, the previous size's winner, else the one fastest at the most
 * sizes, so noise between level algorithms does not split a range); the
 * crossover between two measured sizes is placed where the two winners'
 * times cross on a log-log line, rounded to a power of two.
 *
 * The application's MPI as a candidate (gcoll_calib_add_mpi, allreduce
 * only): PMPI_Allreduce on the communicator's MPI communicator, timed in
 * the same interleaved blocks, under the pseudo-algorithm gcoll_tune_mpi.
 * It never becomes a size's libgcoll winner (w->best: what libgcoll's own
 * calls run); it wins a size for the drop-in (w->mpi_best) where it is 5%
 * faster than that winner, and keeps winning the next sizes while it is
 * faster at all (hysteresis: noise around a tie does not split a range
 * into many).  Its rows come before the libgcoll rows of the same sweep. */
#ifndef GCOLL_CALIBRATE_H
#define GCOLL_CALIBRATE_H

#include <stddef.h>
#include <stdio.h>
#include "gcoll.h"
#include "algos/algo.h"

#define GCOLL_CALIB_MAX_SIZES  48
#define GCOLL_CALIB_MAX_ALGOS  10   /* allreduce's 8, the MPI's, one spare */
#define GCOLL_CALIB_MAX_BLOCKS 15   /* a pass, confirm's, three of gcoll_calib_steady's */

typedef struct {
    double block_s;       /* target seconds per timed block */
    int    nblocks;       /* timed blocks per algorithm and size, odd, <= MAX_BLOCKS */
    long   max_iters;     /* calls per block at most */
    int    warmup_calls;  /* untimed calls before sizing the blocks (besides the probe's own) */
    int    probe_calls;   /* calls timed to size the blocks */
    double prune1;        /* > 1: after one block, drop algorithms slower than prune1 x the
                           * fastest; 0: never */
    double prune2;        /* > 1: after two blocks, drop algorithms whose faster block is
                           * slower than prune2 x the leader's slower one; 0: never */
} gcoll_calib_timing_t;

/* gcoll_tune's: 50 ms blocks (many 4 ms scheduler ticks, so that ranks
 * sharing CPUs are timed over a representative mix of who runs when), 5 of
 * them, every algorithm timed in full. */
extern const gcoll_calib_timing_t gcoll_calib_timing_tune;
/* Communicator creation's: short blocks, pruning, a few seconds in all. */
extern const gcoll_calib_timing_t gcoll_calib_timing_quick;

typedef struct {
    gcoll_coll_t        coll;
    int                 nsizes, nalgos;
    size_t              rows_from;   /* the rows start here (0: the first covers 0 up);
                                      * smaller sizes keep the next table's rows */
    double              rival_within; /* rows' rivals (try=): this close to the winner;
                                       * 0: GCOLL_CALIB_RIVAL_WITHIN */
    unsigned            rival_only;   /* bit a: algos[a] is timed, never a winner */
    size_t              sizes[GCOLL_CALIB_MAX_SIZES];          /* ascending */
    const gcoll_algo_t *algos[GCOLL_CALIB_MAX_ALGOS];
    double              t[GCOLL_CALIB_MAX_SIZES][GCOLL_CALIB_MAX_ALGOS]; /* s per call; < 0:
                                                                * not applicable, not timed */
    int                 best[GCOLL_CALIB_MAX_SIZES];           /* index into algos, -1: none;
                                                                * never the MPI candidate */
    unsigned char       mpi_best[GCOLL_CALIB_MAX_SIZES];       /* the MPI candidate wins */
    double              spread[GCOLL_CALIB_MAX_SIZES][GCOLL_CALIB_MAX_ALGOS]; /* slowest over
                                                                * fastest block; 0: pruned */
    /* every block timed so far (s per call) and the calls per block */
    double              blk[GCOLL_CALIB_MAX_SIZES][GCOLL_CALIB_MAX_ALGOS][GCOLL_CALIB_MAX_BLOCKS];
    unsigned char       nblk[GCOLL_CALIB_MAX_SIZES][GCOLL_CALIB_MAX_ALGOS];
    long                iters[GCOLL_CALIB_MAX_SIZES][GCOLL_CALIB_MAX_ALGOS];
    /* the node's write way while the algorithm is timed at the size
     * (gcoll_shm_stream_t; 0: the communicator's), picked when first sized */
    unsigned char       way[GCOLL_CALIB_MAX_SIZES][GCOLL_CALIB_MAX_ALGOS];
} gcoll_calib_sweep_t;

/* How steady the machine was: the median over sizes of the winner's block
 * spread (1.0: every block alike), and the largest. */
void gcoll_calib_noise(const gcoll_calib_sweep_t *w, double *median, double *worst);

/* A measuring session: the communicator and buffers holding real data. */
typedef struct {
    gcoll_comm_t         comm;
    float               *send, *recv;
    size_t               send_cap, recv_cap;   /* bytes of each */
    gcoll_calib_timing_t timing;
    int                  timed;        /* blocks timed so far (all sizes, all algorithms) */
    int                  via_mpi;      /* the candidate being timed is the MPI's collective */
    int                  shm_stream;   /* the communicator's write way (gcoll_shm_stream_t),
                                        * put back after each measurement */
} gcoll_calib_t;

/* Send and receive buffers of send_cap and recv_cap bytes (allreduce,
 * bcast, reduce up to the smaller; allgather up to recv_cap / ranks per
 * rank, reduce_scatter and alltoall up to the smaller / ranks), every page
 * written: an untouched calloc reads as the kernel's zero page, always in
 * L1, which made large calls look up to 1.5x faster than on real data. */
gcoll_status_t gcoll_calib_init(gcoll_calib_t *c, gcoll_comm_t comm, size_t send_cap,
                                size_t recv_cap, const gcoll_calib_timing_t *timing);
void gcoll_calib_fini(gcoll_calib_t *c);

/* Sizes min, min*step, ... up to max (barrier: one "size", 0), and every
 * registered algorithm of coll. */
void gcoll_calib_plan(gcoll_calib_sweep_t *w, gcoll_coll_t coll, size_t min, size_t max, int step);
/* The given sizes (ascending), every registered algorithm of coll. */
void gcoll_calib_plan_sizes(gcoll_calib_sweep_t *w, gcoll_coll_t coll, const size_t *sizes, int n);
/* The application's MPI collective as one more candidate (allreduce only:
 * the one collective calibrated; a no-op for the others). */
void gcoll_calib_add_mpi(gcoll_calib_sweep_t *w);
/* The algorithm called name is timed and may be a row's rival, never its
 * winner (a no-op if absent). */
void gcoll_calib_rival_only(gcoll_calib_sweep_t *w, const char *name);
/* Take the algorithm called name out of the plan (a no-op if absent). */
void gcoll_calib_drop(gcoll_calib_sweep_t *w, const char *name);

/* Time every applicable algorithm at w->sizes[si] (collective over the
 * communicator).  A failed call fails every rank alike (the status of the
 * rank that failed, a sentence on the others); selection is back to the
 * table afterwards either way. */
gcoll_status_t gcoll_calib_measure(gcoll_calib_t *c, gcoll_calib_sweep_t *w, int si);

/* Winners per size (w->best). */
void gcoll_calib_pick(gcoll_calib_sweep_t *w);

/* Where the winners of two neighbouring sizes differ and the sizes are 4x or
 * more apart, measure the two at a power of two between them, so the
 * crossover is placed from a measurement, not a long interpolation; then
 * pick again.  Adds at most max_new sizes.  Collective. */
gcoll_status_t gcoll_calib_refine(gcoll_calib_t *c, gcoll_calib_sweep_t *w, int max_new);

/* Time each size's winner and runner-up again, a few blocks each, and
 * pick again from all their blocks: an algorithm whose speed depends on
 * where the scheduler happens to put the ranks (two ranks of a node on one
 * core or two, when ranks outnumber cores) can be fast for a while and slow
 * for the next; one measurement taken while it was fast would cache it.
 * The blocks go one per size per round, timing.nblocks rounds over all the
 * sizes, so a size's confirming blocks are spread over the whole step.
 * Collective. */
gcoll_status_t gcoll_calib_confirm(gcoll_calib_t *c, gcoll_calib_sweep_t *w);

/* Time again what a disturbed machine may have got wrong, and pick again
 * from all the blocks.  Two signs of it:
 *  - a size is disturbed while its winner's median block is more than
 *    GCOLL_CALIB_DISTURBED x its fastest one (a steady machine gives
 *    1.0-1.1; a rank descheduled for ticks makes the median itself a slow
 *    block, and the winner is then whoever ran in the quiet moments): its
 *    winner and every candidate within 1.5x of it get one more pass, while
 *    their blocks fit (GCOLL_CALIB_MAX_BLOCKS); so does a disturbed rival
 *    whose fastest block beats the winner's median, with the winner (a
 *    disturbance slows algorithms unequally: a steady winner can hide a
 *    disturbed one that is faster);
 *  - an algorithm's time at a size is implausible beside its time at a
 *    neighbouring size (3x more than linear growth from the smaller one, or
 *    3x slower than at the larger one): another program took the CPUs while
 *    that size was timed, and a single slow block is enough to drop the true
 *    winner.  It gets one more pass there, with the winner, once.
 * A median over more blocks, most of them quiet, is the machine's own speed;
 * on a quiet machine little or nothing is timed again, and at most 150
 * more blocks are timed on a disturbed one.  *left: sizes still
 * disturbed at the end.  Collective. */
#define GCOLL_CALIB_DISTURBED 1.5
gcoll_status_t gcoll_calib_steady(gcoll_calib_t *c, gcoll_calib_sweep_t *w, int *left);
/* Its plan for size s (pure): what to time again (use[], per algorithm),
 * nblocks more blocks each; retried[] (per algorithm, at this size) marks
 * the implausible times already timed again.  Returns whether anything is. */
int gcoll_calib_again(const gcoll_calib_sweep_t *w, int s, int nblocks, unsigned char *retried,
                      int *use);

/* Table rows for the winners: first an mpi row per run of sizes the MPI
 * candidate wins, then one row per run of sizes with the same libgcoll
 * winner, keyed nodes_lo..nodes_hi, ppn, host memory; the first libgcoll
 * row starts at 0 bytes, the last ends at inf.  A libgcoll row names as
 * rivals (try=) the algorithms within w->rival_within (default
 * GCOLL_CALIB_RIVAL_WITHIN) of its winner at one of its sizes: the job's own calls time them against it
 * (core/select_online.h).  1.25: 4 ranks as 2 nodes on 2 CPUs, 64 KiB,
 * the three fastest algorithms were 27-44 us apart from launch to launch,
 * each fastest in some placement; beyond 1.25 a rival's try costs more
 * than it is likely to win. */
#define GCOLL_CALIB_RIVAL_WITHIN 1.25
/* Rivals only where the winner's call takes between these (a row that
 * spans either is split there).  Above the upper one: a try times every
 * candidate on ten calls at least, which a benchmark's 30 calls of 16 MiB
 * cannot absorb, and the calls are bandwidth-bound, where a calibration's
 * placement matters little (4 ranks as 2 nodes: 1 MiB and 16 MiB within
 * 10% of the best in every selection check without tries; with them,
 * 1 MiB at 1.25-1.27).  50 us, not 100 or 200: the 2-rank 1 MiB calls take
 * 100-110 us, and where a calibration timed them under the bound their
 * tries made the check's 110 calls of 1 MiB 1.13-1.18x slower than the
 * algorithm they kept (3 of 8 checks).  Below the lower one the tries did not find what
 * the launch's own forced timings found, even in samples of 4-6 calls
 * (8 B, 4 ranks as 2 nodes on 2 CPUs: hier_leader 5.30 us in the try,
 * 3.13 over the launch, hier 3.42 and 3.39), and cost 2-8% there: the
 * calibration's choice held as often without them. */
#define GCOLL_CALIB_RIVAL_MIN_SECS 10e-6
#define GCOLL_CALIB_RIVAL_MAX_SECS 50e-6
void gcoll_calib_write_rows(FILE *f, const gcoll_calib_sweep_t *w, int nodes_lo, int nodes_hi,
                            int ppn);

/* The measured medians as comment lines ("*" marks the winner). */
void gcoll_calib_write_medians(FILE *f, const gcoll_calib_sweep_t *w, const char *note);

#endif
