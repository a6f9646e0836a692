/* SPDX-License-Identifier: BSD-3-Clause */
/* `gcoll_info --topo`: the node's matrix and what libgcoll decided from it.
 * Every rank reads its own node's topology (ranks of other nodes may sit on
 * different hardware) and rates itself; rank 0 gathers one fixed-size
 * record per rank and prints them, so output is one block, not interleaved. */
#include <stdlib.h>
#include <string.h>
#include "base/alloc.h"
#include "core/comm.h"
#include "base/config.h"
#include "base/status.h"
#include "topo/topo.h"

typedef struct {
    int  node, local_rank, local_size, gpu, nic;
    int  status;               /* of this rank's topology load */
    char host[64];
    char gpu_bus[16];
    char nic_name[32];
} rank_info_t;

static void rank_info(gcoll_comm_t comm, const gcoll_topo_t *topo, gcoll_status_t st, rank_info_t *me)
{
    int len = 0;
    char host[MPI_MAX_PROCESSOR_NAME];
    memset(me, 0, sizeof(*me));
    MPI_Get_processor_name(host, &len);
    snprintf(me->host, sizeof(me->host), "%.63s", host);
    me->node       = comm->node;
    me->local_rank = comm->local_rank;
    me->local_size = comm->local_size;
    me->status     = st;
    me->gpu = me->nic = -1;
    if (st != GCOLL_SUCCESS) return;
    gcoll_topo_assign(topo, comm->local_rank, comm->local_size, &me->gpu, &me->nic);
    const gcoll_topo_dev_t *g = gcoll_topo_dev(topo, GCOLL_TOPO_GPU, me->gpu);
    const gcoll_topo_dev_t *n = gcoll_topo_dev(topo, GCOLL_TOPO_NIC, me->nic);
    if (g) snprintf(me->gpu_bus, sizeof(me->gpu_bus), "%s", g->busid);
    if (n) snprintf(me->nic_name, sizeof(me->nic_name), "%s", n->osname[0] ? n->osname : n->busid);
}

static void print_ranks(gcoll_comm_t comm, const rank_info_t *all, FILE *out)
{
    fprintf(out, "  %-5s %-5s %-16s %-11s %-22s %s\n", "rank", "node", "host", "local rank", "GPU", "NIC");
    for (int r = 0; r < comm->size; r++) {
        const rank_info_t *i = &all[r];
        char local[24], gpu[40] = "-", nic[48] = "-";
        snprintf(local, sizeof(local), "%d of %d", i->local_rank, i->local_size);
        if (i->status != GCOLL_SUCCESS) snprintf(gpu, sizeof(gpu), "? (no topology)");
        if (i->gpu >= 0) snprintf(gpu, sizeof(gpu), "GPU%d %s", i->gpu, i->gpu_bus);
        if (i->nic >= 0) snprintf(nic, sizeof(nic), "NIC%d %s", i->nic, i->nic_name);
        fprintf(out, "  %-5d %-5d %-16s %-11s %-22s %s\n", r, i->node, i->host, local, gpu, nic);
    }
}

static void print_decision(gcoll_comm_t comm, const rank_info_t *all, const char *xml, FILE *out)
{
    fprintf(out, "\nWhat libgcoll decided (%d rank(s)):\n", comm->size);
    if (xml) fprintf(out, "  topology       : recorded in %s, taken as every node's\n", xml);
    fprintf(out, "  nodes          : %d%s\n", comm->nnodes,
            comm->cfg.node_size ? " (simulated by GCOLL_NODE_SIZE)" : "");
    if (comm->nodes_uniform) {
        fprintf(out, "  ranks per node : %d%s\n", comm->local_size,
                comm->nodes_contiguous ? " (consecutive ranks)" : "");
    } else {
        fprintf(out, "  ranks per node : uneven:");
        for (int n = 0, r = 0; n < comm->nnodes; n++, r = 0) {
            while (r < comm->size && comm->node_of[r] != n) r++;
            fprintf(out, " %d", r < comm->size ? all[r].local_size : 0);
        }
        fprintf(out, "\n");
    }
    fprintf(out, "  policy         : GPUs round-robin by local rank in PCI order; the NIC closest to\n"
                 "                   the GPU (without GPUs: to the rank's NUMA node), RDMA first\n");
    print_ranks(comm, all, out);
}

gcoll_status_t gcoll_topo_report(gcoll_comm_t comm, const char *xml, FILE *out)
{
    GCOLL_TRY(gcoll_comm_check(comm));
    gcoll_topo_t *topo = NULL;
    gcoll_status_t st = xml ? gcoll_topo_load_xml(xml, &topo) : gcoll_topo_load(&topo);
    rank_info_t me, *all = NULL;
    rank_info(comm, topo, st, &me);
    if (comm->rank == 0 && !(all = gcoll_malloc(sizeof(*all) * (size_t)comm->size))) {
        gcoll_topo_destroy(topo);
        return GCOLL_ERROR(GCOLL_ERR_NO_MEMORY, "cannot gather the topology of %d ranks", comm->size);
    }
    /* every rank joins the gather even after a failed load: a rank that
     * skipped it would leave the others waiting */
    if (MPI_Gather(&me, (int)sizeof(me), MPI_BYTE, all, (int)sizeof(me), MPI_BYTE, 0,
                   comm->mpi_comm) != MPI_SUCCESS) {
        free(all);   /* its records are undefined: nothing of them is printed */
        gcoll_topo_destroy(topo);
        return GCOLL_ERROR(GCOLL_ERR_TRANSPORT, "MPI_Gather of the ranks' topology failed");
    }
    if (comm->rank == 0) {
        if (st == GCOLL_SUCCESS) gcoll_topo_print_matrix(topo, out);
        else fprintf(out, "topology: %s\n", gcoll_last_error());
        print_decision(comm, all, xml, out);
        fflush(out);
    }
    free(all);
    gcoll_topo_destroy(topo);
    return st;
}
