/* SPDX-License-Identifier: BSD-3-Clause */
/* The PMPI drop-in (libgcoll_mpi) under a plain MPI program: this program
 * knows nothing of libgcoll.  run_dropin.sh runs it with and without the
 * preload (and with GCOLL_MPI=off) and compares.
 *
 * Every collective the drop-in intercepts, blocking and nonblocking, on
 * MPI_COMM_WORLD, a split, a dup that is freed and a new one made after;
 * integer-valued data, so every result is exact whatever the reduction
 * order, checked against the value computed here and printed as a digest
 * line that run_dropin.sh compares between runs; allreduces that repeat
 * all of a call but one argument (the drop-in keeps its last decision).
 * Also calls the drop-in
 * must hand to MPI (MINLOC, a user op, MPI_BAND, a derived type, count 0,
 * an intercommunicator, in-place alltoall), nonblocking requests mixed
 * with point-to-point ones in MPI_Waitall / Waitany / Waitsome / Test, and
 * the progress case: a rank in a served MPI_Allreduce while its peer's
 * rendezvous send to it must progress first.  The persistent collectives
 * (MPI_Allreduce_init ..., or Open MPI 4.1's MPIX_ spelling, whichever this
 * MPI declares) started several times with new data, by MPI_Start and by
 * MPI_Startall beside persistent point-to-point requests and a persistent
 * collective MPI must take (MINLOC), completed by each wait form; rank 0
 * prints "persistent: PREFIX" (MPI_, MPIX_ or none) for run_dropin.sh.
 *
 *   test_dropin [float]   float: also a non-integer sum (checked within
 *                         rounding, not digested)
 *   test_dropin badinput  erroneous calls under MPI_ERRORS_RETURN: prints the
 *                         error class of each (compared with plain MPI's)
 *   test_dropin sizes N.. one MPI_Allreduce of N floats per argument, each
 *                         result checked, and no other MPI_Allreduce (the
 *                         failures are summed by MPI_Reduce): run_dropin.sh
 *                         counts which sizes the drop-in served
 * Prints "dropin: N checks, 0 failed"; exit 1 on any failure. */
#ifdef HAVE_CONFIG_H
#include "gcoll_build.h"   /* which persistent spelling this MPI declares */
#endif
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The persistent collectives: MPI-4's names, else Open MPI 4.1's MPIX_. */
#if (defined(HAVE_DECL_PMPI_ALLREDUCE_INIT) && HAVE_DECL_PMPI_ALLREDUCE_INIT) || \
    (!defined(HAVE_CONFIG_H) && MPI_VERSION >= 4)
#define PINIT(name) MPI_##name##_init
#define PINIT_PREFIX "MPI_"
#elif defined(HAVE_DECL_PMPIX_ALLREDUCE_INIT) && HAVE_DECL_PMPIX_ALLREDUCE_INIT
#include <mpi-ext.h>
#define PINIT(name) MPIX_##name##_init
#define PINIT_PREFIX "MPIX_"
#else
#define PINIT_PREFIX "none"
#endif

static int rank, size, checks, failures;

static void check(int ok, const char *what)
{
    checks++;
    if (getenv("DROPIN_VERBOSE")) fprintf(stderr, "rank %d: %s %s\n", rank, ok ? "ok" : "FAIL", what);
    if (!ok) {
        failures++;
        fprintf(stderr, "rank %d: FAIL %s\n", rank, what);
    }
}

static uint64_t fnv(const void *p, size_t n, uint64_t h)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static void digest(const char *name, const void *p, size_t n)
{
    /* every rank's digest, gathered by point-to-point (not intercepted) */
    uint64_t h = fnv(p, n, 1469598103934665603ull);
    if (rank == 0) {
        printf("digest %s rank 0 %016llx\n", name, (unsigned long long)h);
        for (int r = 1; r < size; r++) {
            uint64_t o;
            MPI_Recv(&o, 1, MPI_UINT64_T, r, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            printf("digest %s rank %d %016llx\n", name, r, (unsigned long long)o);
        }
    } else {
        MPI_Send(&h, 1, MPI_UINT64_T, 0, 99, MPI_COMM_WORLD);
    }
}

static double val(int r, size_t i) { return (double)((r + 1) + (int)(i % 7)); }

/* allreduce of double/float/int/long/unsigned/int8 with each op */
static void test_allreduce(MPI_Comm comm, const char *tag, size_t n)
{
    int cr, cs;
    MPI_Comm_rank(comm, &cr);
    MPI_Comm_size(comm, &cs);
    char name[128];
    double *d = malloc(n * sizeof *d), *dr = malloc(n * sizeof *dr);
    for (int opi = 0; opi < 4; opi++) {
        MPI_Op op = opi == 0 ? MPI_SUM : opi == 1 ? MPI_MAX : opi == 2 ? MPI_MIN : MPI_PROD;
        for (size_t i = 0; i < n; i++) d[i] = opi == 3 ? (i % 3 ? 1.0 : 2.0) : val(cr, i);
        MPI_Allreduce(d, dr, (int)n, MPI_DOUBLE, op, comm);
        int ok = 1;
        for (size_t i = 0; i < n && ok; i++) {
            double e = 0;
            if (opi == 0) { for (int r = 0; r < cs; r++) e += val(r, i); }
            else if (opi == 1) e = val(cs - 1, i);
            else if (opi == 2) e = val(0, i);
            else e = i % 3 ? 1.0 : ldexp(1.0, cs);
            ok = dr[i] == e;
        }
        snprintf(name, sizeof name, "allreduce double op%d %s n=%zu", opi, tag, n);
        check(ok, name);
        digest(name, dr, n * sizeof *dr);
        /* in place, float */
        float *f = (float *)d;
        for (size_t i = 0; i < n; i++) f[i] = (float)(opi == 3 ? (i % 3 ? 1.0 : 2.0) : val(cr, i));
        MPI_Allreduce(MPI_IN_PLACE, f, (int)n, MPI_FLOAT, op, comm);
        ok = 1;
        for (size_t i = 0; i < n && ok; i++) ok = f[i] == (float)dr[i];
        snprintf(name, sizeof name, "allreduce float in-place op%d %s n=%zu", opi, tag, n);
        check(ok, name);
        digest(name, f, n * sizeof *f);
    }
    int *iv = (int *)d, *ir = (int *)dr;
    for (size_t i = 0; i < n; i++) iv[i] = (int)val(cr, i) * (cr % 2 ? -1 : 1);
    MPI_Allreduce(iv, ir, (int)n, MPI_INT, MPI_SUM, comm);
    int ok = 1;
    for (size_t i = 0; i < n && ok; i++) {
        int e = 0;
        for (int r = 0; r < cs; r++) e += (int)val(r, i) * (r % 2 ? -1 : 1);
        ok = ir[i] == e;
    }
    snprintf(name, sizeof name, "allreduce int %s n=%zu", tag, n);
    check(ok, name);
    digest(name, ir, n * sizeof *ir);
    long *lv = (long *)d, *lr = (long *)dr;
    for (size_t i = 0; i < n; i++) lv[i] = (long)val(cr, i) << 33;
    MPI_Allreduce(lv, lr, (int)n, MPI_LONG, MPI_MAX, comm);
    ok = 1;
    for (size_t i = 0; i < n && ok; i++) ok = lr[i] == (long)val(cs - 1, i) << 33;
    snprintf(name, sizeof name, "allreduce long max %s n=%zu", tag, n);
    check(ok, name);
    unsigned *uv = (unsigned *)d, *ur = (unsigned *)dr;
    for (size_t i = 0; i < n; i++) uv[i] = 0xfffffff0u + (unsigned)cr;
    MPI_Allreduce(uv, ur, (int)n, MPI_UNSIGNED, MPI_SUM, comm);
    unsigned ue = 0;
    for (int r = 0; r < cs; r++) ue += 0xfffffff0u + (unsigned)r;
    ok = 1;
    for (size_t i = 0; i < n && ok; i++) ok = ur[i] == ue;
    snprintf(name, sizeof name, "allreduce unsigned wrap %s n=%zu", tag, n);
    check(ok, name);
    int8_t *bv = (int8_t *)d, *br = (int8_t *)dr;
    for (size_t i = 0; i < n; i++) bv[i] = (int8_t)(cr - 3);
    MPI_Allreduce(bv, br, (int)n, MPI_INT8_T, MPI_MIN, comm);
    ok = 1;
    for (size_t i = 0; i < n && ok; i++) ok = br[i] == -3;
    snprintf(name, sizeof name, "allreduce int8 min %s n=%zu", tag, n);
    check(ok, name);
    free(d);
    free(dr);
}

/* The drop-in keeps its decision for the last blocking allreduce of a
 * thread, keyed by (communicator, type, op, count) and the communicator
 * map's generation: calls that repeat all but one of those, each twice, must
 * each get their own result.  MPI_INT and MPI_FLOAT have one size (a key
 * missing the type would sum ints as floats); world and a split differ in
 * size; a dup freed and made again may get the freed handle back. */
static void test_repeats(void)
{
    enum { N = 37 };
    int iv[N], ir[N];
    float fv[N], fr[N];
    char name[96];
    MPI_Comm half, dup;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    int hs;
    MPI_Comm_size(half, &hs);
    for (int rep = 0; rep < 2; rep++) {
        for (int i = 0; i < N; i++) iv[i] = rank + i;
        MPI_Allreduce(iv, ir, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        int ok = 1;
        for (int i = 0; i < N; i++) ok &= ir[i] == size * i + size * (size - 1) / 2;
        snprintf(name, sizeof name, "repeat int sum world #%d", rep);
        check(ok, name);
        MPI_Allreduce(iv, ir, N, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        ok = 1;
        for (int i = 0; i < N; i++) ok &= ir[i] == size - 1 + i;
        snprintf(name, sizeof name, "repeat int max world #%d", rep);
        check(ok, name);
        for (int i = 0; i < N; i++) fv[i] = 0.5f * (float)(rank + i);
        MPI_Allreduce(fv, fr, N, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        ok = 1;
        for (int i = 0; i < N; i++) ok &= fr[i] == 0.5f * (float)(size * i + size * (size - 1) / 2);
        snprintf(name, sizeof name, "repeat float sum world #%d", rep);
        check(ok, name);
        MPI_Allreduce(MPI_IN_PLACE, fv, N, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        ok = !memcmp(fv, fr, sizeof fv);
        snprintf(name, sizeof name, "repeat float sum world in place #%d", rep);
        check(ok, name);
        for (int i = 0; i < N; i++) iv[i] = 1;
        MPI_Allreduce(iv, ir, N, MPI_INT, MPI_SUM, half);
        ok = 1;
        for (int i = 0; i < N; i++) ok &= ir[i] == hs;
        snprintf(name, sizeof name, "repeat int sum split #%d", rep);
        check(ok, name);
    }
    for (int k = 0; k < 3; k++) {
        MPI_Comm_dup(k % 2 ? half : MPI_COMM_WORLD, &dup);
        for (int i = 0; i < N; i++) iv[i] = 1;
        MPI_Allreduce(iv, ir, N, MPI_INT, MPI_SUM, dup);
        int ok = 1;
        for (int i = 0; i < N; i++) ok &= ir[i] == (k % 2 ? hs : size);
        snprintf(name, sizeof name, "repeat int sum dup %d", k);
        check(ok, name);
        MPI_Comm_free(&dup);
    }
    MPI_Comm_free(&half);
}

static void test_others(MPI_Comm comm, const char *tag, size_t n)
{
    int cr, cs;
    MPI_Comm_rank(comm, &cr);
    MPI_Comm_size(comm, &cs);
    char name[128];
    double *a = malloc(n * cs * sizeof *a), *b = malloc(n * cs * sizeof *b);
    /* reduce, each root, in place at the root */
    for (int root = 0; root < cs; root++) {
        for (size_t i = 0; i < n; i++) a[i] = b[i] = val(cr, i);
        MPI_Reduce(cr == root ? MPI_IN_PLACE : a, cr == root ? b : NULL, (int)n, MPI_DOUBLE,
                   MPI_SUM, root, comm);
        if (cr == root) {
            int ok = 1;
            for (size_t i = 0; i < n && ok; i++) {
                double e = 0;
                for (int r = 0; r < cs; r++) e += val(r, i);
                ok = b[i] == e;
            }
            snprintf(name, sizeof name, "reduce root %d %s n=%zu", root, tag, n);
            check(ok, name);
        }
    }
    /* bcast: doubles, shorts (bytes), each root */
    for (int root = 0; root < cs; root++) {
        for (size_t i = 0; i < n; i++) a[i] = cr == root ? val(root, i) + 0.5 : -1;
        MPI_Bcast(a, (int)n, MPI_DOUBLE, root, comm);
        int ok = 1;
        for (size_t i = 0; i < n && ok; i++) ok = a[i] == val(root, i) + 0.5;
        snprintf(name, sizeof name, "bcast double root %d %s n=%zu", root, tag, n);
        check(ok, name);
        short *s = (short *)b;
        for (size_t i = 0; i < n; i++) s[i] = cr == root ? (short)(i * 3 + root) : 0;
        MPI_Bcast(s, (int)n, MPI_SHORT, root, comm);
        ok = 1;
        for (size_t i = 0; i < n && ok; i++) ok = s[i] == (short)(i * 3 + root);
        snprintf(name, sizeof name, "bcast short root %d %s n=%zu", root, tag, n);
        check(ok, name);
    }
    /* allgather, and in place */
    for (size_t i = 0; i < n; i++) a[i] = val(cr, i);
    MPI_Allgather(a, (int)n, MPI_DOUBLE, b, (int)n, MPI_DOUBLE, comm);
    int ok = 1;
    for (int r = 0; r < cs && ok; r++)
        for (size_t i = 0; i < n && ok; i++) ok = b[r * n + i] == val(r, i);
    snprintf(name, sizeof name, "allgather %s n=%zu", tag, n);
    check(ok, name);
    digest(name, b, n * cs * sizeof *b);
    for (size_t i = 0; i < n * cs; i++) b[i] = -1;
    for (size_t i = 0; i < n; i++) b[cr * n + i] = val(cr, i);
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b, (int)n, MPI_DOUBLE, comm);
    ok = 1;
    for (int r = 0; r < cs && ok; r++)
        for (size_t i = 0; i < n && ok; i++) ok = b[r * n + i] == val(r, i);
    snprintf(name, sizeof name, "allgather in-place %s n=%zu", tag, n);
    check(ok, name);
    /* reduce_scatter_block, and in place */
    for (int ip = 0; ip < 2; ip++) {
        for (size_t i = 0; i < n * cs; i++) a[i] = b[i] = val(cr, i);
        if (ip) MPI_Reduce_scatter_block(MPI_IN_PLACE, b, (int)n, MPI_DOUBLE, MPI_SUM, comm);
        else MPI_Reduce_scatter_block(a, b, (int)n, MPI_DOUBLE, MPI_SUM, comm);
        ok = 1;
        for (size_t i = 0; i < n && ok; i++) {
            double e = 0;
            for (int r = 0; r < cs; r++) e += val(r, cr * n + i);
            ok = b[i] == e;
        }
        if (ip)   /* MPI leaves the rest of the buffer as it was */
            for (size_t i = n; i < n * cs && ok; i++) ok = b[i] == val(cr, i);
        snprintf(name, sizeof name, "reduce_scatter_block%s %s n=%zu", ip ? " in-place" : "",
                 tag, n);
        check(ok, name);
        digest(name, b, n * sizeof *b);
    }
    /* alltoall */
    for (int r = 0; r < cs; r++)
        for (size_t i = 0; i < n; i++) a[r * n + i] = cr * 1000 + r + (double)i / 8;
    MPI_Alltoall(a, (int)n, MPI_DOUBLE, b, (int)n, MPI_DOUBLE, comm);
    ok = 1;
    for (int r = 0; r < cs && ok; r++)
        for (size_t i = 0; i < n && ok; i++) ok = b[r * n + i] == r * 1000 + cr + (double)i / 8;
    snprintf(name, sizeof name, "alltoall %s n=%zu", tag, n);
    check(ok, name);
    digest(name, b, n * cs * sizeof *b);
    MPI_Barrier(comm);
    free(a);
    free(b);
}

static void user_sum(void *in, void *inout, int *len, MPI_Datatype *t)
{
    for (int i = 0; i < *len; i++) ((int *)inout)[i] += ((int *)in)[i];
}

/* Calls that must go to MPI; results checked as MPI defines them. */
static void test_fallbacks(void)
{
    struct { double v; int r; } in = { (double)(rank % 3), rank }, out;
    MPI_Allreduce(&in, &out, 1, MPI_DOUBLE_INT, MPI_MINLOC, MPI_COMM_WORLD);
    check(out.v == 0 && out.r == 0, "minloc");
    MPI_Op op;
    MPI_Op_create(user_sum, 1, &op);
    int x = rank + 1, y = 0;
    MPI_Allreduce(&x, &y, 1, MPI_INT, op, MPI_COMM_WORLD);
    check(y == size * (size + 1) / 2, "user op");
    MPI_Op_free(&op);
    x = 0xff ^ (1 << (rank % 8));
    MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_BAND, MPI_COMM_WORLD);
    int e = 0xff;
    for (int r = 0; r < size; r++) e &= 0xff ^ (1 << (r % 8));
    check(y == e, "band");
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    int p[2] = { rank, 1 }, q[2];
    if (rank == 0) p[0] = 77;
    MPI_Bcast(p, 1, pair, 0, MPI_COMM_WORLD);
    check(p[0] == 77 && p[1] == 1, "derived type bcast");
    MPI_Type_free(&pair);
    MPI_Allreduce(p, q, 0, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    check(1, "count 0");
    int *aa = malloc(size * sizeof(int));
    for (int r = 0; r < size; r++) aa[r] = rank * 100 + r;
    MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, aa, 1, MPI_INT, MPI_COMM_WORLD);
    int ok = 1;
    for (int r = 0; r < size; r++) ok &= aa[r] == r * 100 + rank;
    check(ok, "in-place alltoall");
    free(aa);
    if (size >= 2) {
        MPI_Comm half, inter;
        MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
        MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 ? 0 : 1, 7, &inter);
        int v = rank, s = -1;
        MPI_Allreduce(&v, &s, 1, MPI_INT, MPI_SUM, inter);   /* sum over the other group */
        int es = 0;
        for (int r = 0; r < size; r++) es += r % 2 != rank % 2 ? r : 0;
        check(s == es, "intercommunicator allreduce");
        MPI_Comm_free(&inter);
        MPI_Comm_free(&half);
    }
}

/* Nonblocking collectives mixed with point-to-point in one array. */
static void test_nonblocking(size_t n)
{
    double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *c = malloc(n * size * sizeof *c);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    double esum[1];
    for (int iter = 0; iter < 4; iter++) {
        for (size_t i = 0; i < n; i++) a[i] = val(rank, i);
        MPI_Request r[4];
        int tok = rank, got = -1;
        MPI_Irecv(&got, 1, MPI_INT, left, 5, MPI_COMM_WORLD, &r[0]);
        MPI_Iallreduce(a, b, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r[1]);
        MPI_Isend(&tok, 1, MPI_INT, right, 5, MPI_COMM_WORLD, &r[2]);
        for (size_t i = 0; i < n; i++) c[i] = rank == 0 ? 3.25 : 0;
        MPI_Ibcast(c, (int)n, MPI_DOUBLE, 0, MPI_COMM_WORLD, &r[3]);
        if (iter == 0) {
            MPI_Status st[4];
            MPI_Waitall(4, r, st);
            check(st[0].MPI_SOURCE == left, "waitall status of the receive");
        } else if (iter == 1) {
            int left_ = 4, idx;
            while (left_) {
                MPI_Waitany(4, r, &idx, MPI_STATUS_IGNORE);
                check(idx >= 0 && idx < 4 && r[idx] == MPI_REQUEST_NULL, "waitany index");
                left_--;
            }
        } else if (iter == 2) {
            int done = 0, outc, idx[4];
            while (done < 4) {
                MPI_Waitsome(4, r, &outc, idx, MPI_STATUSES_IGNORE);
                done += outc;
            }
        } else {
            int flag = 0;
            while (!flag) MPI_Testall(4, r, &flag, MPI_STATUSES_IGNORE);
        }
        check(got == left, "point-to-point beside the collectives");
        int ok = 1;
        for (size_t i = 0; i < n && ok; i++) {
            esum[0] = 0;
            for (int q = 0; q < size; q++) esum[0] += val(q, i);
            ok = b[i] == esum[0] && c[i] == 3.25;
        }
        char name[64];
        snprintf(name, sizeof name, "nonblocking mixed, wait form %d", iter);
        check(ok, name);
    }
    /* MPI_Wait / MPI_Test loop / MPI_Request_free on the other forms */
    MPI_Request q;
    for (size_t i = 0; i < n; i++) a[i] = val(rank, i);
    MPI_Ireduce(a, b, (int)n, MPI_DOUBLE, MPI_MAX, size - 1, MPI_COMM_WORLD, &q);
    int flag = 0;
    while (!flag) MPI_Test(&q, &flag, MPI_STATUS_IGNORE);
    check(q == MPI_REQUEST_NULL, "test frees");
    if (rank == size - 1) check(b[1] == val(size - 1, 1), "ireduce");
    double *g = malloc(n * size * sizeof *g);
    MPI_Iallgather(a, (int)n, MPI_DOUBLE, g, (int)n, MPI_DOUBLE, MPI_COMM_WORLD, &q);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    check(g[(size - 1) * n] == val(size - 1, 0), "iallgather");
    for (size_t i = 0; i < n * size; i++) g[i] = val(rank, i);
    MPI_Ireduce_scatter_block(g, b, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &q);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    double e = 0;
    for (int r = 0; r < size; r++) e += val(r, rank * n);
    check(b[0] == e, "ireduce_scatter_block");
    MPI_Ialltoall(g, (int)n, MPI_DOUBLE, c, (int)n, MPI_DOUBLE, MPI_COMM_WORLD, &q);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    check(c[0] == val(0, rank * n), "ialltoall");
    MPI_Ibarrier(MPI_COMM_WORLD, &q);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    /* (Freeing a communicator while its nonblocking collective is pending
     * crashes Open MPI 4.1's own libnbc, so it is not tested here.) */
    free(g);
    free(a);
    free(b);
    free(c);
}

#ifdef PINIT
/* Persistent collectives on comm: made once, started iters times with new
 * data each time, results checked and digested (run_dropin.sh compares the
 * digests with plain MPI's, whose own persistent collectives then run). */
static void test_persistent(MPI_Comm comm, const char *tag, size_t n)
{
    int cr, cs;
    MPI_Comm_rank(comm, &cr);
    MPI_Comm_size(comm, &cs);
    char name[128];
    double *a = malloc(n * cs * sizeof *a), *b = malloc(n * cs * sizeof *b);
    double *ip = malloc(n * sizeof *ip), *bc = malloc(n * sizeof *bc);
    double *rd = malloc(n * sizeof *rd), *g = malloc(n * cs * sizeof *g);
    double *rs = malloc(n * sizeof *rs), *t = malloc(n * cs * sizeof *t);
    int root = cs - 1, right = (cr + 1) % cs, left = (cr + cs - 1) % cs;
    int tok = 0, got = -1;
    struct { double v; int r; } mloc_in, mloc_out;
    enum { AR, ARIP, RED, BC, AG, RSB, A2A, BAR, MINLOC, SEND, RECV, NREQ };
    MPI_Request q[NREQ];

    PINIT(Allreduce)(a, b, (int)n, MPI_DOUBLE, MPI_SUM, comm, MPI_INFO_NULL, &q[AR]);
    PINIT(Allreduce)(MPI_IN_PLACE, ip, (int)n, MPI_DOUBLE, MPI_MAX, comm, MPI_INFO_NULL,
                     &q[ARIP]);
    PINIT(Reduce)(cr == root ? MPI_IN_PLACE : a, rd, (int)n, MPI_DOUBLE, MPI_SUM, root, comm,
                  MPI_INFO_NULL, &q[RED]);
    PINIT(Bcast)(bc, (int)n, MPI_DOUBLE, 0, comm, MPI_INFO_NULL, &q[BC]);
    PINIT(Allgather)(a, (int)n, MPI_DOUBLE, g, (int)n, MPI_DOUBLE, comm, MPI_INFO_NULL, &q[AG]);
    PINIT(Reduce_scatter_block)(t, rs, (int)n, MPI_DOUBLE, MPI_SUM, comm, MPI_INFO_NULL,
                                &q[RSB]);
    /* alltoall reads t too, into a buffer of its own: g is allgather's */
    double *x = malloc(n * cs * sizeof *x);
    PINIT(Alltoall)(t, (int)n, MPI_DOUBLE, x, (int)n, MPI_DOUBLE, comm, MPI_INFO_NULL, &q[A2A]);
    PINIT(Barrier)(comm, MPI_INFO_NULL, &q[BAR]);
    PINIT(Allreduce)(&mloc_in, &mloc_out, 1, MPI_DOUBLE_INT, MPI_MINLOC, comm, MPI_INFO_NULL,
                     &q[MINLOC]);
    MPI_Send_init(&tok, 1, MPI_INT, right, 17, comm, &q[SEND]);
    MPI_Recv_init(&got, 1, MPI_INT, left, 17, comm, &q[RECV]);

    for (int it = 0; it < 5; it++) {
        for (size_t i = 0; i < n; i++) {
            a[i] = val(cr, i) + it;
            ip[i] = val(cr, i) * (it + 1);
            bc[i] = cr == 0 ? val(it, i) + 0.25 : -1;
        }
        if (cr == root)
            for (size_t i = 0; i < n; i++) rd[i] = a[i];
        for (size_t i = 0; i < n * cs; i++) t[i] = val(cr, i) + 10 * it;
        mloc_in.v = (double)((cr + it) % cs);
        mloc_in.r = cr;
        tok = cr * 10 + it;
        got = -1;
        if (it == 0) {   /* one MPI_Start each, waited one by one */
            for (int k = 0; k < NREQ; k++) MPI_Start(&q[k]);
            for (int k = 0; k < NREQ; k++) MPI_Wait(&q[k], MPI_STATUS_IGNORE);
        } else {
            MPI_Startall(NREQ, q);
            if (it == 1) {
                MPI_Waitall(NREQ, q, MPI_STATUSES_IGNORE);
            } else if (it == 2) {
                int idx;
                for (int k = 0; k < NREQ; k++) {
                    MPI_Waitany(NREQ, q, &idx, MPI_STATUS_IGNORE);
                    check(idx >= 0 && idx < NREQ && q[idx] != MPI_REQUEST_NULL,
                          "persistent waitany index (request stays)");
                }
                MPI_Waitany(NREQ, q, &idx, MPI_STATUS_IGNORE);
                check(idx == MPI_UNDEFINED, "persistent waitany: all inactive");
            } else if (it == 3) {
                int done = 0, outc, idx[NREQ];
                while (done < NREQ) {
                    MPI_Waitsome(NREQ, q, &outc, idx, MPI_STATUSES_IGNORE);
                    check(outc != MPI_UNDEFINED, "persistent waitsome count");
                    done += outc;
                }
            } else {
                int flag = 0;
#ifdef MPICH_VERSION
                /* MPICH 5.0.2's MPI_Testall returns MPI_ERR_IN_STATUS (every
                 * status MPI_SUCCESS) once one of its own persistent
                 * collectives is complete, preload or not: test one by one */
                for (int k = 0; k < NREQ; k++)
                    for (flag = 0; !flag;) MPI_Test(&q[k], &flag, MPI_STATUS_IGNORE);
#else
                while (!flag) MPI_Testall(NREQ, q, &flag, MPI_STATUSES_IGNORE);
#endif
                for (int k = 0; k < NREQ; k++) {   /* inactive: test says done */
                    MPI_Test(&q[k], &flag, MPI_STATUS_IGNORE);
                    check(flag && q[k] != MPI_REQUEST_NULL, "persistent test of inactive");
                }
            }
        }
        int ok = 1, ok_ip = 1, ok_red = 1, ok_bc = 1;
        for (size_t i = 0; i < n; i++) {
            double e = 0, m = 0;
            for (int r = 0; r < cs; r++) {
                e += val(r, i) + it;
                m = fmax(m, val(r, i) * (it + 1));
            }
            ok &= b[i] == e;
            ok_ip &= ip[i] == m;
            if (cr == root) ok_red &= rd[i] == e;
            ok_bc &= bc[i] == val(it, i) + 0.25;
        }
        snprintf(name, sizeof name, "persistent allreduce %s n=%zu start %d", tag, n, it);
        check(ok, name);
        digest(name, b, n * sizeof *b);
        snprintf(name, sizeof name, "persistent allreduce in-place max %s n=%zu start %d", tag,
                 n, it);
        check(ok_ip, name);
        digest(name, ip, n * sizeof *ip);
        snprintf(name, sizeof name, "persistent reduce in-place root %s start %d", tag, it);
        check(ok_red, name);
        snprintf(name, sizeof name, "persistent bcast %s start %d", tag, it);
        check(ok_bc, name);
        ok = 1;
        for (int r = 0; r < cs; r++)
            for (size_t i = 0; i < n; i++) ok &= g[r * n + i] == val(r, i) + it;
        snprintf(name, sizeof name, "persistent allgather %s n=%zu start %d", tag, n, it);
        check(ok, name);
        digest(name, g, n * cs * sizeof *g);
        ok = 1;
        for (size_t i = 0; i < n; i++) {
            double e = 0;
            for (int r = 0; r < cs; r++) e += val(r, cr * n + i) + 10 * it;
            ok &= rs[i] == e;
        }
        snprintf(name, sizeof name, "persistent reduce_scatter_block %s start %d", tag, it);
        check(ok, name);
        digest(name, rs, n * sizeof *rs);
        ok = 1;
        for (int r = 0; r < cs; r++)
            for (size_t i = 0; i < n; i++) ok &= x[r * n + i] == val(r, cr * n + i) + 10 * it;
        snprintf(name, sizeof name, "persistent alltoall %s start %d", tag, it);
        check(ok, name);
        digest(name, x, n * cs * sizeof *x);
        int emin = 0;   /* the lowest rank whose (r + it) % cs is 0 */
        while ((emin + it) % cs) emin++;
        check(mloc_out.v == 0 && mloc_out.r == emin, "persistent minloc (MPI's own)");
        check(got == left * 10 + it, "persistent point-to-point beside");
    }
    for (int k = 0; k < NREQ; k++) {
        MPI_Request_free(&q[k]);
        check(q[k] == MPI_REQUEST_NULL, "persistent request freed");
    }
    free(a); free(b); free(ip); free(bc); free(rd); free(g); free(rs); free(t); free(x);
}
#endif

/* A served blocking allreduce while a peer's rendezvous send to this rank
 * must progress before that peer can join: MPI's progress must go on. */
static void test_progress(void)
{
    if (size < 2) return;
    size_t n = 4u << 20;
    char *buf = malloc(n);
    double x = 1, y = 0;
    if (rank == 0) {
        MPI_Request r;
        MPI_Irecv(buf, (int)n, MPI_BYTE, 1, 11, MPI_COMM_WORLD, &r);
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        check(buf[n - 1] == 42, "rendezvous data");
    } else {
        if (rank == 1) {
            memset(buf, 42, n);
            MPI_Send(buf, (int)n, MPI_BYTE, 0, 11, MPI_COMM_WORLD);
        }
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    check(y == size, "allreduce beside a rendezvous send");
    free(buf);
}

/* One MPI_Allreduce of n floats, integer-valued so the sum is exact. */
static void allreduce_once(size_t n)
{
    float *x = malloc((n ? n : 1) * sizeof *x), *y = malloc((n ? n : 1) * sizeof *y);
    for (size_t i = 0; i < n; i++) x[i] = (float)(rank + 1 + (int)(i % 5));
    MPI_Allreduce(x, y, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    int ok = 1;
    for (size_t i = 0; i < n && ok; i++)
        ok = y[i] == (float)(size * (size + 1) / 2 + size * (int)(i % 5));
    char what[64];
    snprintf(what, sizeof what, "allreduce of %zu floats", n);
    check(ok, what);
    free(x);
    free(y);
}

int main(int argc, char **argv)
{
    /* whole lines: the launcher may forward rank 0's stdout in blocks, and a
     * block ending inside a digest line, then the report on stderr, would
     * split that line */
    setvbuf(stdout, NULL, _IOLBF, 0);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc > 1 && !strcmp(argv[1], "badinput")) {
        /* Erroneous calls under MPI_ERRORS_RETURN, alike on every rank: the
         * error class must be what MPI returns without the drop-in. */
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        int x[4] = { 1, 2, 3, 4 }, y[4], cls;
        struct { const char *name; int rc; } r[5];
        /* (A NULL receive buffer crashes Open MPI 4.1 itself, inside MPI; the
         * drop-in hands such a call to MPI, so it crashes the same way.) */
        r[0].name = "negative-count-allreduce";
        r[0].rc = MPI_Allreduce(x, y, -4, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        r[1].name = "op-null";
        r[1].rc = MPI_Allreduce(x, y, 4, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD);
        r[2].name = "type-null";
        r[2].rc = MPI_Allreduce(x, y, 4, MPI_DATATYPE_NULL, MPI_SUM, MPI_COMM_WORLD);
        r[3].name = "negative-count";
        r[3].rc = MPI_Bcast(x, -1, MPI_INT, 0, MPI_COMM_WORLD);
        r[4].name = "bad-root";
        r[4].rc = MPI_Bcast(x, 4, MPI_INT, size, MPI_COMM_WORLD);
        for (int i = 0; i < 5; i++) {
            cls = MPI_SUCCESS;
            if (r[i].rc != MPI_SUCCESS) MPI_Error_class(r[i].rc, &cls);
            if (rank == 0) printf("badinput %s class=%d\n", r[i].name, cls);
        }
        int ok = MPI_Allreduce(x, y, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS &&
                 y[3] == 4 * size;
        if (rank == 0) printf("badinput then-correct %d\n", ok);
        MPI_Finalize();
        return ok ? 0 : 1;
    }
    if (argc > 1 && !strcmp(argv[1], "sizes")) {
        for (int i = 2; i < argc; i++) allreduce_once((size_t)strtoul(argv[i], NULL, 10));
        int all = 0;
        MPI_Reduce(&failures, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank == 0) printf("dropin: %d checks, %d failed\n", checks, all);
        MPI_Finalize();
        return all ? 1 : 0;
    }
    size_t sizes[] = { 1, 1000, 1 << 17 };
    for (int k = 0; k < 3; k++) {
        test_allreduce(MPI_COMM_WORLD, "world", sizes[k]);
        test_others(MPI_COMM_WORLD, "world", sizes[k] > 4096 ? 4096 : sizes[k]);
    }
    MPI_Comm split, dup;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &split);
    test_allreduce(split, "split", 777);
    test_others(split, "split", 33);
    for (int i = 0; i < 3; i++) {   /* made, served, freed: the delete callback */
        MPI_Comm_dup(MPI_COMM_WORLD, &dup);
        test_allreduce(dup, "dup", 100 + i);
        MPI_Comm_free(&dup);
    }
    MPI_Comm_free(&split);
    test_repeats();
    test_fallbacks();
    test_nonblocking(5000);
#ifdef PINIT
    test_persistent(MPI_COMM_WORLD, "world", 1);
    test_persistent(MPI_COMM_WORLD, "world", 3000);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);   /* requests freed, then the communicator */
    test_persistent(dup, "dup", 257);
    MPI_Comm_free(&dup);
#endif
    if (rank == 0) printf("persistent: %s\n", PINIT_PREFIX);
    test_progress();
    if (argc > 1 && !strcmp(argv[1], "float")) {
        size_t n = 1 << 16;
        float *f = malloc(n * sizeof *f);
        for (size_t i = 0; i < n; i++) f[i] = 0.1f * (float)(rank + 1) + 1e-3f * (float)i;
        MPI_Allreduce(MPI_IN_PLACE, f, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        int ok = 1;
        for (size_t i = 0; i < n && ok; i++) {
            double e = 0;
            for (int r = 0; r < size; r++) e += 0.1f * (float)(r + 1) + 1e-3f * (float)i;
            ok = fabs(f[i] - e) <= 1e-5 * fabs(e) + 1e-6;
        }
        check(ok, "float sum within rounding");
        free(f);
    }
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("dropin: %d checks, %d failed\n", checks, all);
    MPI_Finalize();
    return all ? 1 : 0;
}
