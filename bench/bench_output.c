/* SPDX-License-Identifier: BSD-3-Clause */
/* What the benchmarks print, on rank 0: OSU's header and rows (plus the
 * nccl-tests algbw/busbw columns and final average), and the same numbers as
 * CSV (one record per size, written as each size completes) and JSON
 * (written at the end).  Column names of the files are stable: the plot
 * script and other tools read them. */
#include <stdlib.h>
#include <string.h>
#include "bench_int.h"

static int both(const gcoll_bench_out_t *out)
{
    return out->o->use[GCOLL_BENCH_GCOLL] && out->o->use[GCOLL_BENCH_MPI];
}

/* The implementation whose busbw is "the" Avg bus bandwidth line. */
static int primary(const gcoll_bench_out_t *out)
{
    return out->o->use[GCOLL_BENCH_GCOLL] ? GCOLL_BENCH_GCOLL : GCOLL_BENCH_MPI;
}

static void version_string(char *buf, size_t len)
{
    int v = gcoll_get_version();
    snprintf(buf, len, "%d.%d.%d", v / 10000, v / 100 % 100, v % 100);
}

static void csv_header(gcoll_bench_out_t *out)
{
    fprintf(out->csv, "collective,ranks,dtype,buffers,size_bytes,count,iterations");
    for (int impl = 0; impl < GCOLL_BENCH_NIMPL; impl++) {
        const char *n = gcoll_bench_impl_name(impl);
        if (out->o->use[impl])
            fprintf(out->csv, ",%s_avg_us,%s_min_us,%s_max_us,%s_algbw_GBps,%s_busbw_GBps",
                    n, n, n, n, n);
    }
    fprintf(out->csv, both(out) ? ",ratio_mpi_over_gcoll\n" : "\n");
    fflush(out->csv);
}

int gcoll_bench_out_open(gcoll_bench_out_t *out, const gcoll_bench_coll_t *coll,
                         const gcoll_bench_opts_t *o, int nranks)
{
    *out = (gcoll_bench_out_t){ .coll = coll, .o = o, .nranks = nranks };
    if (o->csv) {
        out->csv = fopen(o->csv, "w");
        if (!out->csv) {
            perror(o->csv);
            return -1;
        }
        csv_header(out);
    }
    return 0;
}

static const char *busbw_formula(const gcoll_bench_coll_t *coll)
{
    double f4 = coll->busbw_factor(4);   /* tells the factors apart */
    if (!coll->has_size) return "none (barrier moves no data)";
    if (f4 == 1.0) return "algbw";
    if (f4 > 1.0) return "algbw * 2(n-1)/n";
    return "algbw * (n-1)/n";
}

/* Overlap benchmarks: OSU's osu_i<coll> columns, per impl with --impl both. */
static void ovl_header_columns(const gcoll_bench_out_t *out)
{
    int f = out->o->full;
    if (!both(out)) {
        printf("# %-10s %17s %17s %17s %17s", "Size", "Overall(us)", "Compute(us)",
               "Pure Comm.(us)", "Overlap(%)");
        if (f)
            printf(" %17s %17s %17s %17s %12s", "Min Overall(us)", "Max Overall(us)",
                   "Post(us)", "Wait(us)", "Iterations");
        printf("\n");
        return;
    }
    printf("# %-10s %17s %17s %17s %17s %17s %17s %17s %17s", "Size", "gcoll Overall(us)",
           "gcoll Compute(us)", "gcoll Pure(us)", "gcoll Overlap(%)", "MPI Overall(us)",
           "MPI Compute(us)", "MPI Pure(us)", "MPI Overlap(%)");
    if (f)
        printf(" %17s %17s %17s %17s %12s", "gcoll Post(us)", "gcoll Wait(us)", "MPI Post(us)",
               "MPI Wait(us)", "Iterations");
    printf("\n");
}

static void ovl_print_row(const gcoll_bench_out_t *out, const gcoll_bench_row_t *r)
{
    const gcoll_bench_ovl_t *g = &r->ov[GCOLL_BENCH_GCOLL], *m = &r->ov[GCOLL_BENCH_MPI];
    const gcoll_bench_ovl_t *p = &r->ov[primary(out)];
    int f = out->o->full;
    if (!both(out)) {
        printf("%-12zu %17.2f %17.2f %17.2f %17.2f", r->size, p->overall, p->compute, p->pure,
               p->overlap);
        if (f)
            printf(" %17.2f %17.2f %17.2f %17.2f %12ld", p->overall_min, p->overall_max,
                   p->post, p->wait, r->iters);
        printf("\n");
        return;
    }
    printf("%-12zu %17.2f %17.2f %17.2f %17.2f %17.2f %17.2f %17.2f %17.2f", r->size,
           g->overall, g->compute, g->pure, g->overlap, m->overall, m->compute, m->pure,
           m->overlap);
    if (f)
        printf(" %17.2f %17.2f %17.2f %17.2f %12ld", g->post, g->wait, m->post, m->wait,
               r->iters);
    printf("\n");
}

/* What the overlap columns mean and who progresses what: the lines that
 * make the gcoll and MPI overlap columns comparable. */
static void ovl_header(const gcoll_bench_out_t *out)
{
    const char *prog = getenv("GCOLL_PROGRESS");
    printf("# Overall = post + compute + wait; Compute = the dummy compute between them, "
           "calibrated\n#   to take Pure Comm. (post + wait, nothing between); Overlap(%%) = "
           "max(0, 100*(1 - (Overall - Compute)/Pure Comm.))\n");
    printf("# The compute is a floating-point loop that makes no libgcoll or MPI call; every "
           "call is\n#   followed by an untimed MPI_Barrier.  Times per call, averaged over "
           "ranks.\n");
    if (out->o->use[GCOLL_BENCH_GCOLL])
        printf("# gcoll: GCOLL_PROGRESS=%s%s: %s\n", prog && *prog ? prog : "auto",
               prog && *prog ? "" : " (unset)",
               prog && !strcmp(prog, "caller")
                   ? "requests advance only inside libgcoll calls (the post and\n#   the wait)"
                   : "a background thread advances requests during the compute\n#   (auto: "
                     "thread unless the transport is mpi without MPI_THREAD_MULTIPLE)");
    if (out->o->use[GCOLL_BENCH_MPI])
#if defined(OPEN_MPI) && OPEN_MPI
        printf("# MPI: Open MPI progresses nonblocking collectives only inside MPI calls, and "
               "the compute\n#   makes none (no MPI_Test, as OSU's default): MPI's overlap is "
               "what its post and wait achieve alone.\n");
#else
        printf("# MPI: this MPI progresses nonblocking collectives only inside MPI calls unless "
               "it runs an\n#   asynchronous progress thread (MPICH: MPIR_CVAR_ASYNC_PROGRESS=1); "
               "the compute makes no MPI call\n#   (no MPI_Test, as OSU's default).\n");
#endif
    if (both(out))
        printf("# gcoll and MPI alternate in %d blocks per size and phase (pure, then "
               "overlapped) on the same\n#   buffers; Pure is the median of the blocks, the "
               "other times are the median block's\n#   (by Overall).\n", out->o->blocks);
    ovl_header_columns(out);
}

/* --algos: the variants' names over their columns. */
static void variants_columns(const gcoll_bench_opts_t *o)
{
    printf("# the variants alternate in %d blocks per size; us per call: median of the "
           "blocks, averaged over ranks\n# %-10s", o->blocks, "Size");
    for (int v = 0; v < o->nalgos; v++) printf(" %14s", o->algos[v]);
    printf("\n");
}

void gcoll_bench_out_variants_row(size_t size, const double *us, int n)
{
    printf("%-12zu", size);
    for (int v = 0; v < n; v++) printf(" %14.2f", us[v]);
    printf("\n");
    fflush(stdout);
}

static void header_columns(const gcoll_bench_out_t *out)
{
    int f = out->o->full;
    if (out->o->nalgos) {
        variants_columns(out->o);
        return;
    }
    if (!both(out)) {
        printf("# %-10s %16s", "Size", "Avg Latency(us)");
        if (f) printf(" %16s %16s %12s", "Min Latency(us)", "Max Latency(us)", "Iterations");
        printf(" %12s %12s\n", "algbw(GB/s)", "busbw(GB/s)");
        return;
    }
    printf("# %-10s %16s %16s %12s", "Size", "gcoll Avg(us)", "MPI Avg(us)", "MPI/gcoll");
    if (f)
        printf(" %14s %14s %14s %14s %12s", "gcoll Min(us)", "gcoll Max(us)", "MPI Min(us)",
               "MPI Max(us)", "Iterations");
    printf(" %14s %14s %14s %14s\n", "gcoll algbw", "gcoll busbw", "MPI algbw", "MPI busbw");
}

void gcoll_bench_out_header(gcoll_bench_out_t *out)
{
    const gcoll_bench_opts_t *o = out->o;
    char ver[32], mpiver[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    version_string(ver, sizeof ver);
    MPI_Get_library_version(mpiver, &len);
    mpiver[strcspn(mpiver, "\n,")] = '\0';   /* first phrase only */
    printf("# OSU-style libgcoll %s Latency Test\n", out->coll->title);
    printf("# libgcoll %s, %d ranks, %s", ver, out->nranks, mpiver);
    if (out->coll->has_size)
        printf(", dtype %s%s", gcoll_dtype_name(o->dtype), out->coll->reduces ? ", op sum" : "");
    if (out->coll->has_root) printf(", root %d", o->root);
    printf(", %s buffers, impl %s, algo", gcoll_bench_mem_name(o->mem),
           both(out) ? "both" : gcoll_bench_impl_name(primary(out)));
    if (!o->nalgos) printf(" %s", o->algo ? o->algo : "auto");
    for (int v = 0; v < o->nalgos; v++) printf("%s%s", v ? "," : "s ", o->algos[v]);
    printf("\n");
    if (GCOLL_BENCH_OVERLAP(out->coll)) {
        printf("# Size: bytes per rank as OSU counts them\n");
        ovl_header(out);
        fflush(stdout);
        return;
    }
    if (out->coll->has_size)
        printf("# Size: bytes per rank as OSU counts them; algbw = %s/time, busbw = %s "
               "(nccl-tests)\n", out->coll->algbw_bytes(1, 1, 2) > 1.0 ? "ranks*Size" : "Size",
               busbw_formula(out->coll));
    if (both(out))
        printf("# gcoll and MPI alternate in %d blocks per size; latencies are medians of the "
               "blocks.\n# MPI/gcoll = MPI latency / gcoll latency: above 1 means libgcoll is "
               "faster.\n", o->blocks);
    header_columns(out);
    fflush(stdout);
}

static void print_row(const gcoll_bench_out_t *out, const gcoll_bench_row_t *r)
{
    const gcoll_bench_stat_t *g = &r->st[GCOLL_BENCH_GCOLL], *m = &r->st[GCOLL_BENCH_MPI];
    const gcoll_bench_stat_t *p = &r->st[primary(out)];
    int f = out->o->full;
    if (!both(out)) {
        printf("%-12zu %16.2f", r->size, p->avg);
        if (f) printf(" %16.2f %16.2f %12ld", p->min, p->max, r->iters);
        printf(" %12.3f %12.3f\n", p->algbw, p->busbw);
        return;
    }
    printf("%-12zu %16.2f %16.2f %12.3f", r->size, g->avg, m->avg,
           g->avg > 0 ? m->avg / g->avg : 0.0);
    if (f) printf(" %14.2f %14.2f %14.2f %14.2f %12ld", g->min, g->max, m->min, m->max, r->iters);
    printf(" %14.3f %14.3f %14.3f %14.3f\n", g->algbw, g->busbw, m->algbw, m->busbw);
}

static void csv_row(gcoll_bench_out_t *out, const gcoll_bench_row_t *r)
{
    fprintf(out->csv, "%s,%d,%s,%s,%zu,%zu,%ld", out->coll->name, out->nranks,
            gcoll_dtype_name(out->o->dtype), gcoll_bench_mem_name(out->o->mem), r->size,
            r->count, r->iters);
    for (int impl = 0; impl < GCOLL_BENCH_NIMPL; impl++) {
        const gcoll_bench_stat_t *s = &r->st[impl];
        if (out->o->use[impl])
            fprintf(out->csv, ",%.3f,%.3f,%.3f,%.4f,%.4f", s->avg, s->min, s->max, s->algbw,
                    s->busbw);
    }
    if (both(out)) {
        double g = r->st[GCOLL_BENCH_GCOLL].avg;
        fprintf(out->csv, ",%.4f", g > 0 ? r->st[GCOLL_BENCH_MPI].avg / g : 0.0);
    }
    fprintf(out->csv, "\n");
    fflush(out->csv);   /* a long run shows progress in the file too */
}

void gcoll_bench_out_row(gcoll_bench_out_t *out, const gcoll_bench_row_t *row)
{
    if (GCOLL_BENCH_OVERLAP(out->coll)) ovl_print_row(out, row);
    else print_row(out, row);
    fflush(stdout);
    if (out->csv) csv_row(out, row);
    if (out->nrows == out->cap) {
        size_t cap = out->cap ? 2 * out->cap : 32;
        gcoll_bench_row_t *rows = realloc(out->rows, cap * sizeof *rows);
        if (!rows) return;   /* the JSON file will lack rows; stdout has them */
        out->rows = rows, out->cap = cap;
    }
    out->rows[out->nrows++] = *row;
}

static double avg_busbw(const gcoll_bench_out_t *out, int impl)
{
    double sum = 0.0;
    for (size_t k = 0; k < out->nrows; k++) sum += out->rows[k].st[impl].busbw;
    return out->nrows ? sum / (double)out->nrows : 0.0;
}

static void json_row(FILE *f, const gcoll_bench_out_t *out, const gcoll_bench_row_t *r)
{
    fprintf(f, "    {\"size_bytes\": %zu, \"count\": %zu, \"iterations\": %ld", r->size,
            r->count, r->iters);
    for (int impl = 0; impl < GCOLL_BENCH_NIMPL; impl++) {
        const gcoll_bench_stat_t *s = &r->st[impl];
        const char *n = gcoll_bench_impl_name(impl);
        if (out->o->use[impl])
            fprintf(f, ", \"%s_avg_us\": %.3f, \"%s_min_us\": %.3f, \"%s_max_us\": %.3f, "
                    "\"%s_algbw_GBps\": %.4f, \"%s_busbw_GBps\": %.4f", n, s->avg, n, s->min,
                    n, s->max, n, s->algbw, n, s->busbw);
    }
    if (both(out)) {
        double g = r->st[GCOLL_BENCH_GCOLL].avg;
        fprintf(f, ", \"ratio_mpi_over_gcoll\": %.4f", g > 0 ? r->st[GCOLL_BENCH_MPI].avg / g : 0.0);
    }
    fprintf(f, "}");
}

/* The algorithm name goes into JSON verbatim: keep it a plain string. */
static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++)
        if (*s == '"' || *s == '\\') fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s >= 0x20) fputc(*s, f);
    fputc('"', f);
}

static int write_json(const gcoll_bench_out_t *out)
{
    const gcoll_bench_opts_t *o = out->o;
    FILE *f = fopen(o->json, "w");
    char ver[32];
    if (!f) {
        perror(o->json);
        return -1;
    }
    version_string(ver, sizeof ver);
    fprintf(f, "{\n  \"benchmark\": \"gcoll_bench_%s\",\n  \"collective\": \"%s\",\n"
            "  \"library_version\": \"%s\",\n  \"ranks\": %d,\n  \"dtype\": \"%s\",\n"
            "  \"buffers\": \"%s\",\n  \"impls\": [", out->coll->name, out->coll->name, ver,
            out->nranks, gcoll_dtype_name(o->dtype), gcoll_bench_mem_name(o->mem));
    for (int impl = 0, n = 0; impl < GCOLL_BENCH_NIMPL; impl++)
        if (o->use[impl]) fprintf(f, "%s\"%s\"", n++ ? ", " : "", gcoll_bench_impl_name(impl));
    fprintf(f, "],\n  \"algo\": ");
    json_string(f, o->algo ? o->algo : "auto");
    fprintf(f, ",\n  \"busbw_factor\": %.6f,\n  \"results\": [\n",
            out->coll->busbw_factor(out->nranks));
    for (size_t k = 0; k < out->nrows; k++) {
        json_row(f, out, &out->rows[k]);
        fprintf(f, k + 1 < out->nrows ? ",\n" : "\n");
    }
    fprintf(f, "  ]\n}\n");
    return fclose(f) == 0 ? 0 : -1;
}

int gcoll_bench_out_close(gcoll_bench_out_t *out)
{
    int rc = 0;
    if (out->coll->has_size && !out->failed && !GCOLL_BENCH_OVERLAP(out->coll) && !out->o->nalgos) {
        printf("# Avg bus bandwidth : %.4f GB/s\n", avg_busbw(out, primary(out)));
        if (both(out))
            printf("# Avg bus bandwidth (mpi) : %.4f GB/s\n", avg_busbw(out, GCOLL_BENCH_MPI));
    }
    fflush(stdout);
    if (out->csv && fclose(out->csv) != 0) rc = 1;
    if (out->o->json && write_json(out) != 0) rc = 1;
    free(out->rows);
    return rc;
}
