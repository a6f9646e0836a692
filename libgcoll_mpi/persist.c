/* SPDX-License-Identifier: BSD-3-Clause */
/* Persistent collectives: MPI-4's MPI_Allreduce_init, MPI_Reduce_init,
 * MPI_Bcast_init, MPI_Allgather_init, MPI_Reduce_scatter_block_init,
 * MPI_Alltoall_init, MPI_Barrier_init, and the same seven as Open MPI 4.1
 * spells them (MPIX_*_init, its pcollreq extension in mpi-ext.h).  Each
 * spelling is intercepted where the MPI declares it (configure checks
 * PMPI_Allreduce_init and PMPIX_Allreduce_init); an MPI with neither gets
 * none of these symbols, and its programs cannot call them anyway.
 *
 * The decision is the other forms' (coll.c), taken once, at init: a served
 * call becomes gcoll_<coll>_init, whose request MPI_Start/MPI_Startall
 * start (gcoll_start) and the wrapped wait/test family completes
 * (request.c); otherwise MPI's own PMPI_*_init takes the call, info
 * included.  The hints of info are not read when libgcoll serves. */
#include "gmpi.h"

#define PASS_THROUGH() (gmpi_init_once(), !gmpi_enabled || gmpi_inside)

/* DEFINE_INIT(MPI, PMPI, GMPI_PERSISTENT) defines MPI_Allreduce_init ...;
 * DEFINE_INIT(MPIX, PMPIX, GMPI_PERSISTENT_X) the MPIX_ spellings. */
#define DEFINE_INIT(P, PP, mode)                                                            \
    int P##_Allreduce_init(const void *s, void *r, int count, MPI_Datatype t, MPI_Op op,    \
                           MPI_Comm c, MPI_Info info, MPI_Request *req)                     \
    {                                                                                       \
        if (PASS_THROUGH()) return PP##_Allreduce_init(s, r, count, t, op, c, info, req);   \
        return gmpi_allreduce(s, r, count, t, op, c, mode, info, req);                      \
    }                                                                                       \
    int P##_Reduce_init(const void *s, void *r, int count, MPI_Datatype t, MPI_Op op,       \
                        int root, MPI_Comm c, MPI_Info info, MPI_Request *req)              \
    {                                                                                       \
        if (PASS_THROUGH()) return PP##_Reduce_init(s, r, count, t, op, root, c, info, req); \
        return gmpi_reduce(s, r, count, t, op, root, c, mode, info, req);                   \
    }                                                                                       \
    int P##_Bcast_init(void *b, int count, MPI_Datatype t, int root, MPI_Comm c,            \
                       MPI_Info info, MPI_Request *req)                                     \
    {                                                                                       \
        if (PASS_THROUGH()) return PP##_Bcast_init(b, count, t, root, c, info, req);        \
        return gmpi_bcast(b, count, t, root, c, mode, info, req);                           \
    }                                                                                       \
    int P##_Allgather_init(const void *s, int sc, MPI_Datatype st, void *r, int rc,         \
                           MPI_Datatype rt, MPI_Comm c, MPI_Info info, MPI_Request *req)    \
    {                                                                                       \
        if (PASS_THROUGH()) return PP##_Allgather_init(s, sc, st, r, rc, rt, c, info, req); \
        return gmpi_allgather(s, sc, st, r, rc, rt, c, mode, info, req);                    \
    }                                                                                       \
    int P##_Reduce_scatter_block_init(const void *s, void *r, int rc, MPI_Datatype t,       \
                                      MPI_Op op, MPI_Comm c, MPI_Info info,                 \
                                      MPI_Request *req)                                     \
    {                                                                                       \
        if (PASS_THROUGH())                                                                 \
            return PP##_Reduce_scatter_block_init(s, r, rc, t, op, c, info, req);           \
        return gmpi_reduce_scatter_block(s, r, rc, t, op, c, mode, info, req);              \
    }                                                                                       \
    int P##_Alltoall_init(const void *s, int sc, MPI_Datatype st, void *r, int rc,          \
                          MPI_Datatype rt, MPI_Comm c, MPI_Info info, MPI_Request *req)     \
    {                                                                                       \
        if (PASS_THROUGH()) return PP##_Alltoall_init(s, sc, st, r, rc, rt, c, info, req);  \
        return gmpi_alltoall(s, sc, st, r, rc, rt, c, mode, info, req);                     \
    }                                                                                       \
    int P##_Barrier_init(MPI_Comm c, MPI_Info info, MPI_Request *req)                       \
    {                                                                                       \
        if (PASS_THROUGH()) return PP##_Barrier_init(c, info, req);                         \
        return gmpi_barrier(c, mode, info, req);                                            \
    }

#if GMPI_HAVE_PERSISTENT
DEFINE_INIT(MPI, PMPI, GMPI_PERSISTENT)
#endif
#if GMPI_HAVE_PERSISTENT_X
DEFINE_INIT(MPIX, PMPIX, GMPI_PERSISTENT_X)
#endif
