/* SPDX-License-Identifier: BSD-3-Clause */
/* Allocation wrappers and the test-only fault injector (alloc.h). */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "base/alloc.h"
#include "base/log.h"

static struct {
    atomic_int  armed;   /* this rank is the chosen one */
    int         rank;
    long        nth;
    atomic_long count;   /* the progress thread allocates too */
    atomic_int  fired;
} fault;

void gcoll_fault_arm(int rank, long n)
{
    /* once per process, by the first create that asks: later creates (in
     * other threads too) reload the same environment */
    static atomic_int done;
    int expected = 0;
    if (n <= 0 || !atomic_compare_exchange_strong(&done, &expected, 1)) return;
    fault.rank  = rank;
    fault.nth   = n;
    atomic_store(&fault.armed, rank == gcoll_log_rank);
}

long gcoll_fault_count(void)
{
    return atomic_load(&fault.count);
}

int gcoll_fault_fired(void)
{
    return atomic_load(&fault.fired);
}

/* 1: this allocation is the one to fail. */
static int fault_now(void)
{
    if (__builtin_expect(!atomic_load_explicit(&fault.armed, memory_order_relaxed), 1)) return 0;
    if (atomic_fetch_add(&fault.count, 1) + 1 != fault.nth) return 0;
    atomic_store(&fault.fired, 1);
    gcoll_warn("GCOLL_FAULT_ALLOC: failing allocation %ld on purpose", fault.nth);
    return 1;
}

void *gcoll_malloc(size_t bytes)
{
    return fault_now() ? NULL : malloc(bytes);
}

void *gcoll_calloc(size_t n, size_t size)
{
    return fault_now() ? NULL : calloc(n, size);
}

void *gcoll_realloc(void *p, size_t bytes)
{
    return fault_now() ? NULL : realloc(p, bytes);
}

char *gcoll_strdup(const char *s)
{
    return fault_now() ? NULL : strdup(s);
}

int gcoll_posix_memalign(void **p, size_t align, size_t bytes)
{
    return fault_now() ? ENOMEM : posix_memalign(p, align, bytes);
}
