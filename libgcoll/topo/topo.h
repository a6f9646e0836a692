/* SPDX-License-Identifier: BSD-3-Clause */
/* The node's topology as libgcoll sees it: NUMA nodes, cores, and the GPUs
 * and NICs with their PCIe locality, read through hwloc from this machine or
 * from a recorded XML file (tests), with NVLink peers from NVML when that
 * library is present at run time.
 *
 * The relationship of two devices uses nvidia-smi's vocabulary, ordered from
 * closest to farthest, so that "closer" is a plain comparison:
 *
 *   X     the device itself
 *   NV#   a bonded set of # NVLinks (GPU pairs, from NVML only)
 *   PIX   at most one PCIe switch (or bridge) between them
 *   PXB   several PCIe switches, without crossing a host bridge
 *   PHB   through a PCIe host bridge (the CPU's root complex)
 *   NODE  between host bridges of the same NUMA node
 *   SYS   across the SMP interconnect between NUMA nodes
 *
 * NUMA nodes are entities too: a device is PHB from the NUMA node it is
 * attached to and SYS from the others, as NCCL rates the GPU-to-CPU path.
 *
 * Life: gcoll_topo_load() or gcoll_topo_load_xml() → queries →
 * gcoll_topo_destroy().  A loaded topology is immutable except for
 * gcoll_topo_set_nvlinks(), so queries need no lock.  This header does not
 * include hwloc.h: callers build without hwloc's flags. */
#ifndef GCOLL_TOPO_H
#define GCOLL_TOPO_H

#include <stdio.h>
#include "gcoll.h"

typedef struct gcoll_topo gcoll_topo_t;

typedef enum {
    GCOLL_TOPO_GPU = 0,   /* NVIDIA GPUs (PCI class 0300/0302, vendor 10de) */
    GCOLL_TOPO_NIC,       /* network controllers (PCI class 02xx) */
    GCOLL_TOPO_NUMA,      /* NUMA nodes */
    GCOLL_TOPO_CORE,      /* cores: counted, not entities */
    GCOLL_TOPO_PU,        /* hardware threads: counted, not entities */
    GCOLL_TOPO_KIND_COUNT
} gcoll_topo_kind_t;

/* Closest first: a smaller value is a closer relationship. */
typedef enum {
    GCOLL_TOPO_X = 0, GCOLL_TOPO_NV, GCOLL_TOPO_PIX, GCOLL_TOPO_PXB,
    GCOLL_TOPO_PHB, GCOLL_TOPO_NODE, GCOLL_TOPO_SYS
} gcoll_topo_link_t;

/* One GPU, NIC or NUMA node.  Indices are per kind and follow PCI bus order
 * for devices (the order of CUDA_DEVICE_ORDER=PCI_BUS_ID and nvidia-smi),
 * logical order for NUMA nodes. */
typedef struct {
    gcoll_topo_kind_t kind;
    int  index;          /* within its kind */
    char name[16];       /* "GPU0", "NIC1", "NUMA0" */
    char osname[32];     /* "mlx5_0", "eth0", "cuda0"; "" when hwloc names none */
    char busid[16];      /* "0000:07:00.0"; "" for NUMA nodes */
    char cpus[64];       /* CPU affinity as a list, "0-3,8-11" */
    int  numa;           /* NUMA node it is attached to, -1 if not exactly one */
    int  rdma;           /* NIC with an RDMA (OpenFabrics) device, e.g. mlx5_0 */
} gcoll_topo_dev_t;

/* Topology of this machine, I/O devices included (hwloc, then NVML when
 * libnvidia-ml.so.1 loads).  GCOLL_ERR_NOT_SUPPORTED without hwloc. */
gcoll_status_t gcoll_topo_load(gcoll_topo_t **topo);

/* Topology recorded in an hwloc XML file (lstopo --of xml).  NVML is not
 * consulted: the file describes another machine.  GCOLL_ERR_INVALID_ARG if
 * the file cannot be read as a topology. */
gcoll_status_t gcoll_topo_load_xml(const char *path, gcoll_topo_t **topo);

void gcoll_topo_destroy(gcoll_topo_t *topo);

/* Number of objects of @p kind (0 for an unknown kind). */
int gcoll_topo_count(const gcoll_topo_t *topo, gcoll_topo_kind_t kind);

/* The @p index-th GPU, NIC or NUMA node, or NULL when out of range. */
const gcoll_topo_dev_t *gcoll_topo_dev(const gcoll_topo_t *topo, gcoll_topo_kind_t kind, int index);

/* Host name recorded with the topology ("" when unknown). */
const char *gcoll_topo_host(const gcoll_topo_t *topo);

/* Relationship of two entities; *nvlinks (may be NULL) gets the NVLink
 * count when it is GCOLL_TOPO_NV.  GCOLL_TOPO_SYS for an entity that does
 * not exist, so a bad index never reads as close. */
gcoll_topo_link_t gcoll_topo_link(const gcoll_topo_t *topo, gcoll_topo_kind_t ka, int ia,
                                  gcoll_topo_kind_t kb, int ib, int *nvlinks);

/* The relationship as nvidia-smi writes it ("PIX", "NV12", "X") in @p buf
 * of at least 8 bytes; returns @p buf. */
const char *gcoll_topo_link_label(const gcoll_topo_t *topo, gcoll_topo_kind_t ka, int ia,
                                  gcoll_topo_kind_t kb, int ib, char *buf, size_t len);

/* Record @p nvlinks NVLinks between two GPUs (0 restores their PCIe
 * relationship).  The NVML loader uses it; so do tests of recorded
 * topologies, which cannot carry NVLinks. */
gcoll_status_t gcoll_topo_set_nvlinks(gcoll_topo_t *topo, int gpu_a, int gpu_b, int nvlinks);

/* The matrix in the manner of `nvidia-smi topo -m`: GPU, NIC and NUMA rows
 * and columns, CPU and NUMA affinity, then the legends. */
gcoll_status_t gcoll_topo_print_matrix(const gcoll_topo_t *topo, FILE *out);

/* Which GPU and NIC local rank @p local_rank of @p local_size should drive:
 * GPUs round-robin in PCI order; the NIC closest to that GPU, or without
 * GPUs the NIC closest to the rank's NUMA node (ranks spread over NUMA nodes
 * in blocks, as mpirun --map-by core places them).  Ties go to a NIC with
 * RDMA, then to the lower index.  -1 where the node has none. */
gcoll_status_t gcoll_topo_assign(const gcoll_topo_t *topo, int local_rank, int local_size,
                                 int *gpu, int *nic);

/* Collective over @p comm: rank 0 prints to @p out the matrix of its node
 * (or of the recorded topology @p xml, when not NULL) and what libgcoll
 * decided: nodes, ranks per node, and the GPU and NIC of every rank. */
gcoll_status_t gcoll_topo_report(gcoll_comm_t comm, const char *xml, FILE *out);

#endif
