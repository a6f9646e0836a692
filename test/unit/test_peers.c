/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests of the peer and offset arithmetic in algos/peers.h: each
 * function against its defining property, for many sizes, so that the
 * algorithms built on them can trust them.  One line per failure; exit 1. */
#include <stdio.h>
#include <stdlib.h>
#include "algos/peers.h"

static long n_checks, n_fail;

#define CHECK(cond, ...) \
    do { \
        n_checks++; \
        if (!(cond)) { \
            if (++n_fail <= 50) { \
                printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
                printf(__VA_ARGS__); \
                printf("\n"); \
            } \
        } \
    } while (0)

/* Blocks tile [0, count) in order, lengths differ by at most one, the longer
 * ones first. */
static void test_blocks(void)
{
    static const size_t counts[] = { 0, 1, 2, 3, 7, 8, 63, 64, 65, 1000, 1021, 4096, 100003 };
    for (size_t ic = 0; ic < sizeof(counts) / sizeof(counts[0]); ic++) {
        for (int n = 1; n <= 130; n++) {
            size_t count = counts[ic], next = 0, lo = count / (size_t)n;
            for (int b = 0; b < n; b++) {
                size_t off = gcoll_block_off(count, n, b), len = gcoll_block_len(count, n, b);
                CHECK(off == next, "count %zu n %d block %d: offset %zu, previous block ends at %zu",
                      count, n, b, off, next);
                CHECK(len == lo || len == lo + 1, "count %zu n %d block %d: length %zu", count, n,
                      b, len);
                CHECK(b == 0 || len <= gcoll_block_len(count, n, b - 1),
                      "count %zu n %d: block %d longer than block %d", count, n, b, b - 1);
                next = off + len;
            }
            CHECK(next == count, "count %zu n %d: blocks end at %zu", count, n, next);
            CHECK(gcoll_block_off(count, n, n) == count, "count %zu n %d: offset of block n is %zu",
                  count, n, gcoll_block_off(count, n, n));
        }
    }
}

static void test_ring_and_root(void)
{
    for (int n = 1; n <= 200; n++) {
        for (int i = 0; i < n; i++) {
            int nx = gcoll_ring_next(i, n), pv = gcoll_ring_prev(i, n);
            CHECK(nx >= 0 && nx < n && pv >= 0 && pv < n, "n %d i %d: next %d prev %d", n, i, nx, pv);
            CHECK(gcoll_ring_prev(nx, n) == i && gcoll_ring_next(pv, n) == i,
                  "n %d i %d: next and prev are not inverse", n, i);
            CHECK(n == 1 || nx == (i == n - 1 ? 0 : i + 1), "n %d i %d: next %d", n, i, nx);
        }
        for (int root = 0; root < n; root += (n > 20 ? 7 : 1)) {
            CHECK(gcoll_rel(root, root, n) == 0, "n %d: rel(root %d) != 0", n, root);
            for (int i = 0; i < n; i++) {
                int rel = gcoll_rel(i, root, n);
                CHECK(rel >= 0 && rel < n, "n %d root %d i %d: rel %d", n, root, i, rel);
                CHECK(gcoll_abs(rel, root, n) == i, "n %d root %d i %d: abs(rel) %d", n, root, i,
                      gcoll_abs(rel, root, n));
            }
        }
    }
}

static void test_pow2(void)
{
    for (int n = 1; n <= 5000; n++) {
        int p = gcoll_pow2_floor(n), l = gcoll_log2_ceil(n);
        CHECK(p <= n && 2 * p > n && (p & (p - 1)) == 0, "pow2_floor(%d) = %d", n, p);
        CHECK((1 << l) >= n && (l == 0 || (1 << (l - 1)) < n), "log2_ceil(%d) = %d", n, l);
    }
}

/* Binomial tree: every rel != 0 has parent rel - span(rel) whose subtree
 * contains rel; subtrees [rel, rel + span) partition correctly. */
static void test_binomial(void)
{
    for (int n = 1; n <= 130; n++) {
        CHECK((1 << gcoll_log2_ceil(n)) == gcoll_binomial_span(0, n), "n %d: root span %d", n,
              gcoll_binomial_span(0, n));
        for (int rel = 1; rel < n; rel++) {
            int span = gcoll_binomial_span(rel, n), parent = rel - span;
            CHECK(span > 0 && (span & (span - 1)) == 0 && parent >= 0,
                  "n %d rel %d: span %d", n, rel, span);
            CHECK(parent >= 0 && span < gcoll_binomial_span(parent, n),
                  "n %d rel %d: parent %d's span %d is not larger than %d", n, rel, parent,
                  parent >= 0 ? gcoll_binomial_span(parent, n) : -1, span);
        }
    }
}

static void test_chunk(void)
{
    CHECK(gcoll_chunk_elems(0, 4096, 4) == 1024, "default chunk of 4096 B is %zu floats",
          gcoll_chunk_elems(0, 4096, 4));
    CHECK(gcoll_chunk_elems(256, 4096, 8) == 32, "256 B chunk is %zu doubles",
          gcoll_chunk_elems(256, 4096, 8));
    CHECK(gcoll_chunk_elems(3, 4096, 8) == 1, "a chunk smaller than an element gives %zu",
          gcoll_chunk_elems(3, 4096, 8));
    CHECK(gcoll_chunk_elems(1000, 4096, 3) == 333, "1000 B chunk of 3 B elements is %zu",
          gcoll_chunk_elems(1000, 4096, 3));
}

/* Non-power-of-two fold: p2 virtual ranks, each index covered exactly once. */
static void test_fold(void)
{
    for (int n = 1; n <= 200; n++) {
        int p2 = gcoll_pow2_floor(n), seen = 0, prev_v = -1;
        for (int i = 0; i < n; i++) {
            int v = gcoll_fold_vrank(i, n);
            CHECK(v >= -1 && v < p2, "n %d i %d: vrank %d", n, i, v);
            if (v < 0) {
                CHECK(i + 1 < n && gcoll_fold_vrank(i + 1, n) >= 0,
                      "n %d i %d sits out without a partner", n, i);
                continue;
            }
            seen++;
            CHECK(v == prev_v + 1, "n %d i %d: vrank %d after %d", n, i, v, prev_v);
            CHECK(gcoll_fold_rank(v, n) == i, "n %d v %d: fold_rank %d, expected %d", n, v,
                  gcoll_fold_rank(v, n), i);
            int first = gcoll_fold_first(v, n);
            CHECK(first <= i && gcoll_fold_first(v + 1, n) == i + 1,
                  "n %d v %d: stands for [%d, %d), expected to end at %d", n, v, first,
                  gcoll_fold_first(v + 1, n), i + 1);
            prev_v = v;
        }
        CHECK(seen == p2, "n %d: %d virtual ranks, expected %d", n, seen, p2);
        CHECK(gcoll_fold_first(0, n) == 0 && gcoll_fold_first(p2, n) == n,
              "n %d: virtual ranks cover [%d, %d)", n, gcoll_fold_first(0, n),
              gcoll_fold_first(p2, n));
    }
}

/* Pipelining: non-decreasing starts, at most depth segments in flight, and
 * segment g starts no earlier than segment g - depth finished. */
static void test_pipe(void)
{
    for (int len = 1; len <= 8; len++)
        for (int depth = 1; depth <= len; depth++)
            for (size_t g = 0; g < 50; g++) {
                size_t t = gcoll_pipe_start(g, depth, len);
                CHECK(g == 0 ? t == 0 : t >= gcoll_pipe_start(g - 1, depth, len),
                      "len %d depth %d: segment %zu starts at %zu, before its predecessor", len,
                      depth, g, t);
                CHECK(g < (size_t)depth || t >= gcoll_pipe_start(g - (size_t)depth, depth, len) + (size_t)len,
                      "len %d depth %d: segment %zu starts at %zu while segment %zu runs", len,
                      depth, g, t, g - (size_t)depth);
                CHECK(g == 0 || t <= gcoll_pipe_start(g - 1, depth, len) + (size_t)len,
                      "len %d depth %d: segment %zu leaves a gap", len, depth, g);
            }
}

int main(void)
{
    test_blocks();
    test_ring_and_root();
    test_pow2();
    test_binomial();
    test_chunk();
    test_fold();
    test_pipe();
    printf("test_peers: %ld checks, %ld failed\n", n_checks, n_fail);
    return n_fail ? 1 : 0;
}
