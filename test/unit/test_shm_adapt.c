/* SPDX-License-Identifier: BSD-3-Clause */
/* The adaptive choice between two ways (libgcoll/shm/shm_adapt.h), fed
 * made-up times: where the tries fall, when the way switches, that a try's
 * first call is not timed, that a change of the machine is caught at the
 * next scheduled try, that two level ways are not tried more than the
 * schedule says, that classes from 16 MiB try first at their 4th call, and
 * that a small class's try is judged on the mean of its timed calls, and
 * which calls are timed.  One
 * line per failure; exit 1 on any. */
#include <stdio.h>
#include "shm/shm_adapt.h"

static int n_checks, n_fail;

#define CHECK(cond, ...) \
    do { \
        n_checks++; \
        if (!(cond)) { \
            n_fail++; \
            printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            printf(__VA_ARGS__); \
            printf("\n"); \
        } \
    } while (0)

/* ns per byte of call `call` (from 1) going `way` */
typedef float (*cost_fn)(int way, uint32_t call);

/* The size class the calls below count in (16: 64 KiB, two-call tries;
 * 13: 8 KiB, nine-call tries; 24: 16 MiB). */
static int cls = 16;

/* Calls first..last as a caller makes them: count, take the way, time it
 * where gcoll_shm_adapt_timed says so.
 * The calls that did not go the way in use at their start (tries) are
 * written to tries[] (at most max); returns how many there were. */
static int run(gcoll_shm_adapt_t *a, uint32_t first, uint32_t last, cost_fn cost,
               uint32_t *tries, int max)
{
    int n = 0;
    for (uint32_t call = first; call <= last; call++) {
        gcoll_shm_adapt_count(a, cls);
        int way = gcoll_shm_adapt_way(a);
        if (way != a->stream && n < max) tries[n] = call;
        n += way != a->stream;
        if (gcoll_shm_adapt_timed(a)) gcoll_shm_adapt_record(a, way, cost(way, call));
    }
    return n;
}

static float slower_other(int way, uint32_t call) { (void)call; return way ? 2.0f : 1.0f; }
static float faster_other(int way, uint32_t call) { (void)call; return way ? 0.8f : 1.0f; }
static float nearly_level(int way, uint32_t call) { (void)call; return way ? 0.95f : 1.0f; }

/* The try's first call pays for the change (100x); its second is fast. */
static float costly_change(int way, uint32_t call)
{
    if (!way) return 1.0f;
    return call == 16 ? 100.0f : 0.5f;
}

/* Way 0 is faster until call 200, then 5x slower (the machine changed). */
static float state_change(int way, uint32_t call)
{
    if (way) return 2.0f;
    return call <= 200 ? 1.0f : 5.0f;
}

/* Level ways, each call +-5% (a fixed pseudo-random sequence). */
static float noisy_level(int way, uint32_t call)
{
    uint32_t h = call * 2654435761u ^ (uint32_t)way * 40503u;
    float jitter = (float)(h % 1001u) / 1000.0f * 0.1f - 0.05f;   /* -5% .. +5% */
    return (way ? 1.02f : 1.0f) * (1.0f + jitter);
}

static void test_schedule(void)
{
    gcoll_shm_adapt_t a = { 0 };
    uint32_t t[32];
    int n = run(&a, 1, 800, slower_other, t, 32);
    /* pairs: 16-17, then 32, 64, 128, 256, 256 calls after each try's end */
    static const uint32_t want[] = { 16, 17, 49, 50, 114, 115, 243, 244, 500, 501, 757, 758 };
    int m = (int)(sizeof(want) / sizeof(want[0]));
    CHECK(n == m, "%d tries of the slower way in 800 calls, want %d", n, m);
    for (int i = 0; i < n && i < m; i++)
        CHECK(t[i] == want[i], "try %d at call %u, want %u", i, t[i], want[i]);
    CHECK(a.stream == 0, "way in use %d after losing tries, want 0", a.stream);
}

static void test_switch(void)
{
    gcoll_shm_adapt_t a = { 0 };
    uint32_t t[8];
    run(&a, 1, 17, faster_other, t, 8);
    CHECK(a.stream == 1, "way %d after a try 20%% faster, want 1", a.stream);
    int n = run(&a, 18, 40, faster_other, t, 8);
    CHECK(n == 2 && t[0] == 33, "after switching, %d tries from call %u, want 2 from 33 "
          "(16 calls after the switch)", n, n ? t[0] : 0);
    CHECK(a.stream == 1, "way %d after the old way lost its try, want 1", a.stream);

    gcoll_shm_adapt_t b = { 0 };
    run(&b, 1, 17, nearly_level, t, 8);
    CHECK(b.stream == 0, "way %d after a try only 5%% faster, want 0 (10%% needed)", b.stream);
}

static void test_untimed_first_call(void)
{
    gcoll_shm_adapt_t a = { 0 };
    uint32_t t[8];
    run(&a, 1, 17, costly_change, t, 8);
    CHECK(a.stream == 1, "way %d: the try's second call was 2x faster, its first (the change) "
          "100x slower; want 1 (the first is not timed)", a.stream);
}

static void test_state_change(void)
{
    gcoll_shm_adapt_t a = { 0 };
    uint32_t t[16];
    run(&a, 1, 200, state_change, t, 16);
    CHECK(a.stream == 0 && a.next > 240, "before the change: way %d, next try %u (want 0, "
          "past 240)", a.stream, a.next);
    int n = run(&a, 201, 250, state_change, t, 16);
    CHECK(n >= 1 && t[0] == 243, "after way 0 grew 5x slower at call 201, the first try at "
          "call %u, want 243 (the schedule's)", n ? t[0] : 0);
    CHECK(a.stream == 1, "way %d by call 250, want 1", a.stream);
}

static void test_level_ways(void)
{
    gcoll_shm_adapt_t a = { 0 };
    uint32_t t[64];
    int n = run(&a, 1, 4000, noisy_level, t, 64);
    /* 16-17, then 32, 64, 128 and every 256 calls: 36 try calls in 4000 */
    CHECK(n == 36, "%d try calls in 4000 between ways level within 2%% (+-5%% noise), want "
          "36", n);
}

/* A class's first call is cold (page faults): 10x here.  It must not
 * enter the running mean, or the try at the 4th call (16 MiB) would judge
 * a way 1.5x slower against calls 1-3 and take it. */
static float cold_first(int way, uint32_t call)
{
    if (way) return 1.5f;
    return call == 1 ? 10.0f : 1.0f;
}

static void test_cold_first_call(void)
{
    gcoll_shm_adapt_t a = { 0 };
    uint32_t t[8];
    cls = 24;
    int n = run(&a, 1, 10, cold_first, t, 8);
    CHECK(n == 2 && t[0] == 4, "16 MiB: %d tries by call 10, first at %u, want 2 at 4-5", n,
          n ? t[0] : 0);
    CHECK(a.stream == 0, "16 MiB: switched to a way 1.5x slower after a cold first call");
    CHECK(a.cost[0] > 0.99f && a.cost[0] < 1.01f, "16 MiB: running mean %.3f, want 1.0 (the "
          "cold call left out)", a.cost[0]);
    cls = 16;
}

/* From 16 MiB the first try comes at the 4th call, then 32, 64, ... 256
 * calls after each try's end as at any size; after a switch, 16 calls.
 * Below 16 MiB (23: 8 MiB) at the 16th. */
static void test_large_classes(void)
{
    static const uint32_t want[] = { 4, 5, 37, 38, 102, 103, 231, 232, 488, 489, 745, 746 };
    int m = (int)(sizeof(want) / sizeof(want[0]));
    gcoll_shm_adapt_t a = { 0 };
    uint32_t t[32];
    cls = 24;
    int n = run(&a, 1, 800, slower_other, t, 32);
    CHECK(n == m, "16 MiB: %d tries of the slower way in 800 calls, want %d", n, m);
    for (int i = 0; i < n && i < m; i++)
        CHECK(t[i] == want[i], "16 MiB: try %d at call %u, want %u", i, t[i], want[i]);
    gcoll_shm_adapt_t b = { 0 };
    run(&b, 1, 5, faster_other, t, 8);
    CHECK(b.stream == 1, "16 MiB: the faster way not taken after the try at 4-5");
    n = run(&b, 6, 30, faster_other, t, 8);
    CHECK(n == 2 && t[0] == 21 && t[1] == 22, "16 MiB: after the switch %d tries, first at %u, "
          "want 2 at 21-22", n, n ? t[0] : 0);
    gcoll_shm_adapt_t c = { 0 };
    cls = 23;
    n = run(&c, 1, 16, slower_other, t, 8);
    CHECK(n == 1 && t[0] == 16, "8 MiB: %d tries by call 16, first at %u, want 1 at 16", n,
          n ? t[0] : 0);
    cls = 16;
}

/* 8 KiB: one lucky call of the other way (2x faster than the way in use)
 * among calls that are 1.2x slower; a try's mean of 8 timed calls keeps
 * the way in use, where one timed call would have switched. */
static float lucky_call(int way, uint32_t call)
{
    if (!way) return 1.0f;
    return call == 17 ? 0.5f : 1.2f;
}

static void test_long_try(void)
{
    uint32_t t[80];
    cls = 13;
    gcoll_shm_adapt_t a = { 0 };
    int n = run(&a, 1, 24, lucky_call, t, 32);
    CHECK(a.stream == 0, "8 KiB: switched on one lucky call of a way 1.2x slower");
    n += run(&a, 25, 60, lucky_call, t + n, 80 - n);
    CHECK(n == 14 && t[0] == 16 && t[8] == 24 && t[9] == 56,
          "8 KiB: %d try calls by call 60, at %u..%u then %u; want 14: 16-24, then 56-60", n,
          t[0], n > 8 ? t[8] : 0, n > 9 ? t[9] : 0);
    CHECK(a.cost[1] > 1.1f && a.cost[1] < 1.2f, "8 KiB: the try's cost %.3f, want the mean "
          "of its 8 timed calls (1.11)", a.cost[1]);

    gcoll_shm_adapt_t b = { 0 };
    run(&b, 1, 23, faster_other, t, 32);
    CHECK(b.stream == 0, "8 KiB: switched before the try's 9th call");
    run(&b, 24, 24, faster_other, t, 32);
    CHECK(b.stream == 1, "8 KiB: the way 20%% faster not taken after its 9-call try");

    /* 8 KiB: a losing way's tries spread to one in 2048 calls (16 MiB of
     * payload), not one in 256 */
    gcoll_shm_adapt_t d = { 0 };
    n = run(&d, 1, 6000, slower_other, t, 80);
    static const uint32_t starts[] = { 16, 56, 128, 264, 528, 1048, 2080, 4136 };
    CHECK(n == 72, "8 KiB: %d try calls of a slower way in 6000 calls, want 72 (8 tries)", n);
    for (int i = 0; i < 8 && 9 * i < n; i++)
        CHECK(t[9 * i] == starts[i], "8 KiB: try %d starts at call %u, want %u", i, t[9 * i],
              starts[i]);

    cls = 10;   /* 1 KiB: 64 timed calls by the payload, capped at 9 calls */
    gcoll_shm_adapt_t c = { 0 };
    n = run(&c, 1, 30, slower_other, t, 32);
    CHECK(n == 9 && t[8] == 24, "1 KiB: a try of %d calls ending at %u, want 9 ending at 24",
          n, n ? t[n - 1] : 0);
    cls = 16;
}

/* Below 64 KiB the way in use is timed on every call until a try has
 * lost, then on one in 4; a try on every call; from 64 KiB every call. */
static void test_sampling(void)
{
    static const int classes[] = { 13, 16 };
    static const int want_after[] = { 7, 29 };   /* of the way in use among calls 25-55 */
    for (int k = 0; k < 2; k++) {
        gcoll_shm_adapt_t a = { 0 };
        int before = 0, after = 0, try_timed = 0, try_calls = 0;
        for (uint32_t call = 1; call <= 55; call++) {
            gcoll_shm_adapt_count(&a, classes[k]);
            int way = gcoll_shm_adapt_way(&a), t = gcoll_shm_adapt_timed(&a);
            if (way != a.stream) try_calls++, try_timed += t;
            else if (call < 16) before += t;
            else if (call >= 25) after += t;
            if (t) gcoll_shm_adapt_record(&a, way, way ? 2.0f : 1.0f);
        }
        CHECK(before == 15, "class %d: %d of the calls 1-15 timed, want all", classes[k], before);
        CHECK(after == want_after[k], "class %d: %d of the calls 25-55 timed after a lost try, "
              "want %d", classes[k], after, want_after[k]);
        CHECK(try_calls > 0 && try_timed == try_calls, "class %d: %d of %d try calls timed",
              classes[k], try_timed, try_calls);
    }
}

int main(void)
{
    test_schedule();
    test_switch();
    test_untimed_first_call();
    test_state_change();
    test_level_ways();
    test_large_classes();
    test_cold_first_call();
    test_long_try();
    test_sampling();
    printf("test_shm_adapt: %d checks, %d failed\n", n_checks, n_fail);
    return n_fail != 0;
}
