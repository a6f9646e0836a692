/* SPDX-License-Identifier: BSD-3-Clause */
/* The collectives: MPI_Allreduce, MPI_Reduce, MPI_Bcast, MPI_Allgather,
 * MPI_Reduce_scatter_block, MPI_Alltoall, MPI_Barrier, in each form
 * (blocking, MPI_I*, persistent *_init: gmpi_mode_t).  Each call either is
 * served by libgcoll or passes to PMPI_* unchanged.
 *
 * A call is taken in two steps.  prep_<coll> decides: it uses only what
 * every rank of a correct program passes alike (communicator, datatype, op,
 * count, root, MPI_IN_PLACE) and the sizes libgcoll's selection leaves to
 * MPI on that communicator (decide.c), so every rank decides alike, and fills a
 * call_t with libgcoll's arguments; a rank-local defect (a NULL buffer)
 * makes that rank hand its call to MPI, whose error handler then reports it
 * as it would without this library.  serve() then posts the call_t in the
 * form asked: gcoll_<coll> (blocking: it waits inside libgcoll, whose wait
 * hook keeps MPI's own progress going), gcoll_i<coll> (nonblocking: wrapped
 * in a generalized request) or gcoll_<coll>_init (persistent: wrapped in a
 * persistent request), see request.c.
 *
 * libgcoll's argument refusals at post (GCOLL_ERR_INVALID_ARG,
 * GCOLL_ERR_NOT_SUPPORTED: nothing was sent) fall back to MPI; a failure
 * after communication began goes to the communicator's MPI error handler
 * as MPI_ERR_OTHER, with libgcoll's sentence on stderr.  The C entry
 * points of the blocking and MPI_I* forms are here, the persistent ones in
 * persist.c, the Fortran ones in fortran.c. */
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
static const char *const why_norequest = "request argument NULL";

/* A served call: libgcoll's arguments, as prep_<coll> worked them out.
 * Data movement is in bytes (GCOLL_UINT8). */
typedef struct {
    gmpi_coll_t   coll;
    const void   *s;
    void         *r;
    size_t        count;
    gcoll_dtype_t dt;
    gcoll_op_t    op;
    int           root;
    gcoll_comm_t  g;
} call_t;

static int failed(MPI_Comm c, gmpi_fn_t fn)
{
    fprintf(stderr, "gcoll_mpi: %s: %s\n", gmpi_fn_name(fn), gcoll_last_error());
    PMPI_Comm_call_errhandler(c, MPI_ERR_OTHER);
    return MPI_ERR_OTHER;
}

/* A decided call in its form: gcoll_<coll> (blocking: it waits inside
 * libgcoll, whose wait hook keeps MPI's progress going, so the call costs
 * what a direct one does), gcoll_i<coll> or gcoll_<coll>_init (into *q). */
#define FORM(name, ...)                                                     \
    (mode == GMPI_BLOCKING ? gcoll_##name(__VA_ARGS__)                      \
     : persistent          ? gcoll_##name##_init(__VA_ARGS__, q)            \
                           : gcoll_i##name(__VA_ARGS__, q))

static gcoll_status_t run(const call_t *a, gmpi_mode_t mode, int persistent, gcoll_request_t *q)
{
    switch (a->coll) {
    case GMPI_ALLREDUCE: return FORM(allreduce, a->s, a->r, a->count, a->dt, a->op, a->g);
    case GMPI_REDUCE: return FORM(reduce, a->s, a->r, a->count, a->dt, a->op, a->root, a->g);
    case GMPI_BCAST: return FORM(bcast, a->r, a->count, a->dt, a->root, a->g);
    case GMPI_ALLGATHER: return FORM(allgather, a->s, a->r, a->count, a->dt, a->g);
    case GMPI_REDUCE_SCATTER_BLOCK:
        return FORM(reduce_scatter, a->s, a->r, a->count, a->dt, a->op, a->g);
    case GMPI_ALLTOALL: return FORM(alltoall, a->s, a->r, a->count, a->dt, a->g);
    case GMPI_BARRIER: return FORM(barrier, a->g);
    default: return GCOLL_ERR_INTERNAL;
    }
}
#undef FORM

/* What libgcoll's status st for call fn means to the MPI caller.  Returns 1
 * with the MPI code in *rc when libgcoll took the call; 0 when it refused
 * at post (counted as a fallback: the caller hands the call to MPI). */
static int settle(gcoll_status_t st, gmpi_fn_t fn, gmpi_mode_t mode, int persistent,
                  gcoll_request_t greq, MPI_Comm c, MPI_Request *req, int *rc)
{
    if (st == GCOLL_ERR_INVALID_ARG || st == GCOLL_ERR_NOT_SUPPORTED) {
        gmpi_count_fallback(fn, why_declined);
        return 0;
    }
    if (st != GCOLL_SUCCESS) {
        *rc = failed(c, fn);
        return 1;
    }
    gmpi_count_served(fn);
    if (persistent) *rc = gmpi_request_wrap_persistent(greq, c, fn, req);
    else if (mode == GMPI_NONBLOCKING) *rc = gmpi_request_wrap(greq, c, fn, req);
    else *rc = MPI_SUCCESS;
    return 1;
}

/* Run a decided call in its form; returns as settle() does. */
static int serve(const call_t *a, gmpi_mode_t mode, MPI_Comm c, MPI_Request *req, int *rc)
{
    gmpi_fn_t fn = GMPI_FN(a->coll, mode);
    int persistent = mode == GMPI_PERSISTENT || mode == GMPI_PERSISTENT_X;
    gcoll_request_t greq = GCOLL_REQUEST_NULL;
    gmpi_inside++;
    gcoll_status_t st = run(a, mode, persistent, &greq);
    gmpi_inside--;
    return settle(st, fn, mode, persistent, greq, c, req, rc);
}

/* The common tail of every collective: serve a decided call, or count the
 * reason and leave it to MPI (the caller's fallback expression, FB). */
#define SERVE_OR(coll, mode, why, a, c, req, FB)                                  \
    do {                                                                          \
        int rc_;                                                                  \
        if (!(why) && (mode) != GMPI_BLOCKING && !(req)) (why) = why_norequest;   \
        if (!(why) && serve(&(a), mode, c, req, &rc_)) return rc_;                \
        if (why) gmpi_count_fallback(GMPI_FN(coll, mode), why);                   \
        return FB;                                                                \
    } while (0)

/* The fallback of each form.  MPI_Info is passed on to the persistent ones. */
#if GMPI_HAVE_PERSISTENT
#define P_INIT(name, ...) mode == GMPI_PERSISTENT ? PMPI_##name##_init(__VA_ARGS__) :
#else
#define P_INIT(name, ...)
#endif
#if GMPI_HAVE_PERSISTENT_X
#define PX_INIT(name, ...) mode == GMPI_PERSISTENT_X ? PMPIX_##name##_init(__VA_ARGS__) :
#else
#define PX_INIT(name, ...)
#endif

/* ---- allreduce ---- */
static const char *prep_allreduce(const void *s, void *r, int count, MPI_Datatype t, MPI_Op op,
                                  MPI_Comm c, call_t *a)
{
    const char *why = count <= 0 ? why_count : gmpi_map_reduce(t, op, &a->dt, &a->op);
    const gmpi_comm_t *e = why ? NULL : gmpi_comm_get(c, &why);
    a->g = e ? e->g : NULL;
    if (!why) why = gmpi_size_decide(e, GMPI_ALLREDUCE, (size_t)count * gcoll_dtype_size(a->dt));
    if (!why && (!r || !s)) why = why_null;
    if (why) return why;
    a->coll = GMPI_ALLREDUCE;
    a->s = s == MPI_IN_PLACE ? r : s;
    a->r = r;
    a->count = (size_t)count;
    return NULL;
}

/* The last blocking allreduce this thread decided to serve.  Programs call
 * one reduction over and over (a solver's dot product, a training step's
 * gradients), and all that prep_allreduce works out but the buffers --
 * libgcoll's type, op and communicator, and the size decision -- depends
 * only on (communicator, type, op, count) and on the communicator map's
 * generation.  A repeat goes straight to gcoll_allreduce: the drop-in's own cost
 * is then the wrapper and the served count, about as much as the 5% of a
 * 0.25 us call that it may add. */
typedef struct {
    MPI_Comm     c;
    MPI_Datatype t;
    MPI_Op       op;
    int          count;
    unsigned     gen;
    call_t       a;
} allreduce_memo_t;
static __thread __attribute__((tls_model("initial-exec"))) allreduce_memo_t last_allreduce;

/* A repeat of the memo's call, served straight from it (no copy of the
 * call, no dispatch on the collective). */
enum { NOT_A_REPEAT, REPEAT_SERVED, REPEAT_REFUSED };
static int allreduce_repeat(const void *s, void *r, int count, MPI_Datatype t, MPI_Op op,
                            MPI_Comm c, int *rc)
{
    const allreduce_memo_t *m = &last_allreduce;
    if (m->gen != gmpi_comm_gen || m->c != c || m->count != count || m->t != t || m->op != op ||
        !s || !r)
        return NOT_A_REPEAT;
    gmpi_inside++;
    gcoll_status_t st = gcoll_allreduce(s == MPI_IN_PLACE ? r : s, r, m->a.count, m->a.dt,
                                        m->a.op, m->a.g);
    gmpi_inside--;
    return settle(st, GMPI_FN(GMPI_ALLREDUCE, GMPI_BLOCKING), GMPI_BLOCKING, 0,
                  GCOLL_REQUEST_NULL, c, NULL, rc) ? REPEAT_SERVED : REPEAT_REFUSED;
}

static const char *prep_allreduce_blocking(const void *s, void *r, int count, MPI_Datatype t,
                                           MPI_Op op, MPI_Comm c, call_t *a)
{
    const char *why = prep_allreduce(s, r, count, t, op, c, a);
    if (!why) last_allreduce = (allreduce_memo_t){ c, t, op, count, gmpi_comm_gen, *a };
    return why;
}

int gmpi_allreduce(const void *s, void *r, int count, MPI_Datatype t, MPI_Op op, MPI_Comm c,
                   gmpi_mode_t mode, MPI_Info info, MPI_Request *req)
{
    call_t a;
    int rc, repeat = mode == GMPI_BLOCKING ? allreduce_repeat(s, r, count, t, op, c, &rc)
                                           : NOT_A_REPEAT;
    if (repeat == REPEAT_SERVED) return rc;
    if (repeat == REPEAT_REFUSED) return PMPI_Allreduce(s, r, count, t, op, c);   /* counted */
    const char *why = mode == GMPI_BLOCKING ? prep_allreduce_blocking(s, r, count, t, op, c, &a)
                                            : prep_allreduce(s, r, count, t, op, c, &a);
    SERVE_OR(GMPI_ALLREDUCE, mode, why, a, c, req,
             mode == GMPI_BLOCKING ? PMPI_Allreduce(s, r, count, t, op, c) :
             P_INIT(Allreduce, s, r, count, t, op, c, info, req)
             PX_INIT(Allreduce, s, r, count, t, op, c, info, req)
             PMPI_Iallreduce(s, r, count, t, op, c, req));
}

int MPI_Allreduce(const void *s, void *r, int count, MPI_Datatype t, MPI_Op op, MPI_Comm c)
{
    if (PASS_THROUGH()) return PMPI_Allreduce(s, r, count, t, op, c);
    return gmpi_allreduce(s, r, count, t, op, c, GMPI_BLOCKING, MPI_INFO_NULL, NULL);
}

int MPI_Iallreduce(const void *s, void *r, int count, MPI_Datatype t, MPI_Op op, MPI_Comm c,
                   MPI_Request *req)
{
    if (PASS_THROUGH()) return PMPI_Iallreduce(s, r, count, t, op, c, req);
    return gmpi_allreduce(s, r, count, t, op, c, GMPI_NONBLOCKING, MPI_INFO_NULL, req);
}

/* ---- reduce ---- */
static const char *prep_reduce(const void *s, void *r, int count, MPI_Datatype t, MPI_Op op,
                               int root, MPI_Comm c, call_t *a)
{
    const char *why = count <= 0 ? why_count : gmpi_map_reduce(t, op, &a->dt, &a->op);
    const gmpi_comm_t *e = why ? NULL : gmpi_comm_get(c, &why);
    a->g = e ? e->g : NULL;
    if (!why) why = gmpi_size_decide(e, GMPI_REDUCE, (size_t)count * gcoll_dtype_size(a->dt));
    if (why) return why;
    int rank = 0, size = 0;
    gcoll_comm_rank(a->g, &rank);
    gcoll_comm_size(a->g, &size);
    if (root < 0 || root >= size) return why_root;
    if (!s || (rank == root && !r)) return why_null;
    if (s == MPI_IN_PLACE && rank != root) return why_inplace_nonroot;
    a->coll = GMPI_REDUCE;
    a->s = s == MPI_IN_PLACE ? r : s;
    a->r = rank == root ? r : NULL;
    a->count = (size_t)count;
    a->root = root;
    return NULL;
}

int gmpi_reduce(const void *s, void *r, int count, MPI_Datatype t, MPI_Op op, int root,
                MPI_Comm c, gmpi_mode_t mode, MPI_Info info, MPI_Request *req)
{
    call_t a;
    const char *why = prep_reduce(s, r, count, t, op, root, c, &a);
    SERVE_OR(GMPI_REDUCE, mode, why, a, c, req,
             mode == GMPI_BLOCKING ? PMPI_Reduce(s, r, count, t, op, root, c) :
             P_INIT(Reduce, s, r, count, t, op, root, c, info, req)
             PX_INIT(Reduce, s, r, count, t, op, root, c, info, req)
             PMPI_Ireduce(s, r, count, t, op, root, c, req));
}

int MPI_Reduce(const void *s, void *r, int count, MPI_Datatype t, MPI_Op op, int root,
               MPI_Comm c)
{
    if (PASS_THROUGH()) return PMPI_Reduce(s, r, count, t, op, root, c);
    return gmpi_reduce(s, r, count, t, op, root, c, GMPI_BLOCKING, MPI_INFO_NULL, NULL);
}

int MPI_Ireduce(const void *s, void *r, int count, MPI_Datatype t, MPI_Op op, int root,
                MPI_Comm c, MPI_Request *req)
{
    if (PASS_THROUGH()) return PMPI_Ireduce(s, r, count, t, op, root, c, req);
    return gmpi_reduce(s, r, count, t, op, root, c, GMPI_NONBLOCKING, MPI_INFO_NULL, req);
}

/* ---- bcast (bytes) ---- */
static const char *prep_bcast(void *b, int count, MPI_Datatype t, int root, MPI_Comm c,
                              call_t *a)
{
    size_t esz = 0;
    const char *why = count <= 0 ? why_count : gmpi_map_bytes(t, &esz);
    const gmpi_comm_t *e = why ? NULL : gmpi_comm_get(c, &why);
    a->g = e ? e->g : NULL;
    if (!why) why = gmpi_size_decide(e, GMPI_BCAST, (size_t)count * esz);
    if (why) return why;
    int size = 0;
    gcoll_comm_size(a->g, &size);
    if (root < 0 || root >= size) return why_root;
    if (!b) return why_null;
    a->coll = GMPI_BCAST;
    a->s = a->r = b;
    a->count = (size_t)count * esz;
    a->dt = GCOLL_UINT8;
    a->root = root;
    return NULL;
}

int gmpi_bcast(void *b, int count, MPI_Datatype t, int root, MPI_Comm c, gmpi_mode_t mode,
               MPI_Info info, MPI_Request *req)
{
    call_t a;
    const char *why = prep_bcast(b, count, t, root, c, &a);
    SERVE_OR(GMPI_BCAST, mode, why, a, c, req,
             mode == GMPI_BLOCKING ? PMPI_Bcast(b, count, t, root, c) :
             P_INIT(Bcast, b, count, t, root, c, info, req)
             PX_INIT(Bcast, b, count, t, root, c, info, req)
             PMPI_Ibcast(b, count, t, root, c, req));
}

int MPI_Bcast(void *b, int count, MPI_Datatype t, int root, MPI_Comm c)
{
    if (PASS_THROUGH()) return PMPI_Bcast(b, count, t, root, c);
    return gmpi_bcast(b, count, t, root, c, GMPI_BLOCKING, MPI_INFO_NULL, NULL);
}

int MPI_Ibcast(void *b, int count, MPI_Datatype t, int root, MPI_Comm c, MPI_Request *req)
{
    if (PASS_THROUGH()) return PMPI_Ibcast(b, count, t, root, c, req);
    return gmpi_bcast(b, count, t, root, c, GMPI_NONBLOCKING, MPI_INFO_NULL, req);
}

/* ---- allgather (bytes) ---- */
static const char *prep_allgather(const void *s, int sc, MPI_Datatype st, void *r, int rc,
                                  MPI_Datatype rt, MPI_Comm c, call_t *a)
{
    size_t rsz = 0, ssz = 0;
    const char *why = rc <= 0 ? why_count : gmpi_map_bytes(rt, &rsz);
    if (!why && s != MPI_IN_PLACE) {
        why = sc <= 0 ? why_count : gmpi_map_bytes(st, &ssz);
        if (!why && (size_t)sc * ssz != (size_t)rc * rsz) why = why_sizes;
    }
    const gmpi_comm_t *e = why ? NULL : gmpi_comm_get(c, &why);
    a->g = e ? e->g : NULL;
    if (!why) why = gmpi_size_decide(e, GMPI_ALLGATHER, (size_t)rc * rsz);
    if (!why && (!r || !s)) why = why_null;
    if (why) return why;
    a->coll = GMPI_ALLGATHER;
    a->count = (size_t)rc * rsz;
    a->dt = GCOLL_UINT8;
    a->r = r;
    a->s = s;
    if (s == MPI_IN_PLACE) {
        int rank = 0;
        gcoll_comm_rank(a->g, &rank);
        a->s = (char *)r + (size_t)rank * a->count;
    }
    return NULL;
}

int gmpi_allgather(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt,
                   MPI_Comm c, gmpi_mode_t mode, MPI_Info info, MPI_Request *req)
{
    call_t a;
    const char *why = prep_allgather(s, sc, st, r, rc, rt, c, &a);
    SERVE_OR(GMPI_ALLGATHER, mode, why, a, c, req,
             mode == GMPI_BLOCKING ? PMPI_Allgather(s, sc, st, r, rc, rt, c) :
             P_INIT(Allgather, s, sc, st, r, rc, rt, c, info, req)
             PX_INIT(Allgather, s, sc, st, r, rc, rt, c, info, req)
             PMPI_Iallgather(s, sc, st, r, rc, rt, c, req));
}

int MPI_Allgather(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt,
                  MPI_Comm c)
{
    if (PASS_THROUGH()) return PMPI_Allgather(s, sc, st, r, rc, rt, c);
    return gmpi_allgather(s, sc, st, r, rc, rt, c, GMPI_BLOCKING, MPI_INFO_NULL, NULL);
}

int MPI_Iallgather(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt,
                   MPI_Comm c, MPI_Request *req)
{
    if (PASS_THROUGH()) return PMPI_Iallgather(s, sc, st, r, rc, rt, c, req);
    return gmpi_allgather(s, sc, st, r, rc, rt, c, GMPI_NONBLOCKING, MPI_INFO_NULL, req);
}

/* ---- reduce_scatter_block ---- */
static const char *prep_reduce_scatter_block(const void *s, void *r, int rc, MPI_Datatype t,
                                             MPI_Op op, MPI_Comm c, call_t *a)
{
    const char *why = rc <= 0 ? why_count : gmpi_map_reduce(t, op, &a->dt, &a->op);
    /* In place, MPI leaves the rest of recvbuf as it was; libgcoll's in-place
     * form writes the result over block rank: that would need a copy of the
     * block (host memory only), so MPI takes these calls. */
    if (!why && s == MPI_IN_PLACE) why = why_inplace_rsb;
    const gmpi_comm_t *e = why ? NULL : gmpi_comm_get(c, &why);
    a->g = e ? e->g : NULL;
    if (!why)
        why = gmpi_size_decide(e, GMPI_REDUCE_SCATTER_BLOCK, (size_t)rc * gcoll_dtype_size(a->dt));
    if (!why && (!r || !s)) why = why_null;
    if (why) return why;
    a->coll = GMPI_REDUCE_SCATTER_BLOCK;
    a->s = s;
    a->r = r;
    a->count = (size_t)rc;
    return NULL;
}

int gmpi_reduce_scatter_block(const void *s, void *r, int rc, MPI_Datatype t, MPI_Op op,
                              MPI_Comm c, gmpi_mode_t mode, MPI_Info info, MPI_Request *req)
{
    call_t a;
    const char *why = prep_reduce_scatter_block(s, r, rc, t, op, c, &a);
    SERVE_OR(GMPI_REDUCE_SCATTER_BLOCK, mode, why, a, c, req,
             mode == GMPI_BLOCKING ? PMPI_Reduce_scatter_block(s, r, rc, t, op, c) :
             P_INIT(Reduce_scatter_block, s, r, rc, t, op, c, info, req)
             PX_INIT(Reduce_scatter_block, s, r, rc, t, op, c, info, req)
             PMPI_Ireduce_scatter_block(s, r, rc, t, op, c, req));
}

int MPI_Reduce_scatter_block(const void *s, void *r, int rc, MPI_Datatype t, MPI_Op op,
                             MPI_Comm c)
{
    if (PASS_THROUGH()) return PMPI_Reduce_scatter_block(s, r, rc, t, op, c);
    return gmpi_reduce_scatter_block(s, r, rc, t, op, c, GMPI_BLOCKING, MPI_INFO_NULL, NULL);
}

int MPI_Ireduce_scatter_block(const void *s, void *r, int rc, MPI_Datatype t, MPI_Op op,
                              MPI_Comm c, MPI_Request *req)
{
    if (PASS_THROUGH()) return PMPI_Ireduce_scatter_block(s, r, rc, t, op, c, req);
    return gmpi_reduce_scatter_block(s, r, rc, t, op, c, GMPI_NONBLOCKING, MPI_INFO_NULL, req);
}

/* ---- alltoall (bytes) ---- */
static const char *prep_alltoall(const void *s, int sc, MPI_Datatype st, void *r, int rc,
                                 MPI_Datatype rt, MPI_Comm c, call_t *a)
{
    size_t rsz = 0, ssz = 0;
    const char *why = rc <= 0 ? why_count : s == MPI_IN_PLACE ? why_inplace_a2a
                                                             : gmpi_map_bytes(rt, &rsz);
    if (!why) {
        why = sc <= 0 ? why_count : gmpi_map_bytes(st, &ssz);
        if (!why && (size_t)sc * ssz != (size_t)rc * rsz) why = why_sizes;
    }
    const gmpi_comm_t *e = why ? NULL : gmpi_comm_get(c, &why);
    a->g = e ? e->g : NULL;
    if (!why) why = gmpi_size_decide(e, GMPI_ALLTOALL, (size_t)rc * rsz);
    if (!why && (!r || !s)) why = why_null;
    if (why) return why;
    a->coll = GMPI_ALLTOALL;
    a->s = s;
    a->r = r;
    a->count = (size_t)rc * rsz;
    a->dt = GCOLL_UINT8;
    return NULL;
}

int gmpi_alltoall(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt,
                  MPI_Comm c, gmpi_mode_t mode, MPI_Info info, MPI_Request *req)
{
    call_t a;
    const char *why = prep_alltoall(s, sc, st, r, rc, rt, c, &a);
    SERVE_OR(GMPI_ALLTOALL, mode, why, a, c, req,
             mode == GMPI_BLOCKING ? PMPI_Alltoall(s, sc, st, r, rc, rt, c) :
             P_INIT(Alltoall, s, sc, st, r, rc, rt, c, info, req)
             PX_INIT(Alltoall, s, sc, st, r, rc, rt, c, info, req)
             PMPI_Ialltoall(s, sc, st, r, rc, rt, c, req));
}

int MPI_Alltoall(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt,
                 MPI_Comm c)
{
    if (PASS_THROUGH()) return PMPI_Alltoall(s, sc, st, r, rc, rt, c);
    return gmpi_alltoall(s, sc, st, r, rc, rt, c, GMPI_BLOCKING, MPI_INFO_NULL, NULL);
}

int MPI_Ialltoall(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt,
                  MPI_Comm c, MPI_Request *req)
{
    if (PASS_THROUGH()) return PMPI_Ialltoall(s, sc, st, r, rc, rt, c, req);
    return gmpi_alltoall(s, sc, st, r, rc, rt, c, GMPI_NONBLOCKING, MPI_INFO_NULL, req);
}

/* ---- barrier ---- */
int gmpi_barrier(MPI_Comm c, gmpi_mode_t mode, MPI_Info info, MPI_Request *req)
{
    call_t a = { .coll = GMPI_BARRIER };
    const char *why = NULL;
    const gmpi_comm_t *e = gmpi_comm_get(c, &why);
    a.g = e ? e->g : NULL;
    if (!why) why = gmpi_size_decide(e, GMPI_BARRIER, 0);
    SERVE_OR(GMPI_BARRIER, mode, why, a, c, req,
             mode == GMPI_BLOCKING ? PMPI_Barrier(c) :
             P_INIT(Barrier, c, info, req)
             PX_INIT(Barrier, c, info, req)
             PMPI_Ibarrier(c, req));
}

int MPI_Barrier(MPI_Comm c)
{
    if (PASS_THROUGH()) return PMPI_Barrier(c);
    return gmpi_barrier(c, GMPI_BLOCKING, MPI_INFO_NULL, NULL);
}

int MPI_Ibarrier(MPI_Comm c, MPI_Request *req)
{
    if (PASS_THROUGH()) return PMPI_Ibarrier(c, req);
    return gmpi_barrier(c, GMPI_NONBLOCKING, MPI_INFO_NULL, req);
}
