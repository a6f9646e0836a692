/* SPDX-License-Identifier: BSD-3-Clause */
/* The shared segment of a node communicator: creation, mapping, placement,
 * clean-up, and the slow path of the step wait.
 *
 * Life of the segment:
 *   1. local rank 0 shm_open()s a fresh name (pid, clock, counter: unique
 *      even for several communicators of one process) and sizes it;
 *   2. the name goes to the others by MPI_Bcast (an empty name says that
 *      creation failed, so every rank fails the same way);
 *   3. each rank opens it and posix_fallocate()s its own region: tmpfs
 *      allocates those pages now, by the owner, so they follow the owner's
 *      memory policy (first-touch: its NUMA node), and a full /dev/shm is an
 *      error here instead of a SIGBUS inside a collective;
 *   4. each rank maps the whole segment (MAP_POPULATE: no page faults
 *      inside the first collectives) and closes the descriptor;
 *   5. an MPI_Allreduce of the outcomes doubles as the barrier after which
 *      rank 0 shm_unlink()s the name: from then on the kernel frees the
 *      memory when the last rank unmaps it, even if the job is killed.  Only
 *      a crash between steps 1 and 5 can leave a /dev/shm/gcoll-shm-* file.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <limits.h>
#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#endif
#include "base/clock.h"
#include "base/alloc.h"
#include "base/membarrier.h"
#include "shm/shm_int.h"
#include "shm/shm_cma.h"
#include "shm/shm_zcopy.h"
#include "base/config.h"
#include "base/log.h"
#include "base/status.h"

#define SHM_NAME_MAX 64

/* Spins before a waiter sleeps.  Alone on its core a waiter may spin long
 * (sleeping and waking cost two system calls and the peer is surely
 * running); with more ranks than CPUs a spinning waiter burns the time slice
 * that the rank it waits for needs, so it sleeps almost at once. */
#define SPIN_DEDICATED     (1 << 14)
#define SPIN_OVERSUBSCRIBED 32

/* Yields between spinning and sleeping.  A peer that shares our CPU often
 * needs just one turn to arrive: a yield hands it that turn for the price of
 * a system call, where a sleep adds a wake-up.  4 ranks on 2 CPUs, 8 B - 4 KiB
 * allreduce over 2 simulated nodes: 9-10 us with 4 yields first, 11-19 us
 * sleeping at once. */
#define SHM_YIELDS 4

static size_t round_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

/* Slice bytes for P ranks: the area split into P + 1 slices, a multiple of
 * 64 so that slices never share a cache line. */
static size_t shm_slice_bytes(int size)
{
    size_t s = GCOLL_SHM_AREA / (size_t)(size + 1) / 64 * 64;
    return s < GCOLL_SHM_MIN_SLICE ? GCOLL_SHM_MIN_SLICE : s;
}

static void shm_layout(gcoll_shm_t *shm)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    shm->slice     = shm_slice_bytes(shm->size);
    shm->area      = (size_t)(shm->size + 1) * shm->slice;
    /* a reader reads 2 windows of each of its P - 1 peers */
    size_t peers   = shm->size > 1 ? (size_t)shm->size - 1 : 1, w = GCOLL_SHM_WINDOW / 2 / peers;
    shm->window    = round_up(w > shm->area ? w : shm->area, page);
    shm->ring_off  = round_up(2 * shm->window, GCOLL_SHM_LINE);
    /* the ring's large slots fill a window too (shm_int.h) */
    shm->ring_depth = GCOLL_SHM_WINDOW / 2 / peers / GCOLL_SHM_RING_SLOT;
    if (shm->ring_depth < GCOLL_SHM_RING_DEPTH_MIN) shm->ring_depth = GCOLL_SHM_RING_DEPTH_MIN;
    shm->region    = round_up(shm->ring_off + sizeof(gcoll_shm_ring_t) +
                              shm->ring_depth * GCOLL_SHM_RING_SLOT, page);
    size_t ctrl    = round_up((size_t)shm->size * sizeof(gcoll_shm_ctrl_t), page);
    shm->map_bytes = ctrl + (size_t)shm->size * shm->region;
}

/* Offset and length of the part of the file rank j allocates (rank 0 also
 * owns the control blocks). */
static void shm_owned_range(const gcoll_shm_t *shm, int j, off_t *off, off_t *len)
{
    size_t ctrl = shm->map_bytes - (size_t)shm->size * shm->region;
    *off = j == 0 ? 0 : (off_t)(ctrl + (size_t)j * shm->region);
    *len = (off_t)(j == 0 ? ctrl + shm->region : shm->region);
}

/* Local rank 0: create and size a new object; name[0] = '\0' on failure. */
static int shm_create_file(const gcoll_shm_t *shm, char *name)
{
    static _Atomic unsigned counter;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    snprintf(name, SHM_NAME_MAX, "/gcoll-shm-%d-%lx-%u", (int)getpid(),
             (unsigned long)(ts.tv_sec * 1000000000L + ts.tv_nsec),
             atomic_fetch_add(&counter, 1));
    int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) goto err;
    if (ftruncate(fd, (off_t)shm->map_bytes) != 0) goto err_unlink;
    return fd;
err_unlink:
    {
        int e = errno;
        close(fd);
        shm_unlink(name);
        errno = e;
    }
err:
    GCOLL_ERROR(GCOLL_ERR_TRANSPORT, "cannot create shared-memory segment %s of %zu bytes: %s",
                name, shm->map_bytes, strerror(errno));
    name[0] = '\0';
    return -1;
}

/* Open (ranks > 0), allocate the own region, map.  Returns 0 or -1 with the
 * error already recorded. */
static int shm_attach(gcoll_shm_t *shm, const char *name, int fd)
{
    if (fd < 0) fd = shm_open(name, O_RDWR, 0);
    if (fd < 0) {
        GCOLL_ERROR(GCOLL_ERR_TRANSPORT, "cannot open shared-memory segment %s: %s", name,
                    strerror(errno));
        return -1;
    }
    off_t off, len;
    shm_owned_range(shm, shm->rank, &off, &len);
    int e = posix_fallocate(fd, off, len);
    if (e) {
        close(fd);
        GCOLL_ERROR(GCOLL_ERR_TRANSPORT,
                    "cannot allocate %lld bytes of shared memory in %s (is /dev/shm full?): %s",
                    (long long)len, name, strerror(e));
        return -1;
    }
    void *p = mmap(NULL, shm->map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
    e = errno;
    close(fd);
    if (p == MAP_FAILED) {
        GCOLL_ERROR(GCOLL_ERR_TRANSPORT, "cannot map shared-memory segment %s: %s", name,
                    strerror(e));
        return -1;
    }
    shm->base = p;
    shm->ctrl = p;
    shm->data = (unsigned char *)p + (shm->map_bytes - (size_t)shm->size * shm->region);
    return 0;
}

static int shm_light_fence(const gcoll_shm_t *shm, MPI_Comm node_comm);

/* Decide how long to spin: count the distinct CPUs the host's ranks may run
 * on (the union of their affinity masks); fewer CPUs than ranks means
 * oversubscription.  Judged over the whole host, not the (possibly
 * simulated) node: 4 ranks as 2 simulated nodes on 2 CPUs are oversubscribed
 * although each node has a CPU per rank. */
static int shm_spin_limit(MPI_Comm host_comm)
{
    cpu_set_t mine, all;
    int size;
    MPI_Comm_size(host_comm, &size);
    CPU_ZERO(&mine);
    /* a rank that cannot read its mask still joins the reduction (the
     * others wait in it), adding no CPU, and spins short itself */
    int known = sched_getaffinity(0, sizeof(mine), &mine) == 0;
    if (!known) CPU_ZERO(&mine);
    if (MPI_Allreduce(&mine, &all, (int)sizeof(cpu_set_t), MPI_UNSIGNED_CHAR, MPI_BOR,
                      host_comm) != MPI_SUCCESS)
        return SPIN_OVERSUBSCRIBED;   /* the union is undefined: the cautious policy */
    if (!known) return SPIN_OVERSUBSCRIBED;
    int cpus = CPU_COUNT(&all);
    gcoll_info("shm: %d ranks on this host's %d cpus: %s waits", size, cpus,
               cpus < size ? "short-spin" : "spinning");
    return cpus < size ? SPIN_OVERSUBSCRIBED : SPIN_DEDICATED;
}

gcoll_status_t gcoll_shm_create(MPI_Comm node_comm, MPI_Comm host_comm, const gcoll_config_t *cfg,
                                gcoll_shm_t **out)
{
    char name[SHM_NAME_MAX] = "";
    int fd = -1, ok = 1, all_ok = 0;
    if (!out) return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "gcoll_shm_create: out pointer is NULL");
    *out = NULL;
    gcoll_shm_t *shm = gcoll_calloc(1, sizeof(*shm));
    if (!shm) ok = 0;   /* still take part in the collectives below */
    /* without memory this rank still takes part, on a stand-in (not on the
     * stack: 1 KiB that MPI's threaded waits may have used a moment ago) */
    static _Thread_local gcoll_shm_t dummy;
    memset(&dummy, 0, sizeof(dummy));
    gcoll_shm_t *s = shm ? shm : &dummy;
    s->cfg = cfg;
    MPI_Comm_rank(node_comm, &s->rank);
    MPI_Comm_size(node_comm, &s->size);
    if (shm && !(shm->ring_seen = gcoll_calloc((size_t)s->size, sizeof(uint64_t)))) ok = 0;
    shm_layout(s);
    s->spin_limit = shm_spin_limit(host_comm);
    s->light_fence = shm_light_fence(s, node_comm);
    s->shares_cpus = s->spin_limit != SPIN_DEDICATED;

    if (s->rank == 0 && ok) fd = shm_create_file(s, name);
    /* a failed exchange leaves its output undefined: it is not used (the
     * agreement below then fails, so every rank of the node gives up) */
    if (MPI_Bcast(name, SHM_NAME_MAX, MPI_CHAR, 0, node_comm) != MPI_SUCCESS) {
        if (ok) GCOLL_ERROR(GCOLL_ERR_TRANSPORT, "shm: MPI_Bcast of the segment's name failed");
        if (s->rank != 0) name[0] = '\0';
        if (fd >= 0) close(fd);   /* rank 0's object: unlinked below */
        fd = -1;
        ok = 0;
    }
    name[SHM_NAME_MAX - 1] = '\0';
    if (!name[0]) ok = 0;
    if (ok && shm_attach(s, name, fd) != 0) ok = 0;
    if (MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, node_comm) != MPI_SUCCESS) {
        if (ok) GCOLL_ERROR(GCOLL_ERR_TRANSPORT, "shm: MPI_Allreduce of the set-up's outcome "
                            "failed");
        ok = all_ok = 0;
    }
    if (s->rank == 0 && name[0]) shm_unlink(name);
    if (!all_ok) goto err;
    gcoll_info("shm: segment of %zu bytes for %d ranks, slice %zu bytes, %s fence on signals",
               s->map_bytes, s->size, s->slice, s->light_fence ? "light" : "full");
    gcoll_shm_zc_setup(shm, node_comm);
    gcoll_shm_cma_setup(shm, node_comm);
    *out = shm;
    return GCOLL_SUCCESS;
err:
    if (s->base) munmap(s->base, s->map_bytes);
    if (shm) free(shm->ring_seen);
    free(shm);
    if (!shm) return GCOLL_ERROR(GCOLL_ERR_NO_MEMORY, "cannot allocate the shm executor");
    if (ok)   /* our part worked: say who did not */
        return GCOLL_ERROR(GCOLL_ERR_TRANSPORT,
                           "shared-memory segment setup failed on another rank of this node");
    return GCOLL_ERR_TRANSPORT;   /* already described where it failed */
}

void gcoll_shm_destroy(gcoll_shm_t *shm)
{
    if (!shm) return;
    /* No synchronisation needed: peers still reading our region keep the
     * pages alive through their own mappings. */
    gcoll_shm_zc_destroy(shm);
    gcoll_shm_cma_destroy(shm);
    munmap(shm->base, shm->map_bytes);
    free(shm->ring_seen);
    free(shm);
}

uint64_t gcoll_shm_ops(const gcoll_shm_t *shm) { return shm ? shm->step + shm->ring_seq : 0; }
int gcoll_shm_rank(const gcoll_shm_t *shm) { return shm->rank; }
int gcoll_shm_size(const gcoll_shm_t *shm) { return shm->size; }
int gcoll_shm_spin_limit(const gcoll_shm_t *shm) { return shm->spin_limit; }

static int shm_arrived(const gcoll_shm_t *shm, int j, uint64_t step)
{
    return atomic_load_explicit(&shm->ctrl[j].line[step & 1].flag, memory_order_acquire) >= step;
}

/* Whether rank j keeps what the segment waits for waiting. */
static int shm_late(const gcoll_shm_t *shm, const gcoll_shm_wait_t *w, int j)
{
    if (w->ring.kind != GCOLL_SHM_RING_NONE) return gcoll_shm_ring_late(shm, &w->ring, j);
    return j != shm->rank && !shm_arrived(shm, j, w->step);
}

/* The line of rank j that w watches, and the value it waits for. */
static gcoll_shm_line_t *shm_wait_line(const gcoll_shm_t *shm, const gcoll_shm_wait_t *w, int j,
                                       uint64_t *want)
{
    if (w->ring.kind != GCOLL_SHM_RING_NONE) return gcoll_shm_ring_line(shm, &w->ring, j, want);
    *want = w->step;
    return &shm->ctrl[j].line[w->step & 1];
}

int gcoll_shm_cpu(void)
{
    int cpu = sched_getcpu();
    return cpu >= 0 ? cpu + 1 : 0;
}

int gcoll_shm_peer_here(const gcoll_shm_t *shm)
{
    if (!shm->shares_cpus) return 0;
    int here = gcoll_shm_cpu();
    gcoll_shm_wait_t w = gcoll_shm_wait_point(shm);
    for (int j = 0; here && j < shm->size; j++) {
        uint64_t want;
        if (shm_late(shm, &w, j) &&
            atomic_load_explicit(&shm_wait_line(shm, &w, j, &want)->cpu,
                                 memory_order_relaxed) == here)
            return 1;
    }
    return 0;
}

gcoll_shm_wait_t gcoll_shm_wait_point(const gcoll_shm_t *shm)
{
    return (gcoll_shm_wait_t){ shm->step, shm->ring_wait };
}

static void shm_list_late(const gcoll_shm_t *shm, const gcoll_shm_wait_t *w, char *buf, size_t len)
{
    size_t n = 0;
    if (len) buf[0] = '\0';
    for (int j = 0; j < shm->size && n + 16 < len; j++)
        if (shm_late(shm, w, j)) n += (size_t)snprintf(buf + n, len - n, "%s%d", n ? ", " : "", j);
}

static gcoll_status_t shm_timeout(gcoll_shm_t *shm, const gcoll_shm_wait_t *w)
{
    char who[256];
    shm_list_late(shm, w, who, sizeof(who));
    shm->broken = 1;
    return GCOLL_ERROR(GCOLL_ERR_TIMEOUT,
                       "local rank %d waited %g s at shared-memory %s %llu for local rank(s) %s",
                       shm->rank, shm->cfg->timeout, w->ring.kind ? "ring op" : "step",
                       (unsigned long long)(w->ring.kind ? w->ring.seq : w->step), who);
}

/* The futex word of a flag: its low 32 bits, which change with every step
 * (a flag moves by 2 per use of its parity, far below 2^32). */
static uint32_t *shm_futex_word(gcoll_shm_line_t *line)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return (uint32_t *)(void *)&line->flag + 1;
#else
    return (uint32_t *)(void *)&line->flag;
#endif
}

void gcoll_shm_wake(gcoll_shm_line_t *line)
{
#ifdef __linux__
    /* not FUTEX_PRIVATE: the waiters are other processes mapping the page */
    syscall(SYS_futex, shm_futex_word(line), FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
#else
    (void)line;
#endif
}

void gcoll_shm_sleeper_fence(const gcoll_shm_t *shm)
{
    /* the light fence was agreed only where every rank registered */
    if (shm->light_fence) gcoll_membarrier(GCOLL_MEMBARRIER_GLOBAL);
}

/* The light fence ("Waiting" in shm_int.h) where the node's ranks have a
 * CPU each and every one of them takes part in membarriers; agreed, as a
 * signaller's fence must match its sleepers'. */
static int shm_light_fence(const gcoll_shm_t *shm, MPI_Comm node_comm)
{
    int mine = shm->spin_limit == SPIN_DEDICATED && gcoll_membarrier_ready(GCOLL_MEMBARRIER_GLOBAL);
    int all = 0;
    if (MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, node_comm) != MPI_SUCCESS) return 0;
    return all;
}

/* Sleep until the flag moves from `seen` (or 50 ms pass: the caller
 * watches the timeout); without futex, yield once. */
static void shm_sleep(gcoll_shm_line_t *line, uint64_t seen)
{
#ifdef __linux__
    struct timespec nap = { 0, 50 * 1000 * 1000 };
    syscall(SYS_futex, shm_futex_word(line), FUTEX_WAIT, (uint32_t)seen, &nap, NULL, 0);
#else
    (void)line; (void)seen;
    sched_yield();
#endif
}

/* Wait asleep for rank j to stop holding w up; see "Waiting" in shm_int.h
 * for why no wake-up is lost. */
static gcoll_status_t shm_wait_asleep(gcoll_shm_t *shm, const gcoll_shm_wait_t *w, int j,
                                      double start)
{
    uint64_t want;
    gcoll_shm_line_t *line = shm_wait_line(shm, w, j, &want);
    double limit = shm->cfg->timeout;
    gcoll_status_t st = GCOLL_SUCCESS;
    atomic_fetch_add_explicit(&line->sleepers, 1, memory_order_seq_cst);
    gcoll_shm_sleeper_fence(shm);
    for (;;) {
        uint64_t seen = atomic_load_explicit(&line->flag, memory_order_seq_cst);
        if (seen >= want) break;
        if (limit > 0 && gcoll_clock_now() - start > limit) {
            st = shm_timeout(shm, w);
            break;
        }
        shm_sleep(line, seen);
    }
    /* the seq_cst load that saw the flag also acquired the owner's data */
    atomic_fetch_sub_explicit(&line->sleepers, 1, memory_order_relaxed);
    return st;
}

gcoll_status_t gcoll_shm_wait_slow(gcoll_shm_t *shm)
{
    gcoll_shm_wait_t w = gcoll_shm_wait_point(shm);
    double start = shm->cfg->timeout > 0 ? gcoll_clock_now() : 0;
    for (int j = 0; j < shm->size; j++) {
        for (int y = 0; y < SHM_YIELDS && shm_late(shm, &w, j); y++) sched_yield();
        if (shm_late(shm, &w, j)) GCOLL_TRY(shm_wait_asleep(shm, &w, j, start));
    }
    return GCOLL_SUCCESS;
}

void gcoll_shm_break(gcoll_shm_t *shm)
{
    if (shm) shm->broken = 1;
    if (shm) gcoll_shm_zc_abandon(shm);
}

void gcoll_shm_missing(const gcoll_shm_t *shm, char *buf, size_t len)
{
    gcoll_shm_wait_t w = gcoll_shm_wait_point(shm);
    shm_list_late(shm, &w, buf, len);
}

/* One nap on the first late peer's flag (see "Waiting" in shm_int.h: the
 * sleepers count makes the signaller wake us). */
void gcoll_shm_park(gcoll_shm_t *shm, const gcoll_shm_wait_t *w, long max_ns)
{
    for (int j = 0; j < shm->size; j++) {
        if (!shm_late(shm, w, j)) continue;
        uint64_t want;
        gcoll_shm_line_t *line = shm_wait_line(shm, w, j, &want);
        atomic_fetch_add_explicit(&line->sleepers, 1, memory_order_seq_cst);
        gcoll_shm_sleeper_fence(shm);
        uint64_t seen = atomic_load_explicit(&line->flag, memory_order_seq_cst);
#ifdef __linux__
        if (seen < want) {
            struct timespec nap = { max_ns / 1000000000L, max_ns % 1000000000L };
            syscall(SYS_futex, shm_futex_word(line), FUTEX_WAIT, (uint32_t)seen, &nap, NULL, 0);
        }
#else
        (void)seen; (void)max_ns;
        sched_yield();
#endif
        atomic_fetch_sub_explicit(&line->sleepers, 1, memory_order_relaxed);
        return;
    }
}
