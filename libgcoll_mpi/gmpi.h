/* SPDX-License-Identifier: BSD-3-Clause */
/* libgcoll_mpi: a PMPI drop-in that serves MPI collectives with libgcoll.
 * Internal header shared by the files of this folder (docs/MPI_DROPIN.md):
 *
 *   comm_map.c  MPI communicator -> gcoll_comm_t, by attribute caching
 *   decide.c    type/op mapping and the serve-or-fallback decision
 *   coll.c      the C interposers (MPI_Allreduce, MPI_Iallreduce, ...)
 *   request.c   nonblocking requests: generalized requests, wrapped waits
 *   fortran.c   mpif.h / use mpi / use mpi_f08 entry points
 *   report.c    counters, GCOLL_MPI_REPORT, fallback reasons
 */
#ifndef GCOLL_MPI_INT_H
#define GCOLL_MPI_INT_H

#include <stddef.h>
#include <mpi.h>
#include "gcoll.h"

/* Nothing of this header is exported: only the MPI_* and Fortran symbols. */
#pragma GCC visibility push(hidden)

/* The functions intercepted; index into the report's counters. */
typedef enum {
    GMPI_ALLREDUCE = 0, GMPI_REDUCE, GMPI_BCAST, GMPI_ALLGATHER, GMPI_REDUCE_SCATTER_BLOCK,
    GMPI_ALLTOALL, GMPI_BARRIER,
    GMPI_IALLREDUCE, GMPI_IREDUCE, GMPI_IBCAST, GMPI_IALLGATHER, GMPI_IREDUCE_SCATTER_BLOCK,
    GMPI_IALLTOALL, GMPI_IBARRIER,
    GMPI_FN_COUNT
} gmpi_fn_t;

/* ---- process state (comm_map.c) ---- */
extern int gmpi_enabled;            /* 0: GCOLL_MPI=off, pass everything through */
/* Thread-local depth of calls into libgcoll: MPI calls libgcoll makes
 * itself (gcoll_comm_create's MPI_Allreduce...) go straight to PMPI. */
extern __thread int gmpi_inside __attribute__((tls_model("initial-exec")));

/* One-time set-up (env, keyvals); cheap after the first call. */
void gmpi_init_once(void);

/* The libgcoll communicator for comm, created on first use (collective:
 * every rank of comm reaches here in the same call); NULL with *why set
 * when libgcoll cannot serve comm (intercommunicator, creation failed). */
gcoll_comm_t gmpi_comm_get(MPI_Comm comm, const char **why);

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

/* ---- report (report.c) ---- */
void gmpi_count_served(gmpi_fn_t fn);
void gmpi_count_fallback(gmpi_fn_t fn, const char *why);
void gmpi_report_print(void);
const char *gmpi_fn_name(gmpi_fn_t fn);

/* ---- requests (request.c) ---- */
/* Wrap a posted libgcoll request in an MPI_Request (a generalized request
 * that the wrapped MPI_Wait/Test family completes). */
int gmpi_request_wrap(gcoll_request_t greq, MPI_Comm comm, gmpi_fn_t fn, MPI_Request *req);
/* Drive a blocking call's libgcoll request to completion, keeping MPI's own
 * progress going; returns its status. */
gcoll_status_t gmpi_wait_gcoll(gcoll_request_t *greq);

/* ---- the collectives, shared by the C and Fortran entry points (coll.c);
 * req == NULL: blocking.  Return an MPI error code. ---- */
int gmpi_allreduce(const void *s, void *r, int count, MPI_Datatype t, MPI_Op op, MPI_Comm c,
                   MPI_Request *req);
int gmpi_reduce(const void *s, void *r, int count, MPI_Datatype t, MPI_Op op, int root,
                MPI_Comm c, MPI_Request *req);
int gmpi_bcast(void *b, int count, MPI_Datatype t, int root, MPI_Comm c, MPI_Request *req);
int gmpi_allgather(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt,
                   MPI_Comm c, MPI_Request *req);
int gmpi_reduce_scatter_block(const void *s, void *r, int rc, MPI_Datatype t, MPI_Op op,
                              MPI_Comm c, MPI_Request *req);
int gmpi_alltoall(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt,
                  MPI_Comm c, MPI_Request *req);
int gmpi_barrier(MPI_Comm c, MPI_Request *req);

#pragma GCC visibility pop

#endif
