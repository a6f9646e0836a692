/* SPDX-License-Identifier: BSD-3-Clause */
/* The compressor and the compressed allreduce.
 *
 * Three levels, each one call on a sub-communicator that keeps the parent's
 * node map (gcoll_comm_levels: made once per communicator and shared by all
 * its compressors, so fifty gradient buckets do not make a hundred UCX
 * workers), so each level gets libgcoll's own algorithm selection (shared
 * memory in the node, UCX across):
 *
 *   1. node:  exact float32 reduce-scatter of the (zero-padded) tensor:
 *             local rank l holds block l of its node's sum (its share);
 *   2. rail:  the ranks with local index l on every node (one per node)
 *             combine their shares compressed: x = share + residual,
 *             payload = C(x), residual = x - decode(payload), in one of
 *             two schemes:
 *             two-phase (BF16 always; TOPK and ONEBIT when it sends fewer
 *             bytes, in practice N >= 3): the share in N chunks, each
 *             encoded alone (its own payload, byte-aligned), chunk j to
 *             rail rank j by alltoall; rank j decodes and sums chunk j of
 *             every node in rail order, adds its owner residual, encodes
 *             the sum again keeping what that drops, and the owners'
 *             payloads come back by allgather: bytes per rank
 *             2 (N-1) stride(share / N), about the same at any N;
 *             gather (TOPK and ONEBIT at N = 2, where it costs no more and
 *             compresses once): allgather of the payloads of the whole
 *             share, decoded and summed in rail order, (N-1) stride(share);
 *             either way every rank gets bitwise the same;
 *   3. node:  exact allgather of the shares.
 *
 * Only level 2 crosses nodes, so only inter-node traffic is compressed.  On
 * one node there is nothing to compress: a plain allreduce.  When nodes
 * hold different numbers of ranks the shares of different nodes would not
 * line up; every rank is then its own "node" (level 1 and 3 vanish, the
 * rail is the whole communicator): still correct, with intra-node traffic
 * compressed as well.  Residuals belong to the share, so a compressor is
 * tied to one tensor, one communicator and this partition.
 *
 * CUDA buffers are staged through page-locked host memory, as coll.c stages
 * the collectives the device path does not serve (gcoll_stage_layout): the
 * source is copied into the compressor's host image when the call is
 * posted, the levels, codecs and residuals run on the host, and the task's
 * last stage copies the result into the device recvbuf.  The codecs also
 * exist as device kernels (cuda/codec_kernels.cu, checked against these
 * by test/cuda/test_codec_kernels) but are not called here: the share is
 * the staged node reduce-scatter's host output, the stages may run in the
 * progress thread, which makes no CUDA calls, and the residuals live on
 * the host. */
/* The residual, owner-sum and decode loops run over whole gradients: O3 so
 * gcc 12 vectorizes them, as the codecs and core/reduce.c (BF16 at 4 MiB,
 * 4 ranks as 2 nodes: 11.6 ms at the library's -O2, 6.5 ms at O3). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "base/alloc.h"
#include "compress/codec.h"
#include "base/dtype_math.h"
#include "core/coll.h"
#include "core/comm.h"
#include "core/failure.h"
#include "core/engine.h"
#include "core/live.h"
#include "core/request_pool.h"
#include "base/log.h"
#include "core/memtype.h"
#include "base/reduce.h"
#include "base/status.h"

struct gcoll_compressor {
    gcoll_comm_t            comm;       /* the user's communicator */
    gcoll_compress_params_t p;
    const gcoll_codec_t    *codec;      /* NULL: exact allreduce */
    size_t                  count;
    gcoll_comm_t            node, rail; /* levels 1/3 and 2 (NULL node: L == 1), owned
                                         * by comm and shared (gcoll_comm_levels) */
    int                     L, l;       /* ranks per share group, my index in it */
    size_t                  share;      /* elements per share: ceil(count / L) */
    size_t                  stride;     /* bytes per payload slot, multiple of 8 */
    size_t                  chunk;      /* two-phase: elements of the share each rail rank
                                         * owns (chunk j: [j chunk, (j+1) chunk) of the
                                         * share, shorter or empty at the end); 0: gather */
    float                  *work;       /* L * share: the padded tensor, when
                                         * count is not a multiple of L */
    float                  *resid;      /* share: error feedback (NULL: none) */
    float                  *owner_resid; /* two-phase: chunk, the owner's error feedback */
    unsigned char          *payload;    /* gather: rail size * stride; two-phase: see
                                         * bf16_pre and two_phase_pre */
    void                   *stage;      /* page-locked images of device buffers (made by
                                         * the first call on them), this compressor's own:
                                         * several compressors' calls may be in flight */
    size_t                  stage_size;
    /* The call in flight (one at a time per communicator: engine tasks of
     * one communicator run in posting order). */
    struct {
        struct gcoll_request *req, *child;
        struct gcoll_request *posted;   /* the last call's request (see compressor_busy) */
        const float          *src;
        float                *dst, *buf, *x;   /* dst: recvbuf's host image if staged */
        void                 *dev_dst;  /* the device recvbuf to copy dst into, or NULL */
        gcoll_op_t            op;
        int                   direct, stage;
        gcoll_stats_t         node0, rail0;
    } call;
};

static size_t ceil_div(size_t a, size_t b) { return (a + b - 1) / b; }

static gcoll_status_t compressor_check(gcoll_compressor_t c, const char *fn)
{
    if (!c) return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "%s: the compressor is NULL", fn);
    if (!gcoll_live_has(c))
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "%s: the compressor %p was destroyed or never "
                           "created", fn, (void *)c);
    return GCOLL_SUCCESS;
}

static void compressor_free(gcoll_compressor_t c)
{
    free(c->work);
    free(c->resid);
    free(c->owner_resid);
    free(c->payload);
    gcoll_cuda_host_free(c->stage);
    free(c);
}

/* Levels and buffers.  Every rank takes the same branch: nnodes and
 * nodes_uniform are the same everywhere. */
static gcoll_status_t compressor_build(gcoll_compressor_t c)
{
    gcoll_comm_t comm = c->comm;
    if (!c->codec || comm->nnodes == 1) {
        c->codec = NULL;   /* nothing crosses a node: exact */
        return GCOLL_SUCCESS;
    }
    GCOLL_TRY(gcoll_comm_levels(comm, &c->node, &c->rail));   /* shared, owned by comm */
    c->L = c->node ? c->node->size : 1;
    c->l = c->node ? c->node->rank : 0;
    if (!c->node)
        gcoll_info("compressed allreduce: nodes of unequal size (or of one rank), every rank "
                   "compresses its whole tensor");
    c->share = ceil_div(c->count, (size_t)c->L);
    if (c->codec->kind == GCOLL_COMPRESS_TOPK && c->share > UINT32_MAX)
        return GCOLL_ERROR(GCOLL_ERR_NOT_SUPPORTED, "gcoll_compressor_create: a share of %zu "
                           "elements exceeds TopK's 32-bit indices", c->share);
    size_t N = (size_t)c->rail->size;
    int ef = !c->p.no_error_feedback;
    /* BF16 always, TOPK and ONEBIT from N = 3 on: two-phase, sending N
     * chunk slots and receiving N (reused for the allgather), owning one;
     * else the gather's N share slots (gcoll_codec_plan) */
    c->chunk = gcoll_codec_plan(&c->p, c->share, N, &c->stride);
    size_t bytes = c->chunk ? (2 * N + 1) * c->stride : N * c->stride;
    if (c->chunk && ef) c->owner_resid = gcoll_calloc(c->chunk + 1, sizeof(float));
    size_t padded = (size_t)c->L * c->share;
    if (padded != c->count)   /* shares do not tile it: padded copy */
        c->work = gcoll_calloc(padded, sizeof(float));
    c->resid = ef ? gcoll_calloc(c->share + 1, sizeof(float)) : NULL;
    c->payload = gcoll_malloc(bytes + 8);
    if ((padded != c->count && !c->work) || (ef && !c->resid) ||
        (ef && c->chunk && !c->owner_resid) || !c->payload)
        return GCOLL_ERROR(GCOLL_ERR_NO_MEMORY, "gcoll_compressor_create: no memory for a "
                           "tensor of %zu elements", c->count);
    gcoll_info("compressed allreduce (%s, %s): %zu elements, shares of %zu on rails of %d, "
               "%zu payload bytes per %s", c->codec->name, c->chunk ? "two-phase" : "gather",
               c->count, c->share, c->rail->size, c->stride, c->chunk ? "chunk" : "share");
    return GCOLL_SUCCESS;
}

/* Every rank must pass the same parameters and count, or the ranks would
 * build different levels and exchange payloads of different sizes (a hang,
 * or garbage).  One MIN and one MAX reduction tell every rank alike whether
 * all are valid and equal, before anything collective depends on them. */
static gcoll_status_t agree(gcoll_comm_t comm, int valid, const gcoll_compress_params_t *p,
                            size_t count)
{
    double mine[6] = { valid, p->kind, p->topk_ratio, (double)p->onebit_block,
                       p->no_error_feedback, (double)count }, lo[6], hi[6];
    MPI_Allreduce(mine, lo, 6, MPI_DOUBLE, MPI_MIN, comm->mpi_comm);
    MPI_Allreduce(mine, hi, 6, MPI_DOUBLE, MPI_MAX, comm->mpi_comm);
    if (!lo[0])
        return valid ? GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "gcoll_compressor_create: another "
                                   "rank passed invalid parameters")
                     : GCOLL_ERR_INVALID_ARG;   /* this rank's sentence is already set */
    for (int i = 1; i < 6; i++)
        if (lo[i] != hi[i])
            return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "gcoll_compressor_create: ranks passed "
                               "different %s", i == 5 ? "counts" : "compression parameters");
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll_compressor_create(gcoll_comm_t comm, size_t count,
                                       const gcoll_compress_params_t *params,
                                       gcoll_compressor_t *compressor)
{
    gcoll_error_clear();
    GCOLL_TRY(gcoll_comm_check(comm));
    if (!params || !compressor)   /* a caller error on every rank alike */
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "gcoll_compressor_create: %s is NULL",
                           params ? "compressor" : "params");
    *compressor = NULL;
    gcoll_compress_params_t p;
    gcoll_status_t st = gcoll_codec_params(params, &p);
    GCOLL_TRY(agree(comm, st == GCOLL_SUCCESS, st == GCOLL_SUCCESS ? &p : params, count));
    /* the levels below are collective: agree on the memory first, so a
     * rank that has none does not skip them (core/failure.h) */
    gcoll_compressor_t c = gcoll_calloc(1, sizeof(*c));
    st = gcoll_agree(comm->mpi_comm,
                     c ? GCOLL_SUCCESS
                       : GCOLL_ERROR(GCOLL_ERR_NO_MEMORY, "cannot allocate a compressor"),
                     "gcoll_compressor_create: the compressor");
    if (st != GCOLL_SUCCESS) {
        free(c);
        return st;
    }
    c->comm = comm;
    c->count = count;
    c->p = p;
    c->codec = gcoll_codec_find(p.kind);
    st = compressor_build(c);
    if (st == GCOLL_SUCCESS && gcoll_live_add(c) != GCOLL_SUCCESS)
        st = GCOLL_ERROR(GCOLL_ERR_NO_MEMORY, "cannot register the compressor");
    /* a failure on one rank (memory) must not leave the others holding a
     * compressor whose collectives would hang */
    st = gcoll_agree(comm->mpi_comm, st, "gcoll_compressor_create");
    if (st != GCOLL_SUCCESS) {
        gcoll_live_remove(c);
        compressor_free(c);
        return st;
    }
    *compressor = c;
    return GCOLL_SUCCESS;
}

static gcoll_status_t compress_task(struct gcoll_request *r, int *done, int *advanced);

/* A call was posted and its owner has not completed it by wait or test.
 * Not "its task still runs": the progress thread may finish the task on
 * one rank and not yet on another, and a second call accepted on one rank
 * only would send the ranks' schedules out of step. */
static int compressor_busy(gcoll_compressor_t c)
{
    /* a destroyed communicator had no request outstanding (its destroy
     * refuses then), and its request pool, which posted points into, is gone */
    if (!gcoll_live_has(c->comm)) return 0;
    const struct gcoll_request *r = c->call.posted;
    return c->call.req ||
           (r && r->started && r->task == compress_task && r->task_state == c);
}

gcoll_status_t gcoll_compressor_destroy(gcoll_compressor_t compressor)
{
    gcoll_error_clear();
    if (!compressor) return GCOLL_SUCCESS;
    GCOLL_TRY(compressor_check(compressor, "gcoll_compressor_destroy"));
    if (compressor_busy(compressor))
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "gcoll_compressor_destroy: a compressed "
                           "allreduce is still in flight (wait for it first)");
    gcoll_live_remove(compressor);
    compressor_free(compressor);
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll_compressor_reset(gcoll_compressor_t compressor)
{
    gcoll_error_clear();
    GCOLL_TRY(compressor_check(compressor, "gcoll_compressor_reset"));
    if (compressor_busy(compressor))
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "gcoll_compressor_reset: a compressed "
                           "allreduce is still in flight (wait for it first)");
    if (compressor->resid) memset(compressor->resid, 0, compressor->share * sizeof(float));
    if (compressor->owner_resid)
        memset(compressor->owner_resid, 0, compressor->chunk * sizeof(float));
    return GCOLL_SUCCESS;
}

/* ---- the allreduce -------------------------------------------------------- */

/* Error feedback keeps only finite residuals: an Inf or NaN gradient
 * (an overflow step under dynamic loss scaling) is sent as it is and
 * reaches the result, as it would uncompressed, but must not poison every
 * later step through the residual. */
static float finite_or_zero(float e) { return isfinite(e) ? e : 0.0f; }

static void keep_finite(float *e, size_t n)
{
    for (size_t i = 0; i < n; i++) e[i] = finite_or_zero(e[i]);
}

/* residual += x; payload = C(residual), leaving in residual what the
 * payload misses (without error feedback x itself is encoded, and lost). */
static void encode_share(gcoll_compressor_t c, float *x, void *payload)
{
    float *e = c->resid ? c->resid : x;
    if (c->resid)
        for (size_t i = 0; i < c->share; i++) e[i] = x[i] + e[i];
    c->codec->encode(&c->p, e, c->share, payload);
    if (c->resid) keep_finite(e, c->share);
}

/* The rail exchange as stages of an engine task (see the task below).  Each
 * stage does its local work and names the next collective to post on the
 * rail, or none: pre (encode), mid (the owner's work, two-phase only), post
 * (decode into the share x). */

typedef struct { int coll; const void *s; void *r; size_t n; gcoll_dtype_t dt; } rail_call_t;

static rail_call_t rail_none(void) { return (rail_call_t){ -1, NULL, NULL, 0, GCOLL_UINT8 }; }

/* TopK, 1-bit at N = 2: every rail rank's payload to every other
 * (allgather), each decoded and summed in rail (node) order into x. */
static rail_call_t gather_pre(gcoll_compressor_t c, float *x)
{
    unsigned char *mine = c->payload + (size_t)c->rail->rank * c->stride;
    encode_share(c, x, mine);
    memset(x, 0, c->share * sizeof(float));
    return (rail_call_t){ GCOLL_COLL_ALLGATHER, mine, c->payload, c->stride, GCOLL_UINT8 };
}

static void gather_post(gcoll_compressor_t c, float *x)
{
    for (int k = 0; k < c->rail->size; k++)
        c->codec->accumulate(&c->p, c->payload + (size_t)k * c->stride, c->share, x);
}

/* BF16: the two-phase exchange of 1-bit Adam's compressed allreduce, with
 * bfloat16 both ways.  The share, encoded and cut into N chunks, goes out
 * by alltoall; rail rank j sums chunk j of every node in float32 (rail
 * order), adds its own residual, rounds to bfloat16 once more, keeps what
 * that drops, and the rounded chunks come back by allgather.  Bytes as a
 * bfloat16 allreduce (2 per element, at any N), but every rounding is fed
 * back: a plain bfloat16 allreduce re-rounds partial sums that no residual
 * sees, and its error grows with the number of steps.
 * payload: send[N * chunk], recv[N * chunk], own[chunk], bfloat16. */
static rail_call_t bf16_pre(gcoll_compressor_t c, float *x)
{
    size_t n = c->share, cs = c->chunk, N = (size_t)c->rail->size;
    uint16_t *send = (uint16_t *)c->payload, *recv = send + N * cs;
    encode_share(c, x, send);
    memset(send + n, 0, (N * cs - n) * sizeof(uint16_t));   /* bfloat16 +0 */
    return (rail_call_t){ GCOLL_COLL_ALLTOALL, send, recv, cs, GCOLL_BFLOAT16 };
}

static rail_call_t bf16_mid(gcoll_compressor_t c, float *x)
{
    size_t cs = c->chunk, N = (size_t)c->rail->size;
    uint16_t *send = (uint16_t *)c->payload, *recv = send + N * cs, *own = recv + N * cs;
    float *y = x;   /* scratch until the allgather refills x; cs <= n */
    memset(y, 0, cs * sizeof(float));
    for (size_t k = 0; k < N; k++)   /* node by node: contiguous, vectorizable */
        for (size_t i = 0; i < cs; i++) y[i] += gcoll_math_bf16_to_f32(recv[k * cs + i]);
    for (size_t i = 0; i < cs; i++) {
        if (c->owner_resid) y[i] += c->owner_resid[i];
        own[i] = gcoll_math_f32_to_bf16(y[i]);
        if (c->owner_resid)
            c->owner_resid[i] = finite_or_zero(y[i] - gcoll_math_bf16_to_f32(own[i]));
    }
    return (rail_call_t){ GCOLL_COLL_ALLGATHER, own, send, cs, GCOLL_BFLOAT16 };
}

static void bf16_post(gcoll_compressor_t c, float *x)
{
    const uint16_t *send = (const uint16_t *)c->payload;
    for (size_t i = 0; i < c->share; i++) x[i] = gcoll_math_bf16_to_f32(send[i]);
}

/* Elements of chunk j of the share: chunk, fewer for the last, 0 past it. */
static size_t chunk_len(gcoll_compressor_t c, size_t j)
{
    size_t o = j * c->chunk;
    return o >= c->share ? 0 : c->share - o < c->chunk ? c->share - o : c->chunk;
}

/* Where chunk j starts in a share v (v itself for an empty chunk past the
 * end, so no pointer leaves the array). */
static float *chunk_at(gcoll_compressor_t c, float *v, size_t j)
{
    return chunk_len(c, j) ? v + j * c->chunk : v;
}

/* TopK, 1-bit with bounded traffic: the two-phase exchange of 1-bit Adam
 * (DeepSpeed's compressed allreduce), with any codec.
 *   worker: x = share + residual; chunk j of x encoded alone into send slot
 *           j (its own scales and sign bits, or its own top ceil(r len_j)
 *           of the chunk), the residual keeping what each payload misses;
 *   alltoall: slot j to rail rank j;
 *   server: rail rank j decodes chunk j of every node, summed in rail order
 *           (float32, into zeros), adds its owner residual, encodes the sum
 *           once more (1-bit: signs and scales of the sum; TopK: the top
 *           ceil(r len_j) of the sum, a sparse reduce-scatter's result
 *           re-sparsified) and keeps what that drops as its residual;
 *   allgather: every owner's payload to every rank, decoded into x.
 * Bytes sent per rank: 2 (N-1) stride, stride = payload(ceil(share / N))
 * rounded up to 8: for 1-bit 2 (N-1)/N share/8 plus scales, for TopK
 * 16 (N-1) ceil(r ceil(share / N)) < 16 r share + 16 (N-1) (1 + r) -- not
 * growing with N, where the gather's (N-1) stride(share) does.
 * payload: send[N stride] (the allgather's output afterwards), recv[N
 * stride], own[stride]. */
static rail_call_t two_phase_pre(gcoll_compressor_t c, float *x)
{
    const gcoll_codec_t *codec = c->codec;
    size_t n = c->share, N = (size_t)c->rail->size, st = c->stride;
    unsigned char *send = c->payload, *recv = send + N * st;
    float *e = c->resid ? c->resid : x;
    if (c->resid)
        for (size_t i = 0; i < n; i++) e[i] = x[i] + e[i];
    for (size_t j = 0; j < N; j++)
        codec->encode(&c->p, chunk_at(c, e, j), chunk_len(c, j), send + j * st);
    if (c->resid) keep_finite(e, n);
    return (rail_call_t){ GCOLL_COLL_ALLTOALL, send, recv, st, GCOLL_UINT8 };
}

static rail_call_t two_phase_mid(gcoll_compressor_t c, float *x)
{
    const gcoll_codec_t *codec = c->codec;
    size_t cs = c->chunk, N = (size_t)c->rail->size, st = c->stride;
    size_t mine = chunk_len(c, (size_t)c->rail->rank);
    unsigned char *send = c->payload, *recv = send + N * st, *own = recv + N * st;
    float *y = x;   /* scratch until the allgather refills x; cs <= n */
    memset(y, 0, cs * sizeof(float));
    for (size_t k = 0; k < N; k++)   /* rail order: every owner sums alike */
        codec->accumulate(&c->p, recv + k * st, mine, y);
    if (c->owner_resid)
        for (size_t i = 0; i < mine; i++) y[i] += c->owner_resid[i];
    codec->encode(&c->p, y, mine, own);   /* leaves in y what own misses */
    if (c->owner_resid)
        for (size_t i = 0; i < mine; i++) c->owner_resid[i] = finite_or_zero(y[i]);
    return (rail_call_t){ GCOLL_COLL_ALLGATHER, own, send, st, GCOLL_UINT8 };
}

static void two_phase_post(gcoll_compressor_t c, float *x)
{
    size_t N = (size_t)c->rail->size;
    memset(x, 0, c->share * sizeof(float));
    for (size_t j = 0; j < N; j++)
        c->codec->accumulate(&c->p, c->payload + j * c->stride, chunk_len(c, j),
                             chunk_at(c, x, j));
}

/* Level 2, stage by stage: the share x of every node, combined compressed. */
static rail_call_t rail_stage(gcoll_compressor_t c, int stage, float *x)
{
    int bf16 = c->codec->kind == GCOLL_COMPRESS_BF16, two = bf16 || c->chunk;
    if (stage == 0) return bf16 ? bf16_pre(c, x) : two ? two_phase_pre(c, x) : gather_pre(c, x);
    if (stage == 1 && two) return bf16 ? bf16_mid(c, x) : two_phase_mid(c, x);
    if (bf16) bf16_post(c, x);
    else if (two) two_phase_post(c, x);
    else gather_post(c, x);
    return rail_none();
}

static void add_stats(gcoll_stats_t *to, const gcoll_stats_t *after, const gcoll_stats_t *before)
{
    to->bytes_sent += after->bytes_sent - before->bytes_sent;
    to->bytes_sent_inter_node += after->bytes_sent_inter_node - before->bytes_sent_inter_node;
}

static gcoll_status_t check_call(gcoll_compressor_t c, const void *sendbuf, void *recvbuf,
                                 size_t count, gcoll_dtype_t dtype, gcoll_op_t op)
{
    const char *fn = "gcoll_allreduce_compressed";
    GCOLL_TRY(compressor_check(c, fn));
    GCOLL_TRY(gcoll_comm_check(c->comm));
    if (count != c->count)
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "%s: count %zu, but the compressor was made "
                           "for %zu elements", fn, count, c->count);
    if ((unsigned)dtype >= GCOLL_DTYPE_COUNT || (unsigned)op >= GCOLL_OP_COUNT)
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "%s: unknown %s %d", fn,
                           (unsigned)dtype >= GCOLL_DTYPE_COUNT ? "dtype" : "op",
                           (unsigned)dtype >= GCOLL_DTYPE_COUNT ? (int)dtype : (int)op);
    if (dtype != GCOLL_FLOAT32)
        return GCOLL_ERROR(GCOLL_ERR_NOT_SUPPORTED, "%s: gradients must be float32, not %s", fn,
                           gcoll_dtype_name(dtype));
    if (op != GCOLL_SUM && op != GCOLL_AVG)
        return GCOLL_ERROR(GCOLL_ERR_NOT_SUPPORTED, "%s: op must be sum or avg, not %s", fn,
                           gcoll_op_name(op));
    if (count && (!sendbuf || !recvbuf))
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "%s: %s is NULL with count %zu", fn,
                           sendbuf ? "recvbuf" : "sendbuf", count);
    if (count) GCOLL_TRY(gcoll_memtype_servable(fn, "sendbuf", sendbuf));
    if (count && recvbuf != sendbuf) GCOLL_TRY(gcoll_memtype_servable(fn, "recvbuf", recvbuf));
    return GCOLL_SUCCESS;
}

/* ---- the compressed allreduce as an engine task -------------------------------
 *
 *   stage 0  wait for the turn (one task per communicator at a time); pad;
 *            node reduce-scatter into the share x (a child on c->node)
 *   stage 1  rail stage 0: encode, post the rail exchange's first collective
 *   stage 2  rail stage 1 (two-phase: the owner's work, post its allgather)
 *   stage 3  rail stage 2: decode into x; node allgather (a child)
 *   stage 4  unpad, AVG, fold the levels' counters, copy a staged result
 *            into the device recvbuf (in the caller's thread): done
 * Each stage waits for the child the previous one posted.  Children are
 * ordinary requests on the shared sub-communicators, posted in the same
 * order on every rank because tasks of one communicator run in order. */

static gcoll_status_t post_child(gcoll_compressor_t c, gcoll_comm_t on, int coll,
                                 const void *s, void *r, size_t n, gcoll_dtype_t dt)
{
    gcoll_call_t k = { coll, "gcoll_allreduce_compressed (level)", s, r, n, dt, GCOLL_SUM, 0,
                       NULL };
    return gcoll_coll_post_child(on, &k, &c->call.child);
}

/* The child of the last stage: *ready once it is done (then given back). */
static gcoll_status_t child_done(gcoll_compressor_t c, int *ready)
{
    struct gcoll_request *ch = c->call.child;
    *ready = !ch || !ch->active;
    if (!ch || ch->active) return GCOLL_SUCCESS;
    gcoll_status_t st = ch->status;
    if (st != GCOLL_SUCCESS) gcoll_error_restore(ch->err);
    gcoll_request_put(ch);
    c->call.child = NULL;
    return st;
}

static gcoll_status_t stage_levels(gcoll_compressor_t c)
{
    size_t n = c->share, padded = (size_t)c->L * n;
    c->call.direct = padded == c->count;
    c->call.buf = c->call.direct ? c->call.dst : c->work;
    c->call.x = c->call.buf + (size_t)c->l * n;
    const float *src = c->call.src;
    if (!c->call.direct) {
        memcpy(c->work, src, c->count * sizeof(float));   /* src may be dst: copy first */
        memset(c->work + c->count, 0, (padded - c->count) * sizeof(float));
        src = c->work;
    }
    c->call.rail0 = c->rail->stats;
    if (c->node) c->call.node0 = c->node->stats;
    if (c->node)   /* in place when src is buf: x is buf's block l */
        return post_child(c, c->node, GCOLL_COLL_REDUCE_SCATTER, src, c->call.x, n,
                          GCOLL_FLOAT32);
    if (src != c->call.x) memcpy(c->call.x, src, n * sizeof(float));
    return GCOLL_SUCCESS;
}

static gcoll_status_t stage_finish(gcoll_compressor_t c)
{
    if (!c->call.direct) memcpy(c->call.dst, c->work, c->count * sizeof(float));
    if (c->call.op == GCOLL_AVG)
        gcoll_reduce_avg_host(c->call.dst, c->count, GCOLL_FLOAT32, c->comm->size);
    gcoll_stats_t node1 = c->node ? c->node->stats : c->call.node0;
    add_stats(&c->comm->stats, &node1, &c->call.node0);
    add_stats(&c->comm->stats, &c->rail->stats, &c->call.rail0);
    /* complete means in the device recvbuf (a copy from page-locked memory
     * returns when it is done) */
    return c->call.dev_dst ? gcoll_cuda_from_host(c->call.dev_dst, c->call.dst,
                                                  c->count * sizeof(float))
                           : GCOLL_SUCCESS;
}

static gcoll_status_t compress_task(struct gcoll_request *r, int *done, int *advanced)
{
    gcoll_compressor_t c = r->task_state;
    int ready;
    *done = 0;
    if (c->call.stage == 0 && !gcoll_engine_task_turn(r)) return GCOLL_SUCCESS;
    gcoll_status_t st = child_done(c, &ready);
    if (st == GCOLL_SUCCESS && ready && c->call.stage == 4 && c->call.dev_dst &&
        gcoll_engine_in_thread()) {
        /* the copy into device memory is the caller's, in its test or wait:
         * the progress thread has no CUDA device of its own, and its first
         * CUDA call would make a context on device 0 in every process */
        gcoll_engine_leave_to_caller(r);
        return GCOLL_SUCCESS;
    }
    if (st == GCOLL_SUCCESS && ready) {
        *advanced = 1;
        int s0 = c->call.stage++;
        if (s0 == 0) {
            st = stage_levels(c);
        } else if (s0 <= 3) {
            rail_call_t k = rail_stage(c, s0 - 1, c->call.x);
            if (k.coll >= 0) {
                st = post_child(c, c->rail, k.coll, k.s, k.r, k.n, k.dt);
                if (s0 == 1 && !(c->codec->kind == GCOLL_COMPRESS_BF16 || c->chunk))
                    c->call.stage = 3;   /* the gather has no owner stage */
            } else if (c->node) {
                st = post_child(c, c->node, GCOLL_COLL_ALLGATHER, c->call.x, c->call.buf,
                                c->share, GCOLL_FLOAT32);
                c->call.stage = 4;
            } else {
                c->call.stage = 4;
            }
        } else {
            st = stage_finish(c);
            *done = 1;
        }
    }
    if (st != GCOLL_SUCCESS) {
        /* a child still in flight must finish before the buffers go back:
         * it completes on its own (or fails the same way on every rank) */
        *done = 1;
    }
    if (*done) {
        c->call.req = NULL;
        c->call.stage = 0;
    }
    return st;
}

/* Device buffers (either, or both) get host images laid out as coll.c lays
 * out its staged calls' (gcoll_stage_layout: one image when in place); the
 * source is copied in now, in the caller's thread, after the work the
 * caller queued on the default stream.  A host buffer is used as it is. */
static gcoll_status_t stage_device(gcoll_compressor_t c, const void **src, void **dst)
{
    size_t bytes = c->count * sizeof(float);
    int dev_src = gcoll_memtype_of(*src) == GCOLL_MEM_CUDA;
    int dev_dst = gcoll_memtype_of(*dst) == GCOLL_MEM_CUDA;
    c->call.dev_dst = NULL;
    if (!dev_src && !dev_dst) return GCOLL_SUCCESS;
    gcoll_stage_layout_t l;
    gcoll_stage_layout(dev_src ? *src : NULL, dev_src ? bytes : 0, dev_dst ? *dst : NULL,
                       dev_dst ? bytes : 0, &l);
    GCOLL_TRY(gcoll_cuda_host_reserve(&c->stage, &c->stage_size, l.need));
    char *base = c->stage;
    if (l.has_send) {   /* in place: inside the recv image, which is the source */
        GCOLL_TRY(gcoll_cuda_to_host(base + l.send_off, *src, bytes));
        *src = base + l.send_off;
    }
    if (l.has_recv) {   /* written whole by the call: nothing to copy in */
        c->call.dev_dst = *dst;
        *dst = base + l.recv_off;
    }
    return GCOLL_SUCCESS;
}

/* Stage, then post the task for one call. */
static gcoll_status_t task_post(gcoll_compressor_t c, const void *sendbuf, void *recvbuf,
                                gcoll_op_t op, struct gcoll_request **out)
{
    struct gcoll_request *r;
    GCOLL_TRY(stage_device(c, &sendbuf, &recvbuf));
    gcoll_engine_lock();
    gcoll_status_t st = gcoll_request_get(c->comm, &r);
    if (st != GCOLL_SUCCESS) {
        gcoll_engine_unlock();
        return st;
    }
    r->task = compress_task;
    r->task_state = c;
    c->call.req = r;
    c->call.posted = r;
    c->call.child = NULL;
    c->call.src = sendbuf;
    c->call.dst = recvbuf;
    c->call.op = op;
    c->call.stage = 0;
    gcoll_engine_post_task(r);
    gcoll_engine_unlock();
    *out = r;
    return GCOLL_SUCCESS;
}

/* One call (the compressor's buffers belong to it until it completes: one
 * call in flight per compressor).  A failure here, on this rank alone (a
 * copy, memory), revokes the communicator: the peers' tasks would wait for
 * this rank's part for ever. */
static gcoll_status_t compressed_post(gcoll_compressor_t c, const void *sendbuf, void *recvbuf,
                                      gcoll_op_t op, struct gcoll_request **out)
{
    if (compressor_busy(c))
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "gcoll_allreduce_compressed: the compressor "
                           "already has a call in flight (wait for it first)");
    return gcoll_coll_failed(c->comm, task_post(c, sendbuf, recvbuf, op, out));
}

/* count 0: nothing moves, the call still counts. */
static void count_empty_call(gcoll_compressor_t c)
{
    gcoll_engine_lock();
    c->comm->stats.calls++;
    gcoll_engine_unlock();
}

gcoll_status_t gcoll_allreduce_compressed(const void *sendbuf, void *recvbuf, size_t count,
                                          gcoll_dtype_t dtype, gcoll_op_t op,
                                          gcoll_compressor_t compressor)
{
    gcoll_error_clear();
    GCOLL_TRY(check_call(compressor, sendbuf, recvbuf, count, dtype, op));
    gcoll_compressor_t c = compressor;
    if (!c->codec) return gcoll_allreduce(sendbuf, recvbuf, count, dtype, op, c->comm);
    if (!count) {
        count_empty_call(c);
        return GCOLL_SUCCESS;
    }
    gcoll_request_t r;
    GCOLL_TRY(compressed_post(c, sendbuf, recvbuf, op, &r));
    return gcoll_wait(&r);
}

/* An engine task: it progresses in the background (GCOLL_PROGRESS=thread)
 * or inside test/wait, its levels as child requests (see compress_task). */
gcoll_status_t gcoll_iallreduce_compressed(const void *sendbuf, void *recvbuf, size_t count,
                                           gcoll_dtype_t dtype, gcoll_op_t op,
                                           gcoll_compressor_t compressor,
                                           gcoll_request_t *request)
{
    gcoll_error_clear();
    if (!request)
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "gcoll_iallreduce_compressed: request is NULL");
    *request = GCOLL_REQUEST_NULL;
    GCOLL_TRY(check_call(compressor, sendbuf, recvbuf, count, dtype, op));
    gcoll_compressor_t c = compressor;
    if (!c->codec) return gcoll_iallreduce(sendbuf, recvbuf, count, dtype, op, c->comm, request);
    if (!count) {
        count_empty_call(c);
        return gcoll_request_completed(c->comm, GCOLL_SUCCESS, request);
    }
    return compressed_post(c, sendbuf, recvbuf, op, request);
}
