/* SPDX-License-Identifier: BSD-3-Clause */
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

/* Non-power-of-two fold (recursive doubling/halving): of n ranks, the first
 * 2*(n - p2) indices pair up, p2 = gcoll_pow2_floor(n); the even index of each
 * pair hands its data to the odd one (index + 1) and sits out until it gets the
 * result back.  The other p2 indices take part in the power-of-two algorithm
 * as "virtual ranks" 0..p2-1, in increasing order of index.
 * Virtual rank of index i, or -1 if i sits out. */
static inline int gcoll_fold_vrank(int i, int n)
{
    int r = n - gcoll_pow2_floor(n);
    if (i < 2 * r) return (i % 2) ? i / 2 : -1;
    return i - r;
}

/* Index of virtual rank v (inverse of gcoll_fold_vrank). */
static inline int gcoll_fold_rank(int v, int n)
{
    int r = n - gcoll_pow2_floor(n);
    return v < r ? 2 * v + 1 : v + r;
}

/* First index virtual rank v stands for (its partner that sits out, if any);
 * v == p2 gives n, so v stands for [gcoll_fold_first(v), gcoll_fold_first(v+1)). */
static inline int gcoll_fold_first(int v, int n)
{
    int r = n - gcoll_pow2_floor(n);
    return v < r ? 2 * v : v + r;
}

/* Software pipelining of nseg independent segments that each take len rounds:
 * segment g starts one round after segment g-1, at most depth (<= len) in
 * flight, so segment g may reuse the resources of segment g - depth.
 * First round of segment g; non-decreasing in g. */
static inline size_t gcoll_pipe_start(size_t g, int depth, int len)
{
    return (g / (size_t)depth) * (size_t)len + g % (size_t)depth;
}

#endif
