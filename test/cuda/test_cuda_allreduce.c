/* SPDX-License-Identifier: BSD-3-Clause */
/* gcoll_allreduce on CUDA device buffers against MPI_Allreduce on host
 * copies of the same inputs, bit for bit: every dtype x op (AVG included),
 * counts 0, 1, primes and one past the IPC path's 8 MiB chunk, in place and
 * not.  Integer-valued float data keeps every partial result exact, so the
 * reduction order cannot matter; fp16/bf16 (which MPI lacks) are compared
 * with MPI's float32 result of the same integers, rounded once.
 *
 * Then gcoll_allreduce_compressed on device buffers against a host twin
 * (compressed_case).
 *
 * GCOLL_TEST_EXPECT_IPC=1 (or -1) also asserts that the CUDA IPC path was
 * (or was not) the one that ran: run_cuda.sh sets it per node shape.
 *
 *   test_cuda_allreduce --probe   exit 0 if a CUDA device is visible, else
 *                                 77 with the reason (no MPI involved)
 *   mpirun -n P test_cuda_allreduce */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include "gcoll.h"
#include "core/comm.h"
#include "base/dtype_math.h"
#include "base/reduce.h"

static int rank, size, failures, checks;

#define FAIL(...) do { \
        if (failures++ < 30) { printf("rank %d FAIL: ", rank); printf(__VA_ARGS__); putchar('\n'); } \
    } while (0)

/* A CUDA runtime call or a libgcoll call that must succeed; evaluates to
 * whether it did (a test whose buffers were never set up proves nothing). */
#define CUDA_OK(call) cuda_ok((call), #call)
#define GCOLL_OK(call) gcoll_ok((call), #call)

static int cuda_ok(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) FAIL("%s: %s", what, cudaGetErrorString(e));
    return e == cudaSuccess;
}

static int gcoll_ok(gcoll_status_t st, const char *what)
{
    if (st != GCOLL_SUCCESS) FAIL("%s: %s: %s", what, gcoll_strerror(st), gcoll_last_error());
    return st == GCOLL_SUCCESS;
}

static MPI_Datatype mpi_type(gcoll_dtype_t dt)
{
    switch (dt) {
    case GCOLL_INT8: return MPI_INT8_T;
    case GCOLL_UINT8: return MPI_UINT8_T;
    case GCOLL_INT32: return MPI_INT32_T;
    case GCOLL_UINT32: return MPI_UINT32_T;
    case GCOLL_INT64: return MPI_INT64_T;
    case GCOLL_UINT64: return MPI_UINT64_T;
    case GCOLL_FLOAT64: return MPI_DOUBLE;
    default: return MPI_FLOAT;   /* float32; fp16/bf16 through float32 */
    }
}

static MPI_Op mpi_op(gcoll_op_t op)
{
    return op == GCOLL_PROD ? MPI_PROD : op == GCOLL_MIN ? MPI_MIN : op == GCOLL_MAX ? MPI_MAX
                                                                                     : MPI_SUM;
}

static int is_half(gcoll_dtype_t dt) { return dt == GCOLL_FLOAT16 || dt == GCOLL_BFLOAT16; }

/* Element i of this rank: random bits for integers (wrapping is exact in
 * any order), small integers for floats (|x| <= 3: sums and products of up
 * to 5 ranks stay exact even in bf16, whose 8-bit significand holds 3^5). */
static double value(size_t i, int r)
{
    uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ull ^ (uint64_t)(r + 1) * 0xbf58476d1ce4e5b9ull;
    x ^= x >> 31;
    return (double)((int)(x % 7) - 3);
}

static void fill(void *buf, size_t n, gcoll_dtype_t dt, int r)
{
    for (size_t i = 0; i < n; i++) {
        double v = value(i, r);
        uint64_t bits = (i + 7) * 0xd6e8feb86659fd93ull ^ (uint64_t)r * 0x94d049bb133111ebull;
        switch (dt) {
        case GCOLL_FLOAT32: ((float *)buf)[i] = (float)v; break;
        case GCOLL_FLOAT64: ((double *)buf)[i] = v; break;
        case GCOLL_FLOAT16: ((uint16_t *)buf)[i] = gcoll_math_f32_to_fp16((float)v); break;
        case GCOLL_BFLOAT16: ((uint16_t *)buf)[i] = gcoll_math_f32_to_bf16((float)v); break;
        default: memcpy((char *)buf + i * gcoll_dtype_size(dt), &bits, gcoll_dtype_size(dt)); break;
        }
    }
}

/* MPI's result for the same inputs, in the dtype's own encoding. */
static void reference(void *ref, size_t n, gcoll_dtype_t dt, gcoll_op_t op)
{
    size_t sz = gcoll_dtype_size(dt);
    void *in = malloc(n * (is_half(dt) ? 4 : sz) + 1);
    if (is_half(dt)) {
        for (size_t i = 0; i < n; i++) ((float *)in)[i] = (float)value(i, rank);
        float *out = malloc(n * 4 + 1);
        MPI_Allreduce(in, out, (int)n, MPI_FLOAT, mpi_op(op), MPI_COMM_WORLD);
        for (size_t i = 0; i < n; i++) {
            float f = op == GCOLL_AVG ? out[i] / (float)size : out[i];
            ((uint16_t *)ref)[i] = dt == GCOLL_FLOAT16 ? gcoll_math_f32_to_fp16(f)
                                                       : gcoll_math_f32_to_bf16(f);
        }
        free(out);
    } else {
        fill(in, n, dt, rank);
        MPI_Allreduce(in, ref, (int)n, mpi_type(dt), mpi_op(op), MPI_COMM_WORLD);
        if (op == GCOLL_AVG) GCOLL_OK(gcoll_reduce_avg_host(ref, n, dt, size));
    }
    free(in);
}

/* One allreduce of n elements from device memory into device memory
 * (in place, or into a buffer offset by skew elements: off the 16-byte
 * alignment the kernels' wide loads want) against MPI. */
static void one_case(gcoll_comm_t comm, gcoll_dtype_t dt, gcoll_op_t op, size_t n, int in_place,
                     size_t skew)
{
    size_t sz = gcoll_dtype_size(dt), bytes = n * sz;
    unsigned char *h = malloc(bytes + 1), *ref = malloc(bytes + 1), *got = malloc(bytes + 1);
    char *d_src = NULL, *d_dst = NULL;
    fill(h, n, dt, rank);
    reference(ref, n, dt, op);
    /* every rank calls the collective, set up or not: a rank that skipped
     * it would leave the others waiting */
    int setup = CUDA_OK(cudaMalloc((void **)&d_src, bytes + 1)) &&
                CUDA_OK(cudaMalloc((void **)&d_dst, bytes + skew * sz + 1)) &&
                CUDA_OK(cudaMemcpy(d_src, h, bytes, cudaMemcpyHostToDevice)) &&
                CUDA_OK(cudaMemset(d_dst, 0xa5, bytes + skew * sz + 1));
    char *dst = in_place ? d_src : d_dst ? d_dst + skew * sz : NULL;
    gcoll_status_t st = gcoll_allreduce(d_src, dst, n, dt, op, comm);
    checks++;
    if (st != GCOLL_SUCCESS) {
        FAIL("%s %s count=%zu%s skew=%zu: status %d: %s", gcoll_dtype_name(dt), gcoll_op_name(op),
             n, in_place ? " in place" : "", skew, (int)st, gcoll_last_error());
    } else if (setup && CUDA_OK(cudaMemcpy(got, dst, bytes, cudaMemcpyDeviceToHost))) {
        size_t bad = 0;
        while (bad < bytes && got[bad] == ref[bad]) bad++;
        if (bad < bytes)
            FAIL("%s %s count=%zu%s skew=%zu: differs from MPI from byte %zu (element %zu)",
                 gcoll_dtype_name(dt), gcoll_op_name(op), n, in_place ? " in place" : "", skew,
                 bad, bad / sz);
    }
    CUDA_OK(cudaFree(d_src));
    CUDA_OK(cudaFree(d_dst));
    free(h), free(ref), free(got);
}

/* Host sendbuf into a device recvbuf: the device path takes both on one
 * device, so every rank must get INVALID_ARG (not a hang, not a result on
 * some ranks; staged instead where the path declined), and the
 * communicator must work afterwards.  Device sendbuf
 * into a host recvbuf is staged through host memory and exact. */
static void mixed_buffers(gcoll_comm_t comm)
{
    size_t n = 1000, bytes = n * sizeof(float);
    float *h = malloc(bytes), *ref = malloc(bytes), *got = malloc(bytes);
    void *d = NULL;
    fill(h, n, GCOLL_FLOAT32, rank);
    reference(ref, n, GCOLL_FLOAT32, GCOLL_SUM);
    CUDA_OK(cudaMalloc(&d, bytes));
    gcoll_status_t st = gcoll_allreduce(h, d, n, GCOLL_FLOAT32, GCOLL_SUM, comm);
    /* where the device path declined, device buffers are staged: exact */
    gcoll_status_t want = comm->cuda_ipc_state == 1 ? GCOLL_ERR_INVALID_ARG : GCOLL_SUCCESS;
    checks++;
    if (st != want)
        FAIL("host sendbuf into a device recvbuf: status %d (%s), expected %d", (int)st,
             gcoll_last_error(), (int)want);
    /* the sentence of this rank's own failure survives the rail allreduce
     * that follows it on several nodes (a public call that clears it) */
    checks++;
    if (st == GCOLL_ERR_INVALID_ARG && !strstr(gcoll_last_error(), "device path"))
        FAIL("host sendbuf into a device recvbuf: the sentence is \"%s\", not the device "
             "path's own", gcoll_last_error());
    CUDA_OK(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
    memset(got, 0, bytes);
    st = gcoll_allreduce(d, got, n, GCOLL_FLOAT32, GCOLL_SUM, comm);
    checks++;
    if (st != GCOLL_SUCCESS || memcmp(got, ref, bytes))
        FAIL("device sendbuf into a host recvbuf after the error: status %d (%s) or a result "
             "differing from MPI's", (int)st, gcoll_last_error());
    CUDA_OK(cudaFree(d));
    free(h), free(ref), free(got);
}

/* The IPC path counts bytes as the host path does: what this rank exposed
 * to its node, and the rail level's traffic, inter-node where the rails
 * cross nodes (gcoll_stats_t: all levels). */
static void stats_counted(gcoll_comm_t comm)
{
    size_t n = 65537, bytes = n * sizeof(float);
    float *h = malloc(bytes);
    void *d = NULL;
    fill(h, n, GCOLL_FLOAT32, rank);
    cudaMalloc(&d, bytes);
    cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice);
    gcoll_stats_t before, after;
    gcoll_comm_get_stats(comm, &before);
    gcoll_status_t st = gcoll_allreduce(d, d, n, GCOLL_FLOAT32, GCOLL_SUM, comm);
    gcoll_comm_get_stats(comm, &after);
    checks++;
    if (st != GCOLL_SUCCESS) FAIL("stats: allreduce: %s", gcoll_last_error());
    checks++;
    if (after.calls != before.calls + 1)
        FAIL("stats: calls grew by %llu, expected 1",
             (unsigned long long)(after.calls - before.calls));
    if (size > 1 && comm->cuda_ipc_state == 1) {
        checks++;
        if (after.bytes_sent <= before.bytes_sent)
            FAIL("stats: a device allreduce on the IPC path counted no bytes sent");
        checks++;
        if (comm->nnodes > 1 && after.bytes_sent_inter_node <= before.bytes_sent_inter_node)
            FAIL("stats: %d nodes, but the rail level's bytes are not counted as inter-node",
                 comm->nnodes);
    }
    cudaFree(d);
    free(h);
}

/* gcoll_allreduce_compressed on device buffers (staged through page-locked
 * host memory, the codecs on the host) against a twin compressor fed host
 * copies of the same inputs, bit for bit, step after step, so the
 * residuals must evolve alike: blocking and nonblocking, in place and not,
 * SUM and AVG, and (where the call compresses: several nodes) a host
 * sendbuf into a device recvbuf and back.  On one node the compressor is
 * the exact allreduce, i.e. the device path above. */
enum { COMPRESSED_STEPS = 6 };

static int compressed_step(gcoll_compressor_t z, int form, const float *h, float *d_src,
                           float *d_dst, float *h_dst, size_t n, gcoll_op_t op)
{
    size_t bytes = n * sizeof(float);
    const void *s = form == 4 ? (const void *)h : d_src;
    void *r = form == 1 || form == 3 ? (void *)d_src : form == 5 ? (void *)h_dst : d_dst;
    /* the collective runs whatever the copy did: a rank that skipped it
     * would leave the others waiting */
    int ok = CUDA_OK(cudaMemcpy(d_src, h, bytes, cudaMemcpyHostToDevice));
    if (form == 2 || form == 3) {   /* nonblocking: test until done, as an application would */
        gcoll_request_t req;
        int done = 0;
        ok &= GCOLL_OK(gcoll_iallreduce_compressed(s, r, n, GCOLL_FLOAT32, op, z, &req));
        while (ok && !done) ok &= GCOLL_OK(gcoll_test(&req, &done));
    } else {
        ok &= GCOLL_OK(gcoll_allreduce_compressed(s, r, n, GCOLL_FLOAT32, op, z));
    }
    return ok && (r == h_dst || CUDA_OK(cudaMemcpy(h_dst, r, bytes, cudaMemcpyDeviceToHost)));
}

static void compressed_case(gcoll_comm_t comm, gcoll_compress_t kind, size_t n)
{
    static const char *const forms[] = { "device", "device in place", "nonblocking device",
                                         "nonblocking device in place", "host into device",
                                         "device into host" };
    size_t bytes = n * sizeof(float);
    float *h = malloc(bytes), *ref = malloc(bytes), *got = malloc(bytes);
    float *d_src = NULL, *d_dst = NULL;
    gcoll_compress_params_t p = { .kind = kind };
    gcoll_compressor_t on_dev = NULL, on_host = NULL;
    /* collective: every rank makes both, whatever the other did */
    /* agreed on every rank alike (gcoll_compressor_create is collective) */
    int made = GCOLL_OK(gcoll_compressor_create(comm, n, &p, &on_dev));
    made &= GCOLL_OK(gcoll_compressor_create(comm, n, &p, &on_host));
    CUDA_OK(cudaMalloc((void **)&d_src, bytes + 1));
    CUDA_OK(cudaMalloc((void **)&d_dst, bytes + 1));
    int nforms = comm->nnodes > 1 ? 6 : 4;
    for (int step = 0; made && step < COMPRESSED_STEPS; step++) {
        int form = step % nforms;
        gcoll_op_t op = step % 2 ? GCOLL_AVG : GCOLL_SUM;
        fill(h, n, GCOLL_FLOAT32, rank + size * step);
        /* plus k/256: 9 significant bits, more than bf16 holds (so BF16 is
         * lossy too), while sums stay exact in float32, so the exact paths
         * (one node: the device path against the host's) agree in any order */
        for (size_t i = 0; i < n; i++) h[i] += (float)((int)((i + step) % 5) - 2) / 256.0f;
        int ok = GCOLL_OK(gcoll_allreduce_compressed(h, ref, n, GCOLL_FLOAT32, op, on_host));
        memset(got, 0, bytes);
        ok &= compressed_step(on_dev, form, h, d_src, d_dst, got, n, op);
        checks++;
        if (!ok) {
            FAIL("compressed %s count=%zu step %d (%s): did not run", gcoll_compress_name(kind), n,
                 step, forms[form]);
        } else if (memcmp(got, ref, bytes)) {
            FAIL("compressed %s count=%zu step %d (%s): differs from the host twin",
                 gcoll_compress_name(kind), n, step, forms[form]);
        }
    }
    GCOLL_OK(gcoll_compressor_destroy(on_dev));
    GCOLL_OK(gcoll_compressor_destroy(on_host));
    CUDA_OK(cudaFree(d_src));
    CUDA_OK(cudaFree(d_dst));
    free(h), free(ref), free(got);
}

static int probe(void)
{
    int ndev = 0;
    cudaError_t e = cudaGetDeviceCount(&ndev);
    if (e == cudaSuccess && ndev > 0) {
        printf("%d CUDA device(s)\n", ndev);
        return 0;
    }
    printf("no CUDA device visible (cudaGetDeviceCount: %s, %d devices)\n",
           e == cudaSuccess ? "ok" : cudaGetErrorString(e), ndev);
    return 77;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--probe")) return probe();
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm local;
    int lrank, ndev = 0;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &lrank);
    if (cudaGetDeviceCount(&ndev) != cudaSuccess) ndev = 0;
    if (ndev == 0) {
        if (rank == 0) printf("SKIP: no CUDA device\n");
        MPI_Finalize();
        return 77;
    }
    CUDA_OK(cudaSetDevice(lrank % ndev));   /* ranks share the devices round-robin */

    gcoll_comm_t comm;
    if (gcoll_comm_create(MPI_COMM_WORLD, &comm) != GCOLL_SUCCESS) {
        printf("rank %d: gcoll_comm_create: %s\n", rank, gcoll_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    static const size_t counts[] = { 0, 1, 3, 17, 1000, 65537 };
    for (int dt = 0; dt < GCOLL_DTYPE_COUNT; dt++)
        for (int op = GCOLL_SUM; op <= GCOLL_AVG; op++)
            for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
                one_case(comm, dt, op, counts[c], c % 2, 0);
    /* past one 8 MiB chunk of the IPC path, both ways */
    size_t big = (8u << 20) / 4 * 2 + 13;
    one_case(comm, GCOLL_FLOAT32, GCOLL_SUM, big, 0, 0);
    one_case(comm, GCOLL_FLOAT32, GCOLL_SUM, big, 1, 0);
    one_case(comm, GCOLL_INT64, GCOLL_MAX, big / 2 + 5, 0, 0);
    one_case(comm, GCOLL_BFLOAT16, GCOLL_AVG, big * 2 + 1, 1, 0);
    /* a recvbuf off the 16-byte alignment */
    one_case(comm, GCOLL_FLOAT32, GCOLL_SUM, 65537, 0, 1);
    one_case(comm, GCOLL_FLOAT16, GCOLL_MAX, 4099, 0, 3);
    mixed_buffers(comm);
    stats_counted(comm);
    for (int kind = GCOLL_COMPRESS_NONE; kind < GCOLL_COMPRESS_COUNT; kind++) {
        compressed_case(comm, (gcoll_compress_t)kind, 1000);
        compressed_case(comm, (gcoll_compress_t)kind, 65537);   /* padded shares */
    }

    const char *expect = getenv("GCOLL_TEST_EXPECT_IPC");
    if (expect && *expect) {
        checks++;
        if (comm->cuda_ipc_state != atoi(expect))
            FAIL("the CUDA IPC path's state is %d, expected %s (1 = ran, -1 = staged)",
                 comm->cuda_ipc_state, expect);
    }
    GCOLL_OK(gcoll_comm_destroy(comm));
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("test_cuda_allreduce: %d ranks: %s (%d checks per rank, %d failures)\n", size,
               all ? "FAILED" : "ok", checks, all);
    MPI_Comm_free(&local);
    MPI_Finalize();
    return all ? 1 : 0;
}
