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

MPIRUN=${MPIRUN:-mpirun}
JOB_TIMEOUT=${GCOLL_TEST_TIMEOUT:-300}
PROG=test/mpi/test_transport

# Flags for Open MPI; other launchers get only -np.
mpirun_flags() {
    if "$MPIRUN" --version 2>&1 | grep -q "Open MPI"; then
        local f="--oversubscribe --bind-to none --mca mpi_yield_when_idle 1"
        [ "$(id -u)" = 0 ] && f="$f --allow-run-as-root"
        echo "$f ${MPIRUN_FLAGS:-}"
    else
        echo "${MPIRUN_FLAGS:-}"
    fi
}

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
    # shellcheck disable=SC2046,SC2086  # flags are words on purpose
    timeout -k 10 "$JOB_TIMEOUT" "$MPIRUN" $(mpirun_flags) -np "$np" "$PROG" \
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
