/* C side of the Fortran 2008 binding (module gcoll, gcoll.F90).
 *
 * Two things Fortran cannot do portably by itself:
 * - turn a type(MPI_Comm)'s MPI_VAL (an MPI_Fint) into a C MPI_Comm: only
 *   MPI_Comm_f2c, a C function (often a macro), knows how;
 * - pass a negative count: Fortran has no unsigned integers, and a negative
 *   default integer converted to size_t would ask libgcoll for ~2^64
 *   elements.  Counts arrive here as int64_t and are checked.
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
