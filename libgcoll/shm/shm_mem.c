/* SPDX-License-Identifier: BSD-3-Clause */
/* gcoll_mem_alloc / gcoll_mem_free, the registry of this process's
 * shareable allocations, and the cache of the peers' allocations mapped
 * here (shm_mem.h; the scheme and its reasons in docs/design.md, "Zero-copy
 * buffers").
 *
 * Registry: an array sorted by address under a mutex, searched by bisection;
 * its length is also kept in an atomic so that a process without
 * allocations answers "not shareable" with one load.
 *
 * Cache: a list of mappings keyed by (pid, fd), each with the id it maps and
 * a pin count.  The zero-copy forms pin what they use (shm_zcopy.c keeps the
 * mappings of the last few buffers each peer used pinned), so a mapping is
 * never unmapped under a collective; unpinned ones are kept up to
 * GCOLL_MEM_CACHE, least recently used evicted first. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "base/alloc.h"
#include "shm/shm_mem.h"
#include "base/log.h"
#include "base/status.h"

/* ---- the registry (owner side) ------------------------------------------ */

typedef struct {
    uintptr_t base;
    size_t    bytes;      /* as asked for: buffers must lie inside these */
    size_t    map_bytes;  /* mapped: bytes rounded up to pages */
    int       fd;         /* -1: not shareable (memfd_create was refused) */
    uint64_t  id;
} mem_alloc_t;

static pthread_mutex_t  reg_lock = PTHREAD_MUTEX_INITIALIZER;
static mem_alloc_t     *reg;
static size_t           reg_cap;
static _Atomic size_t   reg_count;
static _Atomic uint64_t reg_seq;   /* ids: 1, 2, ... for the process's life */

/* Index of the last allocation starting at or below p, or -1.  Under reg_lock. */
static ptrdiff_t reg_below(uintptr_t p)
{
    size_t lo = 0, hi = atomic_load_explicit(&reg_count, memory_order_relaxed);
    while (lo < hi) {   /* first entry with base > p */
        size_t mid = lo + (hi - lo) / 2;
        if (reg[mid].base <= p) lo = mid + 1;
        else hi = mid;
    }
    return (ptrdiff_t)lo - 1;
}

static gcoll_status_t reg_insert(const mem_alloc_t *a)
{
    size_t n = atomic_load_explicit(&reg_count, memory_order_relaxed);
    if (n == reg_cap) {
        size_t cap = reg_cap ? 2 * reg_cap : 16;
        mem_alloc_t *r = gcoll_realloc(reg, cap * sizeof(*r));
        if (!r) return GCOLL_ERROR(GCOLL_ERR_NO_MEMORY, "gcoll_mem_alloc: cannot grow the registry");
        reg = r;
        reg_cap = cap;
    }
    size_t at = (size_t)(reg_below(a->base) + 1);
    memmove(reg + at + 1, reg + at, (n - at) * sizeof(*reg));
    reg[at] = *a;
    atomic_store_explicit(&reg_count, n + 1, memory_order_release);
    return GCOLL_SUCCESS;
}

int gcoll_mem_find(const void *p, size_t bytes, gcoll_mem_ref_t *ref)
{
    ref->id = 0;
    if (GCOLL_LIKELY(atomic_load_explicit(&reg_count, memory_order_acquire) == 0) || !p)
        return 0;
    uintptr_t x = (uintptr_t)p;
    pthread_mutex_lock(&reg_lock);
    ptrdiff_t i = reg_below(x);
    if (i >= 0 && reg[i].fd >= 0 && x - reg[i].base < reg[i].bytes &&
        bytes <= reg[i].bytes - (x - reg[i].base)) {
        ref->id  = reg[i].id;
        ref->off = x - reg[i].base;
        ref->fd  = reg[i].fd;
    }
    pthread_mutex_unlock(&reg_lock);
    return ref->id != 0;
}

int32_t gcoll_mem_pid(void)
{
    return (int32_t)getpid();
}

size_t gcoll_mem_live(void)
{
    return atomic_load(&reg_count);
}

/* A mapping that is not shareable, where a memfd cannot be had (no
 * descriptor left, a kernel without memfd_create): the buffer works, its
 * collectives copy. */
static void *mem_plain(size_t map_bytes)
{
    void *p = mmap(NULL, map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* A memfd of map_bytes with its pages allocated now (so a full machine fails
 * here, not with a SIGBUS inside a collective), mapped; -1 and errno. */
static int mem_shareable(size_t map_bytes, void **p)
{
    int fd = memfd_create("gcoll-mem", MFD_CLOEXEC);
    if (fd < 0) return -1;
    int e = ftruncate(fd, (off_t)map_bytes) ? errno : posix_fallocate(fd, 0, (off_t)map_bytes);
    if (!e) {
        *p = mmap(NULL, map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (*p != MAP_FAILED) return fd;
        e = errno;
    }
    close(fd);
    errno = e;
    return -1;
}

gcoll_status_t gcoll_mem_alloc(size_t bytes, void **ptr)
{
    gcoll_error_clear();
    if (!ptr) return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "gcoll_mem_alloc: ptr is NULL");
    *ptr = NULL;
    if (!bytes)
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "gcoll_mem_alloc: bytes is 0 (nothing to allocate)");
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (bytes > (size_t)INT64_MAX - page)
        return GCOLL_ERROR(GCOLL_ERR_NO_MEMORY, "gcoll_mem_alloc: %zu bytes exceed any file size",
                           bytes);
    mem_alloc_t a = { .bytes = bytes, .map_bytes = (bytes + page - 1) / page * page, .fd = -1 };
    void *p = NULL;
    a.fd = mem_shareable(a.map_bytes, &p);
    if (a.fd < 0 && (errno == ENOMEM || errno == ENOSPC || errno == EFBIG))
        return GCOLL_ERROR(GCOLL_ERR_NO_MEMORY,
                           "gcoll_mem_alloc: cannot allocate %zu bytes of shareable memory: %s",
                           bytes, strerror(errno));
    if (a.fd < 0) {
        gcoll_info("gcoll_mem_alloc: no shareable mapping for %zu bytes (memfd_create: %s); "
                   "collectives on this buffer will copy", bytes, strerror(errno));
        p = mem_plain(a.map_bytes);
        if (!p)
            return GCOLL_ERROR(GCOLL_ERR_NO_MEMORY, "gcoll_mem_alloc: cannot map %zu bytes: %s",
                               bytes, strerror(errno));
    }
    a.base = (uintptr_t)p;
    a.id = atomic_fetch_add(&reg_seq, 1) + 1;
    pthread_mutex_lock(&reg_lock);
    gcoll_status_t st = reg_insert(&a);
    pthread_mutex_unlock(&reg_lock);
    if (st != GCOLL_SUCCESS) {
        munmap(p, a.map_bytes);
        if (a.fd >= 0) close(a.fd);
        return st;
    }
    *ptr = p;
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll_mem_free(void *ptr)
{
    gcoll_error_clear();
    if (!ptr) return GCOLL_SUCCESS;   /* as free(NULL) */
    uintptr_t x = (uintptr_t)ptr;
    pthread_mutex_lock(&reg_lock);
    ptrdiff_t i = reg_below(x);
    if (i < 0 || reg[i].base != x) {
        int inside = i >= 0 && x - reg[i].base < reg[i].map_bytes;
        void *base = inside ? (void *)reg[i].base : NULL;
        pthread_mutex_unlock(&reg_lock);
        if (inside)
            return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG,
                               "gcoll_mem_free: %p lies inside the allocation at %p; pass the "
                               "pointer gcoll_mem_alloc returned", ptr, base);
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG,
                           "gcoll_mem_free: %p was not returned by gcoll_mem_alloc, or was freed "
                           "already", ptr);
    }
    mem_alloc_t a = reg[i];
    size_t n = atomic_load_explicit(&reg_count, memory_order_relaxed);
    memmove(reg + i, reg + i + 1, (n - (size_t)i - 1) * sizeof(*reg));
    atomic_store_explicit(&reg_count, n - 1, memory_order_release);
    pthread_mutex_unlock(&reg_lock);
    munmap(ptr, a.map_bytes);
    if (a.fd >= 0) {
        /* Peers may still map it (their caches): emptying the file returns
         * the pages now instead of when the last of them unmaps. */
        if (ftruncate(a.fd, 0) != 0)
            gcoll_info("gcoll_mem_free: cannot empty the memfd: %s", strerror(errno));
        close(a.fd);
    }
    return GCOLL_SUCCESS;
}

/* ---- opening a peer's descriptor ------------------------------------------ */

/* Open process pid's descriptor fd through /proc; -1 with a reason. */
static int mem_open_peer(int32_t pid, int32_t fd, char *why, size_t len)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, (int)fd);
    int f = open(path, O_RDWR | O_CLOEXEC);
    if (f < 0) snprintf(why, len, "cannot open %s: %s", path, strerror(errno));
    return f;
}

int gcoll_mem_probe_create(uint64_t token, char *why, size_t len)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    void *p;
    int fd = mem_shareable(page, &p);
    if (fd < 0) {
        snprintf(why, len, "memfd_create: %s", strerror(errno));
        return -1;
    }
    memcpy(p, &token, sizeof(token));
    munmap(p, page);
    return fd;
}

int gcoll_mem_probe_open(int32_t pid, int32_t fd, uint64_t token, char *why, size_t len)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    int f = mem_open_peer(pid, fd, why, len);
    if (f < 0) return -1;
    void *p = mmap(NULL, page, PROT_READ, MAP_SHARED, f, 0);
    int e = errno;
    close(f);
    if (p == MAP_FAILED) {
        snprintf(why, len, "cannot map /proc/%d/fd/%d: %s", (int)pid, (int)fd, strerror(e));
        return -1;
    }
    int same = memcmp(p, &token, sizeof(token)) == 0;
    munmap(p, page);
    if (!same)
        snprintf(why, len, "/proc/%d/fd/%d is not the peer's file (another pid namespace?)",
                 (int)pid, (int)fd);
    return same ? 0 : -1;
}

/* ---- the cache (peer side) --------------------------------------------- */

struct gcoll_mem_map {
    int32_t        pid, fd;
    uint64_t       id;
    unsigned char *base;
    size_t         len;
    int            pins;
    int            stale;     /* (pid, fd) now holds another allocation */
    uint64_t       used;      /* cache clock at the last pin */
    struct gcoll_mem_map *next;
};

static pthread_mutex_t  map_lock = PTHREAD_MUTEX_INITIALIZER;
static gcoll_mem_map_t *maps;
static size_t           maps_idle;   /* unpinned, not stale */
static uint64_t         map_clock;

/* Unlink and unmap m (unpinned).  Under map_lock. */
static void map_drop(gcoll_mem_map_t *m)
{
    for (gcoll_mem_map_t **pp = &maps; *pp; pp = &(*pp)->next)
        if (*pp == m) {
            *pp = m->next;
            break;
        }
    munmap(m->base, m->len);
    free(m);
}

/* Evict least recently used idle mappings beyond the bound.  Under map_lock. */
static void map_trim(void)
{
    while (maps_idle > GCOLL_MEM_CACHE) {
        gcoll_mem_map_t *old = NULL;
        for (gcoll_mem_map_t *m = maps; m; m = m->next)
            if (!m->pins && (!old || m->used < old->used)) old = m;
        if (!old) return;
        maps_idle--;
        map_drop(old);
    }
}

/* The cached mapping of (pid, fd) if it is of allocation id; a cached one of
 * another id is marked stale (dropped now if idle).  Under map_lock. */
static gcoll_mem_map_t *map_lookup(int32_t pid, int32_t fd, uint64_t id)
{
    for (gcoll_mem_map_t *m = maps; m; m = m->next) {
        if (m->stale || m->pid != pid || m->fd != fd) continue;
        if (m->id == id) return m;
        m->stale = 1;
        if (!m->pins) {
            maps_idle--;
            map_drop(m);
        }
        return NULL;
    }
    return NULL;
}

static gcoll_mem_map_t *map_open(int32_t pid, int32_t fd, uint64_t id, size_t need, char *why,
                                 size_t len)
{
    struct stat sb;
    int f = mem_open_peer(pid, fd, why, len);
    if (f < 0) return NULL;
    if (fstat(f, &sb) != 0 || (size_t)sb.st_size < need) {
        snprintf(why, len, "/proc/%d/fd/%d holds %lld bytes, fewer than the %zu announced",
                 (int)pid, (int)fd, (long long)sb.st_size, need);
        close(f);
        return NULL;
    }
    gcoll_mem_map_t *m = gcoll_calloc(1, sizeof(*m));
    void *p = m ? mmap(NULL, (size_t)sb.st_size, PROT_READ | PROT_WRITE,
                       MAP_SHARED | MAP_POPULATE, f, 0)
                : MAP_FAILED;
    int e = m ? errno : ENOMEM;
    close(f);
    if (p == MAP_FAILED) {
        snprintf(why, len, "cannot map /proc/%d/fd/%d (%lld bytes): %s", (int)pid, (int)fd,
                 (long long)sb.st_size, strerror(e));
        free(m);
        return NULL;
    }
    *m = (gcoll_mem_map_t){ .pid = pid, .fd = fd, .id = id, .base = p, .len = (size_t)sb.st_size };
    m->next = maps;
    maps = m;
    return m;
}

gcoll_mem_map_t *gcoll_mem_map_pin(int32_t pid, int32_t fd, uint64_t id, size_t need,
                                   char *why, size_t len)
{
    pthread_mutex_lock(&map_lock);
    gcoll_mem_map_t *m = map_lookup(pid, fd, id);
    if (m && m->len < need) {
        snprintf(why, len, "allocation %llu of process %d is %zu bytes, fewer than the %zu "
                 "announced", (unsigned long long)id, (int)pid, m->len, need);
        m = NULL;
    } else if (m) {
        if (!m->pins) maps_idle--;
    } else {
        m = map_open(pid, fd, id, need, why, len);
    }
    if (m) {
        m->pins++;
        m->used = ++map_clock;
    }
    pthread_mutex_unlock(&map_lock);
    return m;
}

unsigned char *gcoll_mem_map_base(const gcoll_mem_map_t *m)
{
    return m->base;
}

void gcoll_mem_map_unpin(gcoll_mem_map_t *m)
{
    if (!m) return;
    pthread_mutex_lock(&map_lock);
    if (--m->pins == 0) {
        if (m->stale) {
            map_drop(m);
        } else {
            maps_idle++;
            map_trim();
        }
    }
    pthread_mutex_unlock(&map_lock);
}
