/* SPDX-License-Identifier: BSD-3-Clause */
/* gcoll_tune: measure every applicable algorithm of each collective over a
 * range of message sizes on the allocation it runs on, and write a selection
 * table (docs/TUNING.md) that GCOLL_TUNE_FILE accepts.
 *
 *   mpirun -n N gcoll_tune -o FILE [-m MIN:MAX] [-c coll,...] [-s 2|4] [--nodes N]
 *
 * How: one communicator, measured by the library's own measuring core
 * (core/calibrate.c, which the calibration at gcoll_comm_create uses too)
 * with its thorough timing: every applicable algorithm forced in turn, 50 ms
 * blocks interleaved, the median of 5, crossovers between measured sizes on
 * log-log lines.  Rows are keyed by the measured node count and ranks per
 * node.
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
#include "core/calibrate.h"
#include "core/comm.h"
#include "base/config.h"
#include "base/log.h"
#include "core/memtype.h"
#include "core/select.h"
#include "base/status.h"
#include "core/tune_table.h"
#include "sim/sim.h"

#define SIM_MEM    (256u << 20)    /* bytes the simulator may allocate per run */

typedef struct {
    const char *out;
    size_t      min, max;
    int         step;              /* size factor between measurements */
    unsigned    colls;             /* bit per gcoll_coll_t */
    int         nodes;             /* --nodes: rows up to this many nodes */
    char        cmd[1024];
} opts_t;

typedef gcoll_calib_sweep_t sweep_t;

typedef struct {
    opts_t            o;
    gcoll_comm_t      comm;
    int               rank, size;
    gcoll_tune_key_t  key;          /* nodes, ppn, ranks of this allocation */
    gcoll_calib_t     calib;        /* the measuring session and its buffers */
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

/* ---- progress and the header ------------------------------------------------- */

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
            t->comm->cfg.node_size ? " (nodes simulated by GCOLL_NODE_SIZE)" : "",
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
            MPI_Send(t->calib.send, (int)bytes, MPI_BYTE, peer, 7, MPI_COMM_WORLD);
            MPI_Recv(t->calib.recv, (int)bytes, MPI_BYTE, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(t->calib.recv, (int)bytes, MPI_BYTE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(t->calib.send, (int)bytes, MPI_BYTE, 0, 7, MPI_COMM_WORLD);
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
        for (size_t i = 0; i < n; i++) t->calib.recv[i] += t->calib.send[i];
    return (MPI_Wtime() - t0) / (5.0 * (double)n * sizeof(float));
}

static void sim_costs(tuner_t *t, gcoll_sim_cost_t *c, char *how, size_t len)
{
    const int *node_of = t->comm->node_of;
    int intra = -1, inter = -1;
    size_t big = t->calib.send_cap < (1u << 20) ? t->calib.send_cap : 1u << 20;   /* ping-pong and loop size */
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
             inter > 0 ? (t->comm->cfg.node_size ? "measured between simulated nodes of one host"
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
    gcoll_calib_pick(p);
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
    sim_costs(t, &cost, how, sizeof how);
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
            gcoll_calib_write_rows(f, &p, k[i], hi, t->key.ppn);
        }
    }
    gcoll_log_level = level;
}

/* ---- main ------------------------------------------------------------------------------- */

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
        for (int j = 0; j < nw; j++) gcoll_calib_write_medians(f, w[j], " (* = chosen)");
        for (int j = 0; j < nw; j++)
            gcoll_calib_write_rows(f, w[j], t->key.nodes, t->key.nodes, t->key.ppn);
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
            gcoll_calib_plan(w[nw], (gcoll_coll_t)c, t->o.min, t->o.max, t->o.step);
            t->total += w[nw++]->nsizes;
        }
    size_t cap = (t->o.max / sizeof(float) + 1) * sizeof(float) * (size_t)t->size;  /* allgather */
    if (gcoll_calib_init(&t->calib, t->comm, cap, cap, &gcoll_calib_timing_tune) != GCOLL_SUCCESS) {
        fprintf(stderr, "gcoll_tune: -m max %zu: %s\n", t->o.max, gcoll_last_error());
        return 1;
    }
    for (int j = 0; j < nw; j++) {
        for (int s = 0; s < w[j]->nsizes; s++) {
            if (gcoll_calib_measure(&t->calib, w[j], s) != GCOLL_SUCCESS) {
                fprintf(stderr, "gcoll_tune: rank %d: %s\n", t->rank, gcoll_last_error());
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
            progress(t, w[j], s);
        }
        gcoll_calib_pick(w[j]);
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
    gcoll_calib_fini(&t.calib);
    gcoll_comm_destroy(t.comm);
    MPI_Finalize();
    return rc;
}
