/* SPDX-License-Identifier: BSD-3-Clause */
/* One collective beyond the 32-bit limits, under mpirun: an allreduce (uint8
 * sum, in place) or a bcast (uint8, from the last rank) of COUNT elements,
 * COUNT above 2^31 (more elements than an int counts) or above 2^32 (more
 * bytes than 4 GiB).  run_large.sh picks the path: the transport (2 simulated
 * nodes of 1, an algorithm forced) or the node's shared memory.
 *
 * Inputs and the sampled check: test/large_data.h.  Also
 * gcoll_comm_get_stats must count the payload whole: at 2 ranks an
 * allreduce sends COUNT bytes from every rank over either path (ring: one
 * block in the reduce-scatter, the other in the allgather; shm: the NODE
 * step's bytes), a bcast COUNT from the root and none from the others.
 *
 *   test_large allreduce|bcast COUNT
 * Prints "test_large: ... ok" on rank 0; exit 1 on any failure. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include "gcoll.h"
#include "large_data.h"

static int rank, size, failures;

#define FAIL(...) do { \
        if (failures++ < 20) { printf("FAIL rank %d: ", rank); printf(__VA_ARGS__); putchar('\n'); } \
    } while (0)

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    setvbuf(stdout, NULL, _IOLBF, 0);   /* a rank killed by mpirun keeps what it said */
    const char *coll = argc == 3 ? argv[1] : "";
    uint64_t count = argc == 3 ? strtoull(argv[2], NULL, 0) : 0;
    if ((strcmp(coll, "allreduce") && strcmp(coll, "bcast")) || count == 0) {
        if (rank == 0) fprintf(stderr, "usage: test_large allreduce|bcast COUNT\n");
        MPI_Finalize();
        return 2;
    }
    int bcast = !strcmp(coll, "bcast"), root = size - 1;
    double t0 = MPI_Wtime();
    uint8_t *buf = malloc(count);
    int ok = buf != NULL, all_ok;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok) {
        FAIL("no memory for %llu bytes (on this rank or another)", (unsigned long long)count);
        MPI_Finalize();
        return 1;
    }
    if (bcast && rank != root) memset(buf, 0x5a, count);
    else large_fill(buf, count, rank);

    gcoll_comm_t comm;
    gcoll_stats_t before = { 0 }, after = { 0 };
    gcoll_status_t st = gcoll_comm_create(MPI_COMM_WORLD, &comm);
    if (st != GCOLL_SUCCESS) {
        FAIL("gcoll_comm_create: %s: %s", gcoll_strerror(st), gcoll_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (gcoll_comm_get_stats(comm, &before) != GCOLL_SUCCESS)
        FAIL("gcoll_comm_get_stats: %s", gcoll_last_error());
    double t1 = MPI_Wtime();
    st = bcast ? gcoll_bcast(buf, count, GCOLL_UINT8, root, comm)
               : gcoll_allreduce(buf, buf, count, GCOLL_UINT8, GCOLL_SUM, comm);
    double t_call = MPI_Wtime() - t1;
    long checked = 0;
    if (st != GCOLL_SUCCESS) {
        FAIL("gcoll_%s of %llu uint8: %s: %s", coll, (unsigned long long)count,
             gcoll_strerror(st), gcoll_last_error());
    } else {
        char why[160];
        if (large_check(buf, count, size, bcast ? root : -1, &checked, why, sizeof(why)))
            FAIL("gcoll_%s of %llu uint8: %s", coll, (unsigned long long)count, why);
        if (gcoll_comm_get_stats(comm, &after) != GCOLL_SUCCESS)
            FAIL("gcoll_comm_get_stats: %s", gcoll_last_error());
        uint64_t sent = after.bytes_sent - before.bytes_sent;
        uint64_t want = !bcast || rank == root ? count : 0;
        if (sent != want)
            FAIL("gcoll_comm_get_stats: this rank sent %llu bytes, want %llu",
                 (unsigned long long)sent, (unsigned long long)want);
        if (after.calls - before.calls != 1)
            FAIL("gcoll_comm_get_stats: %llu calls, want 1",
                 (unsigned long long)(after.calls - before.calls));
    }
    if (gcoll_comm_destroy(comm) != GCOLL_SUCCESS)
        FAIL("gcoll_comm_destroy: %s", gcoll_last_error());
    free(buf);
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("test_large: %s uint8 count=%llu (%.2f GiB) on %d ranks: %s (%ld elements "
               "checked per rank, call %.1f s, all %.1f s)\n", coll, (unsigned long long)count,
               (double)count / (1 << 30), size, all ? "FAILED" : "ok", checked, t_call,
               MPI_Wtime() - t0);
    MPI_Finalize();
    return all ? 1 : 0;
}
