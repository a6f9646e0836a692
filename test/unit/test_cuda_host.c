/* SPDX-License-Identifier: BSD-3-Clause */
/* The parts of the CUDA path that are plain arithmetic, tested without a
 * GPU (and without CUDA at build time):
 *
 * - gcoll_cuda_ipc_slice (cuda/cuda_ipc.h): the slices a node's ranks
 *   reduce must cover the chunk exactly, in order, each starting on a
 *   16-byte pack, balanced to one pack, the tail on the last slice;
 * - gcoll_stage_layout (core/coll.h): where the staged path puts the host
 *   images of device buffers.  Each image must lie inside the staging area,
 *   images of disjoint buffers must not overlap, and a buffer wholly inside
 *   the other (the in-place forms of gcoll.h) must keep its offset; the
 *   in-place forms of every collective are checked against layouts worked
 *   out by hand.
 *
 * Exit 1 on any failure. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "gcoll.h"
#include "core/coll.h"
#include "cuda/cuda_ipc.h"

static long checks, failures;

#define CHECK(cond, ...) do { \
        checks++; \
        if (!(cond)) { if (failures++ < 30) { printf("FAIL: "); printf(__VA_ARGS__); putchar('\n'); } } \
    } while (0)

/* ---- slices ---------------------------------------------------------------- */

static void check_slices(size_t n, size_t dt, int k)
{
    size_t per = 16 / dt, prev_hi = 0, min_packs = SIZE_MAX, max_packs = 0;
    for (int q = 0; q < k; q++) {
        size_t lo, hi;
        gcoll_cuda_ipc_slice(n, dt, k, q, &lo, &hi);
        CHECK(lo == prev_hi && hi >= lo && hi <= n, "n=%zu dt=%zu k=%d: slice %d is [%zu, %zu) "
              "after one ending at %zu", n, dt, k, q, lo, hi, prev_hi);
        CHECK(lo % per == 0, "n=%zu dt=%zu k=%d: slice %d starts at %zu, not on a 16-byte pack",
              n, dt, k, q, lo);
        size_t packs = (q == k - 1 ? (n / per) * per - lo : hi - lo) / per;
        if (q < k - 1) CHECK((hi - lo) % per == 0, "n=%zu dt=%zu k=%d: slice %d has %zu "
                             "elements, not whole packs", n, dt, k, q, hi - lo);
        if (packs < min_packs) min_packs = packs;
        if (packs > max_packs) max_packs = packs;
        prev_hi = hi;
    }
    CHECK(prev_hi == n, "n=%zu dt=%zu k=%d: the slices end at %zu", n, dt, k, prev_hi);
    CHECK(max_packs - min_packs <= 1, "n=%zu dt=%zu k=%d: slices of %zu to %zu packs", n, dt, k,
          min_packs, max_packs);
}

static void test_slices(void)
{
    static const size_t dts[] = { 1, 2, 4, 8 };
    static const size_t ns[] = { 0, 1, 3, 15, 16, 17, 31, 33, 1000, 4097, 65537, 2097152 + 13,
                                 ((size_t)1 << 31) + 5, ((size_t)1 << 33) + 7 };
    for (size_t d = 0; d < 4; d++)
        for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++)
            for (int k = 1; k <= 8; k++) check_slices(ns[i], dts[d], k);
    /* by hand: 100 float32 (25 packs of 4) over 3 ranks: 8, 8 and 9 packs */
    size_t lo, hi;
    gcoll_cuda_ipc_slice(100, 4, 3, 0, &lo, &hi);
    CHECK(lo == 0 && hi == 32, "100 float32 / 3, slice 0: [%zu, %zu), want [0, 32)", lo, hi);
    gcoll_cuda_ipc_slice(100, 4, 3, 1, &lo, &hi);
    CHECK(lo == 32 && hi == 64, "100 float32 / 3, slice 1: [%zu, %zu), want [32, 64)", lo, hi);
    gcoll_cuda_ipc_slice(100, 4, 3, 2, &lo, &hi);
    CHECK(lo == 64 && hi == 100, "100 float32 / 3, slice 2: [%zu, %zu), want [64, 100)", lo, hi);
    /* 10 bytes over 2: no whole pack; everything is the last slice's tail */
    gcoll_cuda_ipc_slice(10, 1, 2, 0, &lo, &hi);
    CHECK(lo == 0 && hi == 0, "10 uint8 / 2, slice 0: [%zu, %zu), want empty", lo, hi);
    gcoll_cuda_ipc_slice(10, 1, 2, 1, &lo, &hi);
    CHECK(lo == 0 && hi == 10, "10 uint8 / 2, slice 1: [%zu, %zu), want [0, 10)", lo, hi);
}

/* ---- the staging layout ------------------------------------------------------ */

static unsigned char pool[4096];   /* the "device" buffers: offsets into one array */

#define AT(off) ((off) < 0 ? NULL : (const void *)(pool + (off)))

static void describe(char *out, size_t len, long s, size_t sb, long r, size_t db)
{
    snprintf(out, len, "send %ld+%zu recv %ld+%zu", s, sb, r, db);
}

/* The invariants, for any pair of buffers (offsets into pool, -1: NULL). */
static void check_layout(long s, size_t sb, long r, size_t db)
{
    gcoll_stage_layout_t l;
    char what[96];
    describe(what, sizeof(what), s, sb, r, db);
    gcoll_stage_layout(AT(s), sb, AT(r), db, &l);
    if (s >= 0 && sb) CHECK(l.has_send, "%s: no send image", what);
    if (r >= 0 && db) CHECK(l.has_recv, "%s: no recv image", what);
    if (l.has_send)
        CHECK(l.send_off + sb <= l.need, "%s: the send image [%zu, %zu) is outside the %zu B "
              "staging area", what, l.send_off, l.send_off + sb, l.need);
    if (l.has_recv)
        CHECK(l.recv_off + db <= l.need, "%s: the recv image [%zu, %zu) is outside the %zu B "
              "staging area", what, l.recv_off, l.recv_off + db, l.need);
    CHECK(l.need <= sb + db, "%s: a staging area of %zu B for %zu B of buffers", what, l.need,
          sb + db);
    if (s < 0 || r < 0 || !l.has_send || !l.has_recv) return;
    int apart = s + (long)sb <= r || r + (long)db <= s;
    int send_inside = s >= r && s + (long)sb <= r + (long)db;
    int recv_inside = r >= s && r + (long)db <= s + (long)sb;
    if (apart && sb && db)
        CHECK(l.send_off + sb <= l.recv_off || l.recv_off + db <= l.send_off,
              "%s: disjoint buffers, overlapping images (send at %zu, recv at %zu)", what,
              l.send_off, l.recv_off);
    if (send_inside || recv_inside)
        CHECK((long)l.send_off - (long)l.recv_off == s - r, "%s: the send image at %zu, the "
              "recv image at %zu: not %ld apart as the buffers are", what, l.send_off,
              l.recv_off, s - r);
    /* a contained image is carried by its container, never copied on its own */
    if (send_inside && !recv_inside) CHECK(l.send_in_recv, "%s: send inside recv not seen", what);
    if (recv_inside && !send_inside) CHECK(l.recv_in_send, "%s: recv inside send not seen", what);
    if (l.send_in_recv) CHECK(send_inside, "%s: send taken as inside recv, and is not", what);
    if (l.recv_in_send) CHECK(recv_inside, "%s: recv taken as inside send, and is not", what);
}

/* One layout worked out by hand. */
static void expect_layout(const char *what, long s, size_t sb, long r, size_t db, size_t need,
                          long send_off, long recv_off)
{
    gcoll_stage_layout_t l;
    gcoll_stage_layout(AT(s), sb, AT(r), db, &l);
    long so = l.has_send ? (long)l.send_off : -1, ro = l.has_recv ? (long)l.recv_off : -1;
    CHECK(l.need == need && so == send_off && ro == recv_off, "%s: area %zu B, send image at "
          "%ld, recv image at %ld; want %zu, %ld, %ld (-1: none)", what, l.need, so, ro, need,
          send_off, recv_off);
    check_layout(s, sb, r, db);
}

static void test_layout(void)
{
    /* the in-place forms (gcoll.h), P = 4 ranks, blocks of 64 B */
    expect_layout("allreduce in place", 0, 256, 0, 256, 256, 0, 0);
    expect_layout("bcast (buf is both)", 128, 256, 128, 256, 256, 0, 0);
    for (int rank = 0; rank < 4; rank++) {
        char what[64];
        snprintf(what, sizeof(what), "allgather in place, rank %d", rank);
        expect_layout(what, 64L * rank, 64, 0, 256, 256, 64L * rank, 0);
        snprintf(what, sizeof(what), "reduce_scatter in place, rank %d", rank);
        expect_layout(what, 0, 256, 64L * rank, 64, 256, 0, 64L * rank);
    }
    /* apart: recv image first, then send */
    expect_layout("allreduce out of place", 0, 256, 1024, 256, 512, 256, 0);
    expect_layout("allreduce, recv before send", 1024, 256, 0, 256, 512, 256, 0);
    expect_layout("allgather out of place", 2048, 64, 0, 256, 320, 256, 0);
    expect_layout("reduce on a non-root (recvbuf NULL)", 0, 256, -1, 0, 256, 0, -1);
    expect_layout("count 0", -1, 0, -1, 0, 0, -1, -1);
    check_layout(0, 256, -1, 256);   /* a non-root's reduce as validate() sizes it */

    /* every pair of buffers on a grid, adjacent, overlapping and contained */
    static const long offs[] = { -1, 0, 1, 63, 64, 100, 128, 255, 256, 512 };
    static const size_t sizes[] = { 0, 1, 16, 64, 100, 128, 256, 257 };
    for (size_t a = 0; a < sizeof(offs) / sizeof(offs[0]); a++)
        for (size_t b = 0; b < sizeof(sizes) / sizeof(sizes[0]); b++)
            for (size_t c = 0; c < sizeof(offs) / sizeof(offs[0]); c++)
                for (size_t d = 0; d < sizeof(sizes) / sizeof(sizes[0]); d++)
                    check_layout(offs[a], offs[a] < 0 ? 0 : sizes[b], offs[c],
                                 offs[c] < 0 ? 0 : sizes[d]);
}

int main(void)
{
    test_slices();
    test_layout();
    printf("test_cuda_host: %ld checks, %ld failures\n", checks, failures);
    return failures ? 1 : 0;
}
