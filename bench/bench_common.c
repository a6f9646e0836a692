/* SPDX-License-Identifier: BSD-3-Clause */
/* The measurement loop shared by every gcoll_bench_<collective>.
 *
 * Per size: fill the inputs, optionally validate (untimed runs with fresh
 * data each, every output element compared with its closed-form value),
 * warm up, then time.  One implementation: one block of iterations between
 * an MPI_Barrier and MPI_Wtime, as OSU does.  --impl both: blocks of gcoll
 * and MPI calls alternate on the same buffers and each side reports the
 * median of its blocks, so a machine that changes speed during the run
 * affects both sides alike.  Latency per rank is then reduced to Avg/Min/Max
 * over ranks on rank 0, which prints the row at once.  The overlap programs
 * (descriptors with the nonblocking posts) share all of this but the timing
 * and statistics, which are bench_overlap.c's.  --algos: one libgcoll
 * communicator per variant (the default selection, or an algorithm forced
 * on it), their blocks alternating as gcoll's and MPI's do: this machine's
 * launches fall into bands of speed that move every variant alike, so
 * variants are compared within one launch, never across launches. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bench_int.h"
#include "bench_mem.h"
#include "base/shuffle.h"

typedef struct {
    const gcoll_bench_coll_t *coll;
    gcoll_bench_opts_t        o;
    gcoll_bench_args_t        a;
    size_t                    send_bytes, recv_bytes;   /* allocated */
    int                       inject;                   /* GCOLL_BENCH_INJECT_ERROR */
    long                      nb_loops;   /* overlap: compute between post and wait */
    gcoll_comm_t              var[GCOLL_BENCH_MAXVAR];  /* --algos: one per variant */
} bench_t;

const char *gcoll_bench_impl_name(int impl)
{
    return impl == GCOLL_BENCH_MPI ? "mpi" : "gcoll";
}

/* A failed collective leaves the peers waiting inside theirs: abort. */
static void run_one(const bench_t *b, int impl)
{
    if (GCOLL_BENCH_OVERLAP(b->coll)) {   /* post, a short compute, wait */
        gcoll_bench_nb_call(b->coll, &b->a, impl, b->nb_loops);
        return;
    }
    if (impl == GCOLL_BENCH_MPI) {
        b->coll->run_mpi(&b->a);
        return;
    }
    gcoll_status_t st = b->coll->run_gcoll(&b->a);
    if (st != GCOLL_SUCCESS) {
        fprintf(stderr, "rank %d: gcoll_%s failed: %s: %s\n", b->a.rank, b->coll->name,
                gcoll_strerror(st), gcoll_last_error());
        MPI_Abort(MPI_COMM_WORLD, GCOLL_BENCH_EXIT_FAIL);
    }
}

static double time_block(const bench_t *b, int impl, long iters)
{
    double t0;
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (long i = 0; i < iters; i++) run_one(b, impl);
    return (MPI_Wtime() - t0) * 1e6 / (double)iters;
}

/* ---- data and validation ------------------------------------------------ */

static void elems_of(const bench_t *b, size_t *send, size_t *recv)
{
    b->coll->buf_elems(b->a.count, b->a.size, send, recv);
}

/* Inputs for data set salt; outputs set to the sentinel so that an output
 * the collective never wrote is caught. */
static void fill(bench_t *b, unsigned salt)
{
    const gcoll_bench_args_t *a = &b->a;
    size_t ns, nr;
    int in_recv = b->coll->input_in_recv;
    elems_of(b, &ns, &nr);
    for (size_t j = 0; j < ns; j++)
        gcoll_bench_elem_set(a->hsend, j, a->dtype, b->coll->input(a, salt, j));
    for (size_t i = 0; i < nr; i++)
        gcoll_bench_elem_set(a->hrecv, i, a->dtype,
                             in_recv && a->rank == a->root ? b->coll->input(a, salt, i)
                                                           : GCOLL_BENCH_SENTINEL);
    gcoll_bench_mem_upload(b->o.mem, a->send, a->hsend, ns * a->dt_size);
    gcoll_bench_mem_upload(b->o.mem, a->recv, a->hrecv, nr * a->dt_size);
}

/* Wrong elements of this rank's output; the first is reported to stderr. */
static size_t check(bench_t *b, int impl, unsigned salt)
{
    const gcoll_bench_args_t *a = &b->a;
    size_t n = b->coll->out_elems(a), bad = 0, first = 0;
    gcoll_bench_mem_download(b->o.mem, a->hrecv, a->recv, n * a->dt_size);
    if (b->inject && a->rank == 0 && n > 0)   /* test hook: prove -c catches it */
        ((unsigned char *)a->hrecv)[0] ^= 0x5a;
    for (size_t i = 0; i < n; i++)
        if (!gcoll_bench_elem_equal(a->hrecv, i, a->dtype, b->coll->output(a, salt, i)))
            if (bad++ == 0) first = i;
    if (bad)
        fprintf(stderr, "rank %d: VALIDATION FAILED: %s %s, count %zu %s: element %zu is %g, "
                "expected %g (%zu of %zu elements wrong)\n", a->rank,
                gcoll_bench_impl_name(impl), b->coll->name, a->count,
                gcoll_dtype_name(a->dtype), first, gcoll_bench_elem_get(a->hrecv, first, a->dtype),
                (double)b->coll->output(a, salt, first), bad, n);
    return bad;
}

/* Two untimed runs per implementation, each on fresh data.  Returns the
 * number of wrong elements over all ranks. */
static long long validate(bench_t *b, unsigned *salt)
{
    long long bad = 0, all = 0;
    for (int v = 0; v < (b->o.nalgos ? b->o.nalgos : 1); v++) {
        if (b->o.nalgos) b->a.gcomm = b->var[v];
        for (int impl = 0; impl < GCOLL_BENCH_NIMPL; impl++)
            for (int k = 0; b->o.use[impl] && k < 2; k++) {
                ++*salt;
                fill(b, *salt);
                run_one(b, impl);
                bad += (long long)check(b, impl, *salt);
            }
    }
    MPI_Allreduce(&bad, &all, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    return all;
}

/* ---- timing ------------------------------------------------------------- */

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

double gcoll_bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* This rank's latency per implementation, in microseconds. */
static long measure(const bench_t *b, long iters, double lat[GCOLL_BENCH_NIMPL])
{
    int both = b->o.use[GCOLL_BENCH_GCOLL] && b->o.use[GCOLL_BENCH_MPI];
    int nb = both ? b->o.blocks : 1;
    long block = both ? (iters / nb > 0 ? iters / nb : 1) : iters;
    double *t = malloc(sizeof(double) * (size_t)nb * GCOLL_BENCH_NIMPL);
    if (!t) MPI_Abort(MPI_COMM_WORLD, GCOLL_BENCH_EXIT_FAIL);
    /* Which side goes first alternates, so neither always runs right after
     * the barrier-synchronised start or on the other's cache footprint. */
    for (int k = 0; k < nb; k++)
        for (int j = 0; j < GCOLL_BENCH_NIMPL; j++) {
            int impl = (j + k) % GCOLL_BENCH_NIMPL;
            if (b->o.use[impl]) t[impl * nb + k] = time_block(b, impl, block);
        }
    for (int impl = 0; impl < GCOLL_BENCH_NIMPL; impl++)
        lat[impl] = b->o.use[impl] ? gcoll_bench_median(t + impl * nb, nb) : 0.0;
    free(t);
    return block * nb;
}

/* --algos: every variant's blocks in turn, in a new order each round
 * (base/shuffle.h says why); us[v] is the median of variant v's blocks,
 * averaged over ranks (on rank 0). */
static void measure_variants(bench_t *b, long iters, double us[GCOLL_BENCH_MAXVAR])
{
    int nv = b->o.nalgos, nb = b->o.blocks < 64 ? b->o.blocks : 64;
    long block = iters / nb > 0 ? iters / nb : 1;
    double t[GCOLL_BENCH_MAXVAR * 64], lat[GCOLL_BENCH_MAXVAR] = { 0 };
    int order[GCOLL_BENCH_MAXVAR];
    for (int k = 0; k < nb; k++) {
        gcoll_shuffle_order(order, nv, (unsigned)k);
        for (int j = 0; j < nv; j++) {
            int v = order[j];
            b->a.gcomm = b->var[v];
            t[v * nb + k] = time_block(b, GCOLL_BENCH_GCOLL, block);
        }
    }
    for (int v = 0; v < nv; v++) lat[v] = gcoll_bench_median(t + v * nb, nb);
    MPI_Reduce(lat, us, nv, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    for (int v = 0; v < nv; v++) us[v] /= b->a.size;
}

static void stats(const bench_t *b, const double lat[GCOLL_BENCH_NIMPL], gcoll_bench_row_t *row)
{
    double sum[GCOLL_BENCH_NIMPL], mn[GCOLL_BENCH_NIMPL], mx[GCOLL_BENCH_NIMPL];
    const gcoll_bench_coll_t *c = b->coll;
    double bytes = c->algbw_bytes(b->a.count, b->a.dt_size, b->a.size);
    MPI_Reduce(lat, sum, GCOLL_BENCH_NIMPL, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(lat, mn, GCOLL_BENCH_NIMPL, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    MPI_Reduce(lat, mx, GCOLL_BENCH_NIMPL, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    for (int impl = 0; impl < GCOLL_BENCH_NIMPL; impl++) {
        gcoll_bench_stat_t *s = &row->st[impl];
        s->avg = sum[impl] / b->a.size, s->min = mn[impl], s->max = mx[impl];
        /* bytes / (us * 1e-6) / 1e9 */
        s->algbw = s->avg > 0 ? bytes / s->avg / 1e3 : 0.0;
        s->busbw = s->algbw * c->busbw_factor(b->a.size);
    }
}

/* ---- setup -------------------------------------------------------------- */

static MPI_Datatype mpi_dtype(gcoll_dtype_t t, int reduces)
{
    switch (t) {
    case GCOLL_INT8:   return MPI_INT8_T;
    case GCOLL_UINT8:  return MPI_UINT8_T;
    case GCOLL_INT32:  return MPI_INT32_T;
    case GCOLL_UINT32: return MPI_UINT32_T;
    case GCOLL_INT64:  return MPI_INT64_T;
    case GCOLL_UINT64: return MPI_UINT64_T;
    case GCOLL_FLOAT32: return MPI_FLOAT;
    case GCOLL_FLOAT64: return MPI_DOUBLE;
    /* MPI has no 16-bit float: fine for moving bytes, not for sums. */
    default: return reduces ? MPI_DATATYPE_NULL : MPI_UINT16_T;
    }
}

/* Combinations the run cannot serve, found before any collective; rank 0
 * says why.  Returns the exit status, or -1 to go on. */
static int check_setup(bench_t *b)
{
    const char *why = NULL;
    int status = GCOLL_BENCH_EXIT_USAGE;
    char buf[256];
    if (b->o.use[GCOLL_BENCH_MPI] && b->a.mpi_dtype == MPI_DATATYPE_NULL)
        why = "--impl mpi/both: MPI has no 16-bit float sum; use --impl gcoll";
    else if (b->coll->has_root && b->o.root >= b->a.size)
        why = "-r: root must be below the number of ranks";
    else if (b->o.mem == GCOLL_BENCH_MEM_CUDA && b->o.use[GCOLL_BENCH_MPI] && !gcoll_bench_mpi_cuda_aware())
        why = "-d cuda with --impl mpi/both needs a CUDA-aware MPI; this one is not";
    if (!why) {
        MPI_Comm node;
        int local;
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
        MPI_Comm_rank(node, &local);
        MPI_Comm_free(&node);
        if (gcoll_bench_mem_init(b->o.mem, local, buf, sizeof buf) != 0)
            why = buf, status = GCOLL_BENCH_EXIT_SKIP;
    }
    /* The device check may differ between ranks: agree on the worst. */
    int mine = why ? status : -1, worst;
    MPI_Allreduce(&mine, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (worst != -1 && b->a.rank == 0)
        fprintf(stderr, "%s: %s\n", b->coll->name, why ? why : "another rank cannot run this");
    return worst;
}

/* The library reads GCOLL_ALGO when a communicator is created: --algos
 * creates each variant's under its own setting. */
static gcoll_status_t variants_create(bench_t *b)
{
    const char *key = b->coll->algo_key ? b->coll->algo_key : b->coll->name;
    gcoll_status_t st = GCOLL_SUCCESS;
    for (int v = 0; v < b->o.nalgos && st == GCOLL_SUCCESS; v++) {
        char env[512];
        snprintf(env, sizeof env, "%s=%s", key, b->o.algos[v]);
        if (strcmp(b->o.algos[v], "auto") != 0) setenv("GCOLL_ALGO", env, 1);
        else unsetenv("GCOLL_ALGO");
        st = gcoll_comm_create(MPI_COMM_WORLD, &b->var[v]);
    }
    unsetenv("GCOLL_ALGO");
    b->a.gcomm = b->var[0];
    return st;
}

static void comms_destroy(bench_t *b)
{
    for (int v = 0; v < b->o.nalgos; v++) gcoll_comm_destroy(b->var[v]);
    if (!b->o.nalgos) gcoll_comm_destroy(b->a.gcomm);
}

static int comm_setup(bench_t *b)
{
    gcoll_status_t st;
    if (b->o.nalgos) {
        st = variants_create(b);
    } else {
        if (b->o.algo) {
            /* The library reads GCOLL_ALGO when the communicator is created. */
            char env[512];
            snprintf(env, sizeof env, "%s=%s",
                     b->coll->algo_key ? b->coll->algo_key : b->coll->name, b->o.algo);
            setenv("GCOLL_ALGO", env, 1);
        }
        st = gcoll_comm_create(MPI_COMM_WORLD, &b->a.gcomm);
    }
    if (st != GCOLL_SUCCESS) {
        if (b->a.rank == 0)
            fprintf(stderr, "%s: gcoll_comm_create failed: %s: %s\n", b->coll->name,
                    gcoll_strerror(st), gcoll_last_error());
        return GCOLL_BENCH_EXIT_FAIL;
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &b->a.mcomm);
    return -1;
}

static int alloc_buffers(bench_t *b, size_t max_count)
{
    gcoll_bench_args_t *a = &b->a;
    size_t ns, nr;
    b->coll->buf_elems(max_count, a->size, &ns, &nr);
    b->send_bytes = ns * a->dt_size, b->recv_bytes = nr * a->dt_size;
    a->send = gcoll_bench_mem_alloc(b->o.mem, b->send_bytes);
    a->recv = gcoll_bench_mem_alloc(b->o.mem, b->recv_bytes);
    int cuda = b->o.mem == GCOLL_BENCH_MEM_CUDA;
    a->hsend = cuda ? malloc(b->send_bytes ? b->send_bytes : 1) : a->send;
    a->hrecv = cuda ? malloc(b->recv_bytes ? b->recv_bytes : 1) : a->recv;
    int ok = a->send && a->recv && a->hsend && a->hrecv, all;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all && a->rank == 0)
        fprintf(stderr, "%s: cannot allocate %zu + %zu bytes of buffers\n", b->coll->name,
                b->send_bytes, b->recv_bytes);
    return all ? -1 : GCOLL_BENCH_EXIT_FAIL;
}

static void free_buffers(bench_t *b)
{
    if (b->o.mem == GCOLL_BENCH_MEM_CUDA) {
        free(b->a.hsend);
        free(b->a.hrecv);
    }
    gcoll_bench_mem_free(b->o.mem, b->a.send);
    gcoll_bench_mem_free(b->o.mem, b->a.recv);
}

/* ---- the run ------------------------------------------------------------ */

/* One size: returns 0, or the exit status when validation failed. */
static int one_size(bench_t *b, gcoll_bench_out_t *out, size_t size, unsigned *salt)
{
    gcoll_bench_row_t row = { .size = size, .count = b->a.count };
    double lat[GCOLL_BENCH_NIMPL];
    size_t ns, nr;
    long iters, warmup;
    elems_of(b, &ns, &nr);
    gcoll_bench_default_iters((ns > nr ? ns : nr) * b->a.dt_size, &iters, &warmup);
    if (b->o.iters > 0) iters = b->o.iters;
    if (b->o.warmup >= 0) warmup = b->o.warmup;
    if (b->o.validate && b->coll->has_size && validate(b, salt) != 0) {
        if (b->a.rank == 0)
            fprintf(stderr, "%s: validation failed at %zu bytes: results differ from the "
                    "expected values (see the rank messages above)\n", b->coll->name, size);
        return GCOLL_BENCH_EXIT_FAIL;
    }
    fill(b, 0);
    for (int v = 0; v < b->o.nalgos; v++) {
        b->a.gcomm = b->var[v];
        for (long i = 0; i < warmup; i++) run_one(b, GCOLL_BENCH_GCOLL);
    }
    for (int impl = 0; !b->o.nalgos && impl < GCOLL_BENCH_NIMPL; impl++)
        for (long i = 0; b->o.use[impl] && i < warmup; i++) run_one(b, impl);
    if (b->o.nalgos) {
        double us[GCOLL_BENCH_MAXVAR];
        measure_variants(b, iters, us);
        if (b->a.rank == 0) gcoll_bench_out_variants_row(size, us, b->o.nalgos);
        return 0;
    }
    if (GCOLL_BENCH_OVERLAP(b->coll)) {
        row.iters = gcoll_bench_overlap_measure(b->coll, &b->o, &b->a, iters, &row);
    } else {
        row.iters = measure(b, iters, lat);
        stats(b, lat, &row);
    }
    if (b->a.rank == 0) gcoll_bench_out_row(out, &row);
    return 0;
}

static int run_sizes(bench_t *b, gcoll_bench_out_t *out)
{
    unsigned salt = 0;
    size_t size = b->o.min_size;
    if (!b->coll->has_size) {
        b->a.count = 0;
        return one_size(b, out, 0, &salt);
    }
    if (size < b->a.dt_size) size = b->a.dt_size;   /* at least one element */
    for (; size <= b->o.max_size; size *= 2) {
        b->a.count = size / b->a.dt_size;
        int rc = one_size(b, out, size, &salt);
        if (rc) return rc;
        if (size > b->o.max_size / 2) break;   /* no overflow past MAX */
    }
    return 0;
}

static void warn_inexact(const bench_t *b)
{
    if (b->a.rank == 0 && b->o.validate && b->coll->reduces &&
        !gcoll_bench_red_exact(b->a.size, b->a.dtype))
        fprintf(stderr, "%s: warning: with %d ranks %s sums can exceed the integers it holds "
                "exactly; -c may report rounding as errors\n", b->coll->name, b->a.size,
                gcoll_dtype_name(b->a.dtype));
    if (b->a.rank == 0 && b->o.validate && !b->coll->has_size)
        printf("# -c: %s moves no data; nothing to validate\n", b->coll->name);
}

static int bench_run(bench_t *b)
{
    gcoll_bench_out_t out = { 0 };
    int rc = -1, orc = 0;
    if ((rc = check_setup(b)) >= 0) return rc;
    if ((rc = comm_setup(b)) >= 0) return rc;
    b->inject = getenv("GCOLL_BENCH_INJECT_ERROR") && atoi(getenv("GCOLL_BENCH_INJECT_ERROR"));
    if (GCOLL_BENCH_OVERLAP(b->coll)) {
        /* Validation and warm-up calls compute 20 us between post and wait,
         * so -c checks the results of overlapped calls. */
        gcoll_bench_compute_calibrate();
        b->nb_loops = gcoll_bench_compute_loops(20.0);
    }
    rc = alloc_buffers(b, b->coll->has_size ? b->o.max_size / b->a.dt_size : 0);
    if (rc < 0 && b->a.rank == 0 && gcoll_bench_out_open(&out, b->coll, &b->o, b->a.size))
        rc = GCOLL_BENCH_EXIT_FAIL;
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);   /* rank 0 may fail to open a file */
    if (rc < 0) {
        if (b->a.rank == 0) gcoll_bench_out_header(&out);
        warn_inexact(b);
        rc = run_sizes(b, &out);
        out.failed = rc != 0;
        if (b->a.rank == 0) orc = gcoll_bench_out_close(&out);
        if (!rc) rc = orc;
    }
    free_buffers(b);
    MPI_Comm_free(&b->a.mcomm);
    comms_destroy(b);
    return rc;
}

int gcoll_bench_main(int argc, char **argv, const gcoll_bench_coll_t *coll)
{
    bench_t b = { .coll = coll };
    int rc;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &b.a.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &b.a.size);
    rc = gcoll_bench_parse(argc, argv, coll, b.a.rank, &b.o);
    if (rc < 0) {
        b.a.dtype = b.o.dtype;
        b.a.dt_size = gcoll_dtype_size(b.o.dtype);
        b.a.mpi_dtype = mpi_dtype(b.o.dtype, coll->reduces);
        b.a.root = coll->has_root ? b.o.root : 0;
        rc = bench_run(&b);
    }
    MPI_Finalize();
    return rc;
}
