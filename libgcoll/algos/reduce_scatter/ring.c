/* SPDX-License-Identifier: BSD-3-Clause */
/* Ring reduce-scatter, pipelined in chunks.
 *
 * Block b (count elements) of every rank's src is summed around the ring and
 * ends on group index b: in step k index i receives the partial sum of block
 * i-k-2 from prev, adds its own src block and passes the result on, so after
 * P-1 steps it has received block i from prev with everyone else's
 * contribution and adds its own into dst.  The blocks are cut into segments
 * of at most one chunk, segment g+1 running one step behind segment g with at
 * most RING_DEPTH in flight: messages stay at most one chunk and scratch is
 * 2 RING_DEPTH chunks however large the buffer.
 *
 * Cost (n = count * dt_size, the bytes of one rank's result; R rounds,
 * R = P-1 when one segment):
 *     R alpha + (P-1) n beta + (P-1) n gamma
 *
 * Steps of one segment at group index i (blocks mod P; partials alternate
 * between two scratch buffers x0, x1 of the segment's slot):
 *     step    | send to next   | recv from prev     | local
 *     0       | src[i-1]       | block i-2 -> x0    | x0 = x0 op src[i-2]
 *     k       | x(k-1)%2       | block i-k-2 -> xk%2| xk%2 = xk%2 op src[i-k-2]
 *     P-2     | x(P-3)%2       | block i -> y       | dst = y op src[i]
 * y is dst out of place, a scratch buffer in place (dst is src[i] there).
 * src is never written, except dst itself in place. */
#include "algos/algo.h"
#include "algos/peers.h"
#include "algos/pipeline.h"

#define RING_CHUNK_DEFAULT (256 * 1024)   /* bytes per message */
#define RING_DEPTH         2              /* segments in flight */

typedef struct {
    const gcoll_coll_args_t *args;
    int          n, me, next, prev, depth;
    size_t       nseg, seg_bytes;   /* seg_bytes: the largest segment */
    gcoll_bref_t tmp;               /* depth slots of two partial buffers */
    int          in_place;
} rsring_t;

static int mod(int a, int n) { return ((a % n) + n) % n; }

/* Element range [off, off+len) of segment g within a block. */
static void rsring_seg(const rsring_t *r, size_t g, size_t *off, size_t *len)
{
    size_t count = r->args->count, q = count / r->nseg, rem = count % r->nseg;
    *off = g * q + (g < rem ? g : rem);
    *len = q + (g < rem ? 1 : 0);
}

/* Partial buffer `which` (0/1) of segment g's slot. */
static gcoll_bref_t rsring_x(const rsring_t *r, size_t g, int which)
{
    size_t slot = g % (size_t)r->depth;
    return gcoll_bref_add(r->tmp, (2 * slot + (size_t)which) * r->seg_bytes);
}

static gcoll_bref_t rsring_src(const rsring_t *r, int b, size_t off)
{
    size_t dt = r->args->dt_size;
    return gcoll_bref_add(r->args->src, ((size_t)b * r->args->count + off) * dt);
}

static void rsring_step(const rsring_t *r, size_t g, int k, gcoll_sched_t *s)
{
    size_t off, len;
    rsring_seg(r, g, &off, &len);
    size_t bytes = len * r->args->dt_size;
    int last = k == r->n - 2, rb = mod(r->me - k - 2, r->n);
    gcoll_bref_t from = k == 0 ? rsring_src(r, mod(r->me - 1, r->n), off)
                               : rsring_x(r, g, (k - 1) % 2);
    gcoll_bref_t out = last ? gcoll_bref_add(r->args->dst, off * r->args->dt_size)
                            : rsring_x(r, g, k % 2);
    gcoll_bref_t x = last && r->in_place ? rsring_x(r, g, k % 2) : out;
    gcoll_sched_send(s, r->next, from, bytes);
    gcoll_sched_recv(s, r->prev, x, bytes);
    gcoll_sched_reduce(s, out, x, rsring_src(r, rb, off), bytes);
}

static void rsring_step_cb(const void *r, size_t g, int k, gcoll_sched_t *s)
{
    rsring_step(r, g, k, s);
}

static void rsring_init(rsring_t *r, const gcoll_coll_args_t *args, const gcoll_group_t *group,
                        gcoll_sched_t *s)
{
    size_t chunk_elems = gcoll_chunk_elems(args->chunk_bytes, RING_CHUNK_DEFAULT, args->dt_size);
    gcoll_bref_t own = gcoll_bref_add(args->src, (size_t)group->me * args->count * args->dt_size);
    r->args  = args;
    r->n     = group->size;
    r->me    = group->me;
    r->next  = gcoll_group_rank(group, gcoll_ring_next(r->me, r->n));
    r->prev  = gcoll_group_rank(group, gcoll_ring_prev(r->me, r->n));
    r->depth = RING_DEPTH < r->n - 1 ? RING_DEPTH : r->n - 1;
    r->nseg  = (args->count + chunk_elems - 1) / chunk_elems;
    r->in_place = gcoll_bref_eq(own, args->dst);
    r->tmp   = gcoll_bref(GCOLL_BUF_SCRATCH, 0);   /* unused unless reserved below */
    r->seg_bytes = r->nseg ? (args->count + r->nseg - 1) / r->nseg * args->dt_size : 0;
    if (r->nseg && (r->n > 2 || r->in_place))
        r->tmp = gcoll_sched_scratch(s, 2 * (size_t)r->depth * r->seg_bytes);
}

static gcoll_status_t reduce_scatter_ring_build(const gcoll_coll_args_t *args,
                                                const gcoll_group_t *group, gcoll_sched_t *s)
{
    gcoll_sched_round(s);   /* do not share the caller's open round */
    if (group->size == 1) {
        gcoll_sched_copy(s, args->dst, args->src, args->count * args->dt_size);
        gcoll_sched_round(s);
        return s->status;
    }
    rsring_t r;
    rsring_init(&r, args, group, s);
    gcoll_pipe_schedule(r.nseg, r.depth, r.n - 1, rsring_step_cb, &r, s);
    return s->status;
}

const gcoll_algo_t gcoll_algo_reduce_scatter_ring = {
    .name    = "ring",
    .coll    = GCOLL_COLL_REDUCE_SCATTER,
    .summary = "ring: P-1 steps of one block each, pipelined in chunks; bandwidth-optimal",
    .build   = reduce_scatter_ring_build,
};
