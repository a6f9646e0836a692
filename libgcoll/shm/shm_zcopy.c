/* SPDX-License-Identifier: BSD-3-Clause */
/* Zero-copy forms of the shared-memory collectives: when every rank's
 * buffers lie in gcoll_mem_alloc memory, reduce or copy straight out of
 * (and into) the peers' buffers, mapped here, instead of staging through the
 * segment (hooks in shm_zcopy.h; the step protocol in shm_int.h).
 *
 * Phases of SHM_FORM_ZC (P ranks; W work phases of one piece each):
 *
 *   phase 0   publish my descriptor (pid, and for src and dst: allocation
 *             id, offset, memfd) in my flag's inline line; a rank whose
 *             buffers are not all shareable also runs the copying form's
 *             phase 0
 *   phase 1   read every descriptor (the same on every rank), decide:
 *               not all shareable -> the copying form: from its phase 1 if
 *               nobody skipped its phase 0, else from its phase 0 (one step
 *               late; only when some ranks registered and others did not)
 *               all shareable, every buffer already mapped here ("fast")
 *                 -> work piece 0
 *               all shareable, some buffer new -> map it; publish ok
 *   phase 2   (new buffers only) read every rank's ok: all -> work piece 0;
 *             else the copying form from its phase 0 (nothing written yet)
 *   work      allreduce: reduce my slice (1/P of the vector, in 2 KiB
 *             blocks through an L1 accumulator) from all P sources,
 *             write it into all P destinations; reduce: into the root's
 *             only; reduce_scatter: my block from all P sources into my
 *             destination; allgather: copy every peer's block out of its
 *             source; bcast: copy the root's buffer.  1 MiB of my part per
 *             phase, so a progress call stays short.
 *   last      nothing: its step told every rank that nobody touches its
 *             buffers any more, so it may return (and free them)
 *
 *   Steps: 1 + W + 1 (fast), 1 more for new buffers.  Per rank and byte
 *   of an allreduce: 1 read of P/P sources, 1 write: the streaming floor
 *   (the copying pipeline moves ~3x that).  Only a slice's owner touches
 *   it, in every buffer, so in-place calls are safe.
 *
 *   Blocks of 2 KiB: reducing two 16 MiB float32 vectors block by block
 *   into the accumulator and streaming it to two outputs ran at 1.06x a
 *   plain streaming copy of the same bytes with 1-2 KiB blocks, 1.45x with
 *   8 KiB ones (one core, medians of 21; at 4 MiB 1.16x against 1.31x):
 *   short bursts keep the read and the write streams going together.
 *
 * Which buffers are "already mapped" is decided from published facts only:
 * per segment and rank, the ids of the last ZC_KNOWN allocations that rank
 * used in a zero-copy call that ran here.  Every rank keeps that history
 * alike (it saw the same descriptors) and keeps every peer allocation in it
 * mapped and pinned, so "every id is in the history" is true on every rank
 * or on none, and on the fast path no rank can fail to find a mapping.  A
 * new allocation is mapped by every rank (needed or not), so that the
 * history stays the same everywhere; a rank that cannot map it says so in
 * phase 1 and the node copies instead (identically, one phase later). */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <emmintrin.h>
#endif
#include "base/alloc.h"
#include "base/copy.h"
#include "shm/shm_int.h"
#include "shm/shm_mem.h"
#include "shm/shm_zcopy.h"
#include "algos/peers.h"
#include "base/coll_kind.h"
#include "base/config.h"
#include "base/log.h"
#include "base/reduce.h"

#define ZC_KNOWN   8             /* allocations remembered per rank */
#define ZC_BLOCK   (2u << 10)    /* accumulator bytes (see the top of this file) */
#define ZC_PIECE   (1u << 20)    /* bytes of my part per work phase */
#define ZC_NT_MIN  (16u << 20)   /* allreduce results this large bypass the caches */

enum { ZC_IDLE = 0, ZC_DECIDE, ZC_CONFIRM, ZC_WORK };

/* Where one buffer of a rank lies; id 0: not shareable, or not used. */
typedef struct {
    uint64_t id, off;
    int32_t  fd;
    uint32_t pad;
} zc_ref_t;

/* What a rank publishes in phase 0: one inline line. */
typedef struct {
    uint32_t valid;   /* every buffer this rank uses lies in shareable memory */
    int32_t  pid;
    zc_ref_t src, dst;
} zc_desc_t;

_Static_assert(sizeof(zc_desc_t) <= GCOLL_SHM_INLINE, "descriptor fits the inline line");

typedef struct {
    uint64_t         id;    /* 0: empty */
    gcoll_mem_map_t *map;   /* its pinned mapping (NULL for this rank's own) */
} zc_known_t;

/* Exists only on a segment whose ranks can all map each other's memory. */
struct gcoll_shm_zc {
    /* the op in progress */
    int                  stage;
    size_t               work0;        /* phase of work piece 0 */
    size_t               pieces;
    size_t               copy_last;    /* the copying form's last phase */
    int                  nt;
    zc_desc_t            mine;
    zc_desc_t           *desc;         /* [P], read in phase 1 */
    unsigned char      **src, **dst;   /* [P]: every rank's buffers as mapped here */
    gcoll_mem_map_t    **pend;         /* [2P]: mapped by this op, not yet known */
    zc_known_t          *known;        /* [P][ZC_KNOWN], most recent first */
    gcoll_shm_zc_stats_t stats;
};

static size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }
static size_t ceil_div(size_t a, size_t b) { return (a + b - 1) / b; }

/* ---- set-up: can the node's ranks map each other's memory? ------------- */

typedef struct {
    int32_t  pid, fd;   /* fd -1: this rank offers nothing */
    uint64_t token;
} zc_probe_t;

void gcoll_shm_zc_setup(gcoll_shm_t *shm, MPI_Comm node_comm)
{
    int P = shm->size, me = shm->rank, ok = shm->cfg->zcopy != 0, all_ok = 0;
    char why[256] = "GCOLL_ZCOPY=0";
    if (P == 1) return;   /* nobody to share with: one rank's forms copy nothing anyway */
    struct gcoll_shm_zc *zc = gcoll_calloc(1, sizeof(*zc));
    if (zc) {
        zc->desc  = gcoll_calloc((size_t)P, sizeof(*zc->desc));
        zc->src   = gcoll_calloc((size_t)P, sizeof(*zc->src));
        zc->dst   = gcoll_calloc((size_t)P, sizeof(*zc->dst));
        zc->pend  = gcoll_calloc(2 * (size_t)P, sizeof(*zc->pend));
        zc->known = gcoll_calloc((size_t)P * ZC_KNOWN, sizeof(*zc->known));
    }
    if (!zc || !zc->desc || !zc->src || !zc->dst || !zc->pend || !zc->known) {
        ok = 0;
        snprintf(why, sizeof(why), "out of memory");
    }
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    zc_probe_t mine = { gcoll_mem_pid(), -1,
                        (uint64_t)ts.tv_nsec * 2654435761u ^ (uint64_t)getpid() << 32 ^
                        (uint64_t)(uintptr_t)shm },
               all[P];
    if (ok) mine.fd = gcoll_mem_probe_create(mine.token, why, sizeof(why));
    if (MPI_Allgather(&mine, (int)sizeof(mine), MPI_BYTE, all, (int)sizeof(mine), MPI_BYTE,
                      node_comm) != MPI_SUCCESS && ok) {
        ok = 0;   /* all[] is undefined: opened nothing of it */
        snprintf(why, sizeof(why), "MPI_Allgather of the probes failed");
    }
    for (int j = 0; j < P && ok; j++) {
        if (j == me) continue;
        if (all[j].fd < 0) ok = 0, snprintf(why, sizeof(why), "local rank %d offers none", j);
        else if (gcoll_mem_probe_open(all[j].pid, all[j].fd, all[j].token, why, sizeof(why)))
            ok = 0;
    }
    if (mine.fd < 0) ok = 0;
    if (MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, node_comm) != MPI_SUCCESS) {
        if (ok) snprintf(why, sizeof(why), "MPI_Allreduce of the outcome failed");
        ok = all_ok = 0;   /* after every open */
    }
    if (mine.fd >= 0) close(mine.fd);
    if (all_ok)
        gcoll_info("shm: zero-copy on for gcoll_mem_alloc buffers (ranks map each other's)");
    else
        gcoll_info("shm: zero-copy off, gcoll_mem_alloc buffers are copied: %s",
                   ok ? "another local rank cannot map its peers' memory" : why);
    shm->zc = zc;
    if (zc && !all_ok) {
        gcoll_shm_zc_destroy(shm);
        shm->zc = NULL;
    }
}

void gcoll_shm_zc_destroy(gcoll_shm_t *shm)
{
    struct gcoll_shm_zc *zc = shm->zc;
    if (!zc) return;
    gcoll_shm_zc_abandon(shm);
    for (size_t i = 0; zc->known && i < (size_t)shm->size * ZC_KNOWN; i++)
        gcoll_mem_map_unpin(zc->known[i].map);
    free(zc->desc);
    free(zc->src);
    free(zc->dst);
    free(zc->pend);
    free(zc->known);
    free(zc);
    shm->zc = NULL;
}

void gcoll_shm_zc_abandon(gcoll_shm_t *shm)
{
    struct gcoll_shm_zc *zc = shm->zc;
    if (!zc) return;
    for (size_t i = 0; zc->pend && i < 2 * (size_t)shm->size; i++) {
        gcoll_mem_map_unpin(zc->pend[i]);
        zc->pend[i] = NULL;
    }
    zc->stage = ZC_IDLE;
}

void gcoll_shm_zc_stats(const gcoll_shm_t *shm, gcoll_shm_zc_stats_t *st)
{
    static const gcoll_shm_zc_stats_t none;
    *st = shm && shm->zc ? shm->zc->stats : none;
}

/* ---- start: this rank's descriptor ---------------------------------------- */

/* Look up [p, p + bytes) (bytes 0: not used, so it counts as shareable). */
static int zc_ref(const void *p, size_t bytes, zc_ref_t *r)
{
    gcoll_mem_ref_t m;
    memset(r, 0, sizeof(*r));
    if (!bytes) return 1;
    if (!gcoll_mem_find(p, bytes, &m)) return 0;
    r->id  = m.id;
    r->off = m.off;
    r->fd  = m.fd;
    return 1;
}

/* Bytes of rank j's source and destination (0: not used there). */
static void zc_extent(const gcoll_shm_t *shm, const gcoll_shm_op_t *o, int j, size_t *src,
                      size_t *dst)
{
    size_t own = gcoll_block_len(o->count, shm->size, j) * o->dts;
    switch (o->coll) {
    case GCOLL_COLL_REDUCE_SCATTER: *src = o->count * o->dts, *dst = own; break;
    case GCOLL_COLL_ALLGATHER:      *src = own, *dst = o->count * o->dts; break;
    case GCOLL_COLL_REDUCE:         *src = o->bytes, *dst = j == o->root ? o->bytes : 0; break;
    default:                        *src = *dst = o->bytes; break;   /* allreduce, bcast */
    }
}

int gcoll_shm_zc_start(gcoll_shm_t *shm, gcoll_shm_op_t *o)
{
    struct gcoll_shm_zc *zc = shm->zc;
    size_t sb, db;
    if (!zc || shm->broken) return 0;
    int whole = o->coll == GCOLL_COLL_REDUCE_SCATTER || o->coll == GCOLL_COLL_ALLGATHER;
    if ((whole ? o->count * o->dts : o->bytes) < GCOLL_SHM_ZC_MIN) return 0;
    zc_extent(shm, o, shm->rank, &sb, &db);
    zc_desc_t *d = &zc->mine;
    int a = zc_ref(o->src, sb, &d->src), b = a && zc_ref(o->dst, db, &d->dst);
    d->valid = a && b;
    d->pid   = d->valid ? gcoll_mem_pid() : 0;
    zc->stage = ZC_DECIDE;
    zc->copy_last = o->last;
    return 1;
}

/* ---- the known allocations (the same history on every rank) ------------- */

static zc_known_t *zc_known(struct gcoll_shm_zc *zc, int j) { return zc->known + (size_t)j * ZC_KNOWN; }

static gcoll_mem_map_t *zc_find(struct gcoll_shm_zc *zc, int j, uint64_t id, int *found)
{
    zc_known_t *k = zc_known(zc, j);
    for (int i = 0; i < ZC_KNOWN; i++)
        if (k[i].id == id) return *found = 1, k[i].map;
    return *found = 0, NULL;
}

/* Every allocation named by the descriptors is in the history. */
static int zc_all_known(struct gcoll_shm_zc *zc, int P)
{
    int found;
    for (int j = 0; j < P; j++) {
        const zc_desc_t *d = &zc->desc[j];
        if (d->src.id && (zc_find(zc, j, d->src.id, &found), !found)) return 0;
        if (d->dst.id && (zc_find(zc, j, d->dst.id, &found), !found)) return 0;
    }
    return 1;
}

/* Move id to the front of rank j's history; a new one brings its pin (map)
 * and pushes the oldest out, whose pin is released. */
static void zc_remember(struct gcoll_shm_zc *zc, int j, uint64_t id, gcoll_mem_map_t *map)
{
    zc_known_t *k = zc_known(zc, j), e = { id, map };
    int i = 0;
    while (i < ZC_KNOWN - 1 && k[i].id != id) i++;
    if (k[i].id == id) e.map = k[i].map;            /* known: keep its pin */
    else gcoll_mem_map_unpin(k[i].map);             /* the oldest leaves */
    memmove(k + 1, k, (size_t)i * sizeof(*k));
    k[0] = e;
}

/* ---- the buffers as mapped here ------------------------------------------ */

static unsigned char *zc_at(gcoll_mem_map_t *m, const zc_ref_t *r)
{
    return m ? gcoll_mem_map_base(m) + r->off : NULL;
}

/* Fast path: every peer buffer from the history. */
static void zc_resolve_known(gcoll_shm_t *shm, const gcoll_shm_op_t *o)
{
    struct gcoll_shm_zc *zc = shm->zc;
    int found;
    for (int j = 0; j < shm->size; j++) {
        const zc_desc_t *d = &zc->desc[j];
        if (j == shm->rank) {
            zc->src[j] = (unsigned char *)o->src;
            zc->dst[j] = o->dst;
            continue;
        }
        zc->src[j] = d->src.id ? zc_at(zc_find(zc, j, d->src.id, &found), &d->src) : NULL;
        zc->dst[j] = d->dst.id ? zc_at(zc_find(zc, j, d->dst.id, &found), &d->dst) : NULL;
    }
}

/* One peer buffer: from the history, or mapped now (pinned in pend). */
static unsigned char *zc_map_ref(gcoll_shm_t *shm, int j, const zc_ref_t *r, size_t bytes,
                                 gcoll_mem_map_t **pend, int *ok)
{
    struct gcoll_shm_zc *zc = shm->zc;
    char why[256];
    int found;
    if (!r->id) return NULL;
    gcoll_mem_map_t *m = zc_find(zc, j, r->id, &found);
    if (found) return zc_at(m, r);
    *pend = gcoll_mem_map_pin(zc->desc[j].pid, r->fd, r->id, r->off + bytes, why, sizeof(why));
    if (!*pend) {
        *ok = 0;
        gcoll_info("shm: zero-copy: local rank %d cannot map local rank %d's buffer, the node "
                   "copies this call: %s", shm->rank, j, why);
    }
    return zc_at(*pend, r);
}

/* Slow path: map every new peer allocation; 1 if all could be. */
static int zc_map_new(gcoll_shm_t *shm, const gcoll_shm_op_t *o)
{
    struct gcoll_shm_zc *zc = shm->zc;
    int ok = 1;
    for (int j = 0; j < shm->size; j++) {
        const zc_desc_t *d = &zc->desc[j];
        gcoll_mem_map_t **pend = zc->pend + 2 * (size_t)j;
        size_t sb, db;
        if (j == shm->rank) {
            zc->src[j] = (unsigned char *)o->src;
            zc->dst[j] = o->dst;
            continue;
        }
        zc_extent(shm, o, j, &sb, &db);
        zc->src[j] = zc_map_ref(shm, j, &d->src, sb, &pend[0], &ok);
        if (d->dst.id && d->dst.id == d->src.id)   /* one allocation: one mapping, one pin */
            zc->dst[j] = zc->src[j] ? zc->src[j] - d->src.off + d->dst.off : NULL;
        else
            zc->dst[j] = zc_map_ref(shm, j, &d->dst, db, &pend[1], &ok);
    }
    return ok;
}

/* After the last step: the op's allocations become (or stay) known. */
static void zc_end(gcoll_shm_t *shm)
{
    struct gcoll_shm_zc *zc = shm->zc;
    for (int j = 0; j < shm->size; j++) {
        const zc_desc_t *d = &zc->desc[j];
        gcoll_mem_map_t **pend = zc->pend + 2 * (size_t)j;
        if (d->src.id) zc_remember(zc, j, d->src.id, pend[0]);
        if (d->dst.id && d->dst.id != d->src.id) zc_remember(zc, j, d->dst.id, pend[1]);
        pend[0] = pend[1] = NULL;
    }
    zc->stage = ZC_IDLE;
    zc->stats.taken++;
}

/* ---- the work ------------------------------------------------------------- */

static void zc_fence(int nt)
{
#if defined(__x86_64__)
    if (nt) _mm_sfence();   /* streaming stores before the step that publishes them */
#else
    (void)nt;
#endif
}

/* Elements [off, off + n) of every source, reduced in rank order into
 * every non-NULL out[k] at out_off (elements), block by block through an L1
 * accumulator: the sources are read once, the outputs written once. */
static void zc_fold(gcoll_shm_t *shm, const gcoll_shm_op_t *o, size_t off, size_t n,
                    unsigned char *const *out, int nout, size_t out_off)
{
    struct gcoll_shm_zc *zc = shm->zc;
    _Alignas(64) unsigned char acc[ZC_BLOCK];
    size_t dts = o->dts, blk = ZC_BLOCK / dts;
    int P = shm->size;
    for (size_t b = 0; b < n; b += blk) {
        size_t m = min_sz(blk, n - b), at = (off + b) * dts;
        gcoll_reduce_host(acc, zc->src[0] + at, zc->src[1] + at, m, o->dtype, o->op);
        for (int k = 2; k < P; k++) gcoll_reduce_host(acc, acc, zc->src[k] + at, m, o->dtype, o->op);
        for (int k = 0; k < nout; k++)
            if (out[k]) gcoll_shm_copy(out[k] + (out_off + b) * dts, acc, m * dts, zc->nt);
    }
}

/* The slice of the vector that rank j reduces (allreduce, reduce): equal
 * parts rounded up to 64 bytes, the last ones shorter or empty. */
static void zc_slice(size_t count, size_t dts, int P, int j, size_t *off, size_t *len)
{
    size_t unit = dts < 64 ? 64 / dts : 1;
    size_t sl = ceil_div(ceil_div(count, (size_t)P), unit) * unit;
    size_t o = min_sz((size_t)j * sl, count), e = min_sz(o + sl, count);
    *off = o, *len = e - o;
}

/* My part's length in bytes, and the longest part's (which sets the number
 * of work phases, the same on every rank). */
static size_t zc_part_max(const gcoll_shm_t *shm, const gcoll_shm_op_t *o)
{
    size_t off, len;
    switch (o->coll) {
    case GCOLL_COLL_ALLREDUCE:
    case GCOLL_COLL_REDUCE:
        zc_slice(o->count, o->dts, shm->size, 0, &off, &len);
        return len * o->dts;
    case GCOLL_COLL_BCAST: return o->bytes;
    default: return gcoll_block_len(o->count, shm->size, 0) * o->dts;
    }
}

/* Work piece i: bytes [i * ZC_PIECE, (i + 1) * ZC_PIECE) of my part. */
static void zc_piece(gcoll_shm_t *shm, const gcoll_shm_op_t *o, size_t i)
{
    struct gcoll_shm_zc *zc = shm->zc;
    int me = shm->rank, P = shm->size;
    size_t dts = o->dts, pe = ZC_PIECE / (dts ? dts : 1), off, len;
    switch (o->coll) {
    case GCOLL_COLL_ALLREDUCE:
    case GCOLL_COLL_REDUCE: {
        zc_slice(o->count, dts, P, me, &off, &len);
        size_t s = min_sz(i * pe, len), n = min_sz(pe, len - s);
        if (o->coll == GCOLL_COLL_ALLREDUCE) zc_fold(shm, o, off + s, n, zc->dst, P, off + s);
        else zc_fold(shm, o, off + s, n, zc->dst + o->root, 1, off + s);
        break;
    }
    case GCOLL_COLL_REDUCE_SCATTER: {
        off = gcoll_block_off(o->count, P, me), len = gcoll_block_len(o->count, P, me);
        size_t s = min_sz(i * pe, len), n = min_sz(pe, len - s);
        zc_fold(shm, o, off + s, n, zc->dst + me, 1, s);
        break;
    }
    case GCOLL_COLL_ALLGATHER:
        for (int j = 0; j < P; j++) {
            size_t bytes = gcoll_block_len(o->count, P, j) * dts, s = min_sz(i * ZC_PIECE, bytes);
            if (j != me && bytes > s)
                gcoll_copy(o->dst + gcoll_block_off(o->count, P, j) * dts + s, zc->src[j] + s,
                       min_sz(ZC_PIECE, bytes - s));
        }
        break;
    case GCOLL_COLL_BCAST:
        if (me != o->root) {
            size_t s = min_sz(i * ZC_PIECE, o->bytes);
            gcoll_copy(o->dst + s, zc->src[o->root] + s, min_sz(ZC_PIECE, o->bytes - s));
        }
        break;
    default: break;
    }
    zc_fence(zc->nt);
}

/* ---- the phases ------------------------------------------------------------ */

/* Every rank's buffers mapped: the work starts in this phase. */
static void zc_go(gcoll_shm_t *shm, gcoll_shm_op_t *o)
{
    struct gcoll_shm_zc *zc = shm->zc;
    zc->stage  = ZC_WORK;
    zc->work0  = o->t;
    zc->pieces = ceil_div(zc_part_max(shm, o), ZC_PIECE);
    if (!zc->pieces) zc->pieces = 1;
    zc->nt     = (o->coll == GCOLL_COLL_ALLREDUCE || o->coll == GCOLL_COLL_REDUCE) &&
                 o->bytes >= ZC_NT_MIN;
    o->last    = o->t + zc->pieces;   /* then one more step, and the end */
    zc_piece(shm, o, 0);
}

/* Hand back to the copying form; restart: from its phase 0, in this phase. */
static int zc_decline(gcoll_shm_t *shm, gcoll_shm_op_t *o, int restart)
{
    struct gcoll_shm_zc *zc = shm->zc;
    o->form = o->zc_form;
    o->last = zc->copy_last;
    if (restart) o->t = 0;
    zc->stage = ZC_IDLE;
    return 1;
}

static int zc_decide(gcoll_shm_t *shm, gcoll_shm_op_t *o)
{
    struct gcoll_shm_zc *zc = shm->zc;
    int P = shm->size, rp = gcoll_shm_rpar(shm), valid = 0;
    for (int j = 0; j < P; j++) {   /* one word per rank: what callers without */
        uint32_t v;                  /* gcoll_mem_alloc buffers pay */
        memcpy(&v, gcoll_shm_inline(shm, j, rp) + offsetof(zc_desc_t, valid), sizeof(v));
        valid += v != 0;
    }
    if (valid < P) {
        zc->stats.declined++;
        return zc_decline(shm, o, valid > 0);
    }
    for (int j = 0; j < P; j++)
        memcpy(&zc->desc[j], gcoll_shm_inline(shm, j, rp), sizeof(zc_desc_t));
    if (zc_all_known(zc, P)) {
        zc_resolve_known(shm, o);
        zc_go(shm, o);
        return 0;
    }
    /* Some allocation is new: map it, say whether that worked, and wait for
     * the others' word before touching anything. */
    uint32_t ok = (uint32_t)zc_map_new(shm, o);
    memcpy(gcoll_shm_inline(shm, shm->rank, gcoll_shm_wpar(shm)), &ok, sizeof(ok));
    zc->stage = ZC_CONFIRM;
    o->last = o->t + 2;   /* at least; zc_go sets it */
    return 0;
}

static int zc_confirm(gcoll_shm_t *shm, gcoll_shm_op_t *o)
{
    struct gcoll_shm_zc *zc = shm->zc;
    int rp = gcoll_shm_rpar(shm);
    for (int j = 0; j < shm->size; j++) {
        uint32_t ok;
        memcpy(&ok, gcoll_shm_inline(shm, j, rp), sizeof(ok));
        if (!ok) {
            gcoll_shm_zc_abandon(shm);   /* unpin what this op mapped */
            zc->stats.failed++;
            return zc_decline(shm, o, 1);
        }
    }
    zc_go(shm, o);
    return 0;
}

int gcoll_shm_zc_body(gcoll_shm_t *shm, gcoll_shm_op_t *o)
{
    struct gcoll_shm_zc *zc = shm->zc;
    if (o->t == 0) {
        unsigned char *line = gcoll_shm_inline(shm, shm->rank, gcoll_shm_wpar(shm));
        if (!zc->mine.valid) {   /* the copying form will be needed: run its phase 0 */
            memcpy(line + offsetof(zc_desc_t, valid), &zc->mine.valid, sizeof(zc->mine.valid));
            return 1;
        }
        memcpy(line, &zc->mine, sizeof(zc->mine));
        return 0;
    }
    switch (zc->stage) {
    case ZC_DECIDE:  return zc_decide(shm, o);
    case ZC_CONFIRM: return zc_confirm(shm, o);
    default: break;
    }
    if (o->t == o->last) zc_end(shm);
    else zc_piece(shm, o, o->t - zc->work0);
    return 0;
}
