/* Transport progress from MPI's progress loop (see bg_progress.h). */
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include "core/log.h"
#include "transport/bg_progress.h"

typedef int (*opal_cb_t)(void);
typedef int (*opal_reg_t)(opal_cb_t);

static pthread_mutex_t      bg_lock = PTHREAD_MUTEX_INITIALIZER;
static gcoll_bg_progress_t *bg_head;
static int                  bg_registered;   /* our callback is in MPI's loop */
static opal_reg_t           bg_reg, bg_unregister;
static int                  bg_probed;       /* the hook was looked up (once) */

/* Called by Open MPI in every pass of its progress loop, on whatever thread
 * is inside MPI: must not block, so it skips the whole list while add or
 * remove holds the lock, and each transport its caller owns. */
static int bg_callback(void)
{
    int events = 0;
    if (pthread_mutex_trylock(&bg_lock) != 0) return 0;
    for (gcoll_bg_progress_t *p = bg_head; p; p = p->next) {
        int expected = 0;
        if (!atomic_compare_exchange_strong(&p->owner, &expected, 2)) continue;
        p->progress(p->arg);
        atomic_store(&p->owner, 0);
        events++;
    }
    pthread_mutex_unlock(&bg_lock);
    return events;
}

/* Under bg_lock.  Once registered the callback stays until the list empties. */
static void bg_register(void)
{
    if (bg_registered) return;
    if (!bg_probed) {
        bg_probed     = 1;
        bg_reg        = (opal_reg_t)dlsym(RTLD_DEFAULT, "opal_progress_register");
        bg_unregister = (opal_reg_t)dlsym(RTLD_DEFAULT, "opal_progress_unregister");
        if (!bg_reg || !bg_unregister)
            gcoll_info("transport: the MPI library has no progress hook (not Open MPI); "
                       "libgcoll's UCX workers are polled only inside libgcoll calls");
    }
    if (!bg_reg || !bg_unregister) return;
    bg_registered = bg_reg(bg_callback) == 0;
    gcoll_info("transport: UCX workers %s polled from Open MPI's progress loop between calls",
               bg_registered ? "are" : "could not be");
}

void gcoll_bg_progress_add(gcoll_bg_progress_t *p)
{
    atomic_store(&p->owner, 0);
    pthread_mutex_lock(&bg_lock);
    p->next = bg_head;
    bg_head = p;
    bg_register();
    pthread_mutex_unlock(&bg_lock);
}

void gcoll_bg_progress_remove(gcoll_bg_progress_t *p)
{
    pthread_mutex_lock(&bg_lock);   /* the callback holds it while it runs */
    for (gcoll_bg_progress_t **q = &bg_head; *q; q = &(*q)->next) {
        if (*q == p) {
            *q = p->next;
            break;
        }
    }
    if (!bg_head && bg_registered) {
        bg_unregister(bg_callback);
        bg_registered = 0;
    }
    pthread_mutex_unlock(&bg_lock);
}

void gcoll_bg_progress_enter(gcoll_bg_progress_t *p)
{
    for (;;) {
        int expected = 0;
        if (atomic_compare_exchange_weak(&p->owner, &expected, 1)) return;
        sched_yield();   /* the callback is polling it: one worker pass */
    }
}

void gcoll_bg_progress_leave(gcoll_bg_progress_t *p)
{
    atomic_store(&p->owner, 0);
}

int gcoll_bg_progress_active(void)
{
    pthread_mutex_lock(&bg_lock);
    int on = bg_registered;
    pthread_mutex_unlock(&bg_lock);
    return on;
}
