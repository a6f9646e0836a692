/* SPDX-License-Identifier: BSD-3-Clause */
/* Single-copy allgather and bcast by CMA (shm_cma.h).
 *
 * Phases of SHM_FORM_CMA (P ranks, W pieces of the largest block; a bcast:
 * the root publishes its buffer, the others read it):
 *
 *   phase 0      publish the address of my block, my source buffer, in my
 *                flag's inline line, behind the word the zero-copy
 *                negotiation reads.  Not its copy in my result (the op's
 *                start made one): the peers' reads would pull those lines
 *                into their caches, and my next call's copy would pay to
 *                take them back (64 KiB blocks, 2 ranks: 14.6 against 10.5
 *                µs for the copying form; 7.3 reading the source)
 *   phase 1      read every peer's address; then, as phases 1..W, piece
 *                t - 1 (1 MiB) of every peer's block straight into my
 *                result: one process_vm_readv per peer and piece
 *   last (W+1)   nothing: its step tells every rank that nobody reads its
 *                buffer any more, so it may return (and reuse it)
 *
 * Only the block's owner writes it, in every buffer, so in-place calls are
 * safe.  The peers' process ids are exchanged once, at set-up. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
#include "base/alloc.h"
#include "base/config.h"
#include "base/log.h"
#include "shm/shm_cma.h"
#include "shm/shm_int.h"
#include "algos/peers.h"
#include "base/coll_kind.h"

#define CMA_PIECE   (1u << 20)   /* bytes of each block per work phase */
#define CMA_ADDR_AT 8            /* the address's place in the inline line */

_Static_assert(CMA_ADDR_AT + sizeof(uint64_t) <= GCOLL_SHM_INLINE, "address fits the line");

struct gcoll_shm_cma {
    int      bcast;   /* bcasts take it too (not oversubscribed) */
    pid_t   *pid;     /* [P] every rank's process id */
    uint64_t *addr;   /* [P] the current op's block addresses, read in phase 1 */
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

void gcoll_shm_cma_setup(gcoll_shm_t *shm, MPI_Comm node_comm, int oversubscribed)
{
    int P = shm->size, ok = shm->cfg->shm_cma != 0, all_ok = 0;
    char why[256] = "GCOLL_SHM_CMA=0";
    if (P == 1) return;
    struct gcoll_shm_cma *c = gcoll_calloc(1, sizeof(*c));
    if (c) {
        c->pid  = gcoll_calloc((size_t)P, sizeof(*c->pid));
        c->addr = gcoll_calloc((size_t)P, sizeof(*c->addr));
    }
    if (!c || !c->pid || !c->addr) {
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
        c->bcast = !oversubscribed;
        gcoll_info("shm: single-copy allgather%s on (CMA: ranks read each other's memory)",
                   c->bcast ? " and bcast" : "");
        shm->cma = c;
        return;
    }
    gcoll_info("shm: single-copy allgather off, blocks go through the segment: %s",
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
    free(c);
    shm->cma = NULL;
}

int gcoll_shm_cma_takes(const gcoll_shm_t *shm, int coll, size_t bytes)
{
    if (!shm->cma) return 0;
    if (coll == GCOLL_COLL_BCAST) return shm->cma->bcast && bytes < GCOLL_SHM_CMA_BCAST_MAX;
    return bytes >= GCOLL_SHM_CMA_MIN;
}

size_t gcoll_shm_cma_pieces(size_t block) { return block ? (block + CMA_PIECE - 1) / CMA_PIECE : 1; }

uint64_t gcoll_shm_cma_calls(const gcoll_shm_t *shm) { return shm && shm->cma ? shm->cma->calls : 0; }

/* ---- the phases ------------------------------------------------------------- */

/* Bytes [s, s + n) of rank j's block into mine; 0 on failure. */
static int cma_read(const struct gcoll_shm_cma *c, int j, unsigned char *to, size_t s, size_t n)
{
    while (n) {
        struct iovec l = { to + s, n }, r = { (void *)(uintptr_t)(c->addr[j] + s), n };
        ssize_t got = process_vm_readv(c->pid[j], &l, 1, &r, 1, 0);
        if (got <= 0) {
            gcoll_info("shm: single copy: reading %zu bytes of local rank %d failed: %s",
                       n, j, got < 0 ? strerror(errno) : "nothing read");
            return 0;
        }
        s += (size_t)got, n -= (size_t)got;
    }
    return 1;
}

/* Phase 0's address: mine in my line; phase 1 reads every rank's. */
static void cma_publish(gcoll_shm_t *shm, const void *p)
{
    uint64_t a = (uint64_t)(uintptr_t)p;
    memcpy(gcoll_shm_inline(shm, shm->rank, gcoll_shm_wpar(shm)) + CMA_ADDR_AT, &a, sizeof(a));
}

static void cma_gather_addrs(gcoll_shm_t *shm)
{
    for (int j = 0; j < shm->size; j++)
        memcpy(&shm->cma->addr[j], gcoll_shm_inline(shm, j, gcoll_shm_rpar(shm)) + CMA_ADDR_AT,
               sizeof(uint64_t));
}

/* Piece i of every block this rank reads: the root's buffer (bcast), or
 * every peer's block, from the next rank on to spread the readers over
 * the owners (allgather). */
static void cma_read_piece(gcoll_shm_t *shm, gcoll_shm_op_t *o, size_t i)
{
    const struct gcoll_shm_cma *c = shm->cma;
    int me = shm->rank, P = shm->size;
    size_t s = i * (size_t)CMA_PIECE;
    if (o->coll == GCOLL_COLL_BCAST) {
        if (me != o->root && o->bytes > s &&
            !cma_read(c, o->root, o->dst, s, min_sz(CMA_PIECE, o->bytes - s)))
            o->failed = 1;
        return;
    }
    for (int k = 1; k < P && !o->failed; k++) {
        int j = (me + k) % P;
        size_t bytes = gcoll_block_len(o->count, P, j) * o->dts;
        if (bytes > s && !cma_read(c, j, o->dst + gcoll_block_off(o->count, P, j) * o->dts, s,
                                   min_sz(CMA_PIECE, bytes - s)))
            o->failed = 1;
    }
}

void gcoll_shm_cma_body(gcoll_shm_t *shm, gcoll_shm_op_t *o)
{
    if (o->t == 0) {   /* the root's buffer, or my source (in place: my block in dst) */
        if (o->coll != GCOLL_COLL_BCAST) cma_publish(shm, o->src);
        else if (shm->rank == o->root) cma_publish(shm, o->dst);
        return;
    }
    if (o->t == o->last) {
        shm->cma->calls++;
        return;
    }
    if (o->t == 1) cma_gather_addrs(shm);
    cma_read_piece(shm, o, o->t - 1);
}
