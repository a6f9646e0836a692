/* SPDX-License-Identifier: BSD-3-Clause */
/* Hierarchical allreduce, two forms.
 *
 * "hier" (bandwidth): on a node of L ranks, each rank ends the intra-node
 * reduce-scatter owning one block (1/L) of the node's sum; the ranks with the
 * same local index on every node (a rail) allreduce that block across nodes;
 * an intra-node allgather completes the vector.  Each rank sends only 1/L of
 * the data across the network, the rail allreduces run in parallel.
 *
 *   step  intra-node (NODE, shared memory)   inter-node (rail, transport)
 *   1     reduce-scatter src -> dst[block l]
 *   2                                          allreduce dst[block l] (by size)
 *   3     allgather dst[block l] -> dst
 *
 * Cost: 2 shm passes + rail allreduce of n/L bytes over N nodes:
 *   2 log N alpha + 2 (N-1)/N (n/L) beta (Rabenseifner; ring for big blocks).
 * Needs every node to hold the same number of ranks (so block l has one size
 * on every node); otherwise it builds "hier_leader".
 *
 * "hier_leader" (latency, any shape): intra-node reduce to the node's first
 * rank, allreduce among those leaders, intra-node bcast.
 *
 *   1     reduce src -> dst on local rank 0
 *   2                                          allreduce dst among leaders
 *   3     bcast dst from local rank 0
 *
 * Large vectors are cut into 4 MiB segments whose levels overlap (below).
 *
 * Results are identical on every rank: each element is reduced once, by one
 * rank, and then copied everywhere. */
#include "algos/hier/hier.h"
#include "algos/peers.h"
#include "base/status.h"

static gcoll_status_t build_leader(const gcoll_coll_args_t *a, const gcoll_group_t *g,
                                   gcoll_sched_t *s)
{
    GCOLL_TRY(gcoll_hier_check(a, g, "allreduce hier_leader"));
    gcoll_hier_t h;
    GCOLL_TRY(gcoll_hier_init(&h, g));
    size_t bytes = a->count * a->dt_size;
    gcoll_sched_round(s);
    gcoll_sched_node(s, GCOLL_COLL_REDUCE, a->dst, a->src, bytes, 0);
    gcoll_sched_round(s);
    gcoll_status_t st = GCOLL_SUCCESS;
    if (h.local == 0)
        st = gcoll_hier_allreduce_at(a, g, h.leaders, h.nnodes, h.my_node, a->dst, a->count, s);
    gcoll_sched_node(s, GCOLL_COLL_BCAST, a->dst, a->dst, bytes, 0);
    gcoll_hier_fini(&h);
    return st;
}

/* Large vectors go in segments, pipelined between the levels: while the
 * rail allreduce of segment k is in flight, the node reduce-scatters segment
 * k+1 and allgathers segment k-1 (NODE steps marked early, schedule.h):
 *
 *   round        node (shm, early)        rail (transport)
 *   first        RS(0)
 *   rail(0)..    RS(1)                    allreduce seg 0
 *   rail(1)..    RS(2), AG(0)             allreduce seg 1
 *   ...
 *   last         AG(S-1)
 */

typedef struct {
    size_t       off, len;       /* the segment, elements */
    gcoll_bref_t mine;           /* my block of it in dst */
    size_t       my_count;
} hier_seg_t;

static hier_seg_t hier_seg(const gcoll_coll_args_t *a, const gcoll_hier_t *h, size_t seg_elems,
                           size_t k)
{
    hier_seg_t g;
    g.off = k * seg_elems;
    g.len = a->count - g.off < seg_elems ? a->count - g.off : seg_elems;
    size_t b = gcoll_block_off(g.len, h->local_size, h->local);
    g.mine = gcoll_bref_add(a->dst, (g.off + b) * a->dt_size);
    g.my_count = gcoll_block_len(g.len, h->local_size, h->local);
    return g;
}

static void seg_rs(const gcoll_coll_args_t *a, const hier_seg_t *g, gcoll_sched_t *s, int early,
                   uint32_t round)
{
    gcoll_bref_t src = gcoll_bref_add(a->src, g->off * a->dt_size);
    gcoll_sched_node_at(s, early ? round : GCOLL_SCHED_APPEND, GCOLL_COLL_REDUCE_SCATTER, g->mine,
                        src, g->len * a->dt_size, 0);
}

static void seg_ag(const gcoll_coll_args_t *a, const hier_seg_t *g, gcoll_sched_t *s, int early,
                   uint32_t round)
{
    gcoll_bref_t dst = gcoll_bref_add(a->dst, g->off * a->dt_size);
    gcoll_sched_node_at(s, early ? round : GCOLL_SCHED_APPEND, GCOLL_COLL_ALLGATHER, dst, g->mine,
                        g->len * a->dt_size, 0);
}

static gcoll_status_t build_hier_pipelined(const gcoll_coll_args_t *a, const gcoll_group_t *g,
                                           const gcoll_hier_t *h, size_t seg_elems,
                                           size_t nseg, gcoll_sched_t *s)
{
    gcoll_status_t st = GCOLL_SUCCESS;
    gcoll_sched_round(s);
    hier_seg_t first = hier_seg(a, h, seg_elems, 0);
    seg_rs(a, &first, s, 0, 0);
    gcoll_sched_round(s);
    /* rails run one after another (early NODE steps use the segment, not
     * scratch): each reuses the scratch of the one before */
    size_t base = s->scratch_bytes, high = base;
    for (size_t k = 0; k < nseg && st == GCOLL_SUCCESS; k++) {
        hier_seg_t cur = hier_seg(a, h, seg_elems, k);
        uint32_t r = s->nrounds;   /* the rail of segment k starts here */
        s->scratch_bytes = base;
        st = gcoll_hier_allreduce_at(a, g, h->rail, h->nnodes, h->my_node, cur.mine, cur.my_count,
                                     s);
        if (s->scratch_bytes > high) high = s->scratch_bytes;
        if (k + 1 < nseg) {
            hier_seg_t next = hier_seg(a, h, seg_elems, k + 1);
            seg_rs(a, &next, s, 1, r);
        }
        if (k >= 1) {
            hier_seg_t prev = hier_seg(a, h, seg_elems, k - 1);
            seg_ag(a, &prev, s, 1, r);
        }
        gcoll_sched_round(s);
    }
    s->scratch_bytes = high;
    hier_seg_t last = hier_seg(a, h, seg_elems, nseg - 1);
    seg_ag(a, &last, s, 0, 0);
    return st;
}

static gcoll_status_t build_hier(const gcoll_coll_args_t *a, const gcoll_group_t *g,
                                 gcoll_sched_t *s)
{
    GCOLL_TRY(gcoll_hier_check(a, g, "allreduce hier"));
    gcoll_hier_t h;
    GCOLL_TRY(gcoll_hier_init(&h, g));
    if (!h.uniform) {
        gcoll_hier_fini(&h);
        return build_leader(a, g, s);
    }
    /* args->chunk_bytes, when set, is this pipeline's segment (the rail
     * algorithm then uses its own default chunk) */
    size_t seg_elems = gcoll_hier_segment(a, (size_t)h.local_size);
    size_t nseg = (a->count + seg_elems - 1) / seg_elems;
    gcoll_status_t st;
    if (nseg >= 2) {
        st = build_hier_pipelined(a, g, &h, seg_elems, nseg, s);
    } else {
        hier_seg_t one = hier_seg(a, &h, a->count ? a->count : 1, 0);
        gcoll_sched_round(s);
        seg_rs(a, &one, s, 0, 0);
        gcoll_sched_round(s);
        st = gcoll_hier_allreduce_at(a, g, h.rail, h.nnodes, h.my_node, one.mine, one.my_count, s);
        seg_ag(a, &one, s, 0, 0);
    }
    gcoll_hier_fini(&h);
    return st;
}

const gcoll_algo_t gcoll_algo_allreduce_hier = {
    "hier", GCOLL_COLL_ALLREDUCE,
    "node reduce-scatter (shm), rail allreduce across nodes, node allgather (shm)",
    build_hier };
const gcoll_algo_t gcoll_algo_allreduce_hier_leader = {
    "hier_leader", GCOLL_COLL_ALLREDUCE,
    "node reduce to leader (shm), leaders allreduce, node bcast (shm); any node shape",
    build_leader };
