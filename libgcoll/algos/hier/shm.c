/* SPDX-License-Identifier: BSD-3-Clause */
/* Single-node algorithms: the whole collective is one NODE step, run through
 * the node's shared-memory segment (libgcoll/shm).  They serve only
 * communicators that live on one node; on more nodes they decline, and the
 * hierarchical algorithms (which use the same NODE steps for their intra-node
 * phases) apply.
 *
 * Cost: the shared-memory kernels' own (see shm/shm_coll.c): about one
 * cache-line handshake (alpha_shm) plus the bytes through L3 and memory
 * once; shm_cma: two handshakes and one kernel copy of the peers' bytes
 * (shm/shm_cma.c). */
#include "algos/hier/hier.h"
#include "base/status.h"

static gcoll_status_t one_node(const gcoll_coll_args_t *a, const gcoll_group_t *g,
                               const char *name)
{
    GCOLL_TRY(gcoll_hier_check(a, g, name));
    for (int i = 1; g->node_of && i < g->size; i++)
        if (g->node_of[i] != g->node_of[0])
            return GCOLL_ERROR(GCOLL_ERR_NOT_SUPPORTED,
                               "%s serves one node only; this communicator spans several", name);
    return GCOLL_SUCCESS;
}

/* The whole collective as one NODE step, marked with the segment's form
 * flags (GCOLL_STEP_SLICED, GCOLL_STEP_SINGLE) where it has one: a bcast
 * works in place on dst from the root, a reduce gathers at the root, an
 * allgather's and a reduce_scatter's step counts the whole buffer (P
 * blocks). */
static gcoll_status_t node_coll(const gcoll_coll_args_t *a, const gcoll_group_t *g,
                                gcoll_sched_t *s, gcoll_coll_t coll, const char *name,
                                uint8_t flags)
{
    GCOLL_TRY(one_node(a, g, name));
    size_t bytes = a->count * a->dt_size;
    gcoll_bref_t src = a->src;
    int root = 0;
    switch (coll) {
    case GCOLL_COLL_BCAST:          src = a->dst; root = a->root; break;
    case GCOLL_COLL_REDUCE:         root = a->root; break;
    case GCOLL_COLL_ALLGATHER:
    case GCOLL_COLL_REDUCE_SCATTER: bytes *= (size_t)g->size; break;
    case GCOLL_COLL_BARRIER:        bytes = 1; break;
    default:                        break;
    }
    gcoll_sched_node(s, coll, a->dst, src, bytes, root);
    if (flags && s->status == GCOLL_SUCCESS && s->nsteps) s->steps[s->nsteps - 1].flags |= flags;
    return GCOLL_SUCCESS;
}

/* One builder per algorithm: the collective, its name, its flags. */
#define NODE_BUILDER(fn, coll, name, flags)                                                   \
    static gcoll_status_t fn(const gcoll_coll_args_t *a, const gcoll_group_t *g,              \
                             gcoll_sched_t *s)                                                \
    {                                                                                         \
        return node_coll(a, g, s, coll, name, flags);                                         \
    }

NODE_BUILDER(build_allreduce, GCOLL_COLL_ALLREDUCE, "allreduce shm", 0)
/* shm with the sliced form at every size (shm.h GCOLL_SHM_SLICED) */
NODE_BUILDER(build_allreduce_sliced, GCOLL_COLL_ALLREDUCE, "allreduce shm_sliced",
             GCOLL_STEP_SLICED)
NODE_BUILDER(build_bcast, GCOLL_COLL_BCAST, "bcast shm", 0)
/* every rank reads the root's buffer itself (shm.h GCOLL_SHM_SINGLE) */
NODE_BUILDER(build_bcast_cma, GCOLL_COLL_BCAST, "bcast shm_cma", GCOLL_STEP_SINGLE)
NODE_BUILDER(build_reduce, GCOLL_COLL_REDUCE, "reduce shm", 0)
NODE_BUILDER(build_allgather, GCOLL_COLL_ALLGATHER, "allgather shm", 0)
/* every rank reads the peers' blocks itself (shm.h GCOLL_SHM_SINGLE) */
NODE_BUILDER(build_allgather_cma, GCOLL_COLL_ALLGATHER, "allgather shm_cma", GCOLL_STEP_SINGLE)
NODE_BUILDER(build_reduce_scatter, GCOLL_COLL_REDUCE_SCATTER, "reduce_scatter shm", 0)
NODE_BUILDER(build_barrier, GCOLL_COLL_BARRIER, "barrier shm", 0)

const gcoll_algo_t gcoll_algo_allreduce_shm = {
    "shm", GCOLL_COLL_ALLREDUCE, "one node: slices reduced in parallel in a shared segment",
    build_allreduce };
const gcoll_algo_t gcoll_algo_allreduce_shm_sliced = {
    "shm_sliced", GCOLL_COLL_ALLREDUCE,
    "one node: as shm, but every rank reduces its slice and copies the others' at every size",
    build_allreduce_sliced };
const gcoll_algo_t gcoll_algo_bcast_shm = {
    "shm", GCOLL_COLL_BCAST, "one node: root copies into a shared segment, all copy out",
    build_bcast };
const gcoll_algo_t gcoll_algo_bcast_shm_cma = {
    "shm_cma", GCOLL_COLL_BCAST, "one node: every rank reads the root's buffer (CMA, one copy)",
    build_bcast_cma };
const gcoll_algo_t gcoll_algo_reduce_shm = {
    "shm", GCOLL_COLL_REDUCE, "one node: slices reduced in parallel, gathered at the root",
    build_reduce };
const gcoll_algo_t gcoll_algo_allgather_shm = {
    "shm", GCOLL_COLL_ALLGATHER, "one node: blocks through a shared segment",
    build_allgather };
const gcoll_algo_t gcoll_algo_allgather_shm_cma = {
    "shm_cma", GCOLL_COLL_ALLGATHER, "one node: every rank reads the peers' blocks (CMA, one copy)",
    build_allgather_cma };
const gcoll_algo_t gcoll_algo_reduce_scatter_shm = {
    "shm", GCOLL_COLL_REDUCE_SCATTER, "one node: each rank reduces its block from shared slots",
    build_reduce_scatter };
const gcoll_algo_t gcoll_algo_barrier_shm = {
    "shm", GCOLL_COLL_BARRIER, "one node: sequence flags in a shared segment",
    build_barrier };
