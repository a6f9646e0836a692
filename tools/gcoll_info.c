/* SPDX-License-Identifier: BSD-3-Clause */
/* gcoll_info: what this libgcoll is, what it was built with, the GCOLL_*
 * environment in force, the calibration cache and whether it holds an entry
 * for the shape gcoll_info runs in, (-a) the algorithms GCOLL_ALGO accepts
 * and (-s) the selection table in force for that shape, each row naming
 * where it came from.  Runs with or without mpirun (the shape is that of
 * MPI_COMM_WORLD: alone, one rank; rank 0 prints); a malformed GCOLL_*
 * variable or selection table is reported and makes it exit non-zero, with
 * the same sentence gcoll_comm_create would return. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "gcoll_build.h"  /* configure results (HAVE_UCX, ...) */
#include "gcoll.h"
#include "algos/algo.h"
#include "base/config.h"
#include "core/memtype.h"
#include "core/select.h"
#include "core/tune_cache.h"
#include "topo/topo.h"
#include "transport/transport.h"

/* The environment as gcoll_comm_create would read it (loaded in main). */
static gcoll_config_t cfg;

static void usage(FILE *f)
{
    fprintf(f, "usage: [mpirun -n N] gcoll_info [-a|-A|-s|--topo[=F]] [-h]\n"
               "  (no option)  version, build configuration, GCOLL_* environment and the\n"
               "               calibration cache: its entry for this shape (the ranks of\n"
               "               mpirun, or one rank alone) and the entries it holds\n"
               "  -a           algorithms per collective (the names GCOLL_ALGO accepts)\n"
               "  -A           as -a, with a one-line summary of each algorithm\n"
               "  -s           the selection table in force for this shape (GCOLL_TUNE,\n"
               "               GCOLL_TUNE_FILE, calibration cache, built-in), each row with\n"
               "               its origin, in the file format: save it, edit it, load it\n"
               "               with GCOLL_TUNE_FILE (docs/TUNING.md)\n"
               "  --calibrate  measure this shape now and cache the entry, replacing one that\n"
               "               exists (run it under mpirun as the application runs)\n"
               "  --topo[=F]   this node's GPU/NIC/NUMA matrix (or that of hwloc XML file F)\n"
               "               and which GPU and NIC each rank drives (runs MPI; mpirun or not)\n");
}

static void print_build(void)
{
    int len = 0;
    char mpi[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    MPI_Get_library_version(mpi, &len);
    char *nl = strchr(mpi, '\n');
    if (nl) *nl = '\0';
    printf("libgcoll %d.%d.%d\n", GCOLL_VERSION_MAJOR, GCOLL_VERSION_MINOR, GCOLL_VERSION_PATCH);
    printf("  MPI    : %s (%s)\n", GCOLL_MPI_FLAVOUR, mpi);
    const char *ucx = gcoll_tl_ucx_version();
    printf("  UCX    : %s\n", ucx ? ucx : "not built");
#ifdef HAVE_HWLOC
    printf("  hwloc  : yes\n");
#else
    printf("  hwloc  : not built\n");
#endif
#ifdef HAVE_CUDA
    printf("  CUDA   : yes (allreduce of device buffers: CUDA IPC + device kernels; other "
           "collectives staged through host memory), %d device(s) visible\n",
           gcoll_cuda_device_count());
#else
    printf("  CUDA   : not built\n");
#endif
}

static void print_env(void)
{
    printf("\nEnvironment (value in force, then meaning):\n");
    for (size_t i = 0; i < gcoll_config_table_size; i++) {
        const gcoll_config_entry_t *e = &gcoll_config_table[i];
        const char *v = gcoll_config_value(e);
        printf("  %-16s = %-10s %s\n", e->name, v[0] ? v : "\"\"", e->doc);
    }
}

static void print_algos(int verbose)
{
    for (int c = 0; c < GCOLL_COLL_COUNT; c++) {
        printf("%s:", gcoll_coll_name((gcoll_coll_t)c));
        for (const gcoll_algo_t *const *a = gcoll_algos; *a; a++)
            if ((*a)->coll == (gcoll_coll_t)c) {
                if (verbose) printf("\n    %-18s %s", (*a)->name, (*a)->summary);
                else printf(" %s", (*a)->name);
            }
        printf("\n");
    }
}

/* ---- the shape gcoll_info runs in, and its cache entry ------------------------- */

typedef struct {
    int                      rank;
    gcoll_tune_cache_shape_t shape;
    char                     key[GCOLL_TUNE_CACHE_KEY_MAX];
    char                     dir[GCOLL_TUNE_CACHE_PATH_MAX], path[GCOLL_TUNE_CACHE_PATH_MAX];
    const char              *off;        /* why there is no cache, or NULL */
    gcoll_tune_cache_state_t state;
    char                    *text;       /* the entry, FOUND */
    char                     why[600];   /* INVALID */
} cache_view_t;

/* MPI_COMM_WORLD's shape as gcoll_comm_create would see it: nodes from
 * GCOLL_NODE_SIZE or the hosts, the transport configured, the segment
 * assumed to start (a communicator whose segment or UCX fails to start
 * gets another key). */
static void world_shape(gcoll_tune_cache_shape_t *s, int *rank)
{
    int size, leader;
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (cfg.node_size > 0) {
        leader = *rank - *rank % cfg.node_size;
    } else {
        MPI_Comm host;
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, *rank, MPI_INFO_NULL, &host);
        MPI_Allreduce(rank, &leader, 1, MPI_INT, MPI_MIN, host);
        MPI_Comm_free(&host);
    }
    int *leaders = malloc(sizeof(int) * (size_t)size);
    if (!leaders) { fprintf(stderr, "gcoll_info: out of memory\n"); MPI_Abort(MPI_COMM_WORLD, 1); }
    MPI_Allgather(&leader, 1, MPI_INT, leaders, 1, MPI_INT, MPI_COMM_WORLD);
    memset(s, 0, sizeof(*s));
    s->ranks = size;
    s->uniform = 1;
    for (int r = 0; r < size; r++) {
        if (leaders[r] != r) continue;
        int n = 0;
        for (int q = 0; q < size; q++) n += leaders[q] == r;
        if (s->nodes && n != s->ppn) s->uniform = 0;
        if (n > s->ppn) s->ppn = n;
        s->nodes++;
    }
    free(leaders);
    s->simulated = cfg.node_size > 0 && s->nodes > 1;
    s->shm = 1;
    s->shm_stream = cfg.shm_stream;
    s->transport = cfg.transport != GCOLL_TRANSPORT_MPI && gcoll_tl_ucx_version() ? "ucx"
                                                                                            : "mpi";
    gcoll_tune_cache_host_facts(MPI_COMM_WORLD, s);
}

static void cache_view(cache_view_t *v)
{
    memset(v, 0, sizeof(*v));
    world_shape(&v->shape, &v->rank);
    gcoll_tune_cache_key(v->key, sizeof v->key, &v->shape);
    if (gcoll_tune_cache_dir(&cfg, v->dir, sizeof v->dir, &v->off) != 0) return;
    if (gcoll_tune_cache_path(v->path, sizeof v->path, v->dir, &v->shape, v->key) != 0) {
        v->off = "its directory's path is too long";
        return;
    }
    v->state = gcoll_tune_cache_read(v->path, v->key, &v->text, v->why, sizeof v->why);
}

static void print_cache(const cache_view_t *v)
{
    const gcoll_tune_cache_shape_t *s = &v->shape;
    printf("\nCalibration cache (docs/TUNING.md):\n");
    printf("  shape  : %d rank(s) on %d %snode(s), %d per node%s%s%s; transport %s\n", s->ranks,
           s->nodes, s->simulated ? "simulated " : "", s->ppn, s->uniform ? "" : " at most",
           s->oversubscribed ? "; oversubscribed" : "", s->bound ? "; bound to CPUs" : "",
           s->transport);
    printf("  key    : %s\n", v->key);
    if (v->off) {
        printf("  cache  : none (%s)\n", v->off);
        return;
    }
    printf("  cache  : %s\n", v->dir);
    if (s->ranks < 2)
        printf("  entry  : none needed (a single rank has nothing to choose; run gcoll_info under "
               "mpirun to see a shape of several ranks)\n");
    else if (v->state == GCOLL_TUNE_CACHE_FOUND)
        printf("  entry  : %s (its rows are in force for this shape: gcoll_info -s)\n", v->path);
    else if (v->state == GCOLL_TUNE_CACHE_INVALID)
        printf("  entry  : %s is ignored: %s\n", v->path, v->why);
    else
        printf("  entry  : none for this shape (%s); %s\n", v->path,
               cfg.algo[0] || cfg.tune[0] || cfg.tune_file[0]
                   ? "not measured while GCOLL_ALGO, GCOLL_TUNE or GCOLL_TUNE_FILE is set"
                   : "the next gcoll_comm_create of this shape measures one (a few seconds)");
    DIR *d = opendir(v->dir);
    int n = 0;
    for (struct dirent *e = d ? readdir(d) : NULL; e; e = readdir(d)) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 4, ".tbl")) continue;
        printf("%s %s\n", n++ ? "          " : "  holds  :", e->d_name);
    }
    if (d) closedir(d);
    if (!n) printf("  holds  : no entries\n");
}

/* --calibrate: drop this shape's entry and create a communicator, which
 * measures and writes a new one (collective). */
static int calibrate_now(cache_view_t *v)
{
    const char *why = v->off ? v->off
                      : v->shape.ranks < 2 ? "a single rank has nothing to choose (run under mpirun)"
                      : cfg.algo[0] || cfg.tune[0] || cfg.tune_file[0]
                          ? "GCOLL_ALGO, GCOLL_TUNE or GCOLL_TUNE_FILE is set"
                          : NULL;
    if (why) {
        if (v->rank == 0) fprintf(stderr, "gcoll_info: --calibrate: not measuring: %s\n", why);
        return 1;
    }
    if (v->rank == 0 && v->state != GCOLL_TUNE_CACHE_MISSING) unlink(v->path);
    MPI_Barrier(MPI_COMM_WORLD);
    gcoll_comm_t comm;
    gcoll_status_t st = gcoll_comm_create(MPI_COMM_WORLD, &comm);
    if (st != GCOLL_SUCCESS) {
        if (v->rank == 0) fprintf(stderr, "gcoll_info: gcoll_comm_create: %s\n", gcoll_last_error());
        return 1;
    }
    gcoll_comm_destroy(comm);
    char *text = NULL, why_bad[600];
    int ok = v->rank == 0 && gcoll_tune_cache_read(v->path, v->key, &text, why_bad,
                                                   sizeof why_bad) == GCOLL_TUNE_CACHE_FOUND;
    free(text);
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);   /* rank 0 alone touches the cache */
    if (v->rank == 0 && ok) printf("gcoll_info: entry for this shape: %s\n", v->path);
    if (v->rank == 0 && !ok) fprintf(stderr, "gcoll_info: --calibrate: no entry written (the "
                                             "warnings above say why)\n");
    return ok ? 0 : 1;
}

static void print_table(const gcoll_tune_table_t *t)
{
    printf("# libgcoll selection table in force; first matching row wins (docs/TUNING.md).\n"
           "# Precedence: GCOLL_ALGO%s%s > GCOLL_TUNE rows > GCOLL_TUNE_FILE rows > calibration\n"
           "# cache rows (this machine and shape) > built-in.  After each row: where it came from.\n",
           cfg.algo[0] ? "=" : " (unset)", cfg.algo);
    gcoll_tune_print_origins(stdout, t);
}

/* --topo[=FILE.xml]: initialises MPI (a singleton without mpirun), runs
 * gcoll_topo_report over MPI_COMM_WORLD, finalises; returns the exit
 * status. */
static int topo_main(const char *option)
{
    const char *eq = option ? strchr(option, '=') : NULL;
    const char *xml = eq && eq[1] ? eq + 1 : NULL;
    int inited = 0, rc = 0;
    MPI_Initialized(&inited);
    if (!inited && MPI_Init(NULL, NULL) != MPI_SUCCESS) {
        fprintf(stderr, "gcoll_info: MPI_Init failed\n");
        return 1;
    }
    gcoll_comm_t comm = NULL;
    char why[256] = "";
    gcoll_status_t st = gcoll_comm_create(MPI_COMM_WORLD, &comm);
    if (st == GCOLL_SUCCESS) {
        st = gcoll_topo_report(comm, xml, stdout);
        /* keep the sentence: destroying the communicator clears it */
        snprintf(why, sizeof(why), "%s", gcoll_last_error());
        gcoll_comm_destroy(comm);
    } else {
        snprintf(why, sizeof(why), "%s", gcoll_last_error());
    }
    if (st != GCOLL_SUCCESS) {
        int rank = 0;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        if (rank == 0) fprintf(stderr, "gcoll_info: %s\n", why);
        rc = 1;
    }
    if (!inited) MPI_Finalize();
    return rc;
}

int main(int argc, char **argv)
{
    int algos = 0, table = 0, calibrate = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-a")) algos = 1;
        else if (!strcmp(argv[i], "--calibrate")) calibrate = 1;
        else if (!strcmp(argv[i], "-A")) algos = 2;
        else if (!strcmp(argv[i], "-s")) table = 1;
        else if (!strncmp(argv[i], "--topo", 6) && (!argv[i][6] || argv[i][6] == '='))
            return topo_main(argv[i]);   /* MPI_Init only in this mode */
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { usage(stdout); return 0; }
        else { usage(stderr); return 2; }
    }
    const gcoll_tune_table_t *t = NULL;
    if (gcoll_config_load(&cfg) != GCOLL_SUCCESS || gcoll_select_table(&cfg, NULL, NULL, &t) != GCOLL_SUCCESS) {
        fprintf(stderr, "gcoll_info: %s\n", gcoll_last_error());
        return 1;
    }
    if (algos) {
        print_algos(algos == 2);
        return 0;
    }
    /* the shape needs MPI: a singleton without mpirun */
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
        fprintf(stderr, "gcoll_info: MPI_Init failed\n");
        return 1;
    }
    cache_view_t v;
    cache_view(&v);
    int rc = 0;
    if (calibrate) {
        rc = calibrate_now(&v);
    } else if (v.rank == 0 && table) {
        if (v.state == GCOLL_TUNE_CACHE_FOUND && v.shape.ranks > 1 &&
            gcoll_select_table(&cfg, v.path, v.text, &t) != GCOLL_SUCCESS) {
            fprintf(stderr, "gcoll_info: %s\n", gcoll_last_error());
            rc = 1;
        } else {
            print_table(t);
        }
    } else if (v.rank == 0) {
        print_build();
        print_env();
        print_cache(&v);
    }
    free(v.text);
    MPI_Finalize();
    return rc;
}
