#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# GCOLL_CHECK and GCOLL_TIMEOUT on 2 and 3 real ranks, both transports: a
# timeout names exactly the ranks waited for.
prog=./test/mpi/test_check_timeout
export MPIRUN=${MPIRUN:-mpirun}
command -v "$MPIRUN" >/dev/null 2>&1 || { echo "SKIP: no $MPIRUN"; exit 77; }
[ -x "$prog" ] || { echo "ERROR: $prog not built"; exit 99; }
LAUNCH=$(dirname "$0")/../launch.sh   # Open MPI's or MPICH's flags
exec 9>test/mpi/mpi-jobs.lock && flock 9   # one MPI job at a time (2 cores)
transports="mpi"
grep -q '^#define HAVE_UCX 1' gcoll_build.h 2>/dev/null && transports="ucx mpi"
status=0
for tl in $transports; do
    for np in 2 3; do
        echo "== np=$np GCOLL_TRANSPORT=$tl"
        GCOLL_TRANSPORT=$tl timeout -k 10 120 "$LAUNCH" \
            --mca btl ^openib -n "$np" "$prog" || status=1
    done
done
exit $status
