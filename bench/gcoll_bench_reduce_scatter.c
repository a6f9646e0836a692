/* SPDX-License-Identifier: BSD-3-Clause */
/* gcoll_bench_reduce_scatter: OSU-style latency of gcoll_reduce_scatter
 * (sum) against MPI_Reduce_scatter_block.  Size is the block each rank
 * receives, so any size runs on any number of ranks; algbw counts the whole
 * input, ranks*Size (nccl-tests). */
#include "bench.h"

static void buf_elems(size_t count, int nranks, size_t *send, size_t *recv)
{
    *send = count * (size_t)nranks, *recv = count;
}

static gcoll_status_t run_gcoll(const gcoll_bench_args_t *a)
{
    return gcoll_reduce_scatter(a->send, a->recv, a->count, a->dtype, GCOLL_SUM, a->gcomm);
}

static int run_mpi(const gcoll_bench_args_t *a)
{
    return MPI_Reduce_scatter_block(a->send, a->recv, (int)a->count, a->mpi_dtype, MPI_SUM,
                                    a->mcomm);
}

static int64_t input(const gcoll_bench_args_t *a, unsigned salt, size_t j)
{
    return gcoll_bench_red_a(a->rank, salt, a->dtype) + gcoll_bench_red_b(j, a->dtype);
}

static size_t out_elems(const gcoll_bench_args_t *a)
{
    return a->count;
}

/* This rank receives the sum of block `rank` of every input. */
static int64_t output(const gcoll_bench_args_t *a, unsigned salt, size_t i)
{
    return gcoll_bench_red_sum(a->size, salt, (size_t)a->rank * a->count + i, a->dtype);
}

static const gcoll_bench_coll_t reduce_scatter = {
    .name = "reduce_scatter", .title = "Reduce_scatter", .reduces = 1, .has_size = 1,
    .buf_elems = buf_elems, .algbw_bytes = gcoll_bench_bytes_all,
    .busbw_factor = gcoll_bench_factor_nm1,
    .run_gcoll = run_gcoll, .run_mpi = run_mpi,
    .input = input, .out_elems = out_elems, .output = output,
};

int main(int argc, char **argv)
{
    return gcoll_bench_main(argc, argv, &reduce_scatter);
}
