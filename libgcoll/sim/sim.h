/* SPDX-License-Identifier: BSD-3-Clause */
/* The simulator executor: runs the schedules of all P ranks inside one
 * process, with real data (so results are checked exactly) and an alpha-beta
 * cost model with separate intra- and inter-node parameters (so algorithms
 * can be compared at scales this machine cannot host).
 *
 * Each rank has its own send/recv buffers and its own scratch (filled with a
 * garbage pattern, so a schedule that reads scratch it never wrote is caught
 * by the result check).  Sends are buffered eagerly; a rank's round completes
 * when all its receives have matching messages.  Every inconsistency is
 * GCOLL_ERR_INTERNAL with a sentence naming ranks and rounds:
 *   - no rank can advance while some are unfinished (deadlock),
 *   - a matched send and receive disagree on size,
 *   - messages are left unreceived at the end,
 *   - a step is malformed: peer out of range, writes to the send buffer,
 *     reaches outside a buffer of known size, partially overlapping operands,
 *   - the ranks of a node disagree on a NODE step.
 * NODE steps run as shm/shm.h specifies, among the ranks that node_of puts
 * on one node (all ranks when node_of is NULL).
 *
 * Cost model (documented in full in sim.c): every rank has a clock; a send
 * leaves when the rank's link (one intra-node and one inter-node link per
 * rank) has pushed out the round's earlier sends and arrives alpha later; a
 * round's communication ends when its sends have left and its receives have
 * arrived; local steps then cost gamma per byte. */
#ifndef GCOLL_SIM_H
#define GCOLL_SIM_H

#include <stdint.h>
#include "gcoll.h"
#include "core/schedule.h"
#include "algos/algo.h"

typedef struct {
    double alpha_intra, beta_intra;   /* s, s/byte */
    double alpha_inter, beta_inter;   /* beta_inter: of one NIC */
    double gamma;                     /* s/byte reduced */
    int    nics_per_node;             /* the ranks of a node share this many NICs
                                         (local rank l sends through NIC l % n);
                                         0: every rank has a NIC of its own */
} gcoll_sim_cost_t;

/* A plausible default: intra-node alpha 0.5 us, 20 GB/s (shared memory /
 * a PCIe-class GPU link); inter-node alpha 2 us, 25 GB/s (a 200 Gb/s NIC),
 * one NIC per node that the node's ranks share; local steps 20 GB/s (one
 * streaming pass over memory). */
extern const gcoll_sim_cost_t gcoll_sim_cost_default;

typedef struct {
    int                   nranks;
    const int            *node_of;    /* [nranks] node index; NULL = one node */
    const gcoll_sim_cost_t *cost;     /* NULL = gcoll_sim_cost_default */
    /* [nranks] optional sizes of sendbufs[r] / recvbufs[r]: a step reaching
     * outside them is an error.  NULL = unchecked (a NULL buffer always
     * counts as 0 bytes).  gcoll_sim_run_algo derives them from args when
     * they are NULL. */
    const size_t         *send_bytes;
    const size_t         *recv_bytes;
    /* outputs, filled by gcoll_sim_run */
    double                time;       /* predicted completion time (max over ranks) */
    uint64_t             *bytes_sent; /* [nranks] optional */
    uint64_t             *bytes_inter;/* [nranks] optional */
} gcoll_sim_t;

/* Execute scheds[r] for every rank r with sendbufs[r] / recvbufs[r] (either
 * may be NULL where the schedule does not use it).  Sets sim->time and, if
 * given, sim->bytes_sent / sim->bytes_inter.  A schedule whose status is a
 * build failure is returned as is. */
gcoll_status_t gcoll_sim_run(gcoll_sim_t *sim, gcoll_sched_t *const *scheds,
                             const void *const *sendbufs, void *const *recvbufs);

/* Convenience: build `algo` for every rank of a flat group of sim->nranks with
 * per-rank args (args[r]), then run.  The group carries sim->node_of, and
 * GCOLL_ARGS_NODE_STEPS is set (the simulator runs NODE steps).  AVG is
 * handled as the library does (gcoll_algo_build).  A builder's failure is
 * returned as is (GCOLL_ERR_NOT_SUPPORTED where it declines the call). */
gcoll_status_t gcoll_sim_run_algo(gcoll_sim_t *sim, const gcoll_algo_t *algo,
                                  const gcoll_coll_args_t *args, gcoll_dtype_t dtype,
                                  gcoll_op_t op, const void *const *sendbufs,
                                  void *const *recvbufs);

/* nreq requests outstanding on every rank at once, interleaved as the
 * progress engine runs them: scheds[k * nranks + r] is request k of rank r
 * (likewise sendbufs, recvbufs and sim->send_bytes / recv_bytes), each
 * request's messages kept apart as the engine's tags keep them.  Results
 * are exact; sim->time is optimistic (requests do not share links);
 * bytes_sent / bytes_inter, if given, are summed per rank (zero them). */
gcoll_status_t gcoll_sim_run_multi(gcoll_sim_t *sim, int nreq, gcoll_sched_t *const *scheds,
                                   const void *const *sendbufs, void *const *recvbufs);

#endif
