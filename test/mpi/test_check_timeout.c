/* SPDX-License-Identifier: BSD-3-Clause */
/* GCOLL_CHECK and GCOLL_TIMEOUT, on real ranks (2 or more):
 * - with GCOLL_CHECK=1, ranks passing different counts all get
 *   GCOLL_ERR_MISMATCH and a sentence; matching calls still succeed;
 * - with GCOLL_TIMEOUT=1, a rank whose peers never enter the collective gets
 *   GCOLL_ERR_TIMEOUT naming them, through the transport (allreduce forced to
 *   rdouble) and through shared memory (barrier), instead of hanging. */
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

/* Rank 0 enters a collective the others skip; they wait until it gave up. */
static void test_timeout(const char *what, const char *algo)
{
    gcoll_comm_t c = make_comm("0", "1", algo);
    if (rank == 0) {
        int x = 1, y = 0;
        double t0 = MPI_Wtime();
        gcoll_status_t st = algo ? gcoll_allreduce(&x, &y, 1, GCOLL_INT32, GCOLL_SUM, c)
                                 : gcoll_barrier(c);
        double waited = MPI_Wtime() - t0;
        CHECK(st == GCOLL_ERR_TIMEOUT, "%s alone: status %d (%s), not GCOLL_ERR_TIMEOUT", what, st,
              gcoll_last_error());
        /* rank 1 is missing (and rank 2 at 3 ranks): the sentence must name it */
        CHECK(strstr(gcoll_last_error(), "rank(s) 1") != NULL,
              "%s: sentence does not name the missing rank 1: '%s'", what, gcoll_last_error());
        CHECK(waited >= 0.9 && waited < 30, "%s: gave up after %.2f s with GCOLL_TIMEOUT=1", what,
              waited);
        if (st == GCOLL_ERR_TIMEOUT) printf("%s: %s\n", what, gcoll_last_error());
    }
    MPI_Barrier(MPI_COMM_WORLD);   /* the others never entered */
    gcoll_comm_destroy(c);
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
    test_timeout("allreduce over the transport", "allreduce=rdouble");
    test_timeout("barrier through shared memory", NULL);
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("test_check_timeout: %d failures\n", all);
    MPI_Finalize();
    return all ? 1 : 0;
}
