/* SPDX-License-Identifier: BSD-3-Clause */
/* Choosing between two ways of doing the same work by timing both while
 * the job runs, per size class (log2 of a call's bytes).  The shared-memory
 * executor has two such choices (shm_coll.c): how a rank writes what its
 * peers read (through the cache or streamed past it), and a large
 * reduce's form (single copy or copying pipeline).  Which way is faster
 * depends on where the ranks run relative to each other, and on a guest
 * on the moment, so neither can be fixed at build or calibration time.
 *
 * The schedule (shm_adapt.c): the way in use is timed on the calls the
 * caller times (from the class's second; below 64 KiB one in four once
 * it has beaten a try, gcoll_shm_adapt_timed) into a running mean; the
 * other way is tried on the 16th call of the class (the 4th from 16 MiB),
 * and then 32, 64, ... calls after, twice as far apart each time it
 * loses, down to one try in 256 calls (below 64 KiB, one in as many calls
 * as carry 16 MiB); it wins where the mean of
 * its timed calls is 10% faster.  A try lasts two calls from 64 KiB, more
 * below (about 64 KiB of payload, at most 9 calls), the first untimed.
 *
 * Pure: the caller times its calls, and decides what a "call" is and
 * whose choice it is (a rank's own writes; a reduce's root for its
 * non-roots' writes and for the reduce's form, which reach the others
 * through the segment). */
#ifndef GCOLL_SHM_ADAPT_H
#define GCOLL_SHM_ADAPT_H

#include <stddef.h>
#include <stdint.h>

/* size classes: log2 of a call's bytes */
#define GCOLL_SHM_ADAPT_CLASSES 48

typedef struct {
    uint32_t calls;       /* calls of this class so far */
    uint32_t next;        /* the call that tries the other way */
    uint32_t every;       /* calls between such tries */
    uint8_t  stream;      /* the way in use (0 or 1; for the write ways 1 = streaming stores) */
    uint8_t  tried;       /* calls of the try in progress (the first is not timed) */
    uint8_t  cls;         /* the size class (its first call's) */
    float    trysum;      /* ns per byte of the try's timed calls so far */
    float    cost[2];     /* running mean of ns per byte, by way; 0 = unknown */
} gcoll_shm_adapt_t;

/* The size class of a call of this many bytes. */
int gcoll_shm_adapt_class(size_t bytes);

/* The calls a try of class cls lasts, its untimed first included (2 from
 * 64 KiB, up to 9 below). */
uint32_t gcoll_shm_adapt_try_calls(int cls);

/* Count a call of size class cls (the first starts the schedule). */
void gcoll_shm_adapt_count(gcoll_shm_adapt_t *a, int cls);

/* Whether the counted call is timed (and learnt from): every call of a
 * try; of the way in use, every call from 64 KiB, and below it every call
 * until a try has lost since the class began or switched, then one in 4. */
int gcoll_shm_adapt_timed(const gcoll_shm_adapt_t *a);

/* Whether the class's call number `call` tries the way not in use. */
int gcoll_shm_adapt_due(const gcoll_shm_adapt_t *a, uint32_t call);

/* The way a counted call takes: the one in use, or the other on a try. */
static inline int gcoll_shm_adapt_way(const gcoll_shm_adapt_t *a)
{
    return a->stream ^ gcoll_shm_adapt_due(a, a->calls);
}

/* The running mean of a way's ns per byte (0: none yet), with one more
 * sample: the fold every timed call of the way in use gets. */
static inline void gcoll_shm_adapt_fold(float *mean, float ns)
{
    *mean = *mean > 0 ? *mean + (ns - *mean) * 0.25f : ns;
}

/* A call that went `way` took ns_per_byte: learn from it. */
void gcoll_shm_adapt_record(gcoll_shm_adapt_t *a, int way, float ns_per_byte);

#endif
