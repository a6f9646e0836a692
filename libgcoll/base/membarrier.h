/* SPDX-License-Identifier: BSD-3-Clause */
/* Process barriers by membarrier(2): the slow side of an asymmetric fence,
 * whose fast side is a plain store and load.  Two scopes: this process's
 * threads (the engine's caller-biased lock, core/engine.c) and every
 * process registered for it (the segment's light fence, shm_int.h
 * "Waiting").  Registered once per scope, on first asking. */
#ifndef GCOLL_BASE_MEMBARRIER_H
#define GCOLL_BASE_MEMBARRIER_H

typedef enum {
    GCOLL_MEMBARRIER_PRIVATE,   /* this process's running threads */
    GCOLL_MEMBARRIER_GLOBAL,    /* every registered process's */
    GCOLL_MEMBARRIER_SCOPES
} gcoll_membarrier_scope_t;

/* Whether this process may issue (and, GLOBAL, takes part in) barriers of
 * that scope: the kernel has them and the registration succeeded. */
int gcoll_membarrier_ready(gcoll_membarrier_scope_t scope);

/* A full barrier on every CPU running a thread of the scope; only after
 * gcoll_membarrier_ready said yes. */
void gcoll_membarrier(gcoll_membarrier_scope_t scope);

#endif
