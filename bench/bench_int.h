/* SPDX-License-Identifier: BSD-3-Clause */
/* Internals shared by the benchmark driver's files: options (bench_opts.c),
 * the measurement loop (bench_common.c) and output (bench_output.c). */
#ifndef GCOLL_BENCH_INT_H
#define GCOLL_BENCH_INT_H

#include <stdio.h>
#include "bench.h"
#include "bench_mem.h"

enum { GCOLL_BENCH_GCOLL = 0, GCOLL_BENCH_MPI = 1, GCOLL_BENCH_NIMPL = 2 };

/* --algos: at most this many variants in one launch */
#define GCOLL_BENCH_MAXVAR 16

/* Exit codes: usage errors and impossible combinations are 2; a device
 * placement this machine cannot serve is 77, which automake reads as SKIP. */
#define GCOLL_BENCH_EXIT_FAIL  1
#define GCOLL_BENCH_EXIT_USAGE 2
#define GCOLL_BENCH_EXIT_SKIP  77

typedef struct {
    size_t        min_size, max_size;  /* bytes */
    long          iters, warmup;       /* -1: by size (gcoll_bench_default_iters) */
    int           full;                /* -f */
    int           validate;            /* -c */
    int           mem;                 /* -d: gcoll_bench_mem_t */
    gcoll_dtype_t dtype;               /* -T */
    int           root;                /* -r */
    int           use[GCOLL_BENCH_NIMPL]; /* --impl */
    int           blocks;              /* --blocks: interleaved blocks with --impl both */
    const char   *algo;                /* --algo, or NULL */
    int           nalgos;              /* --algos: variants compared in one launch, or 0 */
    char         *algos[GCOLL_BENCH_MAXVAR];   /* "auto" (the default selection) or a name */
    char          algos_buf[512];
    const char   *csv, *json;          /* --csv, --json, or NULL */
} gcoll_bench_opts_t;

/* Parse argv.  Returns -1 to go on, else the exit status (after -h: 0).
 * Only rank 0 prints. */
int gcoll_bench_parse(int argc, char **argv, const gcoll_bench_coll_t *coll, int rank,
                      gcoll_bench_opts_t *o);
void gcoll_bench_default_iters(size_t bytes, long *iters, long *warmup);

typedef struct {
    double avg, min, max;   /* latency in microseconds, over ranks */
    double algbw, busbw;    /* GB/s (1e9 bytes), from avg */
} gcoll_bench_stat_t;

/* Overlap benchmarks: microseconds per call, averaged over ranks (min/max:
 * of overall, over ranks), and OSU's overlap from the averages. */
typedef struct {
    double overall, compute, pure;      /* post+compute+wait, compute, post+wait */
    double post, wait;                  /* of overall: in the post, in the wait */
    double overall_min, overall_max;
    double overlap;                     /* %: max(0, 100 * (1 - (overall - compute) / pure)) */
} gcoll_bench_ovl_t;

typedef struct {
    size_t             size, count;
    long               iters;           /* per impl */
    gcoll_bench_stat_t st[GCOLL_BENCH_NIMPL];
    gcoll_bench_ovl_t  ov[GCOLL_BENCH_NIMPL];   /* overlap benchmarks only */
} gcoll_bench_row_t;

/* Output, on rank 0 only: stdout as OSU does, CSV and JSON files. */
typedef struct {
    const gcoll_bench_coll_t *coll;
    const gcoll_bench_opts_t *o;
    int                nranks;
    FILE              *csv;
    gcoll_bench_row_t *rows;
    size_t             nrows, cap;
    int                failed;    /* no averages after a failed run */
} gcoll_bench_out_t;

int  gcoll_bench_out_open(gcoll_bench_out_t *out, const gcoll_bench_coll_t *coll,
                          const gcoll_bench_opts_t *o, int nranks);
void gcoll_bench_out_header(gcoll_bench_out_t *out);
void gcoll_bench_out_row(gcoll_bench_out_t *out, const gcoll_bench_row_t *row);
/* --algos: one row of microseconds per call, one column per variant. */
void gcoll_bench_out_variants_row(size_t size, const double *us, int n);
/* Final lines and the JSON file; returns 0, or 1 if a file could not be written. */
int  gcoll_bench_out_close(gcoll_bench_out_t *out);

const char *gcoll_bench_impl_name(int impl);

/* ---- overlap benchmarks (bench_overlap.c) ------------------------------ */

/* 1 if coll is an overlap benchmark (has the nonblocking posts). */
#define GCOLL_BENCH_OVERLAP(coll) ((coll)->post_gcoll != NULL)
/* Time the dummy compute on this rank; call once, before any size. */
void gcoll_bench_compute_calibrate(void);
/* Loops of the dummy compute that take about us microseconds here. */
long gcoll_bench_compute_loops(double us);
/* One call: post, compute for loops (0: none), wait.  Aborts the job if the
 * gcoll post or wait fails (the peers would wait forever). */
void gcoll_bench_nb_call(const gcoll_bench_coll_t *coll, const gcoll_bench_args_t *a, int impl,
                         long loops);
/* Pure communication, calibrated compute and overlapped runs of one size
 * (iters per impl, in blocks as measure() does); fills row->ov and returns
 * the iterations per impl. */
long gcoll_bench_overlap_measure(const gcoll_bench_coll_t *coll, const gcoll_bench_opts_t *o,
                                 const gcoll_bench_args_t *a, long iters, gcoll_bench_row_t *row);
double gcoll_bench_median(double *v, int n);

#endif
