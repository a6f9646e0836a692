/* SPDX-License-Identifier: BSD-3-Clause */
/* A schedule is what an algorithm builds for one rank: rounds of primitive
 * steps over three buffers (the user's send and receive buffers and a scratch
 * area the executor provides).
 *
 * Round semantics (the same in every executor and in the simulator):
 *   1. every SEND and RECV step of the round is posted at once;
 *   2. when all of them have completed, the local steps (REDUCE, COPY, AVG)
 *      of the round run in the order they were added;
 *   3. then the next round starts.
 * So a local step may consume what its round received and may overwrite what
 * its round sent.  The k-th message rank A sends to rank B matches the k-th
 * receive B posts from A: builders must keep the two sides' order consistent.
 *
 * Builders append without checking each call: an allocation failure is kept
 * in s->status and reported once by the caller.  Steps of zero bytes are
 * dropped (both sides compute the same sizes, so they drop symmetrically). */
#ifndef GCOLL_SCHEDULE_H
#define GCOLL_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>
#include "gcoll.h"

typedef enum {
    GCOLL_BUF_SEND = 0,   /* user's sendbuf (read only) */
    GCOLL_BUF_RECV,       /* user's recvbuf (for bcast: the buffer) */
    GCOLL_BUF_SCRATCH,    /* executor-provided, s->scratch_bytes long */
    GCOLL_BUF_COUNT
} gcoll_buf_id_t;

/* A place in one of the three buffers, in bytes. */
typedef struct {
    uint8_t buf;   /* gcoll_buf_id_t */
    size_t  off;
} gcoll_bref_t;

static inline gcoll_bref_t gcoll_bref(int buf, size_t off)
{
    gcoll_bref_t r = { (uint8_t)buf, off };
    return r;
}

static inline gcoll_bref_t gcoll_bref_add(gcoll_bref_t r, size_t off)
{
    r.off += off;
    return r;
}

static inline int gcoll_bref_eq(gcoll_bref_t a, gcoll_bref_t b)
{
    return a.buf == b.buf && a.off == b.off;
}

typedef enum {
    GCOLL_STEP_SEND = 0,  /* send bytes at src to peer */
    GCOLL_STEP_RECV,      /* receive bytes from peer into dst */
    GCOLL_STEP_REDUCE,    /* dst = src op src2, bytes/dt_size elements */
    GCOLL_STEP_COPY,      /* dst = src, bytes (no overlap unless equal: then a no-op) */
    GCOLL_STEP_AVG,       /* dst /= divisor, bytes/dt_size elements */
    GCOLL_STEP_NODE,      /* a collective among the ranks of this node (see below) */
    GCOLL_STEP_TYPE_COUNT
} gcoll_step_type_t;

/* NODE steps: a blocking collective over all ranks of the caller's node
 * (ordered by communicator rank), run through shared memory by the host
 * executor and exactly emulated by the simulator.  node_coll says which:
 *   ALLREDUCE       src, dst: bytes
 *   REDUCE_SCATTER  src: bytes; dst: this rank's block of the node-local block
 *                   partition (peers.h gcoll_block_off/len over local ranks)
 *   ALLGATHER       src: own block of that partition; dst: bytes
 *   BCAST           dst: bytes, from local rank `peer`
 *   REDUCE          src: bytes; dst on local rank `peer` only
 *   BARRIER         nothing (bytes is 1 so the step is kept)
 * A NODE step is a local step: it runs after its round's comms completed,
 * unless it is marked GCOLL_STEP_EARLY: then it runs right after the round's
 * comms are posted, while they are in flight (the overlap of the levels of a
 * hierarchical algorithm).  An early step must not touch the buffers of its
 * round's comms, and must not wait on them: NODE steps wait only on the
 * node's ranks reaching the same step, which they do after merely posting.
 * The simulator runs early steps with the other local steps (same data, a
 * pessimistic time). */
#define GCOLL_STEP_EARLY 0x1u
/* A NODE allreduce in slices at every size (shm.h GCOLL_SHM_SLICED): the
 * same data, another form; the simulator treats it as any NODE allreduce. */
#define GCOLL_STEP_SLICED 0x2u
/* A NODE allgather or bcast by single copy (shm.h GCOLL_SHM_SINGLE). */
#define GCOLL_STEP_SINGLE 0x4u
typedef struct {
    uint8_t      type;     /* gcoll_step_type_t */
    uint8_t      node_coll;/* NODE: gcoll_coll_t */
    uint8_t      flags;    /* GCOLL_STEP_EARLY, _SLICED, _SINGLE */
    int          peer;     /* SEND/RECV: rank in the communicator; AVG: divisor;
                              NODE: root's local rank */
    size_t       bytes;
    gcoll_bref_t dst;      /* RECV, REDUCE, COPY, AVG */
    gcoll_bref_t src;      /* SEND, REDUCE, COPY */
    gcoll_bref_t src2;     /* REDUCE */
} gcoll_step_t;

static inline int gcoll_step_is_node(const gcoll_step_t *st)
{
    return st->type == GCOLL_STEP_NODE;
}

static inline int gcoll_step_is_comm(const gcoll_step_t *st)
{
    return st->type == GCOLL_STEP_SEND || st->type == GCOLL_STEP_RECV;
}

typedef struct gcoll_sched {
    gcoll_step_t  *steps;
    uint32_t       nsteps, steps_cap;
    uint32_t      *round_end;     /* round r holds steps [round_end[r-1], round_end[r]) */
    uint32_t       nrounds, rounds_cap;
    size_t         scratch_bytes; /* scratch the executor must provide */
    gcoll_dtype_t  dtype;
    gcoll_op_t     op;            /* of REDUCE steps (never AVG) */
    size_t         dt_size;
    gcoll_status_t status;        /* sticky: first build failure */
} gcoll_sched_t;

void gcoll_sched_init(gcoll_sched_t *s);
void gcoll_sched_fini(gcoll_sched_t *s);
/* Empty the schedule for a new call, keeping its arrays (no malloc per call). */
void gcoll_sched_reset(gcoll_sched_t *s, gcoll_dtype_t dtype, gcoll_op_t op);

/* Close the current round; the next step starts a new one.  No-op on an empty round. */
void gcoll_sched_round(gcoll_sched_t *s);

void gcoll_sched_send(gcoll_sched_t *s, int peer, gcoll_bref_t src, size_t bytes);
void gcoll_sched_recv(gcoll_sched_t *s, int peer, gcoll_bref_t dst, size_t bytes);
void gcoll_sched_reduce(gcoll_sched_t *s, gcoll_bref_t dst, gcoll_bref_t a, gcoll_bref_t b,
                        size_t bytes);
void gcoll_sched_copy(gcoll_sched_t *s, gcoll_bref_t dst, gcoll_bref_t src, size_t bytes);
void gcoll_sched_avg(gcoll_sched_t *s, gcoll_bref_t dst, size_t bytes, int divisor);
/* node_coll is a gcoll_coll_t (algos/algo.h); root is a local rank. */
void gcoll_sched_node(gcoll_sched_t *s, int node_coll, gcoll_bref_t dst, gcoll_bref_t src,
                      size_t bytes, int root);

/* Add a NODE step marked GCOLL_STEP_EARLY at the end of round r (an
 * already closed round, or the open one), shifting later steps. */
void gcoll_sched_insert_node_early(gcoll_sched_t *s, uint32_t r, int node_coll, gcoll_bref_t dst,
                                   gcoll_bref_t src, size_t bytes, int root);

/* Where gcoll_sched_node_at() puts its step: appended to the open round. */
#define GCOLL_SCHED_APPEND UINT32_MAX

/* A NODE step appended (at == GCOLL_SCHED_APPEND) or inserted early at the
 * end of round `at`: one call for builders that pipeline some segments and
 * not others. */
static inline void gcoll_sched_node_at(gcoll_sched_t *s, uint32_t at, int node_coll,
                                       gcoll_bref_t dst, gcoll_bref_t src, size_t bytes, int root)
{
    if (at == GCOLL_SCHED_APPEND) gcoll_sched_node(s, node_coll, dst, src, bytes, root);
    else gcoll_sched_insert_node_early(s, at, node_coll, dst, src, bytes, root);
}

/* Reserve bytes of scratch (64-byte aligned) and return a reference to it. */
gcoll_bref_t gcoll_sched_scratch(gcoll_sched_t *s, size_t bytes);

/* Finish building: closes the last round; returns s->status. */
gcoll_status_t gcoll_sched_finish(gcoll_sched_t *s);

/* Steps of round r. */
static inline uint32_t gcoll_sched_round_begin(const gcoll_sched_t *s, uint32_t r)
{
    return r == 0 ? 0 : s->round_end[r - 1];
}

/* Run one local step on host memory; bufs[] indexed by gcoll_buf_id_t.
 * Shared by the host executor and the simulator so both compute the same. */
gcoll_status_t gcoll_sched_exec_local(const gcoll_sched_t *s, const gcoll_step_t *st,
                                      void *const bufs[GCOLL_BUF_COUNT]);

#endif
