/* SPDX-License-Identifier: BSD-3-Clause */
/* gcoll_info: what this libgcoll is, what it was built with, the GCOLL_*
 * environment in force, (-a) the algorithms GCOLL_ALGO accepts and (-s) the
 * selection table in force.  Runs without mpirun; a malformed GCOLL_*
 * variable or selection table is reported and makes it exit non-zero, with
 * the same sentence gcoll_comm_create would return. */
#include <stdio.h>
#include <string.h>
#include "gcoll_build.h"  /* configure results (HAVE_UCX, ...) */
#include "gcoll.h"
#include "algos/algo.h"
#include "base/config.h"
#include "core/memtype.h"
#include "core/select.h"
#include "topo/topo.h"
#include "transport/transport.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: gcoll_info [-a|-A|-s|--topo[=F]] [-h]\n"
               "  (no option)  version, build configuration and GCOLL_* environment\n"
               "  -a           algorithms per collective (the names GCOLL_ALGO accepts)\n"
               "  -A           as -a, with a one-line summary of each algorithm\n"
               "  -s           the selection table in force (GCOLL_TUNE, GCOLL_TUNE_FILE,\n"
               "               built-in), in the file format: save it, edit it, load it\n"
               "               with GCOLL_TUNE_FILE (docs/TUNING.md)\n"
               "  --topo[=F]   this node's GPU/NIC/NUMA matrix (or that of hwloc XML file F)\n"
               "               and which GPU and NIC each rank drives (runs MPI; mpirun or not)\n");
}

static void print_build(void)
{
    int len = 0;
    char mpi[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    MPI_Get_library_version(mpi, &len);
    char *nl = strchr(mpi, '\n');
    if (nl) *nl = '\0';
    printf("libgcoll %d.%d.%d\n", GCOLL_VERSION_MAJOR, GCOLL_VERSION_MINOR, GCOLL_VERSION_PATCH);
    printf("  MPI    : %s (%s)\n", GCOLL_MPI_FLAVOUR, mpi);
    const char *ucx = gcoll_tl_ucx_version();
    printf("  UCX    : %s\n", ucx ? ucx : "not built");
#ifdef HAVE_HWLOC
    printf("  hwloc  : yes\n");
#else
    printf("  hwloc  : not built\n");
#endif
#ifdef HAVE_CUDA
    printf("  CUDA   : yes (allreduce of device buffers: CUDA IPC + device kernels; other "
           "collectives staged through host memory), %d device(s) visible\n",
           gcoll_cuda_device_count());
#else
    printf("  CUDA   : not built\n");
#endif
}

static void print_env(void)
{
    printf("\nEnvironment (value in force, then meaning):\n");
    for (size_t i = 0; i < gcoll_config_table_size; i++) {
        const gcoll_config_entry_t *e = &gcoll_config_table[i];
        const char *v = gcoll_config_value(e);
        printf("  %-16s = %-10s %s\n", e->name, v[0] ? v : "\"\"", e->doc);
    }
}

static void print_algos(int verbose)
{
    for (int c = 0; c < GCOLL_COLL_COUNT; c++) {
        printf("%s:", gcoll_coll_name((gcoll_coll_t)c));
        for (const gcoll_algo_t *const *a = gcoll_algos; *a; a++)
            if ((*a)->coll == (gcoll_coll_t)c) {
                if (verbose) printf("\n    %-18s %s", (*a)->name, (*a)->summary);
                else printf(" %s", (*a)->name);
            }
        printf("\n");
    }
}

static void print_table(const gcoll_tune_table_t *t)
{
    printf("# libgcoll selection table in force; first matching row wins (docs/TUNING.md).\n"
           "# Precedence: GCOLL_ALGO%s%s > GCOLL_TUNE rows > GCOLL_TUNE_FILE rows > built-in.\n",
           gcoll_config.algo[0] ? "=" : " (unset)", gcoll_config.algo);
    gcoll_tune_print(stdout, t);
}

int main(int argc, char **argv)
{
    int algos = 0, table = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-a")) algos = 1;
        else if (!strcmp(argv[i], "-A")) algos = 2;
        else if (!strcmp(argv[i], "-s")) table = 1;
        else if (!strncmp(argv[i], "--topo", 6) && (!argv[i][6] || argv[i][6] == '='))
            return gcoll_topo_info_main(argv[i]);   /* MPI_Init only in this mode */
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { usage(stdout); return 0; }
        else { usage(stderr); return 2; }
    }
    const gcoll_tune_table_t *t = NULL;
    if (gcoll_config_load() != GCOLL_SUCCESS || gcoll_select_table(&t) != GCOLL_SUCCESS) {
        fprintf(stderr, "gcoll_info: %s\n", gcoll_last_error());
        return 1;
    }
    if (table) {
        print_table(t);
        return 0;
    }
    if (algos) {
        print_algos(algos == 2);
        return 0;
    }
    print_build();
    print_env();
    return 0;
}
