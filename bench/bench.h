/* SPDX-License-Identifier: BSD-3-Clause */
/* OSU-style benchmarks of libgcoll.  Each gcoll_bench_<collective> program is
 * one descriptor (gcoll_bench_coll_t: how to call the collective through
 * libgcoll and through MPI, what its inputs are and what its outputs must be)
 * and a main() that hands it to gcoll_bench_main(), which owns the options,
 * buffers, timing, statistics, validation and output.  Keeping the
 * per-collective part this small makes the seven programs measure alike.
 * The overlap programs (gcoll_bench_iallreduce, _ibcast, _iallgather) are
 * descriptors too, with the nonblocking posts set. */
#ifndef GCOLL_BENCH_H
#define GCOLL_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <mpi.h>
#include "gcoll.h"

/* What one call of the collective works on.  send/recv are the buffers the
 * collective sees (host or device memory); hsend/hrecv are their host images,
 * where inputs are written and outputs read back (the same pointers for host
 * buffers). */
typedef struct {
    void          *send, *recv;
    void          *hsend, *hrecv;
    size_t         count;       /* elements, as the collective's count argument */
    gcoll_dtype_t  dtype;
    size_t         dt_size;
    MPI_Datatype   mpi_dtype;   /* MPI_DATATYPE_NULL: MPI cannot run this case */
    int            root;
    int            rank, size;
    gcoll_comm_t   gcomm;
    MPI_Comm       mcomm;       /* duplicate of MPI_COMM_WORLD for the MPI runs */
} gcoll_bench_args_t;

typedef struct {
    const char *name;       /* "allreduce": the GCOLL_ALGO key */
    const char *title;      /* "Allreduce", for the header */
    int         has_root;   /* takes -r */
    int         reduces;    /* sums: MPI needs a reduction for the dtype */
    int         has_size;   /* 0 for barrier: one row, no message size */
    int         input_in_recv; /* bcast: the root's input is its recv buffer */
    /* Element counts of the send and receive buffers for a call of count. */
    void    (*buf_elems)(size_t count, int nranks, size_t *send, size_t *recv);
    /* Bytes nccl-tests divides by the time for algbw, for a call of count. */
    double  (*algbw_bytes)(size_t count, size_t dt_size, int nranks);
    double  (*busbw_factor)(int nranks);
    gcoll_status_t (*run_gcoll)(const gcoll_bench_args_t *a);
    int            (*run_mpi)(const gcoll_bench_args_t *a);
    /* Input element j of this rank (of send, or of recv if input_in_recv). */
    int64_t (*input)(const gcoll_bench_args_t *a, unsigned salt, size_t j);
    /* How many leading elements of recv this rank must check afterwards. */
    size_t  (*out_elems)(const gcoll_bench_args_t *a);
    /* Expected output element i, computed independently of any collective. */
    int64_t (*output)(const gcoll_bench_args_t *a, unsigned salt, size_t i);
    /* Overlap benchmarks (gcoll_bench_i<collective>, bench_overlap.c): the
     * nonblocking posts.  When set, run_gcoll/run_mpi are not used (a call
     * is post + wait) and the driver measures OSU's overlap, not latency. */
    gcoll_status_t (*post_gcoll)(const gcoll_bench_args_t *a, gcoll_request_t *req);
    int            (*post_mpi)(const gcoll_bench_args_t *a, MPI_Request *req);
    const char *algo_key;   /* GCOLL_ALGO key when it is not name ("allreduce") */
} gcoll_bench_coll_t;

/* Run the benchmark described by coll; returns main()'s exit status. */
int gcoll_bench_main(int argc, char **argv, const gcoll_bench_coll_t *coll);

/* ---- nccl-tests bandwidth conventions (bench_data.c) ------------------ */
double gcoll_bench_bytes_count(size_t count, size_t dt_size, int nranks);   /* count */
double gcoll_bench_bytes_all(size_t count, size_t dt_size, int nranks);     /* n*count */
double gcoll_bench_factor_one(int nranks);                                  /* 1 */
double gcoll_bench_factor_allreduce(int nranks);                            /* 2(n-1)/n */
double gcoll_bench_factor_nm1(int nranks);                                  /* (n-1)/n */

/* ---- data: exact small integers in any dtype (bench_data.c) ---------- */

/* Store v: wrapped (two's complement) for integer types, rounded to nearest
 * for floats, which is exact for the small values the benchmarks use. */
void    gcoll_bench_elem_set(void *buf, size_t i, gcoll_dtype_t t, int64_t v);
/* Element i as a double, for messages. */
double  gcoll_bench_elem_get(const void *buf, size_t i, gcoll_dtype_t t);
/* 1 if element i of buf is v encoded in t, bit for bit. */
int     gcoll_bench_elem_equal(const void *buf, size_t i, gcoll_dtype_t t, int64_t v);
/* Value written where an output is expected: -1, which no valid output of
 * a float type equals (they are all positive). */
#define GCOLL_BENCH_SENTINEL (-1)

/* Inputs of the summing collectives: element j of rank r is
 * red_a(r, salt) + red_b(j), so the sum over n ranks is
 * red_sum_a(n, salt) + n * red_b(j): known in closed form, no MPI involved.
 * The ranges shrink for 16-bit floats so that partial sums stay exact. */
int64_t gcoll_bench_red_a(int rank, unsigned salt, gcoll_dtype_t t);
int64_t gcoll_bench_red_b(size_t j, gcoll_dtype_t t);
int64_t gcoll_bench_red_sum(int nranks, unsigned salt, size_t j, gcoll_dtype_t t);
/* 0 if a sum over nranks can exceed the integers the float dtype holds
 * exactly (then a correct result may differ from the closed form). */
int     gcoll_bench_red_exact(int nranks, gcoll_dtype_t t);

/* Payload of the moving collectives: a value in [1, 97] that depends on the
 * source rank, destination rank, element index and salt, so that a block in
 * the wrong place or a stale buffer is caught.  Exact in every dtype. */
int64_t gcoll_bench_move_val(int src, int dst, size_t i, unsigned salt);

#endif /* GCOLL_BENCH_H */
