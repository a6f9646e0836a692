/* SPDX-License-Identifier: BSD-3-Clause */
/* Rivals tried as the job runs (core/select_online.h), with the real
 * algorithms over the real transport: a row "ring try=rdouble,reduce_bcast"
 * on ranks that are each their own node (GCOLL_NODE_SIZE=1).
 *
 * Which algorithm ran a call is read from what this rank sent
 * (gcoll_comm_get_stats): each candidate's bytes per call are first taken
 * from a communicator that forces it, and a call is identified by the
 * candidates whose bytes match on every rank.  Checked:
 *   - every call's result is MPI_Allreduce's, bit for bit (integer-valued
 *     floats), blocking calls and the nonblocking ones between them;
 *   - every call ran one candidate on all ranks (not two different ones);
 *   - the try ran every candidate, at the calls where the schedule puts it
 *     (a try that never starts, or skips a candidate, fails);
 *   - the ranks agree on the costs and the choice (gcoll_select_online_report),
 *     the choice is the cheapest by the rule (or the row's algorithm within
 *     the margin), and every call after the try ran it;
 *   - with GCOLL_TRY=0 every call runs the row's algorithm and no state exists;
 *   - more size classes than slots: the first ones get a state, the rest
 *     none, and every result is still MPI's. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gcoll.h>
#include "core/comm.h"            /* internal: the communicator's state */
#include "core/select_online.h"   /* internal: gcoll_select_online_report */
#include "base/status.h"          /* internal: gcoll_error_clear */

static int failures, rank, size;

#define CHECK(cond, ...) \
    do { \
        if (!(cond)) { failures++; fprintf(stderr, "FAIL rank %d: ", rank); \
                       fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } \
    } while (0)

enum { NMAX = 16384, NCAND = 3, MAX_CALLS = 2000, AFTER = 40 };
static const char *const cand[NCAND] = { "ring", "rdouble", "reduce_bcast" };
static const char *const row = "allreduce:*:*:*:0-inf:ring:try=rdouble,reduce_bcast";

static float *x, *y, *ref;

static gcoll_comm_t make_comm(const char *algo, const char *try_rivals)
{
    char spec[64] = "";
    if (algo) snprintf(spec, sizeof spec, "allreduce=%s", algo);
    setenv("GCOLL_ALGO", spec, 1);
    setenv("GCOLL_TUNE", row, 1);
    setenv("GCOLL_TRY", try_rivals, 1);
    gcoll_comm_t c = NULL;
    if (gcoll_comm_create(MPI_COMM_WORLD, &c) != GCOLL_SUCCESS) {
        CHECK(0, "create (GCOLL_ALGO=%s, GCOLL_TRY=%s): %s", spec, try_rivals, gcoll_last_error());
        return NULL;
    }
    return c;
}

/* One call of n floats on comm (blocking or not), its result checked; the
 * bytes it sent. */
static uint64_t one_call(gcoll_comm_t c, int n, int call, int blocking)
{
    for (int i = 0; i < n; i++) x[i] = (float)((i * 7 + rank * 13 + call * 3) % 101);
    memset(y, 0xff, (size_t)n * sizeof(float));
    gcoll_stats_t before, after;
    gcoll_comm_get_stats(c, &before);
    gcoll_status_t st;
    if (blocking) {
        st = gcoll_allreduce(x, y, (size_t)n, GCOLL_FLOAT32, GCOLL_SUM, c);
    } else {
        gcoll_request_t req;
        st = gcoll_iallreduce(x, y, (size_t)n, GCOLL_FLOAT32, GCOLL_SUM, c, &req);
        if (st == GCOLL_SUCCESS) st = gcoll_wait(&req);
    }
    gcoll_comm_get_stats(c, &after);
    CHECK(st == GCOLL_SUCCESS, "call %d: %s", call, gcoll_last_error());
    MPI_Allreduce(x, ref, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(memcmp(y, ref, (size_t)n * sizeof(float)) == 0, "%d floats, call %d (%s): result "
          "differs from MPI_Allreduce", n, call, blocking ? "blocking" : "nonblocking");
    return after.bytes_sent - before.bytes_sent;
}

/* The candidates a call that sent `sent` may have run on every rank. */
static unsigned ran_mask(const uint64_t *forced, uint64_t sent)
{
    unsigned mine = 0, all = 0;
    for (int i = 0; i < NCAND; i++)
        if (forced[i] == sent) mine |= 1u << i;
    MPI_Allreduce(&mine, &all, 1, MPI_UNSIGNED, MPI_BAND, MPI_COMM_WORLD);
    return all;
}

static int only(unsigned mask)   /* the one candidate in mask, or -1 */
{
    for (int i = 0; i < NCAND; i++)
        if (mask == 1u << i) return i;
    return -1;
}

/* Calls of n floats until the first try is over and AFTER more. */
static void test_tries(const uint64_t *forced, int n)
{
    gcoll_comm_t c = make_comm(NULL, "1");
    if (!c) return;
    size_t bytes = (size_t)n * sizeof(float);
    int ran[NCAND] = { 0 }, first_other = -1, after_bad = 0, two = 0, calls = 0, end = MAX_CALLS;
    int *run_of = malloc(MAX_CALLS * sizeof(int));
    gcoll_select_online_report_t rep = { 0 };
    for (int call = 0; call < end; call++, calls++) {
        int who = only(ran_mask(forced, one_call(c, n, call, 1)));
        run_of[call] = who;
        two += who < 0;
        if (who >= 0) ran[who]++;
        if (who > 0 && first_other < 0) first_other = call;
        if (call % 9 == 4) {   /* a nonblocking call: not counted, the same algorithm on all */
            unsigned nb = ran_mask(forced, one_call(c, n, call, 0));
            CHECK(only(nb) >= 0, "%d floats: nonblocking call after %d: no single candidate "
                  "matches what the ranks sent", n, call);
        }
        /* the try ends at the same call on every rank, so the loops end alike */
        if (end == MAX_CALLS && gcoll_select_online_report(c, GCOLL_COLL_ALLREDUCE, bytes, &rep) ==
                                    GCOLL_SUCCESS && rep.tries)
            end = call + 1 + AFTER;
    }
    gcoll_error_clear();
    CHECK(!two, "%d floats: %d calls ran no single candidate on every rank", n, two);
    gcoll_status_t st = gcoll_select_online_report(c, GCOLL_COLL_ALLREDUCE, bytes, &rep);
    CHECK(st == GCOLL_SUCCESS && rep.tries >= 1 && rep.n == NCAND, "%d floats: report %s, %d "
          "candidates, %d tries in %d calls", n, st ? gcoll_last_error() : "ok", rep.n, rep.tries,
          calls);
    if (st == GCOLL_SUCCESS && rep.tries >= 1) {
        /* a try gives every candidate TRY_PASSES x (1 warm + 4 samples of per calls) */
        for (int i = 0; i < NCAND; i++)
            CHECK(ran[i] >= 2 * (1 + 4 * rep.per), "%d floats: %s ran %d calls, the try gives "
                  "every candidate %d (%d calls per sample)", n, cand[i], ran[i],
                  2 * (1 + 4 * rep.per), rep.per);
        /* the first call creates the state, the next 8 run the row's algorithm */
        CHECK(first_other > 8, "%d floats: the first call not running ring was %d; the try "
              "starts after 8 counted calls", n, first_other);
        double lo = 1e30;
        for (int i = 0; i < rep.n; i++) {
            CHECK(rep.cost[i] > 0, "%s: no agreed cost", rep.cand[i]->name);
            CHECK(!strcmp(rep.cand[i]->name, cand[i]), "candidate %d is %s", i, rep.cand[i]->name);
            if (rep.cost[i] < lo) lo = rep.cost[i];
        }
        int cur = rep.current;
        CHECK(rep.cost[cur] <= lo || (cur == 0 && rep.cost[0] * 0.97 <= lo),
              "%d floats: the choice %s costs %.2f us where the cheapest costs %.2f", n,
              rep.cand[cur]->name, rep.cost[cur] * 1e6, lo * 1e6);
        double v[2 * NCAND + 2], mx[2 * NCAND + 2];
        for (int i = 0; i < NCAND; i++) v[i] = rep.cost[i], v[NCAND + i] = -rep.cost[i];
        v[2 * NCAND] = cur, v[2 * NCAND + 1] = rep.per;
        MPI_Allreduce(v, mx, 2 * NCAND + 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        for (int i = 0; i < NCAND; i++)
            CHECK(mx[i] == -mx[NCAND + i], "%s: the ranks hold different costs", cand[i]);
        int lo_cur = 0, lo_per = 0;
        MPI_Allreduce(&cur, &lo_cur, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        MPI_Allreduce(&rep.per, &lo_per, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        CHECK(lo_cur == (int)mx[2 * NCAND], "the ranks chose different algorithms");
        CHECK(lo_per == (int)mx[2 * NCAND + 1], "the ranks timed different calls per sample");
        for (int call = calls - AFTER; call < calls; call++) after_bad += run_of[call] != cur;
        CHECK(!after_bad, "%d floats: %d of the last %d calls did not run the choice, %s", n,
              after_bad, AFTER, rep.cand[cur]->name);
        if (rank == 0)
            printf("%5d floats: tries %d, %d calls per sample: ring %.2f, rdouble %.2f, "
                   "reduce_bcast %.2f us agreed; %s chosen; calls run: ring %d, rdouble %d, "
                   "reduce_bcast %d\n", n, rep.tries, rep.per, rep.cost[0] * 1e6,
                   rep.cost[1] * 1e6, rep.cost[2] * 1e6, rep.cand[cur]->name, ran[0], ran[1],
                   ran[2]);
    }
    free(run_of);
    gcoll_comm_destroy(c);
}

static void test_off(const uint64_t *forced, int n)
{
    gcoll_comm_t c = make_comm(NULL, "0");
    if (!c) return;
    int other = 0;
    for (int call = 0; call < 40; call++)
        other += only(ran_mask(forced, one_call(c, n, call, 1))) != 0;
    CHECK(!other, "GCOLL_TRY=0: %d of 40 calls did not run the row's ring", other);
    gcoll_select_online_report_t rep;
    CHECK(gcoll_select_online_report(c, GCOLL_COLL_ALLREDUCE, (size_t)n * sizeof(float), &rep) !=
              GCOLL_SUCCESS, "GCOLL_TRY=0: a state exists");
    gcoll_error_clear();
    gcoll_comm_destroy(c);
}

/* More classes than slots: the first GCOLL_SELECT_ONLINE_SLOTS classes met
 * get a state, the later ones none (their row's algorithm, on every rank
 * alike); every result still MPI's. */
static void test_slots(void)
{
    enum { CLASSES = GCOLL_SELECT_ONLINE_SLOTS + 4 };
    gcoll_comm_t c = make_comm(NULL, "1");
    if (!c) return;
    float *a = malloc(((size_t)1 << (CLASSES - 1)) * sizeof(float));
    float *b = malloc(((size_t)1 << (CLASSES - 1)) * sizeof(float));
    float *r = malloc(((size_t)1 << (CLASSES - 1)) * sizeof(float));
    int with = 0, bad = 0;
    for (int k = 0; k < CLASSES; k++) {   /* 4 B, 8 B, ..., 2 MiB: one class each */
        size_t n = (size_t)1 << k;
        for (size_t i = 0; i < n; i++) a[i] = (float)((i * 3 + (size_t)rank) % 17);
        CHECK(gcoll_allreduce(a, b, n, GCOLL_FLOAT32, GCOLL_SUM, c) == GCOLL_SUCCESS,
              "%zu floats: %s", n, gcoll_last_error());
        MPI_Allreduce(a, r, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        bad += memcmp(b, r, n * sizeof(float)) != 0;
        gcoll_select_online_report_t rep;
        int has = gcoll_select_online_report(c, GCOLL_COLL_ALLREDUCE, n * sizeof(float), &rep) ==
                  GCOLL_SUCCESS;
        gcoll_error_clear();
        CHECK(has == (k < GCOLL_SELECT_ONLINE_SLOTS), "the %dth class met (%zu floats) %s a "
              "state; the first %d get one", k + 1, n, has ? "has" : "has no",
              GCOLL_SELECT_ONLINE_SLOTS);
        with += has;
    }
    CHECK(!bad, "%d classes: results differ from MPI_Allreduce", bad);
    if (rank == 0) printf("%d classes met, %d with a state\n", CLASSES, with);
    free(a), free(b), free(r);
    gcoll_comm_destroy(c);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    x = malloc(NMAX * sizeof(float)), y = malloc(NMAX * sizeof(float));
    ref = malloc(NMAX * sizeof(float));
    /* 64 KiB (a sample is one call) and 32 B (several calls per sample) */
    const int sizes[2] = { NMAX, 8 };
    for (int k = 0; k < 2; k++) {
        int n = sizes[k];
        uint64_t forced[NCAND];
        for (int i = 0; i < NCAND; i++) {
            gcoll_comm_t c = make_comm(cand[i], "1");
            forced[i] = c ? one_call(c, n, 0, 1) : 0;
            if (c) gcoll_comm_destroy(c);
        }
        for (int i = 0; i < NCAND; i++)   /* each must be told apart from the others */
            CHECK(only(ran_mask(forced, forced[i])) == i, "%d floats: %s sends what another "
                  "candidate sends on every rank (%llu bytes here): the test cannot tell them "
                  "apart", n, cand[i], (unsigned long long)forced[i]);
        test_tries(forced, n);
        if (k == 0) test_off(forced, n);
    }
    test_slots();
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("test_select_online (%d ranks): %d failures\n", size, all);
    free(x), free(y), free(ref);
    MPI_Finalize();
    return all ? 1 : 0;
}
