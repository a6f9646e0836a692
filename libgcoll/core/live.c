/* SPDX-License-Identifier: BSD-3-Clause */
/* Registry of live handles: a mutex-protected singly linked list, and the
 * retired memory of destroyed handles (live.h says why it is kept). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "base/alloc.h"
#include "core/live.h"
#include "base/status.h"

typedef struct live_entry {
    const void        *h;
    struct live_entry *next;
} live_entry_t;

/* The first bytes of a retired handle's memory: the list of them. */
typedef struct retired {
    struct retired *next;
} retired_t;

static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static live_entry_t   *live_head;
static retired_t      *retired_head;   /* reachable, so no leak checker reports it */

/* Every call checks its handle, so the last handle a thread found live is
 * remembered with the number of removals seen then: while no handle was
 * removed since, the same handle is still live, without the lock and the
 * walk (a call of a few hundred nanoseconds paid ~10% for them). */
static _Atomic unsigned long removals;
static __thread const void   *last_found;
static __thread unsigned long last_removals;

int gcoll_live_add(const void *h)
{
    live_entry_t *e = gcoll_malloc(sizeof(*e));
    if (!e) return GCOLL_ERR_NO_MEMORY;
    e->h = h;
    pthread_mutex_lock(&live_lock);
    e->next   = live_head;
    live_head = e;
    pthread_mutex_unlock(&live_lock);
    return GCOLL_SUCCESS;
}

void gcoll_live_remove(const void *h)
{
    live_entry_t *gone = NULL;
    pthread_mutex_lock(&live_lock);
    for (live_entry_t **p = &live_head; *p; p = &(*p)->next)
        if ((*p)->h == h) {
            gone = *p;
            *p   = gone->next;
            atomic_fetch_add_explicit(&removals, 1, memory_order_relaxed);
            break;
        }
    pthread_mutex_unlock(&live_lock);
    free(gone);
}

int gcoll_live_has(const void *h)
{
    if (h && h == last_found &&
        atomic_load_explicit(&removals, memory_order_relaxed) == last_removals)
        return 1;
    int found = 0;
    pthread_mutex_lock(&live_lock);
    unsigned long seen = atomic_load_explicit(&removals, memory_order_relaxed);
    for (live_entry_t *e = live_head; e && !found; e = e->next) found = e->h == h;
    pthread_mutex_unlock(&live_lock);
    if (found) {
        last_found    = h;
        last_removals = seen;
    }
    return found;
}

/* Memory that is never freed cannot come back from malloc, so a retired
 * address is never an address of a later handle. */
void *gcoll_live_alloc(size_t bytes)
{
    return gcoll_calloc(1, bytes < sizeof(retired_t) ? sizeof(retired_t) : bytes);
}

void gcoll_live_free(void *h)
{
    if (!h) return;
    gcoll_live_remove(h);
    retired_t *r = h;   /* the object's own bytes hold the link */
    pthread_mutex_lock(&live_lock);
    r->next      = retired_head;
    retired_head = r;
    pthread_mutex_unlock(&live_lock);
}
