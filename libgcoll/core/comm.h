/* SPDX-License-Identifier: BSD-3-Clause */
/* The communicator: a private duplicate of the user's MPI communicator, the
 * node structure derived from it, the transport context, the reusable
 * schedule and scratch, and the counters. */
#ifndef GCOLL_COMM_H
#define GCOLL_COMM_H

#include <stdint.h>
#include "gcoll.h"
#include "base/config.h"
#include "core/schedule.h"
#include "transport/transport.h"
#include "algos/algo.h"
#include "core/failure.h"
#include "core/request.h"

#define GCOLL_COMM_MAGIC 0x67636f6cu  /* "gcol" */

struct gcoll_comm {
    uint32_t              magic;
    gcoll_config_t        cfg;          /* GCOLL_* at create (a sub-communicator: its parent's) */
    MPI_Comm              mpi_comm;     /* private duplicate: our traffic only */
    int                   rank, size;

    /* Topology: node index of each rank, nodes numbered by their lowest rank. */
    int                  *node_of;      /* [size] */
    int                   node;         /* my node */
    int                   nnodes;
    int                   local_rank;   /* index among my node's ranks */
    int                   local_size;   /* ranks on my node */
    int                   nodes_uniform;    /* every node holds local_size ranks */
    int                   nodes_contiguous; /* each node's ranks are consecutive */
    MPI_Comm              node_comm;    /* my node's ranks, ordered by rank */
    struct gcoll_shm     *shm;          /* node segment for NODE steps, or NULL */

    const gcoll_tl_ops_t *tl;
    void                 *tl_ctx;

    uint32_t              seq;          /* collective calls posted, for tags */
    struct gcoll_request *pool;         /* free requests, each keeping its arrays */
    size_t                nrequests;    /* requests handed out (active or persistent) */
    int                   caller_only;  /* the progress thread must not touch it */
    int                   in_engine;    /* registered with the progress engine */
    gcoll_sched_t         sched;        /* for trial builds (gcoll_select_try) */

    /* Selection: algorithms forced by GCOLL_ALGO (NULL = choose), and which
     * (collective, log2 size) decisions were already logged at INFO. */
    const gcoll_algo_t   *forced[GCOLL_COLL_COUNT];
    uint64_t              logged[GCOLL_COLL_COUNT];
    uint8_t               warned_fallback[GCOLL_COLL_COUNT]; /* WARN once per collective */
    const struct gcoll_tune_table *tune;  /* table in force: shared, immutable (select.c) */
    struct {                              /* the last decision per collective (select.c) */
        size_t              bytes;        /* SIZE_MAX: none yet */
        const void         *row;          /* its gcoll_tune_row_t, or NULL */
        const gcoll_algo_t *algo;
    } last_select[GCOLL_COLL_COUNT];
    /* Bumped whenever a decision may change (a forced algorithm, a table
     * from the cache): a request's kept schedule is reused only for the
     * same call under the same epoch (coll.c). */
    uint32_t              select_epoch;
    /* The rivals tried as the job runs (core/select_online.h): the states,
     * and per collective a bit per size class that has one. */
    struct gcoll_select_online *online;
    uint64_t              online_classes[GCOLL_COLL_COUNT];
    /* The last blocking call per collective that passed validation, and the
     * bytes it moves: a loop of identical calls is not validated again. */
    struct {
        gcoll_call_t      call;         /* coll = GCOLL_COLL_COUNT: none */
        size_t            sbytes, dbytes;
    } checked[GCOLL_COLL_COUNT];

    /* Per collective, the request of the last blocking call whose schedule
     * is one NODE step, kept for the same call again (coll.c: the direct
     * path), or NULL; counted in nrequests until destroy gives it back. */
    struct gcoll_request *direct[GCOLL_COLL_COUNT];
    uint64_t              direct_done;   /* calls the direct path finished */
    uint64_t              direct_handed; /* calls it started, then queued */

    gcoll_stats_t         stats;

    /* Revocation after a failure one rank saw alone (failure.h). */
    gcoll_failure_t       failure;
    struct gcoll_comm    *parent;       /* of a level sub-communicator, else NULL */

    /* Level sub-communicators of composite operations (gcoll_comm_levels),
     * made on first use, shared by every user, freed with this one. */
    struct gcoll_comm    *level_node, *level_rail;   /* rail NULL: not made yet */

    /* CUDA buffers' IPC path (libgcoll/cuda/), set up by the first allreduce
     * of device buffers; cuda_ipc_state 0 = not tried, 1 = ready, -1 = not
     * available here (device buffers are staged through host memory). */
    struct gcoll_cuda_ipc *cuda_ipc;
    int                   cuda_ipc_state;
    void                 *stage;        /* pinned host image of device buffers (coll.c) */
    size_t                stage_size;
};

/* GCOLL_SUCCESS if comm is a live communicator, else GCOLL_ERR_INVALID_ARG
 * with a sentence (NULL, destroyed, or not a gcoll communicator). */
gcoll_status_t gcoll_comm_check(gcoll_comm_t comm);

/* The ranks of parent that pass the same color, ordered by key (as
 * MPI_Comm_split), as a communicator of their own that keeps the parent's
 * node map.  Collective over parent.  For composite operations (the
 * compressed allreduce's node and rail levels). */
gcoll_status_t gcoll_comm_create_sub(gcoll_comm_t parent, int color, int key, gcoll_comm_t *sub);

/* The two levels of a hierarchical composite operation, shared by all its
 * users and made on first call (collective over comm then; every rank
 * must make its first call at the same point).  node: my node's ranks,
 * when nodes are equal and hold several ranks, else NULL; rail: the ranks
 * with my local index on every node (all of comm when node is NULL). */
gcoll_status_t gcoll_comm_levels(gcoll_comm_t comm, gcoll_comm_t *node, gcoll_comm_t *rail);

/* Zero-copy counters of comm's node segment (all 0 without one): calls
 * whose node level ran on the peers' gcoll_mem_alloc buffers, and calls
 * that considered it and copied.  Internal, for tests (C and the Python
 * binding's): proof that a path was or was not taken. */
gcoll_status_t gcoll_comm_zcopy_stats(gcoll_comm_t comm, uint64_t *taken, uint64_t *declined);

/* The direct path's counters (coll.c, run_host): blocking calls that it
 * finished, and calls that it started and handed to the engine to wait
 * for.  Internal, for tests: proof that the path was or was not taken. */
gcoll_status_t gcoll_comm_direct_stats(gcoll_comm_t comm, uint64_t *done, uint64_t *handed);

/* Page-locked host memory of at least bytes, kept in the communicator, for
 * staging device buffers through the host path (not the scratch: the host
 * path uses that while the staged images are live). */
gcoll_status_t gcoll_comm_stage(gcoll_comm_t comm, size_t bytes, void **stage);

#endif
