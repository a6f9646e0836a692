/* SPDX-License-Identifier: BSD-3-Clause */
/* The ring: small bcasts and reduces without the step barrier.
 *
 * In a loop of rooted collectives an MPI's eager messages let the writers
 * (a bcast's root, a reduce's non-roots) run many calls ahead of the
 * readers: each call is a copy into a queue.  The step protocol
 * (shm_int.h) lets a rank run at most one step ahead, so every small bcast
 * cost its root a round trip to the slowest reader, and at 4 ranks on 2
 * cores a context switch.  The ring is that queue.
 *
 * Every rank of the segment numbers its ring ops 1, 2, 3, ... (the same
 * numbers everywhere: collectives start in the same order on every rank).
 * Ring op s is announced in line (s - 1) mod L of each writer's ring, and
 * its payload travels in that line (up to 56 bytes), or in slot (s - 1) mod
 * K of the slots of its size class (K = 32 slots of 2 KiB, or K slots of
 * 32 KiB set by the segment's size, shm_int.h), where K of an inline
 * payload is L.
 * Its lag is D = min(K, L).  Two rules, with flags as in the step protocol
 * (release stores, acquire loads, futex sleepers):
 *
 *   write   before writing its payload for op s, a writer waits until every
 *           other rank's `done` >= s - D, then copies the payload and
 *           stores the line's flag = s;
 *   read    a reader of op s waits until the writer's line flag >= s, reads
 *           the payload;
 *
 * and every rank stores its `done` = s when it has finished op s.  The
 * memory op s writes was last used by op s - D or earlier (a line, by
 * s - L <= s - D; a slot of its class, by s - K <= s - D or before, ops of
 * other classes leaving it alone), which every rank had finished, so a
 * reader never sees a payload change under it; a line's flag only grows,
 * so a stale flag (an older op) is never taken for op s.  Writers thus run
 * up to D ops ahead of the slowest rank.  The 32 KiB slots span a window
 * (2 ranks: 64 of them, 2 MiB), so that one is rewritten only after
 * megabytes of other payloads: a store to a line that a reader still holds
 * from its last read costs a round trip to that reader's core (shm_coll.c,
 * "Where an op puts its data"); 32 KiB bcasts took 3.9-4.1 µs with 8 such
 * slots and 1.3-1.6 with 64 at 2 ranks.  Not the 2 KiB ones: spread over
 * 512 KiB they made 1 KiB bcasts 25% slower (a new page, so a TLB miss, on
 * every other call), and their 64 KiB are rewritten at most every 32 calls.
 * The ring shares nothing with the step protocol (other memory, other
 * counters), so ring ops and step ops mix in any order: each keeps the
 * order of its own kind, and every rank runs the collectives in one order.
 *
 * A ring op moves once: it waits for its rule, then does all its work. */
#include <string.h>
#include "shm/shm_int.h"
#include "base/copy.h"
#include "base/coll_kind.h"

static int ring_line(uint64_t seq) { return (int)((seq - 1) % GCOLL_SHM_RING_LINES); }

/* The slots K of op o's size class (an inline payload's: the lines). */
static uint64_t ring_slots(const gcoll_shm_t *shm, const gcoll_shm_op_t *o)
{
    if (o->bytes <= GCOLL_SHM_INLINE) return GCOLL_SHM_RING_LINES;
    return o->bytes <= GCOLL_SHM_RING_MID_SLOT ? GCOLL_SHM_RING_MID : shm->ring_depth;
}

/* Its lag D = min(K, L): the line is reused after L ring ops. */
static uint64_t ring_lag(const gcoll_shm_t *shm, const gcoll_shm_op_t *o)
{
    uint64_t k = ring_slots(shm, o);
    return k < GCOLL_SHM_RING_LINES ? k : GCOLL_SHM_RING_LINES;
}

/* A bcast's root and a reduce's non-roots write; the others read. */
static int ring_writes(const gcoll_shm_t *shm, const gcoll_shm_op_t *o)
{
    return (o->coll == GCOLL_COLL_BCAST) == (shm->rank == o->root);
}

/* A writer that found the ring full waits until half of it is free again
 * (o->waiting: it was blocked before): woken for one free place, it would
 * write one payload and sleep again, a sleep and a wake-up per call.  Safe:
 * every reader holds the payloads of the calls up to ours, so it reaches
 * them without us. */
static gcoll_shm_ring_wait_t ring_need(const gcoll_shm_t *shm, const gcoll_shm_op_t *o)
{
    if (ring_writes(shm, o)) {
        uint64_t lag = o->waiting ? ring_lag(shm, o) / 2 : ring_lag(shm, o);
        if (o->seq <= lag) return (gcoll_shm_ring_wait_t){ GCOLL_SHM_RING_NONE, -1, 0 };
        return (gcoll_shm_ring_wait_t){ GCOLL_SHM_RING_FREE, -1, o->seq - lag };
    }
    return (gcoll_shm_ring_wait_t){ GCOLL_SHM_RING_DATA, o->coll == GCOLL_COLL_BCAST ? o->root : -1,
                                    o->seq };
}

gcoll_shm_line_t *gcoll_shm_ring_line(const gcoll_shm_t *shm, const gcoll_shm_ring_wait_t *w,
                                      int j, uint64_t *want)
{
    gcoll_shm_ring_t *ring = gcoll_shm_ring(shm, j);
    *want = w->seq;
    return w->kind == GCOLL_SHM_RING_FREE ? &ring->done : &ring->line[ring_line(w->seq)];
}

/* A reader's spin, on a cache line of its own: on an Intel Xeon guest the
 * 8-byte reduce at 2 ranks ran 0.14 or 0.10 us per call depending on where
 * the linker put this function (an unrelated change in shm_coll.c moved it
 * 144 bytes; 4, 16 and 32-byte reduces did not move), and aligned it ran
 * 0.10 again (peer harness, 3 alternated launches each).  Likely the
 * branch-alignment effects of that core; not confirmed. */
__attribute__((aligned(64)))
int gcoll_shm_ring_late(const gcoll_shm_t *shm, const gcoll_shm_ring_wait_t *w, int j)
{
    if (w->kind == GCOLL_SHM_RING_NONE || j == shm->rank || (w->from >= 0 && j != w->from))
        return 0;
    uint64_t want;
    gcoll_shm_line_t *line = gcoll_shm_ring_line(shm, w, j, &want);
    return atomic_load_explicit(&line->flag, memory_order_acquire) < want;
}

/* Where rank j's payload of op o is: in the op's line when it fits. */
static unsigned char *ring_payload(const gcoll_shm_t *shm, int j, const gcoll_shm_op_t *o)
{
    gcoll_shm_ring_t *ring = gcoll_shm_ring(shm, j);
    uint64_t k = (o->seq - 1) % ring_slots(shm, o);
    if (o->bytes <= GCOLL_SHM_INLINE) return ring->line[k].data;
    if (o->bytes <= GCOLL_SHM_RING_MID_SLOT) return ring->mid[k];
    return ring->slot + k * GCOLL_SHM_RING_SLOT;
}

/* A bcast root's payloads from 1 KiB (GCOLL_SHM_RING_WAY_CLS0) choose
 * their write way too.  Through the cache each store first takes its line from
 * the reader's cache, where that slot's last payload went, and what that
 * costs depends on where the vCPUs run; streamed, the payload goes to
 * memory and the reader copies it from there.  Zen 4 guest, 2 ranks,
 * 2026-12-06, ns per byte of the root's copy and of the reader's, slow
 * state: through the cache 0.027 and 0.039 at 2 KiB, 0.077 and 0.030 at
 * 32 KiB, streamed 0.122 and 0.088, 0.043 and 0.080; busy state: through
 * the cache 0.13 and 0.10, 0.39 and 0.06, streamed 0.13 and 0.13, 0.04
 * and 0.07.  Per call (peer harness, alternated launches): 2 KiB 0.25 slow
 * and 0.85-0.95 busy through the cache, 0.31-0.38 in both streamed; 32 KiB
 * 1.0-2.6 and 9.2-13.8 against 2.3-2.5.  Neither side's time alone picks
 * the faster way: the reader's is lower through the cache in both states,
 * the root's lower streamed in both.  So a way costs the sum: the root
 * times its copy-in (one call in four of the way in use, and both calls of
 * a try) and adds the reader's cost of that way, which the rank after the
 * root measures on the payloads it copies out (the root marks each
 * payload's way in its line) and publishes in its control block.  That
 * cost lags: the reader gets to a try's payloads up to 64 calls later, so
 * a try is judged with the reader's cost from the try before (unknown at
 * first: then the other way's).  Timing the root's copy with a fence, so
 * that it counted the stores still waiting for their lines, made the
 * cache look 3x dearer than it is in a loop, where those overlap the next
 * call; the slow state then streamed at 512 B-4 KiB, 1.2-1.6x slower.
 * Not from 512 B: the slow state paid 27% there (0.182 against 0.143 us;
 * a copy of some 20 ns that the clock barely times), for 1.5x in the busy
 * one; from 1 KiB it pays 2-5%. */
static int ring_reader(const gcoll_shm_t *shm, int root) { return (root + 1) % shm->size; }

static void ring_bcast_way(gcoll_shm_t *shm, gcoll_shm_op_t *o)
{
    if (shm->cfg->shm_stream != GCOLL_SHM_STREAM_AUTO) {   /* the user decided */
        o->stream = shm->rank == o->root && shm->cfg->shm_stream == GCOLL_SHM_STREAM_ON;
        return;
    }
    int cls = gcoll_shm_adapt_class(o->bytes);
    if (shm->rank == o->root) {
        gcoll_shm_adapt_t *a = &shm->adapt_ring[cls];
        gcoll_shm_adapt_count(a, cls);
        o->stream = (uint8_t)gcoll_shm_adapt_way(a);
        if (gcoll_shm_adapt_timed(a)) o->cls = (uint8_t)cls;
    } else if (shm->rank == ring_reader(shm, o->root)) {
        o->cls = (uint8_t)cls;   /* measures the ways' costs */
    }
}

/* What the reader last published for way w of class cls, in ns per byte. */
static float ring_reader_cost(const gcoll_shm_t *shm, int root, int cls, int w)
{
    _Atomic uint32_t *c = shm->ctrl[ring_reader(shm, root)].ring_cost[cls - GCOLL_SHM_RING_WAY_CLS0];
    uint32_t bits = atomic_load_explicit(&c[w], memory_order_relaxed);
    if (!bits) bits = atomic_load_explicit(&c[!w], memory_order_relaxed);
    float f;
    memcpy(&f, &bits, sizeof(f));
    return f;
}

/* A writer's payload into its slot, by the op's way (o->stream). */
static void ring_copy_in(gcoll_shm_t *shm, const gcoll_shm_op_t *o)
{
    unsigned char *slot = ring_payload(shm, shm->rank, o);
    if (!o->stream) {   /* the small calls' path stays a plain copy */
        gcoll_copy(slot, o->src, o->bytes);
        return;
    }
    gcoll_shm_copy(slot, o->src, o->bytes, 1);   /* streamed: fenced before its flag */
    gcoll_shm_copy_done(1);
}

/* A bcast root's copy-in, timed (ring_bcast_way): the way costs this copy
 * and the reader's. */
static void ring_copy_in_timed(gcoll_shm_t *shm, const gcoll_shm_op_t *o)
{
    double t0 = gcoll_clock_now();
    ring_copy_in(shm, o);
    float ns = gcoll_shm_ns_per_byte(t0, o->bytes);
    if (ns <= 0) return;   /* a coarse clock: no sample (0 means unknown) */
    gcoll_shm_adapt_record(&shm->adapt_ring[o->cls], o->stream,
                           ns + ring_reader_cost(shm, o->root, o->cls, o->stream));
}

/* The reader that measures: its copy of a payload written way w, into a
 * running mean published when it moved 10% (its line stays shared
 * meanwhile). */
static void ring_read_learn(gcoll_shm_t *shm, const gcoll_shm_op_t *o, int w, float ns)
{
    if (ns <= 0) return;   /* a coarse clock: no sample (0 means unknown) */
    int k = o->cls - GCOLL_SHM_RING_WAY_CLS0;
    float *c = &shm->ring_read[k].cost[w];
    gcoll_shm_adapt_fold(c, ns);
    _Atomic uint32_t *pub = &shm->ctrl[shm->rank].ring_cost[k][w];
    uint32_t bits = atomic_load_explicit(pub, memory_order_relaxed);
    float last;
    memcpy(&last, &bits, sizeof(last));
    if (bits && *c > 0.9f * last && *c < 1.1f * last) return;
    memcpy(&bits, c, sizeof(bits));
    atomic_store_explicit(pub, bits, memory_order_relaxed);
}

/* A bcast reader: copy the root's payload out; the reader that measures
 * times one copy in four, and each one of a way it had not seen last. */
static void ring_bcast_out(gcoll_shm_t *shm, gcoll_shm_op_t *o)
{
    const unsigned char *src = ring_payload(shm, o->root, o);
    if (!o->cls) {
        gcoll_copy(o->dst, src, o->bytes);
        return;
    }
    gcoll_shm_ring_read_t *r = &shm->ring_read[o->cls - GCOLL_SHM_RING_WAY_CLS0];
    int w = gcoll_shm_ring(shm, o->root)->line[ring_line(o->seq)].data[0];
    o->stream = (uint8_t)w;   /* the payload's way (the tests look) */
    if (w == r->last && (++r->calls & 3)) {
        gcoll_copy(o->dst, src, o->bytes);
        return;
    }
    r->last = (uint8_t)w;
    double t0 = gcoll_clock_now();
    gcoll_copy(o->dst, src, o->bytes);
    ring_read_learn(shm, o, w, gcoll_shm_ns_per_byte(t0, o->bytes));
}

/* A reduce's payloads from GCOLL_SHM_STREAM_IN_MIN choose their write way
 * as the step forms' do: the root times its calls (it reads what the
 * non-roots wrote) and the non-roots take its way (gcoll_shm_way_pick).
 * A writer up to 64 calls ahead of the root writes under the way of an
 * older call, so a try may time payloads of the old way and the new way's
 * payloads count for the way in use.  Learning from the way each payload
 * was written instead (marked in its line) made the try last until the
 * marked payloads reached the root, all the writers' calls between
 * written the other way: in the Zen 4 guest's slow state, where streamed
 * payloads cost 3x, the 32 KiB reduce took 1.60 us against 1.34 (and
 * 1.25 with the non-roots always through the cache); the busy state's
 * gain (13.4 -> 3.9 us) came with the simple form. */
void gcoll_shm_ring_start(gcoll_shm_t *shm, gcoll_shm_op_t *o)
{
    o->seq = ++shm->ring_seq;
    if (o->coll == GCOLL_COLL_REDUCE && o->bytes >= GCOLL_SHM_STREAM_IN_MIN)
        gcoll_shm_way_pick(shm, o);
    else if (o->coll == GCOLL_COLL_BCAST && o->bytes >= (1u << GCOLL_SHM_RING_WAY_CLS0))
        ring_bcast_way(shm, o);
}

/* The reduce's root: every rank's input in rank order, its own from src. */
static void ring_fold(gcoll_shm_t *shm, const gcoll_shm_op_t *o)
{
    static _Thread_local unsigned char scratch[GCOLL_SHM_FOLD_BLOCK] __attribute__((aligned(64)));
    const void *in[shm->size];
    for (int k = 0; k < shm->size; k++)
        in[k] = k == shm->rank ? (const void *)o->src : ring_payload(shm, k, o);
    gcoll_shm_fold_inputs(shm, o->dst, in, shm->size, o->count, o->dtype, o->op, scratch);
}

int gcoll_shm_ring_ready(const gcoll_shm_t *shm, const gcoll_shm_ring_wait_t *w)
{
    for (int j = 0; j < shm->size; j++)
        if (gcoll_shm_ring_late(shm, w, j)) return 0;
    return 1;
}

/* gcoll_shm_ring_ready for the op's own move.  A writer asks every
 * reader's `done` before each op, and that line is written by its reader on
 * every op: loading it each time moved a cache line between cores per rank
 * and call (a fifth of an 8-byte bcast's time at 2 ranks).  `done` only
 * grows, so the value last loaded is a lower bound, and the acquire load
 * that returned it already ordered that reader's reads before our writes:
 * the line is loaded again only when that value is not enough, about once
 * per half ring.  Only the op's progress (under the engine's lock) keeps
 * ring_seen; spinning and sleeping ask the lines themselves. */
static int ring_may_move(gcoll_shm_t *shm, const gcoll_shm_ring_wait_t *w)
{
    if (w->kind != GCOLL_SHM_RING_FREE) return gcoll_shm_ring_ready(shm, w);
    for (int j = 0; j < shm->size; j++) {
        if (j == shm->rank || shm->ring_seen[j] >= w->seq) continue;
        shm->ring_seen[j] = atomic_load_explicit(&gcoll_shm_ring(shm, j)->done.flag,
                                                 memory_order_acquire);
        if (shm->ring_seen[j] < w->seq) return 0;
    }
    return 1;
}

/* A writer's next inline op goes in the next line, which its reader read
 * L ops ago and may still hold: its store would first fetch the line for
 * writing (a round trip to the reader's core) with the call waiting at its
 * next fence (the engine lock's release).  Taken for writing right after
 * this op's flag, the fetch overlaps the caller's work until the next call.
 * Intel Xeon guest, 2 ranks, peer harness, 3 alternated launches: 8 B
 * bcast 0.112 -> 0.088 us (Open MPI 5: 0.076), 32 B 0.111 -> 0.084; 8 B
 * reduce 0.119 -> 0.105 (0.089), 32 B 0.118 -> 0.104 (0.111).  Not for
 * larger payloads: the head of the next slot of the class, taken the same
 * way, made 2-8 KiB bcasts 12-20% faster but 128-512 B reduces and 512 B
 * bcasts 8-15% slower.  A prefetch (gcoll_shm_take_line): where the reader
 * still reads that line (a full ring), it reads it again; nothing else
 * changes. */
void gcoll_shm_ring_progress(gcoll_shm_t *shm, gcoll_shm_op_t *o, int *done)
{
    gcoll_shm_ring_wait_t need = ring_need(shm, o);
    if (!ring_may_move(shm, &need)) {
        o->waiting = 1;
        shm->ring_wait = ring_need(shm, o);   /* for a sleeper and a timeout message */
        *done = 0;
        return;
    }
    shm->ring_wait.kind = GCOLL_SHM_RING_NONE;
    o->waiting = 0;
    gcoll_shm_ring_t *mine = gcoll_shm_ring(shm, shm->rank);
    if (ring_writes(shm, o)) {
        if (o->coll == GCOLL_COLL_BCAST && o->cls) ring_copy_in_timed(shm, o);
        else ring_copy_in(shm, o);
        gcoll_shm_line_t *line = &mine->line[ring_line(o->seq)];
        if (o->bytes > GCOLL_SHM_INLINE) line->data[0] = o->stream;   /* its way, for the reader */
        gcoll_shm_publish(shm, line, o->seq);
        if (o->bytes <= GCOLL_SHM_INLINE) gcoll_shm_take_line(&mine->line[ring_line(o->seq + 1)]);
    } else if (o->coll == GCOLL_COLL_BCAST) {
        ring_bcast_out(shm, o);
    } else {
        ring_fold(shm, o);
        if (o->cls) gcoll_shm_way_learn(shm, o);   /* the root: what its way cost */
    }
    gcoll_shm_publish(shm, &mine->done, o->seq);
    *done = 1;
}
