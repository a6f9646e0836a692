/* SPDX-License-Identifier: BSD-3-Clause */
/* NVLink peers through NVML, loaded with dlopen at run time: the library is
 * part of the NVIDIA driver, not of the CUDA toolkit, so libgcoll must not
 * link it (it would not start on a machine without the driver), and its
 * header is not always installed.  The few declarations needed are below,
 * as in nvml.h (stable ABI of the _v2 entry points).
 *
 * A GPU's active links either reach another GPU directly (counted per pair)
 * or reach an NVSwitch; two GPUs on NVSwitches are NV<min(links)> apart, as
 * nvidia-smi reports on DGX/HGX boards. */
#include <dlfcn.h>
#include <string.h>
#include "base/log.h"
#include "topo/topo_int.h"

#define NVML_SUCCESS          0
#define NVML_FEATURE_ENABLED  1
#define NVML_NVLINK_MAX_LINKS 18

typedef struct nvml_device *nvml_device_t;
typedef struct {
    char     bus_id_legacy[16];
    unsigned domain, bus, device;
    unsigned pci_device_id, pci_subsystem_id;
    char     bus_id[32];
} nvml_pci_info_t;

typedef struct {
    int (*init)(void);
    int (*shutdown)(void);
    int (*by_bus_id)(const char *bus_id, nvml_device_t *dev);
    int (*link_state)(nvml_device_t dev, unsigned link, int *active);
    int (*remote_pci)(nvml_device_t dev, unsigned link, nvml_pci_info_t *pci);
} nvml_api_t;

static int nvml_resolve(void *lib, nvml_api_t *api)
{
    *(void **)&api->init       = dlsym(lib, "nvmlInit_v2");
    *(void **)&api->shutdown   = dlsym(lib, "nvmlShutdown");
    *(void **)&api->by_bus_id  = dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2");
    *(void **)&api->link_state = dlsym(lib, "nvmlDeviceGetNvLinkState");
    *(void **)&api->remote_pci = dlsym(lib, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
    return api->init && api->shutdown && api->by_bus_id && api->link_state && api->remote_pci;
}

static int gpu_by_pci(const gcoll_topo_t *t, const nvml_pci_info_t *pci)
{
    char busid[16];
    snprintf(busid, sizeof(busid), "%04x:%02x:%02x.0", pci->domain & 0xffff, pci->bus & 0xff,
             pci->device & 0x1f);
    for (int g = 0; g < t->count[GCOLL_TOPO_GPU]; g++)
        if (!strcmp(gcoll_topo_dev(t, GCOLL_TOPO_GPU, g)->busid, busid)) return g;
    return -1;
}

/* Active links of GPU g: to each other GPU in peer[], to switches in *sw. */
static void gpu_links(const nvml_api_t *api, const gcoll_topo_t *t, int g, int *peer, int *sw)
{
    nvml_device_t dev;
    *sw = 0;
    if (api->by_bus_id(gcoll_topo_dev(t, GCOLL_TOPO_GPU, g)->busid, &dev) != NVML_SUCCESS) return;
    for (unsigned l = 0; l < NVML_NVLINK_MAX_LINKS; l++) {
        int active = 0;
        nvml_pci_info_t pci;
        if (api->link_state(dev, l, &active) != NVML_SUCCESS || active != NVML_FEATURE_ENABLED) continue;
        if (api->remote_pci(dev, l, &pci) != NVML_SUCCESS) continue;
        int h = gpu_by_pci(t, &pci);
        if (h >= 0) peer[h]++;
        else (*sw)++;
    }
}

static void nvml_count(const nvml_api_t *api, gcoll_topo_t *t)
{
    int n = t->count[GCOLL_TOPO_GPU];
    int peer[n > 0 ? n * n : 1], sw[n > 0 ? n : 1];
    memset(peer, 0, sizeof(peer));
    for (int g = 0; g < n; g++) gpu_links(api, t, g, &peer[g * n], &sw[g]);
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++) {
            int direct = peer[a * n + b] > peer[b * n + a] ? peer[a * n + b] : peer[b * n + a];
            int via_sw = sw[a] < sw[b] ? sw[a] : sw[b];
            if (direct + via_sw) gcoll_topo_set_nvlinks(t, a, b, direct + via_sw);
        }
}

void gcoll_topo_nvml_links(gcoll_topo_t *t)
{
    nvml_api_t api;
    if (!t || t->count[GCOLL_TOPO_GPU] < 2 || t->count[GCOLL_TOPO_GPU] > 64) return;
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        gcoll_info("no NVML (%s): NVLinks between GPUs are not shown", dlerror());
        return;
    }
    if (!nvml_resolve(lib, &api) || api.init() != NVML_SUCCESS)
        gcoll_info("NVML did not start: NVLinks between GPUs are not shown");
    else {
        nvml_count(&api, t);
        api.shutdown();
    }
    dlclose(lib);
}
