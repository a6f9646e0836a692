#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The PMPI drop-in (libgcoll_mpi) under plain MPI programs:
#   c        test/mpi/test_dropin at 1, 2, 3 ranks, three ways: plain MPI (no
#            preload), preloaded with GCOLL_MPI=off, preloaded; all must pass
#            and print the same digests, the preloaded run's GCOLL_MPI_REPORT
#            must show every intercepted function served and the expected
#            fallbacks, and the GCOLL_MPI=off run must report nothing
#   thread   the preloaded run again with GCOLL_PROGRESS=thread (2 ranks; the
#            drop-in's default is caller)
#   bad      erroneous calls under MPI_ERRORS_RETURN: the same error classes
#            as plain MPI, then a correct call
#   fortran  `use mpi` and `use mpi_f08` programs (when built): pass, and
#            their MPI_ALLREDUCE calls (in place and not) are served
# One line per job; a failed job's output follows its FAIL line.  Exit 0 if
# all passed, 1 if any failed, 77 without mpirun or the library, 99 if the
# program is missing.  Environment: MPIRUN, MPIRUN_FLAGS, GCOLL_TEST_TIMEOUT.
set -u

export MPIRUN=${MPIRUN:-mpirun}
JOB_TIMEOUT=${GCOLL_TEST_TIMEOUT:-300}
PROG=test/mpi/test_dropin
LIBDIR=$PWD/.libs
LIB=$LIBDIR/libgcoll_mpi.so
passed=0
failed=0

command -v "$MPIRUN" >/dev/null 2>&1 || { echo "SKIP: no mpirun"; exit 77; }
[ -x "$PROG" ] || { echo "ERROR: $PROG not built"; exit 99; }
[ -f "$LIB" ] || { echo "SKIP: $LIB not built (shared libraries off?)"; exit 77; }

LAUNCH=$(dirname "$0")/../launch.sh   # Open MPI's or MPICH's flags

if command -v flock >/dev/null 2>&1; then exec 9>test/mpi/mpi-jobs.lock; flock 9; fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# run OUT NP [-x VAR=VAL ...] -- PROG ARGS: stdout+stderr to $tmp/OUT, rc to $tmp/OUT.rc
run() {
    local out=$1 np=$2; shift 2
    local xs=()
    while [ "$1" != -- ]; do xs+=("$1"); shift; done
    shift
    timeout "$JOB_TIMEOUT" "$LAUNCH" --mca mpi_yield_when_idle 1 -n "$np" "${xs[@]}" "$@" >"$tmp/$out" 2>&1
    echo $? >"$tmp/$out.rc"
}
PRE=(-x "LD_PRELOAD=$LIB" -x "LD_LIBRARY_PATH=$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")

result() {   # NAME OK WHY FILES...
    local name=$1 ok=$2 why=$3 f; shift 3
    if [ "$ok" = 1 ]; then
        echo "PASS: $name"; passed=$((passed + 1))
    else
        echo "FAIL: $name: $why"; failed=$((failed + 1))
        for f in "$@"; do echo "--- $f"; tail -40 "$tmp/$f"; done
    fi
}

served() {   # FILE FUNCTION: the served count in FILE's report (empty if none)
    sed -n "s/^gcoll_mpi: $2 served=\([0-9]*\) fallback=[0-9]*$/\1/p" "$tmp/$1" | head -1
}

FUNCS="MPI_Allreduce MPI_Reduce MPI_Bcast MPI_Allgather MPI_Reduce_scatter_block MPI_Alltoall
       MPI_Barrier MPI_Iallreduce MPI_Ireduce MPI_Ibcast MPI_Iallgather MPI_Ireduce_scatter_block
       MPI_Ialltoall MPI_Ibarrier"

check_c() {  # NAME NP ON_FILE: passes, same digests as plain, report complete
    local name=$1 np=$2 on=$3 ok=1 why="" f fn n r
    for f in plain$np off$np $on; do
        if [ "$(cat "$tmp/$f.rc")" != 0 ] || ! grep -q "^dropin: .* 0 failed" "$tmp/$f"; then
            ok=0; why="$why $f failed;"
        fi
    done
    grep '^digest' "$tmp/plain$np" >"$tmp/d.plain"
    [ -s "$tmp/d.plain" ] || { ok=0; why="$why no digests;"; }
    for f in off$np $on; do
        grep '^digest' "$tmp/$f" | cmp -s - "$tmp/d.plain" || { ok=0; why="$why $f digests differ from plain MPI;"; }
    done
    grep -q '^gcoll_mpi:' "$tmp/off$np" && { ok=0; why="$why GCOLL_MPI=off printed a report;"; }
    for fn in $FUNCS; do
        n=$(served "$on" "$fn")
        [ -n "$n" ] && [ "$n" -gt 0 ] || { ok=0; why="$why $fn not served;"; }
    done
    for r in "op MINLOC/MAXLOC" "user-defined or unknown op" "bitwise op" \
             "derived or non-contiguous datatype" "count 0 or negative"; do
        grep -q "^gcoll_mpi: fallback MPI_.*: $r (" "$tmp/$on" || { ok=0; why="$why no fallback '$r';"; }
    done
    result "$name" "$ok" "$why" plain$np off$np "$on"
}

for np in 1 2 3; do
    run plain$np "$np" -- "$PROG"
    run off$np "$np" "${PRE[@]}" -x GCOLL_MPI=off -x GCOLL_MPI_REPORT=1 -- "$PROG"
    run on$np "$np" "${PRE[@]}" -x GCOLL_MPI_REPORT=1 -- "$PROG" float
    check_c "c np=$np" "$np" on$np
done
run thread2 2 "${PRE[@]}" -x GCOLL_MPI_REPORT=1 -x GCOLL_PROGRESS=thread -- "$PROG"
check_c "thread np=2" 2 thread2

run badplain 2 -- "$PROG" badinput
run badon 2 "${PRE[@]}" -x GCOLL_MPI_REPORT=1 -- "$PROG" badinput
ok=1; why=""
grep '^badinput' "$tmp/badplain" >"$tmp/b.plain"
grep -q 'then-correct 1' "$tmp/b.plain" || { ok=0; why="plain MPI run incomplete;"; }
grep '^badinput' "$tmp/badon" | cmp -s - "$tmp/b.plain" || { ok=0; why="$why error classes differ;"; }
n=$(served badon MPI_Allreduce)
[ "${n:-0}" -gt 0 ] || { ok=0; why="$why the correct call after them was not served;"; }
result "bad input np=2" "$ok" "$why" badplain badon

for f in test_dropin_f test_dropin_f08; do
    [ -x test/mpi/$f ] || { echo "SKIP: fortran $f (not built)"; continue; }
    for np in 2 3; do
        run $f$np "$np" "${PRE[@]}" -x GCOLL_MPI_REPORT=1 -- test/mpi/$f
        ok=1; why=""
        { [ "$(cat "$tmp/$f$np.rc")" = 0 ] && grep -q ': 0 failed' "$tmp/$f$np"; } || { ok=0; why="failed;"; }
        want=5; [ $f = test_dropin_f08 ] && want=3
        n=$(served $f$np MPI_Allreduce)
        [ "${n:-0}" -ge $want ] || { ok=0; why="$why MPI_Allreduce served=${n:-none}, want >= $want;"; }
        [ "$(served $f$np MPI_Bcast)" = 1 ] || { ok=0; why="$why MPI_Bcast not served;"; }
        result "fortran $f np=$np" "$ok" "$why" $f$np
    done
done

echo "dropin: $passed passed, $failed failed"
[ "$failed" = 0 ]
