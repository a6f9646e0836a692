/* SPDX-License-Identifier: BSD-3-Clause */
/* The simulator executor: all ranks' schedules in one process.
 *
 * Execution.  Each rank walks its rounds exactly as schedule.h says: on
 * entering a round it posts the round's sends (each is copied at once into
 * the FIFO of its (src, dst) pair: eager buffering, so a send never waits
 * for its receiver) and lists the round's receives as pending.  A pending
 * receive from A matches the oldest message in A's FIFO to this rank; the
 * round's local steps run, in order, once nothing is pending.  A rank that
 * cannot finish its round is parked, waiting on the peer of its first pending
 * receive, and is woken only by a message from that peer, so the work per
 * message is bounded by the receiver's pending list, not by P.  FIFOs live in
 * one hash table keyed by the (src, dst) pair, created on first use: memory
 * grows with the pairs that talk, never with P*P.
 *
 * NODE steps (schedule.h) are blocking collectives of the ranks of one node
 * (sim->node_of; local ranks in communicator order).  A rank that reaches one
 * parks until every rank of its node has reached its own; the last to arrive
 * checks that they agree (collective, bytes, root), runs the collective as
 * shm/shm.h specifies it (reductions in local-rank order 0 op 1 op 2 ..., so
 * every rank gets the same bits), and releases them all.
 *
 * Cost model (seconds; parameters in gcoll_sim_cost_t):
 *   - each rank r has a clock t_r, 0 at the start; a round starts at t_r;
 *   - a rank has two injection links, intra-node and inter-node; the round's
 *     sends on one link leave one after another: send k of b_k bytes leaves
 *     at  L_k = L_{k-1} + b_k * beta  (L_0 = round start) and arrives at
 *     L_k + alpha  (intra parameters when node_of[src] == node_of[dst]);
 *   - with nics_per_node > 0 the inter-node link is a NIC the node's ranks
 *     share: a send starts no earlier than the NIC finishes the sends
 *     reserved before it (L_k = max(L_{k-1}, NIC free) + b_k * beta).  To
 *     reserve in time order, ranks then advance one round at a time, the
 *     runnable rank with the earliest clock first (a rank unblocked late may
 *     still queue behind later sends: pessimistic, never optimistic);
 *   - the round's communication ends at  C = max(start, every L_k, every
 *     arrival of a message it received)  (a message that arrived early costs
 *     nothing more: eager buffering);
 *   - each local step then adds gamma * bytes (REDUCE, COPY and AVG alike:
 *     each is one streaming pass over memory); t_r = C + local time;
 *   - a NODE step starts when the last rank of the node reaches it and ends,
 *     for all of them, after alpha_intra per synchronisation plus the bytes
 *     through shared memory at beta_intra and any reduction at gamma (see
 *     node_cost()); its bytes count as sent intra-node as the host executor
 *     counts them;
 *   - sim->time = max over ranks of t_r.
 * Not modelled: receiver-side contention (incast, the receiving NIC),
 * protocol switches with size.  Good enough to rank
 * algorithms by their latency and bandwidth terms, not to predict to 10%. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/alloc.h"
#include "sim/sim.h"
#include "base/status.h"
#include "base/reduce.h"
#include "algos/peers.h"

const gcoll_sim_cost_t gcoll_sim_cost_default = {
    .alpha_intra = 0.5e-6, .beta_intra = 1.0 / 20e9,
    .alpha_inter = 2.0e-6, .beta_inter = 1.0 / 25e9,
    .gamma       = 1.0 / 20e9, .nics_per_node = 1,
};

/* A buffered message, data inline after the header. */
typedef struct gcoll_sim_msg {
    struct gcoll_sim_msg *next;
    size_t                bytes;
    double                arrive;
    uint32_t              round;    /* sender's round, for error sentences */
    unsigned char         data[];
} gcoll_sim_msg_t;

/* FIFO of one (src, dst) pair; key 0 marks an empty hash slot. */
typedef struct {
    uint64_t         key;
    gcoll_sim_msg_t *head, *tail;
} gcoll_sim_queue_t;

typedef enum {
    GCOLL_SIM_RUNNABLE = 0,
    GCOLL_SIM_BLOCKED,       /* on a receive from wait_peer */
    GCOLL_SIM_NODE_WAIT,     /* on the other ranks of its node */
    GCOLL_SIM_DONE
} gcoll_sim_rstate_t;

typedef struct {
    const gcoll_sched_t *s;
    void     *bufs[GCOLL_BUF_COUNT];
    size_t    buf_bytes[GCOLL_BUF_COUNT];  /* SIZE_MAX: unknown, unchecked */
    uint32_t  round;
    int       posted;       /* sends of the current round issued */
    int       state;        /* gcoll_sim_rstate_t */
    int       wait_peer;    /* while BLOCKED: peer of the first pending receive */
    int       queued;       /* on the work list */
    int       in_locals;    /* the round's comms are done; running its local steps */
    uint32_t  next_local;   /* while in_locals: index of the next step to look at */
    int       node, local;  /* node index (0..nnodes-1) and local rank in it */
    double    clock;        /* end of the previous step */
    double    comm_end;     /* of the current round, so far */
    uint32_t *pend;         /* step indices of unmatched receives, in step order */
    uint32_t  npend;
} gcoll_sim_rank_t;

/* The ranks of one node and the NODE step they are gathering for. */
typedef struct {
    int  size;
    int *members;     /* communicator ranks, ascending: index = local rank */
    int  arrived;     /* members parked on their current NODE step */
} gcoll_sim_node_t;

typedef struct {
    gcoll_sim_t            *sim;
    const gcoll_sim_cost_t *cost;
    int                     nranks;
    gcoll_sim_rank_t       *ranks;
    gcoll_sim_queue_t      *slots;   /* hash table, cap a power of two */
    size_t                  cap, used;
    int                    *work;    /* runnable ranks, at most nranks */
    double                 *nic_free;   /* [nnodes * nics_per_node] when NICs are shared */
    int                     nwork;
    gcoll_sim_node_t       *nodes;
    int                     nnodes;
    int                    *node_members;   /* storage of every node's members */
    unsigned char          *tmp;            /* NODE step staging */
    size_t                  tmp_bytes;
} gcoll_sim_state_t;

/* ------------------------------------------------------------ queues ---- */

static uint64_t pair_key(const gcoll_sim_state_t *st, int src, int dst)
{
    return (uint64_t)src * (uint64_t)st->nranks + (uint64_t)dst + 1;
}

static size_t slot_of(const gcoll_sim_state_t *st, uint64_t key)
{
    uint64_t h = key * 0x9e3779b97f4a7c15ull;   /* Fibonacci hashing */
    return (size_t)(h >> 20) & (st->cap - 1);
}

/* The FIFO of (src, dst), or NULL if that pair never talked. */
static gcoll_sim_queue_t *queue_find(const gcoll_sim_state_t *st, int src, int dst)
{
    uint64_t key = pair_key(st, src, dst);
    for (size_t i = slot_of(st, key);; i = (i + 1) & (st->cap - 1)) {
        if (st->slots[i].key == key) return &st->slots[i];
        if (st->slots[i].key == 0) return NULL;
    }
}

static gcoll_status_t queue_grow(gcoll_sim_state_t *st)
{
    size_t ocap = st->cap, ncap = ocap ? ocap * 2 : 256;
    gcoll_sim_queue_t *old = st->slots;
    st->slots = gcoll_calloc(ncap, sizeof(*st->slots));
    if (!st->slots) {
        st->slots = old;
        return GCOLL_ERROR(GCOLL_ERR_NO_MEMORY, "simulator: cannot grow the message table to %zu pairs",
                           ncap);
    }
    st->cap = ncap;
    for (size_t i = 0; i < ocap; i++) {
        if (!old[i].key) continue;
        size_t j = slot_of(st, old[i].key);
        while (st->slots[j].key) j = (j + 1) & (ncap - 1);
        st->slots[j] = old[i];
    }
    free(old);
    return GCOLL_SUCCESS;
}

/* The FIFO of (src, dst), created empty if needed.  Invalidates earlier
 * queue pointers (the table may move). */
static gcoll_status_t queue_get(gcoll_sim_state_t *st, int src, int dst, gcoll_sim_queue_t **q)
{
    if (st->cap) *q = queue_find(st, src, dst);
    if (st->cap && *q) return GCOLL_SUCCESS;
    if (2 * (st->used + 1) > st->cap) GCOLL_TRY(queue_grow(st));
    uint64_t key = pair_key(st, src, dst);
    size_t i = slot_of(st, key);
    while (st->slots[i].key) i = (i + 1) & (st->cap - 1);
    st->slots[i].key = key;
    st->used++;
    *q = &st->slots[i];
    return GCOLL_SUCCESS;
}

static gcoll_sim_msg_t *queue_pop(gcoll_sim_queue_t *q)
{
    gcoll_sim_msg_t *m = q->head;
    if (m) {
        q->head = m->next;
        if (!q->head) q->tail = NULL;
    }
    return m;
}

/* ------------------------------------------------------ validation ---- */

static void *buf_at(const gcoll_sim_rank_t *rk, gcoll_bref_t r)
{
    return (char *)rk->bufs[r.buf] + r.off;
}

static const char *buf_name(int b)
{
    static const char *const names[GCOLL_BUF_COUNT] = { "send", "recv", "scratch" };
    return names[b];
}

static const char *step_name(int t)
{
    static const char *const names[GCOLL_STEP_TYPE_COUNT] = { "send", "recv", "reduce", "copy",
                                                              "avg", "node step" };
    return names[t];
}

/* bytes at r lie inside r's buffer. */
static gcoll_status_t check_ref(const gcoll_sim_rank_t *rk, int me, uint32_t round,
                                const gcoll_step_t *sp, gcoll_bref_t r, size_t bytes)
{
    if (r.buf >= GCOLL_BUF_COUNT)
        return GCOLL_ERROR(GCOLL_ERR_INTERNAL, "simulator: rank %d round %u: %s names buffer %d",
                           me, round, step_name(sp->type), r.buf);
    size_t size = rk->buf_bytes[r.buf];
    if (r.off > size || bytes > size - r.off)
        return GCOLL_ERROR(GCOLL_ERR_INTERNAL,
                           "simulator: rank %d round %u: %s of %zu B at %s+%zu reaches outside "
                           "the %zu B %s buffer", me, round, step_name(sp->type), bytes,
                           buf_name(r.buf), r.off, size, buf_name(r.buf));
    return GCOLL_SUCCESS;
}

/* The destination of a step that writes. */
static gcoll_status_t check_dst(const gcoll_sim_rank_t *rk, int me, uint32_t round,
                                const gcoll_step_t *sp, size_t bytes)
{
    if (sp->dst.buf == GCOLL_BUF_SEND && bytes)
        return GCOLL_ERROR(GCOLL_ERR_INTERNAL,
                           "simulator: rank %d round %u: %s writes the read-only send buffer",
                           me, round, step_name(sp->type));
    return check_ref(rk, me, round, sp, sp->dst, bytes);
}

/* dst and a source either coincide exactly or do not overlap at all. */
static gcoll_status_t check_overlap(int me, uint32_t round, const gcoll_step_t *sp,
                                    gcoll_bref_t a)
{
    gcoll_bref_t d = sp->dst;
    if (d.buf != a.buf || d.off == a.off) return GCOLL_SUCCESS;
    if (d.off + sp->bytes <= a.off || a.off + sp->bytes <= d.off) return GCOLL_SUCCESS;
    return GCOLL_ERROR(GCOLL_ERR_INTERNAL,
                       "simulator: rank %d round %u: %s of %zu B writes %s+%zu, partially "
                       "overlapping its operand at %s+%zu", me, round, step_name(sp->type),
                       sp->bytes, buf_name(d.buf), d.off, buf_name(a.buf), a.off);
}

/* Bytes of local rank l's block when bytes are split over the node's ranks
 * as shm/shm.h does (gcoll_block_off/len in elements). */
static size_t node_block(const gcoll_sim_state_t *st, const gcoll_sim_rank_t *rk, size_t bytes,
                         int l, size_t *off)
{
    size_t es = rk->s->dt_size, n = bytes / es;
    int size = st->nodes[rk->node].size;
    if (off) *off = gcoll_block_off(n, size, l) * es;
    return gcoll_block_len(n, size, l) * es;
}

static gcoll_status_t check_node_step(const gcoll_sim_state_t *st, int me, uint32_t round,
                                      const gcoll_step_t *sp)
{
    const gcoll_sim_rank_t *rk = &st->ranks[me];
    size_t b = sp->bytes, own = node_block(st, rk, b, rk->local, NULL);
    int size = st->nodes[rk->node].size, c = sp->node_coll;
    if ((c == GCOLL_COLL_BCAST || c == GCOLL_COLL_REDUCE) && (sp->peer < 0 || sp->peer >= size))
        return GCOLL_ERROR(GCOLL_ERR_INTERNAL, "simulator: rank %d round %u: node step root %d "
                           "is outside the node's %d ranks", me, round, sp->peer, size);
    if (c != GCOLL_COLL_BARRIER && c != GCOLL_COLL_BCAST && b % rk->s->dt_size)
        return GCOLL_ERROR(GCOLL_ERR_INTERNAL, "simulator: rank %d round %u: node step of %zu B "
                           "is not whole %zu B elements", me, round, b, rk->s->dt_size);
    switch (c) {
    case GCOLL_COLL_ALLREDUCE:
        GCOLL_TRY(check_ref(rk, me, round, sp, sp->src, b));
        return check_dst(rk, me, round, sp, b);
    case GCOLL_COLL_REDUCE_SCATTER:
        GCOLL_TRY(check_ref(rk, me, round, sp, sp->src, b));
        return check_dst(rk, me, round, sp, own);
    case GCOLL_COLL_ALLGATHER:
        GCOLL_TRY(check_ref(rk, me, round, sp, sp->src, own));
        return check_dst(rk, me, round, sp, b);
    case GCOLL_COLL_BCAST:
        return check_dst(rk, me, round, sp, b);
    case GCOLL_COLL_REDUCE:
        GCOLL_TRY(check_ref(rk, me, round, sp, sp->src, b));
        return rk->local == sp->peer ? check_dst(rk, me, round, sp, b) : GCOLL_SUCCESS;
    case GCOLL_COLL_BARRIER:
        return GCOLL_SUCCESS;
    default:
        return GCOLL_ERROR(GCOLL_ERR_INTERNAL, "simulator: rank %d round %u: node step of "
                           "unknown collective %d", me, round, c);
    }
}

static gcoll_status_t check_step(const gcoll_sim_state_t *st, int me, uint32_t round,
                                 const gcoll_step_t *sp)
{
    const gcoll_sim_rank_t *rk = &st->ranks[me];
    int t = sp->type;
    if (t >= GCOLL_STEP_TYPE_COUNT)
        return GCOLL_ERROR(GCOLL_ERR_INTERNAL, "simulator: rank %d round %u: unknown step type %d",
                           me, round, t);
    if (t == GCOLL_STEP_NODE) return check_node_step(st, me, round, sp);
    if (gcoll_step_is_comm(sp) && (sp->peer < 0 || sp->peer >= st->nranks))
        return GCOLL_ERROR(GCOLL_ERR_INTERNAL,
                           "simulator: rank %d round %u: %s peer %d is outside [0, %d)", me,
                           round, step_name(t), sp->peer, st->nranks);
    if (t == GCOLL_STEP_SEND) return check_ref(rk, me, round, sp, sp->src, sp->bytes);
    GCOLL_TRY(check_dst(rk, me, round, sp, sp->bytes));
    if ((t == GCOLL_STEP_REDUCE || t == GCOLL_STEP_AVG) && sp->bytes % rk->s->dt_size)
        return GCOLL_ERROR(GCOLL_ERR_INTERNAL,
                           "simulator: rank %d round %u: %s of %zu B is not whole %zu B elements",
                           me, round, step_name(t), sp->bytes, rk->s->dt_size);
    if (t == GCOLL_STEP_AVG && sp->peer <= 0)
        return GCOLL_ERROR(GCOLL_ERR_INTERNAL, "simulator: rank %d round %u: avg divisor %d",
                           me, round, sp->peer);
    if (t == GCOLL_STEP_REDUCE || t == GCOLL_STEP_COPY) {
        GCOLL_TRY(check_ref(rk, me, round, sp, sp->src, sp->bytes));
        GCOLL_TRY(check_overlap(me, round, sp, sp->src));
    }
    if (t == GCOLL_STEP_REDUCE) {
        GCOLL_TRY(check_ref(rk, me, round, sp, sp->src2, sp->bytes));
        GCOLL_TRY(check_overlap(me, round, sp, sp->src2));
    }
    return GCOLL_SUCCESS;
}

/* Check every step of rank me once, up front, and size its pending list by
 * the largest number of receives in one round. */
static gcoll_status_t check_sched(gcoll_sim_state_t *st, int me)
{
    gcoll_sim_rank_t *rk = &st->ranks[me];
    const gcoll_sched_t *s = rk->s;
    uint32_t most = 0;
    if (s->status != GCOLL_SUCCESS) return s->status;
    if (s->nrounds && s->dt_size == 0)
        return GCOLL_ERROR(GCOLL_ERR_INTERNAL, "simulator: rank %d: schedule has no dtype", me);
    for (uint32_t r = 0; r < s->nrounds; r++) {
        uint32_t nrecv = 0;
        for (uint32_t i = gcoll_sched_round_begin(s, r); i < s->round_end[r]; i++) {
            GCOLL_TRY(check_step(st, me, r, &s->steps[i]));
            nrecv += s->steps[i].type == GCOLL_STEP_RECV;
        }
        if (nrecv > most) most = nrecv;
    }
    rk->pend = gcoll_malloc((most ? most : 1) * sizeof(*rk->pend));
    if (!rk->pend)
        return GCOLL_ERROR(GCOLL_ERR_NO_MEMORY, "simulator: no memory for rank %d's receives", me);
    return GCOLL_SUCCESS;
}

/* ---------------------------------------------------------- execution ---- */

static void wake(gcoll_sim_state_t *st, int r)
{
    gcoll_sim_rank_t *rk = &st->ranks[r];
    if (rk->queued) return;
    rk->queued = 1;
    st->work[st->nwork++] = r;
}

static int is_inter(const gcoll_sim_state_t *st, int a, int b)
{
    return st->sim->node_of && st->sim->node_of[a] != st->sim->node_of[b];
}

/* The NIC rank me sends through to other nodes, or NULL when it has its own. */
static double *nic_of(gcoll_sim_state_t *st, int me)
{
    int n = st->cost->nics_per_node;
    if (!st->nic_free) return NULL;
    const gcoll_sim_rank_t *rk = &st->ranks[me];
    return &st->nic_free[(size_t)rk->node * (size_t)n + (size_t)(rk->local % n)];
}

static gcoll_status_t post_send(gcoll_sim_state_t *st, int me, const gcoll_step_t *sp,
                                double link_free[2])
{
    gcoll_sim_rank_t *rk = &st->ranks[me];
    int inter = is_inter(st, me, sp->peer);
    double alpha = inter ? st->cost->alpha_inter : st->cost->alpha_intra;
    double beta  = inter ? st->cost->beta_inter : st->cost->beta_intra;
    gcoll_sim_msg_t *m = gcoll_malloc(sizeof(*m) + sp->bytes);
    if (!m)
        return GCOLL_ERROR(GCOLL_ERR_NO_MEMORY, "simulator: no memory for a %zu B message",
                           sp->bytes);
    memcpy(m->data, buf_at(rk, sp->src), sp->bytes);
    m->next  = NULL;
    m->bytes = sp->bytes;
    m->round = rk->round;
    double *nic = inter ? nic_of(st, me) : NULL;
    if (nic && *nic > link_free[inter]) link_free[inter] = *nic;
    link_free[inter] += (double)sp->bytes * beta;   /* sends on one link leave in turn */
    if (nic) *nic = link_free[inter];
    m->arrive = link_free[inter] + alpha;
    if (link_free[inter] > rk->comm_end) rk->comm_end = link_free[inter];

    gcoll_sim_queue_t *q;
    gcoll_status_t status = queue_get(st, me, sp->peer, &q);
    if (status != GCOLL_SUCCESS) {
        free(m);
        return status;
    }
    if (q->tail) q->tail->next = m; else q->head = m;
    q->tail = m;
    if (st->sim->bytes_sent) st->sim->bytes_sent[me] += sp->bytes;
    if (inter && st->sim->bytes_inter) st->sim->bytes_inter[me] += sp->bytes;

    gcoll_sim_rank_t *peer = &st->ranks[sp->peer];
    if (peer->state == GCOLL_SIM_BLOCKED && peer->wait_peer == me) wake(st, sp->peer);
    return GCOLL_SUCCESS;
}

/* Enter the current round: post its sends, list its receives. */
static gcoll_status_t post_round(gcoll_sim_state_t *st, int me)
{
    gcoll_sim_rank_t *rk = &st->ranks[me];
    const gcoll_sched_t *s = rk->s;
    double link_free[2] = { rk->clock, rk->clock };
    rk->comm_end = rk->clock;
    rk->npend = 0;
    for (uint32_t i = gcoll_sched_round_begin(s, rk->round); i < s->round_end[rk->round]; i++) {
        const gcoll_step_t *sp = &s->steps[i];
        if (sp->type == GCOLL_STEP_SEND) GCOLL_TRY(post_send(st, me, sp, link_free));
        else if (sp->type == GCOLL_STEP_RECV) rk->pend[rk->npend++] = i;
    }
    rk->posted = 1;
    return GCOLL_SUCCESS;
}

static gcoll_status_t deliver(gcoll_sim_rank_t *rk, int me, const gcoll_step_t *sp,
                              gcoll_sim_msg_t *m)
{
    if (m->bytes != sp->bytes) {
        gcoll_status_t status = GCOLL_ERROR(
            GCOLL_ERR_INTERNAL, "simulator: rank %d sent %zu B to rank %d in its round %u, but "
            "the matching receive of rank %d in its round %u expects %zu B", sp->peer, m->bytes,
            me, m->round, me, rk->round, sp->bytes);
        free(m);
        return status;
    }
    memcpy(buf_at(rk, sp->dst), m->data, m->bytes);
    if (m->arrive > rk->comm_end) rk->comm_end = m->arrive;
    free(m);
    return GCOLL_SUCCESS;
}

/* Match what can be matched; the unmatched stay pending in step order, so
 * two receives from one peer always match that peer's messages in order. */
static gcoll_status_t match_recvs(gcoll_sim_state_t *st, int me)
{
    gcoll_sim_rank_t *rk = &st->ranks[me];
    uint32_t keep = 0;
    for (uint32_t k = 0; k < rk->npend; k++) {
        const gcoll_step_t *sp = &rk->s->steps[rk->pend[k]];
        gcoll_sim_queue_t *q = st->cap ? queue_find(st, sp->peer, me) : NULL;
        gcoll_sim_msg_t *m = q ? queue_pop(q) : NULL;
        if (m) GCOLL_TRY(deliver(rk, me, sp, m));
        else rk->pend[keep++] = rk->pend[k];
    }
    rk->npend = keep;
    return GCOLL_SUCCESS;
}

/* --------------------------------------------------------- node steps ---- */

/* A NODE step's time once the node has gathered (model in the file comment):
 * a reduction is a reduce-scatter of slices in parallel then a gather, each
 * phase one synchronisation and one pass of the bytes through the segment. */
static double node_cost(const gcoll_sim_cost_t *c, int coll, size_t bytes)
{
    double a = c->alpha_intra, move = (double)bytes * c->beta_intra;
    double red = (double)bytes * c->gamma;
    switch (coll) {
    case GCOLL_COLL_ALLREDUCE:
    case GCOLL_COLL_REDUCE:         return 2 * a + 2 * move + red;
    case GCOLL_COLL_REDUCE_SCATTER: return a + move + red;
    case GCOLL_COLL_ALLGATHER:
    case GCOLL_COLL_BCAST:          return a + move;
    default:                        return a;
    }
}

static const gcoll_step_t *node_step_of(const gcoll_sim_state_t *st, int r)
{
    const gcoll_sim_rank_t *rk = &st->ranks[r];
    return &rk->s->steps[rk->next_local];
}

/* Every member runs the same node collective, of the same size and root. */
static gcoll_status_t node_agree(const gcoll_sim_state_t *st, const gcoll_sim_node_t *nd)
{
    int r0 = nd->members[0];
    const gcoll_step_t *a = node_step_of(st, r0);
    const gcoll_sched_t *s0 = st->ranks[r0].s;
    for (int l = 1; l < nd->size; l++) {
        int r = nd->members[l];
        const gcoll_step_t *b = node_step_of(st, r);
        const gcoll_sched_t *s = st->ranks[r].s;
        if (a->node_coll == b->node_coll && a->bytes == b->bytes && a->peer == b->peer &&
            s0->dtype == s->dtype && s0->op == s->op)
            continue;
        return GCOLL_ERROR(GCOLL_ERR_INTERNAL,
                           "simulator: the ranks of a node disagree on a node step: rank %d "
                           "(round %u) runs %s of %zu B root %d %s/%s, rank %d (round %u) runs "
                           "%s of %zu B root %d %s/%s", r0, st->ranks[r0].round,
                           gcoll_coll_name(a->node_coll), a->bytes, a->peer,
                           gcoll_dtype_name(s0->dtype), gcoll_op_name(s0->op), r,
                           st->ranks[r].round, gcoll_coll_name(b->node_coll), b->bytes, b->peer,
                           gcoll_dtype_name(s->dtype), gcoll_op_name(s->op));
    }
    return GCOLL_SUCCESS;
}

/* tmp = src of local rank 0 op src of local rank 1 op ... (shm/shm.h's order). */
static gcoll_status_t node_fold(gcoll_sim_state_t *st, const gcoll_sim_node_t *nd, size_t bytes)
{
    const gcoll_sched_t *s = st->ranks[nd->members[0]].s;
    for (int l = 0; l < nd->size; l++) {
        const gcoll_sim_rank_t *rk = &st->ranks[nd->members[l]];
        const void *src = buf_at(rk, node_step_of(st, nd->members[l])->src);
        if (l == 0) memcpy(st->tmp, src, bytes);
        else GCOLL_TRY(gcoll_reduce_host(st->tmp, st->tmp, src, bytes / s->dt_size, s->dtype, s->op));
    }
    return GCOLL_SUCCESS;
}

/* Run the node collective all members are parked on.  Results are staged in
 * st->tmp first, so in-place operands read their inputs before any write. */
static gcoll_status_t node_exec(gcoll_sim_state_t *st, const gcoll_sim_node_t *nd)
{
    const gcoll_step_t *sp = node_step_of(st, nd->members[0]);
    size_t bytes = sp->bytes, off, len;
    if (bytes > st->tmp_bytes) {
        unsigned char *t = gcoll_realloc(st->tmp, bytes);
        if (!t) return GCOLL_ERROR(GCOLL_ERR_NO_MEMORY, "simulator: no memory for a %zu B node step", bytes);
        st->tmp = t;
        st->tmp_bytes = bytes;
    }
    int c = sp->node_coll, root = sp->peer;
    if (c == GCOLL_COLL_ALLREDUCE || c == GCOLL_COLL_REDUCE || c == GCOLL_COLL_REDUCE_SCATTER)
        GCOLL_TRY(node_fold(st, nd, bytes));
    if (c == GCOLL_COLL_BCAST)
        memcpy(st->tmp, buf_at(&st->ranks[nd->members[root]], sp->dst), bytes);
    for (int l = 0; c == GCOLL_COLL_ALLGATHER && l < nd->size; l++) {
        gcoll_sim_rank_t *rk = &st->ranks[nd->members[l]];
        len = node_block(st, rk, bytes, l, &off);
        memcpy(st->tmp + off, buf_at(rk, node_step_of(st, nd->members[l])->src), len);
    }
    for (int l = 0; l < nd->size; l++) {
        gcoll_sim_rank_t *rk = &st->ranks[nd->members[l]];
        void *dst = buf_at(rk, node_step_of(st, nd->members[l])->dst);
        uint64_t sent = bytes;
        switch (c) {
        case GCOLL_COLL_REDUCE_SCATTER:
            len = node_block(st, rk, bytes, l, &off);
            memcpy(dst, st->tmp + off, len);
            break;
        case GCOLL_COLL_REDUCE:
            if (l == root) memcpy(dst, st->tmp, bytes);
            break;
        case GCOLL_COLL_BCAST:
            if (l != root) memcpy(dst, st->tmp, bytes);
            sent = l == root ? bytes : 0;
            break;
        case GCOLL_COLL_ALLGATHER:
            memcpy(dst, st->tmp, bytes);
            sent = bytes / (uint64_t)nd->size;   /* as the host executor counts */
            break;
        case GCOLL_COLL_ALLREDUCE:
            memcpy(dst, st->tmp, bytes);
            break;
        default:
            sent = 0;
            break;
        }
        if (st->sim->bytes_sent) st->sim->bytes_sent[nd->members[l]] += sent;
    }
    return GCOLL_SUCCESS;
}

/* Rank me reached a NODE step.  Unless it is the last of its node to do so
 * it parks (*released = 0); the last runs the step and releases them all. */
static gcoll_status_t node_arrive(gcoll_sim_state_t *st, int me, int *released)
{
    gcoll_sim_rank_t *rk = &st->ranks[me];
    gcoll_sim_node_t *nd = &st->nodes[rk->node];
    *released = 0;
    if (++nd->arrived < nd->size) {
        rk->state = GCOLL_SIM_NODE_WAIT;
        return GCOLL_SUCCESS;
    }
    nd->arrived = 0;
    GCOLL_TRY(node_agree(st, nd));
    GCOLL_TRY(node_exec(st, nd));
    const gcoll_step_t *sp = node_step_of(st, me);
    double end = 0;
    for (int l = 0; l < nd->size; l++)
        if (st->ranks[nd->members[l]].clock > end) end = st->ranks[nd->members[l]].clock;
    end += node_cost(st->cost, sp->node_coll, sp->bytes);
    for (int l = 0; l < nd->size; l++) {
        int r = nd->members[l];
        st->ranks[r].clock = end;
        st->ranks[r].next_local++;
        if (r != me) wake(st, r);
    }
    *released = 1;
    return GCOLL_SUCCESS;
}

/* Run the round's local steps from next_local on, in order; *parked when a
 * NODE step waits for the rest of the node. */
static gcoll_status_t run_locals(gcoll_sim_state_t *st, int me, int *parked)
{
    gcoll_sim_rank_t *rk = &st->ranks[me];
    const gcoll_sched_t *s = rk->s;
    uint32_t end = s->round_end[rk->round];
    *parked = 0;
    while (rk->next_local < end) {
        const gcoll_step_t *sp = &s->steps[rk->next_local];
        if (gcoll_step_is_node(sp)) {
            int released;
            GCOLL_TRY(node_arrive(st, me, &released));
            if (!released) {
                *parked = 1;
                return GCOLL_SUCCESS;
            }
            continue;   /* node_arrive stepped past it */
        }
        if (!gcoll_step_is_comm(sp)) {
            GCOLL_TRY(gcoll_sched_exec_local(s, sp, rk->bufs));
            rk->clock += (double)sp->bytes * st->cost->gamma;
        }
        rk->next_local++;
    }
    return GCOLL_SUCCESS;
}

/* Run rank me as far as it goes: to its end, or until it must wait for a
 * message or for its node. */
static gcoll_status_t advance(gcoll_sim_state_t *st, int me)
{
    gcoll_sim_rank_t *rk = &st->ranks[me];
    const gcoll_sched_t *s = rk->s;
    rk->state = GCOLL_SIM_RUNNABLE;
    while (rk->round < s->nrounds) {
        if (!rk->in_locals) {
            if (!rk->posted) GCOLL_TRY(post_round(st, me));
            GCOLL_TRY(match_recvs(st, me));
            if (rk->npend) {
                rk->state     = GCOLL_SIM_BLOCKED;
                rk->wait_peer = s->steps[rk->pend[0]].peer;
                return GCOLL_SUCCESS;
            }
            rk->in_locals  = 1;
            rk->clock      = rk->comm_end;
            rk->next_local = gcoll_sched_round_begin(s, rk->round);
        }
        int parked;
        GCOLL_TRY(run_locals(st, me, &parked));
        if (parked) return GCOLL_SUCCESS;
        rk->round++;
        rk->posted    = 0;
        rk->in_locals = 0;
        if (st->nic_free && rk->round < s->nrounds) {   /* let earlier clocks go first */
            wake(st, me);
            return GCOLL_SUCCESS;
        }
    }
    rk->state = GCOLL_SIM_DONE;
    return GCOLL_SUCCESS;
}

/* ------------------------------------------------- end-of-run checks ---- */

static gcoll_status_t report_deadlock(const gcoll_sim_state_t *st)
{
    char text[400];
    size_t len = 0;
    int nstuck = 0;
    for (int r = 0; r < st->nranks; r++) {
        const gcoll_sim_rank_t *rk = &st->ranks[r];
        if (rk->state == GCOLL_SIM_DONE) continue;
        if (nstuck++ >= 6 || len >= sizeof(text)) continue;
        const char *sep = len ? "; " : "";
        if (rk->state == GCOLL_SIM_NODE_WAIT) {
            const gcoll_sim_node_t *nd = &st->nodes[rk->node];
            len += (size_t)snprintf(text + len, sizeof(text) - len,
                                    "%srank %d (round %u of %u) waits in a node step (%d of its "
                                    "node's %d ranks there)", sep, r, rk->round, rk->s->nrounds,
                                    nd->arrived, nd->size);
            continue;
        }
        const gcoll_step_t *sp = &rk->s->steps[rk->pend[0]];
        len += (size_t)snprintf(text + len, sizeof(text) - len,
                                "%srank %d (round %u of %u) waits for %zu B from rank %d", sep, r,
                                rk->round, rk->s->nrounds, sp->bytes, sp->peer);
    }
    return GCOLL_ERROR(GCOLL_ERR_INTERNAL, "simulator: deadlock, %d of %d ranks stuck: %s%s",
                       nstuck, st->nranks, text, nstuck > 6 ? "; ..." : "");
}

static gcoll_status_t report_leftovers(const gcoll_sim_state_t *st)
{
    for (size_t i = 0; i < st->cap; i++) {
        const gcoll_sim_queue_t *q = &st->slots[i];
        if (!q->head) continue;
        int src = (int)((q->key - 1) / (uint64_t)st->nranks);
        int dst = (int)((q->key - 1) % (uint64_t)st->nranks);
        size_t n = 0;
        for (const gcoll_sim_msg_t *m = q->head; m; m = m->next) n++;
        return GCOLL_ERROR(GCOLL_ERR_INTERNAL,
                           "simulator: rank %d sent %zu message(s) to rank %d that it never "
                           "received (the first: %zu B in round %u)", src, n, dst,
                           q->head->bytes, q->head->round);
    }
    return GCOLL_SUCCESS;
}

/* ----------------------------------------------------------- set-up ---- */

static void state_free(gcoll_sim_state_t *st)
{
    for (size_t i = 0; i < st->cap; i++) {
        gcoll_sim_msg_t *m = st->slots[i].head;
        while (m) {
            gcoll_sim_msg_t *next = m->next;
            free(m);
            m = next;
        }
    }
    free(st->slots);
    if (st->ranks) {
        for (int r = 0; r < st->nranks; r++) {
            free(st->ranks[r].pend);
            free(st->ranks[r].bufs[GCOLL_BUF_SCRATCH]);
        }
    }
    free(st->ranks);
    free(st->work);
    free(st->nic_free);
    free(st->nodes);
    free(st->node_members);
    free(st->tmp);
}

/* Nodes numbered by their lowest rank; local ranks in communicator order. */
static gcoll_status_t nodes_init(gcoll_sim_state_t *st)
{
    int n = st->nranks, *ids = gcoll_malloc((size_t)n * sizeof(int));
    const int *node_of = st->sim->node_of;
    st->nodes = gcoll_calloc((size_t)n, sizeof(*st->nodes));
    st->node_members = gcoll_malloc((size_t)n * sizeof(int));
    if (!ids || !st->nodes || !st->node_members) {
        free(ids);
        return GCOLL_ERROR(GCOLL_ERR_NO_MEMORY, "simulator: no memory for the nodes of %d ranks", n);
    }
    for (int r = 0; r < n; r++) {
        int id = node_of ? node_of[r] : 0, j = 0;
        while (j < st->nnodes && ids[j] != id) j++;
        if (j == st->nnodes) ids[st->nnodes++] = id;
        st->ranks[r].node = j;
        st->nodes[j].size++;
    }
    free(ids);
    for (int j = 0, at = 0; j < st->nnodes; j++) {
        st->nodes[j].members = st->node_members + at;
        at += st->nodes[j].size;
        st->nodes[j].size = 0;
    }
    for (int r = 0; r < n; r++) {
        gcoll_sim_node_t *nd = &st->nodes[st->ranks[r].node];
        st->ranks[r].local = nd->size;
        nd->members[nd->size++] = r;
    }
    return GCOLL_SUCCESS;
}

static size_t known_size(const size_t *sizes, int r, const void *buf)
{
    if (!buf) return 0;
    return sizes ? sizes[r] : SIZE_MAX;
}

static gcoll_status_t rank_init(gcoll_sim_state_t *st, int r, const gcoll_sched_t *s,
                                const void *sendbuf, void *recvbuf)
{
    gcoll_sim_rank_t *rk = &st->ranks[r];
    rk->s = s;
    rk->bufs[GCOLL_BUF_SEND] = (void *)sendbuf;   /* check_step forbids writes to it */
    rk->bufs[GCOLL_BUF_RECV] = recvbuf;
    rk->buf_bytes[GCOLL_BUF_SEND] = known_size(st->sim->send_bytes, r, sendbuf);
    rk->buf_bytes[GCOLL_BUF_RECV] = known_size(st->sim->recv_bytes, r, recvbuf);
    rk->buf_bytes[GCOLL_BUF_SCRATCH] = s->scratch_bytes;
    if (s->scratch_bytes) {
        rk->bufs[GCOLL_BUF_SCRATCH] = gcoll_malloc(s->scratch_bytes);
        if (!rk->bufs[GCOLL_BUF_SCRATCH])
            return GCOLL_ERROR(GCOLL_ERR_NO_MEMORY, "simulator: no memory for %zu B of scratch",
                               s->scratch_bytes);
        /* Garbage, not zeros: reading unwritten scratch must spoil the result. */
        memset(rk->bufs[GCOLL_BUF_SCRATCH], 0xa5, s->scratch_bytes);
    }
    return check_sched(st, r);
}

static gcoll_status_t state_init(gcoll_sim_state_t *st, gcoll_sim_t *sim,
                                 gcoll_sched_t *const *scheds, const void *const *sendbufs,
                                 void *const *recvbufs)
{
    int n = sim->nranks;
    memset(st, 0, sizeof(*st));
    st->sim    = sim;
    st->cost   = sim->cost ? sim->cost : &gcoll_sim_cost_default;
    st->nranks = n;
    st->ranks  = gcoll_calloc((size_t)n, sizeof(*st->ranks));
    st->work   = gcoll_malloc((size_t)n * sizeof(*st->work));
    if (!st->ranks || !st->work)
        return GCOLL_ERROR(GCOLL_ERR_NO_MEMORY, "simulator: no memory for %d ranks", n);
    GCOLL_TRY(nodes_init(st));
    if (st->cost->nics_per_node > 0 && st->nnodes > 1) {
        st->nic_free = gcoll_calloc((size_t)st->nnodes * (size_t)st->cost->nics_per_node,
                              sizeof(double));
        if (!st->nic_free)
            return GCOLL_ERROR(GCOLL_ERR_NO_MEMORY, "simulator: no memory for the NICs");
    }
    for (int r = 0; r < n; r++) {
        if (!scheds[r])
            return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "simulator: no schedule for rank %d", r);
        GCOLL_TRY(rank_init(st, r, scheds[r], sendbufs ? sendbufs[r] : NULL,
                            recvbufs ? recvbufs[r] : NULL));
    }
    for (int r = 0; r < n; r++) {
        if (sim->bytes_sent) sim->bytes_sent[r] = 0;
        if (sim->bytes_inter) sim->bytes_inter[r] = 0;
    }
    return GCOLL_SUCCESS;
}

/* Take a rank off the work list: the last one queued, or with shared NICs
 * the one with the earliest clock (so NIC time is reserved in time order). */
static int next_rank(gcoll_sim_state_t *st)
{
    int k = st->nwork - 1;
    if (st->nic_free)
        for (int i = 0; i < st->nwork - 1; i++)
            if (st->ranks[st->work[i]].clock < st->ranks[st->work[k]].clock) k = i;
    int r = st->work[k];
    st->work[k] = st->work[--st->nwork];
    return r;
}

static gcoll_status_t run_all(gcoll_sim_state_t *st)
{
    for (int r = st->nranks - 1; r >= 0; r--) wake(st, r);   /* rank 0 runs first */
    while (st->nwork) {
        int r = next_rank(st);
        st->ranks[r].queued = 0;
        GCOLL_TRY(advance(st, r));
    }
    double end = 0;
    for (int r = 0; r < st->nranks; r++) {
        if (st->ranks[r].state != GCOLL_SIM_DONE) return report_deadlock(st);
        if (st->ranks[r].clock > end) end = st->ranks[r].clock;
    }
    st->sim->time = end;
    return report_leftovers(st);
}

gcoll_status_t gcoll_sim_run(gcoll_sim_t *sim, gcoll_sched_t *const *scheds,
                             const void *const *sendbufs, void *const *recvbufs)
{
    if (!sim || !scheds || sim->nranks <= 0)
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "simulator: needs a sim with nranks > 0 and "
                           "one schedule per rank");
    gcoll_sim_state_t st;
    gcoll_status_t status = state_init(&st, sim, scheds, sendbufs, recvbufs);
    sim->time = 0;
    if (status == GCOLL_SUCCESS) status = run_all(&st);
    state_free(&st);
    return status;
}

/* ------------------------------------------------------- run an algo ---- */

/* Bytes of buffer `buf` that args say the builder may use: the furthest end of
 * src or dst placed in it (in place, both may lie in the receive buffer). */
static size_t args_extent(const gcoll_coll_args_t *a, int nranks, int buf)
{
    size_t src_bytes, dst_bytes, end = 0;
    gcoll_coll_buf_bytes(a, nranks, &src_bytes, &dst_bytes);
    if (a->src.buf == buf && src_bytes) end = a->src.off + src_bytes;
    if (a->dst.buf == buf && dst_bytes && a->dst.off + dst_bytes > end)
        end = a->dst.off + dst_bytes;
    return end;
}

static gcoll_status_t build_all(const gcoll_sim_t *sim, const gcoll_algo_t *algo,
                                const gcoll_coll_args_t *args, gcoll_dtype_t dtype,
                                gcoll_op_t op, gcoll_sched_t *scheds, gcoll_sched_t **ptrs)
{
    for (int r = 0; r < sim->nranks; r++) {
        gcoll_group_t group = { sim->nranks, r, NULL, sim->node_of };
        gcoll_coll_args_t a = args[r];
        a.flags |= GCOLL_ARGS_NODE_STEPS;   /* the simulator runs NODE steps */
        ptrs[r] = &scheds[r];
        GCOLL_TRY(gcoll_algo_build(algo, &a, &group, dtype, op, &scheds[r]));
    }
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll_sim_run_algo(gcoll_sim_t *sim, const gcoll_algo_t *algo,
                                  const gcoll_coll_args_t *args, gcoll_dtype_t dtype,
                                  gcoll_op_t op, const void *const *sendbufs,
                                  void *const *recvbufs)
{
    if (!sim || !algo || !args || sim->nranks <= 0)
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "simulator: needs a sim with nranks > 0, an "
                           "algorithm and per-rank args");
    int n = sim->nranks;
    gcoll_status_t status = GCOLL_SUCCESS;
    gcoll_sched_t *scheds = gcoll_calloc((size_t)n, sizeof(*scheds));
    gcoll_sched_t **ptrs  = gcoll_calloc((size_t)n, sizeof(*ptrs));
    size_t *sizes = gcoll_malloc(2 * (size_t)n * sizeof(*sizes));
    if (!scheds || !ptrs || !sizes) {
        status = GCOLL_ERROR(GCOLL_ERR_NO_MEMORY, "simulator: no memory for %d schedules", n);
        goto out;
    }
    for (int r = 0; r < n; r++) {
        sizes[r]     = args_extent(&args[r], n, GCOLL_BUF_SEND);
        sizes[n + r] = args_extent(&args[r], n, GCOLL_BUF_RECV);
    }
    status = build_all(sim, algo, args, dtype, op, scheds, ptrs);
    if (status == GCOLL_SUCCESS) {
        gcoll_sim_t run = *sim;
        if (!run.send_bytes) run.send_bytes = sizes;
        if (!run.recv_bytes) run.recv_bytes = sizes + n;
        status = gcoll_sim_run(&run, ptrs, sendbufs, recvbufs);
        sim->time = run.time;
    }
out:
    if (scheds)
        for (int r = 0; r < n; r++) gcoll_sched_fini(&scheds[r]);
    free(scheds);
    free(ptrs);
    free(sizes);
    return status;
}
