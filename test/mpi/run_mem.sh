#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Zero-copy buffers (gcoll_mem_alloc): test_mem at 1, 2, 3 and 4 ranks on
# one node (every collective bit for bit against MPI's, and the path each
# call took); at 2 and 3 ranks with one rank's GCOLL_ZCOPY=0 (the node must
# then copy, consistently); the same at 3 and 2 ranks with the bcast and
# allgather forced to shm_cma (GCOLL_TEST_SINGLE: a declined negotiation
# hands those to the single copy); at 4 ranks as 2 simulated nodes with the
# built-in selection (results only).  3 and 4 ranks oversubscribe a 2-core
# machine on purpose.
#
# Run from the top build directory (automake does).  Exit 0 if all passed,
# 1 if any failed, 77 without mpirun, 99 if test_mem is not built.
# Environment: MPIRUN (default mpirun), GCOLL_TEST_TIMEOUT (seconds per job,
# default 300).
set -u
export MPIRUN=${MPIRUN:-mpirun}
JOB_TIMEOUT=${GCOLL_TEST_TIMEOUT:-300}
prog=test/mpi/test_mem
command -v "$MPIRUN" >/dev/null 2>&1 || { echo "SKIP: no $MPIRUN"; exit 77; }
[ -x "$prog" ] || { echo "ERROR: $prog not built (run from the top build directory)"; exit 99; }
LAUNCH=$(dirname "$0")/../launch.sh   # Open MPI's or MPICH's flags
exec 9>test/mpi/mpi-jobs.lock && flock 9   # one MPI job at a time (2 cores)
passed=0 failed=0
# run NP [ENV=VALUE ...] [-- ARGS]
run() {
    local np=$1 env=() args=() out rc t0
    shift
    while [ $# -gt 0 ] && [ "$1" != -- ]; do env+=(-x "$1"); shift; done
    [ "${1:-}" = -- ] && shift && args=("$@")
    out=$(mktemp)
    t0=$(date +%s)
    timeout -k 10 "$JOB_TIMEOUT" "$LAUNCH" \
        -x GCOLL_TIMEOUT=120 "${env[@]}" -n "$np" "$prog" "${args[@]}" >"$out" 2>&1
    rc=$?
    t0=$(($(date +%s) - t0))
    local what="np=$np${env[*]:+ ${env[*]}}${args[*]:+ ${args[*]}}"
    if [ $rc = 0 ] && grep -q "^test_mem: $np ranks: ok" "$out"; then
        echo "PASS: test_mem $what ($t0 s): $(grep '^test_mem' "$out" | tr '\n' ' ')"
        passed=$((passed + 1))
    else
        echo "FAIL: test_mem $what (exit $rc, $t0 s)"
        head -n 60 "$out" | sed 's/^/  | /'
        failed=$((failed + 1))
    fi
    rm -f "$out"
}
for np in 1 2 3 4; do run "$np"; done
run 2 GCOLL_TEST_ZCOPY_OFF=1
run 3 GCOLL_TEST_ZCOPY_OFF=0
run 3 GCOLL_TEST_SINGLE=1
run 2 GCOLL_TEST_ZCOPY_OFF=1 GCOLL_TEST_SINGLE=1
run 4 GCOLL_NODE_SIZE=2 -- hier
echo "run_mem.sh: $passed passed, $failed failed"
[ "$failed" = 0 ]
