/* SPDX-License-Identifier: BSD-3-Clause */
/* Fortran entry points.  Open MPI's Fortran wrappers (mpif.h, use mpi,
 * use mpi_f08) call PMPI_* themselves, so a C-only interposer never sees a
 * Fortran call; these define the Fortran symbols ahead of the MPI library's:
 *
 *   mpif.h / use mpi:  mpi_allreduce_ (gfortran), mpi_allreduce__ (g77 style),
 *                      mpi_allreduce, MPI_ALLREDUCE
 *   use mpi_f08:       mpi_allreduce_f08_ (Open MPI's specific procedure;
 *                      handles are type(MPI_Comm) etc. holding MPI_VAL,
 *                      passed by reference; ierror optional, NULL if absent)
 *
 * Handles are converted with MPI_Comm_f2c / MPI_Type_f2c / MPI_Op_f2c and the
 * Fortran MPI_IN_PLACE sentinel (the address of Open MPI's common block
 * mpi_fortran_in_place, in any of its spellings) becomes MPI_IN_PLACE.  Then
 * the call takes the C path's decision (coll.c), fallback included.
 * Fortran's nonblocking collectives and MPI_WAIT are not intercepted (see
 * request.c), so they run in MPI. */
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
