/* SPDX-License-Identifier: BSD-3-Clause */
/* Command line of the benchmarks, OSU's letters where OSU has them. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "bench_int.h"

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)

static void usage(const char *prog, const gcoll_bench_coll_t *coll)
{
    int ovl = GCOLL_BENCH_OVERLAP(coll);
    printf("Usage: mpirun -n N %s [options]\n", prog);
    if (ovl)
        printf("OSU-style overlap benchmark of libgcoll's nonblocking %s (as osu_i%s),\n"
               "optionally side by side with the system MPI's.\n\n", coll->name + 1,
               coll->name + 1);
    else
        printf("OSU-style latency/bandwidth benchmark of libgcoll's %s, optionally side by\n"
               "side with the system MPI's.\n\n", coll->name);
    if (coll->has_size)
        printf("  -m, --message-size [MIN:]MAX  sizes in bytes, powers of two from MIN to MAX;\n"
               "                                K, M, G suffixes (default 4:1M)\n");
    printf("  -i, --iterations N     timed iterations per size (default: 1000 up to 1 MiB,\n"
           "                         100 up to 16 MiB, 50 above)\n"
           "  -x, --warmup N         untimed iterations first (default: 100 / 10 / 5)\n"
           "  -f, --full             %s\n"
           "  -c, --validation       check every output of extra untimed runs exactly\n"
           "                         (GCOLL_BENCH_INJECT_ERROR=1 corrupts one on rank 0)\n"
           "  -d, --accelerator host|cuda|gcoll|malloc   buffer placement (default host:\n"
           "                         page aligned); cuda without a usable device exits with\n"
           "                         status 77; gcoll: host memory from gcoll_mem_alloc\n"
           "                         (zero-copy on a node); malloc: plain malloc, as C and\n"
           "                         Fortran programs allocate (16 bytes into a page)\n",
           ovl ? "time in the post and in the wait (and Min/Max Overall over\n"
                 "                         ranks with one impl), and iterations"
               : "Min and Max latency over ranks, and iterations");
    if (coll->has_size)
        printf("  -T, --type DTYPE       int8 uint8 int32 uint32 int64 uint64 float16 bfloat16\n"
               "                         float32 float64 (default float32)%s\n",
               coll->reduces ? "; op is sum" : "");
    if (coll->has_root)
        printf("  -r, --root R           root rank (default 0)\n");
    printf("      --impl gcoll|mpi|both  what to time (default gcoll); both alternates\n"
           "                         blocks of gcoll and MPI calls on the same buffers and\n"
           "                         reports medians of the blocks%s\n"
           "      --blocks N         blocks per impl with --impl both (default 5)\n"
           "      --algo NAME        force a libgcoll algorithm (GCOLL_ALGO=%s=NAME)\n",
           ovl ? "" : " and MPI/gcoll ratios",
           coll->algo_key ? coll->algo_key : coll->name);
    if (!ovl)
        printf("      --algos A,B,...    compare libgcoll variants in one launch: one\n"
               "                         communicator per name (auto: the default selection,\n"
               "                         else forced as --algo), their blocks alternating\n"
               "                         (--blocks per variant); one column per variant\n");
    if (!ovl)
        printf("      --csv FILE         also write one CSV record per size\n"
               "      --json FILE        also write the results as JSON\n");
    printf("  -h, --help             this text\n\n");
    if (ovl)
        printf("Per size, as OSU's osu_i%s: Pure Comm. is post + wait with nothing between;\n"
               "a dummy compute (a floating-point loop making no libgcoll or MPI call,\n"
               "calibrated at start-up) is set to take that long; Overall is post + compute +\n"
               "wait, Compute the compute's own time, and Overlap(%%) = max(0, 100 * (1 -\n"
               "(Overall - Compute) / Pure Comm.)).  -i calls per phase; each call is followed\n"
               "by an untimed MPI_Barrier.  Times are per call, averaged over ranks; -f adds\n"
               "the time spent in the post and in the wait.  GCOLL_PROGRESS=thread|caller says\n"
               "who advances libgcoll's requests during the compute.  Exit status: 0, 1 (a\n"
               "collective failed or -c found a wrong result), 2 (usage), 77 (-d cuda\n"
               "unavailable).\n", coll->name + 1);
    else
        printf("Columns: latency is the time per call averaged over iterations, then Avg/Min/Max\n"
               "over ranks.  algbw = S/t and busbw = algbw * factor as in nccl-tests, with S the\n"
               "bytes nccl-tests counts for this collective.  Exit status: 0, 1 (a collective\n"
               "failed or -c found a wrong result), 2 (usage), 77 (-d cuda unavailable).\n");
}

/* "64", "4K", "1M": bytes; -1 on garbage. */
static int parse_bytes(const char *s, size_t *out)
{
    char *end;
    unsigned long long v;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno || end == s || s[0] == '-') return -1;
    switch (*end) {
    case 'k': case 'K': v <<= 10, end++; break;
    case 'm': case 'M': v <<= 20, end++; break;
    case 'g': case 'G': v <<= 30, end++; break;
    default: break;
    }
    if (*end == 'b' || *end == 'B') end++;
    if (*end) return -1;
    *out = (size_t)v;
    return 0;
}

/* OSU's -m: "MAX", "MIN:MAX" or "MIN:". */
static int parse_range(const char *s, gcoll_bench_opts_t *o)
{
    const char *colon = strchr(s, ':');
    char min[64];
    if (!colon) return parse_bytes(s, &o->max_size);
    if ((size_t)(colon - s) >= sizeof min) return -1;
    memcpy(min, s, (size_t)(colon - s));
    min[colon - s] = '\0';
    if (min[0] && parse_bytes(min, &o->min_size)) return -1;
    if (colon[1] && parse_bytes(colon + 1, &o->max_size)) return -1;
    return o->min_size <= o->max_size ? 0 : -1;
}

static int parse_long(const char *s, long min, long *out)
{
    char *end;
    long v;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < min) return -1;
    *out = v;
    return 0;
}

static int parse_dtype(const char *s, gcoll_dtype_t *t)
{
    for (int d = 0; d < GCOLL_DTYPE_COUNT; d++)
        if (strcasecmp(s, gcoll_dtype_name((gcoll_dtype_t)d)) == 0) {
            *t = (gcoll_dtype_t)d;
            return 0;
        }
    /* The names PyTorch and OSU users type. */
    if (!strcasecmp(s, "float") || !strcasecmp(s, "fp32")) return *t = GCOLL_FLOAT32, 0;
    if (!strcasecmp(s, "double") || !strcasecmp(s, "fp64")) return *t = GCOLL_FLOAT64, 0;
    if (!strcasecmp(s, "half") || !strcasecmp(s, "fp16")) return *t = GCOLL_FLOAT16, 0;
    if (!strcasecmp(s, "bf16")) return *t = GCOLL_BFLOAT16, 0;
    if (!strcasecmp(s, "int")) return *t = GCOLL_INT32, 0;
    return -1;
}

static int parse_impl(const char *s, gcoll_bench_opts_t *o)
{
    int g = !strcmp(s, "gcoll"), m = !strcmp(s, "mpi"), b = !strcmp(s, "both");
    if (!g && !m && !b) return -1;
    o->use[GCOLL_BENCH_GCOLL] = g || b;
    o->use[GCOLL_BENCH_MPI] = m || b;
    return 0;
}

void gcoll_bench_default_iters(size_t bytes, long *iters, long *warmup)
{
    /* OSU's split between small and large messages, with a third step so the
     * largest sizes stay quick on a small machine. */
    if (bytes <= MIB) *iters = 1000, *warmup = 100;
    else if (bytes <= 16 * MIB) *iters = 100, *warmup = 10;
    else *iters = 50, *warmup = 5;
}

enum { OPT_IMPL = 256, OPT_ALGO, OPT_ALGOS, OPT_CSV, OPT_JSON, OPT_BLOCKS };

static const struct option long_opts[] = {
    { "message-size", required_argument, NULL, 'm' },
    { "iterations",   required_argument, NULL, 'i' },
    { "warmup",       required_argument, NULL, 'x' },
    { "full",         no_argument,       NULL, 'f' },
    { "validation",   no_argument,       NULL, 'c' },
    { "accelerator",  required_argument, NULL, 'd' },
    { "type",         required_argument, NULL, 'T' },
    { "root",         required_argument, NULL, 'r' },
    { "help",         no_argument,       NULL, 'h' },
    { "impl",         required_argument, NULL, OPT_IMPL },
    { "algo",         required_argument, NULL, OPT_ALGO },
    { "algos",        required_argument, NULL, OPT_ALGOS },
    { "csv",          required_argument, NULL, OPT_CSV },
    { "json",         required_argument, NULL, OPT_JSON },
    { "blocks",       required_argument, NULL, OPT_BLOCKS },
    { NULL, 0, NULL, 0 }
};

/* --algos: names split at commas into o->algos (no empty names). */
static int parse_algos(const char *arg, gcoll_bench_opts_t *o)
{
    char *save = NULL;
    if (strlen(arg) >= sizeof o->algos_buf) return -1;
    strcpy(o->algos_buf, arg);
    o->nalgos = 0;
    for (char *t = strtok_r(o->algos_buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (o->nalgos == GCOLL_BENCH_MAXVAR) return -1;
        o->algos[o->nalgos++] = t;
    }
    return o->nalgos ? 0 : -1;
}

/* One option; 0, or -1 with *what naming the bad one. */
static int parse_one(int c, const char *arg, gcoll_bench_opts_t *o, const char **what)
{
    long v;
    switch (c) {
    case 'm': *what = "-m [MIN:]MAX"; return parse_range(arg, o);
    case 'i': *what = "-i N (N >= 1)"; return parse_long(arg, 1, &o->iters);
    case 'x': *what = "-x N (N >= 0)"; return parse_long(arg, 0, &o->warmup);
    case 'f': o->full = 1; return 0;
    case 'c': o->validate = 1; return 0;
    case 'd':
        *what = "-d host|cuda|gcoll|malloc";
        if (!strcmp(arg, "host")) return o->mem = GCOLL_BENCH_MEM_HOST, 0;
        if (!strcmp(arg, "cuda")) return o->mem = GCOLL_BENCH_MEM_CUDA, 0;
        if (!strcmp(arg, "gcoll")) return o->mem = GCOLL_BENCH_MEM_GCOLL, 0;
        if (!strcmp(arg, "malloc")) return o->mem = GCOLL_BENCH_MEM_MALLOC, 0;
        return -1;
    case 'T': *what = "-T DTYPE"; return parse_dtype(arg, &o->dtype);
    case 'r':
        *what = "-r R (R >= 0)";
        if (parse_long(arg, 0, &v)) return -1;
        return o->root = (int)v, 0;
    case OPT_IMPL: *what = "--impl gcoll|mpi|both"; return parse_impl(arg, o);
    case OPT_ALGO: o->algo = arg; return 0;
    case OPT_ALGOS: *what = "--algos A,B,... (at most 16 names)"; return parse_algos(arg, o);
    case OPT_CSV: o->csv = arg; return 0;
    case OPT_JSON: o->json = arg; return 0;
    case OPT_BLOCKS:
        *what = "--blocks N (N >= 1)";
        if (parse_long(arg, 1, &v)) return -1;
        return o->blocks = (int)v, 0;
    default: *what = NULL; return -1;
    }
}

int gcoll_bench_parse(int argc, char **argv, const gcoll_bench_coll_t *coll, int rank,
                      gcoll_bench_opts_t *o)
{
    const char *what = NULL;
    int c;
    *o = (gcoll_bench_opts_t){ .min_size = 4, .max_size = MIB, .iters = -1, .warmup = -1,
                               .dtype = GCOLL_FLOAT32, .blocks = 5 };
    o->use[GCOLL_BENCH_GCOLL] = 1;
    opterr = rank == 0;   /* getopt's own complaints, once */
    while ((c = getopt_long(argc, argv, "m:i:x:fcd:T:r:h", long_opts, NULL)) != -1) {
        if (c == 'h') {
            if (rank == 0) usage(argv[0], coll);
            return 0;
        }
        if (parse_one(c, optarg, o, &what) != 0) {
            if (rank == 0 && what)
                fprintf(stderr, "%s: bad value '%s' for %s\n", argv[0], optarg, what);
            if (rank == 0) fprintf(stderr, "%s: -h for help\n", argv[0]);
            return GCOLL_BENCH_EXIT_USAGE;
        }
    }
    if (optind < argc) {
        if (rank == 0) fprintf(stderr, "%s: unexpected argument '%s' (-h for help)\n",
                               argv[0], argv[optind]);
        return GCOLL_BENCH_EXIT_USAGE;
    }
    if (o->nalgos && (GCOLL_BENCH_OVERLAP(coll) || o->algo || o->csv || o->json ||
                      o->use[GCOLL_BENCH_MPI])) {
        if (rank == 0) fprintf(stderr, "%s: --algos times libgcoll alone, blocking calls, on "
                               "stdout: not with --algo, --impl mpi|both, --csv, --json or an "
                               "overlap benchmark (-h for help)\n", argv[0]);
        return GCOLL_BENCH_EXIT_USAGE;
    }
    if (GCOLL_BENCH_OVERLAP(coll) && (o->csv || o->json)) {
        if (rank == 0) fprintf(stderr, "%s: --csv and --json are not available in the overlap "
                               "benchmarks (-h for help)\n", argv[0]);
        return GCOLL_BENCH_EXIT_USAGE;
    }
    return -1;
}
