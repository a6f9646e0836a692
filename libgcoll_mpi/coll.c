/* SPDX-License-Identifier: BSD-3-Clause */
/* The C interposers: MPI_Allreduce, MPI_Reduce, MPI_Bcast, MPI_Allgather,
 * MPI_Reduce_scatter_block, MPI_Alltoall, MPI_Barrier and their MPI_I*
 * forms.  Each either serves the call with libgcoll or passes it to PMPI_*
 * unchanged.  The decision uses only what every rank of a correct program
 * passes alike (communicator, datatype, op, count, root, MPI_IN_PLACE), so
 * every rank decides alike; a rank-local defect (a NULL buffer) makes that
 * rank hand its call to MPI, whose error handler then reports it as it
 * would without this library.
 *
 * A served call is posted as a libgcoll request (gcoll_i*) and, if
 * blocking, driven to completion by gmpi_wait_gcoll, which keeps MPI's own
 * progress going (see request.c).  libgcoll's argument refusals at post
 * (GCOLL_ERR_INVALID_ARG, GCOLL_ERR_NOT_SUPPORTED: nothing was sent) fall
 * back to MPI; a failure after communication began goes to the
 * communicator's MPI error handler as MPI_ERR_OTHER, with libgcoll's
 * sentence on stderr. */
#include <stdint.h>
#include <stdio.h>
#include "gmpi.h"

#define PASS_THROUGH() (gmpi_init_once(), !gmpi_enabled || gmpi_inside)

static const char *const why_count  = "count 0 or negative";
static const char *const why_null   = "NULL buffer";
static const char *const why_root   = "root out of range";
static const char *const why_sizes  = "send and receive sizes differ";
static const char *const why_inplace_a2a = "MPI_IN_PLACE alltoall";
static const char *const why_inplace_rsb = "MPI_IN_PLACE reduce_scatter_block";
static const char *const why_inplace_nonroot = "MPI_IN_PLACE on a non-root rank";
static const char *const why_declined = "libgcoll refused the arguments";

static int failed(MPI_Comm c, gmpi_fn_t fn)
{
    fprintf(stderr, "gcoll_mpi: %s: %s\n", gmpi_fn_name(fn), gcoll_last_error());
    PMPI_Comm_call_errhandler(c, MPI_ERR_OTHER);
    return MPI_ERR_OTHER;
}

/* Finish a posted libgcoll call: wrap it (nonblocking) or wait for it. */
static int finish(gcoll_request_t greq, MPI_Comm c, gmpi_fn_t fn, MPI_Request *req)
{
    gmpi_count_served(fn);
    if (req) return gmpi_request_wrap(greq, c, fn, req);
    if (gmpi_wait_gcoll(&greq) != GCOLL_SUCCESS) return failed(c, fn);
    return MPI_SUCCESS;
}

/* Post refused: refusals at post are argument checks, alike on every rank
 * for alike arguments, and nothing was sent, so MPI can take the call. */
#define POSTED(st, fn, c, req, fallback)                                          \
    do {                                                                          \
        if ((st) == GCOLL_ERR_INVALID_ARG || (st) == GCOLL_ERR_NOT_SUPPORTED) {   \
            gmpi_count_fallback(fn, why_declined);                                \
            return fallback;                                                      \
        }                                                                         \
        if ((st) != GCOLL_SUCCESS) return failed(c, fn);                          \
        return finish(greq, c, fn, req);                                          \
    } while (0)

/* ---- allreduce ---- */
int gmpi_allreduce(const void *s, void *r, int count, MPI_Datatype t, MPI_Op op, MPI_Comm c,
                   MPI_Request *req)
{
    gmpi_fn_t fn = req ? GMPI_IALLREDUCE : GMPI_ALLREDUCE;
#define FB (req ? PMPI_Iallreduce(s, r, count, t, op, c, req) : PMPI_Allreduce(s, r, count, t, op, c))
    gcoll_dtype_t dt;
    gcoll_op_t gop;
    const char *why = count <= 0 ? why_count : gmpi_map_reduce(t, op, &dt, &gop);
    gcoll_comm_t g = why ? NULL : gmpi_comm_get(c, &why);
    if (!why && (!r || !s)) why = why_null;
    if (why) { gmpi_count_fallback(fn, why); return FB; }
    if (s == MPI_IN_PLACE) s = r;
    gcoll_request_t greq;
    gmpi_inside++;
    gcoll_status_t st = gcoll_iallreduce(s, r, (size_t)count, dt, gop, g, &greq);
    gmpi_inside--;
    POSTED(st, fn, c, req, FB);
#undef FB
}

int MPI_Allreduce(const void *s, void *r, int count, MPI_Datatype t, MPI_Op op, MPI_Comm c)
{
    if (PASS_THROUGH()) return PMPI_Allreduce(s, r, count, t, op, c);
    return gmpi_allreduce(s, r, count, t, op, c, NULL);
}

int MPI_Iallreduce(const void *s, void *r, int count, MPI_Datatype t, MPI_Op op, MPI_Comm c,
                   MPI_Request *req)
{
    if (PASS_THROUGH() || !req) return PMPI_Iallreduce(s, r, count, t, op, c, req);
    return gmpi_allreduce(s, r, count, t, op, c, req);
}

/* ---- reduce ---- */
int gmpi_reduce(const void *s, void *r, int count, MPI_Datatype t, MPI_Op op, int root,
                MPI_Comm c, MPI_Request *req)
{
    gmpi_fn_t fn = req ? GMPI_IREDUCE : GMPI_REDUCE;
#define FB (req ? PMPI_Ireduce(s, r, count, t, op, root, c, req) \
                : PMPI_Reduce(s, r, count, t, op, root, c))
    gcoll_dtype_t dt;
    gcoll_op_t gop;
    const char *why = count <= 0 ? why_count : gmpi_map_reduce(t, op, &dt, &gop);
    gcoll_comm_t g = why ? NULL : gmpi_comm_get(c, &why);
    int rank = 0, size = 0;
    if (!why) {
        gcoll_comm_rank(g, &rank);
        gcoll_comm_size(g, &size);
        if (root < 0 || root >= size) why = why_root;
        else if (!s || (rank == root && !r)) why = why_null;
        else if (s == MPI_IN_PLACE && rank != root) why = why_inplace_nonroot;
    }
    if (why) { gmpi_count_fallback(fn, why); return FB; }
    if (s == MPI_IN_PLACE) s = r;
    gcoll_request_t greq;
    gmpi_inside++;
    gcoll_status_t st = gcoll_ireduce(s, rank == root ? r : NULL, (size_t)count, dt, gop, root,
                                      g, &greq);
    gmpi_inside--;
    POSTED(st, fn, c, req, FB);
#undef FB
}

int MPI_Reduce(const void *s, void *r, int count, MPI_Datatype t, MPI_Op op, int root,
               MPI_Comm c)
{
    if (PASS_THROUGH()) return PMPI_Reduce(s, r, count, t, op, root, c);
    return gmpi_reduce(s, r, count, t, op, root, c, NULL);
}

int MPI_Ireduce(const void *s, void *r, int count, MPI_Datatype t, MPI_Op op, int root,
                MPI_Comm c, MPI_Request *req)
{
    if (PASS_THROUGH() || !req) return PMPI_Ireduce(s, r, count, t, op, root, c, req);
    return gmpi_reduce(s, r, count, t, op, root, c, req);
}

/* ---- bcast ---- */
int gmpi_bcast(void *b, int count, MPI_Datatype t, int root, MPI_Comm c, MPI_Request *req)
{
    gmpi_fn_t fn = req ? GMPI_IBCAST : GMPI_BCAST;
#define FB (req ? PMPI_Ibcast(b, count, t, root, c, req) : PMPI_Bcast(b, count, t, root, c))
    size_t esz = 0;
    const char *why = count <= 0 ? why_count : gmpi_map_bytes(t, &esz);
    gcoll_comm_t g = why ? NULL : gmpi_comm_get(c, &why);
    if (!why) {
        int size = 0;
        gcoll_comm_size(g, &size);
        if (root < 0 || root >= size) why = why_root;
        else if (!b) why = why_null;
    }
    if (why) { gmpi_count_fallback(fn, why); return FB; }
    gcoll_request_t greq;
    gmpi_inside++;
    gcoll_status_t st = gcoll_ibcast(b, (size_t)count * esz, GCOLL_UINT8, root, g, &greq);
    gmpi_inside--;
    POSTED(st, fn, c, req, FB);
#undef FB
}

int MPI_Bcast(void *b, int count, MPI_Datatype t, int root, MPI_Comm c)
{
    if (PASS_THROUGH()) return PMPI_Bcast(b, count, t, root, c);
    return gmpi_bcast(b, count, t, root, c, NULL);
}

int MPI_Ibcast(void *b, int count, MPI_Datatype t, int root, MPI_Comm c, MPI_Request *req)
{
    if (PASS_THROUGH() || !req) return PMPI_Ibcast(b, count, t, root, c, req);
    return gmpi_bcast(b, count, t, root, c, req);
}

/* ---- allgather (bytes) ---- */
int gmpi_allgather(const void *s, int sc, MPI_Datatype st_, void *r, int rc, MPI_Datatype rt,
                   MPI_Comm c, MPI_Request *req)
{
    gmpi_fn_t fn = req ? GMPI_IALLGATHER : GMPI_ALLGATHER;
#define FB (req ? PMPI_Iallgather(s, sc, st_, r, rc, rt, c, req) \
                : PMPI_Allgather(s, sc, st_, r, rc, rt, c))
    size_t rsz = 0, ssz = 0;
    const char *why = rc <= 0 ? why_count : gmpi_map_bytes(rt, &rsz);
    if (!why && s != MPI_IN_PLACE) {
        why = sc <= 0 ? why_count : gmpi_map_bytes(st_, &ssz);
        if (!why && (size_t)sc * ssz != (size_t)rc * rsz) why = why_sizes;
    }
    gcoll_comm_t g = why ? NULL : gmpi_comm_get(c, &why);
    if (!why && (!r || !s)) why = why_null;
    if (why) { gmpi_count_fallback(fn, why); return FB; }
    size_t bytes = (size_t)rc * rsz;
    if (s == MPI_IN_PLACE) {
        int rank = 0;
        gcoll_comm_rank(g, &rank);
        s = (char *)r + (size_t)rank * bytes;
    }
    gcoll_request_t greq;
    gmpi_inside++;
    gcoll_status_t st = gcoll_iallgather(s, r, bytes, GCOLL_UINT8, g, &greq);
    gmpi_inside--;
    POSTED(st, fn, c, req, FB);
#undef FB
}

int MPI_Allgather(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt,
                  MPI_Comm c)
{
    if (PASS_THROUGH()) return PMPI_Allgather(s, sc, st, r, rc, rt, c);
    return gmpi_allgather(s, sc, st, r, rc, rt, c, NULL);
}

int MPI_Iallgather(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt,
                   MPI_Comm c, MPI_Request *req)
{
    if (PASS_THROUGH() || !req) return PMPI_Iallgather(s, sc, st, r, rc, rt, c, req);
    return gmpi_allgather(s, sc, st, r, rc, rt, c, req);
}

/* ---- reduce_scatter_block ---- */
int gmpi_reduce_scatter_block(const void *s, void *r, int rc, MPI_Datatype t, MPI_Op op,
                              MPI_Comm c, MPI_Request *req)
{
    gmpi_fn_t fn = req ? GMPI_IREDUCE_SCATTER_BLOCK : GMPI_REDUCE_SCATTER_BLOCK;
#define FB (req ? PMPI_Ireduce_scatter_block(s, r, rc, t, op, c, req) \
                : PMPI_Reduce_scatter_block(s, r, rc, t, op, c))
    gcoll_dtype_t dt;
    gcoll_op_t gop;
    const char *why = rc <= 0 ? why_count : gmpi_map_reduce(t, op, &dt, &gop);
    /* In place, MPI leaves the rest of recvbuf as it was; libgcoll's in-place
     * form writes the result over block rank: that would need a copy of the
     * block (host memory only), so MPI takes these calls. */
    if (!why && s == MPI_IN_PLACE) why = why_inplace_rsb;
    gcoll_comm_t g = why ? NULL : gmpi_comm_get(c, &why);
    if (!why && (!r || !s)) why = why_null;
    if (why) { gmpi_count_fallback(fn, why); return FB; }
    gcoll_request_t greq;
    gmpi_inside++;
    gcoll_status_t st = gcoll_ireduce_scatter(s, r, (size_t)rc, dt, gop, g, &greq);
    gmpi_inside--;
    POSTED(st, fn, c, req, FB);
#undef FB
}

int MPI_Reduce_scatter_block(const void *s, void *r, int rc, MPI_Datatype t, MPI_Op op,
                             MPI_Comm c)
{
    if (PASS_THROUGH()) return PMPI_Reduce_scatter_block(s, r, rc, t, op, c);
    return gmpi_reduce_scatter_block(s, r, rc, t, op, c, NULL);
}

int MPI_Ireduce_scatter_block(const void *s, void *r, int rc, MPI_Datatype t, MPI_Op op,
                              MPI_Comm c, MPI_Request *req)
{
    if (PASS_THROUGH() || !req) return PMPI_Ireduce_scatter_block(s, r, rc, t, op, c, req);
    return gmpi_reduce_scatter_block(s, r, rc, t, op, c, req);
}

/* ---- alltoall (bytes) ---- */
int gmpi_alltoall(const void *s, int sc, MPI_Datatype st_, void *r, int rc, MPI_Datatype rt,
                  MPI_Comm c, MPI_Request *req)
{
    gmpi_fn_t fn = req ? GMPI_IALLTOALL : GMPI_ALLTOALL;
#define FB (req ? PMPI_Ialltoall(s, sc, st_, r, rc, rt, c, req) \
                : PMPI_Alltoall(s, sc, st_, r, rc, rt, c))
    size_t rsz = 0, ssz = 0;
    const char *why = rc <= 0 ? why_count : s == MPI_IN_PLACE ? why_inplace_a2a
                                                             : gmpi_map_bytes(rt, &rsz);
    if (!why) {
        why = sc <= 0 ? why_count : gmpi_map_bytes(st_, &ssz);
        if (!why && (size_t)sc * ssz != (size_t)rc * rsz) why = why_sizes;
    }
    gcoll_comm_t g = why ? NULL : gmpi_comm_get(c, &why);
    if (!why && (!r || !s)) why = why_null;
    if (why) { gmpi_count_fallback(fn, why); return FB; }
    gcoll_request_t greq;
    gmpi_inside++;
    gcoll_status_t st = gcoll_ialltoall(s, r, (size_t)rc * rsz, GCOLL_UINT8, g, &greq);
    gmpi_inside--;
    POSTED(st, fn, c, req, FB);
#undef FB
}

int MPI_Alltoall(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt,
                 MPI_Comm c)
{
    if (PASS_THROUGH()) return PMPI_Alltoall(s, sc, st, r, rc, rt, c);
    return gmpi_alltoall(s, sc, st, r, rc, rt, c, NULL);
}

int MPI_Ialltoall(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt,
                  MPI_Comm c, MPI_Request *req)
{
    if (PASS_THROUGH() || !req) return PMPI_Ialltoall(s, sc, st, r, rc, rt, c, req);
    return gmpi_alltoall(s, sc, st, r, rc, rt, c, req);
}

/* ---- barrier ---- */
int gmpi_barrier(MPI_Comm c, MPI_Request *req)
{
    gmpi_fn_t fn = req ? GMPI_IBARRIER : GMPI_BARRIER;
#define FB (req ? PMPI_Ibarrier(c, req) : PMPI_Barrier(c))
    const char *why = NULL;
    gcoll_comm_t g = gmpi_comm_get(c, &why);
    if (why) { gmpi_count_fallback(fn, why); return FB; }
    gcoll_request_t greq;
    gmpi_inside++;
    gcoll_status_t st = gcoll_ibarrier(g, &greq);
    gmpi_inside--;
    POSTED(st, fn, c, req, FB);
#undef FB
}

int MPI_Barrier(MPI_Comm c)
{
    if (PASS_THROUGH()) return PMPI_Barrier(c);
    return gmpi_barrier(c, NULL);
}

int MPI_Ibarrier(MPI_Comm c, MPI_Request *req)
{
    if (PASS_THROUGH() || !req) return PMPI_Ibarrier(c, req);
    return gmpi_barrier(c, req);
}
