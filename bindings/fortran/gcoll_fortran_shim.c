/* SPDX-License-Identifier: BSD-3-Clause */
/* C side of the Fortran 2008 binding (module gcoll, gcoll.F90).
 *
 * Two things Fortran cannot do portably by itself (and, for the nonblocking
 * and persistent collectives, one entry point that posts any of them):
 * - turn a type(MPI_Comm)'s MPI_VAL (an MPI_Fint) into a C MPI_Comm: only
 *   MPI_Comm_f2c, a C function (often a macro), knows how;
 * - pass a negative count: Fortran has no unsigned integers, and a negative
 *   default integer converted to size_t would ask libgcoll for ~2^64
 *   elements.  Counts arrive here as int64_t and are checked.
 * And it builds gcoll_compress_params_t from the module's fields (a
 * Fortran logical is no C int).
 *
 * Failures found here get a sentence of their own, kept per thread;
 * gcoll_f08_last_error() returns it while it is the newest failure, else
 * libgcoll's.  Every entry point clears it first, as every public libgcoll
 * call clears libgcoll's, so "the last failure" means the same in Fortran as
 * in C.  Built into libgcoll_f08 with the module; libgcoll has no Fortran. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <gcoll.h>

static _Thread_local char shim_error[256];

static gcoll_status_t shim_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static gcoll_status_t shim_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(shim_error, sizeof(shim_error), fmt, ap);
    va_end(ap);
    return GCOLL_ERR_INVALID_ARG;
}

#define SHIM_COUNT(_fn, _name, _count) \
    do { \
        shim_error[0] = '\0'; \
        if ((_count) < 0) return shim_fail("%s: %s is %lld, must be >= 0", (_fn), (_name), \
                                           (long long)(_count)); \
    } while (0)

const char *gcoll_f08_last_error(void)
{
    return shim_error[0] ? shim_error : gcoll_last_error();
}

int gcoll_f08_comm_create(MPI_Fint fcomm, gcoll_comm_t *comm)
{
    int init = 0, fini = 0;
    shim_error[0] = '\0';
    MPI_Initialized(&init);
    MPI_Finalized(&fini);
    if (!init || fini)
        return shim_fail("gcoll_comm_create: MPI is %s", init ? "already finalized" : "not initialized");
    MPI_Comm c = MPI_Comm_f2c(fcomm);
#ifdef OPEN_MPI
    if (c == NULL)   /* Open MPI's f2c answers NULL for an index it does not know */
        return shim_fail("gcoll_comm_create: %d is not a valid Fortran MPI_Comm handle", (int)fcomm);
#endif
    return gcoll_comm_create(c, comm);
}

int gcoll_f08_comm_destroy(gcoll_comm_t comm)
{
    shim_error[0] = '\0';
    return gcoll_comm_destroy(comm);
}

int gcoll_f08_comm_rank(gcoll_comm_t comm, int *rank)
{
    shim_error[0] = '\0';
    return gcoll_comm_rank(comm, rank);
}

int gcoll_f08_comm_size(gcoll_comm_t comm, int *size)
{
    shim_error[0] = '\0';
    return gcoll_comm_size(comm, size);
}

int gcoll_f08_comm_get_stats(gcoll_comm_t comm, gcoll_stats_t *stats)
{
    shim_error[0] = '\0';
    return gcoll_comm_get_stats(comm, stats);
}

int gcoll_f08_allreduce(const void *s, void *r, int64_t count, int dtype, int op, gcoll_comm_t comm)
{
    SHIM_COUNT("gcoll_allreduce", "count", count);
    return gcoll_allreduce(s, r, (size_t)count, (gcoll_dtype_t)dtype, (gcoll_op_t)op, comm);
}

int gcoll_f08_bcast(void *buf, int64_t count, int dtype, int root, gcoll_comm_t comm)
{
    SHIM_COUNT("gcoll_bcast", "count", count);
    return gcoll_bcast(buf, (size_t)count, (gcoll_dtype_t)dtype, root, comm);
}

int gcoll_f08_reduce(const void *s, void *r, int64_t count, int dtype, int op, int root,
                     gcoll_comm_t comm)
{
    SHIM_COUNT("gcoll_reduce", "count", count);
    return gcoll_reduce(s, r, (size_t)count, (gcoll_dtype_t)dtype, (gcoll_op_t)op, root, comm);
}

int gcoll_f08_allgather(const void *s, void *r, int64_t sendcount, int dtype, gcoll_comm_t comm)
{
    SHIM_COUNT("gcoll_allgather", "sendcount", sendcount);
    return gcoll_allgather(s, r, (size_t)sendcount, (gcoll_dtype_t)dtype, comm);
}

int gcoll_f08_reduce_scatter(const void *s, void *r, int64_t recvcount, int dtype, int op,
                             gcoll_comm_t comm)
{
    SHIM_COUNT("gcoll_reduce_scatter", "recvcount", recvcount);
    return gcoll_reduce_scatter(s, r, (size_t)recvcount, (gcoll_dtype_t)dtype, (gcoll_op_t)op, comm);
}

int gcoll_f08_alltoall(const void *s, void *r, int64_t count, int dtype, gcoll_comm_t comm)
{
    SHIM_COUNT("gcoll_alltoall", "count", count);
    return gcoll_alltoall(s, r, (size_t)count, (gcoll_dtype_t)dtype, comm);
}

int gcoll_f08_barrier(gcoll_comm_t comm)
{
    shim_error[0] = '\0';
    return gcoll_barrier(comm);
}

/* ---- nonblocking and persistent collectives ----------------------------- *
 * One entry point posts any of them: the module passes the collective, i
 * or _init, and the buffers' addresses (it has already checked they are
 * contiguous: a Fortran temporary would be gone before the request
 * completes).  The numbering is the module's NB_* parameters (not F08_*:
 * Fortran ignores case, and the module has f08_* interfaces). */
enum { NB_ALLREDUCE, NB_BCAST, NB_REDUCE, NB_ALLGATHER, NB_REDUCE_SCATTER,
       NB_ALLTOALL, NB_BARRIER, NB_COLL_COUNT };

static const struct {
    const char *post, *init, *count;   /* function names; the count's name */
} f08_colls[NB_COLL_COUNT] = {
    [NB_ALLREDUCE]      = { "gcoll_iallreduce", "gcoll_allreduce_init", "count" },
    [NB_BCAST]          = { "gcoll_ibcast", "gcoll_bcast_init", "count" },
    [NB_REDUCE]         = { "gcoll_ireduce", "gcoll_reduce_init", "count" },
    [NB_ALLGATHER]      = { "gcoll_iallgather", "gcoll_allgather_init", "sendcount" },
    [NB_REDUCE_SCATTER] = { "gcoll_ireduce_scatter", "gcoll_reduce_scatter_init", "recvcount" },
    [NB_ALLTOALL]       = { "gcoll_ialltoall", "gcoll_alltoall_init", "count" },
    [NB_BARRIER]        = { "gcoll_ibarrier", "gcoll_barrier_init", "count" },
};

/* A failure the module found (a buffer not contiguous), as a shim sentence. */
int gcoll_f08_fail(const char *fn, const char *arg)
{
    return shim_fail("%s: %s is not contiguous (a nonblocking call cannot use the temporary "
                     "copy Fortran would pass)", fn, arg);
}

int gcoll_f08_post(int coll, int persistent, const void *s, void *r, int64_t count, int dtype,
                   int op, int root, gcoll_comm_t comm, gcoll_request_t *req)
{
    if (coll < 0 || coll >= NB_COLL_COUNT) return shim_fail("gcoll_f08_post: collective %d", coll);
    *req = GCOLL_REQUEST_NULL;
    SHIM_COUNT(persistent ? f08_colls[coll].init : f08_colls[coll].post, f08_colls[coll].count,
               count);
    size_t n = (size_t)count;
    gcoll_dtype_t dt = (gcoll_dtype_t)dtype;
    gcoll_op_t o = (gcoll_op_t)op;
    switch (coll) {
    case NB_ALLREDUCE:
        return persistent ? gcoll_allreduce_init(s, r, n, dt, o, comm, req)
                          : gcoll_iallreduce(s, r, n, dt, o, comm, req);
    case NB_BCAST:   /* the one buffer comes as r */
        return persistent ? gcoll_bcast_init(r, n, dt, root, comm, req)
                          : gcoll_ibcast(r, n, dt, root, comm, req);
    case NB_REDUCE:
        return persistent ? gcoll_reduce_init(s, r, n, dt, o, root, comm, req)
                          : gcoll_ireduce(s, r, n, dt, o, root, comm, req);
    case NB_ALLGATHER:
        return persistent ? gcoll_allgather_init(s, r, n, dt, comm, req)
                          : gcoll_iallgather(s, r, n, dt, comm, req);
    case NB_REDUCE_SCATTER:
        return persistent ? gcoll_reduce_scatter_init(s, r, n, dt, o, comm, req)
                          : gcoll_ireduce_scatter(s, r, n, dt, o, comm, req);
    case NB_ALLTOALL:
        return persistent ? gcoll_alltoall_init(s, r, n, dt, comm, req)
                          : gcoll_ialltoall(s, r, n, dt, comm, req);
    default:
        return persistent ? gcoll_barrier_init(comm, req) : gcoll_ibarrier(comm, req);
    }
}

int gcoll_f08_start(gcoll_request_t req)
{
    shim_error[0] = '\0';
    return gcoll_start(req);
}

int gcoll_f08_test(gcoll_request_t *req, int *done)
{
    shim_error[0] = '\0';
    return gcoll_test(req, done);
}

int gcoll_f08_wait(gcoll_request_t *req)
{
    shim_error[0] = '\0';
    return gcoll_wait(req);
}

int gcoll_f08_waitall(int64_t n, gcoll_request_t *reqs)
{
    SHIM_COUNT("gcoll_waitall", "count", n);
    return gcoll_waitall((size_t)n, reqs);
}

int gcoll_f08_request_free(gcoll_request_t *req)
{
    shim_error[0] = '\0';
    return gcoll_request_free(req);
}

/* ---- gradient compression ------------------------------------------------ */

/* gcoll_compressor_create is collective and refuses bad parameters on every
 * rank alike: a negative count or onebit_block (which C's size_t cannot
 * hold) is still taken into that agreement, as a kind C refuses, so a rank
 * that passed one does not leave the others waiting in it. */
int gcoll_f08_compressor_create(gcoll_comm_t comm, int64_t count, int kind, double topk_ratio,
                                int64_t onebit_block, int no_error_feedback,
                                gcoll_compressor_t *z)
{
    gcoll_compress_params_t p = { (gcoll_compress_t)kind, topk_ratio, (size_t)onebit_block,
                                  no_error_feedback };
    int negative = count < 0 || onebit_block < 0;
    shim_error[0] = '\0';
    *z = NULL;
    if (negative) p.kind = GCOLL_COMPRESS_COUNT;
    gcoll_status_t st = gcoll_compressor_create(comm, negative ? 0 : (size_t)count, &p, z);
    if (!negative) return st;
    return shim_fail("gcoll_compressor_create: %s is %lld, must be >= 0",
                     count < 0 ? "count" : "onebit_block",
                     (long long)(count < 0 ? count : onebit_block));
}

int gcoll_f08_compressor_destroy(gcoll_compressor_t z)
{
    shim_error[0] = '\0';
    return gcoll_compressor_destroy(z);
}

int gcoll_f08_compressor_reset(gcoll_compressor_t z)
{
    shim_error[0] = '\0';
    return gcoll_compressor_reset(z);
}

int gcoll_f08_allreduce_compressed(const void *s, void *r, int64_t count, int dtype, int op,
                                   gcoll_compressor_t z)
{
    SHIM_COUNT("gcoll_allreduce_compressed", "count", count);
    return gcoll_allreduce_compressed(s, r, (size_t)count, (gcoll_dtype_t)dtype, (gcoll_op_t)op,
                                      z);
}

/* The module has checked that the buffers are contiguous (see gcoll_f08_post). */
int gcoll_f08_iallreduce_compressed(const void *s, void *r, int64_t count, int dtype, int op,
                                    gcoll_compressor_t z, gcoll_request_t *req)
{
    *req = GCOLL_REQUEST_NULL;
    SHIM_COUNT("gcoll_iallreduce_compressed", "count", count);
    return gcoll_iallreduce_compressed(s, r, (size_t)count, (gcoll_dtype_t)dtype, (gcoll_op_t)op,
                                       z, req);
}
