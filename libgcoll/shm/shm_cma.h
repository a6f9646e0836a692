/* SPDX-License-Identifier: BSD-3-Clause */
/* Single-copy allgather, bcast and reduce through Cross Memory Attach
 * (process_vm_readv): every rank reads its peers' blocks (the root's
 * buffer) straight out of their buffers into its own result, one kernel
 * copy per block, where the copying forms move each block twice (into the
 * segment, out of it); in a reduce every rank reads its slice of the
 * peers' inputs, reduces it and writes it into the root's result.  For
 * any buffer, unlike the zero-copy form, which needs gcoll_mem_alloc memory and goes first where
 * every rank has it (shm_zcopy.h).
 * Off unless GCOLL_SHM_CMA=1: once the segment's ops moved through window
 * places (shm_coll.c), the copying forms beat it at every size measured
 * on the Zen 4 guest (docs/design.md, "Single copy by CMA"). */
#ifndef GCOLL_SHM_CMA_H
#define GCOLL_SHM_CMA_H

#include <mpi.h>
#include "shm/shm.h"

/* Allgather blocks from this size (the largest rank's, in bytes) take the
 * single copy: below it the copying form's one step beats a system call
 * per peer.  Bcasts past the ring (32 KiB) take it below the second size:
 * from there the copying form, whose root copies chunk t while the readers
 * copy chunk t - 1, is faster; and only where every rank has a CPU: with
 * ranks sharing CPUs the readers' whole-buffer copies from the root's
 * memory queue up behind each other, while the copying form's chunks stay
 * in cache (4 ranks on 2 CPUs, 64-512 KiB: 1.4-2x slower single) (docs/design.md,
 * "Single copy by CMA").  Reduces take it where each rank's slice (bytes /
 * P) is at least the third size: below it the copying pipeline's steps
 * cost less than a read and a write system call per piece (2 ranks:
 * 128 KiB 11 against 9 µs; 256 KiB 20 against 31-35; 3 ranks on 2 CPUs:
 * 256 KiB 86 against 67, 512 KiB 145 against 175). */
#define GCOLL_SHM_CMA_MIN       (16u << 10)
#define GCOLL_SHM_CMA_BCAST_MAX (2u << 20)
#define GCOLL_SHM_CMA_REDUCE_SLICE (128u << 10)

/* Collective over the node: probe whether every rank can read every peer's
 * memory (same user, no ptrace restriction, one PID namespace) and agree;
 * GCOLL_SHM_CMA=0 turns it off.  Never fails: without it the node copies.
 * oversubscribed (the host's ranks outnumber its CPUs, the same on every
 * rank): bcasts keep the copying form, see gcoll_shm_cma_takes. */
void gcoll_shm_cma_setup(gcoll_shm_t *shm, MPI_Comm node_comm, int oversubscribed);
void gcoll_shm_cma_destroy(gcoll_shm_t *shm);

/* Whether an allgather whose largest block is `bytes`, or a bcast or a
 * reduce of `bytes` (coll: GCOLL_COLL_ALLGATHER, _BCAST or _REDUCE), takes
 * it. */
int gcoll_shm_cma_takes(const gcoll_shm_t *shm, int coll, size_t bytes);

/* The phases of SHM_FORM_CMA, an allgather's, a bcast's or a reduce's
 * (shm_coll.c runs them); pieces: how many work phases the largest block
 * (a reduce: slice) needs.  A read that fails marks the op
 * failed (o->failed), after which it still takes every step. */
size_t gcoll_shm_cma_pieces(size_t block);
void gcoll_shm_cma_body(gcoll_shm_t *shm, gcoll_shm_op_t *o);

/* Allgathers, bcasts and reduces that ran the single copy on this segment since its
 * creation. */
uint64_t gcoll_shm_cma_calls(const gcoll_shm_t *shm);

#endif
