/* SPDX-License-Identifier: BSD-3-Clause */
/* Memory the node's peers can map: the allocator behind gcoll_mem_alloc /
 * gcoll_mem_free, the process-wide registry of its allocations (owner side)
 * and the process-wide cache of peers' allocations mapped here (peer side).
 * The zero-copy forms of the shared-memory collectives (shm_zcopy.c) are
 * their only user.
 *
 * An allocation is a memfd (memfd_create) of its own, mapped MAP_SHARED; its
 * descriptor stays open for the allocation's life, so a peer on the node
 * opens /proc/<pid>/fd/<fd> and maps the same pages.  Its id (a sequence
 * number, never 0, never reused in this process) tells a peer whether a
 * mapping it cached for (pid, fd) is still this allocation: ids of one
 * process and the pid together name an allocation for the process's life.
 * docs/design.md, "Zero-copy buffers", says why and what happens after a
 * crash. */
#ifndef GCOLL_SHM_MEM_H
#define GCOLL_SHM_MEM_H

#include <stddef.h>
#include <stdint.h>
#include "gcoll.h"

/* Where a buffer lies in a shareable allocation of this process. */
typedef struct {
    uint64_t id;     /* 0: not in one (the buffer must be copied) */
    uint64_t off;    /* offset of the buffer from the allocation's start */
    int32_t  fd;     /* the allocation's memfd here */
} gcoll_mem_ref_t;

/* Whether [p, p + bytes) lies wholly inside one shareable allocation; *ref
 * says where (ref->id = 0 if not).  Costs one atomic load while the process
 * has no allocations, so callers that never allocate pay nothing.
 * Thread-safe. */
int gcoll_mem_find(const void *p, size_t bytes, gcoll_mem_ref_t *ref);

/* This process's id, as peers name it in /proc. */
int32_t gcoll_mem_pid(void);

/* Live allocations of this process (for tests). */
size_t gcoll_mem_live(void);

/* ---- the peer side: mappings of other processes' allocations ----------- */

typedef struct gcoll_mem_map gcoll_mem_map_t;

/* Map allocation id of process pid (its descriptor fd there), which must
 * hold at least need bytes, and pin the mapping (it stays until unpinned).
 * Cached: a second call for the same allocation costs a lookup.  A cached
 * mapping of (pid, fd) whose id differs is of a freed allocation; it is
 * unmapped once nobody pins it.  At most GCOLL_MEM_CACHE unpinned mappings
 * are kept (least recently used go first).  Returns NULL with a reason in
 * why (a sentence, not recorded as an error) if the allocation cannot be
 * opened or mapped.  Thread-safe. */
gcoll_mem_map_t *gcoll_mem_map_pin(int32_t pid, int32_t fd, uint64_t id, size_t need,
                                   char *why, size_t len);
/* Start of a pinned mapping (the allocation's first byte). */
unsigned char *gcoll_mem_map_base(const gcoll_mem_map_t *m);
/* Release a pin; NULL is ignored. */
void gcoll_mem_map_unpin(gcoll_mem_map_t *m);

#define GCOLL_MEM_CACHE 64

/* ---- the probe: can this node's ranks map each other's memory? ---------- */

/* A one-page shareable file holding token, for the peers to open (the
 * descriptor, or -1 with a reason in why). */
int gcoll_mem_probe_create(uint64_t token, char *why, size_t len);
/* Whether process pid's descriptor fd opens here and holds token; 0 if so,
 * -1 with a reason in why. */
int gcoll_mem_probe_open(int32_t pid, int32_t fd, uint64_t token, char *why, size_t len);

#endif
