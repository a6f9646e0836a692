/* SPDX-License-Identifier: BSD-3-Clause */
/* The one configuration table.  Every GCOLL_* environment variable is an entry
 * of gcoll_config_table[] in config.c (name, default, documentation, parser,
 * field); gcoll_config_load() parses them all into gcoll_config, rejecting a
 * malformed value with a sentence, and gcoll_info prints the table. */
#ifndef GCOLL_CONFIG_H
#define GCOLL_CONFIG_H

#include <stddef.h>
#include "gcoll.h"

#define GCOLL_CONFIG_STR_MAX 1024

typedef enum { GCOLL_TRANSPORT_AUTO = 0, GCOLL_TRANSPORT_UCX, GCOLL_TRANSPORT_MPI } gcoll_transport_kind_t;

typedef enum { GCOLL_PROGRESS_AUTO = 0, GCOLL_PROGRESS_CALLER, GCOLL_PROGRESS_THREAD } gcoll_progress_kind_t;

typedef enum { GCOLL_SHM_STREAM_AUTO = 0, GCOLL_SHM_STREAM_OFF, GCOLL_SHM_STREAM_ON } gcoll_shm_stream_t;
typedef enum { GCOLL_SHM_CMA_AUTO = 0, GCOLL_SHM_CMA_OFF, GCOLL_SHM_CMA_ON } gcoll_shm_cma_t;

typedef struct {
    int    debug;                          /* GCOLL_DEBUG: gcoll_log_level_t */
    char   algo[GCOLL_CONFIG_STR_MAX];     /* GCOLL_ALGO: "allreduce=ring,bcast=binomial" */
    char   tune_file[GCOLL_CONFIG_STR_MAX];/* GCOLL_TUNE_FILE */
    char   tune[GCOLL_CONFIG_STR_MAX];     /* GCOLL_TUNE: one-line table rows */
    char   tune_cache[GCOLL_CONFIG_STR_MAX]; /* GCOLL_TUNE_CACHE: "", "off" or a directory */
    int    node_size;                      /* GCOLL_NODE_SIZE: 0 = real nodes */
    int    transport;                      /* GCOLL_TRANSPORT: gcoll_transport_kind_t */
    double timeout;                        /* GCOLL_TIMEOUT seconds, 0 = wait forever */
    int    check;                          /* GCOLL_CHECK: 0/1 */
    int    try_rivals;                     /* GCOLL_TRY: 0/1 */
    int    progress;                       /* GCOLL_PROGRESS: gcoll_progress_kind_t */
    int    shm_stream;                     /* GCOLL_SHM_STREAM: gcoll_shm_stream_t */
    int    zcopy;                          /* GCOLL_ZCOPY: 0/1 */
    int    shm_cma;                        /* GCOLL_SHM_CMA: gcoll_shm_cma_t */
    int    fault_rank;                     /* GCOLL_FAULT_ALLOC: world rank ... */
    long   fault_nth;                      /* ... and its allocation that fails; 0 = none */
} gcoll_config_t;

typedef struct gcoll_config_entry {
    const char *name;         /* environment variable */
    const char *default_value;
    const char *doc;          /* one line, shown by gcoll_info and the README */
    gcoll_status_t (*parse)(const struct gcoll_config_entry *e, const char *value, void *field);
    size_t offset;            /* of the field in gcoll_config_t */
} gcoll_config_entry_t;

extern const gcoll_config_entry_t gcoll_config_table[];
extern const size_t gcoll_config_table_size;

/* Parse the environment into *cfg (all or nothing: a bad value leaves it
 * untouched) and set the process-wide log level and fault injector.  Each
 * communicator keeps its own snapshot (struct gcoll_comm.cfg, inherited by
 * its sub-communicators), so a later create with another environment
 * changes nothing for it, and no thread reads what another writes. */
gcoll_status_t gcoll_config_load(gcoll_config_t *cfg);

/* Value in force for an entry, as text (the environment's, or the default). */
const char *gcoll_config_value(const gcoll_config_entry_t *e);

/* GCOLL_SHM_STREAM's spelling of a way: auto, off, on. */
const char *gcoll_shm_stream_name(gcoll_shm_stream_t way);

#endif
