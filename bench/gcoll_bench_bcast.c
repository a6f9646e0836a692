/* SPDX-License-Identifier: BSD-3-Clause */
/* gcoll_bench_bcast: OSU-style latency of gcoll_bcast against MPI_Bcast.
 * The root's buffer holds values tied to the root and the index; the other
 * ranks start from the sentinel, so an element never delivered is caught. */
#include "bench.h"

static void buf_elems(size_t count, int nranks, size_t *send, size_t *recv)
{
    (void)nranks;
    *send = 0, *recv = count;
}

static gcoll_status_t run_gcoll(const gcoll_bench_args_t *a)
{
    return gcoll_bcast(a->recv, a->count, a->dtype, a->root, a->gcomm);
}

static int run_mpi(const gcoll_bench_args_t *a)
{
    return MPI_Bcast(a->recv, (int)a->count, a->mpi_dtype, a->root, a->mcomm);
}

static int64_t value(const gcoll_bench_args_t *a, unsigned salt, size_t i)
{
    return gcoll_bench_move_val(a->root, 0, i, salt);
}

static size_t out_elems(const gcoll_bench_args_t *a)
{
    return a->count;
}

static const gcoll_bench_coll_t bcast = {
    .name = "bcast", .title = "Broadcast", .has_root = 1, .has_size = 1, .input_in_recv = 1,
    .buf_elems = buf_elems, .algbw_bytes = gcoll_bench_bytes_count,
    .busbw_factor = gcoll_bench_factor_one,
    .run_gcoll = run_gcoll, .run_mpi = run_mpi,
    .input = value, .out_elems = out_elems, .output = value,
};

int main(int argc, char **argv)
{
    return gcoll_bench_main(argc, argv, &bcast);
}
