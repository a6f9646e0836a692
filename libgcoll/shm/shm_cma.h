/* SPDX-License-Identifier: BSD-3-Clause */
/* Single copy through Cross Memory Attach (process_vm_readv).  A reduce:
 * every rank reads its slice of the peers' inputs straight out of their
 * buffers, reduces it and writes it into the root's result, where the
 * copying pipeline copies every input into the segment and the reduced
 * slices out of it again.  An allgather or bcast with GCOLL_SHM_SINGLE
 * (the shm_cma algorithm): every rank reads the peers' blocks (the root's
 * buffer) straight into its result.  For any buffer, unlike the zero-copy
 * form, which needs gcoll_mem_alloc memory and goes first where every rank
 * has it (shm_zcopy.h).
 *
 * Allgathers and bcasts took it by default until 2026-12-06: once the
 * segment's ops moved through window places (shm_coll.c), their copying
 * forms beat it on the Zen 4 guest in both of its states; on the Intel
 * Xeon guest of 2026-12-07 it beat them and Open MPI's at 8 KiB-8 MiB
 * blocks, so since then it is an algorithm of its own that the
 * calibration times (docs/design.md, "Single copy by CMA"). */
#ifndef GCOLL_SHM_CMA_H
#define GCOLL_SHM_CMA_H

#include <mpi.h>
#include "shm/shm.h"

/* Reduces take it where each rank's slice (bytes / P) is at least this:
 * below it the copying pipeline's steps cost less than a read and a write
 * system call per piece (2 ranks: 128 KiB 11 against 9 µs; 256 KiB 20
 * against 31-35; 3 ranks on 2 CPUs: 256 KiB 86 against 67, 512 KiB 145
 * against 175). */
#define GCOLL_SHM_CMA_REDUCE_SLICE (128u << 10)

/* Collective over the node: probe whether every rank can read every peer's
 * memory (same user, no ptrace restriction, one PID namespace) and agree;
 * GCOLL_SHM_CMA=off turns it off.  Never fails: without it the node copies. */
void gcoll_shm_cma_setup(gcoll_shm_t *shm, MPI_Comm node_comm);
void gcoll_shm_cma_destroy(gcoll_shm_t *shm);

/* Whether a reduce of `bytes` may take it (GCOLL_SHM_CMA=auto: whether it
 * does is the root's choice, shm_coll.c "The reduce's form"). */
int gcoll_shm_cma_takes(const gcoll_shm_t *shm, size_t bytes);

/* The phases of SHM_FORM_CMA (shm_coll.c runs them); pieces: how many work
 * phases collective coll's largest slice (block) needs.  A read that fails
 * marks the op failed (o->failed), after which it still takes every step. */
size_t gcoll_shm_cma_pieces(int coll, size_t block);
void gcoll_shm_cma_body(gcoll_shm_t *shm, gcoll_shm_op_t *o);

/* Reduces, allgathers and bcasts that ran the single copy on this segment
 * since its creation. */
uint64_t gcoll_shm_cma_calls(const gcoll_shm_t *shm);

#endif
