/* SPDX-License-Identifier: BSD-3-Clause */
/* The simulator beyond the 32-bit limits: one collective of 2 ranks in one
 * process, COUNT uint8 elements (above 2^31: more elements than an int
 * counts; above 2^32: more bytes than 4 GiB), with the algorithm asked:
 *
 *   test_sim_large allreduce/ring COUNT     in place, uint8 sum
 *   test_sim_large allreduce/shm COUNT      the NODE step's emulation
 *   test_sim_large bcast/binomial COUNT     from rank 1
 *
 * Inputs and the sampled check: test/large_data.h.  The simulator's byte
 * counts must hold the payload whole (as test_large.c: COUNT per rank for
 * the allreduce over the transport, COUNT from the root for the bcast).
 * Memory: the two ranks' buffers (2 x COUNT), messages of one chunk; shm's
 * NODE step stages its result in one more COUNT. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "gcoll.h"
#include "algos/algo.h"
#include "sim/sim.h"
#include "large_data.h"

#define P 2

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    double t0 = now();
    char name[64] = "";
    uint64_t count = argc == 3 ? strtoull(argv[2], NULL, 0) : 0;
    if (argc == 3) snprintf(name, sizeof(name), "%s", argv[1]);
    char *slash = strchr(name, '/');
    if (slash) *slash = '\0';
    gcoll_coll_t coll = gcoll_coll_from_name(name);
    const gcoll_algo_t *algo = slash ? gcoll_algo_find(coll, slash + 1) : NULL;
    if (!algo || (coll != GCOLL_COLL_ALLREDUCE && coll != GCOLL_COLL_BCAST) || count == 0) {
        fprintf(stderr, "usage: test_sim_large allreduce/ALGO|bcast/ALGO COUNT\n");
        return 2;
    }
    int bcast = coll == GCOLL_COLL_BCAST, root = bcast ? P - 1 : -1, fails = 0;
    uint8_t *bufs[P];
    gcoll_coll_args_t args[P];
    for (int r = 0; r < P; r++) {
        if (!(bufs[r] = malloc(count))) {
            printf("FAIL: no memory for %llu bytes\n", (unsigned long long)count);
            return 1;
        }
        if (bcast && r != root) memset(bufs[r], 0x5a, count);
        else large_fill(bufs[r], count, r);
        args[r] = (gcoll_coll_args_t){ .coll = coll, .count = count, .dt_size = 1,
                                       .root = bcast ? root : 0,
                                       .src = gcoll_bref(GCOLL_BUF_RECV, 0),
                                       .dst = gcoll_bref(GCOLL_BUF_RECV, 0) };
    }
    uint64_t sent[P] = { 0 }, inter[P] = { 0 };
    gcoll_sim_t sim = { .nranks = P, .bytes_sent = sent, .bytes_inter = inter };
    double t1 = now();
    gcoll_status_t st = gcoll_sim_run_algo(&sim, algo, args, GCOLL_UINT8, GCOLL_SUM, NULL,
                                           (void *const *)bufs);
    double t_run = now() - t1;
    long checked = 0;
    if (st != GCOLL_SUCCESS) {
        printf("FAIL: %s/%s of %llu uint8: %s: %s\n", name, algo->name,
               (unsigned long long)count, gcoll_strerror(st), gcoll_last_error());
        fails++;
    } else {
        for (int r = 0; r < P; r++) {
            char why[160];
            long c;
            if (large_check(bufs[r], count, P, root, &c, why, sizeof(why))) {
                printf("FAIL: %s/%s rank %d: %s\n", name, algo->name, r, why);
                fails++;
            }
            checked += c;
            /* as the host executor counts: a NODE allreduce its bytes too */
            uint64_t want = !bcast || r == root ? count : 0;
            if (sent[r] != want) {
                printf("FAIL: %s/%s rank %d: the simulator counted %llu bytes sent, want %llu\n",
                       name, algo->name, r, (unsigned long long)sent[r],
                       (unsigned long long)want);
                fails++;
            }
        }
    }
    for (int r = 0; r < P; r++) free(bufs[r]);
    printf("test_sim_large: %s/%s uint8 count=%llu (%.2f GiB), %d ranks: %s (%ld elements "
           "checked, simulated %.3f s, run %.1f s, all %.1f s)\n", name, algo->name,
           (unsigned long long)count, (double)count / (1 << 30), P, fails ? "FAILED" : "ok",
           checked, sim.time, t_run, now() - t0);
    return fails ? 1 : 0;
}
