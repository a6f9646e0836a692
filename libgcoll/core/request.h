/* SPDX-License-Identifier: BSD-3-Clause */
/* A request: one collective call in flight (or a persistent one at rest),
 * with everything its execution needs, so that many can be outstanding on
 * one communicator.  Requests are pooled per communicator: once warm, a call
 * allocates nothing (its schedule, scratch and transport slots are kept).
 *
 * Life:   pool --post/init--> built --start--> active --(progress)--> done
 *         done: non-persistent back to the pool by test/wait; persistent
 *         inactive again until the next start or gcoll_request_free. */
#ifndef GCOLL_REQUEST_H
#define GCOLL_REQUEST_H

#include <stddef.h>
#include <stdint.h>
#include "gcoll.h"
#include "core/schedule.h"
#include "transport/transport.h"
#include "shm/shm.h"

#define GCOLL_REQUEST_MAGIC 0x67726571u   /* "greq" */

/* One call as the user made it, before mapping onto schedule buffers. */
typedef struct {
    int           coll;        /* gcoll_coll_t */
    const char   *fn;          /* public function name, for messages */
    const void   *sendbuf;
    void         *recvbuf;
    size_t        count;
    gcoll_dtype_t dtype;
    gcoll_op_t    op;
    int           root;
    struct gcoll_compressor *compressor;   /* compressed allreduce only */
} gcoll_call_t;

/* Where the executor stands in a request's schedule (executor.c). */
typedef struct {
    uint32_t        round;
    uint8_t         stage;       /* 0 post the round, 1 comms in flight, 2 local steps */
    uint8_t         in_node;     /* a NODE step's shm op is running */
    uint8_t         used_transport; /* posted a transport operation */
    uint8_t         spin;        /* its waiter has nothing else to do: spin on shm */
    uint32_t        next;        /* next step of the round to look at */
    size_t          nreqs;       /* transport operations of the round */
    size_t          first_open;  /* all before it are done */
    gcoll_tl_req_t *reqs;        /* kept across calls, grown between rounds */
    size_t          reqs_cap;
    uint32_t        tag;
    uint32_t        node_left;   /* NODE steps still to run */
    double          idle_since;  /* GCOLL_TIMEOUT: when it last advanced */
    gcoll_shm_op_t  shm_op;
} gcoll_exec_state_t;

struct gcoll_request {
    uint32_t              magic;
    struct gcoll_comm    *comm;
    struct gcoll_request *pool_next;          /* the communicator's free list */
    struct gcoll_request *prev, *next;        /* the engine's active list */
    uint8_t               persistent;
    uint8_t               active;             /* in the engine: not yet completed */
    uint8_t               started;            /* started, completion not yet reported
                                               * by test/wait (MPI's "active") */
    uint8_t               eager;              /* runs at start (device / compressed) */
    uint8_t               caller_only;        /* the progress thread must not touch it */
    uint8_t               built;              /* sched was built for call (all but fn) */
    uint32_t              built_epoch;        /* ... under this comm->select_epoch */
    const char           *algo_name;          /* ... by this algorithm */
    gcoll_status_t        status;             /* outcome of the last completion */
    char                  err[256];           /* its sentence */
    gcoll_call_t          call;
    gcoll_sched_t         sched;
    void                 *bufs[GCOLL_BUF_COUNT];
    void                 *scratch;
    size_t                scratch_size;
    gcoll_exec_state_t    x;
    /* An engine task instead of a schedule (the compressed allreduce): the
     * pass calls task(r, ...) like gcoll_exec_progress; it posts child
     * requests on sub-communicators and does local work between them. */
    gcoll_status_t      (*task)(struct gcoll_request *r, int *done, int *advanced);
    void                 *task_state;
};

#endif
