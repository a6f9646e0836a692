/* SPDX-License-Identifier: BSD-3-Clause */
/* Inside of the shared-memory executor: segment layout, the step protocol
 * and the hot wait loop, shared by shm_segment.c and shm_coll.c.
 *
 * Segment layout (one POSIX shm object per node communicator of P ranks):
 *
 *   offset 0        ctrl[P]: per rank, two 128-byte lines, one per parity;
 *                   each line holds the rank's step flag and 56 bytes of
 *                   inline payload (so a tiny message travels in the same
 *                   cache line as the flag that announces it: one miss);
 *                   then the rank's choices for the reduces it roots,
 *                   and what its copies out of the ring bcasts of the
 *                   rank before it cost (gcoll_shm_ctrl_t)
 *   page aligned    region[P]: per rank, two areas (one per parity) of
 *                   (P + 1) * slice bytes:
 *                     slot[j], j < P   slice bytes each: this rank's input
 *                                      for the slice that rank j reduces
 *                     res              slice bytes: the slice this rank
 *                                      reduced, for the others to copy out
 *                   bcast and allgather use an area as one flat buffer.
 *                   After the two areas, 128-byte aligned: the rank's
 *                   ring (shm_ring.c) for small rooted collectives.
 *
 * The step protocol.  Each rank counts steps; a step is "store my flag =
 * step (release), then wait until every other rank's flag >= step
 * (acquire)": an all-to-all barrier that also publishes data.  The time
 * between step g-1 and step g is phase g.  One rule makes every buffer reuse
 * safe, across chunks and across calls alike:
 *
 *   in phase g a rank writes only its own shared buffers of parity g % 2,
 *   and reads only buffers (anyone's) of parity (g - 1) % 2.
 *
 * Data written in phase g is published by step g (release/acquire pairs
 * make the plain stores before it visible to the plain loads after it) and
 * read in phase g + 1.  The writer writes that parity again only in phase
 * g + 2, which starts after step g + 1, which every reader signals after its
 * reads of phase g + 1.  A rank is never more than one step ahead of
 * another, so the flag of parity g % 2 holds g - 2, g or (never before we
 * signal g + 1) g + 2: "flag >= g" is exact.  A call may end without a step
 * (its last phase only reads); the next call simply continues that phase.
 *
 * Waiting.  A waiter spins, yields a few times, then sleeps in futex(2) on
 * the low 32 bits of the flag it waits for, counted in that line's
 * `sleepers`; a rank that signals a step wakes the line's sleepers if there
 * are any.  Either the waiter sees the new flag or the signaller sees the
 * sleeper: the signaller's flag store and sleepers load, and the waiter's
 * sleepers increment and flag load, are each ordered by a full barrier.
 * Where the node's ranks have a CPU each (shm->light_fence), the
 * signaller's is only a compiler barrier, and the waiter makes the
 * barrier happen on every CPU running the node's ranks before it loads
 * the flag (membarrier(2), GLOBAL_EXPEDITED, 11 us on the Zen 4 guest, paid
 * once per sleep): a signaller's store before that point is then visible
 * to the waiter's load, a signaller's load after it sees the sleeper.
 * That takes the seq_cst store (x86: xchg, which waits until the peer's
 * copy of the line is invalidated) out of every step and ring op: 2
 * ranks, 8 B-512 B, 5-15% per call (docs/PERFORMANCE.md).  With ranks
 * sharing CPUs, sleeps are frequent and the barrier would be paid on most
 * calls, so both sides keep full barriers.  A flag that moved between the
 * waiter's load and its futex call fails the kernel's compare, so no
 * wake-up is lost.
 * A late peer costs a sleeper no CPU: with ranks sharing CPUs a yielding
 * waiter may be handed the CPU straight back, and alone on its CPU it burns
 * a core that the application's other threads could use.
 */
#ifndef GCOLL_SHM_INT_H
#define GCOLL_SHM_INT_H

#include <stdatomic.h>
#include <stdint.h>
#include <stddef.h>
#include "base/clock.h"
#include "shm/shm.h"
#include "shm/shm_adapt.h"

#define GCOLL_SHM_LINE    128  /* two cache lines: Intel's adjacent-line
                                * prefetcher pairs them, so padding to one
                                * 64-byte line would still false-share */
#define GCOLL_SHM_INLINE  56   /* payload bytes beside the flag in its line */

/* The windows of a rank's two parities hold at least this many bytes
 * over all its peers (2 MiB per parity at 2 ranks, 1 MiB at 3, one area
 * from 4 ranks on): ops smaller than a window take the next place in it
 * each time they use it, so a place is written again only after each
 * reader has read megabytes from the writer, more than a core's L2 keeps
 * (shm_coll.c, "Where an op puts its data"). */
#define GCOLL_SHM_WINDOW  (4u << 20)

/* Bytes of one area (per rank, per parity) before division into P + 1
 * slices.  768 KiB gives 256 KiB slices at 2 ranks: the whole shared
 * working set (2 ranks x 2 parities x 3 slices = 3 MiB) stays in L2+L3, and
 * a 64 MiB allreduce needs 130 steps.  See the top of shm_coll.c. */
#define GCOLL_SHM_AREA    (768u << 10)
#define GCOLL_SHM_MIN_SLICE 4096u

/* The ring of small rooted collectives (shm_ring.c), per rank: lines (a
 * call's flag, and its payload up to 56 bytes), 32 slots for payloads up
 * to 2 KiB, and slots for payloads up to 32 KiB.  These fill a window as
 * the areas' places do (GCOLL_SHM_WINDOW over the rank's peers: 64 slots
 * at 2 ranks, at least 8), so a slot is written again only after each
 * reader has read megabytes since.  Writers run up to 64 calls of 56
 * bytes, 32 of 2 KiB, or as many larger ones as there are slots (at most
 * 64) ahead. */
#define GCOLL_SHM_RING_LINES 64
#define GCOLL_SHM_RING_MID   32
#define GCOLL_SHM_RING_MID_SLOT (2u << 10)
#define GCOLL_SHM_RING_DEPTH_MIN 8
#define GCOLL_SHM_RING_SLOT  (32u << 10)
/* The size classes of ring bcasts that choose a write way: 1 KiB to
 * 32 KiB (shm_ring.c says why not from 512 B). */
#define GCOLL_SHM_RING_WAY_CLS0    10
#define GCOLL_SHM_RING_WAY_CLASSES 6

/* Elements of a fold go in blocks of this many bytes: accumulator and
 * inputs stay in L1 (shm_coll.c). */
#define GCOLL_SHM_FOLD_BLOCK (8u << 10)

_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2,
               "the step flags must be lock-free (address-free) to work across processes");

typedef struct {
    _Atomic uint64_t flag;                     /* last step the owner signalled */
    unsigned char    data[GCOLL_SHM_INLINE];   /* inline payload of this parity */
    _Atomic uint32_t sleepers;                 /* waiters asleep on flag (futex) */
    _Atomic int32_t  cpu;                      /* 1 + the CPU the owner ran on when it
                                                * last published here; 0: not known
                                                * (only where ranks outnumber CPUs) */
    unsigned char    pad[GCOLL_SHM_LINE - 72];
} gcoll_shm_line_t;

/* A large reduce's form (shm_coll.c, "The reduce's form"): 0 nothing
 * published yet (the single copy), else SHM_WAY + 1. */
typedef struct {
    gcoll_shm_line_t line[2];                  /* by step parity */
    /* the owner's choice for the reduces it roots, by size class, for the
     * large reduce after the one that wrote it: [reduce_seq & 1] */
    _Alignas(GCOLL_SHM_LINE) uint8_t reduce_form[2][GCOLL_SHM_ADAPT_CLASSES];
    /* the owner's write way for the non-roots of the reduces it roots, by
     * size class (shm_coll.c, "Writing the reduced slice"): a hint, read
     * whenever, every value correct; 1 = streaming stores */
    _Alignas(GCOLL_SHM_LINE) _Atomic uint8_t reduce_way[GCOLL_SHM_ADAPT_CLASSES];
    /* what the owner's copies out of the ring bcasts of the root before it
     * cost, ns per byte (float bits, 0 unknown), by size class from
     * GCOLL_SHM_RING_WAY_CLS0 and write way: for that root (shm_ring.c) */
    _Alignas(GCOLL_SHM_LINE) _Atomic uint32_t ring_cost[GCOLL_SHM_RING_WAY_CLASSES][2];
} gcoll_shm_ctrl_t;

_Static_assert(sizeof(gcoll_shm_line_t) == GCOLL_SHM_LINE, "line layout");

/* One rank's ring: `done` holds the last ring op this rank finished, each
 * line's flag the ring op whose payload it announces (inline up to 56
 * bytes, else in a slot).  The rules are at the top of shm_ring.c. */
typedef struct {
    gcoll_shm_line_t done;
    gcoll_shm_line_t line[GCOLL_SHM_RING_LINES];
    unsigned char    mid[GCOLL_SHM_RING_MID][GCOLL_SHM_RING_MID_SLOT];
    unsigned char    slot[];    /* ring_depth slots of GCOLL_SHM_RING_SLOT bytes */
} gcoll_shm_ring_t;



/* The rank after a ring bcast's root, per size class: what its copies of
 * each way cost (a running mean), how many it made, the way of the last. */
typedef struct {
    float    cost[2];
    uint32_t calls;
    uint8_t  last;
} gcoll_shm_ring_read_t;

/* Where the op in progress puts its data in a parity's window (set when it
 * starts, the same on every rank; shm_coll.c, "Where an op puts its data"):
 * at place ((g >> 1) mod places) * unit for the data of phase g, slots
 * stride bytes apart. */
typedef struct {
    size_t stride;   /* bytes between the slots of the sliced forms */
    size_t unit;     /* bytes between two places */
    size_t places;   /* 0 or 1: always the window's start */
} gcoll_shm_place_t;

struct gcoll_shm {
    const gcoll_config_t *cfg;     /* the communicator's (it outlives us) */
    int               rank, size;
    int               broken;      /* a wait timed out: counters disagree */
    int               spin_limit;  /* pause iterations before sleeping */
    int               light_fence; /* signallers skip the full barrier; sleepers
                                    * pay for it (membarrier, "Waiting" above) */
    int               shares_cpus; /* ranks outnumber CPUs: publishers say where
                                    * they run (gcoll_shm_peer_here) */
    uint64_t          step;        /* last step this rank signalled */
    int               held;        /* ... and left without seeing all peers
                                    * signal it (shm_coll.c): the next op
                                    * waits for that before its first phase */
    size_t            slice;       /* bytes of one slice (multiple of 64) */
    size_t            area;        /* (size + 1) * slice: one chunk's frame */
    size_t            window;      /* bytes per parity, >= area, page multiple */
    size_t            region;      /* bytes per rank: 2 windows + ring, page aligned */
    gcoll_shm_place_t place;       /* where the op in progress puts its data */
    size_t            ring_off;    /* offset of the ring in a region */
    size_t            ring_depth;  /* its slots of GCOLL_SHM_RING_SLOT bytes */
    uint64_t          ring_seq;    /* ring ops started (the same on every rank) */
    gcoll_shm_ring_wait_t ring_wait;  /* of the ring op in progress, if blocked */
    uint64_t         *ring_seen;   /* [size]: each rank's ring `done` as a writer
                                    * last loaded it (shm_ring.c: a lower bound) */
    void             *base;        /* the mapping */
    size_t            map_bytes;
    gcoll_shm_ctrl_t *ctrl;        /* [size], at base */
    unsigned char    *data;        /* region of rank 0 */
    gcoll_shm_adapt_t adapt[GCOLL_SHM_ADAPT_CLASSES];        /* allreduce */
    gcoll_shm_adapt_t adapt_rw[GCOLL_SHM_ADAPT_CLASSES];     /* a reduce root's and its
                                                              * non-roots' writes */
    gcoll_shm_adapt_t adapt_bcast[GCOLL_SHM_ADAPT_CLASSES];  /* a bcast root's copy-in */
    gcoll_shm_adapt_t adapt_ag[GCOLL_SHM_ADAPT_CLASSES];     /* an allgather's copy-in */
    gcoll_shm_adapt_t adapt_rs[GCOLL_SHM_ADAPT_CLASSES];     /* a reduce_scatter's copy-in */
    gcoll_shm_adapt_t adapt_reduce[GCOLL_SHM_ADAPT_CLASSES]; /* a reduce root's form:
                                                              * `stream` 1 = copying */
    gcoll_shm_adapt_t adapt_ring[GCOLL_SHM_ADAPT_CLASSES];   /* a ring bcast root's copy-in */
    gcoll_shm_ring_read_t ring_read[GCOLL_SHM_RING_WAY_CLASSES];  /* ... its reader's copies */
    uint64_t          reduce_seq;  /* large reduces started (the same on every rank) */
    uint64_t          reduce_copies;  /* ... that copied through the segment here */
    struct gcoll_shm_zc *zc;       /* zero-copy state (shm_zcopy.c), NULL: copy only */
    struct gcoll_shm_cma *cma;     /* single-copy reduce (shm_cma.c), NULL: off */
};

/* Slow path of a wait for what the segment waits for (the peers' signal of
 * this rank's last step, or a ring op's rule): sleep, watch the clock,
 * report the missing ranks. */
gcoll_status_t gcoll_shm_wait_slow(gcoll_shm_t *shm);

/* Wake the ranks asleep on a line's flag. */
void gcoll_shm_wake(gcoll_shm_line_t *line);

/* A sleeper's side of the light fence: after counting itself in a line's
 * sleepers, before loading its flag. */
void gcoll_shm_sleeper_fence(const gcoll_shm_t *shm);

static inline void gcoll_shm_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

/* Fetch the line at p for writing (prefetchw): a store to a line a peer
 * read last waits for it, and the fetch can run ahead of that store. */
static inline void gcoll_shm_take_line(const void *p)
{
#if defined(__x86_64__)
    __asm__ volatile("prefetchw %0" : : "m"(*(const char *)p));
#else
    __builtin_prefetch(p, 1, 3);
#endif
}

/* ... every line of [dst, dst + bytes), before a copy through the cache
 * writes them (gcoll_shm_copy says where and why). */
static inline void gcoll_shm_take_lines(const void *dst, size_t bytes)
{
    for (size_t o = 0; o < bytes; o += 64) gcoll_shm_take_line((const char *)dst + o);
}

/* 1 + the CPU the caller runs on, 0 if not known. */
int gcoll_shm_cpu(void);

/* Store a flag of one's own, publishing the plain stores before it, and
 * wake whoever sleeps on it ("Waiting" above for the two fences). */
static inline void gcoll_shm_publish(const gcoll_shm_t *shm, gcoll_shm_line_t *line,
                                     uint64_t value)
{
    if (shm->shares_cpus) atomic_store_explicit(&line->cpu, gcoll_shm_cpu(), memory_order_relaxed);
    if (shm->light_fence) {
        atomic_store_explicit(&line->flag, value, memory_order_release);
        atomic_signal_fence(memory_order_seq_cst);   /* the sleeper's membarrier does the rest */
        if (atomic_load_explicit(&line->sleepers, memory_order_relaxed)) gcoll_shm_wake(line);
        return;
    }
    atomic_store_explicit(&line->flag, value, memory_order_seq_cst);   /* before the load below */
    if (atomic_load_explicit(&line->sleepers, memory_order_seq_cst)) gcoll_shm_wake(line);
}

/* Signal the next step: publish what this rank wrote in the phase that ends. */
static inline void gcoll_shm_signal(gcoll_shm_t *shm)
{
    uint64_t t = ++shm->step;
    gcoll_shm_publish(shm, &shm->ctrl[shm->rank].line[t & 1], t);
}

/* Whether every other rank has signalled the step this rank signalled last
 * (one acquire load per peer; never waits). */
static inline int gcoll_shm_all_arrived(const gcoll_shm_t *shm)
{
    uint64_t t = shm->step;
    for (int j = 0; j < shm->size; j++) {
        if (j == shm->rank) continue;
        if (atomic_load_explicit(&shm->ctrl[j].line[t & 1].flag, memory_order_acquire) < t)
            return 0;
    }
    return 1;
}

/* Write parity of the current phase, and the parity it reads. */
static inline int gcoll_shm_wpar(const gcoll_shm_t *shm) { return (int)((shm->step + 1) & 1); }
static inline int gcoll_shm_rpar(const gcoll_shm_t *shm) { return (int)(shm->step & 1); }

/* Area of rank j for parity p: where the op in progress puts the data of
 * the phase that writes parity p now (step + 1) or wrote it last (step). */
static inline unsigned char *gcoll_shm_area(const gcoll_shm_t *shm, int j, int p)
{
    unsigned char *w = shm->data + (size_t)j * shm->region + (size_t)p * shm->window;
    if (shm->place.places <= 1) return w;
    uint64_t g = (int)((shm->step + 1) & 1) == p ? shm->step + 1 : shm->step;
    return w + (size_t)((g >> 1) % shm->place.places) * shm->place.unit;
}

static inline unsigned char *gcoll_shm_inline(const gcoll_shm_t *shm, int j, int p)
{
    return shm->ctrl[j].line[p].data;
}

static inline gcoll_shm_ring_t *gcoll_shm_ring(const gcoll_shm_t *shm, int j)
{
    return (gcoll_shm_ring_t *)(void *)(shm->data + (size_t)j * shm->region + shm->ring_off);
}

/* The line a ring wait watches on rank j, and the value it waits for. */
gcoll_shm_line_t *gcoll_shm_ring_line(const gcoll_shm_t *shm, const gcoll_shm_ring_wait_t *w,
                                      int j, uint64_t *want);

/* Whether rank j keeps ring wait w waiting (one acquire load). */
int gcoll_shm_ring_late(const gcoll_shm_t *shm, const gcoll_shm_ring_wait_t *w, int j);

/* Whether no rank keeps ring wait w waiting. */
int gcoll_shm_ring_ready(const gcoll_shm_t *shm, const gcoll_shm_ring_wait_t *w);

/* out = in[0] op ... op in[n-1] in rank order (shm_coll.c); scratch: one
 * fold block, used when out aliases an input past the second. */
void gcoll_shm_fold_inputs(const gcoll_shm_t *shm, void *out, const void *const *in, int n,
                           size_t count, gcoll_dtype_t dtype, gcoll_op_t op, void *scratch);

/* memcpy, or (nt) streaming stores of whole lines (from
 * GCOLL_SHM_COPY_NT_MIN bytes: below, memcpy anyway); gcoll_shm_copy's
 * callers fence (sfence) before they publish what it wrote (shm_coll.c). */
#define GCOLL_SHM_COPY_NT_MIN 256u
_Static_assert((1u << GCOLL_SHM_RING_WAY_CLS0) >= GCOLL_SHM_COPY_NT_MIN &&
               (1u << (GCOLL_SHM_RING_WAY_CLS0 + GCOLL_SHM_RING_WAY_CLASSES - 1)) ==
                   GCOLL_SHM_RING_SLOT, "the ring's way classes: streamed copies to its largest slot");
void gcoll_shm_copy(void *dst, const void *src, size_t bytes, int nt);
/* That fence, after streaming stores (nt); nothing otherwise. */
void gcoll_shm_copy_done(int nt);

/* The way of op o into o->stream: the user's (GCOLL_SHM_STREAM), the one
 * this rank has timed faster, or a reduce's non-root the root's; at the
 * op's end, learn from its time. */
void gcoll_shm_way_pick(gcoll_shm_t *shm, gcoll_shm_op_t *o);
/* What a copy of `bytes` begun at t0 (gcoll_clock_now) cost, ns per byte:
 * what the adaptive choices learn from. */
static inline float gcoll_shm_ns_per_byte(double t0, size_t bytes)
{
    return (float)((gcoll_clock_now() - t0) * 1e9 / (double)bytes);
}
void gcoll_shm_way_learn(gcoll_shm_t *shm, const gcoll_shm_op_t *o);

/* The ring forms (shm_ring.c), for bcasts of at most GCOLL_SHM_RING_SLOT
 * bytes and small reduces: starting one; running it (never blocks). */
void gcoll_shm_ring_start(gcoll_shm_t *shm, gcoll_shm_op_t *o);
void gcoll_shm_ring_progress(gcoll_shm_t *shm, gcoll_shm_op_t *o, int *done);

#endif
