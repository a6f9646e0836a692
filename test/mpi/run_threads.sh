#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# test_threads at 2 and 3 ranks (3 threads each, one communicator per
# thread).  Under ThreadSanitizer: configure a separate build with
#   CFLAGS="-fsanitize=thread -g -O1" LDFLAGS=-fsanitize=thread
# and run this script there with TSAN_OPTIONS="suppressions=$srcdir/test/mpi/tsan.supp"
# and UCX_MEM_EVENTS=no (UCX's memory hooks crash under TSan as threads exit;
# scripts/tsan_check.sh does all of it)
# (the suppressions cover Open MPI's and UCX's own internals only).
prog=./test/mpi/test_threads
MPIRUN=${MPIRUN:-mpirun}
command -v "$MPIRUN" >/dev/null 2>&1 || { echo "SKIP: no $MPIRUN"; exit 77; }
[ -x "$prog" ] || { echo "ERROR: $prog not built"; exit 99; }
LAUNCH=$(dirname "$0")/../launch.sh   # Open MPI's or MPICH's flags
exec 9>test/mpi/mpi-jobs.lock && flock 9   # one MPI job at a time (2 cores)
status=0
for np in 2 3; do
    echo "== np=$np"
    # (no "--mca btl ^openib" here: with it Open MPI crashes under TSan)
    GCOLL_TUNE_CACHE=off timeout -k 10 180 "$LAUNCH" -n "$np" "$prog"
    rc=$?
    [ $rc = 77 ] && exit 77
    [ $rc = 0 ] || status=1
done
exit $status
