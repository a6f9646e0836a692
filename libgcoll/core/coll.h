/* SPDX-License-Identifier: BSD-3-Clause */
/* What the public calls (coll.c) offer inside the library: posting a child
 * collective from an engine task. */
#ifndef GCOLL_COLL_H
#define GCOLL_COLL_H

#include "core/request.h"

struct gcoll_comm;

/* Under the engine lock, from a task: post collective k on comm (a
 * sub-communicator) as a regular request on the engine's list.  The task
 * finds it done when !child->active, takes child->status (and child->err)
 * and gives it back with gcoll_request_put.  Host buffers only; no
 * GCOLL_CHECK (that would call MPI from the progress thread). */
gcoll_status_t gcoll_coll_post_child(struct gcoll_comm *comm, const gcoll_call_t *k,
                                     struct gcoll_request **child);

#endif
