/* SPDX-License-Identifier: BSD-3-Clause */
/* The public collectives: validate → detect memory type → select → build the
 * schedule into a request → start it on the progress engine → (blocking
 * forms) wait.  One path for every collective (coll_post); the
 * per-collective functions only describe their buffers.  Device buffers and
 * empty calls are "eager": they run when started, after the communicator's
 * earlier requests complete. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "gcoll_build.h"  /* HAVE_CUDA */
#include "core/comm.h"
#include "base/config.h"
#include "core/coll.h"
#include "core/engine.h"
#include "core/executor.h"
#include "core/failure.h"
#include "core/request_pool.h"
#include "base/log.h"
#include "core/memtype.h"
#include "base/clock.h"
#include "core/select.h"
#include "core/select_online.h"
#include "base/status.h"
#ifdef HAVE_CUDA
#include "cuda/cuda_ipc.h"
#endif

typedef gcoll_call_t call_t;

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
    if (*src_bytes)   /* a build without CUDA refuses device buffers */
        GCOLL_TRY(gcoll_memtype_servable(k->fn, k->coll == GCOLL_COLL_BCAST ? "buf" : "sendbuf",
                                         k->sendbuf));
    if (*dst_bytes && recv_needed && k->recvbuf != k->sendbuf)
        GCOLL_TRY(gcoll_memtype_servable(k->fn, "recvbuf", k->recvbuf));
    /* The buffers may overlap only in the in-place form of gcoll.h: the
     * schedules read sendbuf while they write recvbuf, so any other overlap
     * (allgather's sendbuf == recvbuf on a rank other than 0, say) would
     * read bytes already overwritten.  gcoll.h forbids it; refused here. */
    uintptr_t s = (uintptr_t)k->sendbuf, r = (uintptr_t)k->recvbuf;
    size_t mine = (size_t)comm->rank * k->count * dts;
    if (*src_bytes && *dst_bytes && recv_needed && k->coll != GCOLL_COLL_BCAST &&
        s < r + *dst_bytes && r < s + *src_bytes) {
        const char *form = "sendbuf == recvbuf";
        int in_place = s == r;
        if (k->coll == GCOLL_COLL_ALLGATHER) {
            form = "sendbuf == recvbuf + rank * sendcount";
            in_place = s == r + mine;
        } else if (k->coll == GCOLL_COLL_REDUCE_SCATTER) {
            form = "recvbuf == sendbuf + rank * recvcount";
            in_place = r == s + mine;
        } else if (k->coll == GCOLL_COLL_ALLTOALL) {
            form = "alltoall has none";
            in_place = 0;
        }
        if (!in_place)
            return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "%s: sendbuf %p (%zu bytes) and recvbuf %p "
                               "(%zu bytes) overlap on rank %d, but not in the in-place form "
                               "(%s); partially overlapping buffers are not allowed", k->fn,
                               k->sendbuf, *src_bytes, k->recvbuf, *dst_bytes, comm->rank,
                               form);
    }
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
    if (MPI_Allreduce(v, r, 2 * NFIELDS, MPI_LONG_LONG, MPI_MIN, comm->mpi_comm) != MPI_SUCCESS)
        return GCOLL_ERROR(GCOLL_ERR_TRANSPORT, "%s: GCOLL_CHECK's MPI_Allreduce failed", k->fn);
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
                            const gcoll_coll_args_t *a, gcoll_sched_t *s)
{
    gcoll_group_t world = { comm->size, comm->rank, NULL, comm->node_of };
    return gcoll_algo_build(algo, a, &world, k->dtype, k->op, s);
}

/* What runs a call, at TRACE (run_coll.sh reads these lines). */
static void trace_call(const struct gcoll_request *r, const char *how)
{
    const call_t *k = &r->call;
    gcoll_trace("%s count=%zu dtype=%s op=%s root=%d: %s, %u rounds, %u steps%s", k->fn,
                k->count, gcoll_dtype_name(k->dtype), gcoll_op_name(k->op), k->root,
                r->algo_name, r->sched.nrounds, r->sched.nsteps, how);
}

/* The same call, but for its name (the blocking, nonblocking and
 * persistent forms of one collective build the same schedule). */
static int same_call(const call_t *a, const call_t *b)
{
    return a->coll == b->coll && a->sendbuf == b->sendbuf && a->recvbuf == b->recvbuf &&
           a->count == b->count && a->dtype == b->dtype && a->op == b->op &&
           a->root == b->root && a->compressor == b->compressor;
}

/* r is to run call k: keeps r's schedule when it was built for the same
 * call under the selection in force (a loop of identical calls, every
 * training step, takes the same pooled request back: no select, no build),
 * else describes k and says a build is needed.  Every rank decides alike:
 * selection and build depend on the call's shape only, never on this
 * rank's pointers, so a rank that rebuilds gets the schedule it kept. */
static int keeps_schedule(gcoll_comm_t comm, struct gcoll_request *r, const call_t *k)
{
    if (r->built && r->built_epoch == comm->select_epoch && same_call(&r->call, k)) {
        r->call.fn = k->fn;
        trace_call(r, " (kept)");
        return 1;
    }
    r->call  = *k;
    r->built = 0;
    return 0;
}

/* Select an algorithm and build its schedule into r, with r's buffers. */
static gcoll_status_t prepare_host(gcoll_comm_t comm, struct gcoll_request *r)
{
    const call_t *k = &r->call;
    gcoll_coll_args_t a = { .coll = k->coll, .count = k->count,
                            .dt_size = gcoll_dtype_size(k->dtype), .root = k->root,
                            .flags = comm->shm ? GCOLL_ARGS_NODE_STEPS : 0 };
    const void *send;
    void *recv;
    map_buffers(comm, k, &a, &send, &recv);
    const gcoll_algo_t *algo = gcoll_select(comm, &a);
    gcoll_status_t st = build(comm, k, algo, &a, &r->sched);
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
        st = build(comm, k, algo, &a, &r->sched);
    }
    GCOLL_TRY(st);
    r->algo_name = algo->name;
    trace_call(r, "");
    if (r->sched.scratch_bytes) GCOLL_TRY(gcoll_request_scratch(r, r->sched.scratch_bytes));
    r->bufs[GCOLL_BUF_SEND] = (void *)send;
    r->bufs[GCOLL_BUF_RECV] = recv;
    r->bufs[GCOLL_BUF_SCRATCH] = r->scratch;
    r->built = 1;
    r->built_epoch = comm->select_epoch;
    return GCOLL_SUCCESS;
}

/* The outcome of a request that failed, as this thread's last error (the
 * failure may have been met by the progress thread). */
static gcoll_status_t report(const struct gcoll_request *r, gcoll_status_t st)
{
    if (st != GCOLL_SUCCESS) gcoll_error_restore(r->err);
    return st;
}

/* The direct path.  A loop of one small blocking collective on one node
 * runs one NODE step per call (a ring op, shm_ring.c), and the machinery
 * around that step (a pooled request, the executor's rounds, the engine's
 * queue, pass and wait, the hand-over to the progress thread) cost more
 * than the step: an 8-byte bcast took 0.14 us at 2 ranks where the
 * segment's own call takes 0.05 (Zen 4 guest, slow state).  So the request
 * of a blocking call whose schedule is that lone step stays with the
 * communicator (comm->direct, one per collective) instead of going back
 * to the pool, and the same call again, with no request outstanding,
 * starts the step itself and spins on it as the engine's wait would
 * (gcoll_exec_direct).  A step not finished by then is queued where it
 * stands and waited for as any other request: sleeping, GCOLL_TIMEOUT and
 * a peer's failure stay the engine's. */
static struct gcoll_request *direct_hit(gcoll_comm_t comm, const call_t *k)
{
    struct gcoll_request *r = comm->direct[k->coll];
    if (!r || r->built_epoch != comm->select_epoch || !same_call(&r->call, k)) return NULL;
    r->call.fn = k->fn;
    trace_call(r, " (kept)");
    return r;
}

/* After the call: r stays as its collective's direct request, or goes back
 * to the pool (and leaves that place if it held it). */
static void direct_keep(gcoll_comm_t comm, struct gcoll_request *r, gcoll_status_t st)
{
    struct gcoll_request **slot = &comm->direct[r->call.coll];
    if (st == GCOLL_SUCCESS && gcoll_exec_lone_node(r)) {
        if (*slot && *slot != r) gcoll_request_put(*slot);
        *slot = r;
        return;
    }
    if (*slot == r) *slot = NULL;
    gcoll_request_put(r);
}

void gcoll_coll_direct_free(gcoll_comm_t comm)
{
    gcoll_engine_lock();
    for (int c = 0; c < GCOLL_COLL_COUNT; c++) {
        if (comm->direct[c]) gcoll_request_put(comm->direct[c]);
        comm->direct[c] = NULL;
    }
    gcoll_engine_unlock();
}

/* The request for blocking call k with its schedule: the direct one, or a
 * pooled one (its kept schedule, else built now); *r = NULL on failure. */
static gcoll_status_t host_request(gcoll_comm_t comm, const call_t *k, struct gcoll_request **r)
{
    if ((*r = direct_hit(comm, k))) return GCOLL_SUCCESS;
    GCOLL_TRY(gcoll_request_get(comm, r));
    gcoll_status_t st = keeps_schedule(comm, *r, k) ? GCOLL_SUCCESS : prepare_host(comm, *r);
    if (st != GCOLL_SUCCESS) {
        gcoll_request_put(*r);
        *r = NULL;
    }
    return st;
}

/* A blocking collective on host buffers: post + wait on that request,
 * under one hold of the engine's lock (gcoll_engine_wait lets it go while
 * it idles). */
static gcoll_status_t run_host(gcoll_comm_t comm, const call_t *k)
{
    struct gcoll_request *r;
    int timed;
    double t0 = 0;
    gcoll_engine_lock();   /* one lock for the whole call: pool, build, wait */
    gcoll_select_online_t *online =
        gcoll_select_online_of(comm, k->coll, k->count * gcoll_dtype_size(k->dtype), &timed);
    if (timed) t0 = gcoll_clock_now();
    gcoll_status_t st = host_request(comm, k, &r);
    if (st == GCOLL_SUCCESS) {
        int done = 0;
        if (gcoll_engine_idle() && gcoll_exec_lone_node(r)) {   /* queued requests go first */
            st = gcoll_exec_direct(r, &done);
            if (done && st == GCOLL_SUCCESS) comm->stats.calls++;
            if (done) comm->direct_done++;
            else comm->direct_handed++;
        } else {
            gcoll_exec_start(r);
        }
        if (!done) {
            gcoll_engine_enqueue(r, 1);
            st = report(r, gcoll_engine_wait(r));   /* a failure revoked comm already */
        }
        direct_keep(comm, r, st);
    }
    gcoll_engine_unlock();   /* failed before the wait: the caller revokes (gcoll_coll_failed) */
    if (online && st == GCOLL_SUCCESS)
        gcoll_select_online_step(comm, online, timed ? gcoll_clock_now() - t0 : 0);
    return st;
}

gcoll_status_t gcoll_coll_failed(gcoll_comm_t comm, gcoll_status_t st)
{
    if (st == GCOLL_SUCCESS) return st;
    char why[512];
    snprintf(why, sizeof(why), "%s", gcoll_last_error());
    gcoll_engine_lock();
    gcoll_comm_fail(comm, st);
    gcoll_engine_unlock();
    gcoll_error_restore(why);
    return st;
}

/* Device buffers the device path does not serve: copy them to page-locked
 * host images (kept in the communicator), run the host path, copy the
 * result back.  The pointer relations of the in-place forms are kept by
 * placing one image inside the other. */
void gcoll_stage_layout(const void *sendbuf, size_t sbytes, const void *recvbuf, size_t dbytes,
                        gcoll_stage_layout_t *l)
{
    const char *s = sendbuf, *r = recvbuf;
    memset(l, 0, sizeof(*l));
    /* inside: the whole buffer (in-place reduce_scatter on rank 0 has
     * recvbuf == sendbuf with the send buffer the larger: recv inside send);
     * buffers that merely overlap are staged apart, so no image ever
     * reaches past the area */
    l->send_in_recv = s && r && s >= r && (size_t)(s - r) < dbytes &&
                      sbytes <= dbytes - (size_t)(s - r);
    l->recv_in_send = s && r && !l->send_in_recv && r >= s && (size_t)(r - s) < sbytes &&
                      dbytes <= sbytes - (size_t)(r - s);
    l->need = l->recv_in_send ? sbytes : dbytes + (l->send_in_recv ? 0 : sbytes);
    if (l->recv_in_send) {
        l->has_send = l->has_recv = 1;
        l->recv_off = (size_t)(r - s);
        return;
    }
    l->has_recv = r && dbytes;
    if (l->send_in_recv) {
        l->has_send = 1;
        l->send_off = (size_t)(s - r);
    } else if (s && sbytes) {
        l->has_send = 1;
        l->send_off = dbytes;
    }
}

static gcoll_status_t run_staged(gcoll_comm_t comm, const call_t *k, size_t sbytes, size_t dbytes)
{
    call_t h = *k;
    const char *s = k->sendbuf, *r = k->recvbuf;
    gcoll_stage_layout_t l;
    gcoll_stage_layout(s, sbytes, r, dbytes, &l);
    char *base, *hs, *hr;
    GCOLL_TRY(gcoll_comm_stage(comm, l.need, (void **)&base));
    hs = l.has_send ? base + l.send_off : NULL;
    hr = l.has_recv ? base + l.recv_off : NULL;
    if (!l.send_in_recv && hs) GCOLL_TRY(gcoll_cuda_to_host(hs, s, sbytes));
    if (!l.recv_in_send && hr) GCOLL_TRY(gcoll_cuda_to_host(hr, r, dbytes));
    h.sendbuf = hs;
    h.recvbuf = hr;
    GCOLL_TRY(run_host(comm, &h));
    if (l.recv_in_send) return gcoll_cuda_from_host((void *)s, hs, sbytes);
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
                               size_t sbytes, size_t dbytes, int *staged)
{
    *staged = 0;
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
    *staged = 1;   /* its host request counts the call */
    return run_staged(comm, k, sbytes, dbytes);
}

/* What a call moves, and where its buffers live. */
typedef struct {
    size_t sbytes, dbytes;
    int    send_dev, recv_dev;   /* CUDA device, or -1 for host memory */
} shape_t;

static int moves(const call_t *k, const shape_t *sh)
{
    return sh->sbytes || sh->dbytes || k->coll == GCOLL_COLL_BARRIER;
}

static int eager(const call_t *k, const shape_t *sh)
{
    return !moves(k, sh) || sh->send_dev >= 0 || sh->recv_dev >= 0;
}

/* The call's arguments checked, and where its buffers live.  validate is
 * a pure function of the call and the communicator's size and rank, so the
 * last call of each collective that passed is kept and an identical one is
 * not checked again (a tenth of a small call); the memory types are asked
 * again, as a buffer's type can change under the same address. */
static gcoll_status_t call_shape(gcoll_comm_t comm, const call_t *k, shape_t *sh)
{
    sh->sbytes = sh->dbytes = 0;
    sh->send_dev = sh->recv_dev = -1;
    GCOLL_TRY(gcoll_comm_check(comm));
    if (same_call(&comm->checked[k->coll].call, k)) {
        sh->sbytes = comm->checked[k->coll].sbytes;
        sh->dbytes = comm->checked[k->coll].dbytes;
    } else {
        GCOLL_TRY(validate(comm, k, &sh->sbytes, &sh->dbytes));
        comm->checked[k->coll].call   = *k;
        comm->checked[k->coll].sbytes = sh->sbytes;
        comm->checked[k->coll].dbytes = sh->dbytes;
    }
    if (moves(k, sh)) {
        /* one pointer query per buffer and call (none without a GPU) */
        sh->send_dev = gcoll_cuda_device_of(k->sendbuf);
        sh->recv_dev = gcoll_cuda_device_of(k->recvbuf);
    }
    return GCOLL_SUCCESS;
}

/* At post: call_shape, and GCOLL_CHECK's agreement of all ranks (once per
 * post or init; a persistent request's starts are not checked again). */
static gcoll_status_t check_call(gcoll_comm_t comm, const call_t *k, shape_t *sh)
{
    GCOLL_TRY(call_shape(comm, k, sh));
    if (comm->cfg.check) GCOLL_TRY(check_signature(comm, k));
    return GCOLL_SUCCESS;
}

/* An eager call: nothing to move, or device buffers.  The device path uses
 * the node's segment outside the engine, so the communicator's earlier
 * requests complete first.  Counts the call unless a host request did. */
static gcoll_status_t run_eager(gcoll_comm_t comm, const call_t *k, const shape_t *sh)
{
    int staged = 0;
    gcoll_status_t st = GCOLL_SUCCESS;
    if (moves(k, sh)) {
        gcoll_engine_lock();
        gcoll_engine_drain(comm);   /* their outcomes stay with their requests */
        gcoll_engine_unlock();
        gcoll_error_clear();
        st = run_cuda(comm, k, sh->send_dev, sh->recv_dev, sh->sbytes, sh->dbytes, &staged);
    }
    if (st == GCOLL_SUCCESS && !staged) {   /* count-0 calls count too */
        gcoll_engine_lock();
        comm->stats.calls++;
        gcoll_engine_unlock();
    }
    return st;
}

/* The blocking collectives: post + wait. */
static gcoll_status_t coll_start(gcoll_comm_t comm, const call_t *k)
{
    shape_t sh;
    gcoll_error_clear();
    GCOLL_TRY(check_call(comm, k, &sh));
    GCOLL_TRY(gcoll_comm_usable(comm));
    return gcoll_coll_failed(comm, eager(k, &sh) ? run_eager(comm, k, &sh) : run_host(comm, k));
}

/* ---- nonblocking and persistent requests --------------------------------- */

static gcoll_status_t request_check(struct gcoll_request *r, const char *fn)
{
    if (!r || r->magic != GCOLL_REQUEST_MAGIC)
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "%s: %p is not a live request", fn, (void *)r);
    return GCOLL_SUCCESS;
}

/* Start r: an eager one runs now and is complete on return. */
static void request_start(struct gcoll_request *r)
{
    r->started = 1;
    if (r->eager) {
        shape_t sh;
        gcoll_status_t st = call_shape(r->comm, &r->call, &sh);   /* checked at post */
        if (st == GCOLL_SUCCESS) st = gcoll_comm_usable(r->comm);
        if (st == GCOLL_SUCCESS)
            st = gcoll_coll_failed(r->comm, run_eager(r->comm, &r->call, &sh));
        gcoll_engine_lock();
        r->status = st;
        if (st != GCOLL_SUCCESS) snprintf(r->err, sizeof(r->err), "%s", gcoll_last_error());
        gcoll_engine_unlock();
        return;
    }
    gcoll_engine_lock();
    r->status = gcoll_comm_usable(r->comm);
    if (r->status != GCOLL_SUCCESS) {   /* a persistent request's start on a revoked comm */
        snprintf(r->err, sizeof(r->err), "%s", gcoll_last_error());
    } else {
        gcoll_exec_start(r);
        gcoll_engine_enqueue(r, 0);
    }
    gcoll_engine_unlock();
}

static gcoll_status_t coll_post(gcoll_comm_t comm, const call_t *k, int persistent,
                                gcoll_request_t *out)
{
    shape_t sh;
    struct gcoll_request *r = NULL;
    gcoll_error_clear();
    if (!out) return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "%s: request is NULL", k->fn);
    *out = GCOLL_REQUEST_NULL;
    GCOLL_TRY(check_call(comm, k, &sh));
    GCOLL_TRY(gcoll_comm_usable(comm));
    gcoll_engine_lock();   /* the pool is shared with whoever completes requests */
    gcoll_status_t st = gcoll_request_get(comm, &r);
    if (st == GCOLL_SUCCESS) {
        int kept = keeps_schedule(comm, r, k);
        r->persistent = (uint8_t)persistent;
        r->eager = (uint8_t)eager(k, &sh);
        st = r->eager || kept ? GCOLL_SUCCESS : prepare_host(comm, r);
        if (st != GCOLL_SUCCESS) gcoll_request_put(r);
    }
    gcoll_engine_unlock();
    if (st != GCOLL_SUCCESS) return gcoll_coll_failed(comm, st);
    if (!persistent) request_start(r);
    *out = r;
    return GCOLL_SUCCESS;
}

/* Done with r's completion: hand back its outcome; a non-persistent request
 * goes back to the pool, a persistent one reports its outcome once. */
static gcoll_status_t request_finish(gcoll_request_t *req)
{
    struct gcoll_request *r = *req;
    gcoll_status_t st = report(r, r->status);
    r->started = 0;
    if (r->persistent) {
        r->status = GCOLL_SUCCESS;
    } else {
        gcoll_request_put(r);
        *req = GCOLL_REQUEST_NULL;
    }
    return st;
}

gcoll_status_t gcoll_start(gcoll_request_t request)
{
    gcoll_error_clear();
    GCOLL_TRY(request_check(request, "gcoll_start"));
    if (!request->persistent)
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "gcoll_start: the request is not persistent");
    if (request->started)
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "gcoll_start: the request is already active "
                           "(started and not yet completed by gcoll_wait or gcoll_test)");
    GCOLL_TRY(gcoll_comm_check(request->comm));
    request_start(request);
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll_test(gcoll_request_t *request, int *done)
{
    gcoll_error_clear();
    if (!request || !done)
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "gcoll_test: %s is NULL",
                           request ? "done" : "request");
    *done = 1;
    if (*request == GCOLL_REQUEST_NULL) return GCOLL_SUCCESS;
    GCOLL_TRY(request_check(*request, "gcoll_test"));
    gcoll_engine_lock();
    if ((*request)->active && !gcoll_engine_pass(0)) gcoll_failure_poll((*request)->comm);
    gcoll_status_t st = GCOLL_SUCCESS;
    if ((*request)->active) *done = 0;
    else st = request_finish(request);
    gcoll_engine_unlock();
    return st;
}

gcoll_status_t gcoll_wait(gcoll_request_t *request)
{
    gcoll_error_clear();
    if (!request) return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "gcoll_wait: request is NULL");
    if (*request == GCOLL_REQUEST_NULL) return GCOLL_SUCCESS;
    GCOLL_TRY(request_check(*request, "gcoll_wait"));
    gcoll_engine_lock();
    if ((*request)->active) gcoll_engine_wait(*request);
    gcoll_failure_flush();   /* notices the progress thread queued go out */
    gcoll_status_t st = request_finish(request);
    gcoll_engine_unlock();
    return st;
}

gcoll_status_t gcoll_waitall(size_t n, gcoll_request_t requests[])
{
    gcoll_status_t first = GCOLL_SUCCESS;
    char why[256] = "";
    if (n && !requests)
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "gcoll_waitall: requests is NULL with n %zu", n);
    for (size_t i = 0; i < n; i++) {
        gcoll_status_t st = gcoll_wait(&requests[i]);
        if (st != GCOLL_SUCCESS && first == GCOLL_SUCCESS) {
            first = st;
            snprintf(why, sizeof(why), "%s", gcoll_last_error());
        }
    }
    if (first != GCOLL_SUCCESS) gcoll_error_restore(why);
    return first;
}

gcoll_status_t gcoll_request_free(gcoll_request_t *request)
{
    gcoll_error_clear();
    if (!request) return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "gcoll_request_free: request is NULL");
    if (*request == GCOLL_REQUEST_NULL) return GCOLL_SUCCESS;
    GCOLL_TRY(request_check(*request, "gcoll_request_free"));
    if ((*request)->started)
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG,
                           "gcoll_request_free: the request is active (wait for it first)");
    gcoll_engine_lock();
    gcoll_request_put(*request);
    gcoll_engine_unlock();
    *request = GCOLL_REQUEST_NULL;
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll_coll_post_child(gcoll_comm_t comm, const call_t *k,
                                     struct gcoll_request **child)
{
    size_t sbytes, dbytes;
    struct gcoll_request *r;
    GCOLL_TRY(validate(comm, k, &sbytes, &dbytes));
    GCOLL_TRY(gcoll_comm_usable(comm));
    gcoll_status_t st = gcoll_request_get(comm, &r);
    if (st != GCOLL_SUCCESS) {
        gcoll_comm_fail(comm, st);
        return st;
    }
    st = keeps_schedule(comm, r, k) ? GCOLL_SUCCESS : prepare_host(comm, r);
    if (st != GCOLL_SUCCESS) {
        gcoll_request_put(r);
        gcoll_comm_fail(comm, st);   /* the caller's task fails its own comm too */
        return st;
    }
    r->started = 1;
    gcoll_exec_start(r);
    gcoll_engine_enqueue(r, 1);   /* the running pass reaches it: no wake-up */
    *child = r;
    return GCOLL_SUCCESS;
}

/* ---- the public collectives: describe the call, then one path ------------ */

#define CALL(_coll, _fn, _s, _r, _n, _dt, _op, _root) \
    ((call_t){ (_coll), (_fn), (_s), (_r), (_n), (_dt), (_op), (_root), NULL })

gcoll_status_t gcoll_allreduce(const void *sendbuf, void *recvbuf, size_t count, gcoll_dtype_t dtype, gcoll_op_t op, gcoll_comm_t comm)
{
    call_t k = CALL(GCOLL_COLL_ALLREDUCE, "gcoll_allreduce", sendbuf, recvbuf, count, dtype, op, 0);
    return coll_start(comm, &k);
}

gcoll_status_t gcoll_iallreduce(const void *sendbuf, void *recvbuf, size_t count, gcoll_dtype_t dtype, gcoll_op_t op, gcoll_comm_t comm, gcoll_request_t *request)
{
    call_t k = CALL(GCOLL_COLL_ALLREDUCE, "gcoll_iallreduce", sendbuf, recvbuf, count, dtype, op, 0);
    return coll_post(comm, &k, 0, request);
}

gcoll_status_t gcoll_allreduce_init(const void *sendbuf, void *recvbuf, size_t count, gcoll_dtype_t dtype, gcoll_op_t op, gcoll_comm_t comm, gcoll_request_t *request)
{
    call_t k = CALL(GCOLL_COLL_ALLREDUCE, "gcoll_allreduce_init", sendbuf, recvbuf, count, dtype, op, 0);
    return coll_post(comm, &k, 1, request);
}

gcoll_status_t gcoll_bcast(void *buf, size_t count, gcoll_dtype_t dtype, int root, gcoll_comm_t comm)
{
    call_t k = CALL(GCOLL_COLL_BCAST, "gcoll_bcast", buf, buf, count, dtype, GCOLL_SUM, root);
    return coll_start(comm, &k);
}

gcoll_status_t gcoll_ibcast(void *buf, size_t count, gcoll_dtype_t dtype, int root, gcoll_comm_t comm, gcoll_request_t *request)
{
    call_t k = CALL(GCOLL_COLL_BCAST, "gcoll_ibcast", buf, buf, count, dtype, GCOLL_SUM, root);
    return coll_post(comm, &k, 0, request);
}

gcoll_status_t gcoll_bcast_init(void *buf, size_t count, gcoll_dtype_t dtype, int root, gcoll_comm_t comm, gcoll_request_t *request)
{
    call_t k = CALL(GCOLL_COLL_BCAST, "gcoll_bcast_init", buf, buf, count, dtype, GCOLL_SUM, root);
    return coll_post(comm, &k, 1, request);
}

gcoll_status_t gcoll_reduce(const void *sendbuf, void *recvbuf, size_t count, gcoll_dtype_t dtype, gcoll_op_t op, int root, gcoll_comm_t comm)
{
    call_t k = CALL(GCOLL_COLL_REDUCE, "gcoll_reduce", sendbuf, recvbuf, count, dtype, op, root);
    return coll_start(comm, &k);
}

gcoll_status_t gcoll_ireduce(const void *sendbuf, void *recvbuf, size_t count, gcoll_dtype_t dtype, gcoll_op_t op, int root, gcoll_comm_t comm, gcoll_request_t *request)
{
    call_t k = CALL(GCOLL_COLL_REDUCE, "gcoll_ireduce", sendbuf, recvbuf, count, dtype, op, root);
    return coll_post(comm, &k, 0, request);
}

gcoll_status_t gcoll_reduce_init(const void *sendbuf, void *recvbuf, size_t count, gcoll_dtype_t dtype, gcoll_op_t op, int root, gcoll_comm_t comm, gcoll_request_t *request)
{
    call_t k = CALL(GCOLL_COLL_REDUCE, "gcoll_reduce_init", sendbuf, recvbuf, count, dtype, op, root);
    return coll_post(comm, &k, 1, request);
}

gcoll_status_t gcoll_allgather(const void *sendbuf, void *recvbuf, size_t sendcount, gcoll_dtype_t dtype, gcoll_comm_t comm)
{
    call_t k = CALL(GCOLL_COLL_ALLGATHER, "gcoll_allgather", sendbuf, recvbuf, sendcount, dtype, GCOLL_SUM, 0);
    return coll_start(comm, &k);
}

gcoll_status_t gcoll_iallgather(const void *sendbuf, void *recvbuf, size_t sendcount, gcoll_dtype_t dtype, gcoll_comm_t comm, gcoll_request_t *request)
{
    call_t k = CALL(GCOLL_COLL_ALLGATHER, "gcoll_iallgather", sendbuf, recvbuf, sendcount, dtype, GCOLL_SUM, 0);
    return coll_post(comm, &k, 0, request);
}

gcoll_status_t gcoll_allgather_init(const void *sendbuf, void *recvbuf, size_t sendcount, gcoll_dtype_t dtype, gcoll_comm_t comm, gcoll_request_t *request)
{
    call_t k = CALL(GCOLL_COLL_ALLGATHER, "gcoll_allgather_init", sendbuf, recvbuf, sendcount, dtype, GCOLL_SUM, 0);
    return coll_post(comm, &k, 1, request);
}

gcoll_status_t gcoll_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount, gcoll_dtype_t dtype, gcoll_op_t op, gcoll_comm_t comm)
{
    call_t k = CALL(GCOLL_COLL_REDUCE_SCATTER, "gcoll_reduce_scatter", sendbuf, recvbuf, recvcount, dtype, op, 0);
    return coll_start(comm, &k);
}

gcoll_status_t gcoll_ireduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount, gcoll_dtype_t dtype, gcoll_op_t op, gcoll_comm_t comm, gcoll_request_t *request)
{
    call_t k = CALL(GCOLL_COLL_REDUCE_SCATTER, "gcoll_ireduce_scatter", sendbuf, recvbuf, recvcount, dtype, op, 0);
    return coll_post(comm, &k, 0, request);
}

gcoll_status_t gcoll_reduce_scatter_init(const void *sendbuf, void *recvbuf, size_t recvcount, gcoll_dtype_t dtype, gcoll_op_t op, gcoll_comm_t comm, gcoll_request_t *request)
{
    call_t k = CALL(GCOLL_COLL_REDUCE_SCATTER, "gcoll_reduce_scatter_init", sendbuf, recvbuf, recvcount, dtype, op, 0);
    return coll_post(comm, &k, 1, request);
}

gcoll_status_t gcoll_alltoall(const void *sendbuf, void *recvbuf, size_t count, gcoll_dtype_t dtype, gcoll_comm_t comm)
{
    call_t k = CALL(GCOLL_COLL_ALLTOALL, "gcoll_alltoall", sendbuf, recvbuf, count, dtype, GCOLL_SUM, 0);
    return coll_start(comm, &k);
}

gcoll_status_t gcoll_ialltoall(const void *sendbuf, void *recvbuf, size_t count, gcoll_dtype_t dtype, gcoll_comm_t comm, gcoll_request_t *request)
{
    call_t k = CALL(GCOLL_COLL_ALLTOALL, "gcoll_ialltoall", sendbuf, recvbuf, count, dtype, GCOLL_SUM, 0);
    return coll_post(comm, &k, 0, request);
}

gcoll_status_t gcoll_alltoall_init(const void *sendbuf, void *recvbuf, size_t count, gcoll_dtype_t dtype, gcoll_comm_t comm, gcoll_request_t *request)
{
    call_t k = CALL(GCOLL_COLL_ALLTOALL, "gcoll_alltoall_init", sendbuf, recvbuf, count, dtype, GCOLL_SUM, 0);
    return coll_post(comm, &k, 1, request);
}

gcoll_status_t gcoll_barrier(gcoll_comm_t comm)
{
    call_t k = CALL(GCOLL_COLL_BARRIER, "gcoll_barrier", NULL, NULL, 0, GCOLL_UINT8, GCOLL_SUM, 0);
    return coll_start(comm, &k);
}

gcoll_status_t gcoll_ibarrier(gcoll_comm_t comm, gcoll_request_t *request)
{
    call_t k = CALL(GCOLL_COLL_BARRIER, "gcoll_ibarrier", NULL, NULL, 0, GCOLL_UINT8, GCOLL_SUM, 0);
    return coll_post(comm, &k, 0, request);
}

gcoll_status_t gcoll_barrier_init(gcoll_comm_t comm, gcoll_request_t *request)
{
    call_t k = CALL(GCOLL_COLL_BARRIER, "gcoll_barrier_init", NULL, NULL, 0, GCOLL_UINT8, GCOLL_SUM, 0);
    return coll_post(comm, &k, 1, request);
}
