/* SPDX-License-Identifier: BSD-3-Clause */
/* Selection tables: the parser, matcher and printer of the row format that
 * docs/TUNING.md documents.  One format serves the built-in table (compiled
 * in as text), GCOLL_TUNE_FILE, the one-line GCOLL_TUNE string and the files
 * gcoll_tune writes, so there is one parser and one path.
 *
 *   # collective  mem   nodes  ppn  bytes      algorithm  [options]
 *   allreduce     host  *      *    0-16K      rdouble
 *   allreduce     *     2-*    2-*  16K-inf    hier       if=shm chunk=1M
 *   allreduce     host  2      2    64K-256K   rdouble    try=hier_leader
 *
 * mem is host, cuda or * (a cuda row never matches: see gcoll_tune_key_t);
 * nodes and ppn are inclusive integer ranges; bytes is the half-open range
 * [lo, hi) of count x dtype size (the benchmarks' message size), or with
 * size=total of count x dtype size x ranks.  The first matching row wins.
 * The algorithm may be the pseudo-algorithm "mpi": the application's own MPI
 * collective is faster there.  Such rows inform the PMPI drop-in
 * (gcoll_comm_mpi_ranges); libgcoll's own calls skip them and take the next
 * matching row, since libgcoll cannot hand a call to an MPI collective it
 * does not own (docs/MPI_DROPIN.md).
 * A table is parsed whole or not at all: on any error the rows parsed so far
 * are discarded and the sentence names the source, the line and the reason. */
#ifndef GCOLL_TUNE_TABLE_H
#define GCOLL_TUNE_TABLE_H

#include <stddef.h>
#include <stdio.h>
#include "gcoll.h"
#include "algos/algo.h"

/* Conditions a row may require (if=shm,!uniform): facts of the communicator
 * that the keys do not capture and that decide whether an algorithm applies. */
enum {
    GCOLL_TUNE_IF_SHM     = 1u << 0,  /* the node shared-memory segment exists */
    GCOLL_TUNE_IF_UNIFORM = 1u << 1,  /* every node holds the same number of ranks */
    GCOLL_TUNE_IF_REGULAR = 1u << 2,  /* uniform, and each node's ranks are consecutive */
    GCOLL_TUNE_IF_POW2    = 1u << 3,  /* the number of ranks is a power of two */
    GCOLL_TUNE_IF_COUNT   = 4
};

/* Where rows come from, in the order selection consults them
 * (docs/TUNING.md): GCOLL_TUNE, GCOLL_TUNE_FILE, the calibration cache
 * (core/tune_cache.c), the built-in table. */
typedef enum {
    GCOLL_TUNE_FROM_ENV = 0,
    GCOLL_TUNE_FROM_FILE,
    GCOLL_TUNE_FROM_CACHE,
    GCOLL_TUNE_FROM_BUILTIN
} gcoll_tune_origin_t;

#define GCOLL_TUNE_ANY_MEM  (-1)          /* mem column "*" */
#define GCOLL_TUNE_INF_INT  0x7fffffff    /* nodes/ppn upper end "*" */
#define GCOLL_TUNE_INF_SIZE ((size_t)-1)  /* bytes upper end "inf" */
#define GCOLL_TUNE_RIVALS   6             /* algorithms a try= option names, at most */

typedef struct {
    gcoll_coll_t        coll;
    int                 mem;                  /* column 2: host, cuda or GCOLL_TUNE_ANY_MEM */
    int                 nodes_lo, nodes_hi;   /* inclusive */
    int                 ppn_lo, ppn_hi;       /* inclusive; ranks on the fullest node */
    size_t              bytes_lo, bytes_hi;   /* [lo, hi) */
    int                 size_total;           /* bytes counted over all ranks */
    const gcoll_algo_t *algo;
    size_t              chunk;                /* chunk=SIZE, 0 = algorithm default */
    const gcoll_algo_t *rival[GCOLL_TUNE_RIVALS]; /* try=A,B: timed against algo as the
                                               * job runs (core/select_online.h) */
    int                 nrivals;
    unsigned            if_set, if_clear;     /* conditions required true / false */
    const char         *src;                  /* "built-in", a path, "GCOLL_TUNE" */
    int                 line;                 /* line (row number in GCOLL_TUNE) */
    int                 origin;               /* gcoll_tune_origin_t */
} gcoll_tune_row_t;

typedef struct gcoll_tune_table {
    gcoll_tune_row_t *rows;
    size_t            nrows, cap;
    char            **srcs;                   /* owned source names */
    size_t            nsrcs;
} gcoll_tune_table_t;

/* What a call looks like to the table: all of it the same on every rank.
 * Every call the table decides runs on host memory (device buffers are
 * staged through it, or served by the CUDA IPC path without a table), so
 * the key has no memory type: rows whose mem column says cuda never match,
 * host and * match every call.  The column stays in the format, so that
 * every table written so far still loads. */
typedef struct {
    gcoll_coll_t coll;
    int          nodes;
    int          ppn;        /* ranks on the fullest node */
    int          ranks;
    unsigned     conds;      /* GCOLL_TUNE_IF_* that hold */
    size_t       bytes;      /* count x dtype size */
} gcoll_tune_key_t;

void gcoll_tune_table_init(gcoll_tune_table_t *t);
void gcoll_tune_table_fini(gcoll_tune_table_t *t);

/* Append the rows of text, naming them src:line.  oneline: the GCOLL_TUNE
 * form, rows separated by ';' and fields by ':'.  All or nothing.  The rows'
 * origin is GCOLL_TUNE_FROM_ENV for the one-line form, else _FILE. */
gcoll_status_t gcoll_tune_parse(gcoll_tune_table_t *t, const char *text, const char *src,
                                int oneline);
/* The same with the origin given (the one-line form for GCOLL_TUNE_FROM_ENV). */
gcoll_status_t gcoll_tune_parse_from(gcoll_tune_table_t *t, const char *text, const char *src,
                                     gcoll_tune_origin_t origin);

/* Read a whole file into a NUL-terminated malloc'd string. */
gcoll_status_t gcoll_tune_read_file(const char *path, char **text);

/* The pseudo-algorithm of "mpi" rows: name "mpi", no collective, no
 * builder.  Never registered in gcoll_algos, never forced, never built. */
extern const gcoll_algo_t gcoll_tune_mpi;

static inline int gcoll_tune_row_is_mpi(const gcoll_tune_row_t *r)
{
    return r->algo == &gcoll_tune_mpi;
}

/* First row at index >= from that matches k and names a libgcoll algorithm
 * (rows naming mpi are skipped), or NULL: what a libgcoll call runs. */
const gcoll_tune_row_t *gcoll_tune_match(const gcoll_tune_table_t *t, size_t from,
                                         const gcoll_tune_key_t *k);
/* First row at index >= from that matches k, mpi rows included, or NULL:
 * who is faster for such a call, libgcoll or the MPI. */
const gcoll_tune_row_t *gcoll_tune_match_any(const gcoll_tune_table_t *t, size_t from,
                                             const gcoll_tune_key_t *k);

/* The byte ranges [lo[i], hi[i]) of k->bytes in which the first row
 * matching k (k->bytes aside; mem: the memory column, GCOLL_MEM_HOST or
 * GCOLL_MEM_CUDA, where host calls match host and * rows) names mpi;
 * ascending, disjoint, adjacent ones merged, hi = GCOLL_TUNE_INF_SIZE for
 * inf.  More than max: GCOLL_ERR_INVALID_ARG, *n the number there are. */
gcoll_status_t gcoll_tune_mpi_ranges(const gcoll_tune_table_t *t, const gcoll_tune_key_t *k,
                                     int mem, size_t *lo, size_t *hi, int max, int *n);

/* The row in file form, without newline; returns snprintf's length. */
int gcoll_tune_format_row(char *buf, size_t len, const gcoll_tune_row_t *r);

/* Where a row came from, for messages: "GCOLL_TUNE:2", "/path/t.tbl:12",
 * "cache /path/x.tbl:9", "built-in:40". */
int gcoll_tune_format_origin(char *buf, size_t len, const gcoll_tune_row_t *r);

/* Column header comment, then every row; a comment line whenever the source
 * changes, so a printed table says where each part came from. */
void gcoll_tune_print(FILE *f, const gcoll_tune_table_t *t);
/* The same, each row followed by a comment naming its origin
 * (gcoll_tune_format_origin); what gcoll_info -s prints.  Loads back. */
void gcoll_tune_print_origins(FILE *f, const gcoll_tune_table_t *t);

/* Sizes: "64", "16K", "1M", "2G" (binary multiples).  -1 on garbage. */
int gcoll_tune_parse_size(const char *s, size_t *out);
/* The shortest form of bytes with a K/M/G suffix where exact. */
void gcoll_tune_format_size(char *buf, size_t len, size_t bytes);

#endif
