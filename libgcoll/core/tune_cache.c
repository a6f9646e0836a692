/* SPDX-License-Identifier: BSD-3-Clause */
/* The calibration cache (tune_cache.h, docs/TUNING.md): the key of a
 * communicator's shape on this machine, the entry's file, reading and
 * checking it, and gcoll_comm_create's step that uses an entry or measures
 * one (core/calibrate.c) and writes it.
 *
 * Why calibration runs at communicator creation: it is the one collective
 * moment before the application's own calls, so no user-timed collective
 * ever pays for it, and all ranks are there to take part.  Rank 0 alone
 * touches the file system; the rows reach the other ranks as the text rank
 * 0 read or wrote, parsed by the same parser, so all ranks choose alike. */
#define _GNU_SOURCE   /* sched_getaffinity, CPU_COUNT, dladdr */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include "base/alloc.h"
#include "core/calibrate.h"
#include "core/comm.h"
#include "core/engine.h"
#include "core/request_pool.h"
#include "core/select.h"
#include "core/select_online.h"
#include "core/tune_cache.h"
#include "core/tune_table.h"
#include "base/config.h"
#include "base/log.h"
#include "base/status.h"

/* Bump when what calibration measures or how it derives rows changes: old
 * entries then no longer match and are measured again. */
/* 2: the application's MPI_Allreduce timed too, mpi rows; 3: disturbed sizes timed again;
 * 4: allgather measured too; 5: the node's algorithms timed in their faster write way,
 * allgather up to the block that fills MAX_BYTES; 6: bcast measured too, from BCAST_MIN;
 * 7: page-aligned buffers, the candidates in a new order each round (base/shuffle.h),
 * bcast rows from BCAST_MIN, write ways timed in three rounds of 1 MiB;
 * 8: 5 ms blocks, no two-level candidates on one node, no write way for a
 * candidate that does not touch the segment; 9: rows name their close rivals (try=);
 * 10: allgather's and bcast's single copy (shm_cma) among the candidates, bcast
 * measured up to 16 MiB; 11: allgather up to the block whose results fill
 * AG_NODE_BYTES on the node, bcast up to the size whose copies fill it (at
 * most BCAST_TOP) */
#define CALIB_FORMAT 11

/* What is measured: allreduce (the collective that matters most to the
 * applications we serve) at ten sizes from 8 B to 16 MiB, 8x apart while
 * latency dominates and 4x from 4 KiB, plus up to four midpoints where
 * neighbouring winners differ; its libgcoll algorithms and the
 * application's MPI_Allreduce, whose wins become mpi rows for the drop-in.
 * Then allgather, the same sizes per rank while the gathered result fits
 * MAX_BYTES, the block that fills it, and the one whose results fill
 * AG_NODE_BYTES on the node (the largest one's winner takes every size
 * above; calib_plan_sizes): whether the
 * node's segment (two copies) or a transport's single copy (UCX over CMA)
 * moves a block faster differs between machines by 1.4-1.8x either way
 * (docs/TUNING.md).  Then bcast from BCAST_MIN, for the same reason: on an
 * Intel Xeon guest (2 ranks, 2026-12-07) the transport's binomial tree, one
 * UCX rendezvous read by CMA, took 12 us at 256 KiB and 24 at 512 KiB
 * against the segment's 16-17 and 33, and lost below 128 KiB and from
 * 2 MiB; on the Zen 4 guests the segment won at every size.  Below
 * BCAST_MIN the segment's ring (0.1-1.1 us) beat the transports by 1.5-2x
 * on both, and timing those sizes cost a second more: the entry's bcast
 * rows start at BCAST_MIN and the built-in ones serve the sizes below
 * (the 16 KiB winner, scatter_allgather, once took 8 KiB to 0.92 us
 * against shm's 0.66).  The other
 * collectives keep the built-in rows. */
static const gcoll_coll_t calib_colls[] = { GCOLL_COLL_ALLREDUCE, GCOLL_COLL_ALLGATHER,
                                             GCOLL_COLL_BCAST };
static const size_t calib_sizes[] = { 8, 64, 512, 4u << 10, 16u << 10, 64u << 10, 256u << 10,
                                      1u << 20, 4u << 20, 16u << 20 };
#define NCOLLS     (sizeof(calib_colls) / sizeof(calib_colls[0]))
#define NSIZES     ((int)(sizeof(calib_sizes) / sizeof(calib_sizes[0])))
#define MAX_BYTES  (16u << 20)   /* allreduce's and bcast's largest size */
/* Allgather's largest result: at least MAX_BYTES, and large enough that the
 * node's results (P of them) take AG_NODE_BYTES, past any cache.  Where they
 * fit the caches the copies through them win; past them the segment's
 * streamed ones do, and the winner at a cache-sized result was a poor
 * guide above it: Intel Xeon guest, 2 ranks, 2026-12-07, blocks of 8 MiB
 * (16 MiB results) shm_cma 1.46-1.63 ms, ring 1.49-1.51, shm 1.96-2.06;
 * of 32 MiB (the peer report's largest) shm 8.0-8.8, shm_cma 8.3-9.9,
 * rdouble (that entry's winner from 8 MiB) 10.8-12.0. */
#define AG_NODE_BYTES (128u << 20)
#define BCAST_MIN  (16u << 10)   /* bcast's smallest size measured, where its rows start */
#define BCAST_MAX  (16u << 20)   /* ... and its largest of calib_sizes */
/* ... then one past the caches, as for allgather (ag_result_max), at most
 * this: 3 ranks on 2 cores (Intel Xeon guest, 2026-12-07), the 16 MiB
 * winner scatter_allgather (level with shm there: 2.2-3.2 against 2.5-2.7 ms)
 * took 32 MiB in 8.2-9.1 ms, shm's 5.1-5.6. */
#define BCAST_TOP  (32u << 20)

/* The sizes coll measures on P ranks, into sizes[NSIZES + 2]: calib_sizes,
 * for bcast from BCAST_MIN to BCAST_MAX and the size whose copies fill
 * ag_result_max(P, nodes) on the node (at most BCAST_TOP), for allgather those whose result
 * fits MAX_BYTES, the block that fills it, and the block whose result
 * fills ag_result_max(P, nodes) (one more size, not every calib_sizes one up to
 * it: 16 MiB blocks at 2 ranks would cost 3-4 ms a call, and the two
 * winners' crossover is found by gcoll_calib_refine).  The largest
 * size's winner takes every size above, and a block 4x below the
 * buffers' limit was a poor guide: on the Zen 4 guest's busy state
 * (2 ranks) shm and rdouble were level at 4 MiB blocks (703 against
 * 667 us), rdouble won that size by the noise and took 8-32 MiB blocks,
 * where shm is 1.75x faster (8 MiB: 1369 against 2404 us). */
/* On several nodes (nodes > 1) no size past the caches: the network bounds
 * those calls there, not the node's copies, and at 4 ranks as 2 simulated
 * nodes on 2 cores they made the calibration 10.5 s long (8.0-8.7 without). */
static size_t ag_result_max(int P, int nodes)
{
    size_t node = AG_NODE_BYTES / (size_t)P;
    return nodes == 1 && node > MAX_BYTES ? node : MAX_BYTES;
}

static int calib_plan_sizes(gcoll_coll_t coll, int P, int nodes, size_t *sizes)
{
    int n = 0;
    for (int i = 0; i < NSIZES; i++) {
        size_t b = calib_sizes[i];
        if (coll == GCOLL_COLL_ALLGATHER && b * (size_t)P > MAX_BYTES) continue;
        if (coll == GCOLL_COLL_BCAST && (b < BCAST_MIN || b > BCAST_MAX)) continue;
        sizes[n++] = b;
    }
    if (!n) return n;
    size_t node_max = ag_result_max(P, nodes);
    if (coll == GCOLL_COLL_BCAST) {
        size_t top = (node_max < BCAST_TOP ? node_max : BCAST_TOP) / sizeof(float) * sizeof(float);
        if (top > sizes[n - 1]) sizes[n++] = top;
    }
    if (coll != GCOLL_COLL_ALLGATHER) return n;
    size_t fill = MAX_BYTES / (size_t)P / sizeof(float) * sizeof(float);
    size_t top = node_max / (size_t)P / sizeof(float) * sizeof(float);
    if (fill > sizes[n - 1]) sizes[n++] = fill;
    if (top > sizes[n - 1]) sizes[n++] = top;
    return n;
}
#define MAX_REFINE 4

/* ---- the key ------------------------------------------------------------- */

/* The first line of the MPI library's version: its collectives are a
 * candidate, so another MPI (or version) is another machine. */
static void mpi_library(char *buf, size_t len)
{
    char v[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int n = 0;
    if (MPI_Get_library_version(v, &n) != MPI_SUCCESS) v[0] = '\0';
    v[sizeof v - 1] = '\0';
    char *nl = strchr(v, '\n');
    if (nl) *nl = '\0';
    snprintf(buf, len, "%.100s", v[0] ? v : "unknown");
}

static void trim(char *s)
{
    char *b = s, *e = s + strlen(s);
    while (*b == ' ' || *b == '\t') b++;
    while (e > b && (e[-1] == '\n' || e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r')) e--;
    memmove(s, b, (size_t)(e - b));
    s[e - b] = '\0';
    for (char *p = s; *p; p++)
        if (*p == '"' || *p == '\n') *p = '\'';
}

/* /proc/cpuinfo's model name (x86 and most others), or the implementer and
 * part numbers (arm64), or the machine type. */
static void cpu_model(char *buf, size_t len)
{
    char line[512], impl[64] = "", part[64] = "";
    FILE *f = fopen("/proc/cpuinfo", "r");
    buf[0] = '\0';
    while (f && !buf[0] && fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (!colon) continue;
        *colon = '\0';
        trim(line);
        char *v = colon + 1;
        trim(v);
        if (!strcmp(line, "model name") || !strcmp(line, "cpu model")) snprintf(buf, len, "%s", v);
        else if (!strcmp(line, "CPU implementer") && !impl[0]) snprintf(impl, sizeof impl, "%s", v);
        else if (!strcmp(line, "CPU part") && !part[0]) snprintf(part, sizeof part, "%s", v);
    }
    if (f) fclose(f);
    struct utsname u;
    if (!buf[0] && impl[0]) snprintf(buf, len, "implementer %s part %s", impl, part);
    else if (!buf[0]) snprintf(buf, len, "%s", uname(&u) == 0 ? u.machine : "unknown");
}

static const char *yes(int v)
{
    return v ? "yes" : "no";
}

/* The binary that runs the calibrated algorithms: the size and modification
 * time of the loaded libgcoll.  Rows measured by another build are stale: a
 * cache written before the repeated-call short path (0395c28, small calls
 * 20% faster) kept handing 8-128 B allreduces to MPI, 1.4x slower than
 * libgcoll had become.  A rebuilt or reinstalled library measures again. */
static void library_id(char *buf, size_t len)
{
    Dl_info info;
    struct stat st;
    if (dladdr((void *)gcoll_tune_cache_key, &info) && info.dli_fname &&
        stat(info.dli_fname, &st) == 0)
        snprintf(buf, len, "%lld-%lld", (long long)st.st_size, (long long)st.st_mtime);
    else
        snprintf(buf, len, "unknown");
}

void gcoll_tune_cache_key(char *buf, size_t len, const gcoll_tune_cache_shape_t *s)
{
    char cpu[256], mpi[128], lib[48];
    cpu_model(cpu, sizeof cpu);
    mpi_library(mpi, sizeof mpi);
    trim(mpi);
    library_id(lib, sizeof lib);
    snprintf(buf, len,
             "libgcoll=%d.%d.%d build=%s calibration=%d cpu=\"%s\" cores=%ld ranks=%d nodes=%d "
             "ppn=%d uniform=%s simulated=%s oversubscribed=%s bound=%s shm=%s stream=%s "
             "transport=%s mpi=\"%s\"",
             GCOLL_VERSION_MAJOR, GCOLL_VERSION_MINOR, GCOLL_VERSION_PATCH, lib, CALIB_FORMAT, cpu,
             sysconf(_SC_NPROCESSORS_ONLN), s->ranks, s->nodes, s->ppn, yes(s->uniform),
             yes(s->simulated), yes(s->oversubscribed), yes(s->bound), yes(s->shm),
             gcoll_shm_stream_name((gcoll_shm_stream_t)s->shm_stream), s->transport, mpi);
}

/* Oversubscribed as the segment's waiters decide it (shm/shm_segment.c):
 * a host's ranks outnumber the CPUs they may run on together (their
 * affinity masks' union), so that --bind-to none and a binding to one core
 * each count alike, and a container's CPU limit counts.  Bound: a rank's
 * mask is narrower than the online CPUs; where ranks share cores, whether
 * the scheduler may move them decides which algorithms win (two ranks of a
 * node on one core make the segment's hand-offs cost a scheduler turn). */
void gcoll_tune_cache_host_facts(MPI_Comm mpi_comm, gcoll_tune_cache_shape_t *shape)
{
    MPI_Comm host;
    int n = 1, mine[2] = { 0, 0 }, any[2] = { 0, 0 };
    cpu_set_t set, all;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) != 0) CPU_ZERO(&set);
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    mine[1] = CPU_COUNT(&set) > 0 && online > 0 && CPU_COUNT(&set) < online;
    if (MPI_Comm_split_type(mpi_comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &host) == MPI_SUCCESS) {
        MPI_Comm_size(host, &n);
        int got = MPI_Allreduce(&set, &all, (int)sizeof(cpu_set_t), MPI_UNSIGNED_CHAR, MPI_BOR,
                                host) == MPI_SUCCESS;
        MPI_Comm_free(&host);
        int cpus = got ? CPU_COUNT(&all) : 0;   /* a failed union says nothing */
        mine[0] = cpus > 0 && n > cpus;
    }
    if (MPI_Allreduce(mine, any, 2, MPI_INT, MPI_MAX, mpi_comm) != MPI_SUCCESS)
        any[0] = any[1] = 0;   /* undefined output: the facts are unknown, say neither */
    shape->oversubscribed = any[0];
    shape->bound = any[1];
}

/* ---- where ------------------------------------------------------------------- */

int gcoll_tune_cache_dir(const gcoll_config_t *cfg, char *dir, size_t len, const char **why)
{
    const char *v = cfg->tune_cache, *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
    if (!strcasecmp(v, "off")) { *why = "GCOLL_TUNE_CACHE=off"; return -1; }
    if (v[0]) snprintf(dir, len, "%s", v);
    else if (x && x[0] == '/') snprintf(dir, len, "%s/gcoll", x);   /* the spec: absolute only */
    else if (h && h[0]) snprintf(dir, len, "%s/.cache/gcoll", h);
    else { *why = "neither XDG_CACHE_HOME nor HOME is set"; return -1; }
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/') dir[--n] = '\0';
    return 0;
}

/* FNV-1a, 64 bits: the part of the file name that tells keys apart. */
static uint64_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

int gcoll_tune_cache_path(char *buf, size_t len, const char *dir,
                          const gcoll_tune_cache_shape_t *s, const char *key)
{
    int n = snprintf(buf, len, "%s/%dr-%dx%d-%s-%016llx.tbl", dir, s->ranks, s->nodes, s->ppn,
                     s->transport, (unsigned long long)hash(key));
    if (n >= 0 && (size_t)n < len) return 0;
    if (len) buf[0] = '\0';
    return -1;
}

/* ---- reading --------------------------------------------------------------------- */

/* The value of the file's "# key: " line, cut at its end in place; NULL if
 * there is none. */
static char *key_line(char *text)
{
    for (char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
        if (!strncmp(l, "# key: ", 7)) {
            char *v = l + 7, *e = strchr(v, '\n');
            if (e) *e = '\0';
            return v;
        }
    return NULL;
}

gcoll_tune_cache_state_t gcoll_tune_cache_read(const char *path, const char *key, char **text,
                                               char *why, size_t why_len)
{
    struct stat sb;
    char *t = NULL;
    *text = NULL;
    if (stat(path, &sb) != 0 && errno == ENOENT) return GCOLL_TUNE_CACHE_MISSING;
    int level = gcoll_log_level;
    gcoll_log_level = -1;   /* the caller's warning says it once */
    gcoll_status_t st = gcoll_tune_read_file(path, &t);
    gcoll_log_level = level;
    if (st != GCOLL_SUCCESS) {
        snprintf(why, why_len, "%s", gcoll_last_error());
        gcoll_error_clear();
        return GCOLL_TUNE_CACHE_INVALID;
    }
    char *copy = gcoll_strdup(t), *found = copy ? key_line(copy) : NULL;
    int same = found && !strcmp(found, key);
    if (!same) snprintf(why, why_len, found ? "it holds the entry of another key (%.300s)"
                                            : "it has no '# key:' line", found);
    free(copy);
    if (!same) {
        free(t);
        return GCOLL_TUNE_CACHE_INVALID;
    }
    gcoll_tune_table_t tab;
    gcoll_tune_table_init(&tab);
    gcoll_log_level = -1;
    st = gcoll_tune_parse_from(&tab, t, path, GCOLL_TUNE_FROM_CACHE);
    gcoll_log_level = level;
    size_t nrows = tab.nrows;
    gcoll_tune_table_fini(&tab);
    if (st != GCOLL_SUCCESS || nrows == 0) {
        snprintf(why, why_len, "%s", st != GCOLL_SUCCESS ? gcoll_last_error() : "it has no rows");
        gcoll_error_clear();
        free(t);
        return GCOLL_TUNE_CACHE_INVALID;
    }
    *text = t;
    return GCOLL_TUNE_CACHE_FOUND;
}

/* ---- writing -------------------------------------------------------------------- */

static int mkdir_p(const char *dir)
{
    char p[GCOLL_TUNE_CACHE_PATH_MAX];
    snprintf(p, sizeof p, "%s", dir);
    for (char *s = p + 1; *s; s++)
        if (*s == '/') {
            *s = '\0';
            if (mkdir(p, 0755) != 0 && errno != EEXIST) return -1;
            *s = '/';
        }
    return mkdir(p, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

/* path's content becomes text, or stays what it was: a temporary file in
 * the same directory, renamed over it. */
static int write_atomic(const char *path, const char *text)
{
    char tmp[GCOLL_TUNE_CACHE_PATH_MAX + 16];
    snprintf(tmp, sizeof tmp, "%s.XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0) return -1;
    size_t n = strlen(text), off = 0;
    while (off < n) {
        ssize_t w = write(fd, text + off, n - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        off += (size_t)w;
    }
    int ok = off == n && fchmod(fd, 0644) == 0 && fsync(fd) == 0;
    int saved = errno;
    ok = close(fd) == 0 && ok && rename(tmp, path) == 0;
    if (!ok) {
        saved = errno ? errno : saved;
        unlink(tmp);
        errno = saved;
    }
    return ok ? 0 : -1;
}

/* ---- measuring ----------------------------------------------------------------------- */

static void shape_words(char *buf, size_t len, const gcoll_tune_cache_shape_t *s)
{
    if (s->nodes == 1) snprintf(buf, len, "%d ranks, 1 node", s->ranks);
    else snprintf(buf, len, "%d ranks, %d %snodes of %s%d", s->ranks, s->nodes,
                  s->simulated ? "simulated " : "", s->uniform ? "" : "up to ", s->ppn);
}

static void coll_list(char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < NCOLLS && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? (i + 1 == NCOLLS ? " and " : ", ") : "",
                              gcoll_coll_name(calib_colls[i]));
}

/* Where a node's ranks share CPUs and are not bound, the kernel places
 * them, and some algorithms run far apart from one launch to the next by
 * where it put them (4 ranks as 2 nodes on 2 CPUs, 64 KiB allreduce:
 * hier_leader 44-49 or 75-87 us, 2026-12-05; rdouble 27-29 or 42-44,
 * 2026-12-07), while one launch's calibration sees one placement.  So
 * there the rows name as rivals every algorithm within UNPLACED_RIVALS of
 * the winner, for the job's own calls to time (core/select_online.h), and
 * the leader-based allreduce, the most placement-bound (half of each node
 * idle while its leader works), is a rival only: where no rivals are
 * tried (the smallest and the largest calls) a lucky placement would
 * otherwise cache it for every launch (8 B: 3.95 us where hier took 2.30). */
#define UNPLACED_RIVALS 1.6
#define UNPLACED_RIVAL_ONLY "hier_leader"

static int unplaced(const gcoll_tune_cache_shape_t *s)
{
    return s->oversubscribed && !s->bound;
}

/* Rank 0's file text: what, when, where, the medians, the rows. */
static char *entry_text(const gcoll_tune_cache_shape_t *s, const char *key,
                        gcoll_calib_sweep_t *const *w, double secs, int blocks,
                        const int *disturbed)
{
    char *buf = NULL, host[256] = "?", when[64] = "?";
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    time_t now = time(NULL);
    gethostname(host, sizeof host);
    host[sizeof host - 1] = '\0';
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S %z", localtime(&now));
    fprintf(f, "# libgcoll calibration cache entry: selection rows measured on this machine for\n"
               "# one shape of communicator (format: docs/TUNING.md).  Used where the key below\n"
               "# matches, after GCOLL_TUNE and GCOLL_TUNE_FILE rows, before the built-in table.\n"
               "# Delete this file to measure again.\n"
               "# key: %s\n"
               "# when: %s; where: host %s; measured by gcoll_comm_create in %.1f s "
               "(%d timed blocks)\n",
            key, when, host, secs, blocks);
    for (size_t i = 0; i < NCOLLS; i++) {
        double med, worst;
        gcoll_calib_noise(w[i], &med, &worst);
        fprintf(f, "# %s: the chosen algorithms' slowest block / fastest: median %.2f, worst "
                   "%.2f (1.00: a steady machine); sizes still disturbed after timing them again: "
                   "%d\n", gcoll_coll_name(w[i]->coll), med, worst, disturbed[i]);
    }
    if (unplaced(s))
        fprintf(f, "# ranks share CPUs unbound: the rows name the algorithms within %.2fx of "
                   "the winner as rivals (try=), timed on the job's own calls; %s is a rival "
                   "only\n", UNPLACED_RIVALS, UNPLACED_RIVAL_ONLY);
    for (size_t i = 0; i < NCOLLS; i++) gcoll_calib_write_medians(f, w[i], " (* = chosen)");
    for (size_t i = 0; i < NCOLLS; i++) gcoll_calib_write_rows(f, w[i], s->nodes, s->nodes, s->ppn);
    if (fclose(f) != 0) { free(buf); return NULL; }
    return buf;
}

/* On one node the two-level algorithms (named hier*) are one level deep:
 * the segment's or the transport's own algorithms with a level's overhead.
 * Over 657 rows of one-node entries (2-5 ranks, both guests) none beat the
 * fastest flat algorithm by more than 3%, and timing them took a fifth of
 * the calibration. */
static void drop_two_level(gcoll_calib_sweep_t *w)
{
    for (int a = w->nalgos - 1; a >= 0; a--)
        if (strncmp(w->algos[a]->name, "hier", 4) == 0) gcoll_calib_drop(w, w->algos[a]->name);
}

/* Measure every collective of calib_colls (collective; all ranks or none). */
static gcoll_status_t measure(gcoll_comm_t c, const gcoll_tune_cache_shape_t *s,
                              gcoll_calib_sweep_t **w, int *blocks, int *disturbed)
{
    gcoll_calib_t k;
    size_t ag_max = ag_result_max(c->size, s->nodes), ag_block = ag_max / (size_t)c->size;
    gcoll_status_t st = gcoll_calib_init(&k, c, ag_block > MAX_BYTES ? ag_block : MAX_BYTES,
                                         ag_max, &gcoll_calib_timing_quick);
    int bad = st != GCOLL_SUCCESS, any = 0;
    if (MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, c->mpi_comm) != MPI_SUCCESS) {
        if (!bad) gcoll_calib_fini(&k);
        return bad ? st : GCOLL_ERROR(GCOLL_ERR_TRANSPORT, "MPI_Allreduce before measuring "
                                                           "failed");
    }
    if (any) {
        if (!bad) gcoll_calib_fini(&k);
        return bad ? st : GCOLL_ERROR(GCOLL_ERR_NO_MEMORY, "another rank could not allocate "
                                                           "its buffers to measure in");
    }
    for (size_t i = 0; i < NCOLLS && st == GCOLL_SUCCESS; i++) {
        size_t sizes[NSIZES + 2];
        gcoll_calib_plan_sizes(w[i], calib_colls[i], sizes,
                               calib_plan_sizes(calib_colls[i], c->size, s->nodes, sizes));
        gcoll_calib_add_mpi(w[i]);
        if (unplaced(s)) {
            w[i]->rival_within = UNPLACED_RIVALS;
            gcoll_calib_rival_only(w[i], UNPLACED_RIVAL_ONLY);
        }
        if (s->nodes == 1) drop_two_level(w[i]);
        /* bcast's smallest size does not speak for those below (BCAST_MIN) */
        if (calib_colls[i] == GCOLL_COLL_BCAST) w[i]->rows_from = BCAST_MIN;
        for (int j = 0; j < w[i]->nsizes && st == GCOLL_SUCCESS; j++)
            st = gcoll_calib_measure(&k, w[i], j);
        if (st == GCOLL_SUCCESS) st = gcoll_calib_refine(&k, w[i], MAX_REFINE);
        if (st == GCOLL_SUCCESS) st = gcoll_calib_confirm(&k, w[i]);
        if (st == GCOLL_SUCCESS) st = gcoll_calib_steady(&k, w[i], &disturbed[i]);
    }
    *blocks = k.timed;
    gcoll_calib_fini(&k);
    return st;
}

/* Leave the communicator as a fresh one: counters from zero, no request
 * keeping 16 MiB of scratch from the measurement. */
static void reset_after_measuring(gcoll_comm_t c)
{
    gcoll_engine_lock();
    memset(&c->stats, 0, sizeof(c->stats));
    gcoll_request_pool_free(c);
    gcoll_engine_unlock();
    memset(c->warned_fallback, 0, sizeof(c->warned_fallback));
}

/* ---- the step at gcoll_comm_create ---------------------------------------------------- */

enum { DO_NOTHING = 0, DO_USE, DO_MEASURE };

typedef struct {
    int  action;                          /* DO_* */
    int  len;                             /* of the text to use (DO_USE) */
    char path[GCOLL_TUNE_CACHE_PATH_MAX];
} plan_t;

static int user_decided(const gcoll_config_t *cfg)
{
    return cfg->algo[0] || cfg->tune[0] || cfg->tune_file[0];
}

/* Rank 0: what to do, and the entry's text where there is one. */
static void plan_rank0(const gcoll_config_t *cfg, const gcoll_tune_cache_shape_t *s,
                       const char *key, plan_t *p, char **text)
{
    char dir[GCOLL_TUNE_CACHE_PATH_MAX], why[600];
    const char *off = NULL;
    p->action = DO_NOTHING;
    if (gcoll_tune_cache_dir(cfg, dir, sizeof dir, &off) != 0) {
        gcoll_info("calibration cache: none (%s)", off);
        return;
    }
    if (gcoll_tune_cache_path(p->path, sizeof p->path, dir, s, key) != 0) {
        gcoll_warn("calibration cache directory %s: its path is too long for an entry's file; "
                   "not measuring", dir);
        return;
    }
    gcoll_tune_cache_state_t state = gcoll_tune_cache_read(p->path, key, text, why, sizeof why);
    if (state == GCOLL_TUNE_CACHE_FOUND) {
        p->action = DO_USE;
        p->len = (int)strlen(*text);
        gcoll_info("calibration cache: rows for this shape read from %s (no measuring)", p->path);
        return;
    }
    if (state == GCOLL_TUNE_CACHE_INVALID)
        gcoll_warn("calibration cache entry %s ignored: %s%s", p->path, why,
                   user_decided(cfg) ? "" : "; measuring again");
    if (user_decided(cfg)) {
        gcoll_info("calibration cache: no entry %s; not measuring, since GCOLL_ALGO, GCOLL_TUNE "
                   "or GCOLL_TUNE_FILE is set", p->path);
        return;
    }
    if (mkdir_p(dir) != 0 || access(dir, W_OK) != 0) {
        gcoll_warn("calibration cache directory %s cannot be written (%s): not measuring; set "
                   "GCOLL_TUNE_CACHE to a writable directory, or to off", dir, strerror(errno));
        return;
    }
    gcoll_info("calibration cache: no entry %s; measuring", p->path);
    p->action = DO_MEASURE;
}

/* All ranks: the rows of text into comm's table, or none anywhere.  text
 * NULL: this rank did not get them (it still takes part, and says no). */
static void use_rows(gcoll_comm_t c, const char *path, const char *text)
{
    const gcoll_tune_table_t *before = c->tune;
    int bad = !text || gcoll_select_use_cache(c, path, text) != GCOLL_SUCCESS, any = 0;
    if (MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, c->mpi_comm) != MPI_SUCCESS) any = 1;
    if (!any) return;
    if (bad && text)
        gcoll_warn("calibration cache entry %s not used: %s", path, gcoll_last_error());
    else if (bad)
        gcoll_warn("calibration cache entry %s not used: its rows did not reach this rank", path);
    gcoll_error_clear();
    c->tune = before;   /* every rank back to the table without cache rows */
    gcoll_select_online_reset(c);
}

static void shape_of(gcoll_comm_t c, gcoll_tune_cache_shape_t *s)
{
    gcoll_tune_key_t k;
    gcoll_select_comm_key(c, &k);
    s->ranks = c->size;
    s->nodes = c->nnodes;
    s->ppn = k.ppn;
    s->uniform = c->nodes_uniform;
    s->simulated = c->cfg.node_size > 0 && c->nnodes > 1;
    s->shm = c->shm != NULL;
    s->shm_stream = c->cfg.shm_stream;
    s->transport = c->tl ? c->tl->name : "?";
    gcoll_tune_cache_host_facts(c->mpi_comm, s);
}

/* Rank 0, after writing an entry some of whose sizes stayed disturbed. */
static void warn_disturbed(gcoll_calib_sweep_t *const *w, const int *disturbed, const char *path)
{
    for (size_t i = 0; i < NCOLLS; i++)
        if (disturbed[i])
            gcoll_warn("calibration: %d sizes of %s were still disturbed after timing them "
                       "again (is another program using these CPUs?); %s may choose poorly at "
                       "them: delete it on a quiet machine to measure again", disturbed[i],
                       gcoll_coll_name(w[i]->coll), path);
}

/* DO_MEASURE on every rank: measure, rank 0 writes the entry; the text
 * rank 0 made, in *text on every rank (NULL if measuring failed). */
static void measure_and_write(gcoll_comm_t c, const gcoll_tune_cache_shape_t *s, const char *key,
                              plan_t *p, char **text)
{
    char what[128], words[128];
    coll_list(what, sizeof what);
    shape_words(words, sizeof words, s);
    if (c->rank == 0) {
        fprintf(stderr, "gcoll: calibrating %s for this machine (%s)... ", what, words);
        fflush(stderr);
    }
    gcoll_calib_sweep_t *w[NCOLLS];
    gcoll_calib_sweep_t *sweeps = gcoll_calloc(NCOLLS, sizeof(*sweeps));
    for (size_t i = 0; i < NCOLLS; i++) w[i] = sweeps ? &sweeps[i] : NULL;
    int bad = !sweeps, any = 0;
    if (MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, c->mpi_comm) != MPI_SUCCESS) any = 1;
    double t0 = MPI_Wtime();
    int level = gcoll_log_level;
    if (level > GCOLL_LOG_WARN) gcoll_log_level = GCOLL_LOG_WARN;   /* no INFO per forced call */
    int blocks = 0, disturbed[NCOLLS] = { 0 };
    gcoll_status_t st = any ? GCOLL_ERROR(GCOLL_ERR_NO_MEMORY, "cannot allocate the sweeps")
                            : measure(c, s, w, &blocks, disturbed);
    gcoll_log_level = level;
    double secs = MPI_Wtime() - t0;
    reset_after_measuring(c);
    *text = NULL;
    p->len = -1;
    if (c->rank == 0 && st == GCOLL_SUCCESS &&
        (*text = entry_text(s, key, w, secs, blocks, disturbed)) != NULL) {
        p->len = (int)strlen(*text);
        if (write_atomic(p->path, *text) == 0) {
            fprintf(stderr, "cached in %s (%.1f s)\n", p->path, secs);
            warn_disturbed(w, disturbed, p->path);
        } else {
            int err = errno;
            fprintf(stderr, "not cached (%.1f s)\n", secs);
            gcoll_warn("calibration cache entry %s cannot be written: %s (the rows serve this "
                       "communicator only)", p->path, strerror(err));
        }
    } else if (c->rank == 0) {
        fprintf(stderr, "failed (%.1f s)\n", secs);
        gcoll_warn("calibration failed: %s; the built-in table serves",
                   st != GCOLL_SUCCESS ? gcoll_last_error() : "cannot allocate the entry's text");
    }
    gcoll_error_clear();
    free(sweeps);
}

gcoll_status_t gcoll_tune_cache_setup(gcoll_comm_t c)
{
    if (c->size < 2) return GCOLL_SUCCESS;   /* nothing to choose between */
    gcoll_tune_cache_shape_t s;
    shape_of(c, &s);
    char key[GCOLL_TUNE_CACHE_KEY_MAX] = "", *text = NULL;   /* rank 0's */
    plan_t p;
    memset(&p, 0, sizeof(p));
    if (c->rank == 0) {
        gcoll_tune_cache_key(key, sizeof key, &s);
        plan_rank0(&c->cfg, &s, key, &p, &text);
    }
    /* The cache is an optimisation: where an exchange fails, its output is
     * undefined and this rank goes on without cache rows (the built-in
     * table serves).  Ranks whose exchange worked carry on with the plan,
     * so a failure on some ranks only cannot be kept in step: under
     * MPI_ERRORS_RETURN it means the communicator is broken anyway. */
    if (MPI_Bcast(&p, (int)sizeof(p), MPI_BYTE, 0, c->mpi_comm) != MPI_SUCCESS) {
        gcoll_warn("calibration cache: MPI_Bcast of rank 0's plan failed; not using the cache");
        free(text);
        return GCOLL_SUCCESS;
    }
    p.path[sizeof(p.path) - 1] = '\0';
    if (p.action == DO_NOTHING) return GCOLL_SUCCESS;
    if (p.action == DO_MEASURE) {
        measure_and_write(c, &s, key, &p, &text);
        if (MPI_Bcast(&p.len, 1, MPI_INT, 0, c->mpi_comm) != MPI_SUCCESS) p.len = -1;
        if (p.len < 0) {
            free(text);
            return GCOLL_SUCCESS;
        }
    }
    if (c->rank != 0) text = p.len >= 0 ? gcoll_malloc((size_t)p.len + 1) : NULL;
    int bad = !text, any = 0;
    if (MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, c->mpi_comm) != MPI_SUCCESS) any = 1;
    if (!any) {
        int got = MPI_Bcast(text, p.len + 1, MPI_CHAR, 0, c->mpi_comm) == MPI_SUCCESS;
        if (got) text[p.len] = '\0';
        use_rows(c, p.path, got ? text : NULL);   /* collective: also without the rows */
    }
    free(text);
    return GCOLL_SUCCESS;
}
