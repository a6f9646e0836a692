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
#          collective only, at 2, 3 (both transports) and 4 ranks; the
#          GCOLL_DEBUG=TRACE selection lines must show that it ran every
#          call, or declined every call where EXPECTED_DECLINES says so
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
    # A declining algorithm falls back, with a warning: then the job tested
    # another one.  Forced: judge_forced says from the selection lines which
    # algorithm ran each call.  Not forced: the table's rows never decline.
    fallbacks=""
    if [ "$rc" = 0 ] && [ -n "$summary" ]; then
        if [ -n "${FORCED:-}" ]; then
            fallbacks=$(judge_forced "$LOG" "$FORCED" "$np" "${NODES:-}")
            case "$fallbacks" in
                ok:*) fallbacks=", ${fallbacks#ok: }" ;;
                *)    rc=97; why=$fallbacks ;;
            esac
        elif grep -q '; using [a-z_0-9]* instead' "$out"; then
            rc=97; why="the selected algorithm declined: $(grep -m1 '; using' "$out")"
        fi
    fi
    # The check of the check: with GCOLL_TEST_DECLINE the job must be failed.
    if [ -n "${EXPECT_REJECT:-}" ]; then
        if [ "$rc" = 97 ]; then
            rc=0; fallbacks=", rejected as it must be: $why"
        elif [ "$rc" = 0 ] && [ -n "$summary" ]; then
            rc=97; why="GCOLL_TEST_DECLINE made $FORCED decline, and the job still passed"
        fi
    fi
    if [ "$rc" = 0 ] && [ -n "$summary" ]; then
        echo "PASS: $label (${summary#*: }, $t0 s$fallbacks)"
        passed=$((passed + 1))
    else
        [ "$rc" = 97 ] || why="exit $rc"
        if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then why="timed out after $JOB_TIMEOUT s"; fi
        echo "FAIL: $label ($why, $t0 s)"
        echo "  | env ${envs[*]} MPIRUN=$MPIRUN $LAUNCH -np $np $*"
        head -n 60 "$out" | sed 's/^/  | /'
        [ -z "${LOG:-}" ] || grep -h -s -m 20 ' coll\.c:' "$LOG".0 | sed 's/^/  | rank 0: /'
        failed=$((failed + 1))
    fi
    rm -f "$out"
}

skip() {
    echo "SKIP: $*"
    skipped=$((skipped + 1))
}

# The declines a forced algorithm is allowed, and obliged, to make, one line
# each: the algorithm, the shape ("uneven": GCOLL_NODE_SIZE does not divide
# the ranks), the algorithms the fallback may run (the next matching rows of
# the built-in table, by size) and a fixed part of the builder's reason.  On
# such a shape every call declines; any decline not listed fails the job.
EXPECTED_DECLINES='
allreduce=hier_p2p   uneven  hier_leader         needs nodes of equal size
allgather=hier       uneven  rdouble|bruck|ring  needs nodes of equal size holding consecutive ranks
reduce_scatter=hier  uneven  rhalving|ring       needs nodes of equal size holding consecutive ranks
'

# The line of EXPECTED_DECLINES for ALGO at NP ranks in nodes of NODES, if any.
expected_decline() {
    local algo=$1 np=$2 nodes=$3 shape=even
    [ -n "$nodes" ] && [ $((np % nodes)) != 0 ] && shape=uneven
    echo "$EXPECTED_DECLINES" | awk -v a="$algo" -v s="$shape" '$1 == a && $2 == s { print; exit }'
}

# judge_forced LOG COLL=ALGO NP NODES: which algorithm ran each call of the
# forced collective, from each rank's GCOLL_DEBUG=TRACE lines of core/coll.c
# in LOG.<rank> ("gcoll_allreduce count=7 ...: ring, 3 rounds, 5 steps", and
# on a decline before it "gcoll_allreduce: <reason>; using <fallback>
# instead"; a call that reused its kept schedule ends in " (kept)" and has
# no decline line of its own).  Prints "ok: <what ran>" if every rank agrees with
# EXPECTED_DECLINES, else why not.
judge_forced() {
    local log=$1 forced=$2 np=$3 nodes=$4 entry r verdict first=""
    entry=$(expected_decline "$forced" "$np" "$nodes")
    for ((r = 0; r < np; r++)); do
        if [ ! -f "$log.$r" ]; then echo "rank $r wrote no log ($log.$r)"; return; fi
        verdict=$(judge_rank "$log.$r" "$forced" "$entry")
        case "$verdict" in
            ok:*) first=${first:-$verdict} ;;
            *)    echo "rank $r: $verdict"; return ;;
        esac
    done
    echo "$first, on each of $np ranks"
}

# judge_rank LOGFILE COLL=ALGO ENTRY: judge_forced for one rank's log.
judge_rank() {
    local out=$1 forced=$2 entry=$3
    awk -v coll="${forced%%=*}" -v algo="${forced#*=}" -v entry="$entry" '
        function coll_of(fn) {          # gcoll_iallreduce, gcoll_bcast_init, ... -> the collective
            sub(/:$/, "", fn); sub(/^gcoll_/, "", fn); sub(/_init$/, "", fn)
            if (fn ~ /^i/) fn = substr(fn, 2)
            return fn
        }
        BEGIN {
            n = split(entry, e, " "); fallback = e[3]; reason = ""
            for (i = 4; i <= n; i++) reason = reason (i > 4 ? " " : "") e[i]
        }
        {
            for (i = 1; i < NF; i++) if ($i ~ /^coll\.c:[0-9]+$/) break
            if (i >= NF || coll_of($(i + 1)) != coll) next
            if ($0 ~ / TRACE coll\.c:[0-9]+ gcoll_[a-z_]+ count=[0-9]+ .*: [A-Za-z0-9_]+, [0-9]+ rounds/) {
                ran = $0; sub(/, [0-9]+ rounds.*/, "", ran); sub(/.*: /, "", ran)
                calls++; by[ran]++
                # a kept schedule (" (kept)", core/coll.c) that is not the
                # forced algorithm was built after its build declined
                if ($0 ~ / \(kept\)$/ && ran != algo) declines++
            } else if ($0 ~ /; using [A-Za-z0-9_]+ instead$/) {
                why = $0; sub(/^.* coll\.c:[0-9]+ gcoll_[a-z_]+: /, "", why); sub(/; using [A-Za-z0-9_]+ instead$/, "", why)
                declines++
                if (reason == "" || index(why, reason) == 0) bad_why = why
            }
        }
        END {
            if (!calls) { print "no selection line names a call of " coll " (GCOLL_DEBUG=TRACE lines changed?)"; exit }
            if (bad_why != "") { print "forced " coll "=" algo " declined, not as EXPECTED_DECLINES allows: " bad_why; exit }
            other = ""
            for (a in by) if (a != algo) {
                other = other " " a "(" by[a] ")"
                if (entry == "" || a !~ ("^(" fallback ")$")) stray = stray " " a
            }
            if (stray != "") { print "calls of " coll " ran" stray " instead of the forced " algo; exit }
            if (entry == "") {
                if (by[algo] != calls) { print "forced " algo " ran " by[algo] + 0 " of " calls " calls"; exit }
                print "ok: " algo " ran all " calls " calls"
            } else {
                if (by[algo]) { print "forced " algo " ran " by[algo] " calls where EXPECTED_DECLINES says it declines"; exit }
                if (declines != calls) { print declines + 0 " declines for " calls " calls"; exit }
                print "ok: all " calls " calls declined as expected, ran" other
            }
        }' "$out"
}

coll_job() {
    local np=$1 tl=$2 nodes=${3:-} algo=${4:-} log=""
    local label="np=$np tl=$tl" unsets=() sets=("GCOLL_TRANSPORT=$tl") args=()
    if [ -n "$nodes" ]; then
        sets+=("GCOLL_NODE_SIZE=$nodes"); label="$label nodes=$nodes"
    else
        unsets+=(-u GCOLL_NODE_SIZE)
    fi
    if [ -n "$algo" ]; then
        log=$(mktemp -d)
        # no calibration entry: a declining algorithm falls back to the
        # built-in table's rows, which EXPECTED_DECLINES names (a measured
        # entry for the shape would pick by this machine's timings)
        sets+=("GCOLL_ALGO=$algo" GCOLL_DEBUG=TRACE GCOLL_TUNE_CACHE=off); label="$label algo=$algo"
        args=(--coll "${algo%%=*}" --log "$log/rank")
        [ -n "${EXPECT_REJECT:-}" ] && sets+=("GCOLL_TEST_DECLINE=$algo") && label="$label (check of the check)"
    else
        unsets+=(-u GCOLL_ALGO)
    fi
    FORCED=$algo NODES=$nodes LOG=$log/rank run_job "$label" "$np" "${unsets[@]}" "${sets[@]}" \
        -- "$COLL" "${args[@]}"
    [ -z "$log" ] || rm -rf "$log"
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
    # First the check itself: a forced algorithm made to decline every call
    # (GCOLL_TEST_DECLINE) passes test_coll_mpi through its fallback, and
    # must fail here.
    EXPECT_REJECT=1 coll_job 2 "$last" "" allreduce=rdouble
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
