/* SPDX-License-Identifier: BSD-3-Clause */
/* Hierarchical allgather (nodes of equal size holding consecutive ranks):
 * each node gathers its blocks through shared memory into their place in dst,
 * the node leaders allgather whole node regions across nodes, and each node
 * broadcasts the full result from its leader through shared memory.
 *
 *   step  intra-node (NODE, shm)              inter-node (leaders, transport)
 *   1     allgather block -> dst[node region]
 *   2                                         allgather node regions (ring/bruck)
 *   3     bcast dst from the leader
 *
 * Cost: shm pass + leaders' allgather of N regions of L n bytes + shm bcast
 * of P n bytes.  Other shapes: GCOLL_ERR_NOT_SUPPORTED (the caller falls back
 * to a flat algorithm).
 *
 * Large regions (>= 1 MiB, or args->chunk_bytes when set) over 3 nodes or
 * more are pipelined along the leaders' ring rather than by element ranges
 * (a rank's block is one piece of its node's region, so a range of elements
 * is scattered over every node's region, and a NODE step takes one
 * contiguous range).  Regions are contiguous in dst, and the leader of node
 * i receives region i-k-1 (mod N) in ring step k, so it can bcast that
 * region to its node while step k+1 forwards it (both only read it):
 *
 *   round   node (shm)                  leaders' ring (transport)
 *   first   allgather -> dst[region i]
 *   k = 0                               send region i,     recv region i-1
 *   k       bcast region i-k (early)    send region i-k,   recv region i-k-1
 *   last    bcast region i+1            (ring done: N-1 steps)
 *
 * The node's own region needs no bcast: the first step's allgather left it
 * on every member.  Members run only the NODE steps, in the same order
 * (regions i-1, i-2, ..., i+1: fixed by the node, so the same on all its
 * ranks).  Cost: the ring plus one region's shm bcast; with 2 nodes the only
 * region received arrives in the last step, nothing overlaps, so 2 nodes
 * keep the plain form. */
#include "algos/hier/hier.h"
#include "algos/peers.h"
#include "base/status.h"

/* Region bytes from which to pipeline: below, N-1 node syncs cost more than they hide. */
#define HIER_PIPE_MIN (1u << 20)

typedef struct {
    const gcoll_coll_args_t *a;
    const gcoll_hier_t      *h;
    size_t                   region;   /* bytes of one node's region */
} ag_plan_t;

static gcoll_bref_t region_at(const ag_plan_t *p, int j)
{
    int n = p->h->nnodes;
    return gcoll_bref_add(p->a->dst, p->region * (size_t)(((j % n) + n) % n));
}

/* Node bcast of region j from the leader; early in round r when asked. */
static void region_bcast(const ag_plan_t *p, int j, gcoll_sched_t *s, int early, uint32_t r)
{
    gcoll_bref_t at = region_at(p, j);
    gcoll_sched_node_at(s, early ? r : GCOLL_SCHED_APPEND, GCOLL_COLL_BCAST, at, at, p->region, 0);
}

/* The leader's ring step k, with the bcast of the region step k-1 received. */
static void ring_step(const ag_plan_t *p, const gcoll_group_t *g, int k, gcoll_sched_t *s)
{
    int i = p->h->my_node, n = p->h->nnodes;
    int next = gcoll_group_rank(g, p->h->leaders[gcoll_ring_next(i, n)]);
    int prev = gcoll_group_rank(g, p->h->leaders[gcoll_ring_prev(i, n)]);
    gcoll_sched_send(s, next, region_at(p, i - k), p->region);
    gcoll_sched_recv(s, prev, region_at(p, i - k - 1), p->region);
    if (k >= 1) region_bcast(p, i - k, s, 1, s->nrounds);   /* the open round */
    gcoll_sched_round(s);
}

static void build_pipelined(const ag_plan_t *p, const gcoll_group_t *g, gcoll_sched_t *s)
{
    int i = p->h->my_node, n = p->h->nnodes;
    gcoll_sched_round(s);
    gcoll_sched_node(s, GCOLL_COLL_ALLGATHER, region_at(p, i), p->a->src, p->region, 0);
    gcoll_sched_round(s);
    if (p->h->local == 0) {
        for (int k = 0; k < n - 1; k++) ring_step(p, g, k, s);
    } else {
        for (int k = 1; k < n - 1; k++) region_bcast(p, i - k, s, 0, 0);
    }
    region_bcast(p, i - (n - 1), s, 0, 0);
}

static gcoll_status_t build_plain(const ag_plan_t *p, const gcoll_group_t *g, gcoll_sched_t *s)
{
    const gcoll_coll_args_t *a = p->a;
    const gcoll_hier_t *h = p->h;
    gcoll_bref_t mine = region_at(p, h->my_node);
    gcoll_status_t st = GCOLL_SUCCESS;
    gcoll_sched_round(s);
    gcoll_sched_node(s, GCOLL_COLL_ALLGATHER, mine, a->src, p->region, 0);
    gcoll_sched_round(s);
    if (h->local == 0) {
        gcoll_coll_args_t ga = *a;
        ga.count = a->count * (size_t)h->local_size;
        ga.src = mine;
        st = gcoll_hier_run_flat(p->region <= 65536 ? &gcoll_algo_allgather_bruck
                                                    : &gcoll_algo_allgather_ring,
                                 &ga, g, h->leaders, h->nnodes, h->my_node, s);
    }
    gcoll_sched_node(s, GCOLL_COLL_BCAST, a->dst, a->dst, p->region * (size_t)h->nnodes, 0);
    return st;
}

static gcoll_status_t build(const gcoll_coll_args_t *a, const gcoll_group_t *g, gcoll_sched_t *s)
{
    GCOLL_TRY(gcoll_hier_check(a, g, "allgather hier"));
    gcoll_hier_t h;
    GCOLL_TRY(gcoll_hier_init(&h, g));
    gcoll_status_t st = gcoll_hier_check_regular(&h, "allgather hier");
    ag_plan_t p = { a, &h, a->count * a->dt_size * (size_t)h.local_size };
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

const gcoll_algo_t gcoll_algo_allgather_hier = {
    "hier", GCOLL_COLL_ALLGATHER,
    "shm gather per node, leaders allgather node regions, shm bcast (equal, consecutive nodes)",
    build };
