/* SPDX-License-Identifier: BSD-3-Clause */
/* libgcoll_mpi: a PMPI drop-in that serves MPI collectives with libgcoll.
 * Internal header shared by the files of this folder (docs/MPI_DROPIN.md):
 *
 *   comm_map.c  MPI communicator -> gcoll_comm_t, by attribute caching
 *   decide.c    type/op mapping and the serve-or-fallback decision
 *   coll.c      the C interposers (MPI_Allreduce, MPI_Iallreduce, ...)
 *   persist.c   MPI-4 persistent collectives (MPI_Allreduce_init ...) and
 *               Open MPI 4.1's MPIX_ forms
 *   request.c   nonblocking and persistent requests: generalized requests,
 *               proxy receives, wrapped waits and starts
 *   fortran.c   mpif.h / use mpi / use mpi_f08 entry points of the collectives
 *   fortran_wait.c  Fortran's MPI_WAIT family, ahead of the MPI's own
 *   report.c    counters, GCOLL_MPI_REPORT, fallback reasons
 */
#ifndef GCOLL_MPI_INT_H
#define GCOLL_MPI_INT_H

#include <stddef.h>
#include "gcoll_build.h"   /* configure results: HAVE_DECL_PMPI_ALLREDUCE_INIT ... */
#include <mpi.h>
#ifdef HAVE_MPI_EXT_H
#include <mpi-ext.h>       /* Open MPI's extensions: MPIX_Allreduce_init ... */
#endif
#include "gcoll.h"

/* Nothing of this header is exported: only the MPI_* and Fortran symbols. */
#pragma GCC visibility push(hidden)

/* The collectives intercepted, each in four forms: blocking, nonblocking
 * (MPI_I*), persistent (MPI-4 MPI_*_init) and Open MPI 4.1's persistent
 * extension (MPIX_*_init, mpi-ext.h).  A function is GMPI_FN(coll, mode),
 * the index into the report's counters. */
typedef enum {
    GMPI_ALLREDUCE = 0, GMPI_REDUCE, GMPI_BCAST, GMPI_ALLGATHER, GMPI_REDUCE_SCATTER_BLOCK,
    GMPI_ALLTOALL, GMPI_BARRIER,
    GMPI_NCOLL
} gmpi_coll_t;

typedef enum {
    GMPI_BLOCKING = 0,   /* MPI_Allreduce */
    GMPI_NONBLOCKING,    /* MPI_Iallreduce */
    GMPI_PERSISTENT,     /* MPI_Allreduce_init (MPI-4) */
    GMPI_PERSISTENT_X,   /* MPIX_Allreduce_init (Open MPI 4.1's pcollreq extension) */
    GMPI_NMODES
} gmpi_mode_t;

typedef int gmpi_fn_t;
#define GMPI_FN(coll, mode) ((gmpi_fn_t)((int)(mode) * GMPI_NCOLL + (int)(coll)))
#define GMPI_FN_COUNT       (GMPI_NMODES * GMPI_NCOLL)

/* Which persistent spellings this MPI declares (configure's checks). */
#if defined(HAVE_DECL_PMPI_ALLREDUCE_INIT) && HAVE_DECL_PMPI_ALLREDUCE_INIT
#define GMPI_HAVE_PERSISTENT 1
#else
#define GMPI_HAVE_PERSISTENT 0
#endif
#if defined(HAVE_DECL_PMPIX_ALLREDUCE_INIT) && HAVE_DECL_PMPIX_ALLREDUCE_INIT
#define GMPI_HAVE_PERSISTENT_X 1
#else
#define GMPI_HAVE_PERSISTENT_X 0
#endif

/* ---- process state (comm_map.c) ---- */
extern int gmpi_enabled;            /* 0: GCOLL_MPI=off, pass everything through */
/* Thread-local depth of calls into libgcoll: MPI calls libgcoll makes
 * itself (gcoll_comm_create's MPI_Allreduce...) go straight to PMPI. */
extern __thread int gmpi_inside __attribute__((tls_model("initial-exec")));

/* One-time set-up (env, keyvals): inline, a load and a branch after the
 * first call, which runs gmpi_init_slow. */
extern volatile int gmpi_init_done;
void gmpi_init_slow(void);
static inline void gmpi_init_once(void)
{
    if (__builtin_expect(!gmpi_init_done, 0)) gmpi_init_slow();
}

/* What the drop-in keeps of a communicator it serves: the libgcoll
 * communicator, and the byte ranges per collective in which libgcoll's
 * selection hands the call to MPI (decide.c; the same on every rank). */
#define GMPI_MAX_RANGES 16
typedef struct {
    gcoll_comm_t g;
    int          n_mpi[GMPI_NCOLL];
    size_t       mpi_lo[GMPI_NCOLL][GMPI_MAX_RANGES], mpi_hi[GMPI_NCOLL][GMPI_MAX_RANGES];
} gmpi_comm_t;

/* comm's entry, its libgcoll communicator created on first use (collective:
 * every rank of comm reaches here in the same call); NULL with *why set
 * when libgcoll cannot serve comm (intercommunicator, creation failed). */
const gmpi_comm_t *gmpi_comm_get(MPI_Comm comm, const char **why);
/* Bumped whenever a communicator's entry dies (MPI_Comm_free, MPI_Finalize):
 * what was worked out for a communicator handle is valid while it stays. */
extern volatile unsigned gmpi_comm_gen;

/* Destroy every libgcoll communicator and print the report (idempotent);
 * run by MPI_Finalize through the attribute on MPI_COMM_SELF. */
void gmpi_finalize(void);

/* ---- decisions (decide.c) ---- */
/* Reduction: the libgcoll dtype and op for (type, op), or a reason. */
const char *gmpi_map_reduce(MPI_Datatype type, MPI_Op op, gcoll_dtype_t *dt, gcoll_op_t *gop);
/* Data movement: bytes per element of a predefined contiguous type, or a reason. */
const char *gmpi_map_bytes(MPI_Datatype type, size_t *size);
/* Set up the type tables (after MPI_Init). */
void gmpi_types_init(void);
/* Size: NULL when libgcoll's selection keeps a call of bytes (count x
 * element size, as libgcoll counts them: per rank's block for allgather,
 * reduce_scatter_block, alltoall; 0 for barrier) on e, else the reason to
 * leave it to MPI.  Read from e's ranges only: alike on every rank. */
const char *gmpi_size_decide(const gmpi_comm_t *e, gmpi_coll_t coll, size_t bytes);
/* Fill e's ranges from libgcoll's selection (at e's creation). */
void gmpi_sizes_load(gmpi_comm_t *e, MPI_Comm comm);

/* ---- report (report.c) ---- */
void gmpi_count_served(gmpi_fn_t fn);
void gmpi_count_fallback(gmpi_fn_t fn, const char *why);
void gmpi_report_print(void);
const char *gmpi_fn_name(gmpi_fn_t fn);

/* ---- requests (request.c) ---- */
/* Wrap a posted libgcoll request in an MPI_Request (a generalized request
 * that the wrapped MPI_Wait/Test family completes). */
int gmpi_request_wrap(gcoll_request_t greq, MPI_Comm comm, gmpi_fn_t fn, MPI_Request *req);
/* Wrap an inactive persistent libgcoll request in a persistent MPI_Request
 * (a receive from this process that the wrapped waits complete); the
 * wrapped MPI_Start/MPI_Startall start it, MPI_Request_free frees both. */
int gmpi_request_wrap_persistent(gcoll_request_t greq, MPI_Comm comm, gmpi_fn_t fn,
                                 MPI_Request *req);
/* For the wait family, C (request.c) and Fortran (fortran.c): advance ours
 * among reqs once, returning how many of ours are not done yet; advance
 * them until all are done (MPI's progress poked meanwhile); whether any of
 * reqs is ours; yield the core in a polling loop. */
size_t gmpi_requests_progress(int n, const MPI_Request reqs[]);
void gmpi_requests_finish(int n, const MPI_Request reqs[]);
int gmpi_requests_any_ours(int n, const MPI_Request reqs[]);
void gmpi_requests_yield(void);
/* Before MPI frees req: finish it if it is ours and active, and drop our
 * part of a persistent one (a generalized request's goes with its handle). */
void gmpi_request_release(MPI_Request req);
/* libgcoll's wait hook, installed at set-up: MPI's own progress while a
 * served blocking collective, or a wait on a served request, waits inside
 * libgcoll. */
void gmpi_wait_hook(void *arg);

/* ---- the collectives, shared by the C and Fortran entry points (coll.c).
 * mode says which form; req is the request of the nonblocking and
 * persistent ones, info the persistent ones' hints (passed to MPI when it
 * takes the call).  Return an MPI error code. ---- */
int gmpi_allreduce(const void *s, void *r, int count, MPI_Datatype t, MPI_Op op, MPI_Comm c,
                   gmpi_mode_t mode, MPI_Info info, MPI_Request *req);
int gmpi_reduce(const void *s, void *r, int count, MPI_Datatype t, MPI_Op op, int root,
                MPI_Comm c, gmpi_mode_t mode, MPI_Info info, MPI_Request *req);
int gmpi_bcast(void *b, int count, MPI_Datatype t, int root, MPI_Comm c, gmpi_mode_t mode,
               MPI_Info info, MPI_Request *req);
int gmpi_allgather(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt,
                   MPI_Comm c, gmpi_mode_t mode, MPI_Info info, MPI_Request *req);
int gmpi_reduce_scatter_block(const void *s, void *r, int rc, MPI_Datatype t, MPI_Op op,
                              MPI_Comm c, gmpi_mode_t mode, MPI_Info info, MPI_Request *req);
int gmpi_alltoall(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt,
                  MPI_Comm c, gmpi_mode_t mode, MPI_Info info, MPI_Request *req);
int gmpi_barrier(MPI_Comm c, gmpi_mode_t mode, MPI_Info info, MPI_Request *req);

#pragma GCC visibility pop

#endif
