/* SPDX-License-Identifier: BSD-3-Clause */
/* gcoll_bench_allreduce_compressed: OSU-style latency of
 * gcoll_allreduce_compressed (float32 sum) against MPI_Allreduce.
 *
 * The codec comes from GCOLL_BENCH_CODEC: bf16, topk[:RATIO] (default
 * 0.01), onebit[:BLOCK] (default 2048) or none.  One compressor per message
 * size, made by the first (warm-up) call of that size.  Results are lossy
 * by design, so -c checks nothing here: test/mpi/test_compress_mpi checks
 * them against a serial reference.  Inputs are pseudo-random integers in
 * [-1000, 1000], not the allreduce benchmark's eight distinct values: how
 * many values tie changes TopK's selection cost (a tensor of ties is its
 * worst case, ~3x slower), and gradients rarely tie. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bench.h"

static gcoll_compress_params_t params;
static gcoll_compressor_t compressor;
static size_t compressor_count = (size_t)-1;

static int parse_codec(void)
{
    const char *e = getenv("GCOLL_BENCH_CODEC");
    char name[32] = "topk";
    const char *colon = e ? strchr(e, ':') : NULL;
    if (e) snprintf(name, sizeof name, "%.*s", colon ? (int)(colon - e) : (int)strlen(e), e);
    for (int k = 0; k < GCOLL_COMPRESS_COUNT; k++)
        if (!strcmp(name, gcoll_compress_name((gcoll_compress_t)k))) params.kind = (gcoll_compress_t)k;
    if (strcmp(name, gcoll_compress_name(params.kind))) {
        fprintf(stderr, "GCOLL_BENCH_CODEC=%s: unknown codec (bf16, topk[:RATIO], "
                "onebit[:BLOCK], none)\n", e);
        return -1;
    }
    if (colon && params.kind == GCOLL_COMPRESS_TOPK) params.topk_ratio = atof(colon + 1);
    if (colon && params.kind == GCOLL_COMPRESS_ONEBIT) params.onebit_block = strtoul(colon + 1, 0, 0);
    return 0;
}

static void buf_elems(size_t count, int nranks, size_t *send, size_t *recv)
{
    (void)nranks;
    *send = *recv = count;
}

static gcoll_status_t run_gcoll(const gcoll_bench_args_t *a)
{
    if (a->count != compressor_count) {   /* every rank changes size at the same call */
        gcoll_compressor_destroy(compressor);
        compressor = NULL;
        gcoll_status_t st = gcoll_compressor_create(a->gcomm, a->count, &params, &compressor);
        if (st != GCOLL_SUCCESS) return st;
        compressor_count = a->count;
    }
    return gcoll_allreduce_compressed(a->send, a->recv, a->count, a->dtype, GCOLL_SUM, compressor);
}

static int run_mpi(const gcoll_bench_args_t *a)
{
    return MPI_Allreduce(a->send, a->recv, (int)a->count, a->mpi_dtype, MPI_SUM, a->mcomm);
}

static int64_t input(const gcoll_bench_args_t *a, unsigned salt, size_t j)
{
    uint64_t h = (uint64_t)j * 0x9e3779b97f4a7c15ull ^ (uint64_t)a->rank * 0xbf58476d1ce4e5b9ull ^
                 salt;
    h ^= h >> 31;
    h *= 0xd6e9f8cc1b6f4ab1ull;
    return (int64_t)((h >> 33) % 2001) - 1000;
}

static size_t out_elems(const gcoll_bench_args_t *a) { return 0; }   /* lossy: see above */

static int64_t output(const gcoll_bench_args_t *a, unsigned salt, size_t i) { return 0; }

static const gcoll_bench_coll_t allreduce_compressed = {
    .name = "allreduce", .title = "Allreduce (compressed)", .reduces = 1, .has_size = 1,
    .buf_elems = buf_elems, .algbw_bytes = gcoll_bench_bytes_count,
    .busbw_factor = gcoll_bench_factor_allreduce,
    .run_gcoll = run_gcoll, .run_mpi = run_mpi,
    .input = input, .out_elems = out_elems, .output = output,
};

int main(int argc, char **argv)
{
    if (parse_codec()) return 2;
    return gcoll_bench_main(argc, argv, &allreduce_compressed);
}
