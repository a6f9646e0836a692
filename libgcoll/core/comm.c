/* SPDX-License-Identifier: BSD-3-Clause */
/* Communicator life: duplicate the MPI communicator, read the configuration,
 * find the node structure, connect the transport; and the registry of live
 * communicators (core/live.h) that lets every call reject a destroyed handle. */
#include <stdlib.h>
#include <string.h>
#include "gcoll_build.h"  /* configure results (HAVE_UCX, ...) */
#include "base/alloc.h"
#include "core/comm.h"
#include "core/coll.h"
#include "base/config.h"
#include "core/engine.h"
#include "core/request_pool.h"
#include "core/live.h"
#include "base/log.h"
#include "core/memtype.h"
#include "core/select.h"
#include "core/select_online.h"
#include "base/status.h"
#include "core/tune_cache.h"
#include "shm/shm.h"
#ifdef HAVE_CUDA
#include "cuda/cuda_ipc.h"
#endif

gcoll_status_t gcoll_comm_check(gcoll_comm_t comm)
{
    if (!comm) return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "the communicator is NULL");
    if (!gcoll_live_has(comm))
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG,
                           "the communicator %p was destroyed or never created", (void *)comm);
    return GCOLL_SUCCESS;
}

/* node_of[r] for every rank, nodes numbered densely by their lowest rank. */
static gcoll_status_t topo_real_nodes(struct gcoll_comm *c, int *leader_of)
{
    MPI_Comm node_comm;
    int leader;
    if (MPI_Comm_split_type(c->mpi_comm, MPI_COMM_TYPE_SHARED, c->rank, MPI_INFO_NULL,
                            &node_comm) != MPI_SUCCESS)
        return GCOLL_ERROR(GCOLL_ERR_TRANSPORT, "MPI_Comm_split_type(SHARED) failed");
    MPI_Allreduce(&c->rank, &leader, 1, MPI_INT, MPI_MIN, node_comm);
    MPI_Comm_free(&node_comm);
    MPI_Allgather(&leader, 1, MPI_INT, leader_of, 1, MPI_INT, c->mpi_comm);
    return GCOLL_SUCCESS;
}

/* Ranks on node k, counted without memory (a failed allocation on one rank
 * must not make it see another shape than its peers). */
static int node_count(const struct gcoll_comm *c, int k)
{
    int n = 0;
    for (int r = 0; r < c->size; r++) n += c->node_of[r] == k;
    return n;
}

static void topo_shape(struct gcoll_comm *c)
{
    c->nodes_uniform = c->nodes_contiguous = 1;
    for (int r = 1; r < c->size; r++)
        if (c->node_of[r] != c->node_of[r - 1] && c->node_of[r] != c->node_of[r - 1] + 1)
            c->nodes_contiguous = 0;
    int first = node_count(c, 0);
    for (int k = 1; k < c->nnodes && c->nodes_uniform; k++)
        if (node_count(c, k) != first) c->nodes_uniform = 0;
}

/* The node's shared segment.  Every rank of the communicator must agree on
 * whether NODE steps exist (algorithm choice depends on it), so a failure on
 * any node turns them off everywhere, with a WARN. */
static gcoll_status_t shm_init(struct gcoll_comm *c, MPI_Comm host_of)
{
    if (MPI_Comm_split(c->mpi_comm, c->node, c->rank, &c->node_comm) != MPI_SUCCESS)
        return GCOLL_ERROR(GCOLL_ERR_TRANSPORT, "MPI_Comm_split by node failed");
    /* The ranks sharing this host's CPUs decide how long waiters may spin.
     * A sub-communicator asks its parent's (host_of): its own two ranks of a
     * node may share two CPUs with the parent's other ranks. */
    MPI_Comm host_comm;
    if (MPI_Comm_split_type(host_of, MPI_COMM_TYPE_SHARED, c->rank, MPI_INFO_NULL,
                            &host_comm) != MPI_SUCCESS)
        return GCOLL_ERROR(GCOLL_ERR_TRANSPORT, "MPI_Comm_split_type(SHARED) failed");
    gcoll_status_t st = gcoll_shm_create(c->node_comm, host_comm, &c->cfg, &c->shm);
    MPI_Comm_free(&host_comm);
    int ok = st == GCOLL_SUCCESS, all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, c->mpi_comm);
    if (!all_ok) {
        if (ok) gcoll_shm_destroy(c->shm);
        c->shm = NULL;
        gcoll_warn("no shared-memory segment on %s node: intra-node steps use the transport (%s)",
                   ok ? "another" : "this", ok ? "see that rank's log" : gcoll_last_error());
    }
    return GCOLL_SUCCESS;
}

/* node_of[r] of a sub-communicator: each rank stays on the node the parent
 * put it on (GCOLL_NODE_SIZE counts the parent's ranks, not ours).  The
 * parent's node indices land in c->node_of for a moment (topo_init
 * overwrites it), so nothing is allocated between collectives. */
static void topo_parent_nodes(struct gcoll_comm *c, const struct gcoll_comm *parent,
                              int *leader_of)
{
    int *pnode = c->node_of;
    MPI_Allgather(&parent->node, 1, MPI_INT, pnode, 1, MPI_INT, c->mpi_comm);
    for (int r = 0; r < c->size; r++) {   /* our first rank on the same parent node */
        leader_of[r] = 0;
        while (pnode[leader_of[r]] != pnode[r]) leader_of[r]++;
    }
}

/* The node map.  Its memory is had, and agreed on, before the collectives
 * that fill it: a rank that could not allocate must not skip them. */
static gcoll_status_t topo_init(struct gcoll_comm *c, const struct gcoll_comm *parent)
{
    int *leader_of = gcoll_malloc(sizeof(int) * (size_t)c->size);
    c->node_of     = gcoll_malloc(sizeof(int) * (size_t)c->size);
    gcoll_status_t st = leader_of && c->node_of
                            ? GCOLL_SUCCESS
                            : GCOLL_ERROR(GCOLL_ERR_NO_MEMORY,
                                          "cannot allocate the node map of %d ranks", c->size);
    st = gcoll_agree(c->mpi_comm, st, "gcoll_comm_create: the node map");
    if (st != GCOLL_SUCCESS) {
        free(leader_of);
        return st;
    }
    if (parent)
        topo_parent_nodes(c, parent, leader_of);
    else if (c->cfg.node_size > 0)
        for (int r = 0; r < c->size; r++) leader_of[r] = r - r % c->cfg.node_size;
    else
        st = topo_real_nodes(c, leader_of);
    if (st == GCOLL_SUCCESS) {
        /* leaders appear in increasing order of their first rank */
        c->nnodes = 0;
        for (int r = 0; r < c->size; r++) {
            if (leader_of[r] == r) c->nnodes++;
            c->node_of[r] = c->nnodes - 1;
            if (leader_of[r] != r) c->node_of[r] = c->node_of[leader_of[r]];
        }
        c->node = c->node_of[c->rank];
        topo_shape(c);
        c->local_rank = c->local_size = 0;
        for (int r = 0; r < c->size; r++) {
            if (c->node_of[r] != c->node) continue;
            if (r < c->rank) c->local_rank++;
            c->local_size++;
        }
    }
    free(leader_of);
    return st;
}

static const gcoll_tl_ops_t *tl_wanted(const struct gcoll_comm *c)
{
#ifdef HAVE_UCX
    if (c->cfg.transport != GCOLL_TRANSPORT_MPI) return &gcoll_tl_ucx;
#endif
    (void)c;
    return &gcoll_tl_mpi;
}

/* Collective: all ranks agree on the outcome, so a rank whose UCX failed does
 * not leave the others talking UCX to it. */
static gcoll_status_t tl_init(struct gcoll_comm *c)
{
#ifndef HAVE_UCX
    if (c->cfg.transport == GCOLL_TRANSPORT_UCX)
        return GCOLL_ERROR(GCOLL_ERR_NOT_SUPPORTED,
                           "GCOLL_TRANSPORT=ucx but libgcoll was built without UCX");
#endif
    const gcoll_tl_ops_t *tl = tl_wanted(c);
    gcoll_status_t st = tl->init(c, &c->tl_ctx);
    int failed = st != GCOLL_SUCCESS, any_failed = 0;
    MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, c->mpi_comm);
    if (any_failed && !failed) tl->fini(c->tl_ctx);
    if (any_failed && tl != &gcoll_tl_mpi && c->cfg.transport == GCOLL_TRANSPORT_AUTO) {
        gcoll_warn("transport %s failed to start on some rank; falling back to mpi", tl->name);
        tl = &gcoll_tl_mpi;
        st = tl->init(c, &c->tl_ctx);
        failed = st != GCOLL_SUCCESS;
        MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, c->mpi_comm);
    }
    if (any_failed)
        return st != GCOLL_SUCCESS ? st
                                   : GCOLL_ERROR(GCOLL_ERR_TRANSPORT,
                                                 "transport %s failed to start on another rank",
                                                 tl->name);
    c->tl = tl;   /* the transport logs its own description at INFO */
    return GCOLL_SUCCESS;
}

static void comm_free(struct gcoll_comm *c)
{
    gcoll_failure_fini(c);
#ifdef HAVE_CUDA
    gcoll_cuda_ipc_destroy(c->cuda_ipc);   /* first: its barrier uses node_comm */
#endif
    if (c->level_node) gcoll_comm_destroy(c->level_node);
    if (c->level_rail) gcoll_comm_destroy(c->level_rail);
    gcoll_engine_shm_release(c->shm);
    if (c->shm) gcoll_shm_destroy(c->shm);
    if (c->node_comm != MPI_COMM_NULL) MPI_Comm_free(&c->node_comm);
    if (c->in_engine) gcoll_engine_comm_remove(c);
    if (c->tl) c->tl->fini(c->tl_ctx);
    gcoll_failure_comm_free(&c->mpi_comm, c->failure.status != GCOLL_SUCCESS);   /* an abandoned call's */
    gcoll_sched_fini(&c->sched);
    free(c->node_of);
    gcoll_cuda_host_free(c->stage);
    gcoll_request_pool_free(c);
    gcoll_select_online_free(c);
    c->magic = 0;
    free(c);
}

static gcoll_status_t check_create_args(MPI_Comm mpi_comm, gcoll_comm_t *comm)
{
    int inited = 0, finalized = 0, inter = 0;
    if (!comm) return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "gcoll_comm_create: comm is NULL");
    MPI_Initialized(&inited);
    MPI_Finalized(&finalized);
    if (!inited || finalized)
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG,
                           "gcoll_comm_create: MPI is not initialised (or already finalised)");
    if (mpi_comm == MPI_COMM_NULL)
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "gcoll_comm_create: mpi_comm is MPI_COMM_NULL");
    MPI_Comm_test_inter(mpi_comm, &inter);
    if (inter)
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG,
                           "gcoll_comm_create: inter-communicators are not supported");
    return GCOLL_SUCCESS;
}

static gcoll_status_t comm_create(MPI_Comm mpi_comm, const struct gcoll_comm *parent,
                                  gcoll_comm_t *comm)
{
    *comm = NULL;
    int world_rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    gcoll_log_rank = world_rank;

    /* A malformed variable must fail on every rank alike: it is the same
     * environment everywhere under mpirun, but agree explicitly anyway.
     * Every set-up step below ends in an agreement before the next
     * collective one (core/failure.h). */
    gcoll_config_t cfg;
    gcoll_status_t st = GCOLL_SUCCESS;
    if (parent) cfg = parent->cfg;   /* levels inherit */
    else st = gcoll_config_load(&cfg);
    GCOLL_TRY(gcoll_agree(mpi_comm, st, "gcoll_comm_create: the GCOLL_* environment"));

    struct gcoll_comm *c = gcoll_calloc(1, sizeof(*c));
    if (c) c->cfg = cfg;
    st = gcoll_agree(mpi_comm,
                                    c ? GCOLL_SUCCESS
                                      : GCOLL_ERROR(GCOLL_ERR_NO_MEMORY,
                                                    "cannot allocate a communicator"),
                                    "gcoll_comm_create: the communicator");
    if (st != GCOLL_SUCCESS) {
        free(c);
        return st;
    }
    c->magic    = GCOLL_COMM_MAGIC;
    c->mpi_comm = MPI_COMM_NULL;
    c->node_comm = MPI_COMM_NULL;
    c->failure.comm = MPI_COMM_NULL;
    c->failure.recv = MPI_REQUEST_NULL;
    c->parent   = (struct gcoll_comm *)parent;
    for (int k = 0; k < GCOLL_COLL_COUNT; k++) c->checked[k].call.coll = GCOLL_COLL_COUNT;
    gcoll_sched_init(&c->sched);
    if (MPI_Comm_dup(mpi_comm, &c->mpi_comm) != MPI_SUCCESS) {
        c->mpi_comm = MPI_COMM_NULL;
        st = GCOLL_ERROR(GCOLL_ERR_TRANSPORT, "MPI_Comm_dup failed");
    }
    if ((st = gcoll_agree(mpi_comm, st, "gcoll_comm_create: MPI_Comm_dup")) != GCOLL_SUCCESS)
        goto err_free;
    /* errors on our duplicate come back as codes (e.g. a truncated message
     * becomes GCOLL_ERR_TRANSPORT), not as an abort of the job */
    MPI_Comm_set_errhandler(c->mpi_comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(c->mpi_comm, &c->rank);
    MPI_Comm_size(c->mpi_comm, &c->size);
    if ((st = topo_init(c, parent)) != GCOLL_SUCCESS) goto err_free;
    if ((st = gcoll_failure_init(c)) != GCOLL_SUCCESS) goto err_free;
    if ((st = shm_init(c, parent ? parent->mpi_comm : c->mpi_comm)) != GCOLL_SUCCESS) goto err_free;
    if ((st = gcoll_select_init(c)) != GCOLL_SUCCESS) goto err_free;   /* agreed inside */
    if ((st = tl_init(c)) != GCOLL_SUCCESS) goto err_free;
    if ((st = gcoll_engine_comm_add(c)) != GCOLL_SUCCESS) goto err_free;
    c->in_engine = 1;
    gcoll_info("communicator of %d ranks on %d node(s), %d rank(s) on mine (local rank %d)%s",
               c->size, c->nnodes, c->local_size, c->local_rank,
               c->cfg.node_size ? " [simulated by GCOLL_NODE_SIZE]" : "");
    st = gcoll_live_add(c) == GCOLL_SUCCESS
             ? GCOLL_SUCCESS
             : GCOLL_ERROR(GCOLL_ERR_NO_MEMORY, "cannot register the communicator");
    if ((st = gcoll_agree(c->mpi_comm, st, "gcoll_comm_create: the handle registry")) !=
        GCOLL_SUCCESS) {
        gcoll_live_remove(c);
        goto err_free;
    }
    /* Rows measured on this machine for this shape, calibrating now if there
     * are none (core/tune_cache.c).  Sub-communicators, levels of their
     * parent's algorithms, are neither measured nor given cache rows. */
    if (!parent && (st = gcoll_agree(c->mpi_comm, gcoll_tune_cache_setup(c),
                                     "gcoll_comm_create: the calibration cache")) != GCOLL_SUCCESS) {
        gcoll_live_remove(c);
        goto err_free;
    }
    *comm = c;
    return GCOLL_SUCCESS;

err_free:
    comm_free(c);
    return st;
}

gcoll_status_t gcoll_comm_create(MPI_Comm mpi_comm, gcoll_comm_t *comm)
{
    gcoll_error_clear();
    GCOLL_TRY(check_create_args(mpi_comm, comm));
    return comm_create(mpi_comm, NULL, comm);
}

gcoll_status_t gcoll_comm_create_sub(gcoll_comm_t parent, int color, int key, gcoll_comm_t *sub)
{
    MPI_Comm split;
    GCOLL_TRY(gcoll_comm_check(parent));
    if (MPI_Comm_split(parent->mpi_comm, color, key, &split) != MPI_SUCCESS)
        return GCOLL_ERROR(GCOLL_ERR_TRANSPORT, "MPI_Comm_split for a sub-communicator failed");
    gcoll_status_t st = comm_create(split, parent, sub);
    MPI_Comm_free(&split);
    return st;
}

gcoll_status_t gcoll_comm_levels(gcoll_comm_t comm, gcoll_comm_t *node, gcoll_comm_t *rail)
{
    if (!comm->level_rail) {   /* every made pair has a rail */
        int hier = comm->nodes_uniform && comm->local_size > 1;
        int l = hier ? comm->local_rank : 0;
        gcoll_status_t st = GCOLL_SUCCESS;
        if (hier) st = gcoll_comm_create_sub(comm, comm->node, comm->rank, &comm->level_node);
        if (st == GCOLL_SUCCESS) st = gcoll_comm_create_sub(comm, l, comm->rank, &comm->level_rail);
        if (st != GCOLL_SUCCESS) {   /* all or nothing: the next caller starts afresh */
            if (comm->level_node) gcoll_comm_destroy(comm->level_node);
            comm->level_node = comm->level_rail = NULL;
            return st;
        }
    }
    *node = comm->level_node;
    *rail = comm->level_rail;
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll_comm_destroy(gcoll_comm_t comm)
{
    gcoll_error_clear();
    GCOLL_TRY(gcoll_comm_check(comm));
    gcoll_coll_direct_free(comm);
    if (comm->nrequests)
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG,
                           "gcoll_comm_destroy: %zu request(s) of this communicator are still "
                           "outstanding (complete them, and free persistent ones, first)",
                           comm->nrequests);
    gcoll_live_remove(comm);
    comm_free(comm);
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll_comm_rank(gcoll_comm_t comm, int *rank)
{
    GCOLL_TRY(gcoll_comm_check(comm));
    if (!rank) return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "gcoll_comm_rank: rank is NULL");
    *rank = comm->rank;
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll_comm_size(gcoll_comm_t comm, int *size)
{
    GCOLL_TRY(gcoll_comm_check(comm));
    if (!size) return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "gcoll_comm_size: size is NULL");
    *size = comm->size;
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll_comm_get_stats(gcoll_comm_t comm, gcoll_stats_t *stats)
{
    GCOLL_TRY(gcoll_comm_check(comm));
    if (!stats) return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "gcoll_comm_get_stats: stats is NULL");
    /* All levels: the operations that run on the level sub-communicators
     * (level_node, level_rail: the compressed allreduce, the CUDA IPC path's
     * rails) fold what those counted into comm->stats as each call ends, so
     * adding the levels' counters here would count their bytes twice. */
    gcoll_engine_lock();   /* the progress thread counts too */
    *stats = comm->stats;
    gcoll_engine_unlock();
    return GCOLL_SUCCESS;
}


gcoll_status_t gcoll_comm_zcopy_stats(gcoll_comm_t comm, uint64_t *taken, uint64_t *declined)
{
    gcoll_shm_zc_stats_t z;
    GCOLL_TRY(gcoll_comm_check(comm));
    gcoll_engine_lock();   /* the progress thread counts */
    gcoll_shm_zc_stats(comm->shm, &z);
    gcoll_engine_unlock();
    if (taken) *taken = z.taken;
    if (declined) *declined = z.declined + z.failed;
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll_comm_direct_stats(gcoll_comm_t comm, uint64_t *done, uint64_t *handed)
{
    GCOLL_TRY(gcoll_comm_check(comm));
    gcoll_engine_lock();
    if (done) *done = comm->direct_done;
    if (handed) *handed = comm->direct_handed;
    gcoll_engine_unlock();
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll_comm_stage(gcoll_comm_t comm, size_t bytes, void **stage)
{
    GCOLL_TRY(gcoll_cuda_host_reserve(&comm->stage, &comm->stage_size, bytes));
    *stage = comm->stage;
    return GCOLL_SUCCESS;
}
