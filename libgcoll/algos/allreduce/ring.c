/* SPDX-License-Identifier: BSD-3-Clause */
/* Ring allreduce: reduce-scatter then allgather around the ring, pipelined.
 *
 * The buffer is cut into segments of about P * chunk bytes; each segment is
 * cut into P blocks and goes through 2(P-1) ring steps: P-1 reduce-scatter
 * steps (receive a block's partial sum from prev, add the own contribution,
 * pass it on) after which group index i holds block i of the segment fully
 * reduced, then P-1 allgather steps that forward finished blocks.  Segment
 * g+1 runs one step behind segment g, at most RING_DEPTH segments in flight,
 * so messages stay at most one chunk and scratch stays RING_DEPTH chunks
 * (in place only) however large the buffer.
 *
 * Identical results on every rank: each block is reduced to its final value
 * on exactly one rank and then only copied to the others, so non-associative
 * float sums still agree bit for bit.
 *
 * Cost (n = count * dt_size bytes; R rounds, R = 2(P-1) when one segment):
 *     R alpha + 2 (P-1)/P n beta + (P-1)/P n gamma
 *
 * Steps of one segment at group index i (blocks mod P; next = i+1, prev = i-1):
 *     step      | send to next  | recv from prev   | local
 *     0         | src[i-1]      | block i-2 -> x   | dst[i-2] = src[i-2] op x
 *     k < P-1   | dst[i-k-1]    | block i-k-2 -> x | dst[i-k-2] = src[i-k-2] op x
 *     P-1+j     | dst[i-j]      | block i-j-1 -> dst
 * x is dst itself out of place (that block of dst is free) and a scratch slot
 * in place (dst is src there).  Step P-2 finishes block i. */
#include "algos/algo.h"
#include "algos/peers.h"
#include "algos/pipeline.h"

#define RING_CHUNK_DEFAULT (256 * 1024)   /* bytes per message */
#define RING_DEPTH         2              /* segments in flight */

typedef struct {
    const gcoll_coll_args_t *args;
    int          n, me, next, prev, depth;
    size_t       nseg;        /* segments */
    size_t       slot_bytes;  /* largest block of any segment */
    gcoll_bref_t tmp;         /* depth slots, in place only */
    int          in_place;
} ring_t;

static int mod(int a, int n) { return ((a % n) + n) % n; }

/* Element range of block b of segment g (segments split count like
 * gcoll_block_off, with a size_t number of parts). */
static void ring_block(const ring_t *r, size_t g, int b, size_t *off, size_t *len)
{
    size_t count = r->args->count, q = count / r->nseg, rem = count % r->nseg;
    size_t seg_off = g * q + (g < rem ? g : rem), seg_len = q + (g < rem ? 1 : 0);
    *off = seg_off + gcoll_block_off(seg_len, r->n, b);
    *len = gcoll_block_len(seg_len, r->n, b);
}

/* Reduce-scatter step k of segment g; in place it receives into slot g % depth. */
static void ring_rs_step(const ring_t *r, size_t g, int k, gcoll_sched_t *s)
{
    const gcoll_coll_args_t *a = r->args;
    size_t dt = a->dt_size, soff, slen, roff, rlen;
    ring_block(r, g, mod(r->me - k - 1, r->n), &soff, &slen);
    ring_block(r, g, mod(r->me - k - 2, r->n), &roff, &rlen);
    gcoll_bref_t from = gcoll_bref_add(k == 0 ? a->src : a->dst, soff * dt);
    gcoll_bref_t out  = gcoll_bref_add(a->dst, roff * dt);
    gcoll_bref_t x    = r->in_place
                        ? gcoll_bref_add(r->tmp, (g % (size_t)r->depth) * r->slot_bytes)
                        : out;
    gcoll_sched_send(s, r->next, from, slen * dt);
    gcoll_sched_recv(s, r->prev, x, rlen * dt);
    gcoll_sched_reduce(s, out, gcoll_bref_add(a->src, roff * dt), x, rlen * dt);
}

/* Allgather step j of segment g: forward the block finished j steps ago. */
static void ring_ag_step(const ring_t *r, size_t g, int j, gcoll_sched_t *s)
{
    const gcoll_coll_args_t *a = r->args;
    size_t dt = a->dt_size, soff, slen, roff, rlen;
    ring_block(r, g, mod(r->me - j, r->n), &soff, &slen);
    ring_block(r, g, mod(r->me - j - 1, r->n), &roff, &rlen);
    gcoll_sched_send(s, r->next, gcoll_bref_add(a->dst, soff * dt), slen * dt);
    gcoll_sched_recv(s, r->prev, gcoll_bref_add(a->dst, roff * dt), rlen * dt);
}

static void ring_step(const ring_t *r, size_t g, int k, gcoll_sched_t *s)
{
    if (k < r->n - 1) ring_rs_step(r, g, k, s);
    else ring_ag_step(r, g, k - (r->n - 1), s);
}

static void ring_step_cb(const void *r, size_t g, int k, gcoll_sched_t *s)
{
    ring_step(r, g, k, s);
}

static void ring_init(ring_t *r, const gcoll_coll_args_t *args, const gcoll_group_t *group,
                      gcoll_sched_t *s)
{
    size_t chunk_elems = gcoll_chunk_elems(args->chunk_bytes, RING_CHUNK_DEFAULT, args->dt_size);
    size_t seg_elems = chunk_elems * (size_t)group->size;
    r->args  = args;
    r->n     = group->size;
    r->me    = group->me;
    r->next  = gcoll_group_rank(group, gcoll_ring_next(r->me, r->n));
    r->prev  = gcoll_group_rank(group, gcoll_ring_prev(r->me, r->n));
    r->depth = RING_DEPTH < 2 * (r->n - 1) ? RING_DEPTH : 2 * (r->n - 1);
    r->nseg  = (args->count + seg_elems - 1) / seg_elems;
    r->in_place = gcoll_bref_eq(args->src, args->dst);
    r->slot_bytes = 0;
    r->tmp   = gcoll_bref(GCOLL_BUF_SCRATCH, 0);   /* unused unless reserved below */
    if (r->nseg == 0) return;
    size_t off, len;
    ring_block(r, 0, 0, &off, &len);   /* segment 0, block 0 is the largest */
    r->slot_bytes = len * args->dt_size;
    if (r->in_place) r->tmp = gcoll_sched_scratch(s, (size_t)r->depth * r->slot_bytes);
}

static gcoll_status_t allreduce_ring_build(const gcoll_coll_args_t *args,
                                           const gcoll_group_t *group, gcoll_sched_t *s)
{
    gcoll_sched_round(s);   /* do not share the caller's open round */
    if (group->size == 1) {
        gcoll_sched_copy(s, args->dst, args->src, args->count * args->dt_size);
        gcoll_sched_round(s);
        return s->status;
    }
    ring_t r;
    ring_init(&r, args, group, s);
    gcoll_pipe_schedule(r.nseg, r.depth, 2 * (r.n - 1), ring_step_cb, &r, s);
    return s->status;
}

const gcoll_algo_t gcoll_algo_allreduce_ring = {
    .name    = "ring",
    .coll    = GCOLL_COLL_ALLREDUCE,
    .summary = "ring reduce-scatter + allgather, pipelined in chunks; bandwidth-optimal",
    .build   = allreduce_ring_build,
};
