/* SPDX-License-Identifier: BSD-3-Clause */
/* GCOLL_CHECK and GCOLL_TIMEOUT, on real ranks (2 or more):
 * - with GCOLL_CHECK=1, ranks passing different counts all get
 *   GCOLL_ERR_MISMATCH and a sentence; matching calls still succeed;
 * - with GCOLL_TIMEOUT=1, a rank whose peers never enter the collective gets
 *   GCOLL_ERR_TIMEOUT naming them, through the transport (allreduce forced to
 *   rdouble) and through shared memory (barrier), instead of hanging: the
 *   sentence must be exactly the one of core/executor.c, with the ranks it
 *   waited for, and only those, by number. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <gcoll.h>

static int failures, rank, size;

#define CHECK(cond, ...) \
    do { \
        if (!(cond)) { failures++; fprintf(stderr, "FAIL rank %d: ", rank); \
                       fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } \
    } while (0)

static gcoll_comm_t make_comm(const char *check, const char *timeout, const char *algo)
{
    setenv("GCOLL_CHECK", check, 1);
    setenv("GCOLL_TIMEOUT", timeout, 1);
    if (algo) setenv("GCOLL_ALGO", algo, 1); else unsetenv("GCOLL_ALGO");
    gcoll_comm_t c = NULL;
    gcoll_status_t st = gcoll_comm_create(MPI_COMM_WORLD, &c);
    CHECK(st == GCOLL_SUCCESS, "create: %s", gcoll_last_error());
    return c;
}

static void test_mismatch(void)
{
    gcoll_comm_t c = make_comm("1", "0", NULL);
    int x[16] = { 0 }, y[16];
    gcoll_status_t st = gcoll_allreduce(x, y, 8, GCOLL_INT32, GCOLL_SUM, c);
    CHECK(st == GCOLL_SUCCESS, "matching allreduce under GCOLL_CHECK: %s", gcoll_last_error());
    st = gcoll_allreduce(x, y, rank == 0 ? 9 : 8, GCOLL_INT32, GCOLL_SUM, c);
    CHECK(st == GCOLL_ERR_MISMATCH, "counts 9 vs 8 gave status %d, not GCOLL_ERR_MISMATCH", st);
    CHECK(strstr(gcoll_last_error(), "count") != NULL, "mismatch sentence does not name the count: '%s'",
          gcoll_last_error());
    st = gcoll_bcast(x, 4, GCOLL_INT32, rank == 0 ? 0 : size - 1, c);
    CHECK(st == GCOLL_ERR_MISMATCH, "roots 0 vs %d gave status %d", size - 1, st);
    st = gcoll_allreduce(x, y, 8, GCOLL_INT32, GCOLL_SUM, c);
    CHECK(st == GCOLL_SUCCESS, "allreduce after a mismatch: %s", gcoll_last_error());
    gcoll_comm_destroy(c);
}

/* Whom a rank that waits in vain names, as core/executor.c's
 * gcoll_exec_timeout writes it: "rank(s) 1, 2" (transport receives) or
 * "local rank(s) 1, 2 of its node" (the node's shared-memory steps). */
typedef void (*who_fn)(int r, char *who, size_t len);

/* Recursive doubling's first partner of index i of P (the fold of
 * algos/allreduce/rdouble.c: of the first 2(P - p2) indices, each even one
 * sends to the odd one after it and waits for it, the odd one waits for the
 * even; the others, virtual rank v = i - (P - p2), exchange with v ^ 1). */
static int rdouble_first_partner(int i, int P)
{
    int p2 = 1;
    while (2 * p2 <= P) p2 *= 2;
    int r = P - p2;
    if (i < 2 * r) return i % 2 ? i - 1 : i + 1;
    int v = (i - r) ^ 1;
    return v < r ? 2 * v + 1 : v + r;
}

static void who_rdouble_partner(int r, char *who, size_t len)
{
    snprintf(who, len, "rank(s) %d", rdouble_first_partner(r, size));
}

/* Every rank but r, in order: all of them stayed away. */
static void who_all_others_local(int r, char *who, size_t len)
{
    size_t n = (size_t)snprintf(who, len, "local rank(s) ");
    for (int j = 0, first = 1; j < size && n < len; j++)
        if (j != r) {
            n += (size_t)snprintf(who + n, len - n, "%s%d", first ? "" : ", ", j);
            first = 0;
        }
    if (n < len) snprintf(who + n, len - n, " of its node");
}

static void who_last_local(int r, char *who, size_t len)
{
    (void)r;
    snprintf(who, len, "local rank(s) %d of its node", size - 1);
}

/* Ranks first..last enter a collective the others skip; those wait until
 * the ones inside gave up, and each of these must name exactly whom it
 * waited for: who(rank).  With GCOLL_TIMEOUT=1. */
static void test_timeout(const char *what, const char *algo, int first, int last, who_fn who)
{
    gcoll_comm_t c = make_comm("0", "1", algo);
    if (c && rank >= first && rank <= last) {
        int x = 1, y = 0;
        double t0 = MPI_Wtime();
        gcoll_status_t st = algo ? gcoll_allreduce(&x, &y, 1, GCOLL_INT32, GCOLL_SUM, c)
                                 : gcoll_barrier(c);
        double waited = MPI_Wtime() - t0;
        char got[512], names[256], want[512];
        snprintf(got, sizeof(got), "%s", gcoll_last_error());
        CHECK(st == GCOLL_ERR_TIMEOUT, "%s (ranks %d..%d of %d): status %d (%s), not "
              "GCOLL_ERR_TIMEOUT", what, first, last, size, st, got);
        who(rank, names, sizeof(names));
        snprintf(want, sizeof(want), "rank %d waited more than GCOLL_TIMEOUT=1 s for %s", rank,
                 names);
        CHECK(strcmp(got, want) == 0, "%s (ranks %d..%d of %d): sentence '%s', want '%s'", what,
              first, last, size, got, want);
        CHECK(waited >= 0.9 && waited < 30, "%s: gave up after %.2f s with GCOLL_TIMEOUT=1", what,
              waited);
        if (st == GCOLL_ERR_TIMEOUT && rank == first)
            printf("%s (ranks %d..%d of %d): %s\n", what, first, last, size, got);
    }
    MPI_Barrier(MPI_COMM_WORLD);   /* the others never entered */
    if (c) gcoll_comm_destroy(c);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        if (rank == 0) printf("SKIP: needs 2 or more ranks\n");
        MPI_Finalize();
        return 77;
    }
    test_mismatch();
    /* alone, rank 0 waits for its first partner, rank 1; the last rank for
     * rank 0 at 2 ranks, rank 1 at 3 (the fold) */
    test_timeout("allreduce over the transport", "allreduce=rdouble", 0, 0, who_rdouble_partner);
    test_timeout("allreduce over the transport", "allreduce=rdouble", size - 1, size - 1,
                 who_rdouble_partner);
    /* the node's step: every absent local rank, and only those */
    test_timeout("barrier through shared memory", NULL, 0, 0, who_all_others_local);
    if (size > 2)
        test_timeout("barrier through shared memory", NULL, 0, size - 2, who_last_local);
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("test_check_timeout: %d failures\n", all);
    MPI_Finalize();
    return all ? 1 : 0;
}
