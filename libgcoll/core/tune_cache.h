/* SPDX-License-Identifier: BSD-3-Clause */
/* The calibration cache: selection rows measured on this machine for this
 * shape of communicator, FFTW-wisdom style (docs/TUNING.md).
 *
 * Key: libgcoll version and calibration format, CPU model, online cores,
 * ranks, nodes, ranks per node, uniform nodes, simulated nodes
 * (GCOLL_NODE_SIZE), oversubscribed hosts, ranks bound to CPUs, the shared
 * segment, the transport, the MPI library (its MPI_Allreduce is a
 * candidate).  One file per key, in the selection-table format, under
 * ${XDG_CACHE_HOME:-$HOME/.cache}/gcoll/ or the directory GCOLL_TUNE_CACHE
 * names (GCOLL_TUNE_CACHE=off: none).  Rank 0 reads and writes the file and
 * broadcasts its text, so every rank puts the same rows in its table; a
 * file is written to a temporary name and renamed, so concurrent jobs never
 * see half of one. */
#ifndef GCOLL_TUNE_CACHE_H
#define GCOLL_TUNE_CACHE_H

#include <stddef.h>
#include "gcoll.h"
#include "base/config.h"

typedef struct {
    int         ranks, nodes, ppn;   /* ppn: ranks on the fullest node */
    int         uniform;             /* every node holds ppn ranks */
    int         simulated;           /* nodes made by GCOLL_NODE_SIZE */
    int         oversubscribed;      /* some host's ranks outnumber the CPUs they may use */
    int         bound;               /* some rank may run on fewer CPUs than are online */
    int         shm;                 /* the node segment exists */
    int         shm_stream;          /* GCOLL_SHM_STREAM (gcoll_shm_stream_t): auto entries
                                      * time the segment's algorithms in their faster write
                                      * way, on/off entries in that one */
    const char *transport;           /* "ucx", "mpi" */
} gcoll_tune_cache_shape_t;

enum { GCOLL_TUNE_CACHE_KEY_MAX = 512, GCOLL_TUNE_CACHE_PATH_MAX = 1280 };

/* Collective over mpi_comm: shape->oversubscribed and ->bound, alike on
 * every rank. */
void gcoll_tune_cache_host_facts(MPI_Comm mpi_comm, gcoll_tune_cache_shape_t *shape);

/* The key line of a shape on this machine (rank 0's CPU stands for all). */
void gcoll_tune_cache_key(char *buf, size_t len, const gcoll_tune_cache_shape_t *shape);

/* The cache directory in force: 0 with dir set; -1 when GCOLL_TUNE_CACHE=off
 * or neither XDG_CACHE_HOME nor HOME is set (why says which). */
int gcoll_tune_cache_dir(const gcoll_config_t *cfg, char *dir, size_t len, const char **why);

/* The entry's file for a key: DIR/<ranks>r-<nodes>x<ppn>-<transport>-<hash>.tbl.
 * Returns -1 (buf "") where that does not fit len bytes. */
int gcoll_tune_cache_path(char *buf, size_t len, const char *dir,
                          const gcoll_tune_cache_shape_t *shape, const char *key);

typedef enum {
    GCOLL_TUNE_CACHE_MISSING = 0,    /* no file */
    GCOLL_TUNE_CACHE_FOUND,          /* the key matches and the rows parse */
    GCOLL_TUNE_CACHE_INVALID         /* unreadable, another key, or rows that do not parse */
} gcoll_tune_cache_state_t;

/* Read and check an entry.  FOUND: *text is the file (malloc'd).  INVALID:
 * why says what is wrong with it.  Local, no MPI. */
gcoll_tune_cache_state_t gcoll_tune_cache_read(const char *path, const char *key, char **text,
                                               char *why, size_t why_len);

/* gcoll_comm_create's step for a new top-level communicator (collective,
 * after the transport is up): put the cache entry's rows for its shape in
 * its table, calibrating first (a few seconds, a line on rank 0's stderr)
 * if there is none, the cache is not off and neither GCOLL_ALGO, GCOLL_TUNE
 * nor GCOLL_TUNE_FILE is set.  Problems with the cache are warnings: the
 * communicator then keeps the table without cache rows.  Fails only with an
 * error every rank agrees on. */
gcoll_status_t gcoll_tune_cache_setup(gcoll_comm_t comm);

#endif
