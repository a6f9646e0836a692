/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit test of gcoll_copy (base/copy.h), the bulk copy of the collectives:
 * every source and destination offset in a 64-byte line, sizes on both
 * sides of the vector path's thresholds (1 KiB, 2 KiB, 4 KiB) and of its
 * 16-byte head and 64-byte body, up to 1 MiB + 7.  Each copy must reproduce the source exactly and
 * leave the guard bytes around the destination untouched.  Exit status 0 on
 * success, 1 on any failure. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/copy.h"

#define GUARD 64
#define MAX_REPORTS 20

int main(void)
{
    const size_t sizes[] = { 0, 1, 15, 63, 1023, 1024, 1025, 1041, 2047, 2048, 2049, 2063,
                             4095, 4096, 4096 + 13, 65536 + 48, (1u << 20) + 7 };
    const size_t nsizes = sizeof sizes / sizeof sizes[0];
    size_t cap = (1u << 20) + 7 + 2 * GUARD + 64;
    unsigned char *src, *dst, *want;
    if (posix_memalign((void **)&src, 4096, cap) || posix_memalign((void **)&dst, 4096, cap) ||
        !(want = malloc(cap))) {
        fprintf(stderr, "test_copy: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < cap; i++) src[i] = (unsigned char)(i * 131 + (i >> 8) * 7 + 1);
    long checks = 0, failures = 0;
    for (size_t k = 0; k < nsizes; k++) {
        size_t n = sizes[k];
        int step = n > 100000 ? 8 : 1;   /* the largest size: every 8th offset pair */
        for (int so = 0; so < 64; so += step)
            for (int doff = 0; doff < 64; doff += step) {
                memset(dst, 0xA5, cap);
                memcpy(want, dst, cap);
                memcpy(want + GUARD + doff, src + so, n);
                gcoll_copy(dst + GUARD + doff, src + so, n);
                checks++;
                if (memcmp(dst, want, cap) != 0) {
                    size_t at = 0;
                    while (dst[at] == want[at]) at++;
                    if (failures++ < MAX_REPORTS)
                        printf("FAIL: %zu bytes, src +%d, dst +%d: first wrong byte at %ld "
                               "from dst (%s)\n", n, so, doff, (long)at - GUARD - doff,
                               at < (size_t)(GUARD + doff) || at >= GUARD + doff + n
                                   ? "outside the copy" : "inside the copy");
                }
            }
    }
    printf("test_copy: %ld copies, %ld failed\n", checks, failures);
    free(src);
    free(dst);
    free(want);
    return failures ? 1 : 0;
}
