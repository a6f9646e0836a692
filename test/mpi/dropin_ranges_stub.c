/* SPDX-License-Identifier: BSD-3-Clause */
/* Stands in for libgcoll's gcoll_comm_mpi_ranges() (docs/MPI_DROPIN.md), so
 * run_dropin.sh can check the drop-in's side alone: that it leaves to MPI
 * exactly the sizes the call reports, in every form, and survives the call
 * failing, with ranges no table needs to produce.  Preloaded before
 * libgcoll_mpi.so, so its definition is found before libgcoll.so's.  The
 * ranges come from DROPIN_STUB_RANGES, the same on every rank:
 *
 *   DROPIN_STUB_RANGES="allreduce=0-4096,65536-inf;bcast=0-64"
 *
 * bytes [lo, hi) per collective, by the table's names ("allreduce",
 * "reduce", "bcast", "allgather", "reduce_scatter", "alltoall",
 * "barrier"); "error" for a collective makes the call fail. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "gcoll.h"

gcoll_status_t gcoll_comm_mpi_ranges(gcoll_comm_t comm, const char *coll, const char *mem,
                                     size_t *lo, size_t *hi, int max, int *n);

static size_t size_of(const char *s, char **end)
{
    if (!strncmp(s, "inf", 3)) {
        *end = (char *)s + 3;
        return SIZE_MAX;
    }
    return (size_t)strtoull(s, end, 10);
}

gcoll_status_t gcoll_comm_mpi_ranges(gcoll_comm_t comm, const char *coll, const char *mem,
                                     size_t *lo, size_t *hi, int max, int *n)
{
    const char *env = getenv("DROPIN_STUB_RANGES");
    size_t len = strlen(coll);
    *n = 0;
    if (!comm || !mem || strcmp(mem, "host")) return GCOLL_ERR_INVALID_ARG;
    for (const char *p = env; p && *p; p = strchr(p, ';') ? strchr(p, ';') + 1 : NULL) {
        if (strncmp(p, coll, len) || p[len] != '=') continue;
        p += len + 1;
        if (!strncmp(p, "error", 5)) return GCOLL_ERR_INTERNAL;
        while (*p && *p != ';') {
            char *e;
            if (*n == max) return GCOLL_ERR_INVALID_ARG;
            lo[*n] = size_of(p, &e);
            if (*e != '-') return GCOLL_ERR_INVALID_ARG;
            hi[*n] = size_of(e + 1, &e);
            (*n)++;
            p = *e == ',' ? e + 1 : e;
        }
        return GCOLL_SUCCESS;
    }
    return GCOLL_SUCCESS;
}
