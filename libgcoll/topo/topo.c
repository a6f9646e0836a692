/* SPDX-License-Identifier: BSD-3-Clause */
/* Queries on a loaded topology and the GPU/NIC assignment policy.  Nothing
 * here needs hwloc: loading (topo_hwloc.c) fills the arrays, this file only
 * reads them, so it builds and is tested the same with or without hwloc. */
#include <stdlib.h>
#include <string.h>
#include "base/alloc.h"
#include "base/status.h"
#include "topo/topo_int.h"

static int is_entity_kind(gcoll_topo_kind_t kind)
{
    return kind == GCOLL_TOPO_GPU || kind == GCOLL_TOPO_NIC || kind == GCOLL_TOPO_NUMA;
}

int gcoll_topo_entity(const gcoll_topo_t *topo, gcoll_topo_kind_t kind, int index)
{
    if (!topo || !is_entity_kind(kind) || index < 0 || index >= topo->count[kind]) return -1;
    int base = 0;
    for (int k = 0; k < (int)kind; k++) base += topo->count[k];
    return base + index;
}

gcoll_status_t gcoll_topo_alloc(gcoll_topo_t *topo)
{
    int n = topo->count[GCOLL_TOPO_GPU] + topo->count[GCOLL_TOPO_NIC] + topo->count[GCOLL_TOPO_NUMA];
    topo->ndev    = n;
    topo->dev     = gcoll_calloc((size_t)n + 1, sizeof(*topo->dev));
    topo->link    = gcoll_calloc((size_t)n * (size_t)n + 1, 1);
    topo->nvlinks = gcoll_calloc((size_t)n * (size_t)n + 1, 1);
    if (!topo->dev || !topo->link || !topo->nvlinks)
        return GCOLL_ERROR(GCOLL_ERR_NO_MEMORY, "cannot allocate a topology of %d devices", n);
    return GCOLL_SUCCESS;
}

void gcoll_topo_destroy(gcoll_topo_t *topo)
{
    if (!topo) return;
    free(topo->dev);
    free(topo->link);
    free(topo->nvlinks);
    free(topo);
}

int gcoll_topo_count(const gcoll_topo_t *topo, gcoll_topo_kind_t kind)
{
    if (!topo || (int)kind < 0 || kind >= GCOLL_TOPO_KIND_COUNT) return 0;
    return topo->count[kind];
}

const gcoll_topo_dev_t *gcoll_topo_dev(const gcoll_topo_t *topo, gcoll_topo_kind_t kind, int index)
{
    int e = gcoll_topo_entity(topo, kind, index);
    return e < 0 ? NULL : &topo->dev[e];
}

const char *gcoll_topo_host(const gcoll_topo_t *topo)
{
    return topo ? topo->host : "";
}

gcoll_topo_link_t gcoll_topo_link(const gcoll_topo_t *topo, gcoll_topo_kind_t ka, int ia,
                                  gcoll_topo_kind_t kb, int ib, int *nvlinks)
{
    int a = gcoll_topo_entity(topo, ka, ia), b = gcoll_topo_entity(topo, kb, ib);
    if (nvlinks) *nvlinks = 0;
    if (a < 0 || b < 0) return GCOLL_TOPO_SYS;
    size_t at = (size_t)a * (size_t)topo->ndev + (size_t)b;
    if (nvlinks) *nvlinks = topo->nvlinks[at];
    return topo->nvlinks[at] ? GCOLL_TOPO_NV : (gcoll_topo_link_t)topo->link[at];
}

const char *gcoll_topo_link_label(const gcoll_topo_t *topo, gcoll_topo_kind_t ka, int ia,
                                  gcoll_topo_kind_t kb, int ib, char *buf, size_t len)
{
    static const char *const names[] = {"X", "NV", "PIX", "PXB", "PHB", "NODE", "SYS"};
    int nv = 0;
    gcoll_topo_link_t l = gcoll_topo_link(topo, ka, ia, kb, ib, &nv);
    if (l == GCOLL_TOPO_NV) snprintf(buf, len, "NV%d", nv);
    else snprintf(buf, len, "%s", names[l]);
    return buf;
}

gcoll_status_t gcoll_topo_set_nvlinks(gcoll_topo_t *topo, int gpu_a, int gpu_b, int nvlinks)
{
    int a = gcoll_topo_entity(topo, GCOLL_TOPO_GPU, gpu_a);
    int b = gcoll_topo_entity(topo, GCOLL_TOPO_GPU, gpu_b);
    if (a < 0 || b < 0 || a == b || nvlinks < 0 || nvlinks > 255)
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG,
                           "cannot record %d NVLinks between GPU%d and GPU%d", nvlinks, gpu_a, gpu_b);
    size_t n = (size_t)topo->ndev, ab = (size_t)a * n + (size_t)b, ba = (size_t)b * n + (size_t)a;
    /* keep the PCIe relationship underneath (link stays as loaded) and let
     * the NVLink count, when non-zero, override it on every read */
    topo->nvlinks[ab] = topo->nvlinks[ba] = (unsigned char)nvlinks;
    return GCOLL_SUCCESS;
}

/* The NIC closest to entity `from`: smallest relationship, then RDMA-capable,
 * then lowest index; -1 without NICs. */
static int closest_nic(const gcoll_topo_t *topo, gcoll_topo_kind_t kind, int index)
{
    int best = -1, best_score = 0;
    for (int i = 0; i < topo->count[GCOLL_TOPO_NIC]; i++) {
        int rdma  = gcoll_topo_dev(topo, GCOLL_TOPO_NIC, i)->rdma;
        int score = (int)gcoll_topo_link(topo, kind, index, GCOLL_TOPO_NIC, i, NULL) * 2 + !rdma;
        if (best < 0 || score < best_score) best = i, best_score = score;
    }
    return best;
}

gcoll_status_t gcoll_topo_assign(const gcoll_topo_t *topo, int local_rank, int local_size,
                                 int *gpu, int *nic)
{
    if (!topo || !gpu || !nic)
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "gcoll_topo_assign: NULL topology or output");
    if (local_size < 1 || local_rank < 0 || local_rank >= local_size)
        return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG,
                           "gcoll_topo_assign: local rank %d is not in [0, %d)", local_rank, local_size);
    int ngpus = topo->count[GCOLL_TOPO_GPU], nnuma = topo->count[GCOLL_TOPO_NUMA];
    *gpu = ngpus ? local_rank % ngpus : -1;
    if (*gpu >= 0) {
        *nic = closest_nic(topo, GCOLL_TOPO_GPU, *gpu);
    } else if (nnuma) {
        /* block placement: ranks 0..k-1 on the first NUMA node, and so on */
        int numa = (int)((long)local_rank * nnuma / local_size);
        *nic = closest_nic(topo, GCOLL_TOPO_NUMA, numa);
    } else {
        *nic = topo->count[GCOLL_TOPO_NIC] ? 0 : -1;
    }
    return GCOLL_SUCCESS;
}
