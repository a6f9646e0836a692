/* The host executor runs one rank's schedule over the communicator's
 * transport.  Internally nonblocking (start + progress); the blocking
 * collectives are start + wait.  Waiting spins on progress and yields the CPU
 * after a short spin so that oversubscribed runs still move. */
#ifndef GCOLL_EXECUTOR_H
#define GCOLL_EXECUTOR_H

#include "gcoll.h"
#include "core/schedule.h"

/* Run s to completion on comm with the user's buffers.  Counts bytes sent
 * (split intra/inter-node) into comm->stats.  Honours GCOLL_TIMEOUT. */
gcoll_status_t gcoll_exec_run(gcoll_comm_t comm, const gcoll_sched_t *s, const void *sendbuf,
                              void *recvbuf);

#endif
