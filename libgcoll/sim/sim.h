/* The simulator executor: runs the schedules of all P ranks inside one
 * process, with real data (so results are checked exactly) and an alpha-beta
 * cost model with separate intra- and inter-node parameters (so algorithms
 * can be compared at scales this machine cannot host).
 *
 * Each rank has its own send/recv buffers.  Sends are buffered eagerly;
 * a rank's round completes when all its receives have matching messages.
 * If no rank can advance the schedules are inconsistent: GCOLL_ERR_INTERNAL
 * naming the stuck ranks. */
#ifndef GCOLL_SIM_H
#define GCOLL_SIM_H

#include <stdint.h>
#include "gcoll.h"
#include "core/schedule.h"
#include "algos/algo.h"

typedef struct {
    double alpha_intra, beta_intra;   /* s, s/byte */
    double alpha_inter, beta_inter;
    double gamma;                     /* s/byte reduced */
} gcoll_sim_cost_t;

/* A plausible default: shared memory in a node, 200 Gb/s NIC between nodes. */
extern const gcoll_sim_cost_t gcoll_sim_cost_default;

typedef struct {
    int                   nranks;
    const int            *node_of;    /* [nranks] node index; NULL = one node */
    const gcoll_sim_cost_t *cost;     /* NULL = gcoll_sim_cost_default */
    /* outputs, filled by gcoll_sim_run */
    double                time;       /* predicted completion time (max over ranks) */
    uint64_t             *bytes_sent; /* [nranks] optional */
    uint64_t             *bytes_inter;/* [nranks] optional */
} gcoll_sim_t;

/* Execute scheds[r] for every rank r with sendbufs[r] / recvbufs[r]. */
gcoll_status_t gcoll_sim_run(gcoll_sim_t *sim, gcoll_sched_t *const *scheds,
                             const void *const *sendbufs, void *const *recvbufs);

/* Convenience: build `algo` for every rank of a flat group of sim->nranks with
 * per-rank args (args[r]), then run.  AVG is handled as the library does. */
gcoll_status_t gcoll_sim_run_algo(gcoll_sim_t *sim, const gcoll_algo_t *algo,
                                  const gcoll_coll_args_t *args, gcoll_dtype_t dtype,
                                  gcoll_op_t op, const void *const *sendbufs,
                                  void *const *recvbufs);

#endif
