/* SPDX-License-Identifier: BSD-3-Clause */
/* Hierarchy saves network bytes: over 2 (simulated) nodes of L ranks, the
 * hierarchical allreduce sends from every rank 1/L of the vector to the
 * other node, P/(2L(P-1)) of what the flat ring's busiest rank sends (1/3 at
 * 2 x 2), as gcoll_comm_get_stats counts them, and must still compute MPI's
 * answer.  Run with GCOLL_NODE_SIZE = ranks / 2 (run_hier_stats.sh).
 *
 * The same counters show which algorithm ran a call, so they also check
 * that a request's kept schedule (coll.c reuses it for an identical call)
 * follows a change of selection, as calibration's forced candidates make. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gcoll.h>
#include "algos/algo.h"     /* internal: gcoll_algo_find */
#include "core/select.h"    /* internal: gcoll_select_force, as calibrate.c uses it */

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

/* |got - want| within one element per 4 MiB segment and a little more
 * (blocks of a segment differ by one element). */
static int near(uint64_t got, double want, size_t bytes)
{
    double d = (double)got - want;
    return (d < 0 ? -d : d) <= 64.0 + 1e-5 * (double)bytes;
}

/* Inter-node bytes of one allreduce of x into y on comm. */
static uint64_t call_bytes(gcoll_comm_t comm, const float *x, float *y, size_t n, int rank)
{
    gcoll_stats_t before, after;
    gcoll_comm_get_stats(comm, &before);
    gcoll_status_t st = gcoll_allreduce(x, y, n, GCOLL_FLOAT32, GCOLL_SUM, comm);
    CHECK(st == GCOLL_SUCCESS, "kept-schedule allreduce: %s", gcoll_last_error());
    gcoll_comm_get_stats(comm, &after);
    return after.bytes_sent_inter_node - before.bytes_sent_inter_node;
}

/* Forcing another algorithm between two identical calls must rebuild the
 * schedule: the second call sends what a fresh call (other buffers, so
 * nothing kept) of the new algorithm sends, not what the old one did. */
static void test_kept_schedule(int rank)
{
    enum { N = (1 << 18) + 5 };
    unsetenv("GCOLL_ALGO");
    gcoll_comm_t comm;
    if (gcoll_comm_create(MPI_COMM_WORLD, &comm) != GCOLL_SUCCESS) {
        CHECK(0, "create: %s", gcoll_last_error());
        return;
    }
    float *x = malloc(4 * N * sizeof(float)), *y = x + N, *x2 = y + N, *y2 = x2 + N;
    float *ref = malloc(N * sizeof(float));
    for (size_t i = 0; i < 2 * (size_t)N; i++) x[i] = (float)((i * 5 + (size_t)rank * 3) % 97);
    for (size_t i = 0; i < N; i++) x2[i] = x[i];
    const gcoll_algo_t *ring = gcoll_algo_find(GCOLL_COLL_ALLREDUCE, "ring");
    const gcoll_algo_t *hier = gcoll_algo_find(GCOLL_COLL_ALLREDUCE, "hier");
    CHECK(ring && hier, "the ring and hier allreduce are registered");
    if (ring && hier) {
        gcoll_select_force(comm, GCOLL_COLL_ALLREDUCE, ring);
        uint64_t by_ring = call_bytes(comm, x, y, N, rank);
        uint64_t ring_again = call_bytes(comm, x, y, N, rank);   /* kept */
        gcoll_select_force(comm, GCOLL_COLL_ALLREDUCE, hier);
        uint64_t after_force = call_bytes(comm, x, y, N, rank);
        uint64_t fresh_hier = call_bytes(comm, x2, y2, N, rank);
        uint64_t v[3] = { by_ring == ring_again, after_force == fresh_hier, 0 }, all[3];
        /* the check means something only where the two algorithms differ */
        v[2] = by_ring != fresh_hier;
        MPI_Allreduce(v, all, 3, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
        uint64_t differ = 0;
        MPI_Allreduce(&v[2], &differ, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
        CHECK(all[0], "a repeated ring call sent %llu inter-node bytes, the first %llu",
              (unsigned long long)ring_again, (unsigned long long)by_ring);
        CHECK(differ, "ring and hier sent the same inter-node bytes on every rank (%llu): the "
              "test cannot tell them apart", (unsigned long long)by_ring);
        CHECK(after_force == fresh_hier, "after forcing hier, the same call sent %llu inter-node "
              "bytes where hier sends %llu (ring: %llu): the kept ring schedule ran",
              (unsigned long long)after_force, (unsigned long long)fresh_hier,
              (unsigned long long)by_ring);
        MPI_Allreduce(x, ref, N, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        CHECK(memcmp(y, ref, N * sizeof(float)) == 0 && memcmp(y2, ref, N * sizeof(float)) == 0,
              "kept-schedule calls: result differs from MPI_Allreduce");
        if (rank == 0)
            printf("kept schedule: ring %llu, ring again %llu, hier after forcing %llu, hier "
                   "fresh %llu inter-node bytes (rank 0)\n", (unsigned long long)by_ring,
                   (unsigned long long)ring_again, (unsigned long long)after_force,
                   (unsigned long long)fresh_hier);
    }
    gcoll_comm_destroy(comm);
    free(x);
    free(ref);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *env = getenv("GCOLL_NODE_SIZE");
    int L = env ? atoi(env) : 0;   /* ranks per node */
    if (L < 1 || size != 2 * L) {
        if (rank == 0) fprintf(stderr, "test_hier_stats: run as 2 nodes (GCOLL_NODE_SIZE = "
                               "ranks / 2), not %d ranks with GCOLL_NODE_SIZE=%s\n",
                               size, env ? env : "(unset)");
        MPI_Finalize();
        return 99;
    }
    const size_t counts[] = { 1 << 18, (1 << 20) + 3, 1 << 22 };   /* 1, 4, 16 MiB */
    for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
        size_t n = counts[k], bytes = n * sizeof(float);
        uint64_t ring = inter_bytes("ring", n, rank);
        uint64_t hier = inter_bytes("hier", n, rank);
        /* A ring crosses nodes only at node boundaries, so compare the
         * busiest rank and the total, not rank by rank. */
        uint64_t max_ring, max_hier, min_hier, sum_ring, sum_hier;
        MPI_Allreduce(&ring, &max_ring, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
        MPI_Allreduce(&hier, &max_hier, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
        MPI_Allreduce(&hier, &min_hier, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
        MPI_Allreduce(&ring, &sum_ring, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
        MPI_Allreduce(&hier, &sum_hier, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
        /* The flat ring over P = 2L ranks: each rank sends 2(P-1)/P of the
         * vector to its successor, which is on the other node for the last
         * rank of each node. */
        double ring_want = 2.0 * (size - 1) / size * (double)bytes;
        CHECK(near(max_ring, ring_want, bytes), "%zu floats: ring's busiest rank sent %llu "
              "inter-node bytes, the ring sends %.0f", n, (unsigned long long)max_ring, ring_want);
        /* hier: the node reduce-scatters through shared memory, then rank l
         * of each node allreduces block l (1/L of the vector) with rank l of
         * the other node, sending it once: every rank sends 1/L of the
         * vector across, each node the whole vector once.  A fallback to the
         * ring or to the leader form (the leaders send everything, the
         * others nothing) fails this; at 2 x 2 hier's busiest rank sends 1/3
         * of the ring's, at 2 x 3 1/5. */
        double hier_want = (double)bytes / L;
        CHECK(near(max_hier, hier_want, bytes) && near(min_hier, hier_want, bytes),
              "%zu floats: with hier the ranks sent %llu..%llu inter-node bytes, want %.0f each "
              "(1/%d of the vector)", n, (unsigned long long)min_hier,
              (unsigned long long)max_hier, hier_want, L);
        CHECK(sum_hier == 2 * (uint64_t)bytes, "%zu floats: all ranks sent %llu inter-node "
              "bytes with hier, want %zu (each node's vector once)", n,
              (unsigned long long)sum_hier, 2 * bytes);
        CHECK(near(max_hier * (uint64_t)(2 * L * (size - 1)), (double)max_ring * size,
                   bytes * (size_t)(2 * L * (size - 1))),
              "%zu floats: hier's busiest rank sent %llu inter-node bytes, ring's %llu: want "
              "%.4f of it", n, (unsigned long long)max_hier, (unsigned long long)max_ring,
              (double)size / (2.0 * L * (size - 1)));
        if (rank == 0)
            printf("%9zu floats: inter-node bytes, busiest rank: ring %llu, hier %llu (%.4f of "
                   "ring's); all ranks: ring %llu, hier %llu\n", n, (unsigned long long)max_ring,
                   (unsigned long long)max_hier, (double)max_hier / (double)max_ring,
                   (unsigned long long)sum_ring, (unsigned long long)sum_hier);
    }
    test_kept_schedule(rank);
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("test_hier_stats: %d failures\n", all);
    MPI_Finalize();
    return all ? 1 : 0;
}
