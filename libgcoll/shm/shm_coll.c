/* SPDX-License-Identifier: BSD-3-Clause */
/* Intra-node collectives on the shared segment (layout and the step rule in
 * shm_int.h: in phase g write own parity-g buffers, read parity g-1 ones).
 *
 * Allreduce, large (the heart; P ranks, n chunks of P slices each):
 *
 *   phase t:  reduce(t-1)    own slice of chunk t-1: src (own) op slot[me]
 *                            of every peer -> own res, then -> own dst
 *             copy-out(t-2)  every peer's res (slice of chunk t-2) -> dst
 *             copy-in(t)     src's slices of chunk t that peers reduce ->
 *                            own slot[j]
 *             step           (not after the last phase)
 *
 *     phase   0      1      2      ...   n      n+1
 *     in      c0     c1     c2           -      -
 *     reduce  -      c0     c1           c(n-1) -
 *     out     -      -      c0           c(n-2) c(n-1)
 *
 *   n + 1 steps.  Per rank and byte of the vector, (P-1)/P is copied in,
 *   1/P reduced (P reads, 2 writes), (P-1)/P copied out: the private
 *   buffers are read and written once each, everything else stays in
 *   cache because a chunk's shared working set (2 parities x (P + 1)
 *   slices per rank) is a few MiB.  Cost ~ (n + 1) alpha + 3 bytes beta.
 *
 * Allreduce, small (<= shm_small_max(): 16 KiB, or 128 KiB / P where that is
 * more): copy src to own slot (in the
 * flag's own cache line up to 56 bytes), one step, every rank reduces all P
 * inputs itself: one synchronisation instead of two.
 *
 * reduce: the large allreduce without the copy-out on non-roots (small:
 * only the root reduces, its inputs queued in the ring of shm_ring.c, as
 * are bcasts up to 32 KiB).  reduce_scatter: phase t copies in sub-chunk t of
 * every block others own and reduces sub-chunk t-1 of the own block straight
 * into dst.  allgather / bcast: phase t copies in chunk t, copies out chunk
 * t-1 of the others' (the root's) buffer.
 *
 * Every element is reduced in rank order (in[0] op in[1] op ...), by one rank
 * or identically by all, so all ranks hold bitwise equal results.
 *
 * Sizes (2 ranks: 256 KiB slices, see GCOLL_SHM_AREA in shm_int.h): the
 * chunk's shared working set (3 MiB over both ranks) fits the L2 + L3 of
 * every machine we target, while 64 MiB still takes only 130 steps of
 * ~0.2 us.  GCOLL_SHM_SMALL: below 16 KiB a second step costs more than
 * having every rank reduce everything.  GCOLL_SHM_NT_MIN: results of 16 MiB
 * and more are streamed.  At 16 MiB two ranks' buffers are 64 MiB, beyond
 * what the caches of the development VM keep (its copy rate falls from
 * 35 GB/s to 11 GB/s past 1 MiB): measured there, streaming made the 16 MiB
 * allreduce 10-15% faster (3.8-3.9 ms vs 4.4-4.9 ms, interleaved runs) and
 * was mixed at 4-8 MiB.  Tried and dropped on the same machine: 64 KiB or
 * 1 MiB slices instead of 256 KiB, streaming stores into the shared slots,
 * an L1 accumulator streamed to both res and dst, CLDEMOTE of the slots
 * after writing them (2x slower), and CMA (process_vm_readv/writev) single
 * copy: its kernel copies ran at ~4 GB/s there (docs/design.md).  Large
 * reduces take CMA (shm_cma.c) or this pipeline, the root's measured choice
 * per call ("the reduce's form" below); allgathers and bcasts no longer do: with
 * the window places the copying forms beat it on the Zen 4 guest in both
 * of its states (docs/design.md, "Single copy by CMA").  The allgather's and the
 * bcast's copy-outs stream results from GCOLL_SHM_NT_MIN, as the allreduce
 * does (Zen 4 guest: allgather 8-32 MiB blocks 1.1-1.3x, bcast 16-64 MiB
 * 1.4-2x faster).
 */
#include <string.h>
#if defined(__x86_64__)
#include <emmintrin.h>
#endif
#include "base/clock.h"
#include "base/copy.h"
#include "shm/shm_int.h"
#include "shm/shm_cma.h"
#include "shm/shm_zcopy.h"
#include "algos/peers.h"
#include "base/reduce.h"
#include "base/status.h"
#include "base/coll_kind.h"
#include "base/config.h"

#define GCOLL_SHM_SMALL (16u << 10)   /* one-step allreduce at least this far */
#define GCOLL_SHM_SMALL_WORK (256u << 10) /* ... and while P * bytes stays below this */
#define GCOLL_SHM_NT_MIN (16u << 20)  /* results this large bypass the caches */

typedef struct { size_t off, len; } shm_seg_t;

static size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }
static size_t ceil_div(size_t a, size_t b) { return (a + b - 1) / b; }

/* ---- copies into the caller's buffers ----------------------------------- */

/* A copy through the cache into the segment first takes each line from
 * the peer that read it last, and memcpy's stores wait in the store buffer
 * for those transfers nearly one by one; prefetchw of every line first
 * sends the requests together.  Intel Xeon guest, 2 ranks, peer harness,
 * 4 alternated launches, µs: allreduce 2 KiB 0.738 -> 0.630, 4 KiB 1.15 ->
 * 1.00, 8 KiB 1.59 -> 1.47; allgather 2 KiB 0.774 -> 0.691 (Intel MPI
 * 0.66), 4 KiB 1.10 -> 1.03, 32 KiB 3.80 -> 3.63; reduce_scatter 2 KiB
 * 0.842 -> 0.647, 4 KiB 0.99 -> 0.90.  From 64 KiB it made calls slower
 * (allgather 64 KiB 5.25 -> 5.58, allreduce 1 MiB 109 -> 123, bcast 64
 * KiB 3.67 -> 5.09): more requests than the core can hold stall the copy
 * itself.  Below 1 KiB within the noise. */
#define SHM_TAKE_MIN 1024
#define SHM_TAKE_MAX (32u << 10)

/* gcoll_copy, or with stream (non-temporal) stores when nt is set: for results
 * far larger than the caches, plain stores first read each destination line
 * from memory (read for ownership) only to overwrite it, a third of the
 * memory traffic of a large allreduce; streaming stores skip that read.
 * They write whole 64-byte lines from the first line boundary of dst: a
 * malloc'd buffer starts 16 bytes into a page, and four 16-byte streaming
 * stores that straddle two lines leave two partial write-combining buffers
 * each, which the CPU writes out piecemeal (the allreduce of a 1 MiB
 * malloc'd buffer took 1.5-1.7x as long as that of a page-aligned one).
 * Used by the zero-copy path too (shm_zcopy.c). */
void gcoll_shm_copy(void *dst, const void *src, size_t bytes, int nt)
{
#if defined(__x86_64__)
    unsigned char *d = dst;
    const unsigned char *s = src;
    if (!nt || bytes < GCOLL_SHM_COPY_NT_MIN) {
        if (bytes >= SHM_TAKE_MIN && bytes <= SHM_TAKE_MAX) gcoll_shm_take_lines(dst, bytes);
        gcoll_copy(dst, src, bytes);
        return;
    }
    size_t head = (size_t)(-(uintptr_t)d & 63);
    memcpy(d, s, head);
    d += head, s += head, bytes -= head;
    for (; bytes >= 64; d += 64, s += 64, bytes -= 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)s), b = _mm_loadu_si128((const __m128i *)(s + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(s + 32)), e = _mm_loadu_si128((const __m128i *)(s + 48));
        _mm_stream_si128((__m128i *)d, a);
        _mm_stream_si128((__m128i *)(d + 16), b);
        _mm_stream_si128((__m128i *)(d + 32), c);
        _mm_stream_si128((__m128i *)(d + 48), e);
    }
    memcpy(d, s, bytes);
#else
    (void)nt;
    gcoll_copy(dst, src, bytes);
#endif
}
/* Streaming stores are weakly ordered: fence them before the call returns. */
void gcoll_shm_copy_done(int nt)
{
#if defined(__x86_64__)
    if (nt) _mm_sfence();
#else
    (void)nt;
#endif
}

/* ---- where an op puts its data ------------------------------------------
 * A writer's store to a line that a peer still holds (read by it last
 * time) first invalidates the peer's copy, a round trip between cores;
 * once the peer's cache has dropped the line, the store costs nothing
 * extra.  Ops that used the same bytes of each area on every call paid
 * that on every line: measured on a Zen 4 guest, 2 threads handing 64 KiB
 * back and forth through one buffer took 9 us one way, through a pool of
 * 1, 2 and 4 MiB 4.0, 3.1 and 2.8 us (Intel MPI's PingPong: 2.6 us; its
 * cells rotate).  So an op smaller than the window takes the next place
 * of its size each time it uses a parity: place (g >> 1) mod places for
 * the data of phase g.  The writer (phase g = step + 1) and the readers
 * (phase g + 1, step = g) compute the same place, and the step rule holds
 * as before: a parity's window is written only while nobody reads it,
 * wherever in it.  Same guest, 2 ranks, --algo shm, alternated launches:
 * 8 KiB-256 KiB 1.8-2.4x faster, 512 KiB-1 MiB 1.2-1.6x, with windows of
 * 2 MiB per parity; 1 MiB windows helped only to 128 KiB, 4 MiB ones no
 * more than 2 MiB.  Below 8 KiB (a few dozen lines) a new page per call
 * cost more than it saved (4 KiB: 0.65-0.86 us against 0.59-0.73). */
#define SHM_PLACE_MIN (8u << 10)

/* The op in progress puts its data in spans of span bytes (slots stride
 * apart), and may touch extent bytes from a place's start (scratch after
 * or over the data). */
static void shm_place(gcoll_shm_t *shm, size_t stride, size_t span, size_t extent)
{
    size_t unit = (span + 4095) / 4096 * 4096;   /* places page aligned, as callers' buffers */
    if (extent < span) extent = span;
    shm->place.stride = stride ? stride : shm->slice;
    shm->place.unit   = unit;
    shm->place.places = span >= SHM_PLACE_MIN && extent <= shm->window
                      ? (shm->window - extent) / unit + 1 : 1;
}

/* ---- argument checks (identical on every rank, so all fail alike) ------- */

static gcoll_status_t shm_check(const gcoll_shm_t *shm, const char *fn)
{
    if (!shm) return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "%s: shm executor is NULL", fn);
    if (shm->broken)
        return GCOLL_ERROR(GCOLL_ERR_TRANSPORT,
                           "%s: an earlier shared-memory wait timed out; the node's ranks are "
                           "out of step", fn);
    return GCOLL_SUCCESS;
}

static gcoll_status_t shm_check_reduce(const gcoll_shm_t *shm, const char *fn,
                                       gcoll_dtype_t dtype, gcoll_op_t op)
{
    GCOLL_TRY(shm_check(shm, fn));
    if ((unsigned)dtype >= GCOLL_DTYPE_COUNT)
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "%s: unknown dtype %d", fn, (int)dtype);
    if ((unsigned)op > GCOLL_MAX)
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "%s: op %d is not sum, prod, min or max", fn,
                           (int)op);
    return GCOLL_SUCCESS;
}

static gcoll_status_t shm_check_root(const gcoll_shm_t *shm, const char *fn, int root)
{
    if (root < 0 || root >= shm->size)
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "%s: root %d is outside [0, %d)", fn, root,
                           shm->size);
    return GCOLL_SUCCESS;
}

/* ---- reduction of P inputs in rank order --------------------------------- */

#define FOLD_NT_COPY 1   /* stream the copy (gcoll_shm_copy's nt) */
#define FOLD_NT_OUT  2   /* stream out as well (needs scratch) */

/* out = in[0] op in[1] op ... op in[n-1] over count elements, and the same
 * into copy unless it is NULL (streaming stores as nt says).  out may equal in[0] or in[1] (the reduce
 * kernel allows that); if it equals a later input, which the first pass
 * would overwrite, accumulate in scratch (>= one block) instead.  The work
 * goes in blocks small enough for L1, so the n - 1 passes over the
 * accumulator and the copy read it from L1, not from L2 or memory. */
static void shm_fold(const gcoll_shm_t *shm, void *out, void *copy, int nt, const void *const *in,
                     int n, size_t count, gcoll_dtype_t dtype, gcoll_op_t op, void *scratch)
{
    size_t dts = gcoll_dtype_size(dtype);
    if (n == 2 && !copy) {   /* one pass: nothing to keep in L1 */
        gcoll_reduce_host(out, in[0], in[1], count, dtype, op);
        return;
    }
    int alias = (nt & FOLD_NT_OUT) != 0;   /* streamed out: accumulate in L1 scratch */
    for (int k = 2; k < n; k++) alias |= in[k] == out;
    size_t blk = min_sz(GCOLL_SHM_FOLD_BLOCK, shm->slice) / dts;
    for (size_t o = 0; o < count; o += blk) {
        size_t m = min_sz(blk, count - o), b = o * dts;
        unsigned char *acc = alias ? scratch : (unsigned char *)out + b;
        if (n == 1) {
            const unsigned char *x = (const unsigned char *)in[0] + b;
            if (acc != x) gcoll_copy(acc, x, m * dts);
        } else {
            gcoll_reduce_host(acc, (const unsigned char *)in[0] + b,
                              (const unsigned char *)in[1] + b, m, dtype, op);
        }
        for (int k = 2; k < n; k++)
            gcoll_reduce_host(acc, acc, (const unsigned char *)in[k] + b, m, dtype, op);
        if (alias) gcoll_shm_copy((unsigned char *)out + b, acc, m * dts, nt & FOLD_NT_OUT);
        if (copy) gcoll_shm_copy((unsigned char *)copy + b, acc, m * dts, nt & FOLD_NT_COPY);
    }
}

void gcoll_shm_fold_inputs(const gcoll_shm_t *shm, void *out, const void *const *in, int n,
                           size_t count, gcoll_dtype_t dtype, gcoll_op_t op, void *scratch)
{
    shm_fold(shm, out, NULL, 0, in, n, count, dtype, op, scratch);
}

/* ---- allreduce and reduce ---------------------------------------------- */

/* Slice j of chunk i: chunks of P * slice bytes; inside a chunk, slices of
 * equal length rounded up to 64 bytes (so ranks never write the same cache
 * line), the last ones shorter or empty.  Elements. */
static shm_seg_t shm_ar_seg(const gcoll_shm_t *shm, size_t count, size_t dts, size_t i, int j)
{
    size_t slice = shm->slice / dts, unit = 64 / dts;
    size_t cs = i * slice * (size_t)shm->size, clen = min_sz(slice * (size_t)shm->size, count - cs);
    size_t sl = ceil_div(ceil_div(clen, (size_t)shm->size), unit) * unit;
    size_t o = min_sz((size_t)j * sl, clen), e = min_sz(o + sl, clen);
    return (shm_seg_t){ cs + o, e - o };
}

/* Where rank k keeps its input for the slice that rank j reduces, and where
 * rank k puts the slice it reduced. */
static unsigned char *shm_slot(const gcoll_shm_t *shm, int k, int p, int j)
{
    return gcoll_shm_area(shm, k, p) + (size_t)j * shm->place.stride;
}

static unsigned char *shm_res(const gcoll_shm_t *shm, int k, int p)
{
    return gcoll_shm_area(shm, k, p) + (size_t)shm->size * shm->place.stride;
}

typedef struct {
    const unsigned char *src;
    unsigned char       *dst;      /* NULL: this rank does not want the result */
    size_t               count, dts;
    gcoll_dtype_t        dtype;
    gcoll_op_t           op;
    int                  nt;       /* stream the result into dst */
    int                  stream;   /* stream the reduced slice into res */
} shm_red_args_t;

/* Phase work: reduce own slice of chunk i into res (and dst).  Streamed
 * (see "Writing the reduced slice" below): accumulate in dst, stream res. */
static void shm_ar_reduce(gcoll_shm_t *shm, const shm_red_args_t *a, size_t i)
{
    static _Thread_local unsigned char scratch[GCOLL_SHM_FOLD_BLOCK] __attribute__((aligned(64)));
    const void *in[shm->size];
    int me = shm->rank, rp = gcoll_shm_rpar(shm);
    shm_seg_t s = shm_ar_seg(shm, a->count, a->dts, i, me);
    if (!s.len) return;
    for (int k = 0; k < shm->size; k++)
        in[k] = k == me ? a->src + s.off * a->dts : shm_slot(shm, k, rp, me);
    unsigned char *res = shm_res(shm, me, gcoll_shm_wpar(shm));
    if (a->stream && a->dst) {   /* a reduce's non-root streams its inputs only */
        shm_fold(shm, a->dst + s.off * a->dts, res, FOLD_NT_COPY | (a->nt ? FOLD_NT_OUT : 0), in,
                 shm->size, s.len, a->dtype, a->op, scratch);
        gcoll_shm_copy_done(1);   /* before the step publishes res */
        return;
    }
    shm_fold(shm, res, a->dst ? a->dst + s.off * a->dts : NULL, a->nt ? FOLD_NT_COPY : 0, in,
             shm->size, s.len, a->dtype, a->op, NULL);
}

static void shm_ar_copy_out(gcoll_shm_t *shm, const shm_red_args_t *a, size_t i)
{
    int rp = gcoll_shm_rpar(shm);
    for (int j = 0; j < shm->size; j++) {
        shm_seg_t s = shm_ar_seg(shm, a->count, a->dts, i, j);
        if (j != shm->rank && s.len)
            gcoll_shm_copy(a->dst + s.off * a->dts, shm_res(shm, j, rp), s.len * a->dts, a->nt);
    }
}

static void shm_ar_copy_in(gcoll_shm_t *shm, const shm_red_args_t *a, size_t i)
{
    int wp = gcoll_shm_wpar(shm);
    for (int j = 0; j < shm->size; j++) {
        shm_seg_t s = shm_ar_seg(shm, a->count, a->dts, i, j);
        if (j != shm->rank && s.len)
            gcoll_shm_copy(shm_slot(shm, shm->rank, wp, j), a->src + s.off * a->dts,
                           s.len * a->dts, a->stream);
    }
    gcoll_shm_copy_done(a->stream);   /* before the step publishes the slots */
}

/* The one-step form costs every rank P * bytes of reduction, the pipeline
 * one step more and two extra copies: measured at 2 ranks (bench, median of
 * interleaved runs), one step still wins at 64 KiB (12-13 us vs 15-19 us). */
static size_t shm_small_max(const gcoll_shm_t *shm)
{
    size_t by_work = GCOLL_SHM_SMALL_WORK / (size_t)shm->size;
    return by_work > GCOLL_SHM_SMALL ? by_work : GCOLL_SHM_SMALL;
}

/* Every rank that wants the result reduces all published inputs itself. */
static void shm_ar_small_fold(gcoll_shm_t *shm, const shm_red_args_t *a, int tiny)
{
    const void *in[shm->size];
    int me = shm->rank, rp = gcoll_shm_rpar(shm);
    for (int k = 0; k < shm->size; k++)
        in[k] = k == me ? (const void *)a->src
                : tiny  ? (const void *)gcoll_shm_inline(shm, k, rp)
                        : (const void *)gcoll_shm_area(shm, k, rp);
    /* Scratch for an in-place fold: own area of the new write parity. */
    shm_fold(shm, a->dst, NULL, 0, in, shm->size, a->count, a->dtype, a->op,
             gcoll_shm_area(shm, me, gcoll_shm_wpar(shm)));
}

/* ---- reduce_scatter ------------------------------------------------------ */

/* Sub-chunk i of block j of the NCCL-style partition (elements). */
static shm_seg_t shm_blk_seg(size_t count, int size, int j, size_t sub, size_t i)
{
    size_t len = gcoll_block_len(count, size, j), o = min_sz(i * sub, len);
    return (shm_seg_t){ gcoll_block_off(count, size, j) + o, min_sz(sub, len - o) };
}

/* Where rank k's input for block j goes in phase parity p: slots of stride
 * bytes in its area, or in its inline line when they all fit there. */
typedef struct {
    size_t sub;      /* elements per sub-chunk */
    size_t stride;   /* bytes between the slots of two blocks */
    int    tiny;     /* slots live in the flag's line */
} shm_rs_plan_t;

static unsigned char *shm_rs_slot(const gcoll_shm_t *shm, const shm_rs_plan_t *pl, int k, int p,
                                  int j)
{
    unsigned char *base = pl->tiny ? gcoll_shm_inline(shm, k, p) : gcoll_shm_area(shm, k, p);
    return base + (size_t)j * pl->stride;
}

static void shm_rs_reduce(gcoll_shm_t *shm, const shm_rs_plan_t *pl, const shm_red_args_t *a,
                          size_t i)
{
    const void *in[shm->size];
    int me = shm->rank, rp = gcoll_shm_rpar(shm);
    shm_seg_t s = shm_blk_seg(a->count, shm->size, me, pl->sub, i);
    if (!s.len) return;
    for (int k = 0; k < shm->size; k++)
        in[k] = k == me ? a->src + s.off * a->dts : shm_rs_slot(shm, pl, k, rp, me);
    size_t own = gcoll_block_off(a->count, shm->size, me);
    shm_fold(shm, a->dst + (s.off - own) * a->dts, NULL, 0, in, shm->size, s.len, a->dtype, a->op,
             shm_res(shm, me, gcoll_shm_wpar(shm)));
}

static void shm_rs_copy_in(gcoll_shm_t *shm, const shm_rs_plan_t *pl, const shm_red_args_t *a,
                           size_t i)
{
    int wp = gcoll_shm_wpar(shm);
    for (int j = 0; j < shm->size; j++) {
        shm_seg_t s = shm_blk_seg(a->count, shm->size, j, pl->sub, i);
        if (j != shm->rank && s.len)
            gcoll_shm_copy(shm_rs_slot(shm, pl, shm->rank, wp, j), a->src + s.off * a->dts,
                           s.len * a->dts, a->stream);
    }
    gcoll_shm_copy_done(a->stream);   /* before the step publishes the slots */
}

/* ---- allgather and bcast -------------------------------------------------- */

/* One flat buffer per rank and parity: inline when the whole message fits. */
static unsigned char *shm_flat(const gcoll_shm_t *shm, int tiny, int k, int p)
{
    return tiny ? gcoll_shm_inline(shm, k, p) : gcoll_shm_area(shm, k, p);
}

/* Copy out sub-chunk i of every other rank's block from its flat buffer. */
static void shm_ag_copy_out(gcoll_shm_t *shm, unsigned char *dst, size_t count, size_t dts,
                            size_t sub, int tiny, size_t i, int nt)
{
    int rp = gcoll_shm_rpar(shm);
    for (int j = 0; j < shm->size; j++) {
        size_t len = gcoll_block_len(count, shm->size, j) * dts, o = i * sub;
        if (j != shm->rank && o < len)
            gcoll_shm_copy(dst + gcoll_block_off(count, shm->size, j) * dts + o,
                           shm_flat(shm, tiny, j, rp), min_sz(sub, len - o), nt);
    }
}

/* ---- writing the reduced slice ------------------------------------------
 * A reducer writes its slice of the result twice: into its own dst, and
 * into res for the peers to copy out.  Through the cache, res stays in this
 * core's cache until the peers read it, each line first read for ownership
 * from wherever the peers' copies of the previous call are; streamed
 * (non-temporal stores), it goes to memory without that read, and the peers
 * fetch it from there.  Which is faster depends on where the ranks run
 * relative to each other, and so can change while a job runs (a hypervisor
 * moving virtual CPUs, an unpinned job migrating).  Measured on the
 * development VM, 2 ranks, 512 KiB-16 MiB, in its two states (8 B latency
 * 0.14 us and 0.35 us): through the cache 1.4x faster in the first,
 * streaming 1.5x faster in the second.  So each rank times both ways as
 * it runs, per size class (shm_adapt.h says how).  All ranks make the
 * same calls, so they try the same calls together and measure the switch
 * they would make together; a rank-local choice needs no agreement (readers
 * find res where they always do).
 *
 * The way covers every write of an allreduce that the peers read: res, and
 * the copy of the inputs into the slots (pipeline) or the area (one step,
 * from GCOLL_SHM_STREAM_IN_MIN).  In the VM's slow state the peers' reads of
 * lines still modified in this core's cache cost 450-610 ns each (a
 * ping-pong across core complexes), against 130-190 ns in the fast state;
 * from memory they stream.  Measured 2026-12-03, 2 ranks, --algo shm, 6
 * alternated launches each way: inputs copied through the cache ran in
 * either state (64 KiB 13 or 25-31 us, 1 MiB 111-117 or 300-310 us),
 * streamed in one steady band (64 KiB 15-19 us, 1 MiB 160-205 us): 1.3-1.6x
 * slower than the fast state, 1.5-1.9x faster than the slow one.  The
 * allgather's and reduce_scatter's copies into the segment choose the same
 * way, each with its own costs: their launches fell in two bands too
 * (2 ranks, allgather of 512 KiB blocks: 41-53 us or 265-339 us, 1 in 6
 * launches, memcpy 77% of the time in both).  From 8 KiB since
 * 2026-12-06 (16 KiB before): on a Zen 4 guest with the same two states,
 * the one-step 8 KiB allreduce took 3.9-4.5 us in the slow one against
 * 1.7-1.8 us streamed, 16 KiB 6.7-7.0 against 2.9; level in the fast one
 * (0.67-0.79 us at 8 KiB; peer harness, 4 alternated launches).  Not from
 * 4 KiB: a call of 1 us is mostly the wait for the peer, the running means
 * followed that noise, and the default's 4 KiB allreduce settled on the
 * slower way, 1.9x the same algorithm forced in the same launch
 * (check_selection.sh, 7 launches). */

/* A bcast root's, an allgather's and a reduce_scatter's copy-in have the
 * same choice as a reducer's slice: the readers copy the chunk out of this
 * core's cache, or out of memory; so do a reduce's non-roots, whose way
 * the root learns.  Each learns its own (the costs per byte differ). */
static gcoll_shm_adapt_t *shm_adapt_of(gcoll_shm_t *shm, const gcoll_shm_op_t *o)
{
    switch (o->coll) {
    case GCOLL_COLL_BCAST:          return &shm->adapt_bcast[o->cls];
    case GCOLL_COLL_ALLGATHER:      return &shm->adapt_ag[o->cls];
    case GCOLL_COLL_REDUCE_SCATTER: return &shm->adapt_rs[o->cls];
    case GCOLL_COLL_REDUCE:         return &shm->adapt_rw[o->cls];
    default:                        return &shm->adapt[o->cls];
    }
}

/* A reduce's non-roots write the inputs that its root reads, and leave
 * before the root has read them: their own time does not show what their
 * way costs, the root's does.  So the root times the way per size class
 * and writes it in its control block for the non-roots, which take it at
 * their next call of the class (a hint: either way is correct).  In the
 * step forms the non-roots, at most one call ahead, take the root's way
 * of this call or the last, so a try's second, timed, call always has it;
 * ring writers run further ahead (shm_ring.c says what that costs).
 * 2 ranks, 128 KiB reduce, non-roots' inputs streamed against through the
 * cache: 16.2 against 5.1 us in the Zen 4 guest's slow state, 14.2
 * against 28.0 in its busy one (docs/PERFORMANCE.md). */
void gcoll_shm_way_pick(gcoll_shm_t *shm, gcoll_shm_op_t *o)
{
    if (shm->cfg->shm_stream != GCOLL_SHM_STREAM_AUTO) {   /* the user decided */
        o->stream = shm->cfg->shm_stream == GCOLL_SHM_STREAM_ON;
        return;
    }
    int cls = gcoll_shm_adapt_class(o->bytes);
    if (!o->dst) {   /* a reduce's non-root: the root's way (a reduce_scatter rank without
                      * a block, the only other op without dst, never gets here: all its
                      * blocks are under 8 KiB) */
        if (o->coll == GCOLL_COLL_REDUCE)
            o->stream = atomic_load_explicit(&shm->ctrl[o->root].reduce_way[cls],
                                             memory_order_relaxed);
        return;
    }
    o->cls = (uint8_t)cls;   /* which learner: shm_adapt_of */
    gcoll_shm_adapt_t *a = shm_adapt_of(shm, o);
    gcoll_shm_adapt_count(a, cls);
    o->stream = (uint8_t)gcoll_shm_adapt_way(a);
    if (o->coll == GCOLL_COLL_REDUCE) {   /* the root, for its non-roots: stored when it
                                           * changes, so its line stays shared meanwhile */
        _Atomic uint8_t *hint = &shm->ctrl[shm->rank].reduce_way[cls];
        if (atomic_load_explicit(hint, memory_order_relaxed) != o->stream)
            atomic_store_explicit(hint, o->stream, memory_order_relaxed);
    }
    if (!gcoll_shm_adapt_timed(a)) o->cls = 0;   /* nonzero: the op learns at its end */
    else o->t0 = gcoll_clock_now();
}

/* An op that went `way` took the time since t0: learn its ns per byte. */
static void shm_adapt_record(gcoll_shm_adapt_t *a, int way, double t0, size_t bytes)
{
    gcoll_shm_adapt_record(a, way, gcoll_shm_ns_per_byte(t0, bytes));
}

void gcoll_shm_way_learn(gcoll_shm_t *shm, const gcoll_shm_op_t *o)
{
    if (o->cls) shm_adapt_record(shm_adapt_of(shm, o), o->stream, o->t0, o->bytes);
}

/* ---- the reduce's form ----------------------------------------------------
 * A large reduce reads the peers' inputs by CMA (one copy, shm_cma.c) or
 * copies them through the segment (the pipeline).  Which is faster depends
 * on the machine and, on a guest, on the moment: on the Zen 4 guest the
 * copy was 1.7x faster while its vCPUs shared an L3 and 1.7x again while
 * they did not (2 ranks, 512 KiB: 31 against 54 us), yet 3.7x slower in a
 * state met a day before; on the Xeon guest the single copy was 1.7x
 * faster (docs/PERFORMANCE.md).  So with GCOLL_SHM_CMA=auto the root of
 * each call times it and learns per size class, as the write way is
 * learnt (shm_adapt_record), and the ranks agree on each call's form
 * through the segment: at the start of large reduce q every rank writes in
 * its ctrl the form it wants for a reduce it would root as number q + 1
 * (slot (q + 1) & 1), and every rank takes the root's slot q & 1.  Safe
 * without a step of its own: the root wrote slot q & 1 at the start of
 * reduce q - 1, before signalling that reduce's first step, which every
 * rank waited for before starting reduce q (a rank leaves early only at
 * the last step, and both forms have two or more); it rewrites the slot
 * at the start of reduce q + 1, after reduce q's first step, which no
 * rank signals before reading it. */
enum { SHM_WAY_CMA = 0, SHM_WAY_COPY = 1 };

/* My wishes for large reduce q, every size class: the way in use, or the
 * other one where my next call as root of that class is a try. */
static void shm_reduce_publish(gcoll_shm_t *shm, uint64_t q)
{
    uint8_t *slot = shm->ctrl[shm->rank].reduce_form[q & 1];
    for (int c = 0; c < GCOLL_SHM_ADAPT_CLASSES; c++) {
        const gcoll_shm_adapt_t *a = &shm->adapt_reduce[c];
        slot[c] = (uint8_t)((a->stream ^ gcoll_shm_adapt_due(a, a->calls + 1)) + 1);
    }
}

/* Whether this large reduce takes the single copy: always with
 * GCOLL_SHM_CMA=on, the root's wish with auto (the root times the call). */
static int shm_reduce_takes_cma(gcoll_shm_t *shm, gcoll_shm_op_t *o)
{
    if (shm->cfg->shm_cma != GCOLL_SHM_CMA_AUTO) return 1;
    uint64_t q = shm->reduce_seq++;
    int cls = gcoll_shm_adapt_class(o->bytes);
    int wish = shm->ctrl[o->root].reduce_form[q & 1][cls];
    int way = wish ? wish - 1 : SHM_WAY_CMA;
    shm_reduce_publish(shm, q + 1);
    if (shm->rank == o->root) {
        gcoll_shm_adapt_count(&shm->adapt_reduce[cls], cls);
        o->form_cls = (uint8_t)cls;
        o->form_way = (uint8_t)way;
        o->t0 = gcoll_clock_now();
    }
    if (way == SHM_WAY_COPY) shm->reduce_copies++;
    return way == SHM_WAY_CMA;
}

static void shm_reduce_learn(gcoll_shm_t *shm, const gcoll_shm_op_t *o)
{
    if (o->form_cls)
        shm_adapt_record(&shm->adapt_reduce[o->form_cls], o->form_way, o->t0, o->bytes);
}

/* ---- the phase loops ------------------------------------------------------
 * Every collective is "for t in 0..last: body(t); step unless t == last";
 * gcoll_shm_op_progress() runs one phase of that loop per call. */

enum {
    SHM_FORM_NONE = 0,   /* nothing to do (count 0, or one rank) */
    SHM_FORM_AR_SMALL,   /* allreduce / reduce, one step */
    SHM_FORM_AR_LARGE,   /* allreduce / reduce, the pipeline */
    SHM_FORM_RS,
    SHM_FORM_AG,
    SHM_FORM_BCAST,
    SHM_FORM_CMA,        /* reduce, allgather, bcast: single copy (shm_cma.c) */
    SHM_FORM_BARRIER,
    SHM_FORM_RING,       /* small bcast / reduce through the ring (shm_ring.c) */
    SHM_FORM_ZC          /* zero-copy negotiation, then its forms (shm_zcopy.c) */
};

static shm_red_args_t shm_op_args(const gcoll_shm_op_t *o)
{
    return (shm_red_args_t){ o->src, o->dst, o->count, o->dts, o->dtype, o->op, o->nt, o->stream };
}

static shm_rs_plan_t shm_op_plan(const gcoll_shm_op_t *o)
{
    return (shm_rs_plan_t){ o->sub, o->stride, o->tiny };
}

static void shm_body_ar_small(gcoll_shm_t *shm, const gcoll_shm_op_t *o)
{
    shm_red_args_t a = shm_op_args(o);
    int me = shm->rank, wp = gcoll_shm_wpar(shm);
    if (o->t == 0) {
        if (o->publish && o->tiny) {
            gcoll_copy(gcoll_shm_inline(shm, me, wp), o->src, o->bytes);
        } else if (o->publish) {   /* streamed where this rank measured it faster */
            gcoll_shm_copy(gcoll_shm_area(shm, me, wp), o->src, o->bytes, o->stream);
            gcoll_shm_copy_done(o->stream);   /* before the step publishes it */
        }
    } else if (a.dst) {
        shm_ar_small_fold(shm, &a, o->tiny);
    }
}

/* The pipeline of the table at the top of this file.  dst NULL (a
 * non-root of reduce) skips the copies into dst. */
static void shm_body_ar_large(gcoll_shm_t *shm, const gcoll_shm_op_t *o)
{
    shm_red_args_t a = shm_op_args(o);
    size_t t = o->t, n = o->n;
    if (t >= 1 && t <= n) shm_ar_reduce(shm, &a, t - 1);
    if (t >= 2 && a.dst) shm_ar_copy_out(shm, &a, t - 2);
    if (t < n) shm_ar_copy_in(shm, &a, t);
    if (t == o->last) gcoll_shm_copy_done(a.nt);
}

static void shm_body_rs(gcoll_shm_t *shm, const gcoll_shm_op_t *o)
{
    shm_red_args_t a = shm_op_args(o);
    shm_rs_plan_t pl = shm_op_plan(o);
    if (o->t >= 1) shm_rs_reduce(shm, &pl, &a, o->t - 1);
    if (o->t < o->n) shm_rs_copy_in(shm, &pl, &a, o->t);
}

static void shm_body_ag(gcoll_shm_t *shm, const gcoll_shm_op_t *o)
{
    size_t own_len = gcoll_block_len(o->count, shm->size, shm->rank) * o->dts;
    if (o->t >= 1) {
        shm_ag_copy_out(shm, o->dst, o->count, o->dts, o->sub, o->tiny, o->t - 1, o->nt);
        gcoll_shm_copy_done(o->nt);   /* the result complete when the call returns */
    }
    if (o->t < o->n) {
        size_t off = o->t * o->sub;
        if (off < own_len)
            gcoll_shm_copy(shm_flat(shm, o->tiny, shm->rank, gcoll_shm_wpar(shm)), o->src + off,
                           min_sz(o->sub, own_len - off), o->stream);
        gcoll_shm_copy_done(o->stream);   /* before the step publishes the chunk */
    }
}

static void shm_body_bcast(gcoll_shm_t *shm, const gcoll_shm_op_t *o)
{
    int me = shm->rank;
    if (o->t >= 1 && me != o->root) {
        size_t off = (o->t - 1) * o->sub;
        gcoll_shm_copy(o->dst + off, shm_flat(shm, o->tiny, o->root, gcoll_shm_rpar(shm)),
                       min_sz(o->sub, o->bytes - off), o->nt);
        gcoll_shm_copy_done(o->nt);   /* the result complete when the call returns */
    }
    if (o->t < o->n && me == o->root) {
        size_t off = o->t * o->sub;
        gcoll_shm_copy(shm_flat(shm, o->tiny, o->root, gcoll_shm_wpar(shm)), o->dst + off,
                 min_sz(o->sub, o->bytes - off), o->stream);
        gcoll_shm_copy_done(o->stream);   /* before the step publishes the chunk */
    }
}

static void shm_body_zc(gcoll_shm_t *shm, gcoll_shm_op_t *o);

static void shm_body(gcoll_shm_t *shm, gcoll_shm_op_t *o)
{
    switch (o->form) {
    case SHM_FORM_AR_SMALL: shm_body_ar_small(shm, o); break;
    case SHM_FORM_AR_LARGE: shm_body_ar_large(shm, o); break;
    case SHM_FORM_RS:       shm_body_rs(shm, o); break;
    case SHM_FORM_AG:       shm_body_ag(shm, o); break;
    case SHM_FORM_BCAST:    shm_body_bcast(shm, o); break;
    case SHM_FORM_CMA:      gcoll_shm_cma_body(shm, o); break;
    case SHM_FORM_ZC:       shm_body_zc(shm, o); break;
    default:                break;
    }
}

/* Zero-copy buffers (shm_zcopy.h): the negotiation says when the copying
 * form's body runs in this phase too, and may hand the op back to it. */
static void shm_body_zc(gcoll_shm_t *shm, gcoll_shm_op_t *o)
{
    if (!gcoll_shm_zc_body(shm, o)) return;
    int form = o->form;   /* still SHM_FORM_ZC, or the copying form for good */
    o->form = o->zc_form;
    shm_body(shm, o);
    o->form = form;
}

/* A few phases per call at most: a progress pass holds the engine's lock,
 * and a whole 64 MiB allreduce would keep a post waiting for milliseconds;
 * small collectives (two phases) still finish in one call. */
#define SHM_PHASES_PER_CALL 2

/* Whether this rank has nothing left to do in the op's last phase: a bcast
 * root (it wrote its last chunk), a reduce non-root (its input is all in the
 * segment).  Such a rank leaves right after signalling the step before that
 * phase, without waiting for the others to signal it too; the segment keeps
 * that wait (shm->held) for the next op's first phase, whose writes need it.
 * So a root is never held up by the slowest reader, and back-to-back rooted
 * collectives overlap by one step, as MPI's eager messages let them.  Not
 * the barrier: waiting is all it does. */
static int shm_last_phase_idle(const gcoll_shm_t *shm, const gcoll_shm_op_t *o)
{
    switch (o->form) {
    case SHM_FORM_BCAST:    return shm->rank == o->root;
    case SHM_FORM_AR_SMALL:
    case SHM_FORM_AR_LARGE: return !o->dst;   /* a non-root of reduce */
    default:                return 0;
    }
}

/* An allgather's own block into its result, streamed where the result is
 * (o->nt): 2 ranks, 32 MiB blocks, 3 alternated launches, shm_cma 10.3-11.0
 * -> 8.3-9.9 ms, shm 9.6-10.0 -> 8.0-8.8 (16 MiB: shm_cma 3.5-4.1 ->
 * 3.4-3.5, shm level; 8 MiB level).  No peer waits for it, so
 * from SHM_AG_OWN_LATE per rank it is copied once this rank has signalled
 * its first step, while the peers' blocks are on their way, instead of
 * before the copy into the segment (made from src either way), which it
 * delayed.  Intel Xeon guest, 2 ranks, peer harness, 4 alternated
 * launches: 4 KiB blocks 1.38 -> 1.19 us, 8 KiB 1.85 -> 1.77, 16 KiB
 * 3.13 -> 2.34; but 2 KiB 0.82 -> 0.90, 1 KiB 0.53 -> 0.55, so smaller
 * blocks keep the copy first. */
#define SHM_AG_OWN_LATE (4u << 10)

static void shm_ag_own(const gcoll_shm_t *shm, const gcoll_shm_op_t *o)
{
    size_t own_len = gcoll_block_len(o->count, shm->size, shm->rank) * o->dts;
    unsigned char *own = o->dst + gcoll_block_off(o->count, shm->size, shm->rank) * o->dts;
    if (o->src == own || !own_len) return;
    if (!o->nt) {
        gcoll_copy(own, o->src, own_len);
        return;
    }
    gcoll_shm_copy(own, o->src, own_len, 1);
    gcoll_shm_copy_done(1);
}

/* Whether this allgather copies its own block after its first signal. */
static int shm_ag_own_late(const gcoll_shm_t *shm, const gcoll_shm_op_t *o)
{
    int single = o->form == SHM_FORM_CMA || (o->form == SHM_FORM_ZC && o->zc_form == SHM_FORM_CMA);
    return single || o->bytes / (size_t)shm->size >= SHM_AG_OWN_LATE;
}

static void shm_after_first_signal(const gcoll_shm_t *shm, const gcoll_shm_op_t *o)
{
    if (o->coll == GCOLL_COLL_ALLGATHER && shm_ag_own_late(shm, o)) shm_ag_own(shm, o);
}

gcoll_status_t gcoll_shm_op_progress(gcoll_shm_t *shm, gcoll_shm_op_t *o, int *done)
{
    *done = 0;
    if (o->form == SHM_FORM_RING) {   /* outside the step protocol */
        gcoll_shm_ring_progress(shm, o, done);
        return GCOLL_SUCCESS;
    }
    for (int phases = 0;; phases++) {
        if (o->waiting) {
            if (phases >= SHM_PHASES_PER_CALL || !gcoll_shm_all_arrived(shm)) return GCOLL_SUCCESS;
            o->waiting = 0;
            o->t++;
        }
        if (o->form == SHM_FORM_NONE) break;
        if (shm->held) {   /* the previous op left before its last step completed */
            if (!gcoll_shm_all_arrived(shm)) return GCOLL_SUCCESS;
            shm->held = 0;
        }
        shm_body(shm, o);
        if (o->t == o->last) break;
        gcoll_shm_signal(shm);
        if (o->t == 0) shm_after_first_signal(shm, o);
        if (o->t + 1 == o->last && shm_last_phase_idle(shm, o)) {
            shm->held = 1;
            break;
        }
        o->waiting = 1;
    }
    switch (o->form) {   /* the forms that choose (o->cls 0: this op did not) */
    case SHM_FORM_AR_LARGE: gcoll_shm_way_learn(shm, o); shm_reduce_learn(shm, o); break;
    case SHM_FORM_AR_SMALL: case SHM_FORM_BCAST:
    case SHM_FORM_AG:       case SHM_FORM_RS:       gcoll_shm_way_learn(shm, o); break;
    case SHM_FORM_CMA:      shm_reduce_learn(shm, o); break;
    default:                break;
    }
    *done = 1;
    if (o->failed)   /* every step taken: the peers do not wait for us */
        return GCOLL_ERROR(GCOLL_ERR_TRANSPORT, "shm: a single-copy collective could not read or "
                           "write a peer's buffer (process_vm_readv/writev; GCOLL_SHM_CMA=off "
                           "copies instead)");
    return GCOLL_SUCCESS;
}

int gcoll_shm_op_waits(const gcoll_shm_t *shm, const gcoll_shm_op_t *o)
{
    int ring = o->form == SHM_FORM_RING;
    return o->waiting || (shm->held && o->form != SHM_FORM_NONE && !ring);
}

/* Whether the op may move now (what it waits for has come). */
static int shm_op_ready(const gcoll_shm_t *shm, const gcoll_shm_op_t *o)
{
    return o->form == SHM_FORM_RING ? gcoll_shm_ring_ready(shm, &shm->ring_wait)
                                    : gcoll_shm_all_arrived(shm);
}

/* Where ranks outnumber CPUs, the waiter's hint (gcoll_shm_peer_here).
 * 4 ranks as 2 simulated nodes on 2 CPUs, each rank pinned, allreduce
 * 8 B (Intel Xeon guest): with a node's two ranks on one CPU, hier 4.9-5.2
 * -> 3.2-3.4 us and hier_leader 5.3 -> 2.9; with them on different CPUs
 * (the hint never fires) hier 1.8-1.9 -> 1.96-2.0.  Unbound, peer harness,
 * 3 alternated launches: 3 ranks on one node 8 B 1.96 -> 1.41 us (Open MPI
 * 4.1: 1.81), 32 KiB 11.4 -> 10.7; 4 ranks 8 B 2.16 -> 1.52 (Open MPI 4.1:
 * 3.31), 8 KiB 6.23 -> 5.63. */
#define SHM_SPIN_BEFORE_HINT 4

int gcoll_shm_op_spin(const gcoll_shm_t *shm, const gcoll_shm_op_t *o, int polls)
{
    if (!gcoll_shm_op_waits(shm, o)) return 1;
    for (int i = 0; i < polls; i++) {
        if (shm_op_ready(shm, o)) return 1;
        /* a late peer that last ran on this CPU runs again only once we
         * leave it: stop spinning (checked after a few polls, not before
         * the first: at once it cost 0.25 us of a 2 us call where the
         * peers run on other CPUs) */
        if (i == SHM_SPIN_BEFORE_HINT && gcoll_shm_peer_here(shm)) break;
        gcoll_shm_pause();
    }
    return shm_op_ready(shm, o);
}

/* ---- starting an op: argument checks and the shape of its loop ---------- */

static gcoll_status_t shm_start_reduce(gcoll_shm_t *shm, gcoll_shm_op_t *o, const char *fn,
                                       unsigned flags)
{
    int me = shm->rank, want = o->coll == GCOLL_COLL_ALLREDUCE || me == o->root;
    GCOLL_TRY(shm_check_reduce(shm, fn, o->dtype, o->op));
    if (o->coll == GCOLL_COLL_REDUCE) GCOLL_TRY(shm_check_root(shm, fn, o->root));
    if (!o->count) return GCOLL_SUCCESS;
    if (!o->src || (want && !o->dst)) return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "%s: NULL buffer", fn);
    if (!want) o->dst = NULL;
    if (shm->size == 1) {
        if (o->src != o->dst) gcoll_copy(o->dst, o->src, o->bytes);
        return GCOLL_SUCCESS;
    }
    if (o->coll == GCOLL_COLL_REDUCE && o->bytes <= shm_small_max(shm) &&
        o->bytes <= GCOLL_SHM_RING_SLOT) {
        o->form = SHM_FORM_RING;
        gcoll_shm_ring_start(shm, o);
        return GCOLL_SUCCESS;
    }
    int large_reduce = o->coll == GCOLL_COLL_REDUCE && gcoll_shm_cma_takes(shm, o->bytes);
    if (large_reduce && shm_reduce_takes_cma(shm, o)) {
        o->form = SHM_FORM_CMA;   /* every rank reduces its slice of the peers' inputs */
        size_t slice = gcoll_block_len(o->count, shm->size, 0) * o->dts;   /* a largest */
        o->last = gcoll_shm_cma_pieces(o->coll, slice) + 1;
        return GCOLL_SUCCESS;
    }
    if (!large_reduce && o->bytes <= shm_small_max(shm) && !(flags & GCOLL_SHM_SLICED)) {
        /* reduce: the root's own input is read from src, so it publishes nothing */
        o->form    = SHM_FORM_AR_SMALL;
        o->publish = o->coll == GCOLL_COLL_ALLREDUCE || me != o->root;
        o->tiny    = o->bytes <= GCOLL_SHM_INLINE;
        o->last    = 1;
        if (!o->tiny) shm_place(shm, 0, o->bytes, GCOLL_SHM_FOLD_BLOCK);   /* scratch: shm_ar_small_fold */
        if ((o->publish || o->dst) && o->bytes >= GCOLL_SHM_STREAM_IN_MIN) gcoll_shm_way_pick(shm, o);
        return GCOLL_SUCCESS;
    }
    o->form = SHM_FORM_AR_LARGE;
    o->nt   = o->bytes >= GCOLL_SHM_NT_MIN;
    o->n    = ceil_div(o->count, shm->slice / o->dts * (size_t)shm->size);
    o->last = o->n + 1;
    if (o->n == 1) {   /* one chunk: its slices packed (shm_ar_seg's longest, rounded) */
        size_t stride = shm_ar_seg(shm, o->count, o->dts, 0, 0).len * o->dts;
        stride = ceil_div(stride, 64) * 64;
        shm_place(shm, stride, (size_t)(shm->size + 1) * stride, 0);
    }
    gcoll_shm_way_pick(shm, o);
    return GCOLL_SUCCESS;
}

static gcoll_status_t shm_start_rs(gcoll_shm_t *shm, gcoll_shm_op_t *o)
{
    GCOLL_TRY(shm_check_reduce(shm, "gcoll_shm_reduce_scatter", o->dtype, o->op));
    if (!o->count) return GCOLL_SUCCESS;
    if (!o->src || (!o->dst && gcoll_block_len(o->count, shm->size, shm->rank)))
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "gcoll_shm_reduce_scatter: NULL buffer");
    size_t maxlen = gcoll_block_len(o->count, shm->size, 0);   /* block 0 is a longest */
    o->sub    = shm->slice / o->dts;
    o->stride = shm->slice;
    o->n      = ceil_div(maxlen, o->sub);
    if (o->n == 1) {   /* one phase: pack the slots, inline if they fit */
        o->stride = (maxlen * o->dts + 7) / 8 * 8;
        o->tiny   = (size_t)shm->size * o->stride <= GCOLL_SHM_INLINE;
    }
    /* scratch of an in-place fold after the slots (shm_rs_reduce) */
    if (!o->tiny)
        shm_place(shm, o->stride, (size_t)shm->size * o->stride,
                  (size_t)shm->size * o->stride + min_sz(GCOLL_SHM_FOLD_BLOCK, shm->slice));
    o->form  = SHM_FORM_RS;
    o->last  = o->n;
    o->bytes = o->count * o->dts;
    if (maxlen * o->dts >= GCOLL_SHM_STREAM_IN_MIN) gcoll_shm_way_pick(shm, o);   /* never inline */
    return GCOLL_SUCCESS;
}

/* An allgather's or bcast's single copy (GCOLL_SHM_SINGLE), where the node
 * has CMA: work phases enough for the largest block, then the last step. */
static int shm_start_single(gcoll_shm_t *shm, gcoll_shm_op_t *o, unsigned flags, size_t maxlen)
{
    if (!(flags & GCOLL_SHM_SINGLE) || !shm->cma) return 0;
    o->form = SHM_FORM_CMA;
    o->last = gcoll_shm_cma_pieces(o->coll, maxlen) + 1;
    return 1;
}

static gcoll_status_t shm_start_ag(gcoll_shm_t *shm, gcoll_shm_op_t *o, unsigned flags)
{
    GCOLL_TRY(shm_check(shm, "gcoll_shm_allgather"));
    if (!o->count) return GCOLL_SUCCESS;
    int me = shm->rank, size = shm->size;
    size_t own_len = gcoll_block_len(o->count, size, me) * o->dts;
    if (!o->dst || !o->dts || (!o->src && own_len))
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG,
                           "gcoll_shm_allgather: NULL buffer or zero element size");
    /* Bytes throughout; chunks of a whole area (or one inline line). */
    size_t maxlen = gcoll_block_len(o->count, size, 0) * o->dts;
    o->bytes = o->count * o->dts;
    o->nt    = o->bytes >= GCOLL_SHM_NT_MIN;   /* the result bypasses the caches */
    if (size > 1 && shm_start_single(shm, o, flags, maxlen)) return GCOLL_SUCCESS;   /* own late */
    if (!shm_ag_own_late(shm, o)) shm_ag_own(shm, o);
    o->sub  = shm->area;
    o->n    = ceil_div(maxlen, o->sub);
    o->tiny  = maxlen <= GCOLL_SHM_INLINE;
    o->form  = SHM_FORM_AG;
    if (!o->tiny) shm_place(shm, 0, min_sz(maxlen, o->sub), 0);
    o->last  = o->n;
    if (maxlen >= GCOLL_SHM_STREAM_IN_MIN) gcoll_shm_way_pick(shm, o);   /* never inline */
    return GCOLL_SUCCESS;
}

static gcoll_status_t shm_start_bcast(gcoll_shm_t *shm, gcoll_shm_op_t *o, unsigned flags)
{
    GCOLL_TRY(shm_check(shm, "gcoll_shm_bcast"));
    GCOLL_TRY(shm_check_root(shm, "gcoll_shm_bcast", o->root));
    if (!o->bytes) return GCOLL_SUCCESS;
    if (!o->dst) return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "gcoll_shm_bcast: NULL buffer");
    if (shm->size == 1 || shm_start_single(shm, o, flags, o->bytes)) return GCOLL_SUCCESS;
    if (o->bytes <= GCOLL_SHM_RING_SLOT) {
        o->form = SHM_FORM_RING;
        gcoll_shm_ring_start(shm, o);
        return GCOLL_SUCCESS;
    }
    o->sub  = shm->area;
    o->n    = ceil_div(o->bytes, o->sub);
    o->tiny = o->bytes <= GCOLL_SHM_INLINE;
    o->form = SHM_FORM_BCAST;
    o->nt   = o->bytes >= GCOLL_SHM_NT_MIN;   /* the readers' results bypass the caches */
    if (!o->tiny) shm_place(shm, 0, min_sz(o->bytes, o->sub), 0);
    o->last = o->n;
    if (shm->rank == o->root) gcoll_shm_way_pick(shm, o);
    return GCOLL_SUCCESS;
}

static gcoll_status_t shm_op_start(gcoll_shm_t *shm, gcoll_shm_op_t *o, int coll, const void *src,
                                   void *dst, size_t count, gcoll_dtype_t dtype, gcoll_op_t op,
                                   int root, unsigned flags)
{
    /* a copy of a zero op, not memset: at 136 bytes GCC emits `rep stos`
     * for the memset, 7% of an 8-byte bcast's time at 2 ranks (perf) */
    static const gcoll_shm_op_t blank;
    *o = blank;
    /* the window's start, slots a slice apart, until the form places itself
     * (no division here: ring ops, the smallest, start here too) */
    shm->place = (gcoll_shm_place_t){ .stride = shm->slice, .unit = 0, .places = 1 };
    o->coll  = (uint8_t)coll;
    o->src   = src;
    o->dst   = dst;
    o->count = count;
    o->dtype = dtype;
    o->op    = op;
    o->root  = root;
    o->form  = SHM_FORM_NONE;
    switch (coll) {
    case GCOLL_COLL_ALLREDUCE:
    case GCOLL_COLL_REDUCE:
        if ((unsigned)dtype < GCOLL_DTYPE_COUNT) o->dts = gcoll_dtype_size(dtype);
        o->bytes = count * o->dts;
        return shm_start_reduce(shm, o, coll == GCOLL_COLL_REDUCE ? "gcoll_shm_reduce"
                                                                  : "gcoll_shm_allreduce", flags);
    case GCOLL_COLL_REDUCE_SCATTER:
        if ((unsigned)dtype < GCOLL_DTYPE_COUNT) o->dts = gcoll_dtype_size(dtype);
        return shm_start_rs(shm, o);
    case GCOLL_COLL_ALLGATHER:
        o->dts = (unsigned)dtype < GCOLL_DTYPE_COUNT ? gcoll_dtype_size(dtype) : 0;
        return shm_start_ag(shm, o, flags);
    case GCOLL_COLL_BCAST:
        o->bytes = count;
        o->src   = dst;
        return shm_start_bcast(shm, o, flags);
    case GCOLL_COLL_BARRIER:
        GCOLL_TRY(shm_check(shm, "gcoll_shm_barrier"));
        o->form = SHM_FORM_BARRIER;
        o->last = 1;
        return GCOLL_SUCCESS;
    default:
        return GCOLL_ERROR(GCOLL_ERR_INTERNAL, "shared-memory collective %d does not exist", coll);
    }
}

/* The large forms first negotiate zero-copy (shm_zcopy.h); the inline ones
 * use the lines the negotiation needs, and are small anyway. */
gcoll_status_t gcoll_shm_op_start(gcoll_shm_t *shm, gcoll_shm_op_t *o, int coll, const void *src,
                                  void *dst, size_t count, gcoll_dtype_t dtype, gcoll_op_t op,
                                  int root, unsigned flags)
{
    GCOLL_TRY(shm_op_start(shm, o, coll, src, dst, count, dtype, op, root, flags));
    int large = o->form == SHM_FORM_AR_LARGE ||
                (!o->tiny && (o->form == SHM_FORM_RS || o->form == SHM_FORM_AG ||
                              o->form == SHM_FORM_BCAST || o->form == SHM_FORM_CMA));
    if (large && gcoll_shm_zc_start(shm, o)) {
        o->zc_form = o->form;
        o->form    = SHM_FORM_ZC;
    }
    return GCOLL_SUCCESS;
}

/* ---- the blocking calls: start, then progress and sleep until done ------ */

/* Drive a started op to completion: spin, then sleep; honours GCOLL_TIMEOUT. */
static gcoll_status_t shm_finish(gcoll_shm_t *shm, gcoll_shm_op_t *o)
{
    int done = 0;
    for (;;) {
        GCOLL_TRY(gcoll_shm_op_progress(shm, o, &done));
        if (done) return GCOLL_SUCCESS;
        if (!gcoll_shm_op_spin(shm, o, shm->spin_limit))
            GCOLL_TRY(gcoll_shm_wait_slow(shm));
    }
}

static gcoll_status_t shm_run(gcoll_shm_t *shm, int coll, const void *src, void *dst, size_t count,
                              gcoll_dtype_t dtype, gcoll_op_t op, int root)
{
    gcoll_shm_op_t o;
    GCOLL_TRY(gcoll_shm_op_start(shm, &o, coll, src, dst, count, dtype, op, root, 0));
    return shm_finish(shm, &o);
}

gcoll_status_t gcoll_shm_allreduce(gcoll_shm_t *shm, const void *src, void *dst, size_t count,
                                   gcoll_dtype_t dtype, gcoll_op_t op)
{
    return shm_run(shm, GCOLL_COLL_ALLREDUCE, src, dst, count, dtype, op, 0);
}

gcoll_status_t gcoll_shm_reduce(gcoll_shm_t *shm, const void *src, void *dst, size_t count,
                                gcoll_dtype_t dtype, gcoll_op_t op, int root)
{
    return shm_run(shm, GCOLL_COLL_REDUCE, src, dst, count, dtype, op, root);
}

gcoll_status_t gcoll_shm_reduce_scatter(gcoll_shm_t *shm, const void *src, void *dst,
                                        size_t count, gcoll_dtype_t dtype, gcoll_op_t op)
{
    return shm_run(shm, GCOLL_COLL_REDUCE_SCATTER, src, dst, count, dtype, op, 0);
}

gcoll_status_t gcoll_shm_allgather(gcoll_shm_t *shm, const void *src, void *dst, size_t count,
                                   size_t dt_size)
{
    gcoll_shm_op_t o;
    memset(&o, 0, sizeof(o));   /* any element size here, not only a dtype's */
    o.coll  = GCOLL_COLL_ALLGATHER;
    o.src   = src;
    o.dst   = dst;
    o.count = count;
    o.dts   = dt_size;
    GCOLL_TRY(shm_start_ag(shm, &o, 0));
    return shm_finish(shm, &o);
}

gcoll_status_t gcoll_shm_bcast(gcoll_shm_t *shm, void *buf, size_t bytes, int root)
{
    return shm_run(shm, GCOLL_COLL_BCAST, buf, buf, bytes, GCOLL_UINT8, GCOLL_SUM, root);
}

gcoll_status_t gcoll_shm_barrier(gcoll_shm_t *shm)
{
    return shm_run(shm, GCOLL_COLL_BARRIER, NULL, NULL, 0, GCOLL_UINT8, GCOLL_SUM, 0);
}
