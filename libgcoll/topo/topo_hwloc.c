/* SPDX-License-Identifier: BSD-3-Clause */
/* Loading a topology through hwloc, from this machine or from an XML file,
 * and rating each pair of devices as nvidia-smi does.
 *
 * How the PCIe relationship is read from hwloc's tree: take the common
 * ancestor C of the two PCI devices.
 *   C is a PCI-to-PCI bridge → PIX if the path crosses at most 3 bridges
 *     (C included), else PXB.  hwloc shows a PCIe switch as its upstream port
 *     with one bridge per downstream port below it, so "one switch" is the
 *     path downstream port → upstream port → downstream port: 3 bridges.
 *     Through two levels of switches the path is at least 5.
 *   C is a host bridge → PHB.
 *   C is a CPU-side object → NODE if both devices hang off the same NUMA
 *     node(s), else SYS. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "gcoll_build.h"  /* configure results (HAVE_UCX, ...) */
#include "base/alloc.h"
#include "base/log.h"
#include "base/status.h"
#include "topo/topo_int.h"

#ifndef HAVE_HWLOC

gcoll_status_t gcoll_topo_load(gcoll_topo_t **topo)
{
    if (topo) *topo = NULL;
    return GCOLL_ERROR(GCOLL_ERR_NOT_SUPPORTED, "hwloc not built: no topology");
}

gcoll_status_t gcoll_topo_load_xml(const char *path, gcoll_topo_t **topo)
{
    if (topo) *topo = NULL;
    return GCOLL_ERROR(GCOLL_ERR_NOT_SUPPORTED, "hwloc not built: cannot read %s", path ? path : "(null)");
}

#else
#include <hwloc.h>

static int pci_is_gpu(hwloc_obj_t o)
{
    unsigned cls = o->attr->pcidev.class_id;
    return o->attr->pcidev.vendor_id == 0x10de && (cls == 0x0300 || cls == 0x0302);
}

static int pci_is_nic(hwloc_obj_t o)
{
    return (o->attr->pcidev.class_id >> 8) == 0x02;
}

static int pci_cmp(const void *pa, const void *pb)
{
    const struct hwloc_pcidev_attr_s *a = &(*(const hwloc_obj_t *)pa)->attr->pcidev;
    const struct hwloc_pcidev_attr_s *b = &(*(const hwloc_obj_t *)pb)->attr->pcidev;
    unsigned ka = ((unsigned)a->domain << 20) | ((unsigned)a->bus << 12) | ((unsigned)a->dev << 4) | a->func;
    unsigned kb = ((unsigned)b->domain << 20) | ((unsigned)b->bus << 12) | ((unsigned)b->dev << 4) | b->func;
    return ka < kb ? -1 : ka > kb;
}

/* PCI devices of one kind, sorted by bus id: hwloc orders them by locality
 * first, but GPU numbering must match CUDA's PCI_BUS_ID order. */
static int collect_pci(hwloc_topology_t hw, int (*want)(hwloc_obj_t), hwloc_obj_t *out)
{
    int n = 0;
    for (hwloc_obj_t o = hwloc_get_next_pcidev(hw, NULL); o; o = hwloc_get_next_pcidev(hw, o))
        if (want(o)) {
            if (out) out[n] = o;
            n++;
        }
    if (out) qsort(out, (size_t)n, sizeof(*out), pci_cmp);
    return n;
}

/* The OS device naming a PCI device: RDMA (OpenFabrics) first for a NIC,
 * since that is the name UCX and NCCL_IB_HCA use, then network, CUDA, any. */
static hwloc_obj_t pci_osdev(hwloc_obj_t pci)
{
    static const hwloc_obj_osdev_type_t pref[] = {HWLOC_OBJ_OSDEV_OPENFABRICS, HWLOC_OBJ_OSDEV_NETWORK,
                                                  HWLOC_OBJ_OSDEV_COPROC, HWLOC_OBJ_OSDEV_GPU};
    for (size_t p = 0; p < sizeof(pref) / sizeof(pref[0]); p++)
        for (hwloc_obj_t c = pci->io_first_child; c; c = c->next_sibling)
            if (c->type == HWLOC_OBJ_OS_DEVICE && c->attr->osdev.type == pref[p] && c->name) return c;
    return NULL;
}

static int numa_index(hwloc_topology_t hw, hwloc_const_nodeset_t nodeset)
{
    if (hwloc_bitmap_weight(nodeset) != 1) return -1;
    hwloc_obj_t n = hwloc_get_numanode_obj_by_os_index(hw, (unsigned)hwloc_bitmap_first(nodeset));
    return n ? (int)n->logical_index : -1;
}

static void fill_pci_dev(hwloc_topology_t hw, hwloc_obj_t o, gcoll_topo_dev_t *d)
{
    const struct hwloc_pcidev_attr_s *p = &o->attr->pcidev;
    hwloc_obj_t os = pci_osdev(o), cpu = hwloc_get_non_io_ancestor_obj(hw, o);
    snprintf(d->name, sizeof(d->name), "%s%d", d->kind == GCOLL_TOPO_GPU ? "GPU" : "NIC", d->index);
    snprintf(d->osname, sizeof(d->osname), "%s", os ? os->name : "");
    snprintf(d->busid, sizeof(d->busid), "%04x:%02x:%02x.%x", p->domain, p->bus, p->dev, p->func);
    hwloc_bitmap_list_snprintf(d->cpus, sizeof(d->cpus), cpu->cpuset);
    d->numa = numa_index(hw, cpu->nodeset);
    d->rdma = os && os->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS;
}

static void fill_numa_dev(hwloc_obj_t o, gcoll_topo_dev_t *d)
{
    snprintf(d->name, sizeof(d->name), "NUMA%d", d->index);
    hwloc_bitmap_list_snprintf(d->cpus, sizeof(d->cpus), o->cpuset);
    d->numa = d->index;
}

static int is_pci_bridge(hwloc_obj_t o)
{
    return o->type == HWLOC_OBJ_BRIDGE && o->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI;
}

static int bridges_below(hwloc_obj_t o, hwloc_obj_t ancestor)
{
    int n = 0;
    for (o = o->parent; o && o != ancestor; o = o->parent) n += is_pci_bridge(o);
    return n;
}

/* hwloc_get_common_ancestor_obj() compares depths, which I/O objects do not
 * have (theirs are special negative values), so walk the parent chains. */
static hwloc_obj_t common_ancestor(hwloc_obj_t a, hwloc_obj_t b)
{
    for (hwloc_obj_t x = a; x; x = x->parent)
        for (hwloc_obj_t y = b; y; y = y->parent)
            if (x == y) return x;
    return NULL;
}

static gcoll_topo_link_t pci_link(hwloc_topology_t hw, hwloc_obj_t a, hwloc_obj_t b)
{
    hwloc_obj_t c = common_ancestor(a, b);
    if (is_pci_bridge(c))
        return bridges_below(a, c) + 1 + bridges_below(b, c) <= 3 ? GCOLL_TOPO_PIX : GCOLL_TOPO_PXB;
    if (c->type == HWLOC_OBJ_BRIDGE) return GCOLL_TOPO_PHB;
    hwloc_obj_t ca = hwloc_get_non_io_ancestor_obj(hw, a), cb = hwloc_get_non_io_ancestor_obj(hw, b);
    return hwloc_bitmap_isequal(ca->nodeset, cb->nodeset) ? GCOLL_TOPO_NODE : GCOLL_TOPO_SYS;
}

/* Relationship of entities i and j; obj[] holds the PCI device or NUMA node. */
static gcoll_topo_link_t entity_link(hwloc_topology_t hw, const gcoll_topo_t *t, hwloc_obj_t *obj,
                                     int i, int j)
{
    const gcoll_topo_dev_t *a = &t->dev[i], *b = &t->dev[j];
    if (i == j) return GCOLL_TOPO_X;
    if (a->kind == GCOLL_TOPO_NUMA && b->kind == GCOLL_TOPO_NUMA) return GCOLL_TOPO_SYS;
    if (a->kind == GCOLL_TOPO_NUMA || b->kind == GCOLL_TOPO_NUMA) {
        const gcoll_topo_dev_t *node = a->kind == GCOLL_TOPO_NUMA ? a : b, *d = node == a ? b : a;
        return d->numa == node->index ? GCOLL_TOPO_PHB : GCOLL_TOPO_SYS;
    }
    return pci_link(hw, obj[i], obj[j]);
}

static gcoll_status_t topo_build(hwloc_topology_t hw, gcoll_topo_t *t)
{
    int ngpu = collect_pci(hw, pci_is_gpu, NULL), nnic = collect_pci(hw, pci_is_nic, NULL);
    t->count[GCOLL_TOPO_GPU]  = ngpu;
    t->count[GCOLL_TOPO_NIC]  = nnic;
    t->count[GCOLL_TOPO_NUMA] = hwloc_get_nbobjs_by_type(hw, HWLOC_OBJ_NUMANODE);
    t->count[GCOLL_TOPO_CORE] = hwloc_get_nbobjs_by_type(hw, HWLOC_OBJ_CORE);
    t->count[GCOLL_TOPO_PU]   = hwloc_get_nbobjs_by_type(hw, HWLOC_OBJ_PU);
    GCOLL_TRY(gcoll_topo_alloc(t));
    hwloc_obj_t *obj = gcoll_calloc((size_t)t->ndev + 1, sizeof(*obj));
    if (!obj) return GCOLL_ERROR(GCOLL_ERR_NO_MEMORY, "cannot allocate %d topology objects", t->ndev);
    collect_pci(hw, pci_is_gpu, obj);
    collect_pci(hw, pci_is_nic, obj + ngpu);
    for (int i = 0; i < t->ndev; i++) {
        gcoll_topo_dev_t *d = &t->dev[i];
        d->kind  = i < ngpu ? GCOLL_TOPO_GPU : i < ngpu + nnic ? GCOLL_TOPO_NIC : GCOLL_TOPO_NUMA;
        d->index = d->kind == GCOLL_TOPO_GPU ? i : d->kind == GCOLL_TOPO_NIC ? i - ngpu : i - ngpu - nnic;
        if (d->kind == GCOLL_TOPO_NUMA) {
            obj[i] = hwloc_get_obj_by_type(hw, HWLOC_OBJ_NUMANODE, (unsigned)d->index);
            fill_numa_dev(obj[i], d);
        } else {
            fill_pci_dev(hw, obj[i], d);
        }
    }
    for (int i = 0; i < t->ndev; i++)
        for (int j = 0; j < t->ndev; j++)
            t->link[(size_t)i * (size_t)t->ndev + (size_t)j] = (unsigned char)entity_link(hw, t, obj, i, j);
    free(obj);
    const char *host = hwloc_obj_get_info_by_name(hwloc_get_root_obj(hw), "HostName");
    snprintf(t->host, sizeof(t->host), "%s", host ? host : "");
    return GCOLL_SUCCESS;
}

static gcoll_status_t topo_load(const char *xml, gcoll_topo_t **topo)
{
    if (!topo) return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "gcoll_topo_load: topo is NULL");
    *topo = NULL;
    gcoll_status_t st;
    hwloc_topology_t hw;
    gcoll_topo_t *t = gcoll_calloc(1, sizeof(*t));
    if (!t) return GCOLL_ERROR(GCOLL_ERR_NO_MEMORY, "cannot allocate a topology");
    if (hwloc_topology_init(&hw) != 0) {
        free(t);
        return GCOLL_ERROR(GCOLL_ERR_NO_MEMORY, "hwloc_topology_init failed");
    }
    /* GPUs, NICs and the bridges above them; not every PCI function */
    hwloc_topology_set_io_types_filter(hw, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if (xml && hwloc_topology_set_xml(hw, xml) != 0) {
        st = GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "cannot read %s as an hwloc XML topology (%s)", xml,
                         strerror(errno));
        goto err_hw;
    }
    if (hwloc_topology_load(hw) != 0) {
        st = xml ? GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "hwloc cannot load the topology in %s", xml)
                 : GCOLL_ERROR(GCOLL_ERR_INTERNAL, "hwloc cannot load this machine's topology");
        goto err_hw;
    }
    if ((st = topo_build(hw, t)) != GCOLL_SUCCESS) goto err_hw;
    hwloc_topology_destroy(hw);
    gcoll_info("topology%s%s: %d NUMA node(s), %d core(s), %d GPU(s), %d NIC(s)", xml ? " of " : "",
               xml ? xml : "", t->count[GCOLL_TOPO_NUMA], t->count[GCOLL_TOPO_CORE],
               t->count[GCOLL_TOPO_GPU], t->count[GCOLL_TOPO_NIC]);
    *topo = t;
    return GCOLL_SUCCESS;

err_hw:
    hwloc_topology_destroy(hw);
    gcoll_topo_destroy(t);
    return st;
}

gcoll_status_t gcoll_topo_load(gcoll_topo_t **topo)
{
    GCOLL_TRY(topo_load(NULL, topo));
    gcoll_topo_nvml_links(*topo);
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll_topo_load_xml(const char *path, gcoll_topo_t **topo)
{
    if (!path) return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "gcoll_topo_load_xml: path is NULL");
    return topo_load(path, topo);
}

#endif /* HAVE_HWLOC */
