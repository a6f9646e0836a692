#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The main job: install dependencies, build libgcoll, then run the OSU-style
# allreduce benchmark on 2 local ranks with libgcoll and the system MPI timed
# side by side (interleaved, same buffers), and plot the result.
#   usage: scripts/quickstart.sh [NP] [MAX_BYTES]
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
np=${1:-2}
max=${2:-67108864}
"$top/scripts/install-deps.sh"
cd "$top"
[ -x configure ] || ./autogen.sh
mkdir -p build && cd build
[ -f Makefile ] || ../configure
make -j"$(nproc)"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun -n "$np" --oversubscribe ./bench/gcoll_bench_allreduce --impl both -m "8:$max" \
    --csv allreduce.csv
/usr/bin/python3 ../bench/gcoll_plot.py allreduce.csv -o allreduce.png && echo "plot: build/allreduce.png"
