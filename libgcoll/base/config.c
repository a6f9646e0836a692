/* SPDX-License-Identifier: BSD-3-Clause */
/* The one configuration table: every GCOLL_* variable, its default, its
 * documentation and its parser.  gcoll_info prints this table; the README's
 * environment table is written from it. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "base/alloc.h"
#include "base/config.h"
#include "base/log.h"
#include "base/status.h"

/* A word out of names (case-insensitive) stored as its index: the enums
 * below are numbered in the order of their names. */
static gcoll_status_t parse_choice(const gcoll_config_entry_t *e, const char *v, void *field,
                                   const char *const names[], const char *expected)
{
    for (int i = 0; names[i]; i++)
        if (strcasecmp(v, names[i]) == 0) { *(int *)field = i; return GCOLL_SUCCESS; }
    return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "%s=%s: expected %s", e->name, v, expected);
}

static gcoll_status_t parse_level(const gcoll_config_entry_t *e, const char *v, void *field)
{
    static const char *const names[] = { "warn", "info", "trace", NULL };   /* gcoll_log_level_t */
    return parse_choice(e, v, field, names, "WARN, INFO or TRACE");
}

static gcoll_status_t parse_string(const gcoll_config_entry_t *e, const char *v, void *field)
{
    if (strlen(v) >= GCOLL_CONFIG_STR_MAX)
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "%s is longer than %d characters", e->name,
                           GCOLL_CONFIG_STR_MAX - 1);
    strcpy(field, v);
    return GCOLL_SUCCESS;
}

static gcoll_status_t parse_count(const gcoll_config_entry_t *e, const char *v, void *field)
{
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno || end == v || *end || n < 0 || n > 1 << 24)
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "%s=%s: expected a non-negative integer",
                           e->name, v);
    *(int *)field = (int)n;
    return GCOLL_SUCCESS;
}

static gcoll_status_t parse_seconds(const gcoll_config_entry_t *e, const char *v, void *field)
{
    char *end;
    errno = 0;
    double s = strtod(v, &end);
    if (errno || end == v || *end || !(s >= 0))
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "%s=%s: expected seconds >= 0", e->name, v);
    *(double *)field = s;
    return GCOLL_SUCCESS;
}

static gcoll_status_t parse_bool(const gcoll_config_entry_t *e, const char *v, void *field)
{
    if (!strcmp(v, "1") || !strcasecmp(v, "y") || !strcasecmp(v, "yes") || !strcasecmp(v, "on"))
        *(int *)field = 1;
    else if (!strcmp(v, "0") || !strcasecmp(v, "n") || !strcasecmp(v, "no") || !strcasecmp(v, "off"))
        *(int *)field = 0;
    else
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "%s=%s: expected 0 or 1", e->name, v);
    return GCOLL_SUCCESS;
}

static gcoll_status_t parse_transport(const gcoll_config_entry_t *e, const char *v, void *field)
{
    static const char *const names[] = { "auto", "ucx", "mpi", NULL };   /* gcoll_transport_kind_t */
    return parse_choice(e, v, field, names, "ucx, mpi or auto");
}

static gcoll_status_t parse_progress(const gcoll_config_entry_t *e, const char *v, void *field)
{
    static const char *const names[] = { "auto", "caller", "thread", NULL };   /* gcoll_progress_kind_t */
    return parse_choice(e, v, field, names, "caller, thread or auto");
}

static const char *const shm_stream_names[] = { "auto", "off", "on", NULL };   /* gcoll_shm_stream_t */

static gcoll_status_t parse_shm_stream(const gcoll_config_entry_t *e, const char *v, void *field)
{
    return parse_choice(e, v, field, shm_stream_names, "auto, off or on");
}

const char *gcoll_shm_stream_name(gcoll_shm_stream_t way)
{
    return (unsigned)way <= GCOLL_SHM_STREAM_ON ? shm_stream_names[way] : "?";
}

/* 0 and 1 stay accepted for off and on (the variable was a boolean). */
static gcoll_status_t parse_shm_cma(const gcoll_config_entry_t *e, const char *v, void *field)
{
    static const char *const names[] = { "auto", "off", "on", NULL };   /* gcoll_shm_cma_t */
    if (!strcmp(v, "0") || !strcmp(v, "1")) {
        *(int *)field = v[0] == '1' ? GCOLL_SHM_CMA_ON : GCOLL_SHM_CMA_OFF;
        return GCOLL_SUCCESS;
    }
    return parse_choice(e, v, field, names, "auto, off or on (or 0/1)");
}

/* "RANK:N" into fault_rank and fault_nth (the field is fault_rank's). */
static gcoll_status_t parse_fault(const gcoll_config_entry_t *e, const char *v, void *field)
{
    gcoll_config_t *cfg = (gcoll_config_t *)((char *)field - offsetof(gcoll_config_t, fault_rank));
    char *end;
    if (!*v) {
        cfg->fault_rank = -1;
        cfg->fault_nth  = 0;
        return GCOLL_SUCCESS;
    }
    errno = 0;
    long rank = strtol(v, &end, 10);
    long nth  = *end == ':' ? strtol(end + 1, &end, 10) : -1;
    if (errno || *end || rank < 0 || rank > 1 << 24 || nth < 1)
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "%s=%s: expected RANK:N with N >= 1", e->name, v);
    cfg->fault_rank = (int)rank;
    cfg->fault_nth  = nth;
    return GCOLL_SUCCESS;
}

#define FIELD(f) offsetof(gcoll_config_t, f)

const gcoll_config_entry_t gcoll_config_table[] = {
    { "GCOLL_DEBUG", "WARN",
      "log level: WARN, INFO (topology, transport, each selection once), TRACE (every call)",
      parse_level, FIELD(debug) },
    { "GCOLL_ALGO", "",
      "force algorithms per collective, e.g. allreduce=ring,bcast=binomial (names: gcoll_info -a)",
      parse_string, FIELD(algo) },
    { "GCOLL_TUNE_FILE", "",
      "selection table file, consulted before the built-in one (format: docs/TUNING.md)",
      parse_string, FIELD(tune_file) },
    { "GCOLL_TUNE", "",
      "table rows consulted first, e.g. allreduce:host:*:*:0-16K:rdouble;allreduce:*:*:*:*:ring",
      parse_string, FIELD(tune) },
    { "GCOLL_TUNE_CACHE", "",
      "calibration cache (docs/TUNING.md): empty = ${XDG_CACHE_HOME:-$HOME/.cache}/gcoll, a "
      "directory = use that one instead, off = neither read, write nor calibrate; an entry per "
      "machine, shape and transport, measured at the first gcoll_comm_create without one unless "
      "GCOLL_ALGO, GCOLL_TUNE or GCOLL_TUNE_FILE is set",
      parse_string, FIELD(tune_cache) },
    { "GCOLL_NODE_SIZE", "0",
      "treat every N consecutive ranks as one node (simulates nodes on one host); 0 = real nodes",
      parse_count, FIELD(node_size) },
    { "GCOLL_TRANSPORT", "auto",
      "inter-rank transport: ucx, mpi, or auto (ucx where built)",
      parse_transport, FIELD(transport) },
    { "GCOLL_TIMEOUT", "0",
      "seconds a collective waits for peers before GCOLL_ERR_TIMEOUT naming them; 0 = forever",
      parse_seconds, FIELD(timeout) },
    { "GCOLL_CHECK", "0",
      "1: verify all ranks call the same collective/count/dtype/op/root (GCOLL_ERR_MISMATCH)",
      parse_bool, FIELD(check) },
    { "GCOLL_TRY", "1",
      "where the selection row names rivals (try=, written by the calibration where they came "
      "close), time them against its algorithm on the job's own calls and keep the fastest, "
      "agreed by all ranks; 0 = the row's algorithm only",
      parse_bool, FIELD(try_rivals) },
    { "GCOLL_PROGRESS", "auto",
      "who advances outstanding requests: caller (only inside libgcoll calls), thread (a "
      "background thread, asleep when idle), auto (thread unless the transport is mpi without "
      "MPI_THREAD_MULTIPLE)",
      parse_progress, FIELD(progress) },
    { "GCOLL_SHM_STREAM", "auto",
      "how a rank writes the slice it reduced in a large shared-memory allreduce: on (streaming "
      "stores), off (through the cache), auto (each rank measures both and keeps the faster; "
      "a reduce's non-roots take the way their root measured, a bcast's root adds what its "
      "reader measured)",
      parse_shm_stream, FIELD(shm_stream) },
    { "GCOLL_ZCOPY", "1",
      "0: collectives on gcoll_mem_alloc buffers copy through the node's segment like any other "
      "(zero-copy off); agreed per node at gcoll_comm_create",
      parse_bool, FIELD(zcopy) },
    { "GCOLL_SHM_CMA", "auto",
      "how a large reduce on one node moves the inputs: on (each rank reads its slice of the "
      "peers' inputs by process_vm_readv: one copy), off (every input through the segment), auto "
      "(each root times both and keeps the faster, the ranks agreeing per call through the "
      "segment); CMA agreed per node at gcoll_comm_create",
      parse_shm_cma, FIELD(shm_cma) },
    { "GCOLL_FAULT_ALLOC", "",
      "testing only: RANK:N makes the N-th heap allocation of libgcoll on world rank RANK fail "
      "(counted from the first gcoll_comm_create), to check that every rank gets the error",
      parse_fault, FIELD(fault_rank) },
};

const size_t gcoll_config_table_size = sizeof(gcoll_config_table) / sizeof(gcoll_config_table[0]);

const char *gcoll_config_value(const gcoll_config_entry_t *e)
{
    const char *v = getenv(e->name);
    return v ? v : e->default_value;
}

gcoll_status_t gcoll_config_load(gcoll_config_t *out)
{
    gcoll_config_t cfg;
    memset(&cfg, 0, sizeof(cfg));
    for (size_t i = 0; i < gcoll_config_table_size; i++) {
        const gcoll_config_entry_t *e = &gcoll_config_table[i];
        GCOLL_TRY(e->parse(e, gcoll_config_value(e), (char *)&cfg + e->offset));
    }
    *out = cfg;   /* all or nothing: a bad value changes nothing */
    gcoll_log_level = cfg.debug;
    gcoll_fault_arm(cfg.fault_rank, cfg.fault_nth);
    return GCOLL_SUCCESS;
}
