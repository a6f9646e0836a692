/* SPDX-License-Identifier: BSD-3-Clause */
/* Topology (libgcoll/topo) on the recorded machines in test/topo:
 *   vm-2core.xml           this build VM: 1 NUMA node, 2 cores, a virtio NIC, no GPU
 *   dgx-like.xml           2 NUMA nodes; per node a root port → top switch → two
 *                          leaf switches of 2 GPUs + 1 ConnectX NIC; NUMA 0 also
 *                          has an Ethernet NIC on the GPUs' host bridge and a
 *                          storage NIC on a second host bridge
 *   2socket-2gpu-1nic.xml  one GPU per socket, one NIC on socket 1
 *   2socket-2nic.xml       no GPU, one NIC per socket
 * Counts, names and bus order, every relationship label that the layout
 * implies (PIX, PXB, PHB, NODE, SYS, NUMA rows), symmetry, NVLink overrides,
 * the printed matrix, the GPU/NIC assignment, and the errors.  Without hwloc
 * it checks that loading says so and skips (exit 77). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gcoll_build.h"  /* configure results (HAVE_UCX, ...) */
#include "topo/topo.h"

static int checks, failures;

#define CHECK(cond, ...) \
    do { \
        checks++; \
        if (!(cond)) { \
            failures++; \
            printf("FAIL %s:%d: ", __FILE__, __LINE__); \
            printf(__VA_ARGS__); \
            printf("\n"); \
        } \
    } while (0)

#define G GCOLL_TOPO_GPU
#define N GCOLL_TOPO_NIC
#define M GCOLL_TOPO_NUMA

static gcoll_topo_t *load(const char *name)
{
    char path[1024];
    const char *dir = getenv("GCOLL_TOPO_XML_DIR");
    snprintf(path, sizeof(path), "%s/%s", dir ? dir : GCOLL_TOPO_XML_DIR, name);
    gcoll_topo_t *t = NULL;
    gcoll_status_t st = gcoll_topo_load_xml(path, &t);
    CHECK(st == GCOLL_SUCCESS && t, "load %s: %s", path, gcoll_last_error());
    return st == GCOLL_SUCCESS ? t : NULL;
}

static void check_label(const gcoll_topo_t *t, gcoll_topo_kind_t ka, int ia, gcoll_topo_kind_t kb,
                        int ib, const char *want)
{
    char got[8], back[8];
    gcoll_topo_link_label(t, ka, ia, kb, ib, got, sizeof(got));
    gcoll_topo_link_label(t, kb, ib, ka, ia, back, sizeof(back));
    CHECK(!strcmp(got, want), "%s: %s-%s is %s, want %s", gcoll_topo_host(t),
          gcoll_topo_dev(t, ka, ia) ? gcoll_topo_dev(t, ka, ia)->name : "?",
          gcoll_topo_dev(t, kb, ib) ? gcoll_topo_dev(t, kb, ib)->name : "?", got, want);
    CHECK(!strcmp(got, back), "%s: relationship not symmetric (%s vs %s)", gcoll_topo_host(t), got, back);
}

static void check_counts(const gcoll_topo_t *t, int gpus, int nics, int numa, int cores)
{
    CHECK(gcoll_topo_count(t, G) == gpus, "%s: %d GPUs, want %d", gcoll_topo_host(t), gcoll_topo_count(t, G), gpus);
    CHECK(gcoll_topo_count(t, N) == nics, "%s: %d NICs, want %d", gcoll_topo_host(t), gcoll_topo_count(t, N), nics);
    CHECK(gcoll_topo_count(t, M) == numa, "%s: %d NUMA, want %d", gcoll_topo_host(t), gcoll_topo_count(t, M), numa);
    CHECK(gcoll_topo_count(t, GCOLL_TOPO_CORE) == cores, "%s: %d cores, want %d", gcoll_topo_host(t),
          gcoll_topo_count(t, GCOLL_TOPO_CORE), cores);
}

static void check_assign(const gcoll_topo_t *t, int lr, int ls, int want_gpu, int want_nic)
{
    int gpu = -7, nic = -7;
    gcoll_status_t st = gcoll_topo_assign(t, lr, ls, &gpu, &nic);
    CHECK(st == GCOLL_SUCCESS && gpu == want_gpu && nic == want_nic,
          "%s: local rank %d of %d drives GPU %d NIC %d, want GPU %d NIC %d", gcoll_topo_host(t), lr,
          ls, gpu, nic, want_gpu, want_nic);
}

static void check_dev(const gcoll_topo_t *t, gcoll_topo_kind_t k, int i, const char *osname,
                      const char *busid, int numa)
{
    const gcoll_topo_dev_t *d = gcoll_topo_dev(t, k, i);
    CHECK(d && !strcmp(d->osname, osname) && !strcmp(d->busid, busid) && d->numa == numa,
          "%s: device %d of kind %d is %s %s numa %d, want %s %s numa %d", gcoll_topo_host(t), i, k,
          d ? d->osname : "?", d ? d->busid : "?", d ? d->numa : -9, osname, busid, numa);
}

static char *matrix(const gcoll_topo_t *t)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK(gcoll_topo_print_matrix(t, f) == GCOLL_SUCCESS, "print_matrix failed");
    fclose(f);
    return buf;
}

static void test_vm(void)
{
    gcoll_topo_t *t = load("vm-2core.xml");
    if (!t) return;
    check_counts(t, 0, 1, 1, 2);
    CHECK(gcoll_topo_count(t, GCOLL_TOPO_PU) == 2, "vm: PUs");
    check_dev(t, N, 0, "eth0", "0000:00:03.0", 0);
    CHECK(!gcoll_topo_dev(t, N, 0)->rdma, "vm: a virtio NIC is not RDMA");
    check_label(t, N, 0, N, 0, "X");
    check_label(t, N, 0, M, 0, "PHB");
    check_assign(t, 0, 2, -1, 0);
    check_assign(t, 1, 2, -1, 0);
    char *m = matrix(t);
    CHECK(strstr(m, "NIC0   X      PHB    0-1") != NULL, "vm matrix row:\n%s", m);
    CHECK(strstr(m, "NIC0: eth0 (0000:00:03.0)") != NULL, "vm legend:\n%s", m);
    free(m);
    gcoll_topo_destroy(t);
}

static void test_dgx_links(const gcoll_topo_t *t)
{
    check_label(t, G, 0, G, 0, "X");
    check_label(t, G, 0, G, 1, "PIX");   /* one leaf switch */
    check_label(t, G, 0, N, 0, "PIX");
    check_label(t, G, 3, N, 1, "PIX");
    check_label(t, G, 0, G, 2, "PXB");   /* leaf → top → leaf switch */
    check_label(t, G, 0, N, 1, "PXB");
    check_label(t, G, 0, N, 2, "PHB");   /* eno1: other root port, same host bridge */
    check_label(t, G, 0, N, 3, "NODE");  /* mlx5_4: other host bridge, same NUMA */
    check_label(t, N, 2, N, 3, "NODE");
    check_label(t, G, 0, G, 7, "SYS");
    check_label(t, G, 3, G, 4, "SYS");
    check_label(t, G, 0, N, 4, "SYS");
    check_label(t, G, 4, G, 6, "PXB");
    check_label(t, G, 7, N, 5, "PIX");
    check_label(t, G, 0, M, 0, "PHB");
    check_label(t, G, 0, M, 1, "SYS");
    check_label(t, N, 5, M, 1, "PHB");
    check_label(t, M, 0, M, 1, "SYS");
    check_label(t, M, 1, M, 1, "X");
    check_label(t, G, 8, G, 0, "SYS");   /* no such GPU: never close */
}

static void test_dgx_nvlink(gcoll_topo_t *t)
{
    CHECK(gcoll_topo_set_nvlinks(t, 0, 1, 12) == GCOLL_SUCCESS, "set NV12");
    check_label(t, G, 0, G, 1, "NV12");
    check_label(t, G, 0, N, 0, "PIX");   /* NVLinks are GPU to GPU only */
    int nv = 0;
    CHECK(gcoll_topo_link(t, G, 1, G, 0, &nv) == GCOLL_TOPO_NV && nv == 12, "NV count %d", nv);
    char *m = matrix(t);
    CHECK(strstr(m, "GPU0   X      NV12   PXB    PXB    SYS") != NULL, "NV12 in matrix:\n%s", m);
    free(m);
    CHECK(gcoll_topo_set_nvlinks(t, 0, 1, 0) == GCOLL_SUCCESS, "clear NV");
    check_label(t, G, 0, G, 1, "PIX");
    CHECK(gcoll_topo_set_nvlinks(t, 2, 2, 4) == GCOLL_ERR_INVALID_ARG, "NVLinks to itself accepted");
    CHECK(gcoll_topo_set_nvlinks(t, 0, 8, 4) == GCOLL_ERR_INVALID_ARG, "NVLinks to GPU8 accepted");
}

static void test_dgx(void)
{
    gcoll_topo_t *t = load("dgx-like.xml");
    if (!t) return;
    check_counts(t, 8, 6, 2, 8);
    CHECK(!strcmp(gcoll_topo_host(t), "dgx-like"), "host %s", gcoll_topo_host(t));
    check_dev(t, G, 0, "cuda0", "0000:05:00.0", 0);
    check_dev(t, G, 2, "cuda2", "0000:0a:00.0", 0);
    check_dev(t, G, 7, "cuda7", "0000:8b:00.0", 1);
    check_dev(t, N, 0, "mlx5_0", "0000:07:00.0", 0);   /* OpenFabrics name over ib0 */
    check_dev(t, N, 1, "mlx5_1", "0000:0c:00.0", 0);
    check_dev(t, N, 2, "eno1", "0000:1e:00.0", 0);
    check_dev(t, N, 3, "mlx5_4", "0000:21:00.0", 0);
    check_dev(t, N, 5, "mlx5_3", "0000:8c:00.0", 1);
    CHECK(gcoll_topo_dev(t, N, 0)->rdma && !gcoll_topo_dev(t, N, 2)->rdma, "rdma flags");
    CHECK(!strcmp(gcoll_topo_dev(t, G, 5)->cpus, "4-7"), "GPU5 cpus %s", gcoll_topo_dev(t, G, 5)->cpus);
    CHECK(gcoll_topo_dev(t, G, 8) == NULL && gcoll_topo_dev(t, M, 2) == NULL, "out of range dev");
    test_dgx_links(t);
    check_assign(t, 3, 8, 3, 1);    /* GPU3 and the NIC on its switch */
    check_assign(t, 0, 8, 0, 0);
    check_assign(t, 5, 8, 5, 4);
    check_assign(t, 6, 8, 6, 5);
    check_assign(t, 9, 16, 1, 0);   /* two ranks per GPU */
    int gpu, nic;
    CHECK(gcoll_topo_assign(t, 8, 8, &gpu, &nic) == GCOLL_ERR_INVALID_ARG, "rank 8 of 8 accepted");
    CHECK(gcoll_topo_assign(t, -1, 8, &gpu, &nic) == GCOLL_ERR_INVALID_ARG, "rank -1 accepted");
    CHECK(gcoll_topo_assign(t, 0, 0, &gpu, &nic) == GCOLL_ERR_INVALID_ARG, "size 0 accepted");
    char *m = matrix(t);
    CHECK(strstr(m, "       GPU0   GPU1   GPU2   GPU3   GPU4   GPU5   GPU6   GPU7   NIC0") != NULL,
          "dgx header:\n%s", m);
    CHECK(strstr(m, "\nGPU0   X      PIX    PXB    PXB    SYS    SYS    SYS    SYS    PIX    PXB    PHB    "
                    "NODE   SYS    SYS    PHB    SYS    0-3             0\n") != NULL, "dgx GPU0 row:\n%s", m);
    CHECK(strstr(m, "NIC3: mlx5_4 (0000:21:00.0)") != NULL, "dgx legend:\n%s", m);
    free(m);
    test_dgx_nvlink(t);
    gcoll_topo_destroy(t);
}

static void test_two_socket(void)
{
    gcoll_topo_t *t = load("2socket-2gpu-1nic.xml");
    if (t) {
        check_counts(t, 2, 1, 2, 4);
        check_label(t, G, 0, G, 1, "SYS");
        check_label(t, G, 0, N, 0, "SYS");
        check_label(t, G, 1, N, 0, "PHB");   /* separate root ports of one host bridge */
        check_assign(t, 0, 2, 0, 0);         /* the only NIC, though remote */
        check_assign(t, 3, 4, 1, 0);
        gcoll_topo_destroy(t);
    }
    t = load("2socket-2nic.xml");
    if (t) {
        check_counts(t, 0, 2, 2, 4);
        check_label(t, N, 0, N, 1, "SYS");
        check_label(t, N, 1, M, 1, "PHB");
        check_assign(t, 0, 4, -1, 0);        /* ranks in blocks over NUMA nodes */
        check_assign(t, 1, 4, -1, 0);
        check_assign(t, 2, 4, -1, 1);
        check_assign(t, 3, 4, -1, 1);
        check_assign(t, 0, 1, -1, 0);
        gcoll_topo_destroy(t);
    }
}

static void test_errors(void)
{
    gcoll_topo_t *t = (gcoll_topo_t *)&checks;
    CHECK(gcoll_topo_load_xml("/nonexistent/topo.xml", &t) == GCOLL_ERR_INVALID_ARG && t == NULL,
          "missing file accepted");
    CHECK(strstr(gcoll_last_error(), "/nonexistent/topo.xml") != NULL, "sentence: %s", gcoll_last_error());
    CHECK(gcoll_topo_load_xml(NULL, &t) == GCOLL_ERR_INVALID_ARG, "NULL path accepted");
    CHECK(gcoll_topo_print_matrix(NULL, stdout) == GCOLL_ERR_INVALID_ARG, "print NULL accepted");
    CHECK(gcoll_topo_count(NULL, G) == 0, "count of NULL topology");
}

static void test_live(void)
{
    gcoll_topo_t *t = NULL;
    gcoll_status_t st = gcoll_topo_load(&t);
    CHECK(st == GCOLL_SUCCESS, "this machine: %s", gcoll_last_error());
    if (!t) return;
    CHECK(gcoll_topo_count(t, M) >= 1 && gcoll_topo_count(t, GCOLL_TOPO_PU) >= 1, "this machine: counts");
    int gpu, nic;
    CHECK(gcoll_topo_assign(t, 0, 1, &gpu, &nic) == GCOLL_SUCCESS, "assign here");
    char *m = matrix(t);
    CHECK(strstr(m, "NUMA0") != NULL, "matrix here:\n%s", m);
    free(m);
    gcoll_topo_destroy(t);
}

#ifdef HAVE_HWLOC
static const int have_hwloc = 1;
#else
static const int have_hwloc = 0;
#endif

int main(void)
{
    if (!have_hwloc) {
        gcoll_topo_t *t = NULL;
        CHECK(gcoll_topo_load(&t) == GCOLL_ERR_NOT_SUPPORTED && !t, "load without hwloc");
        CHECK(strstr(gcoll_last_error(), "hwloc not built") != NULL, "sentence: %s", gcoll_last_error());
        printf("test_topo: %d checks, %d failures (hwloc not built: recorded topologies skipped)\n",
               checks, failures);
        return failures ? 1 : 77;
    }
    test_vm();
    test_dgx();
    test_two_socket();
    test_errors();
    test_live();
    printf("test_topo: %d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
