#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# MPI correctness suite: test_coll_mpi (every collective against the system
# MPI's own) and test_bad_input under mpirun, over rank counts, transports,
# simulated node layouts and every algorithm forced in turn.
#
#   run_coll.sh [flat|nodes|algos|bad|all]     (default: all)
#
#   flat   test_coll_mpi at 1, 2, 3, 4 ranks x GCOLL_TRANSPORT ucx, mpi
#   nodes  the same with GCOLL_NODE_SIZE < ranks (hierarchical paths; 3 nodes
#          of 2 for the ring-pipelined allgather and reduce_scatter)
#   algos  each algorithm `gcoll_info -a` lists, forced by GCOLL_ALGO, its
#          collective only, at 2, 3 (both transports) and 4 ranks
#   bad    test_bad_input at 1 and 2 ranks
#
# Run from the top build directory (automake does so; test_*.sh wrappers
# call this with one mode each).  One line per job, "PASS: np=3 tl=ucx
# algo=allreduce=ring"; a failed job's output follows its FAIL line.  Exit 0
# if all passed, 1 if any failed, 77 if nothing could run, 99 on a setup error.
#
# MPI jobs never run side by side: the wrappers take a lock (flock) on
# test/mpi/mpi-jobs.lock, so `make -j check` stays correct on a small machine.
#
# Environment: MPIRUN (default mpirun), GCOLL_TEST_TIMEOUT (seconds per job,
# default 300), MPIRUN_FLAGS (extra flags, see test/launch.sh), GCOLL_TIMEOUT (default 120 here, so
# a hang inside the library reports which peers it waited for).
set -u

MODE=${1:-all}
export MPIRUN=${MPIRUN:-mpirun}
JOB_TIMEOUT=${GCOLL_TEST_TIMEOUT:-300}
export GCOLL_TIMEOUT=${GCOLL_TIMEOUT:-120}
COLL=test/mpi/test_coll_mpi
BAD=test/mpi/test_bad_input
INFO=tools/gcoll_info

passed=0
failed=0
skipped=0

# ------------------------------------------------------------ setup ----

# Every job goes through test/launch.sh (Open MPI's or MPICH's flags); these
# Open MPI parameters are left out for other launchers.
LAUNCH=$(dirname "$0")/../launch.sh
MCA=(--mca btl ^openib --mca mpi_yield_when_idle 1)

have_ucx() {
    grep -q '^#define HAVE_UCX 1' gcoll_build.h 2>/dev/null   # configure's results
}

# The transports to test: both where UCX is built, else mpi with a SKIP line.
transports() {
    if have_ucx; then echo "ucx mpi"; else echo "mpi"; fi
}

# Serialise MPI jobs across concurrently running test scripts.
take_lock() {
    command -v flock >/dev/null 2>&1 || return 0
    exec 9>test/mpi/mpi-jobs.lock
    flock 9
}

# -------------------------------------------------------------- jobs ----

# run_job LABEL NP [ENV_ARG...] -- PROGRAM [ARGS...]: one mpirun under a
# timeout, its environment adjusted by env(1) arguments ("-u NAME" first,
# then NAME=VALUE), so one job's GCOLL_* settings never leak into the next.
run_job() {
    local label=$1 np=$2 envs=() out rc t0 summary why fallbacks
    shift 2
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    out=$(mktemp)
    t0=$(date +%s)
    env "${envs[@]}" timeout -k 10 "$JOB_TIMEOUT" "$LAUNCH" "${MCA[@]}" -np "$np" "$@" >"$out" 2>&1
    rc=$?
    t0=$(($(date +%s) - t0))
    summary=$(grep -E '^test_(coll_mpi|bad_input): [0-9]+ checks' "$out" | tail -n 1)
    # A forced algorithm that declines a shape falls back, with a warning:
    # then the job tested another algorithm.  Only the declines listed in
    # expected_decline are allowed, and they must happen.
    fallbacks=$(grep -c 'instead' "$out")
    if [ "$rc" = 0 ] && [ -n "$summary" ] && [ -n "${FORCED:-}" ]; then
        if expected_decline "$FORCED" "$np" "${NODES:-}"; then
            [ "$fallbacks" -gt 0 ] || { rc=97; why="expected $FORCED to decline this shape"; }
        else
            [ "$fallbacks" = 0 ] || { rc=97; why="forced $FORCED fell back ($fallbacks warnings)"; }
        fi
    fi
    if [ "$rc" = 0 ] && [ -n "$summary" ]; then
        [ "$fallbacks" = 0 ] && fallbacks="" || fallbacks=", $fallbacks fallback warnings (expected)"
        echo "PASS: $label (${summary#*: }, $t0 s$fallbacks)"
        passed=$((passed + 1))
    else
        [ "$rc" = 97 ] || why="exit $rc"
        if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then why="timed out after $JOB_TIMEOUT s"; fi
        echo "FAIL: $label ($why, $t0 s)"
        echo "  | env ${envs[*]} MPIRUN=$MPIRUN $LAUNCH -np $np $*"
        head -n 60 "$out" | sed 's/^/  | /'
        failed=$((failed + 1))
    fi
    rm -f "$out"
}

skip() {
    echo "SKIP: $*"
    skipped=$((skipped + 1))
}

# coll_job NP TRANSPORT [NODE_SIZE] [COLL=ALGO]: one test_coll_mpi job.
# The forced algorithms that must decline a shape (their builders say why):
# the node-aware ones that need equal nodes, on uneven simulated nodes.
expected_decline() {
    local algo=$1 np=$2 nodes=$3
    [ -n "$nodes" ] && [ $((np % nodes)) != 0 ] || return 1
    case "$algo" in
        allreduce=hier_p2p|allgather=hier|reduce_scatter=hier) return 0 ;;
    esac
    return 1
}

coll_job() {
    local np=$1 tl=$2 nodes=${3:-} algo=${4:-}
    local label="np=$np tl=$tl" unsets=() sets=("GCOLL_TRANSPORT=$tl") args=()
    if [ -n "$nodes" ]; then
        sets+=("GCOLL_NODE_SIZE=$nodes"); label="$label nodes=$nodes"
    else
        unsets+=(-u GCOLL_NODE_SIZE)
    fi
    if [ -n "$algo" ]; then
        sets+=("GCOLL_ALGO=$algo"); label="$label algo=$algo"; args=(--coll "${algo%%=*}")
    else
        unsets+=(-u GCOLL_ALGO)
    fi
    FORCED=$algo NODES=$nodes run_job "$label" "$np" "${unsets[@]}" "${sets[@]}" -- "$COLL" "${args[@]}"
}

# -------------------------------------------------------------- modes ----

mode_flat() {
    local np tl
    have_ucx || skip "GCOLL_TRANSPORT=ucx: libgcoll was built without UCX"
    for np in 1 2 3 4; do
        for tl in $(transports); do coll_job "$np" "$tl"; done
    done
}

# Simulated nodes: even (2+2), uneven (2+1, 3+1) and one rank per node.
mode_nodes() {
    local tl
    for tl in $(transports); do
        coll_job 4 "$tl" 2      # 2 nodes of 2
        coll_job 5 "$tl" 2      # 2+2+1: uneven
        coll_job 6 "$tl" 3      # 2 nodes of 3
        coll_job 4 "$tl" 1      # one rank per node
    done
    coll_job 3 mpi 2            # 2+1
    coll_job 6 ucx 2            # 3 nodes of 2: allgather/reduce_scatter hier pipeline
}

# "allreduce: ring rdouble ..." lines of `gcoll_info -a`, as coll=algo words.
algo_list() {
    "$INFO" -a 2>/dev/null | awk '
        $1 ~ /^(allreduce|bcast|reduce|allgather|reduce_scatter|alltoall|barrier):$/ {
            coll = substr($1, 1, length($1) - 1)
            for (i = 2; i <= NF; i++) if ($i ~ /^[A-Za-z0-9_]+$/) print coll "=" $i
        }'
}

# np=2 and np=4 alternate the transports so each sees 2, 3 and 4 ranks;
# hierarchical algorithms also run over simulated nodes (2+2, 2+1).
mode_algos() {
    local algos algo tl first last
    algos=$(algo_list)
    if [ -z "$algos" ]; then
        echo "ERROR: no algorithms from '$INFO -a' (not built, or its format changed)"
        exit 99
    fi
    first=$(transports | cut -d' ' -f1)
    last=$(transports | awk '{print $NF}')
    for algo in $algos; do
        coll_job 2 "$last" "" "$algo"
        for tl in $(transports); do coll_job 3 "$tl" "" "$algo"; done
        coll_job 4 "$first" "" "$algo"
        case "${algo#*=}" in
            hier*) coll_job 4 "$last" 2 "$algo"; coll_job 3 "$first" 2 "$algo" ;;
        esac
    done
}

mode_bad() {
    local np
    for np in 1 2; do
        run_job "np=$np bad_input" "$np" -u GCOLL_ALGO -u GCOLL_NODE_SIZE -u GCOLL_TRANSPORT -- "$BAD"
    done
}

# --------------------------------------------------------------- main ----

if ! command -v "$MPIRUN" >/dev/null 2>&1; then
    echo "SKIP: no $MPIRUN on PATH"
    exit 77
fi
for prog in "$COLL" "$BAD"; do
    [ -x "$prog" ] || { echo "ERROR: $prog not built (run from the top build directory)"; exit 99; }
done
take_lock

case "$MODE" in
    flat)  mode_flat ;;
    nodes) mode_nodes ;;
    algos) mode_algos ;;
    bad)   mode_bad ;;
    all)   mode_flat; mode_nodes; mode_algos; mode_bad ;;
    *)     echo "usage: $0 [flat|nodes|algos|bad|all]"; exit 99 ;;
esac

echo "run_coll.sh $MODE: $passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ] || exit 1
[ "$passed" -gt 0 ] || exit 77
exit 0
