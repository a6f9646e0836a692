/* SPDX-License-Identifier: BSD-3-Clause */
/* The intra-node path for CUDA buffers: CUDA IPC and device kernels.
 *
 * Each rank of a node owns one device buffer, mapped into every other rank
 * of the node through CUDA IPC once (when the communicator's first CUDA
 * allreduce runs), so a call exchanges no handles.  An allreduce goes chunk
 * by chunk through it:
 *
 *   1. copy the chunk of src into my buffer's input half;   node barrier
 *   2. reduce my slice of the chunk: one kernel reads that slice from every
 *      rank's input half (peer memory over NVLink or PCIe) in rank order and
 *      writes my output half and my dst;
 *   3. (several nodes) my slice to pinned host memory, allreduce it with the
 *      ranks of my rail through the host path, back to my output half and
 *      my dst;                                             node barrier
 *   4. copy every other rank's slice from its output half into my dst.
 *
 * Barrier 1 orders every input half before its readers; barrier 3 orders
 * every output half before its readers and every read of the input halves
 * before the next chunk overwrites them; the next chunk's barrier 1 orders
 * step 4's reads before step 2 overwrites an output half.  The barriers are
 * the node's shared-memory barrier (MPI_Barrier without a segment); each
 * rank's stream is synchronized before it enters one.  The path's stream is
 * a blocking one: it starts after work the caller queued on the legacy
 * default stream; work on the caller's own non-blocking streams must be
 * complete before the call (as with a CUDA-aware MPI).  A call ends with
 * one MPI_Allreduce of the ranks' outcomes, so a failure on one rank is an
 * error on all.
 *
 * Only built with CUDA. */
#ifndef GCOLL_CUDA_IPC_H
#define GCOLL_CUDA_IPC_H

#include <stddef.h>
#include "gcoll.h"

/* Slice q of nslices of n elements of dt bytes, [*lo, *hi): whole 16-byte
 * packs, the remainder to the last slice, so every slice but a short tail
 * reduces with 16-byte loads.  Pure (test/unit/test_cuda_host.c tests it
 * without a GPU; this header needs no CUDA). */
static inline void gcoll_cuda_ipc_slice(size_t n, size_t dt, int nslices, int q, size_t *lo,
                                        size_t *hi)
{
    size_t per = 16 / dt, packs = n / per;
    *lo = (size_t)q * packs / (size_t)nslices * per;
    *hi = q == nslices - 1 ? n : (size_t)(q + 1) * packs / (size_t)nslices * per;
}

typedef struct gcoll_cuda_ipc gcoll_cuda_ipc_t;

/* Set up the path for buffers on CUDA device `device`: allocate and map the
 * node's buffers, and agree over all of comm that every rank could.
 * Collective over comm.  GCOLL_ERR_NOT_SUPPORTED, with the reason, when any
 * rank could not (no peer access between the node's GPUs, too many ranks on
 * a node, uneven nodes); *ipc is then NULL on every rank. */
gcoll_status_t gcoll_cuda_ipc_create(gcoll_comm_t comm, int device, gcoll_cuda_ipc_t **ipc);
void gcoll_cuda_ipc_destroy(gcoll_cuda_ipc_t *ipc);

/* The device the path was set up for. */
int gcoll_cuda_ipc_device(const gcoll_cuda_ipc_t *ipc);

/* Allreduce of device buffers (src may equal dst); src_dev and dst_dev are
 * the devices holding them (-1: host).  AVG divides by comm's size at the
 * end.  Returns when dst holds the result.  rail: the ranks with my local
 * index on every node, NULL on a single node.  Collective: a rank that
 * cannot do its part (a CUDA error, buffers not on the path's device) still
 * takes part, and then every rank returns an error, with the sentence of
 * its own first failure (or one naming another rank's).  The call's bytes
 * go into comm's counters: the input this rank exposed to its node, and
 * what the rail level sent (counted by the rail sub-communicator, folded in
 * at the end of the call, as the compressed allreduce folds its levels). */
gcoll_status_t gcoll_cuda_ipc_allreduce(gcoll_cuda_ipc_t *ipc, const void *src, int src_dev,
                                        void *dst, int dst_dev, size_t count,
                                        gcoll_dtype_t dtype, gcoll_op_t op, gcoll_comm_t rail);

#endif
