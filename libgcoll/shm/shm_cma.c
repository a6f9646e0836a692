/* SPDX-License-Identifier: BSD-3-Clause */
/* Single-copy reduce, allgather and bcast by CMA (shm_cma.h).
 *
 * An allgather (a bcast: the root publishes its buffer, the others read):
 *
 *   phase 0      every rank publishes the address of its block's source
 *                (the root its buffer) in its flag's inline line; an
 *                allgather copies its own block into its result after it
 *                has signalled this step, while the peers read
 *   phase 1..W   rank j reads the peers' addresses (phase 1), then piece
 *                t - 1 (4 MiB) of every peer's block (the root's buffer)
 *                straight into its result: one process_vm_readv each
 *   last (W+1)   as below
 *
 * A reduce splits the vector into P slices (the blocks of an allgather)
 * and rank j reduces slice j, W pieces of 1 MiB of the largest slice:
 *
 *   phase 0      every rank publishes the address of its input (the root
 *                its result buffer too) in its flag's inline line, behind
 *                the word the zero-copy negotiation reads
 *   phase 1..W   rank j reads the peers' addresses (phase 1), then, 128 KiB at
 *                a time, that part of slice j from every peer's input into
 *                its scratch (L2-sized, so the fold reads it from cache),
 *                folds the P inputs in rank order (the copying form's
 *                order: the same bits), and writes the result into the
 *                root's buffer: the root by a store, the others by one
 *                process_vm_writev
 *   last (W+1)   nothing: its step tells every rank that nobody reads its
 *                buffer any more, so it may return (and reuse it)
 *
 * Every rank moves 1/P of the data, where the
 * copying pipeline copies each input into the segment, and the root copies
 * the reduced slices out of it again (2 ranks, 1-16 MiB: 1.4-1.6x faster;
 * pieces of 32 KiB were 15-25% slower from 512 KiB, 512 KiB ones 10-30%
 * at 1-8 MiB; docs/design.md "Single copy by CMA").
 *
 * Only slice j's reducer writes it, so in-place calls are safe (rank j
 * reads slice j of the root's buffer, then writes it).  The peers'
 * process ids are exchanged once, at set-up. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
#include "base/alloc.h"
#include "base/copy.h"
#include "base/reduce.h"
#include "base/config.h"
#include "base/log.h"
#include "shm/shm_cma.h"
#include "shm/shm_int.h"
#include "algos/peers.h"
#include "base/coll_kind.h"

#define CMA_PIECE   (1u << 20)   /* a reduce's bytes of each slice per work phase */
/* An allgather's or bcast's bytes of each block per work phase: 1 MiB ran
 * 5-8% slower at 2-32 MiB blocks (2 ranks, 3 alternated launches: 8 MiB
 * 1.50 ms against 1.39 with 4 MiB and 1.38 with 32; Open MPI 5 1.38); a
 * piece is one process_vm_readv of about 0.4 ms then, which a progress
 * call (SHM_PHASES_PER_CALL of them) holds the engine for. */
#define CMA_READ_PIECE (4u << 20)
#define CMA_ADDR_AT 8            /* the address's place in the inline line */
#define CMA_DST_AT  16           /* a reduce root's result buffer */
#define CMA_RED_PIECE (128u << 10) /* a reduce's bytes per read and fold (in L2) */

_Static_assert(CMA_DST_AT + sizeof(uint64_t) <= GCOLL_SHM_INLINE, "addresses fit the line");

struct gcoll_shm_cma {
    pid_t   *pid;     /* [P] every rank's process id */
    uint64_t *addr;   /* [P] the current op's block addresses, read in phase 1 */
    uint64_t root_dst; /* a reduce's result buffer at the root */
    unsigned char *scratch;   /* [3] reduce pieces: two inputs read, the accumulator */
    uint64_t calls;
};

static size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }

/* ---- set-up ---------------------------------------------------------------- */

typedef struct {
    int64_t  pid;
    uint64_t addr, token;
} cma_probe_t;

/* Read 8 bytes at addr of process pid; 1 if they are want. */
static int cma_read_word(pid_t pid, uint64_t addr, uint64_t want, char *why, size_t len)
{
    uint64_t v = 0;
    struct iovec l = { &v, sizeof(v) }, r = { (void *)(uintptr_t)addr, sizeof(v) };
    ssize_t n = process_vm_readv(pid, &l, 1, &r, 1, 0);
    if (n == (ssize_t)sizeof(v) && v == want) return 1;
    snprintf(why, len, "process_vm_readv of process %ld: %s", (long)pid,
             n < 0 ? strerror(errno) : "wrong bytes");
    return 0;
}

void gcoll_shm_cma_setup(gcoll_shm_t *shm, MPI_Comm node_comm)
{
    int P = shm->size, ok = shm->cfg->shm_cma != GCOLL_SHM_CMA_OFF, all_ok = 0;
    char why[256] = "GCOLL_SHM_CMA=off";
    if (P == 1) return;
    struct gcoll_shm_cma *c = gcoll_calloc(1, sizeof(*c));
    void *scratch = NULL;
    if (c) {
        c->pid  = gcoll_calloc((size_t)P, sizeof(*c->pid));
        c->addr = gcoll_calloc((size_t)P, sizeof(*c->addr));
        if (gcoll_posix_memalign(&scratch, 64, 3 * (size_t)CMA_RED_PIECE) == 0)
            c->scratch = scratch;
    }
    if (!c || !c->pid || !c->addr || !c->scratch) {
        ok = 0;
        snprintf(why, sizeof(why), "out of memory");
    }
    /* The token lives on this stack until the agreement below: every peer
     * has read it by then. */
    volatile uint64_t token = (uint64_t)getpid() * 0x9E3779B97F4A7C15ull ^ (uintptr_t)shm;
    cma_probe_t mine = { getpid(), (uint64_t)(uintptr_t)&token, token }, all[P];
    if (MPI_Allgather(&mine, (int)sizeof(mine), MPI_BYTE, all, (int)sizeof(mine), MPI_BYTE,
                      node_comm) != MPI_SUCCESS) {
        ok = 0;
        snprintf(why, sizeof(why), "MPI_Allgather of the probes failed");
    }
    for (int j = 0; j < P && ok; j++) {
        if (j != shm->rank) ok = cma_read_word((pid_t)all[j].pid, all[j].addr, all[j].token, why,
                                               sizeof(why));
        c->pid[j] = (pid_t)all[j].pid;
    }
    if (MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, node_comm) != MPI_SUCCESS) all_ok = 0;
    if (all_ok) {
        gcoll_info("shm: single-copy reduce on (CMA: ranks read each other's memory)");
        shm->cma = c;
        return;
    }
    gcoll_info("shm: single-copy reduce off, inputs go through the segment: %s",
               ok ? "another local rank cannot read its peers' memory" : why);
    shm->cma = c;
    gcoll_shm_cma_destroy(shm);
}

void gcoll_shm_cma_destroy(gcoll_shm_t *shm)
{
    struct gcoll_shm_cma *c = shm->cma;
    if (!c) return;
    free(c->pid);
    free(c->addr);
    free(c->scratch);
    free(c);
    shm->cma = NULL;
}

int gcoll_shm_cma_takes(const gcoll_shm_t *shm, size_t bytes)
{
    return shm->cma && bytes / (size_t)shm->size >= GCOLL_SHM_CMA_REDUCE_SLICE;
}

static size_t cma_piece(int coll) { return coll == GCOLL_COLL_REDUCE ? CMA_PIECE : CMA_READ_PIECE; }

size_t gcoll_shm_cma_pieces(int coll, size_t block)
{
    size_t piece = cma_piece(coll);
    return block ? (block + piece - 1) / piece : 1;
}

uint64_t gcoll_shm_cma_calls(const gcoll_shm_t *shm) { return shm && shm->cma ? shm->cma->calls : 0; }

/* ---- the phases ------------------------------------------------------------- */

/* n bytes between my memory at mine and process pid's at theirs, read or
 * written (a short transfer continues); 0 on failure. */
static int cma_move(pid_t pid, int write, unsigned char *mine, uint64_t theirs, size_t n)
{
    while (n) {
        struct iovec l = { mine, n }, r = { (void *)(uintptr_t)theirs, n };
        ssize_t got = write ? process_vm_writev(pid, &l, 1, &r, 1, 0)
                            : process_vm_readv(pid, &l, 1, &r, 1, 0);
        if (got <= 0) {
            gcoll_info("shm: single copy: %s %zu bytes of process %ld failed: %s",
                       write ? "writing" : "reading", n, (long)pid,
                       got < 0 ? strerror(errno) : "nothing moved");
            return 0;
        }
        mine += got, theirs += (uint64_t)got, n -= (size_t)got;
    }
    return 1;
}

/* Phase 0's address: mine in my line; phase 1 reads every rank's. */
static void cma_publish(gcoll_shm_t *shm, const void *p, size_t at)
{
    uint64_t a = (uint64_t)(uintptr_t)p;
    memcpy(gcoll_shm_inline(shm, shm->rank, gcoll_shm_wpar(shm)) + at, &a, sizeof(a));
}

static void cma_gather_addrs(gcoll_shm_t *shm, const gcoll_shm_op_t *o)
{
    int rp = gcoll_shm_rpar(shm);
    for (int j = 0; j < shm->size; j++)
        memcpy(&shm->cma->addr[j], gcoll_shm_inline(shm, j, rp) + CMA_ADDR_AT, sizeof(uint64_t));
    memcpy(&shm->cma->root_dst, gcoll_shm_inline(shm, o->root, rp) + CMA_DST_AT,
           sizeof(uint64_t));
}

/* Input j of a reduce's piece [at, at + m): mine, or read into `to`. */
static const void *cma_input(const struct gcoll_shm_cma *c, const gcoll_shm_op_t *o, int me, int j,
                             unsigned char *to, size_t at, size_t m)
{
    if (j == me) return o->src + at;
    return cma_move(c->pid[j], 0, to, c->addr[j] + at, m) ? to : NULL;
}

/* Bytes [s, s + n) of my slice of a reduce (s: from the vector's start),
 * in pieces that stay in L2: acc = in[0] op in[1] op ... in rank order
 * (the copying form's order, so the same bits), each peer's input read
 * into scratch just before it is folded in; the accumulator is the root's
 * buffer (mine; scratch when it is in place and its input comes after
 * others'), or scratch written into the root's buffer (a peer's). */
static int cma_reduce_range(gcoll_shm_t *shm, const gcoll_shm_op_t *o, size_t s, size_t n)
{
    const struct gcoll_shm_cma *c = shm->cma;
    int me = shm->rank, P = shm->size, root = me == o->root;
    unsigned char *rd[2] = { c->scratch, c->scratch + CMA_RED_PIECE },
                  *tmp = c->scratch + 2 * (size_t)CMA_RED_PIECE;
    for (size_t done = 0; done < n; done += CMA_RED_PIECE) {
        size_t m = min_sz(CMA_RED_PIECE, n - done), at = s + done, cnt = m / o->dts;
        unsigned char *acc = root && !(o->src == o->dst && me > 1) ? o->dst + at : tmp;
        const void *a = cma_input(c, o, me, 0, rd[0], at, m), *b = cma_input(c, o, me, 1, rd[1], at, m);
        if (!a || !b) return 0;
        gcoll_reduce_host(acc, a, b, cnt, o->dtype, o->op);
        for (int j = 2; j < P; j++) {
            if (!(b = cma_input(c, o, me, j, rd[0], at, m))) return 0;
            gcoll_reduce_host(acc, acc, b, cnt, o->dtype, o->op);
        }
        if (root && acc != o->dst + at) gcoll_copy(o->dst + at, acc, m);
        if (!root && !cma_move(c->pid[o->root], 1, acc, c->root_dst + at, m)) return 0;
    }
    return 1;
}

/* Piece [s, s + 4 MiB) of rank j's published block of len bytes into mine
 * at `to` (nothing past its end); 0 if the read failed. */
static int cma_read(const struct gcoll_shm_cma *c, int j, unsigned char *to, size_t len, size_t s)
{
    return len <= s ||
           cma_move(c->pid[j], 0, to + s, c->addr[j] + s, min_sz(CMA_READ_PIECE, len - s));
}

/* Phase i's piece of an allgather (every peer's block, starting with the
 * next rank's, so that the P readers of a block do not all start on the
 * same one) or a bcast (the root's buffer): bytes [i, i + 1) x 4 MiB. */
static void cma_read_piece(gcoll_shm_t *shm, gcoll_shm_op_t *o, size_t i)
{
    const struct gcoll_shm_cma *c = shm->cma;
    int me = shm->rank, P = shm->size;
    size_t s = i * (size_t)CMA_READ_PIECE;
    if (o->coll == GCOLL_COLL_BCAST) {
        if (me != o->root && !cma_read(c, o->root, o->dst, o->bytes, s)) o->failed = 1;
        return;
    }
    for (int k = 1; k < P && !o->failed; k++) {
        int j = (me + k) % P;
        unsigned char *to = o->dst + gcoll_block_off(o->count, P, j) * o->dts;
        if (!cma_read(c, j, to, gcoll_block_len(o->count, P, j) * o->dts, s)) o->failed = 1;
    }
}

/* Phase i's part of my slice of a reduce: bytes [i MiB, (i + 1) MiB) of it. */
static void cma_reduce_piece(gcoll_shm_t *shm, gcoll_shm_op_t *o, size_t i)
{
    int me = shm->rank, P = shm->size;
    size_t len = gcoll_block_len(o->count, P, me) * o->dts, s = i * (size_t)CMA_PIECE;
    size_t off0 = gcoll_block_off(o->count, P, me) * o->dts;
    if (len > s && !cma_reduce_range(shm, o, off0 + s, min_sz(CMA_PIECE, len - s)))
        o->failed = 1;
}

/* Phase 0 of a reduce: my input, and the root's result buffer; of an
 * allgather: my block's source (not its copy in my result: the peers'
 * reads would pull those lines into their caches, and my next call's copy
 * would pay to take them back); of a bcast: the root's buffer. */
static void cma_publish_op(gcoll_shm_t *shm, const gcoll_shm_op_t *o)
{
    int root = shm->rank == o->root;
    switch (o->coll) {
    case GCOLL_COLL_BCAST:
        if (root) cma_publish(shm, o->dst, CMA_ADDR_AT);
        break;
    case GCOLL_COLL_ALLGATHER:
        cma_publish(shm, o->src, CMA_ADDR_AT);
        break;
    default:
        cma_publish(shm, o->src, CMA_ADDR_AT);
        if (root) cma_publish(shm, o->dst, CMA_DST_AT);
        break;
    }
}

void gcoll_shm_cma_body(gcoll_shm_t *shm, gcoll_shm_op_t *o)
{
    if (o->t == 0) {
        cma_publish_op(shm, o);
        return;
    }
    if (o->t == o->last) {
        shm->cma->calls++;
        return;
    }
    if (o->t == 1) cma_gather_addrs(shm, o);
    if (o->coll == GCOLL_COLL_REDUCE) cma_reduce_piece(shm, o, o->t - 1);
    else cma_read_piece(shm, o, o->t - 1);
}
