/* Host executor: runs one rank's schedule over the communicator's transport,
 * round by round (schedule.h gives the semantics).  All operations of a round
 * are posted nonblocking and progressed together. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/comm.h"
#include "core/config.h"
#include "core/executor.h"
#include "core/log.h"
#include "core/status.h"
#include "algos/algo.h"
#include "shm/shm.h"

/* Spin this many polls before yielding the core: short enough that an
 * oversubscribed rank hands its core to the peer it waits for quickly. */
#define GCOLL_EXEC_SPIN_POLLS 64

static gcoll_status_t reqs_reserve(struct gcoll_comm *c, size_t n)
{
    if (n <= c->reqs_cap) return GCOLL_SUCCESS;
    size_t cap = c->reqs_cap ? c->reqs_cap : 16;
    while (cap < n) cap *= 2;
    gcoll_tl_req_t *r = realloc(c->reqs, cap * sizeof(*r));
    if (!r) return GCOLL_ERROR(GCOLL_ERR_NO_MEMORY, "cannot allocate %zu transport requests", cap);
    c->reqs     = r;
    c->reqs_cap = cap;
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

static void cancel_pending(struct gcoll_comm *c, gcoll_tl_req_t *reqs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!reqs[i].done && c->tl->cancel) c->tl->cancel(c->tl_ctx, &reqs[i]);
}

static gcoll_status_t timeout_error(struct gcoll_comm *c, gcoll_tl_req_t *reqs, size_t n)
{
    char peers[256] = "";
    size_t len = 0;
    for (size_t i = 0; i < n && len < sizeof(peers) - 16; i++)
        if (!reqs[i].done)
            len += (size_t)snprintf(peers + len, sizeof(peers) - len, "%s%d", len ? ", " : "",
                                    reqs[i].peer);
    cancel_pending(c, reqs, n);
    return GCOLL_ERROR(GCOLL_ERR_TIMEOUT,
                       "rank %d waited more than GCOLL_TIMEOUT=%g s for rank(s) %s", c->rank,
                       gcoll_config.timeout, peers);
}

/* Progress until every request of the round is done. */
static gcoll_status_t wait_all(struct gcoll_comm *c, gcoll_tl_req_t *reqs, size_t n)
{
    size_t first_open = 0;
    unsigned idle = 0;
    double deadline = gcoll_config.timeout > 0 ? MPI_Wtime() + gcoll_config.timeout : 0;
    for (;;) {
        GCOLL_TRY(c->tl->progress(c->tl_ctx));
        size_t before = first_open;
        for (size_t i = first_open; i < n; i++) {
            if (!reqs[i].done) GCOLL_TRY(c->tl->test(c->tl_ctx, &reqs[i]));
            if (reqs[i].done && reqs[i].status != GCOLL_SUCCESS) {
                cancel_pending(c, reqs, n);
                return reqs[i].status;
            }
            if (reqs[i].done && i == first_open) first_open++;
        }
        while (first_open < n && reqs[first_open].done) first_open++;
        if (first_open == n) return GCOLL_SUCCESS;
        idle = first_open == before ? idle + 1 : 0;
        if (idle >= GCOLL_EXEC_SPIN_POLLS) {
            sched_yield();
            if (deadline > 0 && (idle & 255) == 0 && MPI_Wtime() > deadline)
                return timeout_error(c, reqs, n);
        }
    }
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

/* A NODE step: the node's ranks run one collective through the shared
 * segment.  Bytes this rank exposes to its node count as sent, intra-node. */
static gcoll_status_t run_node_step(struct gcoll_comm *c, const gcoll_sched_t *s,
                                    const gcoll_step_t *st, void *const bufs[GCOLL_BUF_COUNT])
{
    struct gcoll_shm *shm = c->shm;
    void *dst = at(bufs, st->dst);
    const void *src = at(bufs, st->src);
    size_t count = st->bytes / s->dt_size;
    if (!shm) return GCOLL_ERROR(GCOLL_ERR_INTERNAL, "NODE step without a shared segment");
    switch (st->node_coll) {
    case GCOLL_COLL_ALLREDUCE:
        c->stats.bytes_sent += st->bytes;
        return gcoll_shm_allreduce(shm, src, dst, count, s->dtype, s->op);
    case GCOLL_COLL_REDUCE_SCATTER:
        c->stats.bytes_sent += st->bytes;
        return gcoll_shm_reduce_scatter(shm, src, dst, count, s->dtype, s->op);
    case GCOLL_COLL_ALLGATHER:
        c->stats.bytes_sent += st->bytes / (size_t)c->local_size;
        return gcoll_shm_allgather(shm, src, dst, count, s->dt_size);
    case GCOLL_COLL_BCAST:
        if (c->local_rank == st->peer) c->stats.bytes_sent += st->bytes;
        return gcoll_shm_bcast(shm, dst, st->bytes, st->peer);
    case GCOLL_COLL_REDUCE:
        c->stats.bytes_sent += st->bytes;
        return gcoll_shm_reduce(shm, src, dst, count, s->dtype, s->op, st->peer);
    case GCOLL_COLL_BARRIER:
        return gcoll_shm_barrier(shm);
    default:
        return GCOLL_ERROR(GCOLL_ERR_INTERNAL, "NODE step of unknown collective %d",
                           st->node_coll);
    }
}

static gcoll_status_t run_local(struct gcoll_comm *c, const gcoll_sched_t *s,
                                const gcoll_step_t *st, void *const bufs[GCOLL_BUF_COUNT])
{
    if (gcoll_step_is_node(st)) return run_node_step(c, s, st, bufs);
    return gcoll_sched_exec_local(s, st, bufs);
}

static gcoll_status_t run_round(struct gcoll_comm *c, const gcoll_sched_t *s, uint32_t r,
                                uint32_t tag, void *const bufs[GCOLL_BUF_COUNT])
{
    uint32_t begin = gcoll_sched_round_begin(s, r), end = s->round_end[r];
    GCOLL_TRY(reqs_reserve(c, end - begin));
    size_t n = 0;
    for (uint32_t i = begin; i < end; i++) {
        if (!gcoll_step_is_comm(&s->steps[i])) continue;
        gcoll_status_t st = post_step(c, &s->steps[i], tag, bufs, &c->reqs[n]);
        if (st != GCOLL_SUCCESS) {
            cancel_pending(c, c->reqs, n);
            return st;
        }
        n++;
    }
    /* early steps overlap the round's transfers (schedule.h) */
    for (uint32_t i = begin; i < end; i++)
        if (s->steps[i].flags & GCOLL_STEP_EARLY) GCOLL_TRY(run_local(c, s, &s->steps[i], bufs));
    if (n) GCOLL_TRY(wait_all(c, c->reqs, n));
    for (uint32_t i = begin; i < end; i++)
        if (!gcoll_step_is_comm(&s->steps[i]) && !(s->steps[i].flags & GCOLL_STEP_EARLY))
            GCOLL_TRY(run_local(c, s, &s->steps[i], bufs));
    return GCOLL_SUCCESS;
}

static gcoll_status_t run_rounds(gcoll_comm_t comm, const gcoll_sched_t *s,
                                 void *const bufs[GCOLL_BUF_COUNT])
{
    uint32_t tag = comm->seq++;
    for (uint32_t r = 0; r < s->nrounds; r++) GCOLL_TRY(run_round(comm, s, r, tag, bufs));
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll_exec_run(gcoll_comm_t comm, const gcoll_sched_t *s, const void *sendbuf,
                              void *recvbuf)
{
    void *scratch = NULL;
    if (s->scratch_bytes) GCOLL_TRY(gcoll_comm_scratch(comm, s->scratch_bytes, &scratch));
    void *const bufs[GCOLL_BUF_COUNT] = { (void *)sendbuf, recvbuf, scratch };
    /* between calls the transport may be polled from MPI (bg_progress.h) */
    if (comm->tl->enter) comm->tl->enter(comm->tl_ctx);
    gcoll_status_t st = run_rounds(comm, s, bufs);
    if (comm->tl->leave) comm->tl->leave(comm->tl_ctx);
    return st;
}
