/* SPDX-License-Identifier: BSD-3-Clause */
/* Selection tables: parse, match and print the row format of tune_table.h
 * (documented in docs/TUNING.md).  Parsing is strict because a table that is
 * silently half-applied would make performance depend on a typo: every field
 * is checked, a row that an earlier row of the same source already covers
 * is rejected (it could never match), and any error discards the whole text. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "base/alloc.h"
#include "core/memtype.h"
#include "base/status.h"
#include "core/tune_table.h"

#define MAX_FIELDS 16

static const char *const cond_names[GCOLL_TUNE_IF_COUNT] = { "shm", "uniform", "regular", "pow2" };

const gcoll_algo_t gcoll_tune_mpi = {
    .name = "mpi", .coll = GCOLL_COLL_COUNT, .build = NULL,
    .summary = "the application's MPI collective (rows for the drop-in; libgcoll's own calls "
               "take the next row)",
};

void gcoll_tune_table_init(gcoll_tune_table_t *t)
{
    memset(t, 0, sizeof(*t));
}

void gcoll_tune_table_fini(gcoll_tune_table_t *t)
{
    for (size_t i = 0; i < t->nsrcs; i++) free(t->srcs[i]);
    free(t->srcs);
    free(t->rows);
    memset(t, 0, sizeof(*t));
}

/* ---- values ------------------------------------------------------------- */

int gcoll_tune_parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    if (!isdigit((unsigned char)s[0])) return -1;
    unsigned long long v = strtoull(s, &end, 10);
    int shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    default: break;
    }
    if (shift && !strcmp(end, "iB")) end += 2;
    else if (shift && *end == 'B') end++;
    if (errno || *end || v > (unsigned long long)(SIZE_MAX >> shift)) return -1;
    *out = (size_t)v << shift;
    return 0;
}

void gcoll_tune_format_size(char *buf, size_t len, size_t bytes)
{
    static const char suffix[] = "GMK";
    if (bytes == GCOLL_TUNE_INF_SIZE) { snprintf(buf, len, "inf"); return; }
    for (int i = 0; i < 3; i++) {
        size_t unit = (size_t)1 << (30 - 10 * i);
        if (bytes && bytes % unit == 0) { snprintf(buf, len, "%zu%c", bytes / unit, suffix[i]); return; }
    }
    snprintf(buf, len, "%zu", bytes);
}

static int parse_int(const char *s, int *out)
{
    char *end;
    errno = 0;
    if (!isdigit((unsigned char)s[0])) return -1;
    long v = strtol(s, &end, 10);
    if (errno || *end || v > GCOLL_TUNE_INF_INT - 1) return -1;
    *out = (int)v;
    return 0;
}

static int is_open_end(const char *s)
{
    return !strcmp(s, "*") || !strcmp(s, "inf");
}

/* Split "lo-hi" at its dash; 0 if there is none. */
static int split_range(char *s, char **hi)
{
    char *dash = strchr(s, '-');
    if (!dash) return 0;
    *dash = '\0';
    *hi = dash + 1;
    return 1;
}

/* nodes / ppn: "*", "N", "A-B", "A-*" (inclusive, >= 1). */
static int parse_count_range(char *s, int *lo, int *hi)
{
    char *h;
    if (is_open_end(s)) { *lo = 1; *hi = GCOLL_TUNE_INF_INT; return 0; }
    if (!split_range(s, &h)) {
        if (parse_int(s, lo)) return -1;
        *hi = *lo;
    } else {
        if (parse_int(s, lo)) return -1;
        if (is_open_end(h)) *hi = GCOLL_TUNE_INF_INT;
        else if (parse_int(h, hi)) return -1;
    }
    return *lo >= 1 && *lo <= *hi ? 0 : -1;
}

/* bytes: "*", "N" (exactly N), "A-B", "A-inf" as [lo, hi), lo < hi. */
static int parse_byte_range(char *s, size_t *lo, size_t *hi)
{
    char *h;
    if (is_open_end(s)) { *lo = 0; *hi = GCOLL_TUNE_INF_SIZE; return 0; }
    if (!split_range(s, &h)) {
        if (gcoll_tune_parse_size(s, lo) || *lo == GCOLL_TUNE_INF_SIZE - 1) return -1;
        *hi = *lo + 1;
        return 0;
    }
    if (gcoll_tune_parse_size(s, lo)) return -1;
    if (is_open_end(h)) *hi = GCOLL_TUNE_INF_SIZE;
    else if (gcoll_tune_parse_size(h, hi)) return -1;
    return *lo < *hi ? 0 : -1;
}

/* ---- rows ---------------------------------------------------------------- */

typedef struct {
    const char *src;
    int         line;
    int         oneline;
    int         origin;      /* gcoll_tune_origin_t */
} origin_t;

static gcoll_status_t row_error(const origin_t *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static gcoll_status_t row_error(const origin_t *o, const char *fmt, ...)
{
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "selection table %s, %s %d: %s", o->src,
                       o->oneline ? "row" : "line", o->line, why);
}

static gcoll_status_t parse_conds(const origin_t *o, char *list, gcoll_tune_row_t *r)
{
    char *save = NULL;
    for (char *c = strtok_r(list, ",", &save); c; c = strtok_r(NULL, ",", &save)) {
        int neg = c[0] == '!';
        int k = 0;
        while (k < GCOLL_TUNE_IF_COUNT && strcmp(c + neg, cond_names[k])) k++;
        if (k == GCOLL_TUNE_IF_COUNT)
            return row_error(o, "unknown condition '%s' (known: shm, uniform, regular, pow2, "
                                "each negated by '!')", c);
        if (neg) r->if_clear |= 1u << k;
        else r->if_set |= 1u << k;
    }
    if (r->if_set & r->if_clear)
        return row_error(o, "the conditions require something and its negation");
    return GCOLL_SUCCESS;
}

/* try=A,B: the row's rivals, libgcoll algorithms of its collective other
 * than its own, each once. */
static gcoll_status_t parse_rivals(const origin_t *o, char *v, gcoll_tune_row_t *r)
{
    char *save = NULL;
    for (char *name = strtok_r(v, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
        const gcoll_algo_t *a = gcoll_algo_find(r->coll, name);
        if (!a)
            return row_error(o, "try=: '%s' is not an algorithm of %s (gcoll_info -a lists "
                                "them; mpi cannot be tried)", name, gcoll_coll_name(r->coll));
        int dup = a == r->algo;
        for (int i = 0; i < r->nrivals; i++) dup |= r->rival[i] == a;
        if (dup) return row_error(o, "try=: %s is named twice (with the row's own algorithm)", name);
        if (r->nrivals == GCOLL_TUNE_RIVALS)
            return row_error(o, "try=: more than %d rivals", GCOLL_TUNE_RIVALS);
        r->rival[r->nrivals++] = a;
    }
    if (!r->nrivals) return row_error(o, "try= names no algorithm");
    return GCOLL_SUCCESS;
}

#define NOPTIONS 5

/* One key=value option; seen[] rejects a repeated key. */
static gcoll_status_t parse_option(const origin_t *o, char *opt, gcoll_tune_row_t *r,
                                   int seen[NOPTIONS])
{
    static const char *const keys[NOPTIONS] = { "chunk", "radix", "if", "size", "try" };
    char *eq = strchr(opt, '=');
    int k = 0;
    if (eq) *eq = '\0';
    while (eq && k < NOPTIONS && strcmp(opt, keys[k])) k++;
    if (!eq || k == NOPTIONS)
        return row_error(o, "unexpected '%s%s%s' after the algorithm (options: chunk=SIZE, "
                            "radix=N, if=CONDITIONS, size=count|total, try=ALGO[,ALGO])", opt,
                         eq ? "=" : "", eq ? eq + 1 : "");
    if (seen[k]++) return row_error(o, "option %s= is given twice", keys[k]);
    char *v = eq + 1;
    switch (k) {
    case 0:
        if (gcoll_tune_parse_size(v, &r->chunk) || r->chunk == 0)
            return row_error(o, "chunk=%s is not a size in bytes > 0 (K, M, G suffixes)", v);
        return GCOLL_SUCCESS;
    case 1: {   /* accepted as ever, but no algorithm takes a radix: not kept */
        int radix;
        if (parse_int(v, &radix) || radix < 2)
            return row_error(o, "radix=%s is not an integer >= 2", v);
        return GCOLL_SUCCESS;
    }
    case 2:
        return parse_conds(o, v, r);
    case 4:
        return parse_rivals(o, v, r);
    default:
        if (strcmp(v, "count") && strcmp(v, "total"))
            return row_error(o, "size=%s: expected size=count or size=total", v);
        r->size_total = !strcmp(v, "total");
        return GCOLL_SUCCESS;
    }
}

static gcoll_status_t parse_mem(const origin_t *o, const char *s, int *mem)
{
    if (!strcmp(s, "*")) *mem = GCOLL_TUNE_ANY_MEM;
    else if (!strcmp(s, "host")) *mem = GCOLL_MEM_HOST;
    else if (!strcmp(s, "cuda")) *mem = GCOLL_MEM_CUDA;
    else return row_error(o, "memory type '%s' is not host, cuda or *", s);
    return GCOLL_SUCCESS;
}

static gcoll_status_t parse_row(const origin_t *o, char **f, int n, gcoll_tune_row_t *r)
{
    memset(r, 0, sizeof(*r));
    if (n < 6)
        return row_error(o, "%d field%s, expected at least 6: collective, memory type, nodes, "
                            "ranks per node, bytes, algorithm", n, n == 1 ? "" : "s");
    r->coll = gcoll_coll_from_name(f[0]);
    if (r->coll == GCOLL_COLL_COUNT) return row_error(o, "unknown collective '%s'", f[0]);
    GCOLL_TRY(parse_mem(o, f[1], &r->mem));
    char nodes[64], ppn[64];
    snprintf(nodes, sizeof nodes, "%s", f[2]);
    snprintf(ppn, sizeof ppn, "%s", f[3]);
    if (parse_count_range(f[2], &r->nodes_lo, &r->nodes_hi))
        return row_error(o, "bad node range '%s' (expected *, N, A-B or A-*, from 1)", nodes);
    if (parse_count_range(f[3], &r->ppn_lo, &r->ppn_hi))
        return row_error(o, "bad ranks-per-node range '%s' (expected *, N, A-B or A-*, from 1)",
                         ppn);
    char bytes[64];
    snprintf(bytes, sizeof bytes, "%s", f[4]);
    if (parse_byte_range(f[4], &r->bytes_lo, &r->bytes_hi))
        return row_error(o, "bad byte range '%s' (expected LO-HI with LO < HI, K/M/G suffixes, "
                            "HI may be inf)", bytes);
    r->algo = !strcmp(f[5], "mpi") ? &gcoll_tune_mpi : gcoll_algo_find(r->coll, f[5]);
    if (!r->algo)
        return row_error(o, "'%s' is not an algorithm of %s (gcoll_info -a lists them, or mpi)",
                         f[5], f[0]);
    int seen[NOPTIONS] = { 0 };
    for (int i = 6; i < n; i++) GCOLL_TRY(parse_option(o, f[i], r, seen));
    if (gcoll_tune_row_is_mpi(r) && r->chunk)
        return row_error(o, "chunk= on an mpi row: the MPI's collective has no chunk of ours");
    if (gcoll_tune_row_is_mpi(r) && r->nrivals)
        return row_error(o, "try= on an mpi row: libgcoll's calls never run it");
    r->line = o->line;
    return GCOLL_SUCCESS;
}

/* ---- matching ------------------------------------------------------------ */

static int in_count(int v, int lo, int hi)
{
    return v >= lo && v <= hi;
}

static int in_bytes(size_t v, size_t lo, size_t hi)
{
    return v >= lo && (hi == GCOLL_TUNE_INF_SIZE || v < hi);
}

static size_t key_bytes(const gcoll_tune_row_t *r, const gcoll_tune_key_t *k)
{
    if (!r->size_total) return k->bytes;
    if (k->ranks > 0 && k->bytes > (GCOLL_TUNE_INF_SIZE - 1) / (size_t)k->ranks)
        return GCOLL_TUNE_INF_SIZE - 1;
    return k->bytes * (size_t)k->ranks;
}

/* Everything but the bytes column. */
static int row_matches_comm(const gcoll_tune_row_t *r, const gcoll_tune_key_t *k, int mem)
{
    return r->coll == k->coll && (r->mem == GCOLL_TUNE_ANY_MEM || r->mem == mem) &&
           in_count(k->nodes, r->nodes_lo, r->nodes_hi) && in_count(k->ppn, r->ppn_lo, r->ppn_hi) &&
           (k->conds & r->if_set) == r->if_set && !(k->conds & r->if_clear);
}

static int row_matches(const gcoll_tune_row_t *r, const gcoll_tune_key_t *k, int mem)
{
    return row_matches_comm(r, k, mem) && in_bytes(key_bytes(r, k), r->bytes_lo, r->bytes_hi);
}

static const gcoll_tune_row_t *first_match(const gcoll_tune_table_t *t, size_t from,
                                           const gcoll_tune_key_t *k, int mem, int skip_mpi)
{
    for (size_t i = from; i < t->nrows; i++)
        if (row_matches(&t->rows[i], k, mem) && !(skip_mpi && gcoll_tune_row_is_mpi(&t->rows[i])))
            return &t->rows[i];
    return NULL;
}

/* Every call a table decides runs on host memory (gcoll_tune_key_t). */
const gcoll_tune_row_t *gcoll_tune_match(const gcoll_tune_table_t *t, size_t from,
                                         const gcoll_tune_key_t *k)
{
    return first_match(t, from, k, GCOLL_MEM_HOST, 1);
}

const gcoll_tune_row_t *gcoll_tune_match_any(const gcoll_tune_table_t *t, size_t from,
                                             const gcoll_tune_key_t *k)
{
    return first_match(t, from, k, GCOLL_MEM_HOST, 0);
}

/* ---- the ranges left to MPI ------------------------------------------------
 * The first matching row can only change where some row's bytes column
 * starts or stops matching, so the ranges follow from evaluating the match
 * at each such edge in turn: no allocation, rows x edges steps (a few
 * hundred for a table of tens of rows, once per communicator). */

/* Where row r starts and stops matching, in count x dtype size bytes:
 * size=total rows match bytes x ranks in [lo, hi), so bytes in
 * [ceil(lo / ranks), ceil(hi / ranks)). */
static void row_edges(const gcoll_tune_row_t *r, int ranks, size_t *lo, size_t *hi)
{
    size_t n = r->size_total && ranks > 1 ? (size_t)ranks : 1;
    *lo = r->bytes_lo / n + (r->bytes_lo % n != 0);
    *hi = r->bytes_hi == GCOLL_TUNE_INF_SIZE ? GCOLL_TUNE_INF_SIZE
                                             : r->bytes_hi / n + (r->bytes_hi % n != 0);
}

/* The smallest edge above b of the rows that may match k; inf if none. */
static size_t next_edge(const gcoll_tune_table_t *t, const gcoll_tune_key_t *k, int mem, size_t b)
{
    size_t next = GCOLL_TUNE_INF_SIZE, lo, hi;
    for (size_t i = 0; i < t->nrows; i++) {
        if (!row_matches_comm(&t->rows[i], k, mem)) continue;
        row_edges(&t->rows[i], k->ranks, &lo, &hi);
        if (lo > b && lo < next) next = lo;
        if (hi > b && hi < next) next = hi;
    }
    return next;
}

gcoll_status_t gcoll_tune_mpi_ranges(const gcoll_tune_table_t *t, const gcoll_tune_key_t *key,
                                     int mem, size_t *lo, size_t *hi, int max, int *n)
{
    gcoll_tune_key_t k = *key;
    size_t last_hi = 0;
    *n = 0;
    for (size_t b = 0, next;; b = next) {
        k.bytes = b;
        const gcoll_tune_row_t *r = first_match(t, 0, &k, mem, 0);
        next = next_edge(t, &k, mem, b);
        if (r && gcoll_tune_row_is_mpi(r)) {
            if (*n && last_hi == b) {           /* adjacent: one range */
                if (*n <= max) hi[*n - 1] = next;
            } else if (++*n <= max) {
                lo[*n - 1] = b;
                hi[*n - 1] = next;
            }
            last_hi = next;
        }
        if (next == GCOLL_TUNE_INF_SIZE) break;
    }
    if (*n > max)
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "the selection table leaves %d byte ranges of "
                           "%s to the MPI, more than the %d asked for", *n,
                           gcoll_coll_name(k.coll), max);
    return GCOLL_SUCCESS;
}

/* e matches every call that r matches (so r, below it, is dead). */
static int row_covers(const gcoll_tune_row_t *e, const gcoll_tune_row_t *r)
{
    return e->coll == r->coll && (e->mem == GCOLL_TUNE_ANY_MEM || e->mem == r->mem) &&
           e->nodes_lo <= r->nodes_lo && e->nodes_hi >= r->nodes_hi &&
           e->ppn_lo <= r->ppn_lo && e->ppn_hi >= r->ppn_hi &&
           e->size_total == r->size_total && e->bytes_lo <= r->bytes_lo &&
           (e->bytes_hi == GCOLL_TUNE_INF_SIZE || (r->bytes_hi != GCOLL_TUNE_INF_SIZE &&
                                                   e->bytes_hi >= r->bytes_hi)) &&
           (e->if_set & r->if_set) == e->if_set && (e->if_clear & r->if_clear) == e->if_clear;
}

/* e, above r, makes r dead: e covers r, unless e is an mpi row and r is
 * not (libgcoll's own calls skip e and reach r). */
static int row_shadows(const gcoll_tune_row_t *e, const gcoll_tune_row_t *r)
{
    return row_covers(e, r) && (!gcoll_tune_row_is_mpi(e) || gcoll_tune_row_is_mpi(r));
}

/* ---- parsing a text ------------------------------------------------------ */

static gcoll_status_t grow(gcoll_tune_table_t *t)
{
    if (t->nrows < t->cap) return GCOLL_SUCCESS;
    size_t cap = t->cap ? 2 * t->cap : 64;
    gcoll_tune_row_t *rows = gcoll_realloc(t->rows, cap * sizeof(*rows));
    if (!rows) return GCOLL_ERROR(GCOLL_ERR_NO_MEMORY, "cannot allocate a selection table");
    t->rows = rows;
    t->cap  = cap;
    return GCOLL_SUCCESS;
}

static gcoll_status_t add_src(gcoll_tune_table_t *t, const char *src, const char **name)
{
    char **srcs = gcoll_realloc(t->srcs, (t->nsrcs + 1) * sizeof(*srcs));
    if (!srcs) return GCOLL_ERROR(GCOLL_ERR_NO_MEMORY, "cannot allocate a selection table");
    t->srcs = srcs;
    if (!(srcs[t->nsrcs] = gcoll_strdup(src)))
        return GCOLL_ERROR(GCOLL_ERR_NO_MEMORY, "cannot allocate a selection table");
    *name = srcs[t->nsrcs++];
    return GCOLL_SUCCESS;
}

/* Fields of one row, split in place; comments already cut off. */
static int split_fields(char *row, int oneline, char **f)
{
    int n = 0;
    char *save = NULL;
    const char *sep = oneline ? ":" : " \t\r";
    for (char *tok = strtok_r(row, sep, &save); tok; tok = strtok_r(NULL, sep, &save)) {
        if (oneline) {   /* tolerate spaces around the fields of a one-line row */
            while (isspace((unsigned char)*tok)) tok++;
            char *e = tok + strlen(tok);
            while (e > tok && isspace((unsigned char)e[-1])) *--e = '\0';
        }
        if (n == MAX_FIELDS) return MAX_FIELDS + 1;
        f[n++] = tok;
    }
    return n;
}

static gcoll_status_t add_row(gcoll_tune_table_t *t, size_t first, const origin_t *o, char *text)
{
    char *f[MAX_FIELDS];
    int n = split_fields(text, o->oneline, f);
    if (n == 0) return GCOLL_SUCCESS;
    if (n > MAX_FIELDS) return row_error(o, "more than %d fields", MAX_FIELDS);
    gcoll_tune_row_t r;
    GCOLL_TRY(parse_row(o, f, n, &r));
    for (size_t i = first; i < t->nrows; i++)
        if (row_shadows(&t->rows[i], &r))
            return row_error(o, "this row can never match: %s %d above it covers every call it "
                                "would", o->oneline ? "row" : "line", t->rows[i].line);
    GCOLL_TRY(grow(t));
    r.src = o->src;
    r.origin = o->origin;
    t->rows[t->nrows++] = r;
    return GCOLL_SUCCESS;
}

static gcoll_status_t parse_rows(gcoll_tune_table_t *t, size_t first, char *text, origin_t *o)
{
    /* walked by hand: strtok would merge empty lines and shift the numbering */
    char *row = text;
    for (o->line = 1; row; o->line++) {
        char *next = strchr(row, o->oneline ? ';' : '\n');
        if (next) *next++ = '\0';
        char *hash = o->oneline ? NULL : strchr(row, '#');
        if (hash) *hash = '\0';
        GCOLL_TRY(add_row(t, first, o, row));
        row = next;
    }
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll_tune_parse(gcoll_tune_table_t *t, const char *text, const char *src,
                                int oneline)
{
    return gcoll_tune_parse_from(t, text, src, oneline ? GCOLL_TUNE_FROM_ENV : GCOLL_TUNE_FROM_FILE);
}

gcoll_status_t gcoll_tune_parse_from(gcoll_tune_table_t *t, const char *text, const char *src,
                                     gcoll_tune_origin_t origin)
{
    size_t first = t->nrows;
    char *copy = gcoll_strdup(text);
    origin_t o = { src, 0, origin == GCOLL_TUNE_FROM_ENV, (int)origin };
    if (!copy) return GCOLL_ERROR(GCOLL_ERR_NO_MEMORY, "cannot copy a selection table");
    gcoll_status_t st = add_src(t, src, &o.src);
    if (st == GCOLL_SUCCESS) st = parse_rows(t, first, copy, &o);
    free(copy);
    if (st != GCOLL_SUCCESS) t->nrows = first;   /* all or nothing */
    return st;
}

gcoll_status_t gcoll_tune_read_file(const char *path, char **text)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "selection table %s cannot be opened: %s", path,
                           strerror(errno));
    size_t len = 0, cap = 4096;
    char *buf = gcoll_malloc(cap);
    while (buf) {
        len += fread(buf + len, 1, cap - 1 - len, f);
        if (len < cap - 1) break;
        char *bigger = gcoll_realloc(buf, cap *= 2);
        if (!bigger) { free(buf); buf = NULL; }
        else buf = bigger;
    }
    int failed = ferror(f);
    fclose(f);
    if (!buf) return GCOLL_ERROR(GCOLL_ERR_NO_MEMORY, "cannot read selection table %s", path);
    if (failed) {
        free(buf);
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "selection table %s cannot be read", path);
    }
    buf[len] = '\0';
    *text = buf;
    return GCOLL_SUCCESS;
}

/* ---- printing ------------------------------------------------------------- */

static void format_count_range(char *buf, size_t len, int lo, int hi)
{
    if (lo == 1 && hi == GCOLL_TUNE_INF_INT) snprintf(buf, len, "*");
    else if (lo == hi) snprintf(buf, len, "%d", lo);
    else if (hi == GCOLL_TUNE_INF_INT) snprintf(buf, len, "%d-*", lo);
    else snprintf(buf, len, "%d-%d", lo, hi);
}

static void format_byte_range(char *buf, size_t len, size_t lo, size_t hi)
{
    char l[32], h[32];
    if (lo == 0 && hi == GCOLL_TUNE_INF_SIZE) { snprintf(buf, len, "*"); return; }
    gcoll_tune_format_size(l, sizeof l, lo);
    if (hi == lo + 1) { snprintf(buf, len, "%s", l); return; }
    gcoll_tune_format_size(h, sizeof h, hi);
    snprintf(buf, len, "%s-%s", l, h);
}

static void format_options(char *buf, size_t len, const gcoll_tune_row_t *r)
{
    size_t n = 0;
    buf[0] = '\0';
    if (r->size_total) n += (size_t)snprintf(buf + n, len - n, " size=total");
    for (int k = 0, first = 1; k < GCOLL_TUNE_IF_COUNT && n < len; k++) {
        unsigned bit = 1u << k;
        if (!((r->if_set | r->if_clear) & bit)) continue;
        n += (size_t)snprintf(buf + n, len - n, "%s%s%s", first ? " if=" : ",",
                              r->if_clear & bit ? "!" : "", cond_names[k]);
        first = 0;
    }
    char sz[32];
    gcoll_tune_format_size(sz, sizeof sz, r->chunk);
    if (r->chunk && n < len) n += (size_t)snprintf(buf + n, len - n, " chunk=%s", sz);
    for (int i = 0; i < r->nrivals && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? "," : " try=", r->rival[i]->name);
}

int gcoll_tune_format_row(char *buf, size_t len, const gcoll_tune_row_t *r)
{
    char nodes[32], ppn[32], bytes[80], opts[224];
    const char *mem = r->mem == GCOLL_TUNE_ANY_MEM ? "*" : gcoll_memtype_name((gcoll_memtype_t)r->mem);
    format_count_range(nodes, sizeof nodes, r->nodes_lo, r->nodes_hi);
    format_count_range(ppn, sizeof ppn, r->ppn_lo, r->ppn_hi);
    format_byte_range(bytes, sizeof bytes, r->bytes_lo, r->bytes_hi);
    format_options(opts, sizeof opts, r);
    return snprintf(buf, len, "%-15s %-5s %-6s %-5s %-14s %s%s", gcoll_coll_name(r->coll), mem,
                    nodes, ppn, bytes, r->algo->name, opts);
}

int gcoll_tune_format_origin(char *buf, size_t len, const gcoll_tune_row_t *r)
{
    return snprintf(buf, len, "%s%s:%d", r->origin == GCOLL_TUNE_FROM_CACHE ? "cache " : "",
                    r->src, r->line);
}

/* Rows an earlier row covers can never match; printing them would make the
 * output fail to parse as one file (the parser rejects dead rows), so they
 * are named in a comment instead. */
static const gcoll_tune_row_t *covered_by(const gcoll_tune_table_t *t, size_t i)
{
    for (size_t e = 0; e < i; e++)
        if (row_shadows(&t->rows[e], &t->rows[i])) return &t->rows[e];
    return NULL;
}

static void print_table(FILE *f, const gcoll_tune_table_t *t, int origins)
{
    /* by origin: the block header's words, and each row's in origins mode */
    static const char *const kind[] = { "", "", "calibration cache ", "" };
    static const char *const tag[]  = { "env ", "file ", "", "" };
    const char *src = NULL;
    char line[512], from[400];
    fprintf(f, "# %-13s %-5s %-6s %-5s %-14s %s\n", "collective", "mem", "nodes", "ppn", "bytes",
            "algorithm [options]");
    for (size_t i = 0; i < t->nrows; i++) {
        const gcoll_tune_row_t *r = &t->rows[i], *by = covered_by(t, i);
        if (r->src != src) {
            src = r->src;
            fprintf(f, "# from %s%s\n", kind[r->origin], src);
        }
        if (by) {
            fprintf(f, "# (%s:%d omitted: %s:%d above covers it)\n", r->src, r->line, by->src,
                    by->line);
            continue;
        }
        gcoll_tune_format_row(line, sizeof line, r);
        gcoll_tune_format_origin(from, sizeof from, r);
        if (origins) fprintf(f, "%-70s # %s%s\n", line, tag[r->origin], from);
        else fprintf(f, "%s\n", line);
    }
}

void gcoll_tune_print(FILE *f, const gcoll_tune_table_t *t)
{
    print_table(f, t, 0);
}

void gcoll_tune_print_origins(FILE *f, const gcoll_tune_table_t *t)
{
    print_table(f, t, 1);
}
