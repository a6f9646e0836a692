/* SPDX-License-Identifier: BSD-3-Clause */
/* Every heap allocation of libgcoll goes through these, so that a test can
 * make one of them fail on one rank (GCOLL_FAULT_ALLOC, docs/design.md
 * "Failures one rank sees alone"): the fault-injection sweep proves that
 * such a failure reaches every rank as an error instead of a hang.
 * Unarmed, each is the libc call behind one predictable branch. */
#ifndef GCOLL_ALLOC_H
#define GCOLL_ALLOC_H

#include <stddef.h>

void *gcoll_malloc(size_t bytes);
void *gcoll_calloc(size_t n, size_t size);
void *gcoll_realloc(void *p, size_t bytes);
char *gcoll_strdup(const char *s);
int   gcoll_posix_memalign(void **p, size_t align, size_t bytes);

/* Arm the injector: the nth allocation (counted from 1 after arming) made
 * by world rank `rank` fails; later ones succeed.  Only the first call
 * with n > 0 in the process counts (every gcoll_comm_create reloads the
 * configuration); n <= 0 does nothing. */
void gcoll_fault_arm(int rank, long n);

/* Allocations counted on this rank since arming, and whether the injected
 * failure has happened (the sweep's programs print both). */
long gcoll_fault_count(void);
int  gcoll_fault_fired(void);

#endif
