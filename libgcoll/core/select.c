/* SPDX-License-Identifier: BSD-3-Clause */
/* Algorithm selection by table.  GCOLL_ALGO forces an algorithm per
 * collective; otherwise the first matching row of the table in force chooses
 * (GCOLL_TUNE's rows, then GCOLL_TUNE_FILE's, then the calibration cache's
 * for this machine and shape (core/tune_cache.c), then the built-in ones).  The
 * built-in rules are a table in the same text format, parsed by the same
 * parser, so there is one path from a row to a decision, and `gcoll_info -s`
 * prints exactly what is in force.
 *
 * Declining: rows say what their algorithm needs (if=shm: the node segment;
 * if=regular: equal, contiguous nodes), checked here from facts of the
 * communicator, so the rows chosen normally never decline.  A row without
 * such a condition (hand-written, or measured where the segment existed) may
 * still pick an algorithm that declines the call; gcoll_select_fallback()
 * then continues with the next matching row whose algorithm differs.  Every
 * rank sees the same communicator facts and the same table, so all ranks
 * choose alike. */
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "base/alloc.h"
#include "core/comm.h"
#include "base/config.h"
#include "base/log.h"
#include "core/memtype.h"
#include "core/select.h"
#include "core/select_online.h"
#include "core/failure.h"
#include "base/status.h"

/* The built-in table.  Its thresholds are the usual latency/bandwidth
 * crossovers: log(P)-round algorithms while alpha dominates, bandwidth-
 * optimal ring/pairwise schemes once beta does.  Upper ends are exclusive,
 * so "0-16385" reads "up to and including 16 KiB". */
static const char builtin_text[] =
    "# libgcoll built-in selection table (format: docs/TUNING.md); first match wins.\n"
    "# bytes: count x dtype size in [lo, hi); size=total: count x dtype size x ranks.\n"
    "#\n"
    "# One node with a shared segment: the segment serves the whole collective\n"
    "# (2 ranks, 8 B - 32 MiB: 2-2.6x ahead of rdouble and rabenseifner over\n"
    "# the transport on the Zen 4 VM, in both of its states; docs/PERFORMANCE.md).\n"
    "allreduce       *     1      2-*   *              shm           if=shm\n"
    "bcast           *     1      2-*   *              shm           if=shm\n"
    "reduce          *     1      2-*   *              shm           if=shm\n"
    "allgather       *     1      2-*   *              shm           if=shm\n"
    "reduce_scatter  *     1      2-*   *              shm           if=shm\n"
    "barrier         *     1      2-*   *              shm           if=shm\n"
    "# Several nodes, some holding several ranks: two levels.  The leader form\n"
    "# for small allreduces (one inter-node round trip matters more than\n"
    "# bandwidth) and for nodes of unequal size.\n"
    "allreduce       *     2-*    2-*   0-16385        hier_leader   if=shm\n"
    "# Two nodes: one leader exchange stays ahead up to 256 KiB (gcoll_tune,\n"
    "# 2 x 2 ranks; both forms put the same bytes through a node's NIC).\n"
    "allreduce       *     2      2-*   16385-256K     hier_leader   if=shm\n"
    "allreduce       *     2-*    2-*   *              hier_leader   if=shm,!uniform\n"
    "allreduce       *     2-*    2-*   *              hier          if=shm\n"
    "bcast           *     2-*    2-*   *              hier          if=shm\n"
    "reduce          *     2-*    2-*   *              hier          if=shm\n"
    "allgather       *     2-*    2-*   *              hier          if=shm,regular\n"
    "reduce_scatter  *     2-*    2-*   *              hier          if=shm,regular\n"
    "barrier         *     2-*    2-*   *              hier          if=shm\n"
    "# Flat: no segment, one rank per node, a single rank, or alltoall.\n"
    "allreduce       *     *      *     0-16385        rdouble\n"
    "allreduce       *     *      *     0-1048577      rabenseifner  if=pow2\n"
    "allreduce       *     *      *     *              ring\n"
    "bcast           *     *      *     0-65537        binomial\n"
    "bcast           *     1      1-2   *              binomial\n"
    "bcast           *     2      1     *              binomial\n"
    "bcast           *     *      *     *              scatter_allgather\n"
    "reduce          *     *      *     0-65537        binomial\n"
    "reduce          *     *      *     *              rs_gather\n"
    "allgather       *     *      *     0-65537        rdouble       size=total if=pow2\n"
    "allgather       *     *      *     0-65537        bruck         size=total\n"
    "allgather       *     *      *     *              ring\n"
    "reduce_scatter  *     *      *     0-65537        rhalving      size=total\n"
    "reduce_scatter  *     *      *     *              ring\n"
    "alltoall        *     *      *     0-257          bruck\n"
    "alltoall        *     *      *     *              pairwise\n"
    "barrier         *     *      *     *              dissemination\n";

const char *gcoll_select_builtin_text(void)
{
    return builtin_text;
}

/* ---- the table in force ---------------------------------------------------
 * Tables are immutable and shared by every communicator created under the
 * same GCOLL_TUNE, the same file content and the same calibration-cache
 * content; each distinct combination is parsed once and kept until the
 * process ends, so a communicator holds a plain pointer and needs no
 * cleanup, and a row's src stays valid for as long as anyone may print it. */

enum { PART_TUNE, PART_FILE_PATH, PART_FILE_TEXT, PART_CACHE_SRC, PART_CACHE_TEXT, NPARTS };

typedef struct loaded {
    char              *part[NPARTS];   /* what the table was parsed from; "" for none */
    gcoll_tune_table_t table;
    struct loaded     *next;
} loaded_t;

static pthread_mutex_t loaded_lock = PTHREAD_MUTEX_INITIALIZER;
static loaded_t       *loaded_head;

/* GCOLL_TUNE rows, GCOLL_TUNE_FILE's, the cache's, the built-in ones. */
static gcoll_status_t table_parse(gcoll_tune_table_t *t, const char *const *part)
{
    gcoll_tune_table_init(t);
    gcoll_status_t st = GCOLL_SUCCESS;
    if (part[PART_TUNE][0])
        st = gcoll_tune_parse_from(t, part[PART_TUNE], "GCOLL_TUNE", GCOLL_TUNE_FROM_ENV);
    if (st == GCOLL_SUCCESS && part[PART_FILE_PATH][0])
        st = gcoll_tune_parse_from(t, part[PART_FILE_TEXT], part[PART_FILE_PATH],
                                   GCOLL_TUNE_FROM_FILE);
    if (st == GCOLL_SUCCESS && part[PART_CACHE_SRC][0])
        st = gcoll_tune_parse_from(t, part[PART_CACHE_TEXT], part[PART_CACHE_SRC],
                                   GCOLL_TUNE_FROM_CACHE);
    if (st == GCOLL_SUCCESS &&
        gcoll_tune_parse_from(t, builtin_text, "built-in", GCOLL_TUNE_FROM_BUILTIN) != GCOLL_SUCCESS)
        st = GCOLL_ERROR(GCOLL_ERR_INTERNAL, "the built-in selection table does not parse: %s",
                         gcoll_last_error());
    if (st != GCOLL_SUCCESS) gcoll_tune_table_fini(t);
    return st;
}

static int same_parts(const loaded_t *l, const char *const *part)
{
    for (int i = 0; i < NPARTS; i++)
        if (strcmp(l->part[i], part[i])) return 0;
    return 1;
}

static void loaded_free(loaded_t *l)
{
    for (int i = 0; i < NPARTS; i++) free(l->part[i]);
    free(l);
}

/* The interned table for these parts, parsing it on first use. */
static gcoll_status_t table_intern(const char *const *part, const gcoll_tune_table_t **out)
{
    gcoll_status_t st = GCOLL_SUCCESS;
    pthread_mutex_lock(&loaded_lock);
    loaded_t *l = loaded_head;
    while (l && !same_parts(l, part)) l = l->next;
    if (!l) {
        l = gcoll_calloc(1, sizeof(*l));
        for (int i = 0; l && i < NPARTS; i++)
            if (!(l->part[i] = gcoll_strdup(part[i]))) { loaded_free(l); l = NULL; }
        if (!l) st = GCOLL_ERROR(GCOLL_ERR_NO_MEMORY, "cannot allocate a selection table");
        else if ((st = table_parse(&l->table, (const char *const *)l->part)) != GCOLL_SUCCESS) {
            loaded_free(l);
            l = NULL;
        } else {
            l->next = loaded_head;
            loaded_head = l;
        }
    }
    pthread_mutex_unlock(&loaded_lock);
    if (l) *out = &l->table;
    return st;
}

gcoll_status_t gcoll_select_table(const gcoll_config_t *cfg, const char *cache_src,
                                  const char *cache_text, const gcoll_tune_table_t **table)
{
    char *file_text = NULL;
    if (cfg->tune_file[0]) GCOLL_TRY(gcoll_tune_read_file(cfg->tune_file, &file_text));
    const char *part[NPARTS] = { cfg->tune, cfg->tune_file,
                                 file_text ? file_text : "", cache_src ? cache_src : "",
                                 cache_src && cache_text ? cache_text : "" };
    gcoll_status_t st = table_intern(part, table);
    free(file_text);
    return st;
}

gcoll_status_t gcoll_select_use_cache(gcoll_comm_t comm, const char *cache_src,
                                      const char *cache_text)
{
    const loaded_t *l = (const loaded_t *)((const char *)comm->tune - offsetof(loaded_t, table));
    const char *part[NPARTS] = { l->part[PART_TUNE], l->part[PART_FILE_PATH],
                                 l->part[PART_FILE_TEXT], cache_src, cache_text };
    const gcoll_tune_table_t *t = NULL;
    GCOLL_TRY(table_intern(part, &t));
    comm->tune = t;
    comm->select_epoch++;
    gcoll_select_online_reset(comm);   /* its rows belong to the old table */
    memset(comm->logged, 0, sizeof(comm->logged));
    for (int c = 0; c < GCOLL_COLL_COUNT; c++) comm->last_select[c].bytes = SIZE_MAX;
    return GCOLL_SUCCESS;
}

/* ---- GCOLL_ALGO ------------------------------------------------------------ */

/* Parse "allreduce=ring,bcast=binomial" into comm->forced[]. */
static gcoll_status_t parse_forced(struct gcoll_comm *c, const char *spec)
{
    char buf[GCOLL_CONFIG_STR_MAX];
    strcpy(buf, spec);
    char *save = NULL;
    for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        if (!eq)
            return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG,
                               "GCOLL_ALGO item '%s' is not <collective>=<algorithm>", item);
        *eq = '\0';
        gcoll_coll_t coll = gcoll_coll_from_name(item);
        if (coll == GCOLL_COLL_COUNT)
            return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "GCOLL_ALGO names unknown collective '%s'",
                               item);
        const gcoll_algo_t *a = gcoll_algo_find(coll, eq + 1);
        if (!a)
            return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG,
                               "GCOLL_ALGO: '%s' is not an algorithm of %s (gcoll_info -a lists them)",
                               eq + 1, item);
        c->forced[coll] = a;
    }
    return GCOLL_SUCCESS;
}

/* Collective: a table file unreadable on one node must fail every rank, or
 * the others would go on to connect the transport and wait for it. */
gcoll_status_t gcoll_select_init(gcoll_comm_t comm)
{
    memset(comm->forced, 0, sizeof(comm->forced));
    memset(comm->logged, 0, sizeof(comm->logged));
    comm->select_epoch++;
    for (int c = 0; c < GCOLL_COLL_COUNT; c++) comm->last_select[c].bytes = SIZE_MAX;
    gcoll_status_t st = parse_forced(comm, comm->cfg.algo);
    if (st == GCOLL_SUCCESS) st = gcoll_select_table(&comm->cfg, NULL, NULL, &comm->tune);
    if (st == GCOLL_SUCCESS) st = gcoll_select_online_init(comm);
    return gcoll_agree(comm->mpi_comm, st,
                       "gcoll_comm_create: the selection table (GCOLL_TUNE_FILE, GCOLL_TUNE or "
                       "GCOLL_ALGO)");
}

void gcoll_select_force(gcoll_comm_t comm, gcoll_coll_t coll, const gcoll_algo_t *algo)
{
    comm->forced[coll] = algo;
    comm->logged[coll] = 0;
    comm->select_epoch++;
}

/* ---- choosing ---------------------------------------------------------------- */

/* Ranks on the fullest node: the same number on every rank, unlike
 * local_size when nodes differ.  Then runs of the node map give it when
 * nodes are contiguous; scattered unequal nodes (rare) cost a longer walk. */
static int comm_ppn(gcoll_comm_t c)
{
    if (c->nodes_uniform) return c->local_size;
    int best = 0, run = 0;
    if (c->nodes_contiguous) {
        for (int r = 0; r < c->size; r++) {
            run = r && c->node_of[r] == c->node_of[r - 1] ? run + 1 : 1;
            if (run > best) best = run;
        }
        return best;
    }
    for (int k = 0; k < c->nnodes; k++, run = 0) {
        for (int r = 0; r < c->size; r++) run += c->node_of[r] == k;
        if (run > best) best = run;
    }
    return best;
}

void gcoll_select_comm_key(gcoll_comm_t c, gcoll_tune_key_t *k)
{
    k->nodes = c->nnodes;
    k->ppn   = comm_ppn(c);
    k->ranks = c->size;
    k->conds = 0;
    if (c->shm) k->conds |= GCOLL_TUNE_IF_SHM;
    if (c->nodes_uniform) k->conds |= GCOLL_TUNE_IF_UNIFORM;
    if (c->nodes_uniform && c->nodes_contiguous) k->conds |= GCOLL_TUNE_IF_REGULAR;
    if ((c->size & (c->size - 1)) == 0) k->conds |= GCOLL_TUNE_IF_POW2;
}

/* Every call the host path runs is on host memory (gcoll_tune_key_t). */
static void call_key(gcoll_comm_t c, const gcoll_coll_args_t *a, gcoll_tune_key_t *k)
{
    gcoll_select_comm_key(c, k);
    k->coll  = a->coll;
    k->bytes = a->count * a->dt_size;
}

/* Last resort where no row matches (the built-in rows end with a catch-all
 * per collective, so only a broken table gets here). */
static const gcoll_algo_t *any_algo(gcoll_coll_t coll, const gcoll_algo_t *not_this)
{
    for (const gcoll_algo_t *const *a = gcoll_algos; *a; a++)
        if ((*a)->coll == coll && *a != not_this) return *a;
    return not_this;
}

static int size_class(size_t bytes)
{
    int k = 0;
    while (k < 63 && ((size_t)1 << k) < bytes) k++;
    return k;
}

/* Row text for a log line: one space between fields. */
static void squeeze(char *s)
{
    char *w = s;
    for (char *r = s; *r; r++)
        if (*r != ' ' || (w > s && w[-1] != ' ')) *w++ = *r;
    *w = '\0';
}

/* "; <origin> names mpi: ..." where the first matching row is an mpi row,
 * so the log says why the drop-in leaves such calls to MPI while this one
 * runs a libgcoll algorithm; else "". */
static void mpi_note(gcoll_comm_t c, const gcoll_tune_key_t *k, char *buf, size_t len)
{
    const gcoll_tune_row_t *first = c->forced[k->coll] ? NULL : gcoll_tune_match_any(c->tune, 0, k);
    buf[0] = '\0';
    if (!first || !gcoll_tune_row_is_mpi(first)) return;
    char from[300];
    gcoll_tune_format_origin(from, sizeof from, first);
    snprintf(buf, len, "; %s names mpi: the drop-in leaves such calls to the MPI, libgcoll's own "
                       "take the next row", from);
}

static void log_decision(gcoll_comm_t c, const gcoll_tune_key_t *k, const gcoll_algo_t *a,
                         const gcoll_tune_row_t *row, const char *what)
{
    int sc = size_class(k->bytes);
    if (GCOLL_LIKELY(gcoll_log_level < GCOLL_LOG_INFO) || (c->logged[k->coll] >> sc & 1)) return;
    c->logged[k->coll] |= (uint64_t)1 << sc;
    char why[700] = "forced by GCOLL_ALGO", text[320], note[400];
    if (row) {
        gcoll_tune_format_row(text, sizeof text, row);
        squeeze(text);
        char from[300];
        gcoll_tune_format_origin(from, sizeof from, row);
        snprintf(why, sizeof why, "%s: %s", from, text);
    } else if (!c->forced[k->coll]) {
        snprintf(why, sizeof why, "no row matches");
    }
    mpi_note(c, k, note, sizeof note);
    gcoll_info("select %s %zu..%zu B, %d ranks, %d node(s) x %d: %s%s (%s%s)",
               gcoll_coll_name(k->coll), sc ? ((size_t)1 << (sc - 1)) + 1 : 0, (size_t)1 << sc,
               k->ranks, k->nodes, k->ppn, what, a->name, why, note);
}

static void apply_row(gcoll_coll_args_t *args, const gcoll_tune_row_t *row)
{
    args->chunk_bytes = row ? row->chunk : 0;
}

/* The table is immutable and everything in the key but the size is the
 * communicator's, so the last decision per collective is kept: a loop of
 * same-size calls (every training step) skips the table walk. */
const gcoll_algo_t *gcoll_select(gcoll_comm_t comm, gcoll_coll_args_t *args)
{
    size_t bytes = args->count * args->dt_size;
    if (!comm->forced[args->coll] && comm->last_select[args->coll].bytes == bytes) {
        apply_row(args, comm->last_select[args->coll].row);
        return comm->last_select[args->coll].algo;
    }
    gcoll_tune_key_t k;
    call_key(comm, args, &k);
    const gcoll_algo_t *a = comm->forced[args->coll];
    const gcoll_tune_row_t *row = NULL;
    if (!a) {
        row = gcoll_tune_match(comm->tune, 0, &k);
        a   = !row ? any_algo(args->coll, NULL)
            : row->nrivals ? gcoll_select_online_algo(comm, row, args->coll, bytes) : row->algo;
        apply_row(args, row);
        comm->last_select[args->coll].bytes = bytes;
        comm->last_select[args->coll].row   = row;
        comm->last_select[args->coll].algo  = a;
    }
    log_decision(comm, &k, a, row, "");
    return a;
}

const gcoll_algo_t *gcoll_select_fallback(gcoll_comm_t comm, gcoll_coll_args_t *args)
{
    gcoll_tune_key_t k;
    call_key(comm, args, &k);
    /* what gcoll_select chose, and so what declined */
    const gcoll_algo_t *declined = comm->forced[args->coll];
    const gcoll_tune_row_t *row = declined ? NULL : gcoll_tune_match(comm->tune, 0, &k);
    if (!declined) declined = row ? row->algo : any_algo(args->coll, NULL);
    size_t from = row ? (size_t)(row - comm->tune->rows) + 1 : 0;
    for (row = gcoll_tune_match(comm->tune, from, &k); row && row->algo == declined;
         row = gcoll_tune_match(comm->tune, (size_t)(row - comm->tune->rows) + 1, &k))
        ;
    const gcoll_algo_t *a = row ? row->algo : any_algo(args->coll, declined);
    apply_row(args, row);
    gcoll_info("select %s: %s declined, next matching row: %s", gcoll_coll_name(k.coll),
               declined->name, a->name);
    return a;
}

gcoll_status_t gcoll_select_try(gcoll_comm_t comm, const gcoll_algo_t *algo, size_t count,
                                gcoll_dtype_t dtype)
{
    gcoll_coll_args_t a = { .coll = algo->coll, .count = count, .dt_size = gcoll_dtype_size(dtype),
                            .src = gcoll_bref(GCOLL_BUF_SEND, 0),
                            .dst = gcoll_bref(GCOLL_BUF_RECV, 0),
                            .flags = comm->shm ? GCOLL_ARGS_NODE_STEPS : 0 };
    if (algo->coll == GCOLL_COLL_BCAST) a.src = a.dst;
    gcoll_group_t world = { comm->size, comm->rank, NULL, comm->node_of };
    return gcoll_algo_build(algo, &a, &world, dtype, GCOLL_SUM, &comm->sched);
}

/* ---- what the drop-in leaves to MPI ------------------------------------------ */

static gcoll_status_t mem_from_name(const char *mem, int *m)
{
    if (mem && !strcmp(mem, "host")) *m = GCOLL_MEM_HOST;
    else if (mem && !strcmp(mem, "cuda")) *m = GCOLL_MEM_CUDA;
    else return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "gcoll_comm_mpi_ranges: memory type '%s' is "
                            "not host or cuda", mem ? mem : "(null)");
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll_comm_mpi_ranges(gcoll_comm_t comm, const char *coll, const char *mem,
                                     size_t *lo, size_t *hi, int max, int *n)
{
    GCOLL_TRY(gcoll_comm_check(comm));
    if (!coll || !lo || !hi || !n || max < 0)
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "gcoll_comm_mpi_ranges: a NULL collective, "
                           "range array or count, or max < 0");
    gcoll_tune_key_t k;
    int m = GCOLL_MEM_HOST;
    gcoll_select_comm_key(comm, &k);
    k.coll = gcoll_coll_from_name(coll);
    k.bytes = 0;
    if (k.coll == GCOLL_COLL_COUNT)
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "gcoll_comm_mpi_ranges: unknown collective "
                           "'%s'", coll);
    GCOLL_TRY(mem_from_name(mem, &m));
    *n = 0;
    if (comm->forced[k.coll]) return GCOLL_SUCCESS;   /* GCOLL_ALGO serves every size */
    return gcoll_tune_mpi_ranges(comm->tune, &k, m, lo, hi, max, n);
}
