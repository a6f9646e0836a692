/* SPDX-License-Identifier: BSD-3-Clause */
/* Bruck's alltoall, for small messages: ceil(log2 P) steps for any P.
 *
 * Number the blocks of index me by distance: block j (j = 0 .. P-1) is the
 * one for me + j.  In step k every rank sends to me + 2^k all blocks whose
 * distance has bit k set, packed into one message, and the receiver keeps
 * them under the same distance.  A block travels the binary digits of its
 * distance, so after the last step the block under distance j at me is the
 * one rank me - j had for me.
 *
 * The classical version rotates sendbuf into a work array first and rotates
 * back at the end.  Here a block is read from sendbuf while it has not
 * moved (no bit below k set in j) and is kept, once received, in its final
 * place recvbuf[me - j]: no rotations.  Packing and unpacking are copy steps
 * through scratch, done in the local phase of the round before (pack) and of
 * the round itself (unpack).  If sendbuf is recvbuf, sendbuf is copied to
 * scratch first.
 *
 * Cost, per block of n bytes: L alpha + L P/2 n beta, plus L P n bytes copied
 * locally: fewer messages than pairwise's P-1, but log P times the volume.
 *
 *   P = 5, me 0   sends to  blocks (distance j)   kept in recvbuf at
 *   step 0        1         1, 3                  4, 2
 *   step 1        2         2, 3                  3, 2
 *   step 2        4         4                     1
 */
#include "algos/algo.h"
#include "algos/peers.h"

typedef struct {
    const gcoll_coll_args_t *args;
    const gcoll_group_t     *g;
    size_t                   block;        /* bytes */
    gcoll_bref_t             src;          /* sendbuf, or its copy when in place */
    gcoll_bref_t             sbuf, rbuf;   /* packed blocks of one step */
} bruck_plan_t;

/* Where the block of distance j is before step `bit`: still in sendbuf if it
 * has not moved yet, else in its final place in recvbuf. */
static gcoll_bref_t block_now(const bruck_plan_t *pl, int j, int bit)
{
    int n = pl->g->size, me = pl->g->me;
    if ((j & (bit - 1)) == 0)
        return gcoll_bref_add(pl->src, (size_t)((me + j) % n) * pl->block);
    return gcoll_bref_add(pl->args->dst, (size_t)((me - j + n) % n) * pl->block);
}

static void pack(const bruck_plan_t *pl, int bit, gcoll_sched_t *s)
{
    size_t i = 0;
    for (int j = bit; j < pl->g->size; j++) {
        if (!(j & bit)) continue;
        gcoll_sched_copy(s, gcoll_bref_add(pl->sbuf, i++ * pl->block), block_now(pl, j, bit),
                         pl->block);
    }
}

static void unpack(const bruck_plan_t *pl, int bit, gcoll_sched_t *s)
{
    int n = pl->g->size, me = pl->g->me;
    size_t i = 0;
    for (int j = bit; j < n; j++) {
        if (!(j & bit)) continue;
        gcoll_bref_t home = gcoll_bref_add(pl->args->dst, (size_t)((me - j + n) % n) * pl->block);
        gcoll_sched_copy(s, home, gcoll_bref_add(pl->rbuf, i++ * pl->block), pl->block);
    }
}

/* Blocks moved in one step: at most half of them. */
static size_t blocks_in_step(int n, int bit)
{
    size_t c = 0;
    for (int j = bit; j < n; j++) c += (j & bit) != 0;
    return c;
}

static void bruck_steps(bruck_plan_t *pl, gcoll_sched_t *s)
{
    int n = pl->g->size, me = pl->g->me;
    pack(pl, 1, s);
    for (int bit = 1; bit < n; bit *= 2) {
        gcoll_sched_round(s);   /* this step's pack is done */
        size_t bytes = blocks_in_step(n, bit) * pl->block;
        gcoll_sched_send(s, gcoll_group_rank(pl->g, (me + bit) % n), pl->sbuf, bytes);
        gcoll_sched_recv(s, gcoll_group_rank(pl->g, (me - bit + n) % n), pl->rbuf, bytes);
        unpack(pl, bit, s);
        if (2 * bit < n) pack(pl, 2 * bit, s);   /* after unpack: it may pick up arrivals */
    }
    gcoll_sched_round(s);
}

static gcoll_status_t alltoall_bruck_build(const gcoll_coll_args_t *args, const gcoll_group_t *g,
                                           gcoll_sched_t *s)
{
    int n = g->size;
    bruck_plan_t pl = { .args = args, .g = g, .block = args->count * args->dt_size,
                        .src = args->src };
    if (pl.block == 0) return s->status;

    gcoll_sched_round(s);   /* never share a round with what was built before */
    gcoll_sched_copy(s, gcoll_bref_add(args->dst, (size_t)g->me * pl.block),
                     gcoll_bref_add(args->src, (size_t)g->me * pl.block), pl.block);
    if (n == 1) {
        gcoll_sched_round(s);
        return s->status;
    }
    if (gcoll_bref_eq(args->src, args->dst)) {
        pl.src = gcoll_sched_scratch(s, (size_t)n * pl.block);
        gcoll_sched_copy(s, pl.src, args->src, (size_t)n * pl.block);
    }
    size_t most = (size_t)(n / 2) * pl.block;
    pl.sbuf = gcoll_sched_scratch(s, most);
    pl.rbuf = gcoll_sched_scratch(s, most);
    bruck_steps(&pl, s);
    return s->status;
}

const gcoll_algo_t gcoll_algo_alltoall_bruck = {
    .name    = "bruck",
    .coll    = GCOLL_COLL_ALLTOALL,
    .summary = "Bruck's log P steps of packed blocks, any P; for small messages",
    .build   = alltoall_bruck_build,
};
