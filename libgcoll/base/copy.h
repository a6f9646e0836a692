/* SPDX-License-Identifier: BSD-3-Clause */
/* gcoll_copy: memcpy for the bulk copies of collectives (a rank's input into
 * the node's segment, a result into the caller's buffer, a schedule's COPY
 * step).
 *
 * Why not memcpy alone: glibc 2.36 copies 2 KiB to a few MiB with
 * `rep movsb`, which on the AMD EPYC (Zen 4) guests this library is
 * measured on moves 3 GB/s instead of 40 when the destination is not
 * 32-byte aligned (13-16x slower from 4 KiB to 1 MiB), and a C or Fortran
 * program's large malloc'd arrays start 16 bytes into a page.  The 2-rank
 * shared-memory allreduce of 256 KiB-2 MiB malloc'd buffers ran at half
 * Open MPI's speed, of page-aligned ones at twice it.  A destination off a
 * 32-byte boundary is therefore copied with 16-byte vector stores aligned
 * to it, which are as fast as memcpy's best case on any x86-64.
 *
 * And from 1 KiB to 4 KiB, aligned or not: on an Intel Xeon guest
 * (AVX-512; glibc picks __memmove_avx512_unaligned_erms, whose 4x64-byte
 * loop runs from 512 B until rep movsb takes over at 2112 B) the node's
 * collectives of 1-2 KiB, whose copies into and out of the segment meet
 * lines the other core holds, ran 7-20% faster with the 16-byte loop
 * (2 ranks, 4 alternated launches: allgather 1 KiB 0.52 against 0.61 us,
 * 2 KiB 0.80 against 0.96; allreduce 2 KiB 0.78 against 0.85; bcast 2 KiB
 * 0.38 against 0.47); level at 256-512 B and 4 KiB, and 10-15% slower at
 * 8-16 KiB, where memcpy's rep movsb wins.  Every other copy is
 * memcpy's. */
#ifndef GCOLL_BASE_COPY_H
#define GCOLL_BASE_COPY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define GCOLL_COPY_VEC_MIN 2048   /* below: memcpy does not use rep movsb */
/* every copy of [GCOLL_COPY_VEC_SMALL_MIN, GCOLL_COPY_VEC_SMALL_MAX) bytes,
 * aligned or not, takes the vector loop */
#define GCOLL_COPY_VEC_SMALL_MIN 1024
#define GCOLL_COPY_VEC_SMALL_MAX 4096

void gcoll_copy_vec(void *dst, const void *src, size_t bytes);

static inline void gcoll_copy(void *dst, const void *src, size_t bytes)
{
#if defined(__x86_64__)
    if ((bytes >= GCOLL_COPY_VEC_MIN && ((uintptr_t)dst & 31)) ||
        (bytes >= GCOLL_COPY_VEC_SMALL_MIN && bytes < GCOLL_COPY_VEC_SMALL_MAX)) {
        gcoll_copy_vec(dst, src, bytes);
        return;
    }
#endif
    memcpy(dst, src, bytes);
}

#endif
