/* SPDX-License-Identifier: BSD-3-Clause */
/* Hierarchical barrier: node barrier (shm), dissemination among the node
 * leaders, node barrier again (so no rank leaves before every node arrived).
 *
 *   1  NODE barrier    2  leaders: dissemination    3  NODE barrier
 *
 * Cost: 2 shm handshakes + ceil(log2 N) alpha. */
#include "algos/hier/hier.h"
#include "base/status.h"

static gcoll_status_t build(const gcoll_coll_args_t *a, const gcoll_group_t *g, gcoll_sched_t *s)
{
    GCOLL_TRY(gcoll_hier_check(a, g, "barrier hier"));
    gcoll_hier_t h;
    GCOLL_TRY(gcoll_hier_init(&h, g));
    gcoll_status_t st = GCOLL_SUCCESS;
    gcoll_sched_round(s);
    gcoll_sched_node(s, GCOLL_COLL_BARRIER, a->dst, a->src, 1, 0);
    gcoll_sched_round(s);
    if (h.local == 0)
        st = gcoll_hier_run_flat(&gcoll_algo_barrier_dissemination, a, g, h.leaders, h.nnodes,
                                 h.my_node, s);
    gcoll_sched_node(s, GCOLL_COLL_BARRIER, a->dst, a->src, 1, 0);
    gcoll_hier_fini(&h);
    return st;
}

const gcoll_algo_t gcoll_algo_barrier_hier = {
    "hier", GCOLL_COLL_BARRIER, "shm barrier, dissemination among node leaders, shm barrier",
    build };
