/* SPDX-License-Identifier: BSD-3-Clause */
/* Data of the collectives beyond the 32-bit limits (test/mpi/test_large.c,
 * test/sim/test_sim_large.c): rank r's input element i is v(r, i), the low
 * byte of r * 37 plus the sum of the bytes of i, so a block delivered at an
 * offset off by any multiple of 256 B (2^31 and 2^32 included) or from the
 * wrong rank changes it; the checks take a sample (every 4093rd element, and
 * every element of 4 KiB windows at both ends and around 2^31 and 2^32)
 * against the value computed here. */
#ifndef GCOLL_TEST_LARGE_DATA_H
#define GCOLL_TEST_LARGE_DATA_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>
static inline uint8_t large_v(int r, uint64_t i)
{
    uint64_t s = (uint64_t)r * 37;
    for (int b = 0; b < 8; b++) s += (i >> (8 * b)) & 0xff;
    return (uint8_t)s;
}

/* buf[i] = large_v(r, i), in 1 MiB pieces at memory speed: for i = base + j
 * with base a multiple of 2^20 and j < 2^20, the bytes of j add to those of
 * base without carry. */
static inline void large_fill(uint8_t *buf, uint64_t count, int r)
{
    for (uint64_t base = 0; base < count; base += 1u << 20) {
        uint8_t hi = large_v(r, base);
        uint64_t n = count - base < (1u << 20) ? count - base : (1u << 20);
        for (uint64_t j = 0; j < n; j++)
            buf[base + j] = (uint8_t)(hi + (j & 0xff) + ((j >> 8) & 0xff) + ((j >> 16) & 0xff));
    }
}

/* What element i must be after the collective over `size` ranks: a bcast
 * from root, or (root < 0) the uint8 sum over the ranks. */
static inline uint8_t large_expect(int size, int root, uint64_t i)
{
    if (root >= 0) return large_v(root, i);
    uint8_t s = 0;
    for (int r = 0; r < size; r++) s = (uint8_t)(s + large_v(r, i));
    return s;
}

/* Check the sample of buf; returns the number of wrong elements found (the
 * first one of each window described in why), *checked the elements looked at. */
static inline long large_check(const uint8_t *buf, uint64_t count, int size, int root,
                               long *checked, char *why, size_t len)
{
    const uint64_t w = 4096, marks[] = { (uint64_t)1 << 31, (uint64_t)1 << 32 };
    uint64_t from[5] = { 0, count > w ? count - w : 0, 0, 0, 0 }, lens[5] = { w, w, 0, 0, 0 };
    long bad = 0;
    int nwin = 2;
    for (int k = 0; k < 2; k++)
        if (marks[k] < count) { from[nwin] = marks[k] - w / 2; lens[nwin++] = w; }
    from[nwin] = 0; lens[nwin++] = count;   /* the stride, over everything */
    *checked = 0;
    if (len) why[0] = '\0';
    for (int k = 0; k < nwin; k++) {
        uint64_t step = k == nwin - 1 ? 4093 : 1;
        for (uint64_t i = from[k]; i < from[k] + lens[k] && i < count; i += step) {
            uint8_t want = large_expect(size, root, i);
            ++*checked;
            if (buf[i] == want) continue;
            if (!bad++ && len)
                snprintf(why, len, "element %llu is %u, want %u", (unsigned long long)i, buf[i],
                         want);
            break;
        }
    }
    return bad;
}

#endif
