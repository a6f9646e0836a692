/* SPDX-License-Identifier: BSD-3-Clause */
/* Inside the topology: the entities (GPUs, then NICs, then NUMA nodes) and
 * their pairwise relationships, computed once at load time so the hwloc
 * handle can be released and queries are plain array reads. */
#ifndef GCOLL_TOPO_INT_H
#define GCOLL_TOPO_INT_H

#include "topo/topo.h"

struct gcoll_topo {
    char              host[64];
    int               count[GCOLL_TOPO_KIND_COUNT];
    int               ndev;       /* GPUs + NICs + NUMA nodes */
    gcoll_topo_dev_t *dev;        /* [ndev]: GPUs, then NICs, then NUMA nodes */
    unsigned char    *link;       /* [ndev * ndev] gcoll_topo_link_t */
    unsigned char    *nvlinks;    /* [ndev * ndev] NVLink counts, GPU pairs only */
};

/* Index in dev[] of the index-th entity of a kind, or -1. */
int gcoll_topo_entity(const gcoll_topo_t *topo, gcoll_topo_kind_t kind, int index);

/* Entity arrays for counts already set in topo->count (zeroed). */
gcoll_status_t gcoll_topo_alloc(gcoll_topo_t *topo);

/* NVLink counts between the GPUs of a topology loaded from this machine;
 * does nothing (INFO line) when libnvidia-ml.so.1 is absent. */
void gcoll_topo_nvml_links(gcoll_topo_t *topo);

#endif
