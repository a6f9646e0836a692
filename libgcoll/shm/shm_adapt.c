/* SPDX-License-Identifier: BSD-3-Clause */
/* The adaptive choice between two ways (shm_adapt.h). */
#include "shm/shm_adapt.h"

#define ADAPT_PROBE     16     /* first try at the 16th call ... */
#define ADAPT_PROBE_MAX 256    /* ... then twice as far each time it loses */
#define ADAPT_SWITCH    0.9f   /* the other way must be 10% faster */

int gcoll_shm_adapt_class(size_t bytes)
{
    int c = 0;
    while (bytes >>= 1) c++;
    return c < GCOLL_SHM_ADAPT_CLASSES ? c : GCOLL_SHM_ADAPT_CLASSES - 1;
}

void gcoll_shm_adapt_count(gcoll_shm_adapt_t *a)
{
    if (!a->every) a->next = a->every = ADAPT_PROBE;
    a->calls++;
}

/* From the 16th call, until a try has been learnt (>=, not ==: a try that
 * did not learn, because the op went zero-copy after it was picked, is
 * made again by the next call instead of ending the tries of this class
 * for good). */
int gcoll_shm_adapt_due(const gcoll_shm_adapt_t *a, uint32_t call)
{
    return call >= (a->every ? a->next : ADAPT_PROBE);
}

/* The way in use: fold the time into its running mean.
 *
 * The other way: a try lasts two calls (the caller keeps trying while
 * calls >= next), the first untimed: it pays for the change (the reduce's
 * other form runs with its buffers out of cache, 2-4x its steady time on
 * the Zen 4 guest; the other write way finds the lines where the last way
 * left them), which a running mean would carry through many tries, and the
 * second's time is the way's cost.  Then switch where it was 10% faster
 * (and try again soon), else try half as often.  The write ways took a
 * one-call try until 2026-12-06: in the Zen 4 guest's slow state it left
 * classes on the slower way (2 ranks, peer harness, 6-8 alternated
 * launches: allreduce 128 KiB 15.5-22 against 7.8-9.6 us with the
 * two-call try, 8 KiB 0.84 against 0.68; bcast, allgather and
 * reduce_scatter level or better).
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
        *c = *c > 0 ? *c + (ns - *c) * 0.25f : ns;
        a->tried = 0;
        return;
    }
    if (++a->tried < 2) return;   /* the untimed first call of the try */
    a->tried = 0;
    *c = ns;
    if (*c < ADAPT_SWITCH * a->cost[a->stream]) {   /* switch; watch closely again */
        a->stream = (uint8_t)way;
        a->every  = ADAPT_PROBE;
    } else if (a->every < ADAPT_PROBE_MAX) {
        a->every *= 2;
    }
    a->next = a->calls + a->every;
}
