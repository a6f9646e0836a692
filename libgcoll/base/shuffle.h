/* SPDX-License-Identifier: BSD-3-Clause */
/* An order of n items for round k of an interleaved timing (the
 * calibration's candidates, the benchmark's --algos variants): a
 * permutation drawn from a generator seeded by k alone, so every rank of a
 * job draws the same one without exchanging it.
 *
 * Why not one fixed cycle: a collective's speed depends on which one ran
 * just before it (what it left in the caches and the ranks' timing), and a
 * fixed cycle gives each candidate the same predecessor in every round.
 * On an Intel Xeon guest (2 ranks, 16 MiB allreduce) rabenseifner ran
 * 3.0 ms after rdouble and 3.7 after shm, shm_sliced 3.0 after shm and
 * 3.4 alone: the registry's cycle made those two look 20% faster than shm,
 * which was level with them in launches of one algorithm each.  Shuffled,
 * a median is taken over rounds with different predecessors.
 * Header only: the benchmarks use it too and link only the public API. */
#ifndef GCOLL_BASE_SHUFFLE_H
#define GCOLL_BASE_SHUFFLE_H

static inline void gcoll_shuffle_order(int *order, int n, unsigned k)
{
    unsigned x = 2654435761u * (k + 1u);   /* Knuth's multiplicative hash: rounds far apart */
    for (int j = 0; j < n; j++) order[j] = j;
    for (int j = n - 1; j > 0; j--) {      /* Fisher-Yates, an LCG's high bits */
        x = x * 1103515245u + 12345u;
        int i = (int)((x >> 8) % (unsigned)(j + 1)), t = order[i];
        order[i] = order[j], order[j] = t;
    }
}

#endif
