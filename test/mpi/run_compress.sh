#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# gcoll_allreduce_compressed against the serial reference (test_compress_mpi):
# one rank, one node of 2, 2 nodes of 2 and of 3, 4 nodes of 1, 5 ranks in
# nodes of 2 (unequal: every rank compresses alone), and 3, 4 and 8 nodes of
# 2 (TopK and 1-bit two-phase from 3 nodes on; issue 14: bytes >= 20x fewer
# than exact at 2, 4 and 8 nodes, convergence of the running mean).
prog=./test/mpi/test_compress_mpi
export MPIRUN=${MPIRUN:-mpirun}
command -v "$MPIRUN" >/dev/null 2>&1 || { echo "SKIP: no $MPIRUN"; exit 77; }
[ -x "$prog" ] || { echo "ERROR: $prog not built"; exit 99; }
LAUNCH=$(dirname "$0")/../launch.sh   # Open MPI's or MPICH's flags
exec 9>test/mpi/mpi-jobs.lock && flock 9   # one MPI job at a time (2 cores)
status=0
for shape in "1 0" "2 0" "4 2" "6 3" "4 1" "5 2" "6 2" "8 2" "16 2"; do
    set -- $shape
    env=(); [ "$2" != 0 ] && env=(GCOLL_NODE_SIZE=$2)
    echo "== np=$1 ${env[*]:-one node}"
    env "${env[@]}" GCOLL_TIMEOUT=120 timeout -k 10 600 "$LAUNCH" \
        --mca btl ^openib -n "$1" "$prog" || status=1
done
exit $status
