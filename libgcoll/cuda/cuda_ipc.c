/* SPDX-License-Identifier: BSD-3-Clause */
/* CUDA IPC allreduce (the protocol is in cuda_ipc.h). */
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include "base/alloc.h"
#include "core/comm.h"
#include "core/engine.h"
#include "base/log.h"
#include "base/status.h"
#include "cuda/cuda_ipc.h"
#include "cuda/cuda_kernels.h"
#include "shm/shm.h"

/* Bytes of one chunk: each rank's buffer holds an input and an output half
 * of this size.  8 MiB keeps the per-chunk synchronisation (two node
 * barriers, a few stream synchronisations: tens of microseconds) under 10%
 * of a chunk's time at NVLink speeds while costing 16 MiB of device memory
 * per rank.  A multiple of 16 bytes, so every chunk starts 16-byte aligned. */
#define GCOLL_CUDA_IPC_CHUNK (8u << 20)

struct gcoll_cuda_ipc {
    gcoll_comm_t comm;        /* owner: node ranks, barriers, size for AVG */
    int          device;
    int          me, nlocal;  /* local rank and node size */
    cudaStream_t stream;
    char        *buf;         /* mine: [input half | output half] */
    char        *peer[GCOLL_CUDA_MAX_INPUTS];  /* every rank's buf, mine included */
};

typedef struct {
    int                ok;
    cudaIpcMemHandle_t handle;
} ipc_card_t;   /* what a rank tells the others of its node at creation */

static gcoll_status_t cuda_failed(cudaError_t e, const char *what)
{
    (void)cudaGetLastError();   /* clear a sticky launch error */
    return GCOLL_ERROR(GCOLL_ERR_TRANSPORT, "CUDA IPC path: %s failed: %s", what,
                       cudaGetErrorString(e));
}

/* ---- set-up ------------------------------------------------------------- */

/* This rank's half of the set-up; why says what failed. */
static int setup_local(gcoll_cuda_ipc_t *x, ipc_card_t *card, char *why, size_t len)
{
    cudaError_t e;
    const char *what = "cudaSetDevice";
    if ((e = cudaSetDevice(x->device)) != cudaSuccess) goto fail;
    /* A blocking stream: its work waits for what the caller queued on the
     * legacy default stream (an upload, a memset) before the call. */
    what = "cudaStreamCreate";
    if ((e = cudaStreamCreate(&x->stream)) != cudaSuccess) goto fail;
    what = "cudaMalloc of the IPC buffer";
    if ((e = cudaMalloc((void **)&x->buf, 2 * (size_t)GCOLL_CUDA_IPC_CHUNK)) != cudaSuccess) goto fail;
    x->peer[x->me] = x->buf;
    what = "cudaIpcGetMemHandle";
    if (x->nlocal > 1 && (e = cudaIpcGetMemHandle(&card->handle, x->buf)) != cudaSuccess) goto fail;
    /* the rail level stages through the communicator's page-locked buffer
     * (gcoll_comm_stage): grown to a chunk now, so no call allocates it */
    void *stage;
    if (x->comm->nnodes > 1 &&
        gcoll_comm_stage(x->comm, GCOLL_CUDA_IPC_CHUNK, &stage) != GCOLL_SUCCESS) {
        snprintf(why, len, "%s", gcoll_last_error());
        return 0;
    }
    return 1;
fail:
    (void)cudaGetLastError();
    snprintf(why, len, "%s on device %d: %s", what, x->device, cudaGetErrorString(e));
    return 0;
}

/* Map every other rank's buffer of the node. */
static int open_peers(gcoll_cuda_ipc_t *x, const ipc_card_t *cards, char *why, size_t len)
{
    for (int q = 0; q < x->nlocal; q++) {
        if (q == x->me) continue;
        if (!cards[q].ok) {
            snprintf(why, len, "local rank %d could not set up its buffer", q);
            return 0;
        }
        cudaError_t e = cudaIpcOpenMemHandle((void **)&x->peer[q], cards[q].handle,
                                             cudaIpcMemLazyEnablePeerAccess);
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            x->peer[q] = NULL;
            snprintf(why, len, "cudaIpcOpenMemHandle of local rank %d's buffer on device %d: %s "
                     "(the GPUs may lack peer access)", q, x->device, cudaGetErrorString(e));
            return 0;
        }
    }
    return 1;
}

static int shape_ok(const gcoll_comm_t comm, char *why, size_t len)
{
    if (!comm->nodes_uniform) {
        snprintf(why, len, "the nodes hold different numbers of ranks");
        return 0;
    }
    if (comm->local_size > GCOLL_CUDA_MAX_INPUTS) {
        snprintf(why, len, "%d ranks on a node, more than the %d one reduction reads",
                 comm->local_size, GCOLL_CUDA_MAX_INPUTS);
        return 0;
    }
    return 1;
}

gcoll_status_t gcoll_cuda_ipc_create(gcoll_comm_t comm, int device, gcoll_cuda_ipc_t **ipc)
{
    *ipc = NULL;
    char why[256] = "cannot allocate the path's state";
    gcoll_cuda_ipc_t *x = gcoll_calloc(1, sizeof(*x));
    ipc_card_t mine = { 0 }, cards[comm->local_size];   /* a few dozen bytes a rank */
    int prev = -1;
    (void)cudaGetDevice(&prev);
    if (x) {
        x->comm = comm, x->device = device;
        x->me = comm->local_rank, x->nlocal = comm->local_size;
        mine.ok = shape_ok(comm, why, sizeof(why)) && setup_local(x, &mine, why, sizeof(why));
    }
    /* every rank takes part in both exchanges, whatever failed locally; a
     * failed exchange leaves its output undefined: nothing of it is used */
    int got = MPI_Allgather(&mine, sizeof(mine), MPI_BYTE, cards, sizeof(mine), MPI_BYTE,
                            comm->node_comm) == MPI_SUCCESS;
    if (!got && mine.ok) snprintf(why, sizeof(why), "MPI_Allgather of the IPC handles failed");
    int ok = mine.ok && got && open_peers(x, cards, why, sizeof(why)), all_ok = 0;
    if (MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm->mpi_comm) != MPI_SUCCESS) {
        if (ok) snprintf(why, sizeof(why), "MPI_Allreduce of the set-up's outcome failed");
        all_ok = ok = 0;
    }
    if (prev >= 0) (void)cudaSetDevice(prev);
    if (!all_ok) {
        if (x) gcoll_cuda_ipc_destroy(x);   /* its node barrier matches the peers' */
        else if (comm->local_size > 1) MPI_Barrier(comm->node_comm);
        return GCOLL_ERROR(GCOLL_ERR_NOT_SUPPORTED, "CUDA IPC path unavailable: %s",
                           ok ? "another rank could not set it up (its log says why)" : why);
    }
    gcoll_info("CUDA IPC path on device %d: %d ranks on the node, %u MiB chunks", device,
               x->nlocal, GCOLL_CUDA_IPC_CHUNK >> 20);
    *ipc = x;
    return GCOLL_SUCCESS;
}

/* Collective over the node (called as the communicator is destroyed): every
 * rank closes its mappings before any owner frees its buffer. */
void gcoll_cuda_ipc_destroy(gcoll_cuda_ipc_t *x)
{
    if (!x) return;
    int prev = -1;
    (void)cudaGetDevice(&prev);
    (void)cudaSetDevice(x->device);
    int mapped = x->nlocal < GCOLL_CUDA_MAX_INPUTS ? x->nlocal : GCOLL_CUDA_MAX_INPUTS;
    for (int q = 0; q < mapped; q++)
        if (q != x->me && x->peer[q]) (void)cudaIpcCloseMemHandle(x->peer[q]);
    if (x->nlocal > 1) MPI_Barrier(x->comm->node_comm);
    if (x->buf) (void)cudaFree(x->buf);
    if (x->stream) (void)cudaStreamDestroy(x->stream);
    (void)cudaGetLastError();
    if (prev >= 0) (void)cudaSetDevice(prev);
    free(x);
}

int gcoll_cuda_ipc_device(const gcoll_cuda_ipc_t *x)
{
    return x->device;
}

/* ---- one call ----------------------------------------------------------- */

/* One call in flight.  A rank whose own work fails (a CUDA error, buffers on
 * another device) keeps taking part in every barrier and rail allreduce of
 * the protocol, skipping only its device work, because its peers wait in
 * them; at the end all ranks agree on the outcome, so either every rank
 * returns success or every rank returns an error. */
typedef struct {
    gcoll_cuda_ipc_t *x;
    gcoll_comm_t      rail;
    gcoll_dtype_t     dtype;
    gcoll_op_t        op;      /* AVG folded as SUM */
    size_t            dt;
    gcoll_status_t    st;      /* this rank's first failure */
} ipc_call_t;

/* Run a CUDA call unless this rank has already failed; keep its failure. */
#define CUDA_STEP(_k, _call, _what) \
    do { \
        if ((_k)->st == GCOLL_SUCCESS) { \
            cudaError_t _e = (_call); \
            if (_e != cudaSuccess) (_k)->st = cuda_failed(_e, _what); \
        } \
    } while (0)

#define GCOLL_STEP(_k, _call) \
    do { \
        if ((_k)->st == GCOLL_SUCCESS) (_k)->st = (_call); \
    } while (0)

static void keep(ipc_call_t *k, gcoll_status_t st)
{
    if (k->st == GCOLL_SUCCESS) k->st = st;
}

static void node_barrier(ipc_call_t *k)
{
    gcoll_cuda_ipc_t *x = k->x;
    if (x->nlocal == 1) return;
    if (x->comm->shm) keep(k, gcoll_shm_barrier(x->comm->shm));
    else if (MPI_Barrier(x->comm->node_comm) != MPI_SUCCESS)
        keep(k, GCOLL_ERROR(GCOLL_ERR_TRANSPORT, "CUDA IPC path: MPI_Barrier of the node failed"));
}

static int aligned16(const void *p)
{
    return ((uintptr_t)p & 15u) == 0;
}

/* Step 3: my reduced slice across the nodes, through the communicator's
 * page-locked buffer (a chunk large since set-up: this cannot allocate).
 * The rail allreduce runs even after a local failure (with whatever the
 * staging buffer holds): the rail's other ranks are in it. */
static void rail_step(ipc_call_t *k, char *out, char *dst, size_t n)
{
    gcoll_cuda_ipc_t *x = k->x;
    size_t bytes = n * k->dt;
    char *host;
    keep(k, gcoll_comm_stage(x->comm, GCOLL_CUDA_IPC_CHUNK, (void **)&host));
    if (bytes)
        CUDA_STEP(k, cudaMemcpyAsync(host, out, bytes, cudaMemcpyDeviceToHost, x->stream),
                  "copy of the slice to host");
    CUDA_STEP(k, cudaStreamSynchronize(x->stream), "cudaStreamSynchronize");
    /* gcoll_allreduce is a public call: it starts by clearing the sentence,
     * which after a local failure is the one agree() returns with k->st */
    char why[512] = "";
    if (k->st != GCOLL_SUCCESS) snprintf(why, sizeof(why), "%s", gcoll_last_error());
    gcoll_status_t st = gcoll_allreduce(host, host, n, k->dtype, k->op, k->rail);
    if (k->st != GCOLL_SUCCESS) gcoll_error_restore(why);
    else keep(k, st);
    if (!bytes) return;
    CUDA_STEP(k, cudaMemcpyAsync(out, host, bytes, cudaMemcpyHostToDevice, x->stream),
              "copy of the slice from host");
    CUDA_STEP(k, cudaMemcpyAsync(dst, out, bytes, cudaMemcpyDeviceToDevice, x->stream),
              "copy of the slice into dst");
}

static void one_chunk(ipc_call_t *k, const char *src, char *dst, size_t n)
{
    gcoll_cuda_ipc_t *x = k->x;
    size_t dt = k->dt, lo, hi;
    const size_t out_off = GCOLL_CUDA_IPC_CHUNK;
    CUDA_STEP(k, cudaMemcpyAsync(x->buf, src, n * dt, cudaMemcpyDeviceToDevice, x->stream),
              "copy of src into the IPC buffer");
    CUDA_STEP(k, cudaStreamSynchronize(x->stream), "cudaStreamSynchronize");
    node_barrier(k);

    gcoll_cuda_ipc_slice(n, dt, x->nlocal, x->me, &lo, &hi);
    const void *in[GCOLL_CUDA_MAX_INPUTS];
    for (int q = 0; q < x->nlocal; q++) in[q] = x->peer[q] + lo * dt;
    char *mine = x->buf + out_off + lo * dt, *to = dst + lo * dt;
    /* the kernel writes dst too where that keeps its 16-byte loads */
    void *const out[2] = { mine, aligned16(to) ? to : NULL };   /* mine is aligned */
    GCOLL_STEP(k, gcoll_cuda_reduce(out, in, x->nlocal, hi - lo, k->dtype, k->op, x->stream));
    if (!out[1] && hi > lo)
        CUDA_STEP(k, cudaMemcpyAsync(to, mine, (hi - lo) * dt, cudaMemcpyDeviceToDevice,
                                     x->stream), "copy of the slice into dst");
    if (k->rail) rail_step(k, mine, to, hi - lo);
    CUDA_STEP(k, cudaStreamSynchronize(x->stream), "cudaStreamSynchronize");
    node_barrier(k);

    for (int q = 0; q < x->nlocal; q++) {
        if (q == x->me) continue;
        gcoll_cuda_ipc_slice(n, dt, x->nlocal, q, &lo, &hi);
        if (hi > lo)
            CUDA_STEP(k, cudaMemcpyAsync(dst + lo * dt, x->peer[q] + out_off + lo * dt,
                                         (hi - lo) * dt, cudaMemcpyDeviceToDevice, x->stream),
                      "copy of a peer's slice");
    }
    CUDA_STEP(k, cudaStreamSynchronize(x->stream), "cudaStreamSynchronize");
}

/* Every rank's outcome: this rank's, or an error naming another rank's. */
static gcoll_status_t agree(ipc_call_t *k)
{
    int mine = (int)k->st, worst = mine;
    if (MPI_Allreduce(&mine, &worst, 1, MPI_INT, MPI_MAX, k->x->comm->mpi_comm) != MPI_SUCCESS)
        return GCOLL_ERROR(GCOLL_ERR_TRANSPORT, "CUDA IPC path: MPI_Allreduce of the outcome "
                           "failed");
    if (mine != GCOLL_SUCCESS) return k->st;   /* its sentence is already set */
    if (worst != GCOLL_SUCCESS)
        return GCOLL_ERROR((gcoll_status_t)worst, "gcoll_allreduce: the device allreduce failed "
                           "on another rank (its log says why); this rank's result is invalid");
    return GCOLL_SUCCESS;
}

/* The call's bytes in the communicator's counters, as the host path counts
 * them: the input this rank exposed to its node (once per call, as a NODE
 * allreduce step counts it) and what the rail level sent, which the rail
 * sub-communicator counted (gcoll_stats_t: all levels). */
static void count_bytes(const ipc_call_t *k, size_t count, const gcoll_stats_t *rail0)
{
    gcoll_comm_t c = k->x->comm;
    gcoll_engine_lock();   /* the progress thread counts too */
    if (k->st == GCOLL_SUCCESS && k->x->nlocal > 1) c->stats.bytes_sent += count * k->dt;
    if (k->rail) {
        c->stats.bytes_sent += k->rail->stats.bytes_sent - rail0->bytes_sent;
        c->stats.bytes_sent_inter_node +=
            k->rail->stats.bytes_sent_inter_node - rail0->bytes_sent_inter_node;
    }
    gcoll_engine_unlock();
}

gcoll_status_t gcoll_cuda_ipc_allreduce(gcoll_cuda_ipc_t *x, const void *src, int src_dev,
                                        void *dst, int dst_dev, size_t count,
                                        gcoll_dtype_t dtype, gcoll_op_t op, gcoll_comm_t rail)
{
    ipc_call_t k = { x, rail, dtype, op == GCOLL_AVG ? GCOLL_SUM : op, gcoll_dtype_size(dtype),
                     GCOLL_SUCCESS };
    gcoll_stats_t rail0 = { 0, 0, 0 };
    if (rail) {
        gcoll_engine_lock();
        rail0 = rail->stats;
        gcoll_engine_unlock();
    }
    if (src_dev != x->device || dst_dev != x->device)
        k.st = GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "gcoll_allreduce: sendbuf is on %s %d and "
                           "recvbuf on device %d, but this communicator's device path runs on "
                           "device %d (set up by its first device allreduce): both buffers must "
                           "be on that device (one device per communicator, as NCCL)",
                           src_dev < 0 ? "host, not a device:" : "device", src_dev, dst_dev,
                           x->device);
    int prev = -1;
    (void)cudaGetDevice(&prev);
    if (prev != x->device) CUDA_STEP(&k, cudaSetDevice(x->device), "cudaSetDevice");
    size_t per = GCOLL_CUDA_IPC_CHUNK / k.dt;
    for (size_t o = 0; o < count; o += per) {
        size_t n = count - o < per ? count - o : per;
        one_chunk(&k, (const char *)src + o * k.dt, (char *)dst + o * k.dt, n);
    }
    if (op == GCOLL_AVG) {
        GCOLL_STEP(&k, gcoll_cuda_avg(dst, count, dtype, x->comm->size, x->stream));
        CUDA_STEP(&k, cudaStreamSynchronize(x->stream), "cudaStreamSynchronize");
    }
    if (prev >= 0 && prev != x->device) (void)cudaSetDevice(prev);
    count_bytes(&k, count, &rail0);
    return agree(&k);
}
