#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Rivals tried as the job runs (core/select_online.h): a row naming ring
# and its rivals rdouble and reduce_bcast, on 4 and 3 ranks that are each
# their own node (GCOLL_NODE_SIZE=1: the transport's algorithms).
prog=./test/mpi/test_select_online
export MPIRUN=${MPIRUN:-mpirun}
command -v "$MPIRUN" >/dev/null 2>&1 || { echo "SKIP: no $MPIRUN"; exit 77; }
[ -x "$prog" ] || { echo "ERROR: $prog not built"; exit 99; }
LAUNCH=$(dirname "$0")/../launch.sh   # Open MPI's or MPICH's flags
exec 9>test/mpi/mpi-jobs.lock && flock 9   # one MPI job at a time (2 cores)
unset GCOLL_ALGO GCOLL_TUNE GCOLL_TUNE_FILE
status=0
for np in 4 3; do
    echo "== np=$np GCOLL_NODE_SIZE=1"
    GCOLL_NODE_SIZE=1 GCOLL_TUNE_CACHE=off GCOLL_TIMEOUT=120 timeout -k 10 300 "$LAUNCH" \
        --mca btl ^openib -n "$np" "$prog" || status=1
done
exit $status
