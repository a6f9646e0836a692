/* The public collectives: validate → detect memory type → select → build the
 * schedule → execute.  One path for every collective (coll_start); the
 * per-collective functions only describe their buffers. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "gcoll_build.h"  /* HAVE_CUDA */
#include "core/comm.h"
#include "core/config.h"
#include "core/executor.h"
#include "core/log.h"
#include "core/memtype.h"
#include "core/select.h"
#include "core/status.h"
#ifdef HAVE_CUDA
#include "cuda/cuda_ipc.h"
#endif

/* One call as the user made it, before mapping onto schedule buffers. */
typedef struct {
    gcoll_coll_t  coll;
    const char   *fn;          /* public function name, for messages */
    const void   *sendbuf;
    void         *recvbuf;
    size_t        count;
    gcoll_dtype_t dtype;
    gcoll_op_t    op;
    int           root;
} call_t;

static int is_reducing(gcoll_coll_t c)
{
    return c == GCOLL_COLL_ALLREDUCE || c == GCOLL_COLL_REDUCE || c == GCOLL_COLL_REDUCE_SCATTER;
}

static int has_root(gcoll_coll_t c)
{
    return c == GCOLL_COLL_BCAST || c == GCOLL_COLL_REDUCE;
}

static gcoll_status_t validate(gcoll_comm_t comm, const call_t *k, size_t *src_bytes,
                               size_t *dst_bytes)
{
    GCOLL_TRY(gcoll_comm_check(comm));
    if ((unsigned)k->dtype >= GCOLL_DTYPE_COUNT)
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "%s: unknown dtype %d", k->fn, (int)k->dtype);
    if (is_reducing(k->coll) && (unsigned)k->op >= GCOLL_OP_COUNT)
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "%s: unknown op %d", k->fn, (int)k->op);
    if (has_root(k->coll) && (k->root < 0 || k->root >= comm->size))
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "%s: root %d is outside [0, %d)", k->fn, k->root,
                           comm->size);
    size_t dts = gcoll_dtype_size(k->dtype);
    if (k->count > SIZE_MAX / dts / (size_t)comm->size)
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "%s: count %zu overflows the address space",
                           k->fn, k->count);
    gcoll_coll_args_t a = { .coll = k->coll, .count = k->count, .dt_size = dts };
    gcoll_coll_buf_bytes(&a, comm->size, src_bytes, dst_bytes);
    int recv_needed = k->coll != GCOLL_COLL_REDUCE || comm->rank == k->root;
    if (*src_bytes && !k->sendbuf)
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "%s: sendbuf is NULL with count %zu", k->fn,
                           k->count);
    if (*dst_bytes && recv_needed && !k->recvbuf)
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "%s: recvbuf is NULL with count %zu", k->fn,
                           k->count);
    if (k->coll == GCOLL_COLL_ALLTOALL && *src_bytes && k->sendbuf == k->recvbuf)
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "%s: in-place alltoall is not supported", k->fn);
    return GCOLL_SUCCESS;
}

/* GCOLL_CHECK=1: every rank must pass the same signature (one MPI_Allreduce
 * of the values and their negations with MPI_MIN gives min and max). */
static gcoll_status_t check_signature(gcoll_comm_t comm, const call_t *k)
{
    /* allreduce: recvbuf's memory type too, which picks the (collective)
     * path; the other collectives stage each rank's buffers on its own */
    enum { NFIELDS = 6 };
    long long v[2 * NFIELDS] = { k->coll, (long long)k->count, k->dtype,
                                 is_reducing(k->coll) ? k->op : 0, has_root(k->coll) ? k->root : 0,
                                 k->coll == GCOLL_COLL_ALLREDUCE ? gcoll_memtype_of(k->recvbuf)
                                                                 : 0 };
    long long r[2 * NFIELDS];
    for (int i = 0; i < NFIELDS; i++) v[NFIELDS + i] = -v[i];
    MPI_Allreduce(v, r, 2 * NFIELDS, MPI_LONG_LONG, MPI_MIN, comm->mpi_comm);
    for (int i = 0; i < NFIELDS; i++)
        if (r[i] != -r[NFIELDS + i])
            return GCOLL_ERROR(GCOLL_ERR_MISMATCH,
                               "%s: ranks disagree on the %s (this rank: %lld, range %lld..%lld)",
                               k->fn, (const char *[]){ "collective", "count", "dtype", "op",
                                                        "root", "memory type" }[i],
                               v[i], r[i], -r[NFIELDS + i]);
    return GCOLL_SUCCESS;
}

/* Map the user's pointers onto schedule buffers, honouring the in-place
 * conventions of gcoll.h; returns the buffers the executor gets. */
static void map_buffers(gcoll_comm_t comm, const call_t *k, gcoll_coll_args_t *a,
                        const void **send, void **recv)
{
    size_t block = k->count * a->dt_size;
    *send  = k->sendbuf;
    *recv  = k->recvbuf;
    a->src = gcoll_bref(GCOLL_BUF_SEND, 0);
    a->dst = gcoll_bref(GCOLL_BUF_RECV, 0);
    switch (k->coll) {
    case GCOLL_COLL_BCAST:
        a->src = a->dst;
        break;
    case GCOLL_COLL_ALLGATHER:
        if (k->sendbuf == (char *)k->recvbuf + (size_t)comm->rank * block)
            a->src = gcoll_bref(GCOLL_BUF_RECV, (size_t)comm->rank * block);
        break;
    case GCOLL_COLL_REDUCE_SCATTER:
        /* in place: the user's one buffer becomes RECV, the output its block */
        if (k->recvbuf == (const char *)k->sendbuf + (size_t)comm->rank * block) {
            *recv  = (void *)k->sendbuf;
            a->src = gcoll_bref(GCOLL_BUF_RECV, 0);
            a->dst = gcoll_bref(GCOLL_BUF_RECV, (size_t)comm->rank * block);
        }
        break;
    default:
        if (k->sendbuf == k->recvbuf) a->src = a->dst;
        break;
    }
}

static gcoll_status_t build(gcoll_comm_t comm, const call_t *k, const gcoll_algo_t *algo,
                            const gcoll_coll_args_t *a)
{
    gcoll_group_t world = { comm->size, comm->rank, NULL, comm->node_of };
    return gcoll_algo_build(algo, a, &world, k->dtype, k->op, &comm->sched);
}

static gcoll_status_t run_host(gcoll_comm_t comm, const call_t *k)
{
    gcoll_coll_args_t a = { .coll = k->coll, .count = k->count,
                            .dt_size = gcoll_dtype_size(k->dtype), .root = k->root,
                            .flags = comm->shm ? GCOLL_ARGS_NODE_STEPS : 0 };
    const void *send;
    void *recv;
    map_buffers(comm, k, &a, &send, &recv);
    const gcoll_algo_t *algo = gcoll_select(comm, &a);
    gcoll_status_t st = build(comm, k, algo, &a);
    if (st == GCOLL_ERR_NOT_SUPPORTED) {
        /* every rank sees the same shape and declines alike */
        const gcoll_algo_t *fallback = gcoll_select_fallback(comm, &a);
        /* once per collective: a forced algorithm that never fits would
         * otherwise log on every call of the application's hot loop */
        int level = comm->warned_fallback[k->coll] ? GCOLL_LOG_TRACE : GCOLL_LOG_WARN;
        comm->warned_fallback[k->coll] = 1;
        gcoll_log(level, "%s: %s; using %s instead", k->fn, gcoll_last_error(), fallback->name);
        gcoll_error_clear();
        algo = fallback;
        st = build(comm, k, algo, &a);
    }
    GCOLL_TRY(st);
    gcoll_trace("%s count=%zu dtype=%s op=%s root=%d: %s, %u rounds, %u steps", k->fn, k->count,
                gcoll_dtype_name(k->dtype), gcoll_op_name(k->op), k->root, algo->name,
                comm->sched.nrounds, comm->sched.nsteps);
    return gcoll_exec_run(comm, &comm->sched, send, recv);
}

/* Device buffers the device path does not serve: copy them to page-locked
 * host images (kept in the communicator), run the host path, copy the
 * result back.  The pointer relations of the in-place forms are kept by
 * placing one image inside the other. */
static gcoll_status_t run_staged(gcoll_comm_t comm, const call_t *k, size_t sbytes, size_t dbytes)
{
    call_t h = *k;
    const char *s = k->sendbuf, *r = k->recvbuf;
    int send_in_recv = s && r && s >= r && s < r + dbytes;
    int recv_in_send = s && r && !send_in_recv && r >= s && r < s + sbytes;
    size_t need = recv_in_send ? sbytes : dbytes + (send_in_recv ? 0 : sbytes);
    char *base, *hs = NULL, *hr = NULL;
    GCOLL_TRY(gcoll_comm_stage(comm, need, (void **)&base));
    if (recv_in_send) {
        hs = base;
        hr = hs + (r - s);
    } else {
        if (r && dbytes) hr = base;
        if (send_in_recv) hs = hr + (s - r);
        else if (s && sbytes) hs = base + dbytes;
    }
    if (!send_in_recv && hs) GCOLL_TRY(gcoll_cuda_to_host(hs, s, sbytes));
    if (!recv_in_send && hr) GCOLL_TRY(gcoll_cuda_to_host(hr, r, dbytes));
    h.sendbuf = hs;
    h.recvbuf = hr;
    GCOLL_TRY(run_host(comm, &h));
    if (recv_in_send) return gcoll_cuda_from_host((void *)s, hs, sbytes);
    return hr ? gcoll_cuda_from_host((void *)r, hr, dbytes) : GCOLL_SUCCESS;
}

#ifdef HAVE_CUDA
/* The communicator's CUDA IPC path, set up on device dev by the first
 * allreduce into device memory (collective: every rank makes that call), or
 * NULL where it cannot serve (set-up failed once: staged from then on, said
 * once at WARN). */
static gcoll_status_t cuda_ipc_for(gcoll_comm_t comm, int dev, gcoll_comm_t *rail,
                                   gcoll_cuda_ipc_t **ipc)
{
    *ipc = NULL;
    *rail = NULL;
    if (comm->cuda_ipc_state == 0) {
        gcoll_status_t st = gcoll_cuda_ipc_create(comm, dev, &comm->cuda_ipc);
        if (st == GCOLL_ERR_NOT_SUPPORTED) {
            gcoll_warn("device buffers are staged through host memory: %s", gcoll_last_error());
            gcoll_error_clear();
            comm->cuda_ipc_state = -1;
            return GCOLL_SUCCESS;
        }
        GCOLL_TRY(st);
        comm->cuda_ipc_state = 1;
    }
    if (comm->cuda_ipc_state < 0) return GCOLL_SUCCESS;
    if (comm->nnodes > 1) {
        gcoll_comm_t node;
        GCOLL_TRY(gcoll_comm_levels(comm, &node, rail));
    }
    *ipc = comm->cuda_ipc;
    return GCOLL_SUCCESS;
}
#endif

/* Device buffers.  An allreduce into device memory runs on the CUDA IPC
 * path: which path runs is decided by recvbuf's memory type, the same on
 * every rank (gcoll.h; GCOLL_CHECK=1 verifies it), so the ranks never
 * split between paths.  Everything else is staged through host memory. */
static gcoll_status_t run_cuda(gcoll_comm_t comm, const call_t *k, int send_dev, int recv_dev,
                               size_t sbytes, size_t dbytes)
{
#ifdef HAVE_CUDA
    if (k->coll == GCOLL_COLL_ALLREDUCE && recv_dev >= 0) {
        gcoll_cuda_ipc_t *ipc;
        gcoll_comm_t rail;
        GCOLL_TRY(cuda_ipc_for(comm, recv_dev, &rail, &ipc));
        if (ipc) {
            gcoll_trace("%s count=%zu dtype=%s op=%s: CUDA IPC on device %d%s", k->fn, k->count,
                        gcoll_dtype_name(k->dtype), gcoll_op_name(k->op), recv_dev,
                        rail ? ", rails through host memory" : "");
            return gcoll_cuda_ipc_allreduce(ipc, k->sendbuf, send_dev, k->recvbuf, recv_dev,
                                            k->count, k->dtype, k->op, rail);
        }
    }
#else
    (void)send_dev; (void)recv_dev;
#endif
    return run_staged(comm, k, sbytes, dbytes);
}

static gcoll_status_t coll_start(gcoll_comm_t comm, const call_t *k)
{
    size_t sbytes = 0, dbytes = 0;
    gcoll_error_clear();
    GCOLL_TRY(validate(comm, k, &sbytes, &dbytes));
    if (gcoll_config.check) GCOLL_TRY(check_signature(comm, k));
    gcoll_status_t st = GCOLL_SUCCESS;   /* nothing to move: no communication at all */
    if (sbytes || dbytes || k->coll == GCOLL_COLL_BARRIER) {
        /* one pointer query per buffer and call (none without a GPU) */
        int send_dev = gcoll_cuda_device_of(k->sendbuf);
        int recv_dev = gcoll_cuda_device_of(k->recvbuf);
        st = send_dev >= 0 || recv_dev >= 0 ? run_cuda(comm, k, send_dev, recv_dev, sbytes, dbytes)
                                            : run_host(comm, k);
    }
    if (st == GCOLL_SUCCESS) comm->stats.calls++;   /* count-0 calls count too */
    return st;
}

gcoll_status_t gcoll_allreduce(const void *sendbuf, void *recvbuf, size_t count,
                               gcoll_dtype_t dtype, gcoll_op_t op, gcoll_comm_t comm)
{
    call_t k = { GCOLL_COLL_ALLREDUCE, "gcoll_allreduce", sendbuf, recvbuf, count, dtype, op, 0 };
    return coll_start(comm, &k);
}

gcoll_status_t gcoll_bcast(void *buf, size_t count, gcoll_dtype_t dtype, int root,
                           gcoll_comm_t comm)
{
    call_t k = { GCOLL_COLL_BCAST, "gcoll_bcast", buf, buf, count, dtype, GCOLL_SUM, root };
    return coll_start(comm, &k);
}

gcoll_status_t gcoll_reduce(const void *sendbuf, void *recvbuf, size_t count,
                            gcoll_dtype_t dtype, gcoll_op_t op, int root, gcoll_comm_t comm)
{
    call_t k = { GCOLL_COLL_REDUCE, "gcoll_reduce", sendbuf, recvbuf, count, dtype, op, root };
    return coll_start(comm, &k);
}

gcoll_status_t gcoll_allgather(const void *sendbuf, void *recvbuf, size_t sendcount,
                               gcoll_dtype_t dtype, gcoll_comm_t comm)
{
    call_t k = { GCOLL_COLL_ALLGATHER, "gcoll_allgather", sendbuf, recvbuf, sendcount, dtype,
                 GCOLL_SUM, 0 };
    return coll_start(comm, &k);
}

gcoll_status_t gcoll_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                                    gcoll_dtype_t dtype, gcoll_op_t op, gcoll_comm_t comm)
{
    call_t k = { GCOLL_COLL_REDUCE_SCATTER, "gcoll_reduce_scatter", sendbuf, recvbuf, recvcount,
                 dtype, op, 0 };
    return coll_start(comm, &k);
}

gcoll_status_t gcoll_alltoall(const void *sendbuf, void *recvbuf, size_t count,
                              gcoll_dtype_t dtype, gcoll_comm_t comm)
{
    call_t k = { GCOLL_COLL_ALLTOALL, "gcoll_alltoall", sendbuf, recvbuf, count, dtype,
                 GCOLL_SUM, 0 };
    return coll_start(comm, &k);
}

gcoll_status_t gcoll_barrier(gcoll_comm_t comm)
{
    call_t k = { GCOLL_COLL_BARRIER, "gcoll_barrier", NULL, NULL, 0, GCOLL_UINT8, GCOLL_SUM, 0 };
    return coll_start(comm, &k);
}
