/* SPDX-License-Identifier: BSD-3-Clause */
/* Hierarchy saves network bytes: with several (simulated) nodes, the
 * hierarchical allreduce must send, per rank, no more bytes to other nodes
 * than the flat ring, as gcoll_comm_get_stats counts them, and must still
 * compute MPI's answer.  Run with GCOLL_NODE_SIZE set (run_hier_stats.sh). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gcoll.h>

static int failures;

#define CHECK(cond, ...) \
    do { \
        if (!(cond)) { failures++; fprintf(stderr, "FAIL rank %d: ", rank); \
                       fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } \
    } while (0)

/* Inter-node bytes this rank sent for one allreduce of n floats with algo. */
static uint64_t inter_bytes(const char *algo, size_t n, int rank)
{
    char spec[64];
    snprintf(spec, sizeof(spec), "allreduce=%s", algo);
    setenv("GCOLL_ALGO", spec, 1);
    gcoll_comm_t comm;
    if (gcoll_comm_create(MPI_COMM_WORLD, &comm) != GCOLL_SUCCESS) {
        CHECK(0, "create with %s: %s", spec, gcoll_last_error());
        return 0;
    }
    float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float)),
          *ref = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) x[i] = (float)((i * 7 + (size_t)rank * 13) % 101);
    gcoll_stats_t before, after;
    gcoll_comm_get_stats(comm, &before);
    gcoll_status_t st = gcoll_allreduce(x, y, n, GCOLL_FLOAT32, GCOLL_SUM, comm);
    gcoll_comm_get_stats(comm, &after);
    CHECK(st == GCOLL_SUCCESS, "%s allreduce: %s", algo, gcoll_last_error());
    MPI_Allreduce(x, ref, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(memcmp(y, ref, n * sizeof(float)) == 0, "%s: result differs from MPI_Allreduce", algo);
    gcoll_comm_destroy(comm);
    free(x); free(y); free(ref);
    return after.bytes_sent_inter_node - before.bytes_sent_inter_node;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const size_t counts[] = { 1 << 18, (1 << 20) + 3, 1 << 22 };   /* 1, 4, 16 MiB */
    for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
        uint64_t ring = inter_bytes("ring", counts[k], rank);
        uint64_t hier = inter_bytes("hier", counts[k], rank);
        /* A ring crosses nodes only at node boundaries, so compare the
         * busiest rank and the total, not rank by rank. */
        uint64_t max_ring, max_hier, sum_ring, sum_hier;
        MPI_Allreduce(&ring, &max_ring, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
        MPI_Allreduce(&hier, &max_hier, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
        MPI_Allreduce(&ring, &sum_ring, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
        MPI_Allreduce(&hier, &sum_hier, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
        /* hier sends 1/local_size of the vector across per rank; at 2 x 2 its
         * busiest rank moves 1/3 of ring's (a hier that fell back to the
         * ring would move as much): at most half */
        CHECK(2 * max_hier <= max_ring, "%zu floats: busiest rank sent %llu inter-node bytes "
              "with hier, %llu with ring (want at most half)", counts[k],
              (unsigned long long)max_hier, (unsigned long long)max_ring);
        CHECK(sum_hier <= sum_ring, "%zu floats: all ranks sent %llu inter-node bytes with hier, "
              "%llu with ring", counts[k], (unsigned long long)sum_hier,
              (unsigned long long)sum_ring);
        CHECK(sum_hier > 0, "%zu floats: hier sent nothing between nodes (are there nodes?)",
              counts[k]);
        if (rank == 0)
            printf("%9zu floats: inter-node bytes, busiest rank: ring %llu, hier %llu; "
                   "all ranks: ring %llu, hier %llu\n", counts[k], (unsigned long long)max_ring,
                   (unsigned long long)max_hier, (unsigned long long)sum_ring,
                   (unsigned long long)sum_hier);
    }
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("test_hier_stats: %d failures\n", all);
    MPI_Finalize();
    return all ? 1 : 0;
}
