/* SPDX-License-Identifier: BSD-3-Clause */
/* Hierarchical reduce_scatter (nodes of equal size holding consecutive
 * ranks): each node reduces the whole input to its leader through shared
 * memory, the leaders reduce-scatter node regions across nodes (ring), and
 * each node's leader hands every member its block through a shared-memory
 * bcast of the node region.
 *
 *   step  intra-node (NODE, shm)              inter-node (leaders, transport)
 *   1     reduce src -> leader's scratch
 *   2                                         reduce_scatter node regions (ring)
 *   3     bcast node region from the leader; copy own block to dst
 *
 * Cost: shm reduce of P n bytes + ring reduce_scatter of N regions + shm
 * bcast of L n bytes.  Other shapes: GCOLL_ERR_NOT_SUPPORTED.
 *
 * Large regions (>= 1 MiB, or args->chunk_bytes when set) over 3 nodes or
 * more are pipelined along the leaders' ring, which this file then runs
 * itself (one message per region and step, so the round of each step is
 * known).  Region j of src (the blocks of node j's ranks) is contiguous, and
 * the leader of node i needs the node's sum of region q(k) = i-k-2 (mod N)
 * only for the reduction that ends ring step k, so the node reduces region
 * q(k+1) while step k's messages are in flight:
 *
 *   round   node (shm)                 leaders' ring (transport)
 *   first   reduce q(-1), q(0)
 *   k       reduce q(k+1) (early)      send slot(k-1), recv x; slot(k) = x op slot(k)
 *   N-2                                send slot(N-3), recv x; slot(N-2) = x op slot(N-2)
 *   last    bcast slot(N-2) (= region i, the node's result); copy own block
 *
 * A region lives from its node reduce (step k-1) to its send (step k+1), so
 * three rotating region slots suffice (slot(k) = (k+1) mod 3: the early
 * step, the reduction and the send of one round use three different ones);
 * with the receive buffer x a leader needs 4 regions of scratch instead of
 * N + 1, a member one.  Members run only the NODE steps, regions q(-1) ..
 * q(N-2) in that order (fixed by the node).  Compared with the plain form
 * the ring is not cut into chunks, so each step's reduction follows its
 * message instead of overlapping it; what overlaps, the node reduce, reads
 * L regions per region and is the larger cost.  Cost: two regions' node
 * reduces + the ring + one region's shm bcast.  With 2 nodes both regions
 * are needed before the one ring step, nothing overlaps: the plain form. */
#include "algos/hier/hier.h"
#include "algos/peers.h"
#include "base/status.h"

#define HIER_PIPE_MIN (1u << 20)   /* region bytes: below, N node syncs cost more than they hide */

typedef struct {
    const gcoll_coll_args_t *a;
    const gcoll_hier_t      *h;
    size_t                   region;   /* bytes of one node's region */
    gcoll_bref_t             slots;    /* 3 regions (a member: 1, its result) */
    gcoll_bref_t             x;        /* leader: the partial sum received */
} rs_plan_t;

static int mod(int a, int n) { return ((a % n) + n) % n; }

/* Slot of the region needed in ring step k (k = -1: the one step 0 sends). */
static gcoll_bref_t slot(const rs_plan_t *p, int k)
{
    size_t at = p->h->local == 0 ? (size_t)((k + 1) % 3) : 0;
    return gcoll_bref_add(p->slots, at * p->region);
}

/* Node reduce of region q(k) = i-k-2 of src into slot(k) on the leader. */
static void region_reduce(const rs_plan_t *p, int k, gcoll_sched_t *s, int early)
{
    int q = mod(p->h->my_node - k - 2, p->h->nnodes);
    gcoll_bref_t src = gcoll_bref_add(p->a->src, p->region * (size_t)q);
    gcoll_sched_node_at(s, early ? s->nrounds : GCOLL_SCHED_APPEND, GCOLL_COLL_REDUCE, slot(p, k),
                        src, p->region, 0);
}

/* The leader's ring step k, with the node reduce step k+1 needs. */
static void ring_step(const rs_plan_t *p, const gcoll_group_t *g, int k, gcoll_sched_t *s)
{
    int i = p->h->my_node, n = p->h->nnodes;
    gcoll_sched_send(s, gcoll_group_rank(g, p->h->leaders[gcoll_ring_next(i, n)]),
                     slot(p, k - 1), p->region);
    gcoll_sched_recv(s, gcoll_group_rank(g, p->h->leaders[gcoll_ring_prev(i, n)]), p->x,
                     p->region);
    if (k + 1 <= n - 2) region_reduce(p, k + 1, s, 1);
    gcoll_sched_reduce(s, slot(p, k), p->x, slot(p, k), p->region);
    gcoll_sched_round(s);
}

static void build_pipelined(rs_plan_t *p, const gcoll_group_t *g, gcoll_sched_t *s)
{
    const gcoll_hier_t *h = p->h;
    int n = h->nnodes;
    size_t block = p->region / (size_t)h->local_size;
    p->slots = gcoll_sched_scratch(s, p->region * (h->local == 0 ? 3 : 1));
    p->x = h->local == 0 ? gcoll_sched_scratch(s, p->region) : p->slots;
    gcoll_sched_round(s);
    region_reduce(p, -1, s, 0);
    region_reduce(p, 0, s, 0);
    gcoll_sched_round(s);
    if (h->local == 0) {
        for (int k = 0; k <= n - 2; k++) ring_step(p, g, k, s);
    } else {
        for (int k = 1; k <= n - 2; k++) region_reduce(p, k, s, 0);
    }
    gcoll_bref_t mine = slot(p, n - 2);
    gcoll_sched_node(s, GCOLL_COLL_BCAST, mine, mine, p->region, 0);
    gcoll_sched_round(s);
    gcoll_sched_copy(s, p->a->dst, gcoll_bref_add(mine, block * (size_t)h->local), block);
}

static gcoll_status_t build_plain(const rs_plan_t *p, const gcoll_group_t *g, gcoll_sched_t *s)
{
    const gcoll_coll_args_t *a = p->a;
    const gcoll_hier_t *h = p->h;
    size_t block = p->region / (size_t)h->local_size;
    gcoll_bref_t tmp = gcoll_sched_scratch(s, p->region * (size_t)h->nnodes);
    gcoll_bref_t mine = gcoll_bref_add(tmp, p->region * (size_t)h->my_node);
    gcoll_status_t st = GCOLL_SUCCESS;
    gcoll_sched_round(s);
    gcoll_sched_node(s, GCOLL_COLL_REDUCE, tmp, a->src, p->region * (size_t)h->nnodes, 0);
    gcoll_sched_round(s);
    if (h->local == 0) {
        gcoll_coll_args_t ra = *a;
        ra.count = a->count * (size_t)h->local_size;
        ra.src = tmp;
        ra.dst = mine;
        st = gcoll_hier_run_flat(&gcoll_algo_reduce_scatter_ring, &ra, g, h->leaders,
                                 h->nnodes, h->my_node, s);
    }
    gcoll_sched_node(s, GCOLL_COLL_BCAST, mine, mine, p->region, 0);
    gcoll_sched_round(s);
    gcoll_sched_copy(s, a->dst, gcoll_bref_add(mine, block * (size_t)h->local), block);
    return st;
}

static gcoll_status_t build(const gcoll_coll_args_t *a, const gcoll_group_t *g, gcoll_sched_t *s)
{
    GCOLL_TRY(gcoll_hier_check(a, g, "reduce_scatter hier"));
    gcoll_hier_t h;
    GCOLL_TRY(gcoll_hier_init(&h, g));
    gcoll_status_t st = gcoll_hier_check_regular(&h, "reduce_scatter hier");
    rs_plan_t p = { a, &h, a->count * a->dt_size * (size_t)h.local_size, a->dst, a->dst };
    /* args->chunk_bytes, when set, is the smallest region pipelined */
    size_t min = a->chunk_bytes ? a->chunk_bytes : HIER_PIPE_MIN;
    if (st == GCOLL_SUCCESS) {
        if (h.nnodes >= 3 && p.region >= min) {
            build_pipelined(&p, g, s);
            st = s->status;
        } else {
            st = build_plain(&p, g, s);
        }
    }
    gcoll_hier_fini(&h);
    return st;
}

const gcoll_algo_t gcoll_algo_reduce_scatter_hier = {
    "hier", GCOLL_COLL_REDUCE_SCATTER,
    "shm reduce per node, leaders reduce-scatter node regions, shm bcast (equal, consecutive nodes)",
    build };
