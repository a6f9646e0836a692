#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Hierarchical allreduce sends 1/L of the vector per rank to the other node,
# 1/3 (2 x 2) and 1/5 (2 x 3) of what the flat ring's busiest rank sends:
# 4 ranks as 2 simulated nodes of 2, and 6 as 2 nodes of 3.
prog=./test/mpi/test_hier_stats
export MPIRUN=${MPIRUN:-mpirun}
command -v "$MPIRUN" >/dev/null 2>&1 || { echo "SKIP: no $MPIRUN"; exit 77; }
[ -x "$prog" ] || { echo "ERROR: $prog not built"; exit 99; }
LAUNCH=$(dirname "$0")/../launch.sh   # Open MPI's or MPICH's flags
exec 9>test/mpi/mpi-jobs.lock && flock 9   # one MPI job at a time (2 cores)
status=0
for shape in "4 2" "6 3"; do
    set -- $shape
    echo "== np=$1 GCOLL_NODE_SIZE=$2"
    GCOLL_NODE_SIZE=$2 GCOLL_TIMEOUT=120 timeout -k 10 300 "$LAUNCH" \
        --mca btl ^openib -n "$1" "$prog" || status=1
done
exit $status
