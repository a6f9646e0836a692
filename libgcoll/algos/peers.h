/* Peer and offset arithmetic of the algorithms, as small pure functions so
 * they are unit-tested on their own (test/unit/test_peers.c). */
#ifndef GCOLL_PEERS_H
#define GCOLL_PEERS_H

#include <stddef.h>

/* Ring neighbours of index i in a ring of n. */
static inline int gcoll_ring_next(int i, int n) { return (i + 1) % n; }
static inline int gcoll_ring_prev(int i, int n) { return (i - 1 + n) % n; }

/* Largest power of two <= n (n >= 1). */
static inline int gcoll_pow2_floor(int n)
{
    int p = 1;
    while (p * 2 <= n) p *= 2;
    return p;
}

/* Block b of `count` elements split into n blocks: the first count % n blocks
 * get one element more.  Offsets and lengths in elements. */
static inline size_t gcoll_block_len(size_t count, int n, int b)
{
    return count / (size_t)n + ((size_t)b < count % (size_t)n ? 1 : 0);
}

static inline size_t gcoll_block_off(size_t count, int n, int b)
{
    size_t q = count / (size_t)n, r = count % (size_t)n;
    return (size_t)b * q + ((size_t)b < r ? (size_t)b : r);
}

/* Index relative to root and back (trees rooted anywhere). */
static inline int gcoll_rel(int i, int root, int n) { return (i - root + n) % n; }
static inline int gcoll_abs(int rel, int root, int n) { return (rel + root) % n; }

/* ceil(log2 n) for n >= 1: the rounds of a binomial tree, of dissemination
 * and of Bruck's alltoall. */
static inline int gcoll_log2_ceil(int n)
{
    int l = 0;
    while ((1 << l) < n) l++;
    return l;
}

/* Binomial tree over relative indices 0..n-1 rooted at 0.  rel's subtree is
 * [rel, min(rel + span, n)), its parent rel - span, its children rel + m for
 * the powers of two m < span (those < n).  span is rel's lowest set bit, or
 * for the root the smallest power of two >= n. */
static inline int gcoll_binomial_span(int rel, int n)
{
    return rel ? (rel & -rel) : 1 << gcoll_log2_ceil(n);
}

/* Elements per pipeline chunk: chunk_bytes (dflt when 0) rounded down to
 * whole elements, at least one. */
static inline size_t gcoll_chunk_elems(size_t chunk_bytes, size_t dflt, size_t dt_size)
{
    size_t e = (chunk_bytes ? chunk_bytes : dflt) / dt_size;
    return e ? e : 1;
}

#endif
