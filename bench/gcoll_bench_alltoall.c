/* SPDX-License-Identifier: BSD-3-Clause */
/* gcoll_bench_alltoall: OSU-style latency of gcoll_alltoall against
 * MPI_Alltoall.  Size is the block sent to each peer (OSU); algbw counts a
 * rank's whole buffer, ranks*Size (nccl-tests).  Values depend on source and
 * destination, so a block delivered to the wrong place is caught. */
#include "bench.h"

static void buf_elems(size_t count, int nranks, size_t *send, size_t *recv)
{
    *send = *recv = count * (size_t)nranks;
}

static gcoll_status_t run_gcoll(const gcoll_bench_args_t *a)
{
    return gcoll_alltoall(a->send, a->recv, a->count, a->dtype, a->gcomm);
}

static int run_mpi(const gcoll_bench_args_t *a)
{
    return MPI_Alltoall(a->send, (int)a->count, a->mpi_dtype, a->recv, (int)a->count,
                        a->mpi_dtype, a->mcomm);
}

/* Block d of the input goes to rank d. */
static int64_t input(const gcoll_bench_args_t *a, unsigned salt, size_t j)
{
    return gcoll_bench_move_val(a->rank, (int)(j / a->count), j % a->count, salt);
}

static size_t out_elems(const gcoll_bench_args_t *a)
{
    return a->count * (size_t)a->size;
}

/* Block q of the output came from rank q. */
static int64_t output(const gcoll_bench_args_t *a, unsigned salt, size_t i)
{
    return gcoll_bench_move_val((int)(i / a->count), a->rank, i % a->count, salt);
}

static const gcoll_bench_coll_t alltoall = {
    .name = "alltoall", .title = "All-to-All", .has_size = 1,
    .buf_elems = buf_elems, .algbw_bytes = gcoll_bench_bytes_all,
    .busbw_factor = gcoll_bench_factor_nm1,
    .run_gcoll = run_gcoll, .run_mpi = run_mpi,
    .input = input, .out_elems = out_elems, .output = output,
};

int main(int argc, char **argv)
{
    return gcoll_bench_main(argc, argv, &alltoall);
}
