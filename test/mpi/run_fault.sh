#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The fault-injection sweep (test_fault.c): fail the N-th allocation of
# libgcoll on rank 1 of 3 ranks on 2 simulated nodes, for every N the
# workload reaches (create, every collective's first calls, the
# nonblocking and persistent forms, a compressor, destroy), each job under
# a timeout.  Every job must finish, and test_fault's checks must hold.
# GCOLL_FAULT_STRIDE=k tries every k-th N only (quicker, for development).
prog=./test/mpi/test_fault
MPIRUN=${MPIRUN:-mpirun}
command -v "$MPIRUN" >/dev/null 2>&1 || { echo "SKIP: no $MPIRUN"; exit 77; }
[ -x "$prog" ] || { echo "ERROR: $prog not built"; exit 99; }
LAUNCH=$(dirname "$0")/../launch.sh   # Open MPI's or MPICH's flags
exec 9>test/mpi/mpi-jobs.lock && flock 9   # one MPI job at a time (2 cores)
stride=${GCOLL_FAULT_STRIDE:-1}   # the second sweep tries every 4*stride-th
export GCOLL_NODE_SIZE=2 GCOLL_TUNE_CACHE=off
run() {   # run N: one job; prints test_fault's summary line
    GCOLL_FAULT_ALLOC=1:$1 timeout -k 5 90 "$LAUNCH" \
        --mca btl ^openib -n 3 "$prog" >fault.out 2>&1
    local rc=$?
    grep -q "^test_fault:" fault.out || echo "test_fault: no summary (exit $rc)"
    grep "^test_fault:\|^FAIL" fault.out
    return $rc
}
failed=0
# sweep LABEL STRIDE: every STRIDE-th allocation point under the current
# GCOLL_TRANSPORT / GCOLL_PROGRESS
sweep() {
    local label=$1 step=$2 line total tried=0 errors=0 broke=0
    # the allocations the workload makes on rank 1 without a failure
    line=$(run 1000000000) || { cat fault.out; echo "FAIL ($label): the workload fails without a fault"; failed=$((failed + 1)); return; }
    total=$(sed -n 's/.*allocs=\([0-9]*\).*/\1/p' <<<"$line")
    case $line in *fired=0*) ;; *) echo "FAIL ($label): $line"; failed=$((failed + 1)); return ;; esac
    echo "== $label: rank 1 makes $total allocations; failing each in turn (stride $step)"
    for ((n = 1; n <= total; n += step)); do
        tried=$((tried + 1))
        if ! line=$(run "$n"); then
            echo "FAIL ($label) at N=$n: $line"; sed 's/^/    /' fault.out | tail -20
            broke=$((broke + 1))
            continue
        fi
        case $line in *errors=0/*) ;; *) errors=$((errors + 1)) ;; esac
        [ $((tried % 20)) = 0 ] && echo "   ... N=$n of $total ($broke failed)"
    done
    echo "== $label: $tried injected failures: $errors reached every rank as an error," \
         "$((tried - errors - broke)) were absorbed (no rank saw an error), $broke broke the checks"
    failed=$((failed + broke))
}
sweep "default transport and progress" "$stride"
GCOLL_TRANSPORT=mpi GCOLL_PROGRESS=caller sweep "GCOLL_TRANSPORT=mpi GCOLL_PROGRESS=caller" $((stride * 4))
rm -f fault.out
[ $failed = 0 ]
