/* SPDX-License-Identifier: BSD-3-Clause */
/* Registry of live handles: a mutex-protected singly linked list. */
#include <pthread.h>
#include <stdlib.h>
#include "base/alloc.h"
#include "core/live.h"
#include "base/status.h"

typedef struct live_entry {
    const void        *h;
    struct live_entry *next;
} live_entry_t;

static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static live_entry_t   *live_head;

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
            break;
        }
    pthread_mutex_unlock(&live_lock);
    free(gone);
}

int gcoll_live_has(const void *h)
{
    int found = 0;
    pthread_mutex_lock(&live_lock);
    for (live_entry_t *e = live_head; e && !found; e = e->next) found = e->h == h;
    pthread_mutex_unlock(&live_lock);
    return found;
}
