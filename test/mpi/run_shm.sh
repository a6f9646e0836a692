#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Shared-memory executor suite: test_shm (every libgcoll/shm collective
# against MPI's own and a serial reference, back-to-back reuse, barrier
# ordering, timeout) at 1, 2, 3 and 4 ranks; 3 and 4 oversubscribe a 2-core
# machine on purpose (the waits must yield).
#
#   run_shm.sh            correctness at 1..4 ranks
#   run_shm.sh -b         also the timing table at 2 ranks (informational)
#
# Run from the top build directory (automake does).  One line per job; a
# failed job's output follows its FAIL line.  Exit 0 if all passed, 1 if any
# failed, 77 if mpirun is missing, 99 if test_shm is not built.
# Environment: MPIRUN (default mpirun), GCOLL_TEST_TIMEOUT (seconds per job,
# default 300), MPIRUN_FLAGS (extra flags), GCOLL_TEST_EXPECT_CMA (1: fail if
# the single-copy reduce is off; default 1 where Yama's ptrace_scope is 0
# or absent and GCOLL_SHM_CMA is not off (or 0); set 0 in a container whose seccomp
# forbids process_vm_readv).
set -u

scope=$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo 0)
case ${GCOLL_SHM_CMA:-auto} in 0 | [oO][fF][fF]) cma_off=1 ;; *) cma_off=0 ;; esac
if [ "$scope" = 0 ] && [ "$cma_off" = 0 ]; then cma_allowed=1; else cma_allowed=0; fi
export GCOLL_TEST_EXPECT_CMA=${GCOLL_TEST_EXPECT_CMA:-$cma_allowed}

export MPIRUN=${MPIRUN:-mpirun}
JOB_TIMEOUT=${GCOLL_TEST_TIMEOUT:-300}
PROG=test/mpi/test_shm
passed=0
failed=0

# Jobs go through test/launch.sh (Open MPI's or MPICH's flags).
LAUNCH=$(dirname "$0")/../launch.sh

# Share run_coll.sh's lock: MPI jobs never run side by side under make -j.
take_lock() {
    command -v flock >/dev/null 2>&1 || return 0
    exec 9>test/mpi/mpi-jobs.lock
    flock 9
}

# run_job NP [ARGS...]: one mpirun under a timeout.
run_job() {
    local np=$1 out rc t0 why
    shift
    out=$(mktemp)
    t0=$(date +%s)
    timeout -k 10 "$JOB_TIMEOUT" "$LAUNCH" -np "$np" "$PROG" "$@" >"$out" 2>&1
    rc=$?
    t0=$(($(date +%s) - t0))
    if [ "$rc" = 0 ] && { [ $# -gt 0 ] || grep -q "^test_shm: $np ranks: ok" "$out"; }; then
        echo "PASS: test_shm np=$np${*:+ $*} ($t0 s)"
        [ $# -gt 0 ] && cat "$out"
        passed=$((passed + 1))
    else
        why="exit $rc"
        if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then why="timed out after $JOB_TIMEOUT s"; fi
        echo "FAIL: test_shm np=$np${*:+ $*} ($why, $t0 s)"
        grep -v "WARN shm_" "$out" | head -n 60 | sed 's/^/  | /'
        failed=$((failed + 1))
    fi
    rm -f "$out"
}

if ! command -v "$MPIRUN" >/dev/null 2>&1; then
    echo "SKIP: no $MPIRUN on PATH"
    exit 77
fi
[ -x "$PROG" ] || { echo "ERROR: $PROG not built (run from the top build directory)"; exit 99; }
take_lock

for np in 1 2 3 4; do run_job "$np"; done
[ "${1:-}" = -b ] && run_job 2 -b

echo "run_shm.sh: $passed passed, $failed failed"
[ "$failed" = 0 ] || exit 1
exit 0
