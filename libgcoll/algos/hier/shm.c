/* SPDX-License-Identifier: BSD-3-Clause */
/* Single-node algorithms: the whole collective is one NODE step, run through
 * the node's shared-memory segment (libgcoll/shm).  They serve only
 * communicators that live on one node; on more nodes they decline, and the
 * hierarchical algorithms (which use the same NODE steps for their intra-node
 * phases) apply.
 *
 * Cost: the shared-memory kernels' own (see shm/shm.c): about one cache-line
 * handshake (alpha_shm) plus the bytes through L3 and memory once. */
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

static size_t all_bytes(const gcoll_coll_args_t *a, const gcoll_group_t *g)
{
    return a->count * a->dt_size * (size_t)g->size;
}

/* The NODE step's last flags (GCOLL_STEP_SLICED, _SINGLE), if it was added. */
static void mark_node(gcoll_sched_t *s, uint8_t flags)
{
    if (s->status == GCOLL_SUCCESS && s->nsteps) s->steps[s->nsteps - 1].flags |= flags;
}

/* One NODE allreduce step with step flags (GCOLL_STEP_SLICED: shm_sliced). */
static gcoll_status_t node_allreduce(const gcoll_coll_args_t *a, const gcoll_group_t *g,
                                     gcoll_sched_t *s, const char *name, uint8_t flags)
{
    GCOLL_TRY(one_node(a, g, name));
    gcoll_sched_node(s, GCOLL_COLL_ALLREDUCE, a->dst, a->src, a->count * a->dt_size, 0);
    mark_node(s, flags);
    return GCOLL_SUCCESS;
}

static gcoll_status_t build_allreduce(const gcoll_coll_args_t *a, const gcoll_group_t *g,
                                      gcoll_sched_t *s)
{
    return node_allreduce(a, g, s, "allreduce shm", 0);
}

/* shm with the sliced form at every size (shm.h GCOLL_SHM_SLICED). */
static gcoll_status_t build_allreduce_sliced(const gcoll_coll_args_t *a, const gcoll_group_t *g,
                                             gcoll_sched_t *s)
{
    return node_allreduce(a, g, s, "allreduce shm_sliced", GCOLL_STEP_SLICED);
}

static gcoll_status_t node_bcast(const gcoll_coll_args_t *a, const gcoll_group_t *g,
                                 gcoll_sched_t *s, const char *name, uint8_t flags)
{
    GCOLL_TRY(one_node(a, g, name));
    gcoll_sched_node(s, GCOLL_COLL_BCAST, a->dst, a->dst, a->count * a->dt_size, a->root);
    mark_node(s, flags);
    return GCOLL_SUCCESS;
}

static gcoll_status_t build_bcast(const gcoll_coll_args_t *a, const gcoll_group_t *g,
                                  gcoll_sched_t *s)
{
    return node_bcast(a, g, s, "bcast shm", 0);
}

/* Every rank reads the root's buffer itself (shm.h GCOLL_SHM_SINGLE). */
static gcoll_status_t build_bcast_cma(const gcoll_coll_args_t *a, const gcoll_group_t *g,
                                      gcoll_sched_t *s)
{
    return node_bcast(a, g, s, "bcast shm_cma", GCOLL_STEP_SINGLE);
}

static gcoll_status_t build_reduce(const gcoll_coll_args_t *a, const gcoll_group_t *g,
                                   gcoll_sched_t *s)
{
    GCOLL_TRY(one_node(a, g, "reduce shm"));
    gcoll_sched_node(s, GCOLL_COLL_REDUCE, a->dst, a->src, a->count * a->dt_size, a->root);
    return GCOLL_SUCCESS;
}

static gcoll_status_t node_allgather(const gcoll_coll_args_t *a, const gcoll_group_t *g,
                                     gcoll_sched_t *s, const char *name, uint8_t flags)
{
    GCOLL_TRY(one_node(a, g, name));
    gcoll_sched_node(s, GCOLL_COLL_ALLGATHER, a->dst, a->src, all_bytes(a, g), 0);
    mark_node(s, flags);
    return GCOLL_SUCCESS;
}

static gcoll_status_t build_allgather(const gcoll_coll_args_t *a, const gcoll_group_t *g,
                                      gcoll_sched_t *s)
{
    return node_allgather(a, g, s, "allgather shm", 0);
}

/* Every rank reads the peers' blocks itself (shm.h GCOLL_SHM_SINGLE). */
static gcoll_status_t build_allgather_cma(const gcoll_coll_args_t *a, const gcoll_group_t *g,
                                          gcoll_sched_t *s)
{
    return node_allgather(a, g, s, "allgather shm_cma", GCOLL_STEP_SINGLE);
}

static gcoll_status_t build_reduce_scatter(const gcoll_coll_args_t *a, const gcoll_group_t *g,
                                           gcoll_sched_t *s)
{
    GCOLL_TRY(one_node(a, g, "reduce_scatter shm"));
    gcoll_sched_node(s, GCOLL_COLL_REDUCE_SCATTER, a->dst, a->src, all_bytes(a, g), 0);
    return GCOLL_SUCCESS;
}

static gcoll_status_t build_barrier(const gcoll_coll_args_t *a, const gcoll_group_t *g,
                                    gcoll_sched_t *s)
{
    GCOLL_TRY(one_node(a, g, "barrier shm"));
    gcoll_sched_node(s, GCOLL_COLL_BARRIER, a->dst, a->src, 1, 0);
    return GCOLL_SUCCESS;
}

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
