/* SPDX-License-Identifier: BSD-3-Clause */
/* Host executor: a request's schedule as a resumable state machine over the
 * communicator's transport and shared segment (executor.h; round semantics
 * in schedule.h).
 *
 *   stage 0  post every SEND/RECV of the round
 *   stage 1  run the round's early NODE steps (each may take several calls),
 *            test the transport operations; both done -> stage 2
 *   stage 2  run the round's local steps in order; a NODE step that must
 *            wait for its node returns and resumes on the next call
 *
 * NODE steps of one communicator run in posting order, one request at a
 * time (node_turn): the segment's step protocol allows one collective at a
 * time, and posting order is the same on every rank, so the ranks of a node
 * always meet in the same collective. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/clock.h"
#include "base/alloc.h"
#include "core/comm.h"
#include "base/config.h"
#include "core/executor.h"
#include "base/log.h"
#include "base/status.h"
#include "algos/algo.h"
#include "shm/shm.h"

static gcoll_status_t reqs_reserve(gcoll_exec_state_t *x, size_t n)
{
    if (n <= x->reqs_cap) return GCOLL_SUCCESS;
    size_t cap = x->reqs_cap ? x->reqs_cap : 16;
    while (cap < n) cap *= 2;
    gcoll_tl_req_t *r = gcoll_realloc(x->reqs, cap * sizeof(*r));
    if (!r) return GCOLL_ERROR(GCOLL_ERR_NO_MEMORY, "cannot allocate %zu transport requests", cap);
    x->reqs     = r;
    x->reqs_cap = cap;
    return GCOLL_SUCCESS;
}

static inline void *at(void *const bufs[GCOLL_BUF_COUNT], gcoll_bref_t r)
{
    return (char *)bufs[r.buf] + r.off;
}

static void count_sent(struct gcoll_comm *c, int peer, size_t bytes)
{
    c->stats.bytes_sent += bytes;
    if (c->node_of[peer] != c->node) c->stats.bytes_sent_inter_node += bytes;
}

/* Cancel every open transport operation of the round: afterwards none of
 * them can write to the request's buffers or slots. */
static void cancel_open(struct gcoll_request *r)
{
    struct gcoll_comm *c = r->comm;
    gcoll_exec_state_t *x = &r->x;
    for (size_t i = x->first_open; i < x->nreqs; i++)
        if (!x->reqs[i].done && c->tl->cancel) c->tl->cancel(c->tl_ctx, &x->reqs[i]);
    x->first_open = x->nreqs;
}

/* A NODE step left half done puts the node's step counters out of step. */
static void abandon(struct gcoll_request *r)
{
    cancel_open(r);
    if (r->x.in_node) gcoll_shm_break(r->comm->shm);
    r->x.in_node   = 0;
    r->x.node_left = 0;
    r->x.round     = r->sched.nrounds;
}

void gcoll_exec_abort(struct gcoll_request *r)
{
    abandon(r);
}

void gcoll_exec_start(struct gcoll_request *r)
{
    gcoll_exec_state_t *x = &r->x;
    const gcoll_sched_t *s = &r->sched;
    x->round = 0;
    x->stage = 0;
    x->in_node = 0;
    x->used_transport = 0;
    x->next = 0;
    x->nreqs = x->first_open = 0;
    x->tag = r->comm->seq++;
    x->node_left = 0;
    for (uint32_t i = 0; i < s->nsteps; i++) x->node_left += gcoll_step_is_node(&s->steps[i]);
    x->idle_since = r->comm->cfg.timeout > 0 ? gcoll_clock_now() : 0;
}

void gcoll_exec_fini(struct gcoll_request *r)
{
    free(r->x.reqs);
    r->x.reqs = NULL;
    r->x.reqs_cap = 0;
}

static gcoll_status_t post_step(struct gcoll_comm *c, const gcoll_step_t *st, uint32_t tag,
                                void *const bufs[GCOLL_BUF_COUNT], gcoll_tl_req_t *req)
{
    memset(req, 0, sizeof(*req));
    req->peer = st->peer;
    if (st->type == GCOLL_STEP_SEND) {
        count_sent(c, st->peer, st->bytes);
        return c->tl->isend(c->tl_ctx, st->peer, tag, at(bufs, st->src), st->bytes, req);
    }
    return c->tl->irecv(c->tl_ctx, st->peer, tag, at(bufs, st->dst), st->bytes, req);
}

static gcoll_status_t post_round(struct gcoll_request *r, uint32_t begin, uint32_t end)
{
    gcoll_exec_state_t *x = &r->x;
    const gcoll_sched_t *s = &r->sched;
    size_t ncomm = 0;
    for (uint32_t i = begin; i < end; i++) ncomm += gcoll_step_is_comm(&s->steps[i]);
    GCOLL_TRY(reqs_reserve(x, ncomm));
    x->nreqs = x->first_open = 0;
    if (ncomm) x->used_transport = 1;
    for (uint32_t i = begin; i < end; i++) {
        if (!gcoll_step_is_comm(&s->steps[i])) continue;
        gcoll_status_t st = post_step(r->comm, &s->steps[i], x->tag, r->bufs, &x->reqs[x->nreqs]);
        x->nreqs++;
        if (st != GCOLL_SUCCESS) return st;   /* the caller cancels what is open */
    }
    return GCOLL_SUCCESS;
}

/* Test the round's open operations; *all = 1 when every one is done. */
static gcoll_status_t test_round(struct gcoll_request *r, int *all, int *advanced)
{
    struct gcoll_comm *c = r->comm;
    gcoll_exec_state_t *x = &r->x;
    for (size_t i = x->first_open; i < x->nreqs; i++) {
        gcoll_tl_req_t *q = &x->reqs[i];
        if (!q->done) GCOLL_TRY(c->tl->test(c->tl_ctx, q));
        if (q->done && q->status != GCOLL_SUCCESS) return q->status;
        if (q->done && i == x->first_open) {
            x->first_open++;
            *advanced = 1;
        }
    }
    *all = x->first_open == x->nreqs;
    return GCOLL_SUCCESS;
}

/* No earlier request of this communicator still has NODE steps to run. */
static int node_turn(const struct gcoll_request *r)
{
    for (const struct gcoll_request *q = r->prev; q; q = q->prev)
        if (q->comm == r->comm && q->x.node_left) return 0;
    return 1;
}

/* Bytes this rank exposes to its node count as sent, intra-node. */
static void count_node(struct gcoll_comm *c, const gcoll_step_t *st)
{
    switch (st->node_coll) {
    case GCOLL_COLL_ALLGATHER: c->stats.bytes_sent += st->bytes / (size_t)c->local_size; break;
    case GCOLL_COLL_BCAST:
        if (c->local_rank == st->peer) c->stats.bytes_sent += st->bytes;
        break;
    case GCOLL_COLL_BARRIER: break;
    default: c->stats.bytes_sent += st->bytes; break;
    }
}

/* The segment's form flags of a NODE step (the same on every rank). */
static unsigned shm_flags(const gcoll_step_t *st)
{
    return (st->flags & GCOLL_STEP_SLICED ? GCOLL_SHM_SLICED : 0) |
           (st->flags & GCOLL_STEP_SINGLE ? GCOLL_SHM_SINGLE : 0);
}

/* A NODE step, resumable: *fin = 1 when it has finished on this rank. */
static gcoll_status_t node_step(struct gcoll_request *r, const gcoll_step_t *st, int *fin,
                                int *advanced)
{
    struct gcoll_comm *c = r->comm;
    const gcoll_sched_t *s = &r->sched;
    gcoll_exec_state_t *x = &r->x;
    *fin = 0;
    if (!c->shm) return GCOLL_ERROR(GCOLL_ERR_INTERNAL, "NODE step without a shared segment");
    if (!x->in_node) {
        if (!node_turn(r)) return GCOLL_SUCCESS;
        size_t count = st->node_coll == GCOLL_COLL_BCAST ? st->bytes : st->bytes / s->dt_size;
        GCOLL_TRY(gcoll_shm_op_start(c->shm, &x->shm_op, st->node_coll, at(r->bufs, st->src),
                                     at(r->bufs, st->dst), count, s->dtype, s->op, st->peer,
                                     shm_flags(st)));
        count_node(c, st);
        x->in_node = 1;
        *advanced = 1;
    }
    uint64_t before = x->shm_op.t;
    int done = 0;
    GCOLL_TRY(gcoll_shm_op_progress(c->shm, &x->shm_op, &done));
    /* the only work of a waiting caller: poll the flags in a tight loop, as
     * a blocking shared-memory collective does, not one pass at a time;
     * as long as the segment allows before the engine yields or sleeps */
    while (!done && x->spin && gcoll_shm_op_spin(c->shm, &x->shm_op, gcoll_shm_spin_limit(c->shm)))
        GCOLL_TRY(gcoll_shm_op_progress(c->shm, &x->shm_op, &done));
    if (x->shm_op.t != before) *advanced = 1;
    if (!done) return GCOLL_SUCCESS;
    x->in_node = 0;
    x->node_left--;
    *fin = 1;
    *advanced = 1;
    return GCOLL_SUCCESS;
}

int gcoll_exec_lone_node(const struct gcoll_request *r)
{
    const gcoll_sched_t *s = &r->sched;
    return s->nrounds == 1 && s->nsteps == 1 && gcoll_step_is_node(&s->steps[0]);
}

/* gcoll_exec_start's state, then the one step run and spun on.  Not done:
 * the state is the one post_round leaves for a round without transfers
 * (stage 1 from the round's first step), so exec_advance picks the NODE
 * step up where node_step left it, early or not. */
gcoll_status_t gcoll_exec_direct(struct gcoll_request *r, int *done)
{
    gcoll_exec_state_t *x = &r->x;
    gcoll_exec_start(r);
    x->stage = 1;   /* what post_round leaves for a round without transfers */
    x->spin = 1;
    int fin = 0, advanced = 0;
    gcoll_status_t st = node_step(r, &r->sched.steps[0], &fin, &advanced);
    x->spin = 0;
    *done = fin || st != GCOLL_SUCCESS;
    if (st != GCOLL_SUCCESS) abandon(r);
    else if (fin) x->round = 1;
    return st;
}

/* Stage 1: early NODE steps in order, while the transfers fly. */
static gcoll_status_t run_early(struct gcoll_request *r, uint32_t end, int *advanced)
{
    gcoll_exec_state_t *x = &r->x;
    for (; x->next < end; x->next++) {
        const gcoll_step_t *st = &r->sched.steps[x->next];
        if (!(st->flags & GCOLL_STEP_EARLY)) continue;
        int fin;
        GCOLL_TRY(node_step(r, st, &fin, advanced));
        if (!fin) return GCOLL_SUCCESS;
    }
    return GCOLL_SUCCESS;
}

/* Stage 2: the round's local steps in order. */
static gcoll_status_t run_locals(struct gcoll_request *r, uint32_t end, int *advanced)
{
    gcoll_exec_state_t *x = &r->x;
    const gcoll_sched_t *s = &r->sched;
    for (; x->next < end; x->next++) {
        const gcoll_step_t *st = &s->steps[x->next];
        if (gcoll_step_is_comm(st) || (st->flags & GCOLL_STEP_EARLY)) continue;
        if (gcoll_step_is_node(st)) {
            int fin;
            GCOLL_TRY(node_step(r, st, &fin, advanced));
            if (!fin) return GCOLL_SUCCESS;
        } else {
            GCOLL_TRY(gcoll_sched_exec_local(s, st, r->bufs));
            *advanced = 1;
        }
    }
    return GCOLL_SUCCESS;
}

static gcoll_status_t exec_advance(struct gcoll_request *r, int *done, int *advanced)
{
    gcoll_exec_state_t *x = &r->x;
    const gcoll_sched_t *s = &r->sched;
    while (x->round < s->nrounds) {
        uint32_t begin = gcoll_sched_round_begin(s, x->round), end = s->round_end[x->round];
        if (x->stage == 0) {
            GCOLL_TRY(post_round(r, begin, end));
            x->stage = 1;
            x->next = begin;
            *advanced = 1;
        }
        if (x->stage == 1) {
            int comms_done = 0;
            GCOLL_TRY(run_early(r, end, advanced));
            GCOLL_TRY(test_round(r, &comms_done, advanced));
            if (x->next < end || !comms_done) return GCOLL_SUCCESS;
            x->stage = 2;
            x->next = begin;
        }
        GCOLL_TRY(run_locals(r, end, advanced));
        if (x->next < end) return GCOLL_SUCCESS;
        x->round++;
        x->stage = 0;
    }
    *done = 1;
    return GCOLL_SUCCESS;
}

/* r made no progress for GCOLL_TIMEOUT seconds: cancel what it posted and
 * return GCOLL_ERR_TIMEOUT naming the ranks it waits for. */
static gcoll_status_t gcoll_exec_timeout(struct gcoll_request *r)
{
    struct gcoll_comm *c = r->comm;
    gcoll_exec_state_t *x = &r->x;
    char peers[256] = "";
    size_t len = 0;
    for (size_t i = x->first_open; i < x->nreqs && len < sizeof(peers) - 32; i++)
        if (!x->reqs[i].done)
            len += (size_t)snprintf(peers + len, sizeof(peers) - len, "%s%d",
                                    len ? ", " : "rank(s) ", x->reqs[i].peer);
    if (x->in_node && c->shm) {
        char who[128];
        gcoll_shm_missing(c->shm, who, sizeof(who));
        snprintf(peers + len, sizeof(peers) - len, "%slocal rank(s) %s of its node",
                 len ? " and " : "", who);
    } else if (!len) {
        snprintf(peers, sizeof(peers), "an earlier request's shared-memory steps");
    }
    abandon(r);
    return GCOLL_ERROR(GCOLL_ERR_TIMEOUT, "rank %d waited more than GCOLL_TIMEOUT=%g s for %s",
                       c->rank, c->cfg.timeout, peers);
}

gcoll_status_t gcoll_exec_progress(struct gcoll_request *r, int *done, int *advanced)
{
    *done = 0;
    gcoll_status_t st = exec_advance(r, done, advanced);
    if (st != GCOLL_SUCCESS) {
        abandon(r);
        *done = 1;
        return st;
    }
    double timeout = r->comm->cfg.timeout;
    if (timeout > 0 && *advanced) r->x.idle_since = gcoll_clock_now();
    else if (timeout > 0 && !*done && gcoll_clock_now() - r->x.idle_since > timeout) {
        *done = 1;
        return gcoll_exec_timeout(r);
    }
    return GCOLL_SUCCESS;
}


gcoll_shm_t *gcoll_exec_parkable(const struct gcoll_request *r)
{
    const gcoll_exec_state_t *x = &r->x;
    if (!x->in_node || !gcoll_shm_op_waits(r->comm->shm, &x->shm_op) || x->first_open < x->nreqs)
        return NULL;
    return r->comm->shm;
}
