/* SPDX-License-Identifier: BSD-3-Clause */
/* Zero-copy forms of the shared-memory collectives (shm_zcopy.c): the hooks
 * that shm_coll.c and shm_segment.c call.  Internal to libgcoll/shm.
 *
 * A large form (allreduce and reduce's pipeline, reduce_scatter, allgather
 * and bcast beyond the inline size) that gcoll_shm_zc_start() accepts runs
 * as the form SHM_FORM_ZC first: in its phase 0 every rank publishes where
 * its buffers lie (a descriptor in its flag's inline line, which those forms
 * leave unused), and after step 0 every rank reads the same descriptors and
 * makes the same choice: all buffers of all ranks shareable, so reduce or
 * copy straight out of the peers' buffers; or hand back to the copying form
 * (o->zc_form), which then runs as it would have, or one phase late when
 * some ranks skipped its phase 0 (they expected zero-copy). */
#ifndef GCOLL_SHM_ZCOPY_H
#define GCOLL_SHM_ZCOPY_H

#include <mpi.h>
#include "shm/shm.h"

/* Calls moving fewer bytes than this copy: two steps cost more than the
 * copies they save. */
#define GCOLL_SHM_ZC_MIN (16u << 10)

/* Collective over node_comm, at the end of gcoll_shm_create: can every rank
 * map the others' gcoll_mem_alloc memory (and does GCOLL_ZCOPY allow it)?
 * The answer is the same on every rank.  Never fails: without it the
 * segment only copies. */
void gcoll_shm_zc_setup(gcoll_shm_t *shm, MPI_Comm node_comm);

/* Free what setup made and unpin every mapping. */
void gcoll_shm_zc_destroy(gcoll_shm_t *shm);

/* The op in progress was abandoned (the segment is broken): unpin what it
 * pinned. */
void gcoll_shm_zc_abandon(gcoll_shm_t *shm);

/* At the end of op start, for a large form (o->form set, not inline):
 * whether to negotiate.  Identical on every rank (it depends on the
 * segment's setup and the collective's size only); looks up this rank's
 * buffers in the registry and keeps their descriptor for phase 0. */
int gcoll_shm_zc_start(gcoll_shm_t *shm, gcoll_shm_op_t *o);

/* One phase of SHM_FORM_ZC.  Returns 1 when the copying form's body must
 * run in this phase too, with o->t as it now stands: phase 0 of a rank
 * whose buffers are not all shareable, and the phase in which the node
 * declined (then o->form is o->zc_form again, for good, and o->t and
 * o->last are the copying form's). */
int gcoll_shm_zc_body(gcoll_shm_t *shm, gcoll_shm_op_t *o);

#endif
