/* SPDX-License-Identifier: BSD-3-Clause */
/* Fortran's wait family: MPI_WAIT, MPI_TEST, MPI_WAITALL, MPI_TESTALL,
 * MPI_WAITANY, MPI_TESTANY, MPI_WAITSOME, MPI_TESTSOME, MPI_REQUEST_FREE,
 * MPI_REQUEST_GET_STATUS, then MPI_START and MPI_STARTALL, in the spellings
 * of fortran.c (mpif.h / use mpi: mpi_wait_, mpi_wait__, mpi_wait,
 * MPI_WAIT; use mpi_f08: mpi_wait_f08_).
 *
 * Open MPI's Fortran MPI_WAIT calls PMPI_Wait directly, so the wrapped C
 * MPI_Wait never sees a Fortran wait, and a request of ours (fortran.c's
 * MPI_IALLREDUCE ...) would never complete.  Each function here converts
 * the handles (MPI_Request_f2c), advances ours as the C wrappers do
 * (request.c's gmpi_requests_*), then calls the MPI library's own Fortran
 * function of the same spelling (the next definition, dlsym(RTLD_NEXT)),
 * which finds ours complete: statuses, MPI_STATUS_IGNORE, indices, the
 * handles set to MPI_REQUEST_NULL, LOGICAL flags, all as the MPI's own
 * Fortran binding does them.  WAITANY and WAITSOME with ours pending poll
 * the MPI's TESTANY / TESTSOME until something is done.  A Fortran
 * LOGICAL is read as C does: nonzero is .true. (gfortran's, and the value
 * Open MPI writes). */
#define _GNU_SOURCE   /* RTLD_NEXT */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include "gmpi.h"

typedef void (*fn_t)(void);

/* The MPI's own Fortran function: names[0] for mpi_f08, else the first of
 * the mpif.h spellings found (they are one function in Open MPI). */
static fn_t real_fn(fn_t *cache, int f08, const char *lower, const char *upper)
{
    fn_t f = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
    if (f) return f;
    char name[64];
    const char *const fmt[] = { "%s_", "%s__", "%s", NULL };
    if (f08) {
        snprintf(name, sizeof name, "%s_f08_", lower);
        f = (fn_t)dlsym(RTLD_NEXT, name);
    } else {
        for (int i = 0; !f && fmt[i]; i++) {
            snprintf(name, sizeof name, fmt[i], lower);
            f = (fn_t)dlsym(RTLD_NEXT, name);
        }
        if (!f) f = (fn_t)dlsym(RTLD_NEXT, upper);
    }
    if (!f) {
        fprintf(stderr, "gcoll_mpi: the MPI library's Fortran %s%s was not found\n", lower,
                f08 ? "_f08_" : "_");
        abort();
    }
    __atomic_store_n(cache, f, __ATOMIC_RELEASE);
    return f;
}

#define REAL(f08, lower, upper, type)                                                  \
    ({                                                                                \
        static fn_t cache_[2];                                                        \
        (type)real_fn(&cache_[f08], f08, #lower, #upper);                             \
    })

typedef void (*wait_t)(MPI_Fint *, MPI_Fint *, MPI_Fint *);
typedef void (*test_t)(MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *);
typedef void (*waitall_t)(MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *);
typedef void (*testall_t)(MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *);
typedef void (*waitany_t)(MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *);
typedef void (*testany_t)(MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *,
                          MPI_Fint *);
typedef void (*some_t)(MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *);
typedef void (*free_t)(MPI_Fint *, MPI_Fint *);

/* The C handles of n Fortran ones: buf when it is large enough, else
 * allocated (NULL when that fails: ours are then not advanced, and the
 * MPI's own function still runs). */
#define SMALL 32
static MPI_Request *c_reqs(int n, const MPI_Fint *f, MPI_Request *buf)
{
    if (n <= 0 || !f) return NULL;
    MPI_Request *c = n <= SMALL ? buf : malloc((size_t)n * sizeof(*c));
    if (c)
        for (int i = 0; i < n; i++) c[i] = PMPI_Request_f2c(f[i]);
    return c;
}

static void c_reqs_free(MPI_Request *c, MPI_Request *buf)
{
    if (c != buf) free(c);
}

/* ---- the bodies; f08 says which of the MPI's functions to call ---- */

static void f_wait(int f08, MPI_Fint *req, MPI_Fint *status, MPI_Fint *ierr)
{
    MPI_Request c = PMPI_Request_f2c(*req);
    gmpi_requests_finish(1, &c);
    REAL(f08, mpi_wait, MPI_WAIT, wait_t)(req, status, ierr);
}

static void f_test(int f08, MPI_Fint *req, MPI_Fint *flag, MPI_Fint *status, MPI_Fint *ierr)
{
    MPI_Request c = PMPI_Request_f2c(*req);
    gmpi_requests_progress(1, &c);
    REAL(f08, mpi_test, MPI_TEST, test_t)(req, flag, status, ierr);
}

static void f_waitall(int f08, MPI_Fint *n, MPI_Fint *reqs, MPI_Fint *statuses, MPI_Fint *ierr)
{
    MPI_Request buf[SMALL], *c = c_reqs(*n, reqs, buf);
    if (c) gmpi_requests_finish(*n, c);
    c_reqs_free(c, buf);
    REAL(f08, mpi_waitall, MPI_WAITALL, waitall_t)(n, reqs, statuses, ierr);
}

static void f_testall(int f08, MPI_Fint *n, MPI_Fint *reqs, MPI_Fint *flag,
                      MPI_Fint *statuses, MPI_Fint *ierr)
{
    MPI_Request buf[SMALL], *c = c_reqs(*n, reqs, buf);
    if (c) gmpi_requests_progress(*n, c);
    c_reqs_free(c, buf);
    REAL(f08, mpi_testall, MPI_TESTALL, testall_t)(n, reqs, flag, statuses, ierr);
}

static void f_testany(int f08, MPI_Fint *n, MPI_Fint *reqs, MPI_Fint *idx, MPI_Fint *flag,
                      MPI_Fint *status, MPI_Fint *ierr)
{
    MPI_Request buf[SMALL], *c = c_reqs(*n, reqs, buf);
    if (c) gmpi_requests_progress(*n, c);
    c_reqs_free(c, buf);
    REAL(f08, mpi_testany, MPI_TESTANY, testany_t)(n, reqs, idx, flag, status, ierr);
}

static void f_testsome(int f08, MPI_Fint *n, MPI_Fint *reqs, MPI_Fint *outcount,
                       MPI_Fint *idx, MPI_Fint *statuses, MPI_Fint *ierr)
{
    MPI_Request buf[SMALL], *c = c_reqs(*n, reqs, buf);
    if (c) gmpi_requests_progress(*n, c);
    c_reqs_free(c, buf);
    REAL(f08, mpi_testsome, MPI_TESTSOME, some_t)(n, reqs, outcount, idx, statuses, ierr);
}

/* Polled with the MPI's TESTANY while ours are pending (the handles are
 * converted again each round: the MPI sets completed ones to null). */
static void f_waitany(int f08, MPI_Fint *n, MPI_Fint *reqs, MPI_Fint *idx, MPI_Fint *status,
                      MPI_Fint *ierr)
{
    MPI_Request buf[SMALL], *c = c_reqs(*n, reqs, buf);
    int ours = c && gmpi_requests_any_ours(*n, c);
    for (unsigned iter = 0; ours; iter++) {
        MPI_Fint flag = 0, e = MPI_SUCCESS;
        for (int i = 0; i < *n; i++) c[i] = PMPI_Request_f2c(reqs[i]);
        size_t pending = gmpi_requests_progress(*n, c);
        REAL(f08, mpi_testany, MPI_TESTANY, testany_t)(n, reqs, idx, &flag, status, &e);
        if (e != MPI_SUCCESS || flag) {
            c_reqs_free(c, buf);
            if (ierr) *ierr = e;
            return;
        }
        ours = pending != 0;
        if (iter >= 1024) gmpi_requests_yield();
    }
    c_reqs_free(c, buf);
    REAL(f08, mpi_waitany, MPI_WAITANY, waitany_t)(n, reqs, idx, status, ierr);
}

static void f_waitsome(int f08, MPI_Fint *n, MPI_Fint *reqs, MPI_Fint *outcount,
                       MPI_Fint *idx, MPI_Fint *statuses, MPI_Fint *ierr)
{
    MPI_Request buf[SMALL], *c = c_reqs(*n, reqs, buf);
    int ours = c && gmpi_requests_any_ours(*n, c);
    for (unsigned iter = 0; ours; iter++) {
        MPI_Fint e = MPI_SUCCESS;
        for (int i = 0; i < *n; i++) c[i] = PMPI_Request_f2c(reqs[i]);
        size_t pending = gmpi_requests_progress(*n, c);
        REAL(f08, mpi_testsome, MPI_TESTSOME, some_t)(n, reqs, outcount, idx, statuses, &e);
        if (e != MPI_SUCCESS || *outcount != 0) {
            c_reqs_free(c, buf);
            if (ierr) *ierr = e;
            return;
        }
        ours = pending != 0;
        if (iter >= 1024) gmpi_requests_yield();
    }
    c_reqs_free(c, buf);
    REAL(f08, mpi_waitsome, MPI_WAITSOME, some_t)(n, reqs, outcount, idx, statuses, ierr);
}

static void f_request_free(int f08, MPI_Fint *req, MPI_Fint *ierr)
{
    gmpi_request_release(PMPI_Request_f2c(*req));
    REAL(f08, mpi_request_free, MPI_REQUEST_FREE, free_t)(req, ierr);
}

static void f_request_get_status(int f08, MPI_Fint *req, MPI_Fint *flag, MPI_Fint *status,
                                 MPI_Fint *ierr)
{
    MPI_Request c = PMPI_Request_f2c(*req);
    gmpi_requests_progress(1, &c);
    REAL(f08, mpi_request_get_status, MPI_REQUEST_GET_STATUS, test_t)(req, flag, status, ierr);
}

/* MPI_START and MPI_STARTALL: the MPI's own call PMPI_Start directly, so a
 * served persistent request (fortran.c's MPIX_ALLREDUCE_INIT ...) would
 * start its proxy receive without libgcoll's collective.  These call
 * request.c's C MPI_Start / MPI_Startall, which start ours through
 * libgcoll and hand the others to PMPI_Start; a handle that MPI replaced
 * goes back converted, as Open MPI's own wrapper does.  f08 is unused: no
 * MPI Fortran function is called. */
static void f_start(int f08, MPI_Fint *req, MPI_Fint *ierr)
{
    (void)f08;
    MPI_Request c = PMPI_Request_f2c(*req), was = c;
    int rc = MPI_Start(&c);
    if (rc == MPI_SUCCESS && c != was) *req = PMPI_Request_c2f(c);
    if (ierr) *ierr = rc;
}

static void f_startall(int f08, MPI_Fint *n, MPI_Fint *reqs, MPI_Fint *ierr)
{
    (void)f08;
    MPI_Request buf[SMALL], *c = c_reqs(*n, reqs, buf);
    int rc = *n <= 0 ? MPI_Startall(*n, NULL) : c ? MPI_Startall(*n, c) : MPI_ERR_NO_MEM;
    if (rc == MPI_SUCCESS)
        for (int i = 0; c && i < *n; i++) reqs[i] = PMPI_Request_c2f(c[i]);
    c_reqs_free(c, buf);
    if (ierr) *ierr = rc;
}

/* ---- the symbols: one entry for the mpif.h spellings, one for mpi_f08 ---- */
#define UNPAREN(...) __VA_ARGS__
#define ENTRIES(body, lower, upper, params, args)                                     \
    static void body##_mpif params { body(0, UNPAREN args); }                         \
    static void body##_f08 params { body(1, UNPAREN args); }                          \
    extern __typeof__(body##_mpif) lower##_ __attribute__((alias(#body "_mpif")));    \
    extern __typeof__(body##_mpif) lower##__ __attribute__((alias(#body "_mpif")));   \
    extern __typeof__(body##_mpif) lower __attribute__((alias(#body "_mpif")));       \
    extern __typeof__(body##_mpif) upper __attribute__((alias(#body "_mpif")));       \
    extern __typeof__(body##_f08) lower##_f08_ __attribute__((alias(#body "_f08")));

ENTRIES(f_wait, mpi_wait, MPI_WAIT, (MPI_Fint *r, MPI_Fint *st, MPI_Fint *e), (r, st, e))
ENTRIES(f_test, mpi_test, MPI_TEST, (MPI_Fint *r, MPI_Fint *fl, MPI_Fint *st, MPI_Fint *e),
        (r, fl, st, e))
ENTRIES(f_waitall, mpi_waitall, MPI_WAITALL,
        (MPI_Fint *n, MPI_Fint *r, MPI_Fint *st, MPI_Fint *e), (n, r, st, e))
ENTRIES(f_testall, mpi_testall, MPI_TESTALL,
        (MPI_Fint *n, MPI_Fint *r, MPI_Fint *fl, MPI_Fint *st, MPI_Fint *e), (n, r, fl, st, e))
ENTRIES(f_waitany, mpi_waitany, MPI_WAITANY,
        (MPI_Fint *n, MPI_Fint *r, MPI_Fint *i, MPI_Fint *st, MPI_Fint *e), (n, r, i, st, e))
ENTRIES(f_testany, mpi_testany, MPI_TESTANY,
        (MPI_Fint *n, MPI_Fint *r, MPI_Fint *i, MPI_Fint *fl, MPI_Fint *st, MPI_Fint *e),
        (n, r, i, fl, st, e))
ENTRIES(f_waitsome, mpi_waitsome, MPI_WAITSOME,
        (MPI_Fint *n, MPI_Fint *r, MPI_Fint *oc, MPI_Fint *i, MPI_Fint *st, MPI_Fint *e),
        (n, r, oc, i, st, e))
ENTRIES(f_testsome, mpi_testsome, MPI_TESTSOME,
        (MPI_Fint *n, MPI_Fint *r, MPI_Fint *oc, MPI_Fint *i, MPI_Fint *st, MPI_Fint *e),
        (n, r, oc, i, st, e))
ENTRIES(f_request_free, mpi_request_free, MPI_REQUEST_FREE, (MPI_Fint *r, MPI_Fint *e), (r, e))
ENTRIES(f_request_get_status, mpi_request_get_status, MPI_REQUEST_GET_STATUS,
        (MPI_Fint *r, MPI_Fint *fl, MPI_Fint *st, MPI_Fint *e), (r, fl, st, e))
ENTRIES(f_start, mpi_start, MPI_START, (MPI_Fint *r, MPI_Fint *e), (r, e))
ENTRIES(f_startall, mpi_startall, MPI_STARTALL, (MPI_Fint *n, MPI_Fint *r, MPI_Fint *e),
        (n, r, e))
