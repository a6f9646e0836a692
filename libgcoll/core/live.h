/* SPDX-License-Identifier: BSD-3-Clause */
/* The registry of live handles (communicators, compressors): every public
 * call looks its handle up here first, so a destroyed or never-created
 * handle is reported as GCOLL_ERR_INVALID_ARG, never dereferenced.  Few
 * handles exist at once, so a list walk per call is cheap.  Thread-safe.
 *
 * A handle is the address of its object, so the registry alone cannot tell
 * a destroyed handle from a new object that malloc placed at the same
 * address: the stale handle would be taken for the new one.  Objects that
 * are handles therefore get their memory from gcoll_live_alloc and give it
 * back with gcoll_live_free, which never hands an address out twice: a
 * destroyed handle stays invalid for the life of the process, at the cost
 * of keeping each destroyed object's bytes until exit (a communicator: about
 * 550 bytes). */
#ifndef GCOLL_LIVE_H
#define GCOLL_LIVE_H

#include <stddef.h>

/* Register h; GCOLL_ERR_NO_MEMORY if the entry cannot be allocated. */
int gcoll_live_add(const void *h);
void gcoll_live_remove(const void *h);
/* 1 if h is registered. */
int gcoll_live_has(const void *h);

/* Zeroed memory for a handle's object, at an address no earlier
 * gcoll_live_alloc returned (NULL if out of memory).  Not registered:
 * gcoll_live_add it once it is ready. */
void *gcoll_live_alloc(size_t bytes);
/* Unregister h (if registered) and retire its memory: its address is never
 * returned again, so h stays invalid.  NULL is ignored. */
void gcoll_live_free(void *h);

#endif
