/* SPDX-License-Identifier: BSD-3-Clause */
/* The topology matrix in the manner of `nvidia-smi topo -m`, so that people
 * who read one can read the other: same labels, same legend, with NUMA
 * nodes as rows and columns too (a device is PHB from its own). */
#include "base/status.h"
#include "topo/topo_int.h"

#define COL 7   /* column width: fits "NUMA10", "NV18", "SYS" */

static void print_header(const gcoll_topo_t *t, FILE *out)
{
    fprintf(out, "%-*s", COL, "");
    for (int i = 0; i < t->ndev; i++) fprintf(out, "%-*s", COL, t->dev[i].name);
    fprintf(out, "%-16s%s\n", "CPU Affinity", "NUMA Affinity");
}

static void print_row(const gcoll_topo_t *t, int i, FILE *out)
{
    const gcoll_topo_dev_t *a = &t->dev[i];
    char label[8], numa[12] = "N/A";
    fprintf(out, "%-*s", COL, a->name);
    for (int j = 0; j < t->ndev; j++) {
        const gcoll_topo_dev_t *b = &t->dev[j];
        fprintf(out, "%-*s", COL, gcoll_topo_link_label(t, a->kind, a->index, b->kind, b->index,
                                                         label, sizeof(label)));
    }
    if (a->numa >= 0) snprintf(numa, sizeof(numa), "%d", a->numa);
    fprintf(out, "%-16s%s\n", a->cpus[0] ? a->cpus : "N/A", numa);
}

static void print_legend(const gcoll_topo_t *t, FILE *out)
{
    fprintf(out, "\nLegend:\n\n"
                 "  X    = Self\n"
                 "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)\n"
                 "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node\n"
                 "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU);\n"
                 "         for a NUMA row or column: the device is attached to that NUMA node\n"
                 "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)\n"
                 "  PIX  = Connection traversing at most a single PCIe bridge\n"
                 "  NV#  = Connection traversing a bonded set of # NVLinks\n");
    if (t->ndev == t->count[GCOLL_TOPO_NUMA]) return;
    fprintf(out, "\nDevice Legend:\n\n");
    for (int i = 0; i < t->ndev; i++) {
        const gcoll_topo_dev_t *d = &t->dev[i];
        if (d->kind == GCOLL_TOPO_NUMA) continue;
        fprintf(out, "  %s: %s%s%s%s\n", d->name, d->osname[0] ? d->osname : d->busid,
                d->osname[0] ? " (" : "", d->osname[0] ? d->busid : "", d->osname[0] ? ")" : "");
    }
}

gcoll_status_t gcoll_topo_print_matrix(const gcoll_topo_t *t, FILE *out)
{
    if (!t || !out) return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "gcoll_topo_print_matrix: NULL argument");
    fprintf(out, "%s%s%d NUMA node(s), %d core(s), %d PU(s), %d GPU(s), %d NIC(s)\n\n",
            t->host[0] ? t->host : "", t->host[0] ? ": " : "", t->count[GCOLL_TOPO_NUMA],
            t->count[GCOLL_TOPO_CORE], t->count[GCOLL_TOPO_PU], t->count[GCOLL_TOPO_GPU],
            t->count[GCOLL_TOPO_NIC]);
    print_header(t, out);
    for (int i = 0; i < t->ndev; i++) print_row(t, i, out);
    print_legend(t, out);
    return GCOLL_SUCCESS;
}
