/* SPDX-License-Identifier: BSD-3-Clause */
/* Schedule construction and the local-step interpreter shared by executors. */
#include <stdlib.h>
#include <string.h>
#include "base/alloc.h"
#include "core/schedule.h"
#include "base/copy.h"
#include "base/reduce.h"
#include "base/status.h"

void gcoll_sched_init(gcoll_sched_t *s)
{
    memset(s, 0, sizeof(*s));
}

void gcoll_sched_fini(gcoll_sched_t *s)
{
    free(s->steps);
    free(s->round_end);
    memset(s, 0, sizeof(*s));
}

void gcoll_sched_reset(gcoll_sched_t *s, gcoll_dtype_t dtype, gcoll_op_t op)
{
    s->nsteps        = 0;
    s->nrounds       = 0;
    s->scratch_bytes = 0;
    s->dtype         = dtype;
    s->op            = op;
    s->dt_size       = gcoll_dtype_size(dtype);
    s->status        = GCOLL_SUCCESS;
}

/* Index where the current (open) round begins. */
static uint32_t open_round_begin(const gcoll_sched_t *s)
{
    return s->nrounds ? s->round_end[s->nrounds - 1] : 0;
}

static int grow(void **arr, uint32_t *cap, size_t elem)
{
    uint32_t ncap = *cap ? *cap * 2 : 64;
    void *p = gcoll_realloc(*arr, (size_t)ncap * elem);
    if (!p) return 0;
    *arr = p;
    *cap = ncap;
    return 1;
}

void gcoll_sched_round(gcoll_sched_t *s)
{
    if (s->nsteps == open_round_begin(s)) return;   /* empty round */
    if (s->nrounds == s->rounds_cap &&
        !grow((void **)&s->round_end, &s->rounds_cap, sizeof(*s->round_end))) {
        if (s->status == GCOLL_SUCCESS)
            s->status = GCOLL_ERROR(GCOLL_ERR_NO_MEMORY, "cannot grow a schedule to %u rounds",
                                    s->nrounds + 1);
        return;
    }
    s->round_end[s->nrounds++] = s->nsteps;
}

static gcoll_step_t *append(gcoll_sched_t *s, int type, size_t bytes)
{
    if (bytes == 0 || s->status != GCOLL_SUCCESS) return NULL;
    if (s->nsteps == s->steps_cap && !grow((void **)&s->steps, &s->steps_cap, sizeof(*s->steps))) {
        s->status = GCOLL_ERROR(GCOLL_ERR_NO_MEMORY, "cannot grow a schedule to %u steps",
                                s->nsteps + 1);
        return NULL;
    }
    gcoll_step_t *st = &s->steps[s->nsteps++];
    memset(st, 0, sizeof(*st));
    st->type  = (uint8_t)type;
    st->bytes = bytes;
    return st;
}

void gcoll_sched_send(gcoll_sched_t *s, int peer, gcoll_bref_t src, size_t bytes)
{
    gcoll_step_t *st = append(s, GCOLL_STEP_SEND, bytes);
    if (st) { st->peer = peer; st->src = src; }
}

void gcoll_sched_recv(gcoll_sched_t *s, int peer, gcoll_bref_t dst, size_t bytes)
{
    gcoll_step_t *st = append(s, GCOLL_STEP_RECV, bytes);
    if (st) { st->peer = peer; st->dst = dst; }
}

void gcoll_sched_reduce(gcoll_sched_t *s, gcoll_bref_t dst, gcoll_bref_t a, gcoll_bref_t b,
                        size_t bytes)
{
    gcoll_step_t *st = append(s, GCOLL_STEP_REDUCE, bytes);
    if (st) { st->dst = dst; st->src = a; st->src2 = b; }
}

void gcoll_sched_copy(gcoll_sched_t *s, gcoll_bref_t dst, gcoll_bref_t src, size_t bytes)
{
    if (gcoll_bref_eq(dst, src)) return;   /* in place: nothing to move */
    gcoll_step_t *st = append(s, GCOLL_STEP_COPY, bytes);
    if (st) { st->dst = dst; st->src = src; }
}

void gcoll_sched_avg(gcoll_sched_t *s, gcoll_bref_t dst, size_t bytes, int divisor)
{
    gcoll_step_t *st = append(s, GCOLL_STEP_AVG, bytes);
    if (st) { st->dst = dst; st->peer = divisor; }
}

void gcoll_sched_node(gcoll_sched_t *s, int node_coll, gcoll_bref_t dst, gcoll_bref_t src,
                      size_t bytes, int root)
{
    gcoll_step_t *st = append(s, GCOLL_STEP_NODE, bytes);
    if (st) { st->node_coll = (uint8_t)node_coll; st->dst = dst; st->src = src; st->peer = root; }
}

void gcoll_sched_insert_node_early(gcoll_sched_t *s, uint32_t r, int node_coll, gcoll_bref_t dst,
                                   gcoll_bref_t src, size_t bytes, int root)
{
    if (r >= s->nrounds) {   /* the open round: a plain append */
        gcoll_sched_node(s, node_coll, dst, src, bytes, root);
        if (s->status == GCOLL_SUCCESS && bytes) s->steps[s->nsteps - 1].flags |= GCOLL_STEP_EARLY;
        return;
    }
    gcoll_step_t *last = append(s, GCOLL_STEP_NODE, bytes);   /* grows the array */
    if (!last) return;
    uint32_t at = s->round_end[r];
    memmove(&s->steps[at + 1], &s->steps[at], sizeof(gcoll_step_t) * (s->nsteps - 1 - at));
    gcoll_step_t *st = &s->steps[at];
    memset(st, 0, sizeof(*st));
    st->type = GCOLL_STEP_NODE;
    st->flags = GCOLL_STEP_EARLY;
    st->node_coll = (uint8_t)node_coll;
    st->dst = dst;
    st->src = src;
    st->bytes = bytes;
    st->peer = root;
    for (uint32_t k = r; k < s->nrounds; k++) s->round_end[k]++;
}

gcoll_bref_t gcoll_sched_scratch(gcoll_sched_t *s, size_t bytes)
{
    size_t off = (s->scratch_bytes + 63) & ~(size_t)63;
    s->scratch_bytes = off + bytes;
    return gcoll_bref(GCOLL_BUF_SCRATCH, off);
}

gcoll_status_t gcoll_sched_finish(gcoll_sched_t *s)
{
    gcoll_sched_round(s);
    return s->status;
}

static inline void *at(void *const bufs[GCOLL_BUF_COUNT], gcoll_bref_t r)
{
    return (char *)bufs[r.buf] + r.off;
}

gcoll_status_t gcoll_sched_exec_local(const gcoll_sched_t *s, const gcoll_step_t *st,
                                      void *const bufs[GCOLL_BUF_COUNT])
{
    switch (st->type) {
    case GCOLL_STEP_REDUCE:
        return gcoll_reduce_host(at(bufs, st->dst), at(bufs, st->src), at(bufs, st->src2),
                                 st->bytes / s->dt_size, s->dtype, s->op);
    case GCOLL_STEP_COPY:
        gcoll_copy(at(bufs, st->dst), at(bufs, st->src), st->bytes);
        return GCOLL_SUCCESS;
    case GCOLL_STEP_AVG:
        return gcoll_reduce_avg_host(at(bufs, st->dst), st->bytes / s->dt_size, s->dtype, st->peer);
    default:
        return GCOLL_ERROR(GCOLL_ERR_INTERNAL, "step type %d is not a local step", st->type);
    }
}
