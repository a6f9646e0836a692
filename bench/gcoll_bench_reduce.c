/* SPDX-License-Identifier: BSD-3-Clause */
/* gcoll_bench_reduce: OSU-style latency of gcoll_reduce (sum) against
 * MPI_Reduce.  Inputs as for allreduce; only the root checks its output. */
#include "bench.h"

static void buf_elems(size_t count, int nranks, size_t *send, size_t *recv)
{
    (void)nranks;
    *send = *recv = count;
}

static gcoll_status_t run_gcoll(const gcoll_bench_args_t *a)
{
    return gcoll_reduce(a->send, a->recv, a->count, a->dtype, GCOLL_SUM, a->root, a->gcomm);
}

static int run_mpi(const gcoll_bench_args_t *a)
{
    return MPI_Reduce(a->send, a->recv, (int)a->count, a->mpi_dtype, MPI_SUM, a->root,
                      a->mcomm);
}

static int64_t input(const gcoll_bench_args_t *a, unsigned salt, size_t j)
{
    return gcoll_bench_red_a(a->rank, salt, a->dtype) + gcoll_bench_red_b(j, a->dtype);
}

static size_t out_elems(const gcoll_bench_args_t *a)
{
    return a->rank == a->root ? a->count : 0;
}

static int64_t output(const gcoll_bench_args_t *a, unsigned salt, size_t i)
{
    return gcoll_bench_red_sum(a->size, salt, i, a->dtype);
}

static const gcoll_bench_coll_t reduce = {
    .name = "reduce", .title = "Reduce", .has_root = 1, .reduces = 1, .has_size = 1,
    .buf_elems = buf_elems, .algbw_bytes = gcoll_bench_bytes_count,
    .busbw_factor = gcoll_bench_factor_one,
    .run_gcoll = run_gcoll, .run_mpi = run_mpi,
    .input = input, .out_elems = out_elems, .output = output,
};

int main(int argc, char **argv)
{
    return gcoll_bench_main(argc, argv, &reduce);
}
