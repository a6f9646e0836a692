/* SPDX-License-Identifier: BSD-3-Clause */
/* The adaptive choice between two ways (shm_adapt.h). */
#include "shm/shm_adapt.h"

#define ADAPT_PROBE     16     /* first try at the 16th call ... */
#define ADAPT_PROBE_MAX 256    /* ... then twice as far each time it loses */
/* ... but the first at the 4th from 16 MiB (the next ones as above).  A
 * benchmark, or an application that calls a large collective a few dozen
 * times, ran its first 15 calls the first way: on the Zen 4 guest's busy
 * state the 32 MiB bcast took 13.6 ms through the cache against 2.0
 * streamed, and the peer harness's timed blocks ended before call 16
 * (2 ranks, 4-5 alternated launches: allreduce 16-32 MiB 8.3-16.6 ms
 * before, 2.2-4.7 after; allgather 9.0-19.5 against 3.7-8.1;
 * docs/PERFORMANCE.md).  The reduce's form (single copy or copying) takes
 * the same schedule; its 16/32 MiB reduces took 4369/9076 us against
 * 4016/9159 before (busy state, within 9%).  Calls this large take a
 * millisecond or more, so the noise that a running mean of small calls
 * follows (below) does not decide their tries.  Not from 1 MiB: a bcast
 * root, which leaves before its readers copy the last chunk, times a
 * streamed copy-in too cheaply where a call has few chunks, and an early
 * try left 1-4 MiB bcasts streamed in the slow state, 1.1-1.4x slower. */
#define ADAPT_PROBE_LARGE     4
#define ADAPT_PROBE_LARGE_CLS 24   /* 16 MiB */
#define ADAPT_SWITCH    0.9f   /* the other way must be 10% faster */
/* Below 64 KiB (ADAPT_SMALL_CLS) a call is too short to judge a way by
 * one sample or to be tried as often as a large one, both measured on an
 * Intel Xeon guest (2026-12-07, 2 ranks, 8 KiB allreduce, the one-step form
 * written through the cache, 1.67-1.70 us per call, or streamed, 1.82-1.90):
 *  - one call of 8 KiB took 1.2-1.9 us between its 10th and 90th
 *    percentiles (the wait for the peer's late start is part of every
 *    call), so a one-call try, judged within 10%, was a coin toss; a try
 *    now carries about 2^ADAPT_SMALL_CLS bytes in its timed calls (at most
 *    ADAPT_TRY_MAX calls, the untimed first included: 9 at 8 KiB), judged
 *    on their mean;
 *  - a try of the slower way cost more than its calls' share (its calls
 *    took 2.4-2.5 us, and the default ran 1.81-1.96 us against 1.72-1.78
 *    with no tries at all, 4 alternated launches), so the widest spacing
 *    between tries carries about ADAPT_SPACING_BYTES of the class's
 *    payload (2048 calls at 8 KiB: a few milliseconds, as one try in 256
 *    calls is from 64 KiB). */
#define ADAPT_SMALL_CLS     16            /* 64 KiB */
#define ADAPT_TRY_MAX       9
#define ADAPT_SPACING_BYTES (16u << 20)   /* 256 calls of 64 KiB */

uint32_t gcoll_shm_adapt_try_calls(int cls)
{
    uint32_t timed = cls < ADAPT_SMALL_CLS ? 1u << (ADAPT_SMALL_CLS - cls) : 1;
    return timed + 1 < ADAPT_TRY_MAX ? timed + 1 : ADAPT_TRY_MAX;
}

/* The widest spacing of tries in class cls, in calls. */
static uint32_t adapt_spacing_max(int cls)
{
    return cls < ADAPT_SMALL_CLS ? ADAPT_SPACING_BYTES >> cls : ADAPT_PROBE_MAX;
}

/* Below ADAPT_SMALL_CLS the way in use is timed on one call in
 * ADAPT_SAMPLE: the two clock reads of a timed call (18 ns each on the
 * Intel Xeon guest) and its learning took 4-5% of an 8 KiB allreduce (2
 * ranks, peer harness, 4 alternated launches: 1.61-1.62 us with the ways
 * chosen as the job runs, never switching or not, against 1.53-1.55 with
 * GCOLL_SHM_STREAM=off).  Only once a try has lost since the class began
 * or last switched: the try is judged against the way in use's running
 * mean, and the class's first calls run slow (first touches), so a mean of
 * calls 4, 8 and 12 alone made the first try win (16 KiB went streamed in
 * every launch, 2.71-2.78 us against 2.44-2.61). */
#define ADAPT_SAMPLE 4

int gcoll_shm_adapt_timed(const gcoll_shm_adapt_t *a)
{
    return gcoll_shm_adapt_due(a, a->calls) || a->cls >= ADAPT_SMALL_CLS ||
           a->every <= ADAPT_PROBE || a->calls % ADAPT_SAMPLE == 0;
}

int gcoll_shm_adapt_class(size_t bytes)
{
    int c = 0;
    while (bytes >>= 1) c++;
    return c < GCOLL_SHM_ADAPT_CLASSES ? c : GCOLL_SHM_ADAPT_CLASSES - 1;
}

void gcoll_shm_adapt_count(gcoll_shm_adapt_t *a, int cls)
{
    if (!a->every) {
        a->every = ADAPT_PROBE;
        a->next  = cls >= ADAPT_PROBE_LARGE_CLS ? ADAPT_PROBE_LARGE : ADAPT_PROBE;
        a->cls   = (uint8_t)cls;
    }
    a->calls++;
}

/* From the 16th (4th) call, until a try has been learnt (>=, not ==: a
 * try that did not learn, because the op went zero-copy after it was
 * picked, is made again by the next call instead of ending the tries of
 * this class for good). */
int gcoll_shm_adapt_due(const gcoll_shm_adapt_t *a, uint32_t call)
{
    return call >= (a->every ? a->next : ADAPT_PROBE);
}

/* The way in use: fold the time into its running mean, from the class's
 * second call: the first touches its buffers and the segment's places for
 * the first time (page faults), and with a try at the 4th call it would
 * weigh half the mean the try is judged against (2 ranks, slow state:
 * allgathers of 16-32 MiB blocks went streamed, 19-24% slower).
 *
 * The other way: a try lasts gcoll_shm_adapt_try_calls calls (the caller
 * keeps trying while calls >= next), the first untimed: it pays for the
 * change (the reduce's other form runs with its buffers out of cache, 2-4x
 * its steady time on the Zen 4 guest; the other write way finds the lines
 * where the last way left them), which a running mean would carry through
 * many tries, and the mean of the others is the way's cost. Then switch
 * where it was 10% faster (and try again soon), else try half as often, down
 * to adapt_spacing_max. The write ways took a one-call try until 2026-12-06:
 * in the Zen 4 guest's slow state it left classes on the slower way (2
 * ranks, peer harness, 6-8 alternated launches: allreduce 128 KiB 15.5-22
 * against 7.8-9.6 us with the two-call try, 8 KiB 0.84 against 0.68; bcast,
 * allgather and reduce_scatter level or better).
 *
 * Not kept (2026-12-06): trying the other way at once where the running
 * mean of the way in use grew 10% past the other way's last time.  It
 * made things slower: in the Zen 4 guest's busy state the 128 KiB
 * allreduce took 16.8-18.6 us against 9.4-10.8, in its slow state the
 * 128 KiB bcast 6.3-6.7 against 3.8 (docs/PERFORMANCE.md); likely a few
 * slow calls set off tries, and a try's one timed call decides. */
void gcoll_shm_adapt_record(gcoll_shm_adapt_t *a, int way, float ns)
{
    float *c = &a->cost[way];
    if (way == a->stream) {
        if (a->calls <= 1) return;   /* a class's first call is cold */
        gcoll_shm_adapt_fold(c, ns);
        a->tried = 0;
        return;
    }
    if (++a->tried < 2) return;   /* the untimed first call of the try */
    a->trysum += ns;
    uint32_t len = gcoll_shm_adapt_try_calls(a->cls);
    if (a->tried < len) return;
    *c = a->trysum / (float)(len - 1);
    a->tried = 0;
    a->trysum = 0;
    if (*c < ADAPT_SWITCH * a->cost[a->stream]) {   /* switch; watch closely again */
        a->stream = (uint8_t)way;
        a->every  = ADAPT_PROBE;
    } else if (a->every < adapt_spacing_max(a->cls)) {
        a->every *= 2;
    }
    a->next = a->calls + a->every;
}
