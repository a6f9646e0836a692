/* Algorithm selection: GCOLL_ALGO (forced), else the selection rules by
 * collective, memory type, size and topology.  Each decision is logged once
 * at INFO per (collective, size class). */
#ifndef GCOLL_SELECT_H
#define GCOLL_SELECT_H

#include "gcoll.h"
#include "algos/algo.h"

/* Validate GCOLL_ALGO (and tables) for a new communicator. */
gcoll_status_t gcoll_select_init(gcoll_comm_t comm);

/* Choose the algorithm for a call; may fill args->chunk_bytes / radix. */
const gcoll_algo_t *gcoll_select(gcoll_comm_t comm, gcoll_coll_args_t *args);

/* The flat algorithm the built-in rules choose, for when the chosen one
 * declined the call (GCOLL_ERR_NOT_SUPPORTED). */
const gcoll_algo_t *gcoll_select_fallback(gcoll_comm_t comm, const gcoll_coll_args_t *args);

#endif
