/* SPDX-License-Identifier: BSD-3-Clause */
/* Fortran entry points of the collectives.  Open MPI's Fortran wrappers
 * (mpif.h, use mpi, use mpi_f08) call PMPI_* themselves, so a C-only
 * interposer never sees a Fortran call; these define the Fortran symbols
 * ahead of the MPI library's:
 *
 *   mpif.h / use mpi:  mpi_allreduce_ (gfortran), mpi_allreduce__ (g77 style),
 *                      mpi_allreduce, MPI_ALLREDUCE
 *   use mpi_f08:       mpi_allreduce_f08_ (Open MPI's specific procedure;
 *                      handles are type(MPI_Comm) etc. holding MPI_VAL,
 *                      passed by reference; ierror optional, NULL if absent)
 *
 * for the seven blocking collectives and their MPI_I* forms.  Handles are
 * converted with MPI_Comm_f2c / MPI_Type_f2c / MPI_Op_f2c and the Fortran
 * MPI_IN_PLACE sentinel (the address of Open MPI's common block
 * mpi_fortran_in_place, in any of its spellings) becomes MPI_IN_PLACE.  Then
 * the call takes the C path's decision (coll.c), fallback included; a
 * nonblocking call's C request goes back as MPI_Request_c2f's handle,
 * as Open MPI's own wrapper does.  Fortran's MPI_WAIT & co., which would
 * call PMPI_Wait directly, are wrapped in fortran_wait.c.
 *
 * The persistent forms too, in the spellings the MPI declares (persist.c):
 * MPI-4's mpi_allreduce_init_ ... and Open MPI 4.1's mpix_allreduce_init_
 * ... (use mpi_ext; under mpi_f08, use mpi_f08_ext: mpix_allreduce_init_f08_).
 * After the conversions they call persist.c's C function of the same
 * spelling (MPIX_Allreduce_init ...), which takes the decision and counts
 * it; Fortran's MPI_START / MPI_STARTALL (fortran_wait.c) start a served
 * request through request.c, and the wait family completes it, leaving it
 * inactive until MPI_REQUEST_FREE. */
#include <stddef.h>
#include "gmpi.h"

extern int mpi_fortran_in_place __attribute__((weak));
extern int mpi_fortran_in_place_ __attribute__((weak));
extern int mpi_fortran_in_place__ __attribute__((weak));
extern int MPI_FORTRAN_IN_PLACE __attribute__((weak));
extern int mpi_fortran_bottom __attribute__((weak));
extern int mpi_fortran_bottom_ __attribute__((weak));
extern int mpi_fortran_bottom__ __attribute__((weak));
extern int MPI_FORTRAN_BOTTOM __attribute__((weak));

static const void *f_buf(const void *p)
{
    if (!p) return p;
    if (p == (void *)&mpi_fortran_in_place || p == (void *)&mpi_fortran_in_place_ ||
        p == (void *)&mpi_fortran_in_place__ || p == (void *)&MPI_FORTRAN_IN_PLACE)
        return MPI_IN_PLACE;
    if (p == (void *)&mpi_fortran_bottom || p == (void *)&mpi_fortran_bottom_ ||
        p == (void *)&mpi_fortran_bottom__ || p == (void *)&MPI_FORTRAN_BOTTOM)
        return MPI_BOTTOM;
    return p;
}

#define SET_IERR(ierr, rc) do { if (ierr) *(ierr) = (MPI_Fint)(rc); } while (0)

/* One body per function; the aliases give every name convention. */
static void f_allreduce(void *s, void *r, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op,
                        MPI_Fint *comm, MPI_Fint *ierr)
{
    gmpi_init_once();
    const void *cs = f_buf(s);
    void *cr = (void *)f_buf(r);
    MPI_Comm c = PMPI_Comm_f2c(*comm);
    MPI_Datatype t = PMPI_Type_f2c(*dt);
    MPI_Op o = PMPI_Op_f2c(*op);
    int rc = !gmpi_enabled || gmpi_inside ? PMPI_Allreduce(cs, cr, *count, t, o, c)
                                          : gmpi_allreduce(cs, cr, *count, t, o, c, GMPI_BLOCKING, MPI_INFO_NULL, NULL);
    SET_IERR(ierr, rc);
}

static void f_reduce(void *s, void *r, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op,
                     MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr)
{
    gmpi_init_once();
    const void *cs = f_buf(s);
    void *cr = (void *)f_buf(r);
    MPI_Comm c = PMPI_Comm_f2c(*comm);
    MPI_Datatype t = PMPI_Type_f2c(*dt);
    MPI_Op o = PMPI_Op_f2c(*op);
    int rc = !gmpi_enabled || gmpi_inside ? PMPI_Reduce(cs, cr, *count, t, o, *root, c)
                                          : gmpi_reduce(cs, cr, *count, t, o, *root, c, GMPI_BLOCKING, MPI_INFO_NULL, NULL);
    SET_IERR(ierr, rc);
}

static void f_bcast(void *b, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *root, MPI_Fint *comm,
                    MPI_Fint *ierr)
{
    gmpi_init_once();
    void *cb = (void *)f_buf(b);
    MPI_Comm c = PMPI_Comm_f2c(*comm);
    MPI_Datatype t = PMPI_Type_f2c(*dt);
    int rc = !gmpi_enabled || gmpi_inside ? PMPI_Bcast(cb, *count, t, *root, c)
                                          : gmpi_bcast(cb, *count, t, *root, c, GMPI_BLOCKING, MPI_INFO_NULL, NULL);
    SET_IERR(ierr, rc);
}

static void f_allgather(void *s, MPI_Fint *sc, MPI_Fint *st, void *r, MPI_Fint *rc_,
                        MPI_Fint *rt, MPI_Fint *comm, MPI_Fint *ierr)
{
    gmpi_init_once();
    const void *cs = f_buf(s);
    void *cr = (void *)f_buf(r);
    MPI_Comm c = PMPI_Comm_f2c(*comm);
    MPI_Datatype cst = PMPI_Type_f2c(*st), crt = PMPI_Type_f2c(*rt);
    int rc = !gmpi_enabled || gmpi_inside
                 ? PMPI_Allgather(cs, *sc, cst, cr, *rc_, crt, c)
                 : gmpi_allgather(cs, *sc, cst, cr, *rc_, crt, c, GMPI_BLOCKING, MPI_INFO_NULL, NULL);
    SET_IERR(ierr, rc);
}

static void f_reduce_scatter_block(void *s, void *r, MPI_Fint *rcount, MPI_Fint *dt,
                                   MPI_Fint *op, MPI_Fint *comm, MPI_Fint *ierr)
{
    gmpi_init_once();
    const void *cs = f_buf(s);
    void *cr = (void *)f_buf(r);
    MPI_Comm c = PMPI_Comm_f2c(*comm);
    MPI_Datatype t = PMPI_Type_f2c(*dt);
    MPI_Op o = PMPI_Op_f2c(*op);
    int rc = !gmpi_enabled || gmpi_inside
                 ? PMPI_Reduce_scatter_block(cs, cr, *rcount, t, o, c)
                 : gmpi_reduce_scatter_block(cs, cr, *rcount, t, o, c, GMPI_BLOCKING, MPI_INFO_NULL, NULL);
    SET_IERR(ierr, rc);
}

static void f_alltoall(void *s, MPI_Fint *sc, MPI_Fint *st, void *r, MPI_Fint *rc_,
                       MPI_Fint *rt, MPI_Fint *comm, MPI_Fint *ierr)
{
    gmpi_init_once();
    const void *cs = f_buf(s);
    void *cr = (void *)f_buf(r);
    MPI_Comm c = PMPI_Comm_f2c(*comm);
    MPI_Datatype cst = PMPI_Type_f2c(*st), crt = PMPI_Type_f2c(*rt);
    int rc = !gmpi_enabled || gmpi_inside
                 ? PMPI_Alltoall(cs, *sc, cst, cr, *rc_, crt, c)
                 : gmpi_alltoall(cs, *sc, cst, cr, *rc_, crt, c, GMPI_BLOCKING, MPI_INFO_NULL, NULL);
    SET_IERR(ierr, rc);
}

static void f_barrier(MPI_Fint *comm, MPI_Fint *ierr)
{
    gmpi_init_once();
    MPI_Comm c = PMPI_Comm_f2c(*comm);
    int rc = !gmpi_enabled || gmpi_inside ? PMPI_Barrier(c) : gmpi_barrier(c, GMPI_BLOCKING, MPI_INFO_NULL, NULL);
    SET_IERR(ierr, rc);
}

/* ---- nonblocking: the same, and the request back as a Fortran handle ---- */
#define F_REQ(rc, creq, freq) do { if ((rc) == MPI_SUCCESS) *(freq) = PMPI_Request_c2f(creq); } while (0)

static void f_iallreduce(void *s, void *r, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op,
                         MPI_Fint *comm, MPI_Fint *freq, MPI_Fint *ierr)
{
    gmpi_init_once();
    const void *cs = f_buf(s);
    void *cr = (void *)f_buf(r);
    MPI_Comm c = PMPI_Comm_f2c(*comm);
    MPI_Datatype t = PMPI_Type_f2c(*dt);
    MPI_Op o = PMPI_Op_f2c(*op);
    MPI_Request q = MPI_REQUEST_NULL;
    int rc = !gmpi_enabled || gmpi_inside
                 ? PMPI_Iallreduce(cs, cr, *count, t, o, c, &q)
                 : gmpi_allreduce(cs, cr, *count, t, o, c, GMPI_NONBLOCKING, MPI_INFO_NULL, &q);
    F_REQ(rc, q, freq);
    SET_IERR(ierr, rc);
}

static void f_ireduce(void *s, void *r, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op,
                      MPI_Fint *root, MPI_Fint *comm, MPI_Fint *freq, MPI_Fint *ierr)
{
    gmpi_init_once();
    const void *cs = f_buf(s);
    void *cr = (void *)f_buf(r);
    MPI_Comm c = PMPI_Comm_f2c(*comm);
    MPI_Datatype t = PMPI_Type_f2c(*dt);
    MPI_Op o = PMPI_Op_f2c(*op);
    MPI_Request q = MPI_REQUEST_NULL;
    int rc = !gmpi_enabled || gmpi_inside
                 ? PMPI_Ireduce(cs, cr, *count, t, o, *root, c, &q)
                 : gmpi_reduce(cs, cr, *count, t, o, *root, c, GMPI_NONBLOCKING, MPI_INFO_NULL,
                               &q);
    F_REQ(rc, q, freq);
    SET_IERR(ierr, rc);
}

static void f_ibcast(void *b, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *root, MPI_Fint *comm,
                     MPI_Fint *freq, MPI_Fint *ierr)
{
    gmpi_init_once();
    void *cb = (void *)f_buf(b);
    MPI_Comm c = PMPI_Comm_f2c(*comm);
    MPI_Datatype t = PMPI_Type_f2c(*dt);
    MPI_Request q = MPI_REQUEST_NULL;
    int rc = !gmpi_enabled || gmpi_inside
                 ? PMPI_Ibcast(cb, *count, t, *root, c, &q)
                 : gmpi_bcast(cb, *count, t, *root, c, GMPI_NONBLOCKING, MPI_INFO_NULL, &q);
    F_REQ(rc, q, freq);
    SET_IERR(ierr, rc);
}

static void f_iallgather(void *s, MPI_Fint *sc, MPI_Fint *st, void *r, MPI_Fint *rc_,
                         MPI_Fint *rt, MPI_Fint *comm, MPI_Fint *freq, MPI_Fint *ierr)
{
    gmpi_init_once();
    const void *cs = f_buf(s);
    void *cr = (void *)f_buf(r);
    MPI_Comm c = PMPI_Comm_f2c(*comm);
    MPI_Datatype cst = PMPI_Type_f2c(*st), crt = PMPI_Type_f2c(*rt);
    MPI_Request q = MPI_REQUEST_NULL;
    int rc = !gmpi_enabled || gmpi_inside
                 ? PMPI_Iallgather(cs, *sc, cst, cr, *rc_, crt, c, &q)
                 : gmpi_allgather(cs, *sc, cst, cr, *rc_, crt, c, GMPI_NONBLOCKING,
                                  MPI_INFO_NULL, &q);
    F_REQ(rc, q, freq);
    SET_IERR(ierr, rc);
}

static void f_ireduce_scatter_block(void *s, void *r, MPI_Fint *rcount, MPI_Fint *dt,
                                    MPI_Fint *op, MPI_Fint *comm, MPI_Fint *freq,
                                    MPI_Fint *ierr)
{
    gmpi_init_once();
    const void *cs = f_buf(s);
    void *cr = (void *)f_buf(r);
    MPI_Comm c = PMPI_Comm_f2c(*comm);
    MPI_Datatype t = PMPI_Type_f2c(*dt);
    MPI_Op o = PMPI_Op_f2c(*op);
    MPI_Request q = MPI_REQUEST_NULL;
    int rc = !gmpi_enabled || gmpi_inside
                 ? PMPI_Ireduce_scatter_block(cs, cr, *rcount, t, o, c, &q)
                 : gmpi_reduce_scatter_block(cs, cr, *rcount, t, o, c, GMPI_NONBLOCKING,
                                             MPI_INFO_NULL, &q);
    F_REQ(rc, q, freq);
    SET_IERR(ierr, rc);
}

static void f_ialltoall(void *s, MPI_Fint *sc, MPI_Fint *st, void *r, MPI_Fint *rc_,
                        MPI_Fint *rt, MPI_Fint *comm, MPI_Fint *freq, MPI_Fint *ierr)
{
    gmpi_init_once();
    const void *cs = f_buf(s);
    void *cr = (void *)f_buf(r);
    MPI_Comm c = PMPI_Comm_f2c(*comm);
    MPI_Datatype cst = PMPI_Type_f2c(*st), crt = PMPI_Type_f2c(*rt);
    MPI_Request q = MPI_REQUEST_NULL;
    int rc = !gmpi_enabled || gmpi_inside
                 ? PMPI_Ialltoall(cs, *sc, cst, cr, *rc_, crt, c, &q)
                 : gmpi_alltoall(cs, *sc, cst, cr, *rc_, crt, c, GMPI_NONBLOCKING,
                                 MPI_INFO_NULL, &q);
    F_REQ(rc, q, freq);
    SET_IERR(ierr, rc);
}

static void f_ibarrier(MPI_Fint *comm, MPI_Fint *freq, MPI_Fint *ierr)
{
    gmpi_init_once();
    MPI_Comm c = PMPI_Comm_f2c(*comm);
    MPI_Request q = MPI_REQUEST_NULL;
    int rc = !gmpi_enabled || gmpi_inside
                 ? PMPI_Ibarrier(c, &q)
                 : gmpi_barrier(c, GMPI_NONBLOCKING, MPI_INFO_NULL, &q);
    F_REQ(rc, q, freq);
    SET_IERR(ierr, rc);
}

#define ALIASES(body, lower, upper)                                                  \
    extern __typeof__(body) lower##_ __attribute__((alias(#body)));                  \
    extern __typeof__(body) lower##__ __attribute__((alias(#body)));                 \
    extern __typeof__(body) lower __attribute__((alias(#body)));                     \
    extern __typeof__(body) upper __attribute__((alias(#body)));                     \
    extern __typeof__(body) lower##_f08_ __attribute__((alias(#body)));

/* The symbols are exported (default visibility); the bodies stay static. */
ALIASES(f_allreduce, mpi_allreduce, MPI_ALLREDUCE)
ALIASES(f_reduce, mpi_reduce, MPI_REDUCE)
ALIASES(f_bcast, mpi_bcast, MPI_BCAST)
ALIASES(f_allgather, mpi_allgather, MPI_ALLGATHER)
ALIASES(f_reduce_scatter_block, mpi_reduce_scatter_block, MPI_REDUCE_SCATTER_BLOCK)
ALIASES(f_alltoall, mpi_alltoall, MPI_ALLTOALL)
ALIASES(f_barrier, mpi_barrier, MPI_BARRIER)
ALIASES(f_iallreduce, mpi_iallreduce, MPI_IALLREDUCE)
ALIASES(f_ireduce, mpi_ireduce, MPI_IREDUCE)
ALIASES(f_ibcast, mpi_ibcast, MPI_IBCAST)
ALIASES(f_iallgather, mpi_iallgather, MPI_IALLGATHER)
ALIASES(f_ireduce_scatter_block, mpi_ireduce_scatter_block, MPI_IREDUCE_SCATTER_BLOCK)
ALIASES(f_ialltoall, mpi_ialltoall, MPI_IALLTOALL)
ALIASES(f_ibarrier, mpi_ibarrier, MPI_IBARRIER)

/* ---- persistent: the conversions (info too), then persist.c's C function
 * of the same spelling, whose decision and counters are the C callers'. ---- */
/* DEFINE_F_INIT(MPIX, mpix) defines f_mpix_allreduce_init ..., calling
 * MPIX_Allreduce_init ..., under the names mpix_allreduce_init_ ... */
#define DEFINE_F_INIT(P, p)                                                                  \
    static void f_##p##_allreduce_init(void *s, void *r, MPI_Fint *count, MPI_Fint *dt,      \
                                       MPI_Fint *op, MPI_Fint *comm, MPI_Fint *info,         \
                                       MPI_Fint *freq, MPI_Fint *ierr)                       \
    {                                                                                        \
        MPI_Request q = MPI_REQUEST_NULL;                                                    \
        int rc = P##_Allreduce_init(f_buf(s), (void *)f_buf(r), *count, PMPI_Type_f2c(*dt),  \
                                    PMPI_Op_f2c(*op), PMPI_Comm_f2c(*comm),                  \
                                    PMPI_Info_f2c(*info), &q);                               \
        F_REQ(rc, q, freq);                                                                  \
        SET_IERR(ierr, rc);                                                                  \
    }                                                                                        \
    static void f_##p##_reduce_init(void *s, void *r, MPI_Fint *count, MPI_Fint *dt,         \
                                    MPI_Fint *op, MPI_Fint *root, MPI_Fint *comm,            \
                                    MPI_Fint *info, MPI_Fint *freq, MPI_Fint *ierr)          \
    {                                                                                        \
        MPI_Request q = MPI_REQUEST_NULL;                                                    \
        int rc = P##_Reduce_init(f_buf(s), (void *)f_buf(r), *count, PMPI_Type_f2c(*dt),     \
                                 PMPI_Op_f2c(*op), *root, PMPI_Comm_f2c(*comm),              \
                                 PMPI_Info_f2c(*info), &q);                                  \
        F_REQ(rc, q, freq);                                                                  \
        SET_IERR(ierr, rc);                                                                  \
    }                                                                                        \
    static void f_##p##_bcast_init(void *b, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *root,   \
                                   MPI_Fint *comm, MPI_Fint *info, MPI_Fint *freq,           \
                                   MPI_Fint *ierr)                                           \
    {                                                                                        \
        MPI_Request q = MPI_REQUEST_NULL;                                                    \
        int rc = P##_Bcast_init((void *)f_buf(b), *count, PMPI_Type_f2c(*dt), *root,         \
                                PMPI_Comm_f2c(*comm), PMPI_Info_f2c(*info), &q);             \
        F_REQ(rc, q, freq);                                                                  \
        SET_IERR(ierr, rc);                                                                  \
    }                                                                                        \
    static void f_##p##_allgather_init(void *s, MPI_Fint *sc, MPI_Fint *st, void *r,         \
                                       MPI_Fint *rc_, MPI_Fint *rt, MPI_Fint *comm,          \
                                       MPI_Fint *info, MPI_Fint *freq, MPI_Fint *ierr)       \
    {                                                                                        \
        MPI_Request q = MPI_REQUEST_NULL;                                                    \
        int rc = P##_Allgather_init(f_buf(s), *sc, PMPI_Type_f2c(*st), (void *)f_buf(r),     \
                                    *rc_, PMPI_Type_f2c(*rt), PMPI_Comm_f2c(*comm),          \
                                    PMPI_Info_f2c(*info), &q);                               \
        F_REQ(rc, q, freq);                                                                  \
        SET_IERR(ierr, rc);                                                                  \
    }                                                                                        \
    static void f_##p##_reduce_scatter_block_init(void *s, void *r, MPI_Fint *rcount,        \
                                                  MPI_Fint *dt, MPI_Fint *op,                \
                                                  MPI_Fint *comm, MPI_Fint *info,            \
                                                  MPI_Fint *freq, MPI_Fint *ierr)            \
    {                                                                                        \
        MPI_Request q = MPI_REQUEST_NULL;                                                    \
        int rc = P##_Reduce_scatter_block_init(f_buf(s), (void *)f_buf(r), *rcount,          \
                                               PMPI_Type_f2c(*dt), PMPI_Op_f2c(*op),         \
                                               PMPI_Comm_f2c(*comm), PMPI_Info_f2c(*info), &q); \
        F_REQ(rc, q, freq);                                                                  \
        SET_IERR(ierr, rc);                                                                  \
    }                                                                                        \
    static void f_##p##_alltoall_init(void *s, MPI_Fint *sc, MPI_Fint *st, void *r,          \
                                      MPI_Fint *rc_, MPI_Fint *rt, MPI_Fint *comm,           \
                                      MPI_Fint *info, MPI_Fint *freq, MPI_Fint *ierr)        \
    {                                                                                        \
        MPI_Request q = MPI_REQUEST_NULL;                                                    \
        int rc = P##_Alltoall_init(f_buf(s), *sc, PMPI_Type_f2c(*st), (void *)f_buf(r),      \
                                   *rc_, PMPI_Type_f2c(*rt), PMPI_Comm_f2c(*comm),           \
                                   PMPI_Info_f2c(*info), &q);                                \
        F_REQ(rc, q, freq);                                                                  \
        SET_IERR(ierr, rc);                                                                  \
    }                                                                                        \
    static void f_##p##_barrier_init(MPI_Fint *comm, MPI_Fint *info, MPI_Fint *freq,         \
                                     MPI_Fint *ierr)                                         \
    {                                                                                        \
        MPI_Request q = MPI_REQUEST_NULL;                                                    \
        int rc = P##_Barrier_init(PMPI_Comm_f2c(*comm), PMPI_Info_f2c(*info), &q);           \
        F_REQ(rc, q, freq);                                                                  \
        SET_IERR(ierr, rc);                                                                  \
    }                                                                                        \
    ALIASES(f_##p##_allreduce_init, p##_allreduce_init, P##_ALLREDUCE_INIT)                  \
    ALIASES(f_##p##_reduce_init, p##_reduce_init, P##_REDUCE_INIT)                           \
    ALIASES(f_##p##_bcast_init, p##_bcast_init, P##_BCAST_INIT)                              \
    ALIASES(f_##p##_allgather_init, p##_allgather_init, P##_ALLGATHER_INIT)                  \
    ALIASES(f_##p##_reduce_scatter_block_init, p##_reduce_scatter_block_init,                \
            P##_REDUCE_SCATTER_BLOCK_INIT)                                                   \
    ALIASES(f_##p##_alltoall_init, p##_alltoall_init, P##_ALLTOALL_INIT)                     \
    ALIASES(f_##p##_barrier_init, p##_barrier_init, P##_BARRIER_INIT)

#if GMPI_HAVE_PERSISTENT
DEFINE_F_INIT(MPI, mpi)
#endif
#if GMPI_HAVE_PERSISTENT_X
DEFINE_F_INIT(MPIX, mpix)
#endif
