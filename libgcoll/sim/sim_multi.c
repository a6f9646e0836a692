/* SPDX-License-Identifier: BSD-3-Clause */
/* Several requests outstanding on every rank at once, as the progress
 * engine runs them (sim.h, gcoll_sim_run_multi).
 *
 * Request k's ranks become virtual ranks k*P .. k*P + P-1 of one larger
 * simulation: its messages then never meet another request's (the engine
 * gives each request its own tag), the simulator's scheduler interleaves
 * all K*P schedules round by round, and each request's data must come out
 * exactly as when it runs alone.  Each request gathers its own node for
 * NODE steps.  Timing is optimistic: a request gets links and NICs of its
 * own, where on a real rank the K requests share them. */
#include <stdlib.h>
#include <string.h>
#include "base/alloc.h"
#include "sim/sim.h"
#include "base/status.h"

/* s with every SEND/RECV peer moved by shift, into a private step array. */
static gcoll_status_t shifted(const gcoll_sched_t *s, int shift, gcoll_sched_t *out)
{
    *out = *s;
    out->steps = gcoll_malloc((s->nsteps ? s->nsteps : 1) * sizeof(*s->steps));
    if (!out->steps) return GCOLL_ERROR(GCOLL_ERR_NO_MEMORY, "simulator: no memory for steps");
    memcpy(out->steps, s->steps, s->nsteps * sizeof(*s->steps));
    for (uint32_t i = 0; i < s->nsteps; i++)
        if (gcoll_step_is_comm(&out->steps[i])) out->steps[i].peer += shift;
    return GCOLL_SUCCESS;
}

static int nodes_of(const int *node_of, int P)
{
    int n = 0;
    for (int r = 0; node_of && r < P; r++)
        if (node_of[r] + 1 > n) n = node_of[r] + 1;
    return node_of ? n : 1;
}

gcoll_status_t gcoll_sim_run_multi(gcoll_sim_t *sim, int nreq, gcoll_sched_t *const *scheds,
                                   const void *const *sendbufs, void *const *recvbufs)
{
    if (!sim || nreq <= 0 || sim->nranks <= 0 || !scheds)
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "simulator: needs nranks > 0, nreq > 0 and "
                           "schedules");
    int P = sim->nranks, V = nreq * P, nn = nodes_of(sim->node_of, P);
    gcoll_status_t st = GCOLL_SUCCESS;
    gcoll_sched_t *copies = gcoll_calloc((size_t)V, sizeof(*copies));
    gcoll_sched_t **ptrs = gcoll_calloc((size_t)V, sizeof(*ptrs));
    int *vnode = gcoll_malloc((size_t)V * sizeof(int));
    size_t *vsizes = gcoll_malloc(2 * (size_t)V * sizeof(size_t));
    uint64_t *vsent = gcoll_calloc(2 * (size_t)V, sizeof(uint64_t));
    int made = 0;
    if (!copies || !ptrs || !vnode || !vsizes || !vsent) {
        st = GCOLL_ERROR(GCOLL_ERR_NO_MEMORY, "simulator: no memory for %d requests", nreq);
        goto out;
    }
    for (int v = 0; v < V; v++) {
        int k = v / P, r = v % P;
        if ((st = shifted(scheds[v], k * P, &copies[v])) != GCOLL_SUCCESS) goto out;
        made++;
        ptrs[v] = &copies[v];
        vnode[v] = k * nn + (sim->node_of ? sim->node_of[r] : 0);
        vsizes[v] = sim->send_bytes ? sim->send_bytes[v] : SIZE_MAX;
        vsizes[V + v] = sim->recv_bytes ? sim->recv_bytes[v] : SIZE_MAX;
    }
    gcoll_sim_t run = *sim;
    run.nranks = V;
    run.node_of = vnode;
    run.send_bytes = sim->send_bytes ? vsizes : NULL;
    run.recv_bytes = sim->recv_bytes ? vsizes + V : NULL;
    run.bytes_sent = vsent;
    run.bytes_inter = vsent + V;
    st = gcoll_sim_run(&run, ptrs, sendbufs, recvbufs);
    sim->time = run.time;
    for (int v = 0; v < V; v++) {   /* per real rank, over its requests */
        if (sim->bytes_sent) sim->bytes_sent[v % P] += vsent[v];
        if (sim->bytes_inter) sim->bytes_inter[v % P] += vsent[V + v];
    }
out:
    for (int v = 0; v < made; v++) free(copies[v].steps);
    free(copies);
    free(ptrs);
    free(vnode);
    free(vsizes);
    free(vsent);
    return st;
}
