/* SPDX-License-Identifier: BSD-3-Clause */
/* Inside of the shared-memory executor: segment layout, the step protocol
 * and the hot wait loop, shared by shm_segment.c and shm_coll.c.
 *
 * Segment layout (one POSIX shm object per node communicator of P ranks):
 *
 *   offset 0        ctrl[P]: per rank, two 128-byte lines, one per parity;
 *                   each line holds the rank's step flag and 56 bytes of
 *                   inline payload (so a tiny message travels in the same
 *                   cache line as the flag that announces it: one miss)
 *   page aligned    region[P]: per rank, two areas (one per parity) of
 *                   (P + 1) * slice bytes:
 *                     slot[j], j < P   slice bytes each: this rank's input
 *                                      for the slice that rank j reduces
 *                     res              slice bytes: the slice this rank
 *                                      reduced, for the others to copy out
 *                   bcast and allgather use an area as one flat buffer.
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
 * are any.  Flag store and sleepers load (signaller) and sleepers increment
 * and flag load (waiter) are sequentially consistent, so either the waiter
 * sees the new flag or the signaller sees the sleeper; a flag that moved
 * between the waiter's load and its futex call fails the kernel's compare,
 * so no wake-up is lost.
 * A late peer costs a sleeper no CPU: with ranks sharing CPUs a yielding
 * waiter may be handed the CPU straight back, and alone on its CPU it burns
 * a core that the application's other threads could use.
 */
#ifndef GCOLL_SHM_INT_H
#define GCOLL_SHM_INT_H

#include <stdatomic.h>
#include <stdint.h>
#include <stddef.h>
#include "shm/shm.h"

#define GCOLL_SHM_LINE    128  /* two cache lines: Intel's adjacent-line
                                * prefetcher pairs them, so padding to one
                                * 64-byte line would still false-share */
#define GCOLL_SHM_INLINE  56   /* payload bytes beside the flag in its line */

/* Bytes of one area (per rank, per parity) before division into P + 1
 * slices.  768 KiB gives 256 KiB slices at 2 ranks: the whole shared
 * working set (2 ranks x 2 parities x 3 slices = 3 MiB) stays in L2+L3, and
 * a 64 MiB allreduce needs 130 steps.  See the top of shm_coll.c. */
#define GCOLL_SHM_AREA    (768u << 10)
#define GCOLL_SHM_MIN_SLICE 4096u

_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2,
               "the step flags must be lock-free (address-free) to work across processes");

typedef struct {
    _Atomic uint64_t flag;                     /* last step the owner signalled */
    unsigned char    data[GCOLL_SHM_INLINE];   /* inline payload of this parity */
    _Atomic uint32_t sleepers;                 /* waiters asleep on flag (futex) */
    unsigned char    pad[GCOLL_SHM_LINE - 68];
} gcoll_shm_line_t;

typedef struct {
    gcoll_shm_line_t line[2];                  /* by step parity */
} gcoll_shm_ctrl_t;

_Static_assert(sizeof(gcoll_shm_line_t) == GCOLL_SHM_LINE, "line layout");

/* How this rank writes the slice it reduced, per size class (log2 of the
 * call's bytes): through the cache or streamed past it (shm_coll.c,
 * "Writing the reduced slice").  Rank-local: readers find the slice where
 * they always do, whichever way it was written. */
#define GCOLL_SHM_ADAPT_CLASSES 48

typedef struct {
    uint32_t calls;       /* large allreduces of this class so far */
    uint32_t next;        /* the call that tries the other way */
    uint32_t every;       /* calls between such tries */
    uint8_t  stream;      /* the way in use: 1 = streaming stores */
    float    cost[2];     /* running mean of ns per byte, by way; 0 = unknown */
} gcoll_shm_adapt_t;

struct gcoll_shm {
    const gcoll_config_t *cfg;     /* the communicator's (it outlives us) */
    int               rank, size;
    int               broken;      /* a wait timed out: counters disagree */
    int               spin_limit;  /* pause iterations before sleeping */
    uint64_t          step;        /* last step this rank signalled */
    int               held;        /* ... and left without seeing all peers
                                    * signal it (shm_coll.c): the next op
                                    * waits for that before its first phase */
    size_t            slice;       /* bytes of one slice (multiple of 64) */
    size_t            area;        /* (size + 1) * slice */
    size_t            region;      /* bytes per rank: 2 areas, page aligned */
    void             *base;        /* the mapping */
    size_t            map_bytes;
    gcoll_shm_ctrl_t *ctrl;        /* [size], at base */
    unsigned char    *data;        /* region of rank 0 */
    gcoll_shm_adapt_t adapt[GCOLL_SHM_ADAPT_CLASSES];
    struct gcoll_shm_zc *zc;       /* zero-copy state (shm_zcopy.c), NULL: copy only */
};

/* Slow path of a wait: sleep, watch the clock, report the missing ranks. */
gcoll_status_t gcoll_shm_wait_slow(gcoll_shm_t *shm, uint64_t step);

/* Wake the ranks asleep on a line's flag. */
void gcoll_shm_wake(gcoll_shm_line_t *line);

static inline void gcoll_shm_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

/* Signal the next step: publish what this rank wrote in the phase that ends. */
static inline void gcoll_shm_signal(gcoll_shm_t *shm)
{
    uint64_t t = ++shm->step;
    gcoll_shm_line_t *mine = &shm->ctrl[shm->rank].line[t & 1];
    atomic_store_explicit(&mine->flag, t, memory_order_seq_cst);   /* before the load below */
    if (atomic_load_explicit(&mine->sleepers, memory_order_seq_cst)) gcoll_shm_wake(mine);
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

/* Area of rank j for parity p, and its parts. */
static inline unsigned char *gcoll_shm_area(const gcoll_shm_t *shm, int j, int p)
{
    return shm->data + (size_t)j * shm->region + (size_t)p * shm->area;
}

static inline unsigned char *gcoll_shm_inline(const gcoll_shm_t *shm, int j, int p)
{
    return shm->ctrl[j].line[p].data;
}

#endif
