/* SPDX-License-Identifier: BSD-3-Clause */
/* Algorithm selection.  Precedence: GCOLL_ALGO (forced per collective) >
 * rows of GCOLL_TUNE > rows of GCOLL_TUNE_FILE > rows of the calibration
 * cache (core/tune_cache.c) > the built-in table; within
 * that order the first row matching the call wins (docs/TUNING.md).  Rows
 * state the conditions their algorithm needs (if=shm, if=regular), so the
 * usual choice never declines; if an algorithm declines anyway, the caller
 * asks gcoll_select_fallback(), which continues with the next matching row.
 * Each decision is logged once at INFO per (collective, size class), naming
 * the row (file:line, "built-in:line") that made it.  Rows naming the
 * pseudo-algorithm mpi are skipped here (they are for the drop-in, which
 * reads them through gcoll_comm_mpi_ranges in gcoll.h, defined in select.c). */
#ifndef GCOLL_SELECT_H
#define GCOLL_SELECT_H

#include "gcoll.h"
#include "base/config.h"
#include "algos/algo.h"
#include "core/tune_table.h"

/* Validate GCOLL_ALGO and load the table in force for a new communicator:
 * GCOLL_ERR_INVALID_ARG with the file, line and reason for a bad table. */
gcoll_status_t gcoll_select_init(gcoll_comm_t comm);

/* Choose the algorithm for a call; fills args->chunk_bytes from the row
 * (0 = the algorithm's default). */
const gcoll_algo_t *gcoll_select(gcoll_comm_t comm, gcoll_coll_args_t *args);

/* The chosen algorithm declined the call (GCOLL_ERR_NOT_SUPPORTED): the next
 * matching row with another algorithm, its parameters in args. */
const gcoll_algo_t *gcoll_select_fallback(gcoll_comm_t comm, gcoll_coll_args_t *args);

/* The table in force for cfg: GCOLL_TUNE rows, then
 * GCOLL_TUNE_FILE's or none, then cache_text's rows (named cache_src; none
 * when cache_src is NULL), then the built-in rows.  gcoll_select_init loads
 * it without cache rows.  Tables are shared and immutable, kept until the
 * process ends (one per distinct content), so the pointer stays valid. */
gcoll_status_t gcoll_select_table(const gcoll_config_t *cfg, const char *cache_src,
                                  const char *cache_text, const gcoll_tune_table_t **table);

/* Put the calibration cache's rows (text, named src) into comm's table,
 * between GCOLL_TUNE_FILE's and the built-in ones; the rest of the table as
 * gcoll_select_init loaded it.  On an error (the text does not parse) the
 * table stays as it was.  Not collective: the caller gives every rank the
 * same text. */
gcoll_status_t gcoll_select_use_cache(gcoll_comm_t comm, const char *src, const char *text);

/* The built-in table, as text in the file format. */
const char *gcoll_select_builtin_text(void);

/* The communicator's part of a table key (nodes, ranks per node, ranks,
 * conditions), with coll, mem and bytes left for the caller. */
void gcoll_select_comm_key(gcoll_comm_t comm, gcoll_tune_key_t *key);

/* Force algo for its collective on comm (NULL: back to the table); what
 * GCOLL_ALGO does, for gcoll_tune's sweeps. */
void gcoll_select_force(gcoll_comm_t comm, gcoll_coll_t coll, const gcoll_algo_t *algo);

/* GCOLL_SUCCESS if algo can serve a call of count elements of dtype on comm
 * (builds its schedule without running it); else the builder's status and
 * sentence (GCOLL_ERR_NOT_SUPPORTED where it declines). */
gcoll_status_t gcoll_select_try(gcoll_comm_t comm, const gcoll_algo_t *algo, size_t count,
                                gcoll_dtype_t dtype);

#endif
