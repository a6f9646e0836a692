/* SPDX-License-Identifier: BSD-3-Clause */
/* gcoll_bench_iallgather: OSU-style overlap of gcoll_iallgather with
 * computation, against MPI_Iallgather (osu_iallgather).  Size is each
 * rank's contribution (OSU); data and checks as gcoll_bench_allgather. */
#include "bench.h"

static void buf_elems(size_t count, int nranks, size_t *send, size_t *recv)
{
    *send = count, *recv = count * (size_t)nranks;
}

static gcoll_status_t post_gcoll(const gcoll_bench_args_t *a, gcoll_request_t *req)
{
    return gcoll_iallgather(a->send, a->recv, a->count, a->dtype, a->gcomm, req);
}

static int post_mpi(const gcoll_bench_args_t *a, MPI_Request *req)
{
    return MPI_Iallgather(a->send, (int)a->count, a->mpi_dtype, a->recv, (int)a->count,
                          a->mpi_dtype, a->mcomm, req);
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

static const gcoll_bench_coll_t iallgather = {
    .name = "iallgather", .title = "Non-blocking Allgather", .algo_key = "allgather",
    .has_size = 1,
    .buf_elems = buf_elems, .algbw_bytes = gcoll_bench_bytes_all,
    .busbw_factor = gcoll_bench_factor_nm1,
    .post_gcoll = post_gcoll, .post_mpi = post_mpi,
    .input = input, .out_elems = out_elems, .output = output,
};

int main(int argc, char **argv)
{
    return gcoll_bench_main(argc, argv, &iallgather);
}
