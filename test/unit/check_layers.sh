#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The layers point one way: libgcoll/base (status, logging, configuration,
# datatypes and their kernels) includes nothing of libgcoll above it.  Fails,
# naming the line, if a file there includes a libgcoll header outside base/,
# if the core includes the PMPI drop-in's header, or if the library itself
# calls MPI_Init or MPI_Finalize.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
bad=$(grep -n '#include "' "$top"/libgcoll/base/*.[ch] |
      grep -v -E '#include "(base/[a-z_]+\.h|gcoll\.h|gcoll_build\.h)"')
count=$(ls "$top"/libgcoll/base/*.[ch] | wc -l)
if [ -n "$bad" ]; then
    echo "FAIL: libgcoll/base includes from above it:"
    echo "$bad" | sed "s#^$top/##"
    echo "check_layers: 0 passed, 1 failed"
    exit 1
fi
[ "$count" -ge 10 ] || { echo "FAIL: only $count files in libgcoll/base"; exit 1; }
# The PMPI drop-in (libgcoll_mpi/) sits above the core and uses only the
# public header; the core serves it through gcoll.h (gcoll_comm_mpi_ranges)
# and never includes its headers.
drop=$(grep -rn -E '#include "(libgcoll_mpi/)?gmpi\.h"' "$top"/libgcoll --include='*.[ch]')
if [ -n "$drop" ]; then
    echo "FAIL: libgcoll includes the drop-in's header:"
    echo "$drop" | sed "s#^$top/##"
    echo "check_layers: 0 passed, 1 failed"
    exit 1
fi
# The library runs inside the application's MPI: only the tools (tools/)
# initialise or finalise MPI.
mpi=$(grep -rn -E '\bMPI_(Init|Init_thread|Finalize) *\(' "$top"/libgcoll --include='*.[ch]')
if [ -n "$mpi" ]; then
    echo "FAIL: libgcoll initialises or finalises MPI (only tools/ may):"
    echo "$mpi" | sed "s#^$top/##"
    echo "check_layers: 0 passed, 1 failed"
    exit 1
fi
echo "PASS: $count files of libgcoll/base include only base/ and the public header"
exit 0
