#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Progress-engine suite (test/mpi/test_nonblocking.c) under mpirun:
#   many        at 1-5 ranks, both transports, both progress modes, one node,
#               even and uneven simulated nodes
#   background  GCOLL_PROGRESS=thread over shared memory and over the transport
#   fault       a receive that fails mid-collective, then correct calls
#   compress    compressed allreduces as engine tasks, against blocking twins
#   pipeline    hierarchical allreduce at rendezvous sizes, UCX over tcp,
#               4 ranks as 2 nodes, several launches
#   direct      repeated small blocking calls: the direct path taken on one
#               node at 2-4 ranks, and not by rank 0 across simulated nodes
#   and many, background and direct again with one application thread
#   (MPI_THREAD_SERIALIZED), where the engine's lock is caller-biased
# One line per job; a failed job's output follows its FAIL line.  Exit 0 if
# all passed, 1 if any failed, 77 without mpirun, 99 if the program is
# missing.  Environment: MPIRUN, MPIRUN_FLAGS, GCOLL_TEST_TIMEOUT (s per job).
set -u

export MPIRUN=${MPIRUN:-mpirun}
JOB_TIMEOUT=${GCOLL_TEST_TIMEOUT:-300}
PROG=test/mpi/test_nonblocking
passed=0
failed=0

# Jobs go through test/launch.sh (Open MPI's or MPICH's flags).
LAUNCH=$(dirname "$0")/../launch.sh

take_lock() {
    command -v flock >/dev/null 2>&1 || return 0
    exec 9>test/mpi/mpi-jobs.lock
    flock 9
}

have_ucx() {
    grep -q '^#define HAVE_UCX 1' gcoll_build.h 2>/dev/null
}

# run_job NAME NP "VAR=VALUE ..." ARGS...: one mpirun under a timeout, with
# the variables exported to every rank.
run_job() {
    local name=$1 np=$2 vars=$3 out rc t0 why v
    shift 3
    local xs=()
    for v in $vars; do xs+=(-x "$v"); done
    out=$(mktemp)
    t0=$(date +%s)
    # shellcheck disable=SC2086  # vars are words on purpose
    env $vars timeout -k 10 "$JOB_TIMEOUT" "$LAUNCH" --mca mpi_yield_when_idle 1 "${xs[@]}" -np "$np" \
        "$PROG" "$@" >"$out" 2>&1
    rc=$?
    t0=$(($(date +%s) - t0))
    # a forced algorithm that fell back would test something else: fail
    if [ "$rc" = 0 ] && grep -q "instead" "$out"; then rc=98; fi
    # JOB_EXPECT: a line the job's log must have (the mode it claims to test)
    if [ "$rc" = 0 ] && [ -n "${JOB_EXPECT:-}" ] && ! grep -q "$JOB_EXPECT" "$out"; then rc=97; fi
    if [ "$rc" = 0 ] && grep -q "checks, 0 failures" "$out"; then
        echo "PASS: $name np=$np $vars ($(grep 'checks' "$out" | tail -1), $t0 s)"
        grep -E "^(idle CPU|mismatched)" "$out" | sed 's/^/  | /'
        passed=$((passed + 1))
    else
        why="exit $rc"
        if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then why="timed out after $JOB_TIMEOUT s"; fi
        [ "$rc" = 98 ] && why="a forced algorithm fell back"
        [ "$rc" = 97 ] && why="the log never said '$JOB_EXPECT'"
        echo "FAIL: $name np=$np $vars ($why, $t0 s)"
        head -n 60 "$out" | sed 's/^/  | /'
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

tls="mpi"
have_ucx && tls="ucx mpi"
export GCOLL_TIMEOUT=${GCOLL_TIMEOUT:-120}

# many: (np, node size) shapes x transports x progress modes
for shape in "1 0" "2 0" "3 0" "3 2" "4 2" "5 2" "5 0"; do
    set -- $shape
    for tl in $tls; do
        for pm in thread caller; do
            run_job many "$1" "GCOLL_TRANSPORT=$tl GCOLL_PROGRESS=$pm GCOLL_NODE_SIZE=$2 GCOLL_TIMEOUT=120" many
        done
    done
done

# background progress: over shared memory, then over the transport
for tl in $tls; do
    run_job background 2 "GCOLL_TRANSPORT=$tl GCOLL_PROGRESS=thread GCOLL_NODE_SIZE=0" background
    run_job background 2 "GCOLL_TRANSPORT=$tl GCOLL_PROGRESS=thread GCOLL_NODE_SIZE=1" background
done

# one application thread (MPI_THREAD_SERIALIZED) beside the progress thread:
# the engine's lock is biased towards the caller (engine.c); the thread
# claims it with a membarrier whenever it wakes
if have_ucx; then
    bias="GCOLL_TEST_MPI_THREAD=serialized GCOLL_TRANSPORT=ucx GCOLL_PROGRESS=thread GCOLL_DEBUG=INFO"
    export JOB_EXPECT="caller-biased lock"
    run_job many 2 "$bias GCOLL_NODE_SIZE=0" many
    run_job many 3 "$bias GCOLL_NODE_SIZE=2" many
    run_job background 2 "$bias GCOLL_NODE_SIZE=1" background
    run_job direct 3 "$bias GCOLL_NODE_SIZE=0" direct 1
    unset JOB_EXPECT
fi

# a receive that fails mid-collective: every rank errs, later calls work
for tl in $tls; do
    run_job fault 3 "GCOLL_TRANSPORT=$tl GCOLL_NODE_SIZE=1 GCOLL_TIMEOUT=5" fault
done

# the direct path of repeated small blocking calls: taken on one node in both
# progress modes; across simulated nodes not by rank 0, which talks across
for np in 2 3 4; do
    for pm in thread caller; do
        run_job direct "$np" "GCOLL_NODE_SIZE=0 GCOLL_PROGRESS=$pm" direct 1
    done
done
run_job direct 4 "GCOLL_NODE_SIZE=2" direct 0

# compressed allreduces as engine tasks beside a plain request, 2 and 3 nodes
for pm in thread caller; do
    run_job compress 4 "GCOLL_NODE_SIZE=2 GCOLL_PROGRESS=$pm" compress
    run_job compress 6 "GCOLL_NODE_SIZE=2 GCOLL_PROGRESS=$pm" compress
done

# pipelined hierarchical allreduce at rendezvous sizes over tcp, 4 as 2 nodes
if have_ucx; then
    for launch in 1 2 3 4 5; do
        run_job pipeline 4 "GCOLL_TRANSPORT=ucx GCOLL_NODE_SIZE=2 GCOLL_ALGO=allreduce=hier UCX_TLS=tcp,self GCOLL_TIMEOUT=60" pipeline 20
    done
fi

echo "run_nonblocking.sh: $passed passed, $failed failed"
[ "$failed" = 0 ] || exit 1
exit 0
