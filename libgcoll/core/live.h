/* SPDX-License-Identifier: BSD-3-Clause */
/* The registry of live handles (communicators, compressors): every public
 * call looks its handle up here first, so a destroyed or never-created
 * handle is reported as GCOLL_ERR_INVALID_ARG, never dereferenced.  Few
 * handles exist at once, so a list walk per call is cheap.  Thread-safe. */
#ifndef GCOLL_LIVE_H
#define GCOLL_LIVE_H

/* Register h; GCOLL_ERR_NO_MEMORY if the entry cannot be allocated. */
int gcoll_live_add(const void *h);
void gcoll_live_remove(const void *h);
/* 1 if h is registered. */
int gcoll_live_has(const void *h);

#endif
