/* SPDX-License-Identifier: BSD-3-Clause */
/* gcoll_tune: measure every applicable algorithm of each collective over a
 * range of message sizes on the allocation it runs on, and write a selection
 * table (docs/TUNING.md) that GCOLL_TUNE_FILE accepts.
 *
 *   mpirun -n N gcoll_tune -o FILE [-m MIN:MAX] [-c coll,...] [-s 2|4] [--nodes N]
 *
 * How: one communicator; each algorithm is forced in turn through the
 * selection layer (gcoll_select_force, what GCOLL_ALGO does), after
 * gcoll_select_try has built its schedule once to see whether it applies
 * here (an algorithm that declines, such as shm across nodes, is skipped).
 * Timing follows the benchmarks (bench/bench_common.c): blocks of calls
 * between an MPI_Barrier and MPI_Wtime, the algorithms' blocks interleaved so
 * that a machine changing speed affects all alike, the slowest rank's time
 * per block, the median over blocks.  Per size the fastest algorithm wins
 * (the previous size's winner keeps its place when within 3%, so noise does
 * not split a range); crossovers between two measured sizes are placed where
 * the two algorithms' times cross on a log-log line, rounded to a power of
 * two.  Rows are keyed by the measured node count and ranks per node.
 *
 * --nodes N beyond the nodes present: rows for more nodes come from the
 * simulator (libgcoll/sim), whose alpha/beta/gamma are measured in this run
 * (ping-pong between two ranks, a local sum loop); the file says so. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "gcoll.h"
#include "core/comm.h"
#include "base/config.h"
#include "base/log.h"
#include "core/memtype.h"
#include "core/select.h"
#include "base/status.h"
#include "core/tune_table.h"
#include "sim/sim.h"

#define MAX_SIZES  48
#define MAX_ALGOS  8
#define NBLOCKS    5
#define BLOCK_S    50e-3           /* target seconds per timed block (at most 2000
                                    * calls): many 4 ms scheduler ticks, so that
                                    * ranks sharing CPUs are timed over a
                                    * representative mix of who runs when; 2 ms
                                    * blocks gave 4 ms-quantised medians there */
#define PROBE_CALLS 4              /* calls timed to size the blocks */
#define SIM_MEM    (256u << 20)    /* bytes the simulator may allocate per run */
#define KEEP_SLACK 1.03

typedef struct {
    const char *out;
    size_t      min, max;
    int         step;              /* size factor between measurements */
    unsigned    colls;             /* bit per gcoll_coll_t */
    int         nodes;             /* --nodes: rows up to this many nodes */
    char        cmd[1024];
} opts_t;

typedef struct {
    gcoll_coll_t        coll;
    int                 nsizes, nalgos;
    size_t              sizes[MAX_SIZES];
    const gcoll_algo_t *algos[MAX_ALGOS];
    double              t[MAX_SIZES][MAX_ALGOS];   /* seconds; < 0: not applicable */
    int                 best[MAX_SIZES];
} sweep_t;

typedef struct {
    opts_t            o;
    gcoll_comm_t      comm;
    int               rank, size;
    gcoll_tune_key_t  key;          /* nodes, ppn, ranks of this allocation */
    float            *send, *recv;  /* max count x ranks elements each */
    size_t            cap;          /* bytes of each */
    int               done, total;  /* progress */
} tuner_t;

/* ---- options ---------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mpirun -n N gcoll_tune -o FILE [-m MIN:MAX] [-c coll,...] [-s 2|4] [--nodes N]\n"
            "  -o FILE      write the selection table here (load it with GCOLL_TUNE_FILE=FILE)\n"
            "  -m MIN:MAX   message sizes in bytes, K/M/G suffixes (default 8:4M)\n"
            "  -c LIST      collectives to tune (default all): allreduce,bcast,reduce,allgather,\n"
            "               reduce_scatter,alltoall,barrier\n"
            "  -s 2|4       factor between measured sizes (default 4)\n"
            "  --nodes N    also write rows for up to N nodes, predicted by the simulator\n"
            "               calibrated by this run where N exceeds the nodes present\n");
}

static int parse_colls(char *list, unsigned *colls)
{
    *colls = 0;
    char *save = NULL;
    for (char *c = strtok_r(list, ",", &save); c; c = strtok_r(NULL, ",", &save)) {
        gcoll_coll_t k = gcoll_coll_from_name(c);
        if (k == GCOLL_COLL_COUNT) return -1;
        *colls |= 1u << k;
    }
    return *colls ? 0 : -1;
}

static int parse_minmax(const char *s, opts_t *o)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%s", s);
    char *colon = strchr(buf, ':');
    if (!colon) return -1;
    *colon = '\0';
    if (gcoll_tune_parse_size(buf, &o->min) || gcoll_tune_parse_size(colon + 1, &o->max)) return -1;
    return o->min >= 1 && o->min <= o->max ? 0 : -1;
}

static int parse_opts(int argc, char **argv, opts_t *o)
{
    *o = (opts_t){ .min = 8, .max = 4u << 20, .step = 4, .colls = (1u << GCOLL_COLL_COUNT) - 1 };
    size_t n = 0;
    for (int i = 0; i < argc && n < sizeof o->cmd; i++)
        n += (size_t)snprintf(o->cmd + n, sizeof o->cmd - n, "%s%s", i ? " " : "", argv[i]);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) return 1;
        if (!v) return -1;
        if (!strcmp(a, "-o")) o->out = v;
        else if (!strcmp(a, "-m")) { if (parse_minmax(v, o)) return -1; }
        else if (!strcmp(a, "-c")) { if (parse_colls(argv[i + 1], &o->colls)) return -1; }
        else if (!strcmp(a, "-s")) { o->step = atoi(v); if (o->step != 2 && o->step != 4) return -1; }
        else if (!strcmp(a, "--nodes")) { o->nodes = atoi(v); if (o->nodes < 1) return -1; }
        else return -1;
        i++;
    }
    return o->out ? 0 : -1;
}

/* ---- running one collective -------------------------------------------------- */

static gcoll_status_t call(tuner_t *t, gcoll_coll_t coll, size_t n)
{
    switch (coll) {
    case GCOLL_COLL_ALLREDUCE:
        return gcoll_allreduce(t->send, t->recv, n, GCOLL_FLOAT32, GCOLL_SUM, t->comm);
    case GCOLL_COLL_BCAST:     return gcoll_bcast(t->recv, n, GCOLL_FLOAT32, 0, t->comm);
    case GCOLL_COLL_REDUCE:
        return gcoll_reduce(t->send, t->recv, n, GCOLL_FLOAT32, GCOLL_SUM, 0, t->comm);
    case GCOLL_COLL_ALLGATHER: return gcoll_allgather(t->send, t->recv, n, GCOLL_FLOAT32, t->comm);
    case GCOLL_COLL_REDUCE_SCATTER:
        return gcoll_reduce_scatter(t->send, t->recv, n, GCOLL_FLOAT32, GCOLL_SUM, t->comm);
    case GCOLL_COLL_ALLTOALL:  return gcoll_alltoall(t->send, t->recv, n, GCOLL_FLOAT32, t->comm);
    default:                   return gcoll_barrier(t->comm);
    }
}

/* Seconds per call over iters calls, the slowest rank's.  One untimed call
 * after the barrier lines the ranks up: MPI_Barrier can release them a
 * scheduler tick apart when they share CPUs, and that skew would be charged
 * to the algorithm timed first. */
static double time_block(tuner_t *t, gcoll_coll_t coll, size_t n, long iters)
{
    double dt, worst;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = 0;
    for (long i = -1; i < iters; i++) {
        if (i == 0) t0 = MPI_Wtime();
        gcoll_status_t st = call(t, coll, n);
        if (st != GCOLL_SUCCESS) {
            fprintf(stderr, "gcoll_tune: rank %d: %s failed: %s\n", t->rank, gcoll_coll_name(coll),
                    gcoll_last_error());
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    dt = (MPI_Wtime() - t0) / (double)iters;
    MPI_Allreduce(&dt, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return worst;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* Every rank agrees: the algorithm builds a schedule for this call here.
 * Declines (shm across nodes) are expected, so they are not logged. */
static int applies(tuner_t *t, const gcoll_algo_t *a, size_t n)
{
    int level = gcoll_log_level;
    gcoll_log_level = -1;
    int ok = gcoll_select_try(t->comm, a, n, GCOLL_FLOAT32) == GCOLL_SUCCESS, all = 0;
    gcoll_log_level = level;
    gcoll_error_clear();
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return all;
}

/* Median seconds per call of each applicable algorithm at n elements. */
static void measure_size(tuner_t *t, sweep_t *w, int si)
{
    size_t n = w->sizes[si] / sizeof(float);
    long iters[MAX_ALGOS];
    double blocks[MAX_ALGOS][NBLOCKS];
    for (int a = 0; a < w->nalgos; a++) {
        w->t[si][a] = -1;
        iters[a] = 0;
        if (!applies(t, w->algos[a], n)) continue;
        gcoll_select_force(t->comm, w->coll, w->algos[a]);
        time_block(t, w->coll, n, 2);                       /* warm up */
        double one = time_block(t, w->coll, n, PROBE_CALLS);
        iters[a] = one > BLOCK_S ? 1 : (long)(BLOCK_S / (one > 1e-7 ? one : 1e-7));
        if (iters[a] > 2000) iters[a] = 2000;
    }
    for (int b = 0; b < NBLOCKS; b++)               /* interleaved, rotating order */
        for (int j = 0; j < w->nalgos; j++) {
            int a = (j + b) % w->nalgos;
            if (!iters[a]) continue;
            gcoll_select_force(t->comm, w->coll, w->algos[a]);
            blocks[a][b] = time_block(t, w->coll, n, iters[a]);
        }
    for (int a = 0; a < w->nalgos; a++) {
        if (!iters[a]) continue;
        qsort(blocks[a], NBLOCKS, sizeof(double), cmp_double);
        w->t[si][a] = blocks[a][NBLOCKS / 2];
    }
    gcoll_select_force(t->comm, w->coll, NULL);
}

/* ---- progress and winners ------------------------------------------------------ */

static void progress(tuner_t *t, const sweep_t *w, int si)
{
    if (t->rank) return;
    t->done++;
    int width = 40, fill = t->total ? t->done * width / t->total : width;
    char sz[32];
    gcoll_tune_format_size(sz, sizeof sz, w->sizes[si]);
    if (isatty(STDERR_FILENO))
        fprintf(stderr, "\r[%-*.*s] %3d%% %-15s %-6s", width, fill,
                "########################################", t->done * 100 / t->total,
                gcoll_coll_name(w->coll), sz);
    else if (si == w->nsizes - 1)
        fprintf(stderr, "gcoll_tune: %3d%% %s done\n", t->done * 100 / t->total,
                gcoll_coll_name(w->coll));
    if (t->done == t->total && isatty(STDERR_FILENO)) fprintf(stderr, "\n");
}

/* Fastest applicable algorithm; the previous winner stays within the slack. */
static void pick_winners(sweep_t *w)
{
    for (int s = 0; s < w->nsizes; s++) {
        int best = -1;
        for (int a = 0; a < w->nalgos; a++)
            if (w->t[s][a] >= 0 && (best < 0 || w->t[s][a] < w->t[s][best])) best = a;
        int prev = s ? w->best[s - 1] : -1;
        if (best >= 0 && prev >= 0 && w->t[s][prev] >= 0 && w->t[s][prev] <= KEEP_SLACK * w->t[s][best])
            best = prev;
        w->best[s] = best;
    }
}

/* Where the winner of size s hands over to the winner of s+1: the crossing of
 * their log-log lines, rounded to a power of two inside (s, s+1]. */
static size_t crossover(const sweep_t *w, int s)
{
    int a = w->best[s], b = w->best[s + 1];
    double x0 = log2((double)w->sizes[s]), x1 = log2((double)w->sizes[s + 1]);
    double x = 0.5 * (x0 + x1);
    if (w->t[s][b] > 0 && w->t[s + 1][a] > 0) {
        double d0 = log(w->t[s][a] / w->t[s][b]), d1 = log(w->t[s + 1][a] / w->t[s + 1][b]);
        if (d1 - d0 > 0) x = x0 + (x1 - x0) * (-d0) / (d1 - d0);
    }
    double p = floor(x + 0.5);
    if (p <= x0) p = x0 + 1;
    if (p > x1) p = x1;
    return (size_t)1 << (int)p;
}

/* ---- writing the table ------------------------------------------------------------ */

static void write_row(FILE *f, gcoll_coll_t coll, int nodes_lo, int nodes_hi, int ppn,
                      size_t lo, size_t hi, const gcoll_algo_t *algo)
{
    gcoll_tune_row_t r = { .coll = coll, .mem = GCOLL_MEM_HOST, .nodes_lo = nodes_lo,
                           .nodes_hi = nodes_hi, .ppn_lo = ppn, .ppn_hi = ppn,
                           .bytes_lo = lo, .bytes_hi = hi, .algo = algo };
    char line[512];
    gcoll_tune_format_row(line, sizeof line, &r);
    fprintf(f, "%s\n", line);
}

/* One row per run of sizes with the same winner. */
static void write_rows(FILE *f, const sweep_t *w, int nodes_lo, int nodes_hi, int ppn)
{
    size_t lo = 0;
    for (int s = 0; s < w->nsizes; s++) {
        if (w->best[s] < 0) continue;
        int last = s + 1 >= w->nsizes || w->best[s + 1] < 0;
        if (!last && w->best[s + 1] == w->best[s]) continue;
        size_t hi = last ? GCOLL_TUNE_INF_SIZE : crossover(w, s);
        if (w->coll == GCOLL_COLL_BARRIER) lo = 0, hi = GCOLL_TUNE_INF_SIZE;
        write_row(f, w->coll, nodes_lo, nodes_hi, ppn, lo, hi, w->algos[w->best[s]]);
        lo = hi;
        if (last) break;
    }
}

/* The measured medians, for whoever edits the file. */
static void write_medians(FILE *f, const sweep_t *w, const char *unit_note)
{
    fprintf(f, "# %s medians%s (us):\n", gcoll_coll_name(w->coll), unit_note);
    for (int s = 0; s < w->nsizes; s++) {
        char sz[32];
        gcoll_tune_format_size(sz, sizeof sz, w->sizes[s]);
        fprintf(f, "#   %-6s", w->coll == GCOLL_COLL_BARRIER ? "-" : sz);
        for (int a = 0; a < w->nalgos; a++)
            if (w->t[s][a] >= 0)
                fprintf(f, " %s%s=%.2f", a == w->best[s] ? "*" : "", w->algos[a]->name,
                        w->t[s][a] * 1e6);
        fprintf(f, "\n");
    }
}

static void write_header(FILE *f, const tuner_t *t)
{
    char host[256] = "?", when[64] = "?";
    time_t now = time(NULL);
    gethostname(host, sizeof host);
    host[sizeof host - 1] = '\0';
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S %z", localtime(&now));
    fprintf(f, "# libgcoll selection table written by gcoll_tune (format: docs/TUNING.md)\n"
               "# how:   %s   (under mpirun, %d ranks)\n"
               "# when:  %s\n"
               "# where: host %s; %d rank(s) on %d node(s), %d per node%s; transport %s; "
               "shared-memory segment %s\n"
               "# Load with GCOLL_TUNE_FILE=<this file>; calls no row matches use the built-in "
               "table.\n",
            t->o.cmd, t->size, when, host, t->size, t->key.nodes, t->key.ppn,
            gcoll_config.node_size ? " (nodes simulated by GCOLL_NODE_SIZE)" : "",
            t->comm->tl ? t->comm->tl->name : "?", t->comm->shm ? "yes" : "no");
}

/* ---- the simulator for more nodes ----------------------------------------------------- */

/* Half a round trip between rank 0 and peer, seconds, at bytes. */
static double pingpong(tuner_t *t, int peer, size_t bytes, int iters)
{
    double t0 = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (t->rank == 0) t0 = MPI_Wtime();
    for (int i = 0; i < iters && (t->rank == 0 || t->rank == peer); i++) {
        if (t->rank == 0) {
            MPI_Send(t->send, (int)bytes, MPI_BYTE, peer, 7, MPI_COMM_WORLD);
            MPI_Recv(t->recv, (int)bytes, MPI_BYTE, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(t->recv, (int)bytes, MPI_BYTE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(t->send, (int)bytes, MPI_BYTE, 0, 7, MPI_COMM_WORLD);
        }
    }
    double dt = t->rank == 0 ? (MPI_Wtime() - t0) / (2.0 * iters) : 0;
    MPI_Bcast(&dt, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return dt;
}

static void link_params(tuner_t *t, int peer, size_t big, double *alpha, double *beta)
{
    pingpong(t, peer, 8, 20);
    *alpha = pingpong(t, peer, 8, 500);
    double tb = pingpong(t, peer, big, 10);
    *beta = tb > *alpha ? (tb - *alpha) / (double)big : 1e-12;
}

/* Seconds per byte of a streaming a += b over float arrays. */
static double measure_gamma(tuner_t *t, size_t n)
{
    double t0 = MPI_Wtime();
    for (int rep = 0; rep < 5; rep++)
        for (size_t i = 0; i < n; i++) t->recv[i] += t->send[i];
    return (MPI_Wtime() - t0) / (5.0 * (double)n * sizeof(float));
}

static void calibrate(tuner_t *t, gcoll_sim_cost_t *c, char *how, size_t len)
{
    const int *node_of = t->comm->node_of;
    int intra = -1, inter = -1;
    size_t big = t->cap < (1u << 20) ? t->cap : 1u << 20;   /* ping-pong and loop size */
    for (int r = 1; r < t->size; r++) {
        if (intra < 0 && node_of[r] == node_of[0]) intra = r;
        if (inter < 0 && node_of[r] != node_of[0]) inter = r;
    }
    *c = gcoll_sim_cost_default;
    if (intra > 0) link_params(t, intra, big, &c->alpha_intra, &c->beta_intra);
    if (inter > 0) link_params(t, inter, big, &c->alpha_inter, &c->beta_inter);
    c->gamma = measure_gamma(t, big / sizeof(float));
    snprintf(how, len,
             "# calibration: intra-node alpha %.2f us, %.2f GB/s (%s); inter-node alpha %.2f us, "
             "%.2f GB/s (%s) through %d NIC(s) per node shared by its ranks; reduction %.2f GB/s "
             "(measured)\n",
             c->alpha_intra * 1e6, 1e-9 / c->beta_intra, intra > 0 ? "measured" : "model default",
             c->alpha_inter * 1e6, 1e-9 / c->beta_inter,
             inter > 0 ? (gcoll_config.node_size ? "measured between simulated nodes of one host"
                                                 : "measured")
                       : "model default: no second node in this run",
             c->nics_per_node, 1e-9 / c->gamma);
}

/* Predicted seconds of algo over nodes x ppn ranks at bytes (count x float),
 * or -1 where it declines or the buffers would not fit SIM_MEM. */
static double sim_time(const gcoll_algo_t *algo, int nodes, int ppn, size_t bytes,
                       const gcoll_sim_cost_t *cost)
{
    int n = nodes * ppn;
    gcoll_coll_args_t one = { .coll = algo->coll, .count = bytes / sizeof(float),
                              .dt_size = sizeof(float), .src = gcoll_bref(GCOLL_BUF_SEND, 0),
                              .dst = gcoll_bref(GCOLL_BUF_RECV, 0) };
    if (algo->coll == GCOLL_COLL_BCAST) one.src = one.dst;
    size_t sb, db;
    gcoll_coll_buf_bytes(&one, n, &sb, &db);
    if ((double)(sb + db) * n > SIM_MEM) return -1;
    gcoll_coll_args_t *args = malloc(sizeof(*args) * (size_t)n);
    int *node_of = malloc(sizeof(int) * (size_t)n);
    void **bufs = calloc(2 * (size_t)n, sizeof(void *));
    double result = -1;
    int ok = args && node_of && bufs;
    for (int r = 0; ok && r < n; r++) {
        args[r] = one;
        node_of[r] = r / ppn;
        bufs[r] = sb ? calloc(1, sb) : NULL;
        bufs[n + r] = db ? calloc(1, db) : NULL;
        ok = (!sb || bufs[r]) && (!db || bufs[n + r]);
    }
    gcoll_sim_t sim = { .nranks = n, .node_of = node_of, .cost = cost };
    if (ok && gcoll_sim_run_algo(&sim, algo, args, GCOLL_FLOAT32, GCOLL_SUM,
                                 (const void *const *)bufs, bufs + n) == GCOLL_SUCCESS)
        result = sim.time;
    gcoll_error_clear();
    for (int r = 0; bufs && r < 2 * n; r++) free(bufs[r]);
    free(bufs);
    free(node_of);
    free(args);
    return result;
}

/* The sweep w, predicted for nodes x ppn. */
static void sim_sweep(const sweep_t *w, sweep_t *p, int nodes, int ppn, const gcoll_sim_cost_t *c)
{
    *p = *w;
    for (int s = 0; s < p->nsizes; s++)
        for (int a = 0; a < p->nalgos; a++)
            p->t[s][a] = sim_time(p->algos[a], nodes, ppn, p->sizes[s], c);
    pick_winners(p);
}

/* Node counts past the allocation: the next one, powers of two, the target. */
static int sim_node_counts(int have, int want, int *k)
{
    int n = 0;
    if (want <= have) return 0;
    k[n++] = have + 1;
    for (int p = 2; p < want; p *= 2)
        if (p > k[n - 1]) k[n++] = p;
    if (k[n - 1] != want) k[n++] = want;
    return n;
}

static void write_sim_rows(FILE *f, tuner_t *t, sweep_t *const *w, int nw)
{
    gcoll_sim_cost_t cost;
    char how[512];
    calibrate(t, &cost, how, sizeof how);
    int k[40], nk = sim_node_counts(t->key.nodes, t->o.nodes, k);
    if (t->rank != 0 || nk == 0) return;
    fprintf(f, "\n# Rows for %d-%d nodes x %d ranks: NOT MEASURED.  Predicted by the simulator's "
               "alpha-beta-gamma\n# model (libgcoll/sim) over the schedules of each algorithm; "
               "sizes whose buffers would not\n# fit in %u MiB extend the last prediction.\n%s",
            k[0], t->o.nodes, t->key.ppn, SIM_MEM >> 20, how);
    static sweep_t p;
    int level = gcoll_log_level;
    gcoll_log_level = -1;   /* declines (shm across nodes) are expected here */
    for (int i = 0; i < nk; i++) {
        int hi = i + 1 < nk ? k[i + 1] - 1 : t->o.nodes;
        if (hi > k[i]) fprintf(f, "# %d-%d nodes (simulated at %d)\n", k[i], hi, k[i]);
        else fprintf(f, "# %d nodes (simulated)\n", k[i]);
        for (int j = 0; j < nw; j++) {
            sim_sweep(w[j], &p, k[i], t->key.ppn, &cost);
            write_rows(f, &p, k[i], hi, t->key.ppn);
        }
    }
    gcoll_log_level = level;
}

/* ---- main ------------------------------------------------------------------------------- */

static void plan(tuner_t *t, sweep_t *w, gcoll_coll_t coll)
{
    memset(w, 0, sizeof(*w));
    w->coll = coll;
    if (coll == GCOLL_COLL_BARRIER) w->sizes[w->nsizes++] = 0;
    for (size_t s = t->o.min; coll != GCOLL_COLL_BARRIER && s <= t->o.max && w->nsizes < MAX_SIZES;
         s *= (size_t)t->o.step)
        w->sizes[w->nsizes++] = s < sizeof(float) ? sizeof(float) : s;
    for (const gcoll_algo_t *const *a = gcoll_algos; *a && w->nalgos < MAX_ALGOS; a++)
        if ((*a)->coll == coll) w->algos[w->nalgos++] = *a;
}

static int write_file(tuner_t *t, sweep_t *const *w, int nw)
{
    FILE *f = t->rank == 0 ? fopen(t->o.out, "w") : NULL;
    int ok = t->rank != 0 || f;
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (!ok) {
        fprintf(stderr, "gcoll_tune: cannot write %s\n", t->o.out);
        return 1;
    }
    if (f) {
        write_header(f, t);
        fprintf(f, "\n# Measured: %d node(s) x %d ranks, host memory, float32 sum.\n",
                t->key.nodes, t->key.ppn);
        for (int j = 0; j < nw; j++) write_medians(f, w[j], " (* = chosen)");
        for (int j = 0; j < nw; j++) write_rows(f, w[j], t->key.nodes, t->key.nodes, t->key.ppn);
    }
    if (t->o.nodes > t->key.nodes) write_sim_rows(f, t, w, nw);
    if (f) fclose(f);
    return 0;
}

/* Rank 0 reads the file back through the library's parser. */
static int verify_file(const tuner_t *t)
{
    if (t->rank) return 0;
    char *text = NULL;
    gcoll_tune_table_t tab;
    gcoll_tune_table_init(&tab);
    gcoll_status_t st = gcoll_tune_read_file(t->o.out, &text);
    if (st == GCOLL_SUCCESS) st = gcoll_tune_parse(&tab, text, t->o.out, 0);
    if (st == GCOLL_SUCCESS) fprintf(stderr, "gcoll_tune: wrote %s (%zu rows)\n", t->o.out, tab.nrows);
    else fprintf(stderr, "gcoll_tune: BUG: the table written does not parse: %s\n", gcoll_last_error());
    gcoll_tune_table_fini(&tab);
    free(text);
    return st == GCOLL_SUCCESS ? 0 : 1;
}

static int tune(tuner_t *t)
{
    static sweep_t sweeps[GCOLL_COLL_COUNT];
    sweep_t *w[GCOLL_COLL_COUNT];
    int nw = 0;
    for (int c = 0; c < GCOLL_COLL_COUNT; c++)
        if (t->o.colls >> c & 1) {
            w[nw] = &sweeps[nw];
            plan(t, w[nw], (gcoll_coll_t)c);
            t->total += w[nw++]->nsizes;
        }
    size_t elems = t->o.max / sizeof(float) + 1;
    t->send = calloc(elems * (size_t)t->size, sizeof(float));
    t->recv = calloc(elems * (size_t)t->size, sizeof(float));
    t->cap  = elems * (size_t)t->size * sizeof(float);
    if (!t->send || !t->recv) {
        fprintf(stderr, "gcoll_tune: cannot allocate buffers for -m max %zu\n", t->o.max);
        return 1;
    }
    /* Real data in every page of both buffers: an input calloc left untouched
     * reads as the kernel's one shared zero page, always in L1, which made
     * large calls look up to 1.5x faster than on real data and favoured
     * algorithms that read their input more than once. */
    for (size_t i = 0; i < elems * (size_t)t->size; i++) {
        t->send[i] = (float)((i + (size_t)t->rank) % 7);
        t->recv[i] = 0.0f;
    }
    for (int j = 0; j < nw; j++) {
        for (int s = 0; s < w[j]->nsizes; s++) {
            measure_size(t, w[j], s);
            progress(t, w[j], s);
        }
        pick_winners(w[j]);
    }
    int rc = write_file(t, w, nw);
    return rc ? rc : verify_file(t);
}

int main(int argc, char **argv)
{
    tuner_t t;
    memset(&t, 0, sizeof t);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &t.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &t.size);
    int p = parse_opts(argc, argv, &t.o), rc = 0;
    if (p) {
        if (t.rank == 0) usage(p > 0 ? stdout : stderr);
        MPI_Finalize();
        return p > 0 ? 0 : 2;
    }
    gcoll_status_t st = gcoll_comm_create(MPI_COMM_WORLD, &t.comm);
    if (st != GCOLL_SUCCESS) {
        if (t.rank == 0) fprintf(stderr, "gcoll_tune: %s\n", gcoll_last_error());
        MPI_Finalize();
        return 1;
    }
    gcoll_select_comm_key(t.comm, &t.key);
    rc = tune(&t);
    gcoll_comm_destroy(t.comm);
    free(t.send);
    free(t.recv);
    MPI_Finalize();
    return rc;
}
