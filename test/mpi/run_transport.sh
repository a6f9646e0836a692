#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Transport tests under mpirun: test/mpi/test_transport (every transport
# built, mpi and ucx) at 2 and 3 ranks, plus 1 rank (messages to self).
#
# Run from the top build directory (automake does so).  One line per job,
# "PASS: np=3"; a failed job's output follows its FAIL line.  Exit 0 if all
# passed, 1 if any failed, 77 without mpirun, 99 on a setup error.
#
# Environment: MPIRUN (default mpirun), MPIRUN_FLAGS (extra flags),
# GCOLL_TEST_TIMEOUT (seconds per job, default 300), TRANSPORT_TEST_ARGS
# (extra arguments: -v prints latency/bandwidth, -H adds a 2 GiB message).
# MPI jobs take the lock test/mpi/mpi-jobs.lock (as run_coll.sh does), so
# `make -j check` never runs two of them side by side on a small machine.
set -u

export MPIRUN=${MPIRUN:-mpirun}
JOB_TIMEOUT=${GCOLL_TEST_TIMEOUT:-300}
PROG=test/mpi/test_transport

# Jobs go through test/launch.sh (Open MPI's or MPICH's flags).
LAUNCH=$(dirname "$0")/../launch.sh

take_lock() {
    command -v flock >/dev/null 2>&1 || return 0
    exec 9>test/mpi/mpi-jobs.lock
    flock 9
}

command -v "$MPIRUN" >/dev/null 2>&1 || { echo "SKIP: no $MPIRUN"; exit 77; }
[ -x "$PROG" ] || { echo "ERROR: $PROG not built (run from the top build directory)"; exit 99; }
take_lock

failed=0
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for np in 2 3 1; do
    # shellcheck disable=SC2086  # TRANSPORT_TEST_ARGS are words on purpose
    timeout -k 10 "$JOB_TIMEOUT" "$LAUNCH" --mca mpi_yield_when_idle 1 -np "$np" "$PROG" \
        ${TRANSPORT_TEST_ARGS:-} >"$out" 2>&1
    rc=$?
    if [ "$rc" = 0 ]; then
        echo "PASS: np=$np"
        grep '^perf' "$out"
    else
        [ "$rc" = 124 ] && why="timed out after ${JOB_TIMEOUT}s" || why="exit $rc"
        echo "FAIL: np=$np ($why)"
        cat "$out"
        failed=1
    fi
done
exit "$failed"
