/* SPDX-License-Identifier: BSD-3-Clause */
/* gcoll_simulate: predicted time of every algorithm of a collective on a
 * cluster this machine cannot host (e.g. 64 nodes x 8 ranks), from the exact
 * schedules of all ranks run through the simulator executor (libgcoll/sim).
 *
 * For each message size and each registered algorithm of the collective it
 * builds the schedules of all NODES*PPN ranks (node of rank r = r / PPN), runs
 * them with real data, and prints the simulator's alpha-beta prediction and
 * the bytes each rank sent to other nodes.  --verify also compares every
 * rank's result with a serial reference (integer-valued float32 sums are
 * exact), so a prediction is never of a schedule that computes nonsense.
 * Data type is float32, op SUM, root 0.  docs/SIMULATION.md explains the
 * model and shows its output.
 *
 * --compress (with -c allreduce) predicts gcoll_allreduce_compressed per
 * codec instead: its three levels (node reduce-scatter, the rail exchange
 * of each codec as the compressor plans it, node allgather), each run
 * through the simulator with the best registered algorithm, plus the
 * codecs' passes over memory at gamma (see compress_sim). */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "gcoll.h"
#include "algos/algo.h"
#include "base/log.h"
#include "compress/codec.h"
#include "core/select.h"
#include "core/tune_table.h"
#include "sim/sim.h"

#define MAX_ALGOS 32
#define GARBAGE   0xa5   /* recv buffers start as this: not an integer-valued float */

typedef struct {
    gcoll_coll_t     coll;
    int              nodes, ppn, nranks;
    size_t           min_bytes, max_bytes;
    int              factor;
    gcoll_sim_cost_t cost;
    const char      *csv_path;
    const char      *only;       /* comma list of algorithm names, NULL = all */
    int              verify, quiet;
    int              compress;    /* --compress: the compressed allreduce per codec */
    double           topk_ratio;  /* --topk-ratio (default 0.01) */
    size_t           onebit_block;/* --onebit-block (default 2048) */
} opts_t;

/* Outcome of one (size, algorithm) run. */
typedef struct {
    gcoll_status_t status;
    double         time;          /* s */
    uint64_t       inter_rank;    /* max over ranks of bytes sent to other nodes */
    uint64_t       inter_node;    /* max over nodes of the same, summed over its ranks */
    uint64_t       sent_rank;     /* max over ranks of all bytes sent */
    int            verified;      /* 1 ok, 0 wrong, -1 not checked */
} result_t;

/* Buffers of one message size, all ranks. */
typedef struct {
    size_t              count;        /* elements: args.count */
    size_t              src_bytes, dst_bytes;
    float             **send;         /* [nranks] inputs (NULL for bcast) */
    float             **recv;         /* [nranks] */
    gcoll_coll_args_t  *args;         /* [nranks] */
    float              *ref;          /* reference output (see make_ref) */
    uint64_t           *sent, *inter; /* [nranks] simulator counters */
} bufs_t;

/* ---------------------------------------------------------- options ---- */

static void usage(FILE *f)
{
    fprintf(f,
        "usage: gcoll_simulate -c COLL -n NODES -p RANKS_PER_NODE [-m MIN:MAX] [-f FACTOR]\n"
        "                      [-a ALGO,ALGO..] [--alpha-intra S] [--beta-intra S/B]\n"
        "                      [--alpha-inter S] [--beta-inter S/B] [--gamma S/B]\n"
        "                      [--nics N] [--csv FILE] [--verify] [-q]\n"
        "       gcoll_simulate -c allreduce --compress [--topk-ratio R] [--onebit-block B] ...\n"
        "  -c COLL     allreduce, bcast, reduce, allgather, reduce_scatter, alltoall, barrier\n"
        "  -n, -p      nodes and ranks per node (rank r is on node r / RANKS_PER_NODE)\n"
        "  -m MIN:MAX  message sizes in bytes, suffixes K M G (default 4:1M); for\n"
        "              allgather, reduce_scatter, alltoall: the per-rank block\n"
        "  -f FACTOR   size step (default 4)\n"
        "  -a ALGOS    only these algorithms (default: every registered one)\n"
        "  --alpha-*   latency in seconds, or with a unit: 2us\n"
        "  --beta-*, --gamma  seconds per byte, or a bandwidth: 25GB/s (--beta-inter:\n"
        "              of one NIC)\n"
        "  --nics N    NICs per node, shared by its ranks (default 1); 0: one per rank\n"
        "  --csv FILE  also write one row per (size, algorithm)\n"
        "  --verify    check every rank's result against a serial reference\n"
        "  -q          no progress on stderr\n"
        "  --compress  gcoll_allreduce_compressed per codec (exact, bf16, topk, onebit):\n"
        "              node reduce-scatter, the codec's rail exchange, node allgather,\n"
        "              and the codecs' passes over memory at gamma (-a: codec names;\n"
        "              2 nodes or more; zero data, so no --verify: test_compress_mpi\n"
        "              checks the results)\n"
        "Data: float32 sum, root 0.  Memory: about NODES*PPN*(send+recv+scratch) bytes\n"
        "at the largest size (64x8 at 1 MiB allreduce: about 2 GiB).\n");
}

/* "4M" -> 4194304; 0 on error. */
static size_t parse_size(const char *s)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s) return 0;
    switch (*end) {
    case 'k': case 'K': v <<= 10; end++; break;
    case 'm': case 'M': v <<= 20; end++; break;
    case 'g': case 'G': v <<= 30; end++; break;
    default: break;
    }
    if (*end == 'i') end++;
    if (*end == 'B') end++;
    return *end ? 0 : (size_t)v;
}

static int parse_range(const char *s, size_t *lo, size_t *hi)
{
    char buf[64];
    const char *colon = strchr(s, ':');
    if (!colon || (size_t)(colon - s) >= sizeof(buf)) return -1;
    memcpy(buf, s, (size_t)(colon - s));
    buf[colon - s] = '\0';
    *lo = parse_size(buf);
    *hi = parse_size(colon + 1);
    return *lo && *hi >= *lo ? 0 : -1;
}

/* Seconds, optionally "us"/"ns"/"ms"; or a bandwidth "GB/s"/"MB/s" turned
 * into seconds per byte.  Negative on error. */
static double parse_time(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || v < 0) return -1;
    if (!*end || strcmp(end, "s") == 0) return v;
    if (strcmp(end, "ms") == 0) return v * 1e-3;
    if (strcmp(end, "us") == 0) return v * 1e-6;
    if (strcmp(end, "ns") == 0) return v * 1e-9;
    if (v > 0 && strcmp(end, "GB/s") == 0) return 1.0 / (v * 1e9);
    if (v > 0 && strcmp(end, "MB/s") == 0) return 1.0 / (v * 1e6);
    return -1;
}

enum { OPT_AI = 256, OPT_BI, OPT_AE, OPT_BE, OPT_G, OPT_CSV, OPT_VERIFY, OPT_NICS, OPT_COMPRESS,
       OPT_RATIO, OPT_BLOCK };

static int set_cost(opts_t *o, int opt, const char *arg)
{
    double v = parse_time(arg);
    if (v < 0) {
        fprintf(stderr, "gcoll_simulate: bad time or bandwidth '%s'\n", arg);
        return -1;
    }
    switch (opt) {
    case OPT_AI: o->cost.alpha_intra = v; break;
    case OPT_BI: o->cost.beta_intra = v; break;
    case OPT_AE: o->cost.alpha_inter = v; break;
    case OPT_BE: o->cost.beta_inter = v; break;
    default:     o->cost.gamma = v; break;
    }
    return 0;
}

static int parse_opt(opts_t *o, int opt, const char *arg)
{
    switch (opt) {
    case 'c':
        o->coll = gcoll_coll_from_name(arg);
        if (o->coll != GCOLL_COLL_COUNT) return 0;
        fprintf(stderr, "gcoll_simulate: unknown collective '%s'\n", arg);
        return -1;
    case 'n': o->nodes = atoi(arg); return 0;
    case 'p': o->ppn = atoi(arg); return 0;
    case 'f': o->factor = atoi(arg); return 0;
    case 'a': o->only = arg; return 0;
    case 'q': o->quiet = 1; return 0;
    case 'm':
        if (parse_range(arg, &o->min_bytes, &o->max_bytes) == 0) return 0;
        fprintf(stderr, "gcoll_simulate: bad size range '%s' (MIN:MAX, e.g. 8:4M)\n", arg);
        return -1;
    case OPT_CSV: o->csv_path = arg; return 0;
    case OPT_VERIFY: o->verify = 1; return 0;
    case OPT_COMPRESS: o->compress = 1; return 0;
    case OPT_RATIO:
        o->topk_ratio = atof(arg);
        if (o->topk_ratio > 0 && o->topk_ratio <= 1) return 0;
        fprintf(stderr, "gcoll_simulate: bad TopK ratio '%s' (in (0, 1])\n", arg);
        return -1;
    case OPT_BLOCK:
        o->onebit_block = (size_t)strtoull(arg, NULL, 10);
        if (o->onebit_block > 0) return 0;
        fprintf(stderr, "gcoll_simulate: bad 1-bit block '%s'\n", arg);
        return -1;
    case OPT_NICS:
        o->cost.nics_per_node = atoi(arg);
        if (o->cost.nics_per_node >= 0 && strspn(arg, "0123456789") == strlen(arg)) return 0;
        fprintf(stderr, "gcoll_simulate: bad NIC count '%s'\n", arg);
        return -1;
    case 'h': usage(stdout); exit(0);
    default:
        if (opt >= OPT_AI && opt <= OPT_G) return set_cost(o, opt, arg);
        usage(stderr);
        return -1;
    }
}

static int parse_args(int argc, char **argv, opts_t *o)
{
    static const struct option longs[] = {
        { "alpha-intra", required_argument, NULL, OPT_AI },
        { "beta-intra",  required_argument, NULL, OPT_BI },
        { "alpha-inter", required_argument, NULL, OPT_AE },
        { "beta-inter",  required_argument, NULL, OPT_BE },
        { "gamma",       required_argument, NULL, OPT_G },
        { "csv",         required_argument, NULL, OPT_CSV },
        { "verify",      no_argument,       NULL, OPT_VERIFY },
        { "nics",        required_argument, NULL, OPT_NICS },
        { "compress",    no_argument,       NULL, OPT_COMPRESS },
        { "topk-ratio",  required_argument, NULL, OPT_RATIO },
        { "onebit-block", required_argument, NULL, OPT_BLOCK },
        { "help",        no_argument,       NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };
    int opt;
    while ((opt = getopt_long(argc, argv, "c:n:p:m:f:a:qh", longs, NULL)) != -1)
        if (parse_opt(o, opt, optarg) != 0) return -1;
    if (optind < argc || o->coll == GCOLL_COLL_COUNT || o->nodes < 1 || o->ppn < 1 ||
        o->factor < 2 || (long)o->nodes * o->ppn > 1 << 20 ||
        (o->compress && (o->coll != GCOLL_COLL_ALLREDUCE || o->nodes < 2 || o->verify))) {
        usage(stderr);
        return -1;
    }
    o->nranks = o->nodes * o->ppn;
    return 0;
}

/* ------------------------------------------------------ algorithms ---- */

static int selected(const opts_t *o, const char *name)
{
    if (!o->only) return 1;
    size_t len = strlen(name);
    for (const char *p = o->only; *p;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == len && strncmp(p, name, n) == 0) return 1;
        p += n + (end != NULL);
    }
    return 0;
}

/* The algorithms to simulate, in registry order; their number. */
static int list_algos(const opts_t *o, const gcoll_algo_t **out)
{
    int n = 0;
    for (const gcoll_algo_t *const *a = gcoll_algos; *a && n < MAX_ALGOS; a++)
        if ((*a)->coll == o->coll && selected(o, (*a)->name)) out[n++] = *a;
    return n;
}

/* ---------------------------------------------------------- buffers ---- */

/* Input element k of rank r: a small integer, so float32 sums of up to
 * 2^20 ranks are exact, and different for neighbouring ranks and elements. */
static float input(int r, size_t k)
{
    return (float)((int)(((uint64_t)r * 7 + (uint64_t)k * 3) % 13) - 6);
}

static int has_root(gcoll_coll_t c) { return c == GCOLL_COLL_BCAST || c == GCOLL_COLL_REDUCE; }

static void set_args(const opts_t *o, bufs_t *b, int r)
{
    gcoll_coll_args_t *a = &b->args[r];
    memset(a, 0, sizeof(*a));
    a->coll = o->coll;
    a->count = b->count;
    a->dt_size = sizeof(float);
    a->src = gcoll_bref(o->coll == GCOLL_COLL_BCAST ? GCOLL_BUF_RECV : GCOLL_BUF_SEND, 0);
    a->dst = gcoll_bref(GCOLL_BUF_RECV, 0);
}

/* The reference output, the same for every rank where it can be: the sum
 * over ranks for reducing collectives (count 7r mod 13 residues once, so it
 * costs O(13 n), not O(P n)), the concatenated inputs for allgather, the
 * root's input for bcast.  alltoall is checked element by element. */
static int make_ref(const opts_t *o, bufs_t *b)
{
    size_t n = b->src_bytes / sizeof(float), cnt[13] = { 0 };
    gcoll_coll_t c = o->coll;
    if (c == GCOLL_COLL_ALLTOALL || c == GCOLL_COLL_BARRIER) return 0;
    if (c == GCOLL_COLL_ALLGATHER) n = b->dst_bytes / sizeof(float);
    b->ref = malloc(n * sizeof(float) + 1);
    if (!b->ref) return -1;
    for (int r = 0; r < o->nranks; r++) cnt[((uint64_t)r * 7) % 13]++;
    for (size_t k = 0; k < n; k++) {
        if (c == GCOLL_COLL_ALLGATHER) {
            b->ref[k] = input((int)(k / b->count), k % b->count);
            continue;
        }
        if (c == GCOLL_COLL_BCAST) {
            b->ref[k] = input(0, k);
            continue;
        }
        double sum = 0;
        for (int j = 0; j < 13; j++)
            sum += (double)cnt[j] * (double)((int)((j + (uint64_t)k * 3) % 13) - 6);
        b->ref[k] = (float)sum;
    }
    return 0;
}

static void bufs_free(const opts_t *o, bufs_t *b)
{
    for (int r = 0; r < o->nranks; r++) {
        if (b->send) free(b->send[r]);
        if (b->recv) free(b->recv[r]);
    }
    free(b->send);
    free(b->recv);
    free(b->args);
    free(b->ref);
    free(b->sent);
    free(b->inter);
    memset(b, 0, sizeof(*b));
}

static int bufs_alloc_rank(const opts_t *o, bufs_t *b, int r)
{
    b->recv[r] = malloc(b->dst_bytes + 1);
    if (!b->recv[r]) return -1;
    set_args(o, b, r);
    if (b->args[r].src.buf != GCOLL_BUF_SEND || !b->src_bytes) return 0;
    b->send[r] = malloc(b->src_bytes);
    if (!b->send[r]) return -1;
    for (size_t k = 0; k < b->src_bytes / sizeof(float); k++) b->send[r][k] = input(r, k);
    return 0;
}

/* Buffers and inputs of all ranks for `bytes` (count = bytes / 4, at least 1). */
static int bufs_init(const opts_t *o, bufs_t *b, size_t bytes)
{
    int P = o->nranks;
    memset(b, 0, sizeof(*b));
    b->count = bytes >= sizeof(float) ? bytes / sizeof(float) : 1;
    if (o->coll == GCOLL_COLL_BARRIER) b->count = 0;
    gcoll_coll_args_t probe = { .coll = o->coll, .count = b->count, .dt_size = sizeof(float) };
    gcoll_coll_buf_bytes(&probe, P, &b->src_bytes, &b->dst_bytes);
    b->send  = calloc((size_t)P, sizeof(*b->send));
    b->recv  = calloc((size_t)P, sizeof(*b->recv));
    b->args  = calloc((size_t)P, sizeof(*b->args));
    b->sent  = calloc((size_t)P, sizeof(*b->sent));
    b->inter = calloc((size_t)P, sizeof(*b->inter));
    if (!b->send || !b->recv || !b->args || !b->sent || !b->inter) return -1;
    for (int r = 0; r < P; r++)
        if (bufs_alloc_rank(o, b, r) != 0) return -1;
    return o->verify ? make_ref(o, b) : 0;
}

/* Before each algorithm: garbage in every receive buffer, the root's input
 * in its buffer for bcast. */
static void bufs_reset(const opts_t *o, bufs_t *b)
{
    for (int r = 0; r < o->nranks; r++) memset(b->recv[r], GARBAGE, b->dst_bytes);
    if (o->coll == GCOLL_COLL_BCAST)
        for (size_t k = 0; k < b->count; k++) b->recv[0][k] = input(0, k);
}

/* ----------------------------------------------------- verification ---- */

/* Index of the first wrong element of rank r's output, or SIZE_MAX. */
static size_t first_wrong(const opts_t *o, const bufs_t *b, int r)
{
    const float *got = b->recv[r], *want = b->ref;
    size_t n = b->count;
    switch (o->coll) {
    case GCOLL_COLL_REDUCE:
        if (r != 0) return SIZE_MAX;
        break;
    case GCOLL_COLL_REDUCE_SCATTER:
        want += (size_t)r * b->count;
        break;
    case GCOLL_COLL_ALLGATHER:
        n = b->dst_bytes / sizeof(float);
        break;
    case GCOLL_COLL_ALLTOALL:   /* block j came from rank j's block r */
        for (size_t k = 0; k < (size_t)o->nranks * b->count; k++)
            if (got[k] != input((int)(k / b->count), (size_t)r * b->count + k % b->count))
                return k;
        return SIZE_MAX;
    case GCOLL_COLL_BARRIER:
        return SIZE_MAX;
    default:
        break;
    }
    if (memcmp(got, want, n * sizeof(float)) == 0) return SIZE_MAX;
    for (size_t k = 0; k < n; k++)
        if (memcmp(&got[k], &want[k], sizeof(float)) != 0) return k;
    return SIZE_MAX;
}

/* 1 if every rank holds the right result; the first wrong one on stderr. */
static int verify(const opts_t *o, const bufs_t *b, const char *algo, size_t bytes)
{
    for (int r = 0; r < o->nranks; r++) {
        size_t k = first_wrong(o, b, r);
        if (k == SIZE_MAX) continue;
        fprintf(stderr, "FAIL %s/%s %dx%d %zu B: rank %d element %zu is %.9g\n",
                gcoll_coll_name(o->coll), algo, o->nodes, o->ppn, bytes, r, k,
                (double)b->recv[r][k]);
        return 0;
    }
    return 1;
}

/* --------------------------------------------------------- running ---- */

static void summarise(const opts_t *o, const bufs_t *b, result_t *res)
{
    for (int node = 0; node < o->nodes; node++) {
        uint64_t sum = 0;
        for (int l = 0; l < o->ppn; l++) {
            int r = node * o->ppn + l;
            sum += b->inter[r];
            if (b->inter[r] > res->inter_rank) res->inter_rank = b->inter[r];
            if (b->sent[r] > res->sent_rank) res->sent_rank = b->sent[r];
        }
        if (sum > res->inter_node) res->inter_node = sum;
    }
}

static result_t run_one(const opts_t *o, bufs_t *b, const int *node_of,
                        const gcoll_algo_t *algo, size_t bytes)
{
    result_t res = { .verified = -1 };
    gcoll_sim_t sim = { .nranks = o->nranks, .node_of = node_of, .cost = &o->cost,
                        .bytes_sent = b->sent, .bytes_inter = b->inter };
    bufs_reset(o, b);
    res.status = gcoll_sim_run_algo(&sim, algo, b->args, GCOLL_FLOAT32, GCOLL_SUM,
                                    (const void *const *)b->send, (void *const *)b->recv);
    if (res.status != GCOLL_SUCCESS) {
        if (res.status != GCOLL_ERR_NOT_SUPPORTED)
            fprintf(stderr, "ERROR %s/%s %dx%d %zu B: %s: %s\n", gcoll_coll_name(o->coll),
                    algo->name, o->nodes, o->ppn, bytes, gcoll_strerror(res.status),
                    gcoll_last_error());
        return res;
    }
    res.time = sim.time;
    summarise(o, b, &res);
    if (o->verify) res.verified = verify(o, b, algo->name, bytes);
    return res;
}

/* ---------------------------------------------------------- output ---- */

/* Width of a table column: the longest algorithm name, at least 12. */
static int col_width = 12;

static const char *fmt_bytes(char *buf, size_t len, double v)
{
    static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    snprintf(buf, len, v == (double)(uint64_t)v ? "%.0f %s" : "%.1f %s", v, units[u]);
    return buf;
}

static void print_header(const gcoll_algo_t **algos, int nalgos, const char *what)
{
    printf("\n# %s\n%10s", what, "size");
    for (int i = 0; i < nalgos; i++) printf(" %*s", col_width, algos[i]->name);
    printf("%s\n", strncmp(what, "predicted", 9) == 0 ? "  best" : "");
}

static void print_intro(const opts_t *o)
{
    const gcoll_sim_cost_t *c = &o->cost;
    printf("# gcoll_simulate: %s, %d nodes x %d ranks = %d ranks, float32 sum%s\n",
           gcoll_coll_name(o->coll), o->nodes, o->ppn, o->nranks,
           has_root(o->coll) ? ", root 0" : "");
    printf("# cost model: intra alpha %.3g us beta %.3g GB/s; inter alpha %.3g us beta %.3g GB/s;"
           " gamma %.3g GB/s\n", c->alpha_intra * 1e6, 1e-9 / c->beta_intra,
           c->alpha_inter * 1e6, 1e-9 / c->beta_inter, 1e-9 / c->gamma);
    if (c->nics_per_node > 0)
        printf("# %d NIC(s) per node, shared by its ranks\n", c->nics_per_node);
    else printf("# one NIC per rank\n");
}

/* Row of predicted times (us) and the best algorithm. */
static void print_time_row(const char *size, const gcoll_algo_t **algos, const result_t *res,
                           int nalgos)
{
    int best = -1;
    printf("%10s", size);
    for (int i = 0; i < nalgos; i++) {
        if (res[i].status != GCOLL_SUCCESS) {
            printf(" %*s", col_width, res[i].status == GCOLL_ERR_NOT_SUPPORTED ? "-" : "ERR");
            continue;
        }
        printf(" %*.2f", col_width, res[i].time * 1e6);
        if (best < 0 || res[i].time < res[best].time) best = i;
    }
    printf("  %s\n", best < 0 ? "-" : algos[best]->name);
}

static void print_inter_row(const char *size, const result_t *res, int nalgos)
{
    char buf[32];
    printf("%10s", size);
    for (int i = 0; i < nalgos; i++)
        printf(" %*s", col_width, res[i].status != GCOLL_SUCCESS ? "-" :
               fmt_bytes(buf, sizeof(buf), (double)res[i].inter_rank));
    printf("\n");
}

static void csv_rows(FILE *f, const opts_t *o, size_t bytes, const gcoll_algo_t **algos,
                     const result_t *res, int nalgos)
{
    for (int i = 0; f && i < nalgos; i++) {
        const result_t *x = &res[i];
        const char *st = x->status == GCOLL_SUCCESS ? "ok" :
                         x->status == GCOLL_ERR_NOT_SUPPORTED ? "declined" : "error";
        fprintf(f, "%s,%d,%d,%zu,%s,%s,%.6f,%llu,%llu,%llu,%s\n", gcoll_coll_name(o->coll),
                o->nodes, o->ppn, bytes, algos[i]->name, st, x->time * 1e6,
                (unsigned long long)x->inter_rank, (unsigned long long)x->inter_node,
                (unsigned long long)x->sent_rank,
                x->verified < 0 ? "-" : x->verified ? "yes" : "no");
    }
}

/* ------------------------------------------------------------ main ---- */

typedef struct {
    int       nsizes;
    size_t   *sizes;
    result_t *res;      /* [nsizes][nalgos] */
} table_t;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Run every algorithm at one size; 0 unless a run failed or computed a
 * wrong result. */
static int run_size(const opts_t *o, const int *node_of, const gcoll_algo_t **algos,
                    int nalgos, size_t bytes, result_t *res)
{
    bufs_t b;
    int bad = 0;
    if (bufs_init(o, &b, bytes) != 0) {
        fprintf(stderr, "gcoll_simulate: no memory for %d ranks at %zu B\n", o->nranks, bytes);
        bufs_free(o, &b);
        return -1;
    }
    for (int i = 0; i < nalgos; i++) {
        double t0 = now();
        res[i] = run_one(o, &b, node_of, algos[i], bytes);
        bad |= res[i].verified == 0 ||
               (res[i].status != GCOLL_SUCCESS && res[i].status != GCOLL_ERR_NOT_SUPPORTED);
        if (!o->quiet)
            fprintf(stderr, "  %zu B %-14s %.2f s\n", bytes, algos[i]->name, now() - t0);
    }
    bufs_free(o, &b);
    return bad ? -1 : 0;
}

static void print_tables(const opts_t *o, const gcoll_algo_t **algos, int nalgos,
                         const table_t *t)
{
    char size[32];
    print_header(algos, nalgos, "predicted time (us); - = the algorithm declines this shape");
    for (int s = 0; s < t->nsizes; s++)
        print_time_row(fmt_bytes(size, sizeof(size), (double)t->sizes[s]), algos,
                       t->res + (size_t)s * nalgos, nalgos);
    print_header(algos, nalgos, "bytes sent to other nodes per rank (the busiest rank)");
    for (int s = 0; s < t->nsizes; s++)
        print_inter_row(fmt_bytes(size, sizeof(size), (double)t->sizes[s]),
                        t->res + (size_t)s * nalgos, nalgos);
}

static int make_sizes(const opts_t *o, table_t *t)
{
    t->nsizes = 0;
    for (size_t b = o->min_bytes; b <= o->max_bytes; b *= (size_t)o->factor) t->nsizes++;
    t->sizes = malloc((size_t)t->nsizes * sizeof(*t->sizes));
    if (!t->sizes) return -1;
    size_t b = o->min_bytes;
    for (int s = 0; s < t->nsizes; s++, b *= (size_t)o->factor) t->sizes[s] = b;
    return 0;
}

static int simulate(const opts_t *o, const gcoll_algo_t **algos, int nalgos, FILE *csv)
{
    table_t t = { 0 };
    int *node_of = malloc((size_t)o->nranks * sizeof(int)), bad = 0, verified = 0;
    if (!node_of || make_sizes(o, &t) != 0 ||
        !(t.res = calloc((size_t)t.nsizes * (size_t)nalgos, sizeof(*t.res)))) {
        fprintf(stderr, "gcoll_simulate: no memory\n");
        free(node_of);
        free(t.sizes);
        return 1;
    }
    for (int r = 0; r < o->nranks; r++) node_of[r] = r / o->ppn;
    for (int s = 0; s < t.nsizes; s++) {
        result_t *row = t.res + (size_t)s * nalgos;
        bad |= run_size(o, node_of, algos, nalgos, t.sizes[s], row) != 0;
        csv_rows(csv, o, t.sizes[s], algos, row, nalgos);
        for (int i = 0; i < nalgos; i++) verified += row[i].verified == 1;
    }
    print_tables(o, algos, nalgos, &t);
    if (o->verify)
        printf("\n# verified: %d runs correct%s\n", verified, bad ? ", FAILURES above" : "");
    free(node_of);
    free(t.sizes);
    free(t.res);
    return bad;
}


/* ------------------------------------------------ compressed allreduce ---- */

/* The algorithm libgcoll's selection table picks for coll on a group of
 * n ranks, one node (node_of NULL: the node levels, shared memory) or one
 * rank per node (the rails), count elements of dt_size bytes, run through
 * the simulator with zero data (only time and bytes matter here; the data
 * path is checked by test_compress_mpi); a row whose algorithm declines
 * passes to the next, as gcoll_select_fallback does, and without a table
 * row the least predicted time wins.  *inter: the busiest rank's bytes to
 * other nodes. */
static gcoll_status_t run_phase(gcoll_coll_t coll, int n, const int *node_of,
                                const gcoll_sim_cost_t *cost, size_t count, size_t dt_size,
                                double *time, uint64_t *inter, const char **name)
{
    gcoll_coll_args_t probe = { .coll = coll, .count = count, .dt_size = dt_size };
    size_t sb = 0, db = 0;
    gcoll_coll_buf_bytes(&probe, n, &sb, &db);
    void **send = calloc((size_t)n, sizeof(void *)), **recv = calloc((size_t)n, sizeof(void *));
    gcoll_coll_args_t *args = calloc((size_t)n, sizeof(*args));
    uint64_t *sent = calloc((size_t)n, sizeof(uint64_t)), *bi = calloc((size_t)n, sizeof(uint64_t));
    gcoll_status_t st = GCOLL_ERR_NO_MEMORY;
    *time = -1;
    if (!send || !recv || !args || !sent || !bi) goto out;
    for (int r = 0; r < n; r++) {
        send[r] = calloc(sb + 8, 1);
        recv[r] = calloc(db + 8, 1);
        if (!send[r] || !recv[r]) goto out;
        args[r] = probe;
        args[r].src = gcoll_bref(GCOLL_BUF_SEND, 0);
        args[r].dst = gcoll_bref(GCOLL_BUF_RECV, 0);
    }
    const gcoll_tune_table_t *table = NULL;
    gcoll_tune_key_t key = { .coll = coll, .nodes = node_of ? n : 1,
                             .ppn = node_of ? 1 : n, .ranks = n,
                             .bytes = count * dt_size };
    key.conds = GCOLL_TUNE_IF_UNIFORM | GCOLL_TUNE_IF_REGULAR |
                ((n & (n - 1)) == 0 ? GCOLL_TUNE_IF_POW2 : 0u) |
                (node_of ? 0u : GCOLL_TUNE_IF_SHM);
    /* the built-in table: the simulator does not read GCOLL_TUNE* */
    static const gcoll_config_t builtin_only;
    if (gcoll_select_table(&builtin_only, NULL, NULL, &table) != GCOLL_SUCCESS) table = NULL;
    size_t from = 0;
    st = GCOLL_ERR_NOT_SUPPORTED;
    for (const gcoll_algo_t *const *a = gcoll_algos;;) {
        const gcoll_algo_t *algo = NULL;
        const gcoll_tune_row_t *row = table ? gcoll_tune_match(table, from, &key) : NULL;
        if (row) {   /* the table's next choice */
            from = (size_t)(row - table->rows) + 1;
            algo = row->algo;
            for (int r = 0; r < n; r++) args[r].chunk_bytes = row->chunk;
        } else {   /* no row ran: every algorithm, the fastest */
            table = NULL;
            for (; *a && (*a)->coll != coll; a++) {}
            if (!*a) break;
            algo = *a++;
            for (int r = 0; r < n; r++) args[r].chunk_bytes = 0;
        }
        gcoll_sim_t sim = { .nranks = n, .node_of = node_of, .cost = cost, .bytes_sent = sent,
                            .bytes_inter = bi };
        memset(bi, 0, (size_t)n * sizeof(uint64_t));
        gcoll_status_t s = gcoll_sim_run_algo(&sim, algo, args,
                                              dt_size == 1 ? GCOLL_UINT8 : GCOLL_FLOAT32,
                                              GCOLL_SUM, (const void *const *)send,
                                              (void *const *)recv);
        if (s != GCOLL_SUCCESS) continue;
        if (*time < 0 || sim.time < *time) {
            *time = sim.time;
            *name = algo->name;
            *inter = 0;
            for (int r = 0; r < n; r++)
                if (bi[r] > *inter) *inter = bi[r];
        }
        st = GCOLL_SUCCESS;
        if (table) break;   /* the table's choice ran */
    }
out:
    for (int r = 0; send && recv && r < n; r++) {
        free(send[r]);
        free(recv[r]);
    }
    free(send), free(recv), free(args), free(sent), free(bi);
    return st;
}

enum { CODECS = 4 };   /* exact, bf16, topk, onebit */

typedef struct {
    double   time, codec_time;   /* s: all levels; the codecs' part of it */
    uint64_t inter;              /* busiest rank's inter-node bytes */
    int      two_phase;          /* -1: exact */
    gcoll_status_t status;
} cresult_t;

/* Passes over float32 memory each codec makes (modelled at gamma per byte,
 * so 4 gamma per element and pass): the residual add, encode (bf16 1, 1-bit
 * 3: scale, signs, residual; TopK 2: threshold, select), and decoding
 * (dense codecs: a pass over the decoded elements; TopK: 2 per kept
 * element, index and value). */
static double codec_passes(gcoll_compress_t kind, const gcoll_compress_params_t *p, size_t s,
                           size_t N, size_t cs)
{
    double enc = kind == GCOLL_COMPRESS_BF16 ? 1 : kind == GCOLL_COMPRESS_ONEBIT ? 3 : 2;
    double n = (double)s, c = (double)cs, K = (double)N;
    if (kind == GCOLL_COMPRESS_TOPK) {
        double kc = (double)gcoll_codec_topk_k(p, cs), ks = (double)gcoll_codec_topk_k(p, s);
        return cs ? n + enc * n + 2 * K * kc + enc * c + 2 * K * kc + n   /* two-phase */
                  : n + enc * n + 2 * K * ks + n;                           /* gather */
    }
    /* residual, encode, owner's decode of N chunks, owner encode, decode */
    return cs ? n + enc * n + K * c + enc * c + n : n + enc * n + K * n;
}

/* One size: the three levels per codec.  Node levels once (all nodes run
 * them alike, at once); the rail of each local rank simulated as one group
 * of N ranks on N nodes, its ranks' NIC shared by the rails that use it
 * (beta_inter times the rails per NIC: every rail runs the same exchange
 * at the same time). */
static int compress_size(const opts_t *o, size_t bytes, cresult_t *res, const char **names)
{
    size_t count = bytes >= 4 ? bytes / 4 : 1, L = (size_t)o->ppn, N = (size_t)o->nodes;
    size_t s = (count + L - 1) / L;
    gcoll_sim_cost_t rail_cost = o->cost;
    int per_nic = o->cost.nics_per_node > 0
                      ? (o->ppn + o->cost.nics_per_node - 1) / o->cost.nics_per_node : 1;
    rail_cost.beta_inter *= per_nic;
    int *ident = malloc(N * sizeof(int));
    if (!ident) return -1;
    for (size_t r = 0; r < N; r++) ident[r] = (int)r;
    double t_rs = 0, t_ag = 0, t;
    uint64_t in, junk;
    const char *nm;
    if (L > 1 && (run_phase(GCOLL_COLL_REDUCE_SCATTER, o->ppn, NULL, &o->cost, s, 4, &t_rs,
                             &junk, &nm) != GCOLL_SUCCESS ||
                  run_phase(GCOLL_COLL_ALLGATHER, o->ppn, NULL, &o->cost, s, 4, &t_ag, &junk,
                             &nm) != GCOLL_SUCCESS)) {
        free(ident);
        return -1;
    }
    static const gcoll_compress_t kinds[CODECS] = { GCOLL_COMPRESS_NONE, GCOLL_COMPRESS_BF16,
                                                    GCOLL_COMPRESS_TOPK, GCOLL_COMPRESS_ONEBIT };
    int bad = 0;
    for (int k = 0; k < CODECS; k++) {
        cresult_t *r = &res[k];
        memset(r, 0, sizeof(*r));
        r->two_phase = -1;
        if (!selected(o, names[k])) {
            r->status = GCOLL_ERR_NOT_SUPPORTED;
            continue;
        }
        double rail = 0;
        r->status = GCOLL_SUCCESS;
        if (kinds[k] == GCOLL_COMPRESS_NONE) {
            r->status = run_phase(GCOLL_COLL_ALLREDUCE, (int)N, ident, &rail_cost, s, 4, &rail,
                                   &r->inter, &nm);
        } else {
            gcoll_compress_params_t in_p = { .kind = kinds[k], .topk_ratio = o->topk_ratio,
                                             .onebit_block = o->onebit_block }, p;
            size_t stride;
            gcoll_codec_params(&in_p, &p);
            size_t cs = gcoll_codec_plan(&p, s, N, &stride);
            r->two_phase = cs != 0;
            if (cs) {
                r->status = run_phase(GCOLL_COLL_ALLTOALL, (int)N, ident, &rail_cost, stride, 1,
                                       &t, &in, &nm);
                rail += t;
                r->inter = in;
            }
            if (r->status == GCOLL_SUCCESS)
                r->status = run_phase(GCOLL_COLL_ALLGATHER, (int)N, ident, &rail_cost, stride,
                                       1, &t, &in, &nm);
            rail += t;
            r->inter += in;
            r->codec_time = 4.0 * o->cost.gamma * codec_passes(kinds[k], &p, s, N, cs);
        }
        r->time = t_rs + rail + r->codec_time + t_ag;
        bad |= r->status != GCOLL_SUCCESS;
    }
    free(ident);
    return bad ? -1 : 0;
}

static int simulate_compressed(const opts_t *o, FILE *csv)
{
    char ratio[32], block[32], size[32], buf[32];
    snprintf(ratio, sizeof ratio, "topk(%g)", o->topk_ratio);
    snprintf(block, sizeof block, "onebit(%zu)", o->onebit_block);
    const char *names[CODECS] = { "exact", "bf16", "topk", "onebit" },
               *heads[CODECS] = { "exact", "bf16", ratio, block };
    table_t t = { 0 };
    if (make_sizes(o, &t) != 0) return 1;
    cresult_t *res = calloc((size_t)t.nsizes * CODECS, sizeof(*res));
    if (!res) return 1;
    int bad = 0;
    for (int z = 0; z < t.nsizes; z++) {
        double t0 = now();
        cresult_t *row = res + (size_t)z * CODECS;
        if (compress_size(o, t.sizes[z], row, names) != 0) {
            fprintf(stderr, "gcoll_simulate: a level of the compressed allreduce failed at "
                            "%zu B: %s\n", t.sizes[z], gcoll_last_error());
            bad = 1;
        }
        if (!o->quiet) fprintf(stderr, "  %zu B compressed %.2f s\n", t.sizes[z], now() - t0);
        /* CSV as the algorithms' rows: the codec in the algo column; per
         * node, the node's ppn rails alike; sent_bytes_rank counts the rail
         * (inter-node) bytes only */
        for (int k = 0; csv && k < CODECS; k++)
            fprintf(csv, "allreduce_compressed,%d,%d,%zu,%s,%s,%.6f,%llu,%llu,%llu,-\n",
                    o->nodes, o->ppn, t.sizes[z], heads[k],
                    row[k].status == GCOLL_SUCCESS ? "ok" :
                    row[k].status == GCOLL_ERR_NOT_SUPPORTED ? "declined" : "error",
                    row[k].time * 1e6, (unsigned long long)row[k].inter,
                    (unsigned long long)row[k].inter * (unsigned long long)o->ppn,
                    (unsigned long long)row[k].inter);
    }
    printf("# gcoll_allreduce_compressed, three levels; rails of %d ranks, %d per node%s\n",
           o->nodes, o->ppn, o->cost.nics_per_node > 0 ? " (sharing the node's NICs)" : "");
    printf("\n# predicted time (us); codecs' share in brackets\n%10s", "size");
    for (int k = 0; k < CODECS; k++) printf(" %22s", heads[k]);
    printf("\n");
    for (int z = 0; z < t.nsizes; z++) {
        printf("%10s", fmt_bytes(size, sizeof size, (double)t.sizes[z]));
        for (int k = 0; k < CODECS; k++) {
            const cresult_t *r = &res[(size_t)z * CODECS + k];
            if (r->status != GCOLL_SUCCESS) printf(" %22s", "-");
            else if (k == 0) printf(" %22.2f", r->time * 1e6);
            else {
                char cell[48];
                snprintf(cell, sizeof cell, "%.2f (%.2f)", r->time * 1e6, r->codec_time * 1e6);
                printf(" %22s", cell);
            }
        }
        printf("\n");
    }
    printf("\n# bytes sent to other nodes per rank (the busiest rank); g = gather, "
           "2 = two-phase; x = fewer than exact\n%10s", "size");
    for (int k = 0; k < CODECS; k++) printf(" %22s", heads[k]);
    printf("\n");
    for (int z = 0; z < t.nsizes; z++) {
        const cresult_t *row = res + (size_t)z * CODECS;
        printf("%10s", fmt_bytes(size, sizeof size, (double)t.sizes[z]));
        for (int k = 0; k < CODECS; k++) {
            char cell[64];
            if (row[k].status != GCOLL_SUCCESS) snprintf(cell, sizeof cell, "-");
            else if (k == 0) snprintf(cell, sizeof cell, "%s", fmt_bytes(buf, sizeof buf,
                                                                       (double)row[k].inter));
            else snprintf(cell, sizeof cell, "%s %s %.1fx", fmt_bytes(buf, sizeof buf,
                          (double)row[k].inter), row[k].two_phase ? "2" : "g",
                          row[k].inter && row[0].status == GCOLL_SUCCESS
                              ? (double)row[0].inter / (double)row[k].inter : 0.0);
            printf(" %22s", cell);
        }
        printf("\n");
    }
    free(res);
    free(t.sizes);
    return bad;
}

int main(int argc, char **argv)
{
    opts_t o = { .coll = GCOLL_COLL_COUNT, .min_bytes = 4, .max_bytes = 1 << 20, .factor = 4,
                 .cost = gcoll_sim_cost_default, .topk_ratio = 0.01, .onebit_block = 2048 };
    const gcoll_algo_t *algos[MAX_ALGOS];
    if (parse_args(argc, argv, &o) != 0) return 2;
    /* Declines are expected here (shm on several nodes) and shown as "-";
     * real failures are reported by run_one, so the library stays quiet. */
    gcoll_log_level = -1;
    if (o.compress) {
        FILE *cf = NULL;
        if (o.csv_path && !(cf = fopen(o.csv_path, "w"))) {
            fprintf(stderr, "gcoll_simulate: cannot write %s: %s\n", o.csv_path, strerror(errno));
            return 2;
        }
        if (cf)
            fprintf(cf, "coll,nodes,ppn,bytes,algo,status,time_us,inter_bytes_rank,"
                        "inter_bytes_node,sent_bytes_rank,verified\n");
        print_intro(&o);
        int bad = simulate_compressed(&o, cf);
        if (cf && fclose(cf) != 0) bad = 1;
        return bad ? 1 : 0;
    }
    int nalgos = list_algos(&o, algos);
    for (int i = 0; i < nalgos; i++)
        if ((int)strlen(algos[i]->name) > col_width) col_width = (int)strlen(algos[i]->name);
    if (nalgos == 0) {
        fprintf(stderr, "gcoll_simulate: no %s algorithm matches\n", gcoll_coll_name(o.coll));
        return 2;
    }
    FILE *csv = NULL;
    if (o.csv_path) {
        csv = fopen(o.csv_path, "w");
        if (!csv) {
            fprintf(stderr, "gcoll_simulate: cannot write %s: %s\n", o.csv_path, strerror(errno));
            return 2;
        }
        fprintf(csv, "coll,nodes,ppn,bytes,algo,status,time_us,inter_bytes_rank,"
                     "inter_bytes_node,sent_bytes_rank,verified\n");
    }
    print_intro(&o);
    int bad = simulate(&o, algos, nalgos, csv);
    if (csv && fclose(csv) != 0) bad = 1;
    return bad ? 1 : 0;
}
