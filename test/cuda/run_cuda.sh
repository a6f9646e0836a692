#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# CUDA device buffers under mpirun: test_cuda_allreduce at 1, 2 and 3 ranks
# on one node (the IPC path), 4 ranks as 2 nodes of 2 (IPC within each
# node, the rails through host memory), 4 as 4 nodes of 1, and 5 as uneven
# nodes of 2 (the IPC path declines; staged through host memory, still
# exact).  Ranks share the visible GPUs round-robin.
#
# Without a CUDA device it says SKIP and why, and exits 77.  Run from the
# top build directory (automake does).  Environment: MPIRUN, MPIRUN_FLAGS,
# GCOLL_TEST_TIMEOUT (seconds per job, default 300).
set -u

export MPIRUN=${MPIRUN:-mpirun}
JOB_TIMEOUT=${GCOLL_TEST_TIMEOUT:-300}
PROG=test/cuda/test_cuda_allreduce
passed=0
failed=0

[ -x "$PROG" ] || { echo "ERROR: $PROG not built (run from the top build directory)"; exit 99; }
if ! why=$("$PROG" --probe); then
    echo "SKIP: $why: the CUDA IPC path cannot run here"
    exit 77
fi
command -v "$MPIRUN" >/dev/null 2>&1 || { echo "SKIP: no $MPIRUN on PATH"; exit 77; }

# Open MPI or MPICH (the GPU machine may only have MPICH: scripts/gpu_check.sh):
# test/launch.sh knows the flags of both.
LAUNCH=$(dirname "$0")/../launch.sh

# run_job NP NODE_SIZE EXPECT_IPC (node size 0: the real node)
run_job() {
    local np=$1 node=$2 expect=$3 out rc
    out=$(mktemp)
    timeout -k 10 "$JOB_TIMEOUT" "$LAUNCH" -np "$np" \
        -x "GCOLL_NODE_SIZE=$node" -x "GCOLL_TEST_EXPECT_IPC=$expect" \
        "$PROG" >"$out" 2>&1
    rc=$?
    if [ "$rc" = 0 ] && grep -q "^test_cuda_allreduce: $np ranks: ok" "$out"; then
        echo "PASS: np=$np node_size=$node ipc=$expect"
        passed=$((passed + 1))
    else
        echo "FAIL: np=$np node_size=$node ipc=$expect (exit $rc)"
        head -n 60 "$out" | sed 's/^/  | /'
        failed=$((failed + 1))
    fi
    rm -f "$out"
}

run_job 1 0 1
run_job 2 0 1
run_job 3 0 1
run_job 4 2 1
run_job 4 1 1
run_job 5 2 -1

echo "run_cuda.sh: $passed passed, $failed failed"
[ "$failed" = 0 ]
