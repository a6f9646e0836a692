/* SPDX-License-Identifier: BSD-3-Clause */
/* Selection tables (core/tune_table.c, core/select.c): the built-in table
 * parses, prints and re-parses to the same rows, and chooses exactly what the
 * hand-written rules it replaced chose; malformed tables are rejected whole
 * with the right line number; first match wins; byte ranges include their
 * lower end and exclude their upper end; size suffixes; "mpi" rows (skipped
 * by libgcoll's own selection, reported as ranges for the drop-in) and the
 * calibration's mpi rows from synthetic times. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/calibrate.h"
#include "base/shuffle.h"
#include "core/memtype.h"
#include "core/select.h"
#include "base/status.h"
#include "core/tune_table.h"

static int checks, failures;

#define CHECK(cond, ...) \
    do { \
        checks++; \
        if (!(cond)) { \
            failures++; \
            printf("FAIL %s:%d: ", __FILE__, __LINE__); \
            printf(__VA_ARGS__); \
            printf("\n"); \
        } \
    } while (0)

static char *print_table(const gcoll_tune_table_t *t)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    gcoll_tune_print(f, t);
    fclose(f);
    return buf;
}

static int rows_equal(const gcoll_tune_row_t *a, const gcoll_tune_row_t *b)
{
    return a->coll == b->coll && a->mem == b->mem && a->nodes_lo == b->nodes_lo &&
           a->nodes_hi == b->nodes_hi && a->ppn_lo == b->ppn_lo && a->ppn_hi == b->ppn_hi &&
           a->bytes_lo == b->bytes_lo && a->bytes_hi == b->bytes_hi &&
           a->size_total == b->size_total && a->algo == b->algo && a->chunk == b->chunk &&
           a->if_set == b->if_set && a->if_clear == b->if_clear;
}

/* print -> parse -> same rows, and the second print is the same text */
static void test_builtin_round_trip(void)
{
    gcoll_tune_table_t t, u;
    gcoll_tune_table_init(&t);
    gcoll_tune_table_init(&u);
    gcoll_status_t st = gcoll_tune_parse(&t, gcoll_select_builtin_text(), "built-in", 0);
    CHECK(st == GCOLL_SUCCESS, "built-in table: %s", gcoll_last_error());
    CHECK(t.nrows > 20, "built-in table has %zu rows", t.nrows);
    char *text = print_table(&t);
    st = gcoll_tune_parse(&u, text, "printed", 0);
    CHECK(st == GCOLL_SUCCESS, "printed table: %s", gcoll_last_error());
    CHECK(u.nrows == t.nrows, "printed table has %zu rows, built-in %zu", u.nrows, t.nrows);
    for (size_t i = 0; i < t.nrows && i < u.nrows; i++)
        CHECK(rows_equal(&t.rows[i], &u.rows[i]), "row %zu differs after printing", i);
    char *again = print_table(&u);
    /* the source comment differs ("# from built-in" / "# from printed") */
    CHECK(!strcmp(strstr(text, "\nallreduce"), strstr(again, "\nallreduce")),
          "second print differs:\n%s\n---\n%s", text, again);
    /* a catch-all row without conditions for every collective */
    for (int c = 0; c < GCOLL_COLL_COUNT; c++) {
        int found = 0;
        for (size_t i = 0; i < t.nrows; i++) {
            const gcoll_tune_row_t *r = &t.rows[i];
            found |= r->coll == (gcoll_coll_t)c && !r->if_set && !r->if_clear &&
                     r->nodes_lo == 1 && r->nodes_hi == GCOLL_TUNE_INF_INT && r->ppn_lo == 1 &&
                     r->ppn_hi == GCOLL_TUNE_INF_INT && r->bytes_lo == 0 &&
                     r->bytes_hi == GCOLL_TUNE_INF_SIZE && r->mem == GCOLL_TUNE_ANY_MEM;
        }
        CHECK(found, "built-in table lacks a catch-all row for %s", gcoll_coll_name((gcoll_coll_t)c));
    }
    free(text);
    free(again);
    gcoll_tune_table_fini(&t);
    gcoll_tune_table_fini(&u);
}

/* ---- the rules of the built-in table, written out as code: the reference ---- */

typedef struct {
    int shm, nnodes, size, ppn, uniform, contiguous;
} topo_t;

static const char *ref_flat(gcoll_coll_t coll, size_t bytes, size_t block, int size)
{
    int pow2 = (size & (size - 1)) == 0;
    switch (coll) {
    case GCOLL_COLL_ALLREDUCE:
        if (bytes <= 16384) return "rdouble";
        return bytes <= (1u << 20) && pow2 ? "rabenseifner" : "ring";
    case GCOLL_COLL_BCAST:          return bytes <= 65536 || size <= 2 ? "binomial" : "scatter_allgather";
    case GCOLL_COLL_REDUCE:         return bytes <= 65536 ? "binomial" : "rs_gather";
    case GCOLL_COLL_ALLGATHER:      return bytes <= 65536 ? (pow2 ? "rdouble" : "bruck") : "ring";
    case GCOLL_COLL_REDUCE_SCATTER: return bytes <= 65536 ? "rhalving" : "ring";
    case GCOLL_COLL_ALLTOALL:       return block <= 256 ? "bruck" : "pairwise";
    default:                        return "dissemination";
    }
}

static const char *ref_pick(const topo_t *c, gcoll_coll_t coll, size_t bytes, size_t block)
{
    if (!c->shm || coll == GCOLL_COLL_ALLTOALL || c->size == 1)
        return ref_flat(coll, bytes, block, c->size);
    if (c->nnodes == 1) return "shm";
    if (c->ppn == 1 && c->uniform) return ref_flat(coll, bytes, block, c->size);
    int regular = c->uniform && c->contiguous;
    switch (coll) {
    case GCOLL_COLL_ALLREDUCE:
        if (c->nnodes == 2 && bytes < (256u << 10)) return "hier_leader";
        return bytes <= 16384 || !c->uniform ? "hier_leader" : "hier";
    case GCOLL_COLL_ALLGATHER:
    case GCOLL_COLL_REDUCE_SCATTER:
        return regular ? "hier" : ref_flat(coll, bytes, block, c->size);
    default:
        return "hier";
    }
}

/* A topology from the ranks of each node. */
static topo_t make_topo(const int *per_node, int n, int shm, int contiguous)
{
    topo_t t = { shm, n, 0, 0, 1, contiguous };
    for (int i = 0; i < n; i++) {
        t.size += per_node[i];
        if (per_node[i] > t.ppn) t.ppn = per_node[i];
        if (per_node[i] != per_node[0]) t.uniform = 0;
    }
    return t;
}

static void key_of(const topo_t *c, gcoll_coll_t coll, size_t block, gcoll_tune_key_t *k)
{
    k->coll  = coll;
    k->nodes = c->nnodes;
    k->ppn   = c->ppn;
    k->ranks = c->size;
    k->bytes = block;
    k->conds = (c->shm ? GCOLL_TUNE_IF_SHM : 0) | (c->uniform ? GCOLL_TUNE_IF_UNIFORM : 0) |
               (c->uniform && c->contiguous ? GCOLL_TUNE_IF_REGULAR : 0) |
               ((c->size & (c->size - 1)) == 0 ? GCOLL_TUNE_IF_POW2 : 0);
}

static void test_builtin_equals_old_rules(void)
{
    static const int layouts[][5] = {   /* ranks per node, 0-terminated */
        { 1 }, { 2 }, { 3 }, { 8 }, { 1, 1 }, { 2, 2 }, { 1, 1, 1 }, { 3, 3, 3 }, { 4, 4 },
        { 2, 1 }, { 3, 1 }, { 1, 2 }, { 2, 2, 1 }, { 4, 2 }, { 1, 1, 1, 1 }, { 2, 2, 2, 2 },
    };
    static const size_t sizes[] = { 0, 1, 4, 64, 128, 255, 256, 257, 4096, 8192, 16383, 16384,
                                    16385, 21845, 32768, 65535, 65536, 65537, 262144, 1048575,
                                    1048576, 1048577, 4194304 };
    gcoll_tune_table_t t;
    gcoll_tune_table_init(&t);
    gcoll_tune_parse(&t, gcoll_select_builtin_text(), "built-in", 0);
    int bad = 0;
    for (size_t l = 0; l < sizeof layouts / sizeof layouts[0]; l++) {
        int n = 0;
        while (n < 5 && layouts[l][n]) n++;
        for (int variant = 0; variant < 4; variant++) {
            topo_t c = make_topo(layouts[l], n, variant & 1, !(variant & 2));
            for (int coll = 0; coll < GCOLL_COLL_COUNT; coll++)
                for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
                    size_t block = sizes[s];
                    size_t bytes = coll == GCOLL_COLL_ALLGATHER || coll == GCOLL_COLL_REDUCE_SCATTER
                                       ? block * (size_t)c.size : block;
                    gcoll_tune_key_t k;
                    key_of(&c, (gcoll_coll_t)coll, block, &k);
                    const gcoll_tune_row_t *r = gcoll_tune_match(&t, 0, &k);
                    const char *want = ref_pick(&c, (gcoll_coll_t)coll, bytes, block);
                    if (!r || strcmp(r->algo->name, want)) {
                        if (bad++ < 10)
                            CHECK(0, "%s %zu B, layout %zu shm=%d contiguous=%d: table %s, rules %s",
                                  gcoll_coll_name((gcoll_coll_t)coll), block, l, c.shm,
                                  c.contiguous, r ? r->algo->name : "(none)", want);
                    }
                    checks++;
                }
        }
    }
    CHECK(bad == 0, "%d decisions of the built-in table differ from the old rules", bad);
    gcoll_tune_table_fini(&t);
}

/* ---- rejection ------------------------------------------------------------ */

static void expect_error(const char *text, int oneline, const char *where, const char *why)
{
    gcoll_tune_table_t t;
    gcoll_tune_table_init(&t);
    gcoll_tune_parse(&t, "barrier * * * * dissemination\n", "first", 0);
    gcoll_error_clear();
    gcoll_status_t st = gcoll_tune_parse(&t, text, "bad.tbl", oneline);
    const char *msg = gcoll_last_error();
    CHECK(st == GCOLL_ERR_INVALID_ARG, "accepted: %s", text);
    CHECK(strstr(msg, where) != NULL, "'%s' does not name '%s'", msg, where);
    CHECK(strstr(msg, why) != NULL, "'%s' does not say '%s'", msg, why);
    CHECK(strstr(msg, "bad.tbl") != NULL, "'%s' does not name the file", msg);
    CHECK(t.nrows == 1, "a rejected table left %zu rows (all or nothing)", t.nrows);
    gcoll_tune_table_fini(&t);
}

static void test_rejects(void)
{
    const char *ok = "# comment\n\nallreduce host * * 0-16K rdouble  # trailing comment\n";
    char buf[512];
#define BAD(row, why) \
    do { snprintf(buf, sizeof buf, "%s%s\n", ok, row); expect_error(buf, 0, "line 4", why); } while (0)
    BAD("allreduc host * * 0-16K ring", "unknown collective 'allreduc'");
    BAD("allreduce host * * 16K-inf rign", "'rign' is not an algorithm of allreduce");
    BAD("allreduce host * * 16K-inf alltoall", "not an algorithm of allreduce");
    BAD("allreduce gpu * * 16K-inf ring", "memory type 'gpu'");
    BAD("allreduce host 0 * 16K-inf ring", "bad node range '0'");
    BAD("allreduce host 8-2 * 16K-inf ring", "bad node range '8-2'");
    BAD("allreduce host x * 16K-inf ring", "bad node range 'x'");
    BAD("allreduce host * 2-x 16K-inf ring", "bad ranks-per-node range '2-x'");
    BAD("allreduce host * * 64K-16K ring", "bad byte range '64K-16K'");
    BAD("allreduce host * * 16K-16K ring", "bad byte range '16K-16K'");
    BAD("allreduce host * * 16Q-inf ring", "bad byte range '16Q-inf'");
    BAD("allreduce host * * -5-inf ring", "bad byte range");
    BAD("allreduce host * * 16K-inf", "5 fields, expected at least 6");
    BAD("allreduce host * * 16K-inf ring chunk=0", "chunk=0");
    BAD("allreduce host * * 16K-inf ring chunk=12X", "chunk=12X");
    BAD("allreduce host * * 16K-inf ring radix=1", "radix=1");
    BAD("allreduce host * * 16K-inf ring radix=two", "radix=two");
    BAD("allreduce host * * 16K-inf ring color=red", "unexpected 'color=red'");
    BAD("allreduce host * * 16K-inf ring fast", "unexpected 'fast'");
    BAD("allreduce host * * 16K-inf ring chunk=1K chunk=2K", "given twice");
    BAD("allreduce host * * 16K-inf ring if=gpu", "unknown condition 'gpu'");
    BAD("allreduce host * * 16K-inf ring if=shm,!shm", "negation");
    BAD("allreduce host * * 16K-inf ring size=all", "size=all");
    BAD("allreduce host * * 1K-8K ring", "can never match: line 3");
    BAD("allreduce host * * 1K-8K mpi", "can never match: line 3");   /* under a libgcoll row */
    BAD("allreduce host * * 16K-inf mpi chunk=1M", "chunk= on an mpi row");
    BAD("allreduce host * * 16K-inf mpi try=ring", "try= on an mpi row");
    BAD("allreduce host * * 16K-inf ring try=rign", "try=: 'rign' is not an algorithm");
    BAD("allreduce host * * 16K-inf ring try=mpi", "try=: 'mpi' is not an algorithm");
    BAD("allreduce host * * 16K-inf ring try=ring", "ring is named twice");
    BAD("allreduce host * * 16K-inf ring try=rdouble,rdouble", "rdouble is named twice");
    BAD("allreduce host * * 16K-inf ring try=,", "try= names no algorithm");
    BAD("allreduce host * * 16K-inf ring try=rdouble,rabenseifner,reduce_bcast,hier,hier_p2p,"
        "hier_leader,shm", "more than 6 rivals");
    BAD("bcast host * * 16K-inf binomial try=ring", "'ring' is not an algorithm of bcast");
    BAD("bcast host * * 16K-inf mpl", "'mpl' is not an algorithm of bcast");
    BAD("allreduce * * * 16K-inf ring ring ring ring ring ring ring ring ring ring ring ring",
        "more than 16 fields");
#undef BAD
    /* a later line, after several good ones: its own number */
    expect_error("bcast * * * * binomial\n# c\nreduce * * * 0-1K binomial\nreduce * * * * bogus\n",
                 0, "line 4", "'bogus' is not an algorithm of reduce");
    /* the one-line form counts rows */
    expect_error("allreduce:host:*:*:0-16K:rdouble;allreduce:host:*:*:16K-inf:rign", 1, "row 2",
                 "'rign'");
    expect_error("allreduce:host:*:*:0-16K", 1, "row 1", "expected at least 6");
}

/* ---- matching ------------------------------------------------------------- */

static const char *choose(const gcoll_tune_table_t *t, gcoll_coll_t coll, size_t bytes,
                          int nodes, int ppn)
{
    gcoll_tune_key_t k = { coll, nodes, ppn, nodes * ppn, GCOLL_TUNE_IF_UNIFORM, bytes };
    const gcoll_tune_row_t *r = gcoll_tune_match(t, 0, &k);
    return r ? r->algo->name : "(none)";
}

static void test_matching(void)
{
    gcoll_tune_table_t t;
    gcoll_tune_table_init(&t);
    gcoll_status_t st = gcoll_tune_parse(
        &t,
        "allreduce host 2-4 * 0-16K rdouble\n"
        "allreduce host * * 0-16K reduce_bcast\n"     /* overlaps the first: loses there */
        "allreduce host * * 16K-1M rabenseifner chunk=256K radix=4\n"
        "allreduce cuda * * * rdouble\n"
        "allreduce * * * 1M-inf ring\n"
        "allgather * * * 0-64K rdouble size=total\n"
        "allgather * * * * ring\n",
        "t", 0);
    CHECK(st == GCOLL_SUCCESS, "%s", gcoll_last_error());
    CHECK(!strcmp(choose(&t, GCOLL_COLL_ALLREDUCE, 8, 2, 1), "rdouble"), "first match wins");
    CHECK(!strcmp(choose(&t, GCOLL_COLL_ALLREDUCE, 8, 1, 2), "reduce_bcast"), "nodes range");
    CHECK(!strcmp(choose(&t, GCOLL_COLL_ALLREDUCE, 8, 5, 2), "reduce_bcast"), "nodes 2-4 is inclusive");
    CHECK(!strcmp(choose(&t, GCOLL_COLL_ALLREDUCE, 8, 4, 2), "rdouble"), "nodes 2-4 includes 4");
    CHECK(!strcmp(choose(&t, GCOLL_COLL_ALLREDUCE, 0, 1, 2), "reduce_bcast"), "0 bytes in 0-16K");
    CHECK(!strcmp(choose(&t, GCOLL_COLL_ALLREDUCE, 16383, 1, 2), "reduce_bcast"), "16K-1 below 16K");
    CHECK(!strcmp(choose(&t, GCOLL_COLL_ALLREDUCE, 16384, 1, 2), "rabenseifner"),
          "16K: hi is exclusive, lo inclusive");
    CHECK(!strcmp(choose(&t, GCOLL_COLL_ALLREDUCE, 1048575, 1, 2), "rabenseifner"), "1M-1");
    CHECK(!strcmp(choose(&t, GCOLL_COLL_ALLREDUCE, 1048576, 1, 2), "ring"), "1M");
    CHECK(!strcmp(choose(&t, GCOLL_COLL_ALLREDUCE, (size_t)1 << 40, 1, 2), "ring"), "inf");
    gcoll_tune_key_t k = { GCOLL_COLL_ALLREDUCE, 1, 2, 2, 0, 65536 };
    const gcoll_tune_row_t *r = gcoll_tune_match(&t, 0, &k);
    /* radix= is accepted (older tables have it) but no algorithm takes one */
    CHECK(r && r->chunk == 256 * 1024, "chunk= parsed, radix= accepted");
    char text[200];
    gcoll_tune_format_row(text, sizeof text, r);
    CHECK(strstr(text, "chunk=256K") && !strstr(text, "radix"), "printed as \"%s\"", text);
    CHECK(r && r->nrivals == 0, "a row without try= names no rivals");
    /* the memory type column: every call is keyed as host memory, so the
     * cuda row above the 1M-inf one never matches */
    CHECK(!strcmp(choose(&t, GCOLL_COLL_ALLREDUCE, 2u << 20, 1, 2), "ring"),
          "a cuda row matched a call");
    /* size=total: 64K over all ranks; 16K per rank x 4 ranks = 64K is out */
    CHECK(!strcmp(choose(&t, GCOLL_COLL_ALLGATHER, 16383, 2, 2), "rdouble"), "size=total below");
    CHECK(!strcmp(choose(&t, GCOLL_COLL_ALLGATHER, 16384, 2, 2), "ring"), "size=total at hi");
    CHECK(!strcmp(choose(&t, GCOLL_COLL_BCAST, 8, 2, 2), "(none)"), "no row for bcast");
    gcoll_tune_table_fini(&t);

    /* try=: the rivals in their order, printed back the same */
    gcoll_tune_table_init(&t);
    st = gcoll_tune_parse(&t, "allreduce host 2 2 32K-128K hier_leader try=reduce_bcast,hier\n",
                          "t", 0);
    CHECK(st == GCOLL_SUCCESS, "%s", gcoll_last_error());
    k = (gcoll_tune_key_t){ GCOLL_COLL_ALLREDUCE, 2, 2, 4, 0, 65536 };
    r = gcoll_tune_match(&t, 0, &k);
    CHECK(r && r->nrivals == 2 && !strcmp(r->algo->name, "hier_leader") &&
          !strcmp(r->rival[0]->name, "reduce_bcast") && !strcmp(r->rival[1]->name, "hier"),
          "try= parsed into the row's rivals, in order");
    if (r) gcoll_tune_format_row(text, sizeof text, r);
    CHECK(r && strstr(text, "hier_leader try=reduce_bcast,hier"), "printed as \"%s\"", text);
    gcoll_tune_table_fini(&t);

    /* conditions */
    gcoll_tune_table_init(&t);
    gcoll_tune_parse(&t, "bcast * * * * binomial if=shm,!uniform\nbcast * * * * scatter_allgather\n",
                     "c", 0);
    gcoll_tune_key_t b = { GCOLL_COLL_BCAST, 2, 2, 3, GCOLL_TUNE_IF_SHM, 8 };
    CHECK(!strcmp(gcoll_tune_match(&t, 0, &b)->algo->name, "binomial"), "if=shm,!uniform holds");
    b.conds |= GCOLL_TUNE_IF_UNIFORM;
    CHECK(!strcmp(gcoll_tune_match(&t, 0, &b)->algo->name, "scatter_allgather"), "!uniform fails");
    gcoll_tune_table_fini(&t);
}

/* ---- mpi rows --------------------------------------------------------------- */

static const char *first_any(const gcoll_tune_table_t *t, size_t bytes, int ranks)
{
    gcoll_tune_key_t k = { GCOLL_COLL_ALLREDUCE, 1, ranks, ranks, 0, bytes };
    const gcoll_tune_row_t *r = gcoll_tune_match_any(t, 0, &k);
    return r ? r->algo->name : "(none)";
}

static void test_mpi_rows(void)
{
    gcoll_tune_table_t t;
    gcoll_tune_table_init(&t);
    /* a libgcoll row above shadows part of the mpi ranges; an mpi row above a
     * libgcoll row of the same range is not dead (libgcoll's calls reach it);
     * one mpi row under another that covers it would be */
    gcoll_status_t st = gcoll_tune_parse(
        &t,
        "allreduce host * * 100K-200K ring\n"
        "allreduce host * * 0-1K mpi\n"
        "allreduce host * * 0-1K rdouble\n"
        "allreduce * * * 1K-4K mpi\n"
        "allreduce host * * 64K-256K mpi\n"
        "allreduce host * * 2M-inf mpi size=total\n"
        "allreduce * * * * ring\n",
        "m.tbl", 0);
    CHECK(st == GCOLL_SUCCESS, "mpi rows: %s", gcoll_last_error());
    CHECK(t.nrows == 7 && gcoll_tune_row_is_mpi(&t.rows[1]) && !strcmp(t.rows[1].algo->name, "mpi"),
          "mpi row parsed");
    /* libgcoll's own selection skips mpi rows: the next matching row */
    CHECK(!strcmp(choose(&t, GCOLL_COLL_ALLREDUCE, 8, 1, 4), "rdouble"), "8 B: next row after mpi");
    CHECK(!strcmp(choose(&t, GCOLL_COLL_ALLREDUCE, 2048, 1, 4), "ring"), "2K: the catch-all");
    CHECK(!strcmp(first_any(&t, 8, 4), "mpi"), "8 B: the first row names mpi");
    CHECK(!strcmp(first_any(&t, 150000, 4), "ring"), "150K: the libgcoll row above wins");
    char text[200];
    gcoll_tune_format_row(text, sizeof text, &t.rows[1]);
    CHECK(strstr(text, " mpi") && strstr(text, "0-1K"), "printed as \"%s\"", text);

    /* ranges, 4 ranks: [0,4K) merged from two rows, [64K,100K) and [200K,256K)
     * around the ring row, [512K,inf) from 2M x 4 ranks (size=total) */
    gcoll_tune_key_t k = { GCOLL_COLL_ALLREDUCE, 1, 4, 4, 0, 0 };
    size_t lo[8], hi[8];
    int n = -1;
    st = gcoll_tune_mpi_ranges(&t, &k, GCOLL_MEM_HOST, lo, hi, 8, &n);
    static const size_t want[][2] = { { 0, 4096 }, { 65536, 102400 }, { 204800, 262144 },
                                      { 524288, GCOLL_TUNE_INF_SIZE } };
    CHECK(st == GCOLL_SUCCESS && n == 4, "host ranges: st %d, n %d", st, n);
    for (int i = 0; i < n && i < 4; i++)
        CHECK(lo[i] == want[i][0] && hi[i] == want[i][1], "range %d: [%zu, %zu), want [%zu, %zu)",
              i, lo[i], hi[i], want[i][0], want[i][1]);
    /* 3 ranks: 2M / 3 rounded up */
    k.ranks = 3;
    st = gcoll_tune_mpi_ranges(&t, &k, GCOLL_MEM_HOST, lo, hi, 8, &n);
    CHECK(st == GCOLL_SUCCESS && n == 4 && lo[3] == (2u << 20) / 3 + 1, "size=total at 3 ranks: %zu",
          n == 4 ? lo[3] : 0);
    k.ranks = 4;
    /* device memory: only the * row's range */
    st = gcoll_tune_mpi_ranges(&t, &k, GCOLL_MEM_CUDA, lo, hi, 8, &n);
    CHECK(st == GCOLL_SUCCESS && n == 1 && lo[0] == 1024 && hi[0] == 4096, "cuda ranges: n %d", n);
    /* too few entries: an error, and how many there are */
    gcoll_error_clear();
    st = gcoll_tune_mpi_ranges(&t, &k, GCOLL_MEM_HOST, lo, hi, 2, &n);
    CHECK(st == GCOLL_ERR_INVALID_ARG && n == 4 && strstr(gcoll_last_error(), "4 byte ranges"),
          "max 2: st %d, n %d", st, n);
    /* another collective: none */
    k.coll = GCOLL_COLL_BCAST;
    st = gcoll_tune_mpi_ranges(&t, &k, GCOLL_MEM_HOST, lo, hi, 8, &n);
    CHECK(st == GCOLL_SUCCESS && n == 0, "bcast: n %d", n);
    gcoll_tune_table_fini(&t);

    /* the built-in table names no mpi row */
    gcoll_tune_table_init(&t);
    gcoll_tune_parse(&t, gcoll_select_builtin_text(), "built-in", 0);
    k.coll = GCOLL_COLL_ALLREDUCE;
    st = gcoll_tune_mpi_ranges(&t, &k, GCOLL_MEM_HOST, lo, hi, 8, &n);
    CHECK(st == GCOLL_SUCCESS && n == 0, "built-in: n %d", n);
    gcoll_tune_table_fini(&t);
}

/* The calibration's winners and rows with the MPI as a candidate, from
 * synthetic times (us): it must be 5% faster to take a size, stays while it
 * is faster at all, never becomes libgcoll's own winner, and its rows come
 * first and load with the rest. */
static void test_calib_mpi(void)
{
    static const size_t sizes[] = { 8, 64, 512, 4096, 32768 };
    static const double times[5][3] = {   /* rdouble, ring, mpi */
        { 10, 20, 9.0 },    /* 10% faster: MPI takes it */
        { 10, 20, 9.8 },    /* 2% faster: stays (hysteresis) */
        { 10, 20, 10.2 },   /* slower: back to libgcoll */
        { 10, 20, 9.7 },    /* 3% faster: not enough to take a size */
        { 20, 10, 9.0 },    /* 10% faster than ring: MPI again, to inf */
    };
    static gcoll_calib_sweep_t w;
    memset(&w, 0, sizeof w);
    w.coll = GCOLL_COLL_ALLREDUCE;
    w.nsizes = 5;
    w.algos[0] = gcoll_algo_find(GCOLL_COLL_ALLREDUCE, "rdouble");
    w.algos[1] = gcoll_algo_find(GCOLL_COLL_ALLREDUCE, "ring");
    w.nalgos = 2;
    gcoll_calib_add_mpi(&w);
    CHECK(w.nalgos == 3 && w.algos[2] == &gcoll_tune_mpi, "the MPI added as a candidate");
    for (int s = 0; s < 5; s++) {
        w.sizes[s] = sizes[s];
        for (int a = 0; a < 3; a++) w.t[s][a] = times[s][a] * 1e-6;
    }
    gcoll_calib_pick(&w);
    static const int want_best[5] = { 0, 0, 0, 0, 1 }, want_mpi[5] = { 1, 1, 0, 0, 1 };
    for (int s = 0; s < 5; s++) {
        CHECK(w.best[s] == want_best[s], "size %zu: libgcoll winner %d, want %d", sizes[s],
              w.best[s], want_best[s]);
        CHECK(w.mpi_best[s] == want_mpi[s], "size %zu: MPI wins %d, want %d", sizes[s],
              w.mpi_best[s], want_mpi[s]);
    }
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    gcoll_calib_write_rows(f, &w, 1, 1, 2);
    fclose(f);
    gcoll_tune_table_t t;
    gcoll_tune_table_init(&t);
    gcoll_status_t st = gcoll_tune_parse_from(&t, text, "calib", GCOLL_TUNE_FROM_CACHE);
    CHECK(st == GCOLL_SUCCESS, "written rows load: %s\n%s", gcoll_last_error(), text);
    CHECK(t.nrows == 4 && gcoll_tune_row_is_mpi(&t.rows[0]) && gcoll_tune_row_is_mpi(&t.rows[1]) &&
          !gcoll_tune_row_is_mpi(&t.rows[2]), "two mpi rows, then libgcoll's:\n%s", text);
    gcoll_tune_key_t k = { GCOLL_COLL_ALLREDUCE, 1, 2, 2, 0, 0 };
    size_t lo[4], hi[4];
    int n = 0;
    st = gcoll_tune_mpi_ranges(&t, &k, GCOLL_MEM_HOST, lo, hi, 4, &n);
    CHECK(st == GCOLL_SUCCESS && n == 2 && lo[0] == 0 && hi[0] > 64 && hi[0] <= 512 &&
          lo[1] > 4096 && lo[1] <= 32768 && hi[1] == GCOLL_TUNE_INF_SIZE,
          "ranges from the written rows (n %d):\n%s", n, text);
    CHECK(!strcmp(choose(&t, GCOLL_COLL_ALLREDUCE, 8, 1, 2), "rdouble") &&
          !strcmp(choose(&t, GCOLL_COLL_ALLREDUCE, 1u << 20, 1, 2), "ring"),
          "libgcoll's own calls keep libgcoll's winners:\n%s", text);
    free(text);
    f = open_memstream(&text, &len);
    gcoll_calib_write_medians(f, &w, "");
    fclose(f);
    CHECK(strstr(text, "*mpi=9.00") && strstr(text, " mpi=9.70"), "medians mark the MPI's wins:\n%s",
          text);
    free(text);
    gcoll_tune_table_fini(&t);
}

/* gcoll_calib_steady's plan from synthetic blocks (us): a steady sweep
 * times nothing again; a winner whose median block is 2x its fastest is
 * timed again with its close rival, not the far one, and no longer once its
 * blocks are full; so is a disturbed loser whose fastest block beats the
 * steady winner; shm dropped at 256 KiB after one slow block (10x its
 * 64 KiB time for 4x the bytes: another program had the CPUs) is timed
 * again there, once. */
static void set_blocks(gcoll_calib_sweep_t *w, int s, int a, const double *us, int n)
{
    for (int b = 0; b < n; b++) w->blk[s][a][b] = us[b] * 1e-6;
    w->nblk[s][a] = (unsigned char)n;
    w->t[s][a] = us[n / 2] * 1e-6;   /* the median of a sorted odd list */
    w->spread[s][a] = n > 1 ? us[n - 1] / us[0] : 0;
}

static void test_calib_again(void)
{
    static gcoll_calib_sweep_t w;
    memset(&w, 0, sizeof w);
    w.coll = GCOLL_COLL_ALLREDUCE;
    w.nsizes = 3;
    w.sizes[0] = 64u << 10, w.sizes[1] = 256u << 10, w.sizes[2] = 1u << 20;
    w.algos[0] = gcoll_algo_find(GCOLL_COLL_ALLREDUCE, "shm");
    w.algos[1] = gcoll_algo_find(GCOLL_COLL_ALLREDUCE, "rdouble");
    w.algos[2] = gcoll_algo_find(GCOLL_COLL_ALLREDUCE, "ring");
    w.nalgos = 3;
    static const double steady[3][3][3] = {   /* size, algorithm, sorted blocks */
        { { 9, 9.2, 9.5 }, { 20, 20.5, 21 }, { 24, 25, 26 } },
        { { 30, 31, 32 }, { 60, 61, 62 }, { 55, 56, 58 } },
        { { 95, 96, 99 }, { 200, 205, 210 }, { 190, 195, 199 } },
    };
    for (int s = 0; s < 3; s++)
        for (int a = 0; a < 3; a++) set_blocks(&w, s, a, steady[s][a], 3);
    gcoll_calib_pick(&w);
    unsigned char retried[3][GCOLL_CALIB_MAX_ALGOS] = { { 0 } };
    int use[GCOLL_CALIB_MAX_ALGOS], any = 0;
    for (int s = 0; s < 3; s++) any |= gcoll_calib_again(&w, s, 3, retried[s], use);
    CHECK(!any && w.best[0] == 0 && w.best[1] == 0 && w.best[2] == 0,
          "a steady sweep: nothing timed again (best %d %d %d)", w.best[0], w.best[1], w.best[2]);

    static const double disturbed[3] = { 15, 31, 32 }, rival[3] = { 40, 41, 42 };
    set_blocks(&w, 1, 0, disturbed, 3);   /* shm: median 2x its fastest */
    set_blocks(&w, 1, 1, rival, 3);       /* rdouble within 1.5x; ring (56) beyond it */
    gcoll_calib_pick(&w);
    CHECK(w.best[1] == 0, "shm wins the disturbed size (best %d)", w.best[1]);
    any = gcoll_calib_again(&w, 1, 3, retried[1], use);
    CHECK(any && use[0] && use[1] && !use[2], "disturbed winner: it and its close rival again "
          "(use %d %d %d)", use[0], use[1], use[2]);
    double full[GCOLL_CALIB_MAX_BLOCKS - 2] = { 15 };
    for (int b = 1; b < GCOLL_CALIB_MAX_BLOCKS - 2; b++) full[b] = 31;
    set_blocks(&w, 1, 0, full, GCOLL_CALIB_MAX_BLOCKS - 2);
    CHECK(!gcoll_calib_again(&w, 1, 3, retried[1], use), "still disturbed, but no more once its "
          "blocks are full");
    CHECK(gcoll_calib_again(&w, 1, 2, retried[1], use) && use[0],
          "while two more blocks fit: again");
    static const double hidden[5] = { 20, 21, 45, 46, 47 };   /* median 45: 2.1x its fastest */
    set_blocks(&w, 1, 0, hidden, 5);
    set_blocks(&w, 1, 1, rival, 3);
    gcoll_calib_pick(&w);
    CHECK(w.best[1] == 1, "steady rdouble (41) beats disturbed shm (45) (best %d)", w.best[1]);
    any = gcoll_calib_again(&w, 1, 3, retried[1], use);
    CHECK(any && use[0] && use[1] && !use[2], "shm's fastest block (20) beats the winner: shm and "
          "rdouble again (use %d %d %d)", use[0], use[1], use[2]);

    for (int s = 0; s < 3; s++)
        for (int a = 0; a < 3; a++) set_blocks(&w, s, a, steady[s][a], 3);
    static const double one_slow[1] = { 300 };
    set_blocks(&w, 1, 0, one_slow, 1);   /* shm pruned at 256 KiB after one slow block */
    gcoll_calib_pick(&w);
    CHECK(w.best[1] == 2, "ring wins 256 KiB without shm (best %d)", w.best[1]);
    any = gcoll_calib_again(&w, 1, 3, retried[1], use);
    CHECK(any && use[0] && use[2] && !use[1], "shm's implausible time again, with the winner "
          "(use %d %d %d)", use[0], use[1], use[2]);
    CHECK(!gcoll_calib_again(&w, 1, 3, retried[1], use), "and only once");
    CHECK(!gcoll_calib_again(&w, 2, 3, retried[2], use), "1 MiB: shm's 96 us after 300 at 256 KiB "
          "is not implausible");
}

static void test_oneline(void)
{
    gcoll_tune_table_t t;
    gcoll_tune_table_init(&t);
    gcoll_status_t st = gcoll_tune_parse(
        &t, "allreduce:host:*:*:0-16K:rdouble;allreduce:host:*:*:16K-inf:ring:chunk=64K;", "GCOLL_TUNE", 1);
    CHECK(st == GCOLL_SUCCESS, "%s", gcoll_last_error());
    CHECK(t.nrows == 2 && t.rows[1].line == 2 && t.rows[1].chunk == 65536, "one-line rows");
    CHECK(!strcmp(choose(&t, GCOLL_COLL_ALLREDUCE, 16384, 1, 2), "ring"), "one-line ranges");
    gcoll_tune_table_fini(&t);
}

static void test_sizes(void)
{
    static const struct { const char *s; size_t v; } good[] = {
        { "0", 0 }, { "64", 64 }, { "1K", 1024 }, { "1k", 1024 }, { "16K", 16384 },
        { "2M", 2u << 20 }, { "1G", 1u << 30 }, { "4KiB", 4096 }, { "4KB", 4096 },
    };
    static const char *const bad[] = { "", "K", "1T", "1.5K", "-1", "1K2", "99999999999999999999G" };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        size_t v = 1;
        CHECK(gcoll_tune_parse_size(good[i].s, &v) == 0 && v == good[i].v, "size '%s' -> %zu",
              good[i].s, v);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t v;
        CHECK(gcoll_tune_parse_size(bad[i], &v) != 0, "size '%s' accepted", bad[i]);
    }
    char buf[32];
    gcoll_tune_format_size(buf, sizeof buf, 16384);
    CHECK(!strcmp(buf, "16K"), "16384 prints as %s", buf);
    gcoll_tune_format_size(buf, sizeof buf, 16385);
    CHECK(!strcmp(buf, "16385"), "16385 prints as %s", buf);
    gcoll_tune_format_size(buf, sizeof buf, (size_t)3 << 30);
    CHECK(!strcmp(buf, "3G"), "3G prints as %s", buf);
}

/* The interleaved timings' round order (base/shuffle.h): every round a
 * permutation, the same for the same round (every rank draws alike), and
 * over the calibration's rounds each candidate follows more than one other
 * one: a fixed cycle (the old order) gives each one predecessor, and this
 * test fails on it. */
static void test_shuffle(void)
{
    enum { N = 10, ROUNDS = 5 };
    int order[N], again[N], preds[N][N + 1];
    memset(preds, 0, sizeof(preds));
    for (int n = 1; n <= N; n++)
        for (unsigned k = 0; k < 64; k++) {
            int seen[N] = { 0 }, perm = 1;
            gcoll_shuffle_order(order, n, k);
            for (int j = 0; j < n; j++) perm &= order[j] >= 0 && order[j] < n && !seen[order[j]]++;
            CHECK(perm, "round %u of %d items is not a permutation", k, n);
            gcoll_shuffle_order(again, n, k);
            CHECK(!memcmp(order, again, sizeof(int) * (size_t)n), "round %u of %d items drawn "
                  "twice differs", k, n);
        }
    for (unsigned k = 0; k < ROUNDS; k++) {
        gcoll_shuffle_order(order, N, k);
        for (int j = 0; j < N; j++) preds[order[j]][j ? order[j - 1] : N] = 1;
    }
    int fixed = 0;
    for (int a = 0; a < N; a++) {
        int distinct = 0;
        for (int b = 0; b <= N; b++) distinct += preds[a][b];
        fixed += distinct < 2;
    }
    CHECK(fixed == 0, "%d of %d items had the same predecessor in all %d rounds", fixed, N, ROUNDS);
}

int main(void)
{
    test_builtin_round_trip();
    test_builtin_equals_old_rules();
    test_rejects();
    test_matching();
    test_mpi_rows();
    test_calib_mpi();
    test_calib_again();
    test_oneline();
    test_sizes();
    test_shuffle();
    printf("test_tune: %d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
