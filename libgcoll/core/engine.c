/* SPDX-License-Identifier: BSD-3-Clause */
/* The progress engine (engine.h): the list of outstanding requests, the one
 * progress pass over it, waiting, and the background progress thread.
 *
 * Who progresses what:
 *   - a caller inside gcoll_test/gcoll_wait (or a blocking collective) runs
 *     passes itself; while any caller waits, the thread stays asleep, so the
 *     two never compete for a core;
 *   - the thread (GCOLL_PROGRESS=thread) runs passes while requests are
 *     outstanding and no caller waits: that is the overlap with the
 *     application's computation;
 *   - with nothing outstanding the thread sleeps in epoll on an eventfd
 *     (posts wake it); after a request that used the transport it first
 *     polls the transports at 1 ms, then 20 ms intervals for a short linger,
 *     for the late completions peers may still need (UCX finishes a receive
 *     before the sender's side); it never spins idle.
 * A communicator whose transport is MPI without MPI_THREAD_MULTIPLE is
 * never touched by the thread (its requests are caller_only).
 *
 * Ownership of the engine (its list, every request and transport context):
 * one mutex, taken only where a second thread may touch them.  Where that
 * second thread is only the progress thread (one application thread calls
 * at a time: MPI below MPI_THREAD_MULTIPLE), the lock is biased towards the
 * caller: the caller flags itself in with plain stores and loads, the
 * thread claims the engine with a process-wide barrier (membarrier(2),
 * PRIVATE_EXPEDITED) and waits for the caller to leave.  A small blocking
 * call then pays no locked instruction, which stalls until the segment's
 * flag stores have left the store buffer (20% of an 8 B reduce's root). */
#include <errno.h>
#include <stdatomic.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>
#include "base/clock.h"
#include "core/comm.h"
#include "base/config.h"
#include "core/engine.h"
#include "core/executor.h"
#include "core/failure.h"
#include "base/log.h"
#include "base/membarrier.h"
#include "base/status.h"

/* Polls without progress before a waiter yields its core (an oversubscribed
 * rank must hand the core to the peer it waits for quickly), and before a
 * waiter on shared memory alone sleeps on the segment's futex. */
#define ENGINE_SPIN_POLLS  64
#define ENGINE_PARK_POLLS  256
#define ENGINE_PARK_NS     (2L * 1000 * 1000)
/* A lone waiter that spun yields this often before it sleeps.  5 (as the
 * blocking path once did) was too few where ranks outnumber CPUs: a rank
 * parked on the futex after ~5 us and paid a wake-up of tens of us, where
 * one more turn of the scheduler would have run the peer it waited for.
 * Intel Xeon guest, 2 cores, peer harness, 3 alternated launches: 3 ranks,
 * allreduce 128 B 2.90 -> 2.28 us, 32 KiB 20.9 -> 12.8, 2 MiB 828 -> 720
 * (Open MPI 4.1: 2.42, 35.8, 1450); 4 ranks level but for the launches
 * where 5 yields left the 512 B allreduce at 12-15 us instead of 2.7; 2
 * ranks unchanged.  100 was within the noise of 1000.  A yield with no
 * other thread to run returns in under a microsecond, so a waiter whose
 * peer computes for long burns about a millisecond before it sleeps. */
#define ENGINE_SPUN_YIELDS 1000
/* The idle thread keeps polling the transports this long after the last
 * request completed, backing off from 50 us to 20 ms between polls. */
#define ENGINE_LINGER_S    2.0

static struct {
    pthread_mutex_t  mutex;
    pthread_cond_t   cond;        /* the thread waits here while a caller waits */
    int              locking;     /* decided by the first communicator */
    int              biased;      /* callers may skip the mutex (see the top) */
    atomic_int       caller_in;   /* a caller owns the engine without the mutex */
    atomic_int       thread_in;   /* the thread owns it, or is claiming it */
    int              thread_in_cond; /* the thread waits on cond: signal under the mutex */
    int              mode_set;
    int              thread_mode; /* GCOLL_PROGRESS=thread in force */
    int              thread_on;
    int              stop;
    pthread_t        thread;
    int              efd, epfd;   /* eventfd that wakes the idle thread */
    int              thread_idle; /* the thread is (about to be) in epoll */
    struct gcoll_request *head, *tail;
    size_t           nactive;     /* outstanding requests */
    size_t           nthread;     /* of which the thread may progress */
    int              waiters;     /* callers inside gcoll_engine_wait */
    int              ncomms;      /* live communicators */
    atomic_int       contenders;  /* callers waiting for the lock */
    double           last_done;   /* when a request that used the transport completed */
    gcoll_shm_t     *parked;      /* the segment the thread sleeps on, outside the lock */
} eng = { .mutex = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER, .efd = -1,
          .epfd = -1, .last_done = -1e9 };

/* Biased ownership (see the top).  The caller's side is a Dekker flag
 * without a fence: its store to caller_in may still sit in the store
 * buffer when it reads thread_in, and the thread's membarrier makes both
 * visible.  Slow callers take the mutex, and announce themselves, so the
 * thread, which runs pass after pass with the lock held, steps aside for a
 * post or a test (a mutex is not fair: unlocking and relocking at once
 * would starve them). */
void gcoll_engine_lock(void)
{
    if (!eng.locking) return;
    if (eng.biased) {
        atomic_store_explicit(&eng.caller_in, 1, memory_order_relaxed);
        atomic_signal_fence(memory_order_seq_cst);
        if (!atomic_load_explicit(&eng.thread_in, memory_order_acquire)) return;
        atomic_store_explicit(&eng.caller_in, 0, memory_order_release);   /* the thread is in */
    }
    atomic_fetch_add_explicit(&eng.contenders, 1, memory_order_relaxed);
    pthread_mutex_lock(&eng.mutex);
    atomic_fetch_sub_explicit(&eng.contenders, 1, memory_order_relaxed);
}

/* Whether the calling thread holds the engine biased (only the caller
 * ever sets caller_in, so its own load sees its own store). */
static int caller_biased_in(void)
{
    return atomic_load_explicit(&eng.caller_in, memory_order_relaxed);
}

void gcoll_engine_unlock(void)
{
    if (!eng.locking) return;
    if (caller_biased_in())
        atomic_store_explicit(&eng.caller_in, 0, memory_order_release);
    else
        pthread_mutex_unlock(&eng.mutex);
}

/* The thread's claim: flag itself in (callers now take the mutex), make
 * the flag and any caller's seen, wait for a caller inside to leave, then
 * the mutex.  The mutex comes last: a caller inside may need it to signal
 * the condition variable.  The thread claims when it wakes from idle or
 * from a caller's wait, and keeps its claim through the naps between
 * passes while requests are outstanding, releasing only the mutex: a
 * membarrier per nap interrupts every CPU that runs this process, and
 * with naps of 20 us that slowed the overlapped computation of
 * gcoll_bench_iallreduce (4 ranks as 2 nodes over a 2 Gbit/s link) by
 * 10-25%.  Callers take the mutex meanwhile, as before the bias. */
static void thread_lock(void)
{
    if (eng.biased) {
        atomic_store_explicit(&eng.thread_in, 1, memory_order_relaxed);
        gcoll_membarrier(GCOLL_MEMBARRIER_PRIVATE);
        while (atomic_load_explicit(&eng.caller_in, memory_order_acquire)) sched_yield();
    }
    pthread_mutex_lock(&eng.mutex);
}

static void thread_unlock(void)
{
    pthread_mutex_unlock(&eng.mutex);
    if (eng.biased) atomic_store_explicit(&eng.thread_in, 0, memory_order_release);
}

/* The thread waits while a caller drives.  Callers get in without the
 * mutex meanwhile; one that signals takes the mutex for it, so the signal
 * cannot fall between our last look at waiters and the wait. */
static void thread_wait_callers(void)
{
    if (!eng.biased) {
        pthread_cond_wait(&eng.cond, &eng.mutex);
        return;
    }
    eng.thread_in_cond = 1;
    atomic_store_explicit(&eng.thread_in, 0, memory_order_release);
    pthread_cond_wait(&eng.cond, &eng.mutex);
    pthread_mutex_unlock(&eng.mutex);
    thread_lock();
    eng.thread_in_cond = 0;
}

/* A caller wakes the thread from its condition variable. */
static void signal_thread(void)
{
    if (caller_biased_in() && eng.thread_in_cond) {
        pthread_mutex_lock(&eng.mutex);
        pthread_cond_signal(&eng.cond);
        pthread_mutex_unlock(&eng.mutex);
    } else {
        pthread_cond_signal(&eng.cond);
    }
}

/* Between two passes of the thread: let a waiting caller in. */
static void thread_step_aside(void)
{
    if (!atomic_load_explicit(&eng.contenders, memory_order_relaxed)) return;
    pthread_mutex_unlock(&eng.mutex);
    while (atomic_load_explicit(&eng.contenders, memory_order_relaxed)) sched_yield();
    pthread_mutex_lock(&eng.mutex);
}

const char *gcoll_engine_mode(void)
{
    return eng.thread_on ? "thread" : "caller";
}

/* Under the lock: the thread sleeps either in epoll (idle) or on the
 * condition variable (a caller was waiting); wake it from both. */
static void wake_thread(void)
{
    if (!eng.thread_on) return;
    signal_thread();
    if (eng.thread_idle) {
        uint64_t one = 1;
        if (write(eng.efd, &one, sizeof(one)) < 0) { /* counter saturated: it is awake */ }
    }
}

void gcoll_engine_enqueue(struct gcoll_request *r, int caller_waits)
{
    r->active = 1;
    r->next = NULL;
    r->prev = eng.tail;
    if (eng.tail) eng.tail->next = r;
    else eng.head = r;
    eng.tail = r;
    eng.nactive++;
    if (!r->caller_only) {
        eng.nthread++;
        if (!caller_waits) wake_thread();
    }
}

static void complete(struct gcoll_request *r, gcoll_status_t st)
{
    if (r->prev) r->prev->next = r->next;
    else eng.head = r->next;
    if (r->next) r->next->prev = r->prev;
    else eng.tail = r->prev;
    r->prev = r->next = NULL;
    r->active = 0;
    r->status = st;
    eng.nactive--;
    if (!r->caller_only) eng.nthread--;
    if (st == GCOLL_SUCCESS) {
        r->comm->stats.calls++;
    } else {
        snprintf(r->err, sizeof(r->err), "%s", gcoll_last_error());
    }
    if (eng.thread_on && r->x.used_transport) eng.last_done = gcoll_clock_now();
    if (st != GCOLL_SUCCESS) gcoll_comm_fail(r->comm, st);   /* tell the peers */
}

int gcoll_engine_idle(void)
{
    return eng.nactive == 0;
}

int gcoll_engine_in_thread(void)
{
    return eng.thread_on && pthread_equal(pthread_self(), eng.thread);
}

void gcoll_engine_abort_comm(struct gcoll_comm *comm, gcoll_status_t st, const char *why)
{
    struct gcoll_request *r = eng.head, *next;
    for (; r; r = next) {
        next = r->next;
        if (r->comm != comm || r->task) continue;   /* a task sees its children fail */
        gcoll_exec_abort(r);
        GCOLL_ERROR(st, "the communicator was revoked while this call waited: %s", why);
        complete(r, st);
        next = eng.head;   /* completing may have completed others: start over */
    }
}

int gcoll_engine_pass(int from_thread)
{
    int advanced = 0;
    struct gcoll_request *r = eng.head, *next;
    for (; r; r = next) {
        next = r->next;
        if (!r->active || (from_thread && r->caller_only)) continue;
        int done = 0, moved = 0;
        gcoll_status_t st = r->task ? r->task(r, &done, &moved)
                                    : gcoll_exec_progress(r, &done, &moved);
        advanced |= moved;
        if (done) complete(r, st);
    }
    return advanced;
}

/* The segment to sleep on: the one request w (or, for the thread, any
 * request) waits on, provided no request of the process has a transport
 * operation open (transports need polling, not sleeping). */
static gcoll_shm_t *parkable(const struct gcoll_request *w)
{
    gcoll_shm_t *shm = w ? gcoll_exec_parkable(w) : NULL;
    for (const struct gcoll_request *r = eng.head; r; r = r->next) {
        if (r->x.first_open < r->x.nreqs) return NULL;
        if (!w && !shm && !r->caller_only) shm = gcoll_exec_parkable(r);
    }
    return shm;
}

/* gcoll.h: run by a caller's idle_wait, never by the thread. */
static void (*wait_hook)(void *);
static void *wait_hook_arg;

gcoll_status_t gcoll_wait_hook_set(void (*hook)(void *arg), void *arg)
{
    gcoll_engine_lock();
    wait_hook = hook;
    wait_hook_arg = arg;
    gcoll_engine_unlock();
    return GCOLL_SUCCESS;
}

/* The waiter found nothing to do: hand the core over, or sleep briefly on
 * the segment its request waits on.  A lone waiter on a NODE step has spun
 * on its flags as long as the segment allows already (executor.c): it
 * yields a few times (a peer sharing our CPU often needs just one turn),
 * then sleeps, as a blocking shared-memory collective does. */
static void idle_wait(const struct gcoll_request *r, unsigned idle)
{
    if (gcoll_failure_poll(r->comm)) return;   /* a peer failed: r is done */
    unsigned park = r->x.spin ? ENGINE_SPUN_YIELDS : ENGINE_PARK_POLLS;
    gcoll_shm_t *shm = idle >= park ? parkable(r) : NULL;
    gcoll_shm_wait_t point = shm ? gcoll_shm_wait_point(shm) : (gcoll_shm_wait_t){ 0 };
    gcoll_engine_unlock();
    if (wait_hook) wait_hook(wait_hook_arg);   /* another engine's progress */
    if (shm) gcoll_shm_park(shm, &point, ENGINE_PARK_NS);
    else sched_yield();
    gcoll_engine_lock();
}

gcoll_status_t gcoll_engine_wait(struct gcoll_request *r)
{
    unsigned idle = 0;
    eng.waiters++;
    while (r->active) {
        r->x.spin = eng.nactive == 1;
        if (gcoll_engine_pass(0)) {
            idle = 0;
            continue;
        }
        if (!r->active) break;
        if (++idle >= (r->x.spin ? 1 : ENGINE_SPIN_POLLS)) idle_wait(r, idle);
    }
    r->x.spin = 0;
    /* the thread stood aside while we waited: it takes over what is left */
    if (--eng.waiters == 0 && eng.thread_on) signal_thread();
    return r->status;
}

void gcoll_engine_post_task(struct gcoll_request *r)
{
    r->started = 1;
    memset(&r->x, 0, offsetof(gcoll_exec_state_t, reqs));   /* no schedule: nothing posted */
    r->x.node_left = 0;   /* after reqs, which the memset keeps */
    gcoll_engine_enqueue(r, 0);
}

int gcoll_engine_task_turn(const struct gcoll_request *r)
{
    for (const struct gcoll_request *q = r->prev; q; q = q->prev)
        if (q->comm == r->comm && q->task) return 0;
    return 1;
}

void gcoll_engine_leave_to_caller(struct gcoll_request *r)
{
    if (r->caller_only) return;
    r->caller_only = 1;   /* complete() no longer counts it for the thread */
    eng.nthread--;
}

gcoll_status_t gcoll_engine_drain(struct gcoll_comm *comm)
{
    gcoll_status_t first = GCOLL_SUCCESS;
    for (;;) {
        struct gcoll_request *last = NULL;
        for (struct gcoll_request *r = eng.head; r; r = r->next)
            if (r->comm == comm) last = r;
        if (!last) return first;
        /* the request keeps its outcome for its owner's wait or test */
        gcoll_status_t st = gcoll_engine_wait(last);
        if (first == GCOLL_SUCCESS) first = st;
    }
}

/* ---- the progress thread ------------------------------------------------- */

/* Poll every live communicator's transport once (the late completions). */
static void poll_transports(void);

/* Nothing outstanding: sleep until a post wakes us.  After a request that
 * used the transport, first linger: poll the transports every 1 ms for
 * 100 ms, then every 20 ms up to ENGINE_LINGER_S, for the late completions
 * a peer may still need (a shared-memory-only process never lingers). */
static void thread_idle(void)
{
    struct epoll_event ev;
    double since = gcoll_clock_now() - eng.last_done;
    int ms = since < 0.1 ? 1 : since < ENGINE_LINGER_S ? 20 : -1;
    eng.thread_idle = 1;
    thread_unlock();
    int n = epoll_wait(eng.epfd, &ev, 1, ms);
    if (n > 0) {
        uint64_t v;
        if (read(eng.efd, &v, sizeof(v)) < 0) { /* already drained */ }
    }
    thread_lock();
    eng.thread_idle = 0;
    if (ms > 0) poll_transports();
}

static void *engine_thread(void *arg)
{
    unsigned idle = 0;
    (void)arg;
    thread_lock();
    while (!eng.stop) {
        if (eng.waiters > 0) {   /* a caller drives: stay out of its way */
            thread_wait_callers();
            continue;
        }
        if (!eng.nthread) {
            thread_idle();
            continue;
        }
        int moved = gcoll_engine_pass(1);
        thread_step_aside();
        if (moved) {
            idle = 0;
            continue;
        }
        if (++idle < ENGINE_SPIN_POLLS) continue;
        /* Peers are late: give the core to the application.  Sleep, never
         * yield: the thread shares its core with a computing rank (on a
         * cluster node every core runs one), and a yield to a thread that
         * computes returns only at the scheduler's next tick (4 ms at
         * HZ=250), while a thread that sleeps is woken at its time and,
         * having used little CPU, preempts the computation at once.
         * Waiting on the node alone, sleep on the segment, so the peer's
         * signal wakes us at once instead of at the end of a nap. */
        gcoll_shm_t *shm = parkable(NULL);
        gcoll_shm_wait_t point = shm ? gcoll_shm_wait_point(shm) : (gcoll_shm_wait_t){ 0 };
        eng.parked = shm;   /* the segment stays mapped until we are back */
        pthread_mutex_unlock(&eng.mutex);   /* keeps its claim: see thread_lock */
        if (shm) {
            gcoll_shm_park(shm, &point, ENGINE_PARK_NS);
        } else {
            struct timespec nap = { 0, 20 * 1000 };
            nanosleep(&nap, NULL);
        }
        pthread_mutex_lock(&eng.mutex);
        eng.parked = NULL;
    }
    thread_unlock();
    return NULL;
}

/* Live communicators whose transport the thread may poll when idle. */
#define ENGINE_MAX_POLLED 64
static struct gcoll_comm *polled[ENGINE_MAX_POLLED];

static void poll_transports(void)
{
    for (int i = 0; i < ENGINE_MAX_POLLED; i++)
        if (polled[i]) polled[i]->tl->progress(polled[i]->tl_ctx);
}

static int thread_allowed(const struct gcoll_comm *comm, int mpi_level)
{
    return strcmp(comm->tl->name, "mpi") != 0 || mpi_level >= MPI_THREAD_MULTIPLE;
}

static gcoll_status_t thread_start(void)
{
    struct epoll_event ev = { .events = EPOLLIN };
    eng.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    eng.epfd = epoll_create1(EPOLL_CLOEXEC);
    if (eng.efd < 0 || eng.epfd < 0 || epoll_ctl(eng.epfd, EPOLL_CTL_ADD, eng.efd, &ev) != 0)
        return GCOLL_ERROR(GCOLL_ERR_INTERNAL, "progress thread: cannot make its eventfd: %s",
                           strerror(errno));
    eng.stop = 0;
    if (pthread_create(&eng.thread, NULL, engine_thread, NULL) != 0)
        return GCOLL_ERROR(GCOLL_ERR_INTERNAL, "cannot start the progress thread");
    eng.thread_on = 1;
    return GCOLL_SUCCESS;
}

/* The first communicator fixes the process's mode and locking. */
static void choose_mode(const struct gcoll_comm *comm, int mpi_level)
{
    eng.mode_set = 1;
    eng.thread_mode = comm->cfg.progress != GCOLL_PROGRESS_CALLER;
    if (eng.thread_mode && !thread_allowed(comm, mpi_level)) {
        if (comm->cfg.progress == GCOLL_PROGRESS_THREAD)
            gcoll_warn("GCOLL_PROGRESS=thread needs MPI_THREAD_MULTIPLE with the mpi transport; "
                       "progress runs in caller mode");
        eng.thread_mode = 0;
    }
    eng.locking = eng.thread_mode || mpi_level >= MPI_THREAD_MULTIPLE;
    eng.biased = eng.thread_mode && mpi_level < MPI_THREAD_MULTIPLE &&
                 gcoll_membarrier_ready(GCOLL_MEMBARRIER_PRIVATE);
}

/* Communicators come and go in several threads at once: one at a time
 * decides the mode and starts or stops the thread (not under the engine
 * lock, which the thread needs to finish). */
static pthread_mutex_t lifecycle = PTHREAD_MUTEX_INITIALIZER;

gcoll_status_t gcoll_engine_comm_add(struct gcoll_comm *comm)
{
    int mpi_level = MPI_THREAD_SINGLE;
    MPI_Query_thread(&mpi_level);
    pthread_mutex_lock(&lifecycle);
    if (!eng.mode_set) choose_mode(comm, mpi_level);
    gcoll_engine_lock();
    comm->caller_only = !eng.thread_mode || !thread_allowed(comm, mpi_level);
    if (!comm->caller_only)
        for (int i = 0; i < ENGINE_MAX_POLLED; i++)
            if (!polled[i]) { polled[i] = comm; break; }
    eng.ncomms++;
    gcoll_status_t st = GCOLL_SUCCESS;
    if (eng.thread_mode && !eng.thread_on) st = thread_start();
    gcoll_engine_unlock();
    pthread_mutex_unlock(&lifecycle);
    if (st != GCOLL_SUCCESS) {
        gcoll_warn("%s; progress runs in caller mode", gcoll_last_error());
        gcoll_error_clear();
        comm->caller_only = 1;
    }
    gcoll_info("progress: %s mode, %s%s", gcoll_engine_mode(),
               !eng.locking ? "no lock" : eng.biased ? "caller-biased lock" : "mutex",
               comm->caller_only && eng.thread_on ? " (this communicator: caller only)" : "");
    return GCOLL_SUCCESS;
}

/* The thread may sleep on a segment outside the lock after the request it
 * waited for has completed (a caller's test did it): the communicator's
 * destroy waits, at most one park (ENGINE_PARK_NS), until the thread is
 * off the segment before it is unmapped. */
void gcoll_engine_shm_release(gcoll_shm_t *shm)
{
    if (!eng.thread_on || !shm) return;
    gcoll_engine_lock();
    while (eng.parked == shm) {
        gcoll_engine_unlock();
        sched_yield();
        gcoll_engine_lock();
    }
    gcoll_engine_unlock();
}

/* The last communicator gone: the thread stops (the next create starts it
 * again), so nothing of libgcoll runs while MPI finalises. */
void gcoll_engine_comm_remove(struct gcoll_comm *comm)
{
    int stop;
    pthread_mutex_lock(&lifecycle);
    gcoll_engine_lock();
    for (int i = 0; i < ENGINE_MAX_POLLED; i++)
        if (polled[i] == comm) polled[i] = NULL;
    stop = --eng.ncomms == 0 && eng.thread_on;
    if (stop) {
        eng.stop = 1;
        eng.thread_idle = 1;
        wake_thread();
    }
    gcoll_engine_unlock();
    if (stop) {
        pthread_join(eng.thread, NULL);
        close(eng.efd);
        close(eng.epfd);
        eng.efd = eng.epfd = -1;
        eng.thread_on = 0;
    }
    pthread_mutex_unlock(&lifecycle);
}
