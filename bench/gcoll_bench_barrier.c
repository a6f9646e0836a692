/* SPDX-License-Identifier: BSD-3-Clause */
/* gcoll_bench_barrier: OSU-style latency of gcoll_barrier against
 * MPI_Barrier.  One row (size 0); no data, so nothing for -c to check. */
#include "bench.h"

static void buf_elems(size_t count, int nranks, size_t *send, size_t *recv)
{
    (void)count, (void)nranks;
    *send = *recv = 0;
}

static double no_bytes(size_t count, size_t dt_size, int nranks)
{
    (void)count, (void)dt_size, (void)nranks;
    return 0.0;
}

static gcoll_status_t run_gcoll(const gcoll_bench_args_t *a)
{
    return gcoll_barrier(a->gcomm);
}

static int run_mpi(const gcoll_bench_args_t *a)
{
    return MPI_Barrier(a->mcomm);
}

static int64_t nothing(const gcoll_bench_args_t *a, unsigned salt, size_t i)
{
    (void)a, (void)salt, (void)i;
    return 0;
}

static size_t out_elems(const gcoll_bench_args_t *a)
{
    (void)a;
    return 0;
}

static const gcoll_bench_coll_t barrier = {
    .name = "barrier", .title = "Barrier",
    .buf_elems = buf_elems, .algbw_bytes = no_bytes,
    .busbw_factor = gcoll_bench_factor_one,
    .run_gcoll = run_gcoll, .run_mpi = run_mpi,
    .input = nothing, .out_elems = out_elems, .output = nothing,
};

int main(int argc, char **argv)
{
    return gcoll_bench_main(argc, argv, &barrier);
}
