/* SPDX-License-Identifier: BSD-3-Clause */
/* gcoll_bench_allgather: OSU-style latency of gcoll_allgather against
 * MPI_Allgather.  Size is each rank's contribution (OSU); algbw counts the
 * whole gathered buffer, ranks*Size (nccl-tests). */
#include "bench.h"

static void buf_elems(size_t count, int nranks, size_t *send, size_t *recv)
{
    *send = count, *recv = count * (size_t)nranks;
}

static gcoll_status_t run_gcoll(const gcoll_bench_args_t *a)
{
    return gcoll_allgather(a->send, a->recv, a->count, a->dtype, a->gcomm);
}

static int run_mpi(const gcoll_bench_args_t *a)
{
    return MPI_Allgather(a->send, (int)a->count, a->mpi_dtype, a->recv, (int)a->count,
                         a->mpi_dtype, a->mcomm);
}

static int64_t input(const gcoll_bench_args_t *a, unsigned salt, size_t j)
{
    return gcoll_bench_move_val(a->rank, 0, j, salt);
}

static size_t out_elems(const gcoll_bench_args_t *a)
{
    return a->count * (size_t)a->size;
}

/* Block q of the output is rank q's input. */
static int64_t output(const gcoll_bench_args_t *a, unsigned salt, size_t i)
{
    return gcoll_bench_move_val((int)(i / a->count), 0, i % a->count, salt);
}

static const gcoll_bench_coll_t allgather = {
    .name = "allgather", .title = "Allgather", .has_size = 1,
    .buf_elems = buf_elems, .algbw_bytes = gcoll_bench_bytes_all,
    .busbw_factor = gcoll_bench_factor_nm1,
    .run_gcoll = run_gcoll, .run_mpi = run_mpi,
    .input = input, .out_elems = out_elems, .output = output,
};

int main(int argc, char **argv)
{
    return gcoll_bench_main(argc, argv, &allgather);
}
