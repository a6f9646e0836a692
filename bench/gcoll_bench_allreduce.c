/* SPDX-License-Identifier: BSD-3-Clause */
/* gcoll_bench_allreduce: OSU-style latency of gcoll_allreduce (sum) against
 * MPI_Allreduce.  Rank r's element j is a(r) + b(j), so every output element
 * is sum_r a(r) + n*b(j), computed in closed form for -c. */
#include "bench.h"

static void buf_elems(size_t count, int nranks, size_t *send, size_t *recv)
{
    (void)nranks;
    *send = *recv = count;
}

static gcoll_status_t run_gcoll(const gcoll_bench_args_t *a)
{
    return gcoll_allreduce(a->send, a->recv, a->count, a->dtype, GCOLL_SUM, a->gcomm);
}

static int run_mpi(const gcoll_bench_args_t *a)
{
    return MPI_Allreduce(a->send, a->recv, (int)a->count, a->mpi_dtype, MPI_SUM, a->mcomm);
}

static int64_t input(const gcoll_bench_args_t *a, unsigned salt, size_t j)
{
    return gcoll_bench_red_a(a->rank, salt, a->dtype) + gcoll_bench_red_b(j, a->dtype);
}

static size_t out_elems(const gcoll_bench_args_t *a)
{
    return a->count;
}

static int64_t output(const gcoll_bench_args_t *a, unsigned salt, size_t i)
{
    return gcoll_bench_red_sum(a->size, salt, i, a->dtype);
}

static const gcoll_bench_coll_t allreduce = {
    .name = "allreduce", .title = "Allreduce", .reduces = 1, .has_size = 1,
    .buf_elems = buf_elems, .algbw_bytes = gcoll_bench_bytes_count,
    .busbw_factor = gcoll_bench_factor_allreduce,
    .run_gcoll = run_gcoll, .run_mpi = run_mpi,
    .input = input, .out_elems = out_elems, .output = output,
};

int main(int argc, char **argv)
{
    return gcoll_bench_main(argc, argv, &allreduce);
}
