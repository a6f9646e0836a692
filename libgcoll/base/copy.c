/* SPDX-License-Identifier: BSD-3-Clause */
/* The vector copy behind gcoll_copy (copy.h says when and why). */
#include "base/copy.h"
#if defined(__x86_64__)
#include <emmintrin.h>
#endif

void gcoll_copy_vec(void *dst, const void *src, size_t bytes)
{
#if defined(__x86_64__)
    unsigned char *d = dst;
    const unsigned char *s = src;
    size_t head = (size_t)(-(uintptr_t)d & 15);
    if (head > bytes) head = bytes;
    memcpy(d, s, head);
    d += head, s += head, bytes -= head;
    for (; bytes >= 64; d += 64, s += 64, bytes -= 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)s);
        __m128i b = _mm_loadu_si128((const __m128i *)(s + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(s + 32));
        __m128i e = _mm_loadu_si128((const __m128i *)(s + 48));
        _mm_store_si128((__m128i *)d, a);
        _mm_store_si128((__m128i *)(d + 16), b);
        _mm_store_si128((__m128i *)(d + 32), c);
        _mm_store_si128((__m128i *)(d + 48), e);
    }
    memcpy(d, s, bytes);
#else
    memcpy(dst, src, bytes);
#endif
}
