/* SPDX-License-Identifier: BSD-3-Clause */
/* Requests are pooled per communicator: a request returned to the pool
 * keeps its schedule arrays, scratch and transport slots, so a warm call
 * allocates nothing. */
#ifndef GCOLL_REQUEST_POOL_H
#define GCOLL_REQUEST_POOL_H

#include "core/request.h"

struct gcoll_comm;

/* Under the engine lock (all three below). */
/* A request of comm, from its pool or new; counted in comm->nrequests. */
gcoll_status_t gcoll_request_get(struct gcoll_comm *comm, struct gcoll_request **r);
/* Back to the pool (r must not be active). */
void gcoll_request_put(struct gcoll_request *r);
/* Scratch of at least bytes for r's schedule, kept with the request. */
gcoll_status_t gcoll_request_scratch(struct gcoll_request *r, size_t bytes);
/* A request of comm already complete with outcome (and this thread's last
 * error as its sentence): what eager nonblocking calls hand back. */
gcoll_status_t gcoll_request_completed(struct gcoll_comm *comm, gcoll_status_t outcome,
                                       struct gcoll_request **out);
/* Free comm's pool (at destroy, when nothing is outstanding). */
void gcoll_request_pool_free(struct gcoll_comm *comm);

#endif
