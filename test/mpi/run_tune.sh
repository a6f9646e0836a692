#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Selection tables under mpirun (docs/TUNING.md):
#   (a) a malformed GCOLL_TUNE_FILE makes gcoll_comm_create fail on 2 ranks
#       with GCOLL_ERR_INVALID_ARG naming the file and line, and gcoll_info
#       exit non-zero with the same sentence;
#   (b) gcoll_tune -o t.tbl at 2 ranks (tiny size range) writes a table that
#       GCOLL_TUNE_FILE accepts and whose rows GCOLL_DEBUG=INFO reports as
#       the source of decisions; a hand-edited row changes the decision;
#       GCOLL_TUNE rows go before the file, GCOLL_ALGO before both;
#       gcoll_info -s prints a table that loads back;
#   (c) mpi rows (the application's MPI is faster there: for the drop-in)
#       in a GCOLL_TUNE_FILE: libgcoll's own allreduce at those sizes runs
#       the next matching row (the file's next one, or the built-in one),
#       correctly, and its INFO line names the mpi row it skipped; gcoll_info
#       -s shows the rows with their file origin; GCOLL_ALGO cannot force mpi.
# Run from the top build directory.  Exit 0 all passed, 1 a check failed,
# 77 no mpirun, 99 setup error.
set -u

export MPIRUN=${MPIRUN:-mpirun}
PROG=test/mpi/test_tune_create
INFO=tools/gcoll_info
TUNE=tools/gcoll_tune
passed=0
failed=0

command -v "$MPIRUN" >/dev/null 2>&1 || { echo "SKIP: no $MPIRUN on PATH"; exit 77; }
for p in "$PROG" "$INFO" "$TUNE"; do
    [ -x "$p" ] || { echo "ERROR: $p not built (run from the top build directory)"; exit 99; }
done
# serialise MPI jobs with the other MPI test scripts
if command -v flock >/dev/null 2>&1; then exec 9>test/mpi/mpi-jobs.lock; flock 9; fi

LAUNCH=$(dirname "$0")/../launch.sh   # Open MPI's or MPICH's flags
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
unset GCOLL_ALGO GCOLL_TUNE GCOLL_TUNE_FILE GCOLL_NODE_SIZE GCOLL_DEBUG
export GCOLL_TUNE_CACHE=off   # the checks below mean the built-in table
export GCOLL_TIMEOUT=${GCOLL_TIMEOUT:-120}

mpi() {   # mpi NP PROGRAM ARGS...: output in $DIR/out, status returned
    local np=$1
    shift
    timeout -k 10 300 "$LAUNCH" --mca mpi_yield_when_idle 1 -np "$np" "$@" >"$DIR/out" 2>&1
}

check() {   # check LABEL CONDITION-STATUS
    if [ "$2" = 0 ]; then
        echo "PASS: $1"; passed=$((passed + 1))
    else
        echo "FAIL: $1"; sed 's/^/  | /' "$DIR/out" | head -n 40; failed=$((failed + 1))
    fi
}

# ---- (a) malformed file ------------------------------------------------------
cat >"$DIR/bad.tbl" <<'EOF'
# a table with a typo on line 3
allreduce  host  *  *  0-16K    rdouble
allreduce  host  *  *  16K-inf  rign
EOF
GCOLL_TUNE_FILE=$DIR/bad.tbl mpi 2 "$PROG" 64
rc=$?
create_msg=$(sed -n 's/^test_tune_create: gcoll_comm_create: [^:]*: //p' "$DIR/out")
grep -q "invalid argument" "$DIR/out" && [ "$rc" = 3 ] &&
    [[ "$create_msg" == *"bad.tbl, line 3: 'rign' is not an algorithm of allreduce"* ]]
check "malformed GCOLL_TUNE_FILE: gcoll_comm_create fails with INVALID_ARG naming line 3 (rc=$rc)" $?

GCOLL_TUNE_FILE=$DIR/bad.tbl "$INFO" >"$DIR/out" 2>&1
rc=$?
info_msg=$(sed -n 's/^gcoll_info: //p' "$DIR/out")
[ "$rc" != 0 ] && [ -n "$create_msg" ] && [ "$info_msg" = "$create_msg" ]
check "malformed GCOLL_TUNE_FILE: gcoll_info exits $rc with the same sentence" $?

GCOLL_TUNE="allreduce:host:*:*:0-16K:rdouble;bcast:host:*:0:*:binomial" mpi 2 "$PROG" 64
rc=$?
[ "$rc" = 3 ] && grep -q "GCOLL_TUNE, row 2: bad ranks-per-node range '0'" "$DIR/out"
check "malformed GCOLL_TUNE: row 2 named" $?

GCOLL_TUNE_FILE=$DIR/missing.tbl "$INFO" -s >"$DIR/out" 2>&1
[ $? != 0 ] && grep -q "missing.tbl cannot be opened" "$DIR/out"
check "missing GCOLL_TUNE_FILE: gcoll_info -s fails naming it" $?

# ---- (b) gcoll_tune, then loading what it wrote --------------------------------
mpi 2 "$TUNE" -o "$DIR/t.tbl" -m 8:1K -c allreduce,bcast,barrier
rc=$?
[ "$rc" = 0 ] && grep -q "^# how: .*gcoll_tune -o" "$DIR/t.tbl" && grep -q "^# when: " "$DIR/t.tbl" &&
    grep -q "^# where: host .*2 rank(s) on 1 node(s), 2 per node" "$DIR/t.tbl" &&
    grep -Eq "^allreduce +host +1 +2 " "$DIR/t.tbl" && grep -q "^barrier " "$DIR/t.tbl"
check "gcoll_tune -o t.tbl -m 8:1K writes a table with its provenance (rc=$rc)" $?
cp "$DIR/out" "$DIR/tune.out"

GCOLL_TUNE_FILE=$DIR/t.tbl GCOLL_DEBUG=INFO mpi 2 "$PROG" 64 512
rc=$?
[ "$rc" = 0 ] && grep -Eq "select allreduce 33\.\.64 B.*\(.*t\.tbl:[0-9]+: allreduce" "$DIR/out"
check "GCOLL_TUNE_FILE=t.tbl: the decisions name rows of t.tbl" $?

# a hand edit: allreduce always ring, first row
{ echo "allreduce  *  *  *  0-inf  ring"; grep -v '^allreduce' "$DIR/t.tbl"; } >"$DIR/edit.tbl"
GCOLL_TUNE_FILE=$DIR/edit.tbl GCOLL_DEBUG=INFO mpi 2 "$PROG" 64 65536
rc=$?
[ "$rc" = 0 ] && grep -q "select allreduce 33..64 B.*: ring (.*edit.tbl:1: " "$DIR/out" &&
    grep -q "select allreduce 32769..65536 B.*: ring (.*edit.tbl:1: " "$DIR/out"
check "hand-edited table forcing allreduce 0-inf ring changes the decision" $?

GCOLL_TUNE_FILE=$DIR/edit.tbl GCOLL_TUNE="allreduce:*:*:*:0-1K:rdouble" GCOLL_DEBUG=INFO \
    mpi 2 "$PROG" 64 65536
rc=$?
[ "$rc" = 0 ] && grep -q "select allreduce 33..64 B.*: rdouble (GCOLL_TUNE:1: " "$DIR/out" &&
    grep -q "select allreduce 32769..65536 B.*: ring (.*edit.tbl:1: " "$DIR/out"
check "GCOLL_TUNE rows go before GCOLL_TUNE_FILE's" $?

GCOLL_TUNE_FILE=$DIR/edit.tbl GCOLL_TUNE="allreduce:*:*:*:*:rdouble" GCOLL_ALGO=allreduce=reduce_bcast \
    GCOLL_DEBUG=INFO mpi 2 "$PROG" 64
rc=$?
[ "$rc" = 0 ] && grep -q "select allreduce 33..64 B.*: reduce_bcast (forced by GCOLL_ALGO)" "$DIR/out"
check "GCOLL_ALGO goes before both" $?

# a row whose algorithm declines (shm across two nodes) falls through to the
# next matching row (the built-in flat one for 2 nodes x 1 rank)
GCOLL_TUNE="allreduce:*:*:*:*:shm" GCOLL_NODE_SIZE=1 GCOLL_DEBUG=INFO mpi 2 "$PROG" 64
rc=$?
[ "$rc" = 0 ] && grep -q "shm declined, next matching row: rdouble" "$DIR/out"
check "a declining row falls through to the next matching row" $?

# gcoll_info -s: the table in force, in the file format, loads back
GCOLL_TUNE_FILE=$DIR/edit.tbl GCOLL_TUNE="bcast:*:*:*:*:binomial" "$INFO" -s >"$DIR/shown.tbl" 2>"$DIR/out"
rc=$?
[ "$rc" = 0 ] && grep -q "^# from GCOLL_TUNE" "$DIR/shown.tbl" && grep -q "^# from .*edit.tbl" "$DIR/shown.tbl" &&
    grep -q "^# from built-in" "$DIR/shown.tbl" && GCOLL_TUNE_FILE=$DIR/shown.tbl "$INFO" -s >"$DIR/out" 2>&1
check "gcoll_info -s prints the table in force, which loads back" $?

# ---- (c) mpi rows ----------------------------------------------------------------
cat >"$DIR/mpi.tbl" <<'EOF'
allreduce host * * 0-1K     mpi
allreduce host * * 0-1K     rdouble
allreduce host * * 64K-256K mpi
EOF
mpi 2 "$PROG" -p 65536 1048576
plain=$(sed -n 's/^test_tune_create: selection on all 2 ranks: //p' "$DIR/out")   # no file
at64k=$(echo "$plain" | sed -n 's/^65536:\([^ ]*\) .*/\1/p')
GCOLL_TUNE_FILE=$DIR/mpi.tbl GCOLL_DEBUG=INFO mpi 2 "$PROG" -p 8 65536 1048576
rc=$?
sel=$(sed -n 's/^test_tune_create: selection on all 2 ranks: //p' "$DIR/out")
[ "$rc" = 0 ] && grep -q "^test_tune_create: ok" "$DIR/out" && [ -n "$at64k" ] &&
    [ "$sel" = "8:rdouble $plain" ] &&
    grep -q "select allreduce 5\.\.8 B.*: rdouble (.*mpi\.tbl:2: allreduce host \* \* 0-1K rdouble; .*mpi\.tbl:1 names mpi: " "$DIR/out" &&
    grep -q "select allreduce 32769\.\.65536 B.*: $at64k (built-in:[0-9]*: .*; .*mpi\.tbl:3 names mpi: " "$DIR/out" &&
    grep "select allreduce 524289\.\.1048576 B" "$DIR/out" | grep -vq "names mpi"
check "mpi rows: libgcoll's own allreduce runs the next row ('$sel', want '8:rdouble $plain'), right results, INFO names the mpi row" $?

GCOLL_TUNE_FILE=$DIR/mpi.tbl "$INFO" -s >"$DIR/shown.tbl" 2>"$DIR/out"
rc=$?
[ "$rc" = 0 ] && grep -Eq "^allreduce +host +\* +\* +0-1K +mpi +# file $DIR/mpi\.tbl:1$" "$DIR/shown.tbl" &&
    grep -Eq "^allreduce +host +\* +\* +0-1K +rdouble +# file $DIR/mpi\.tbl:2$" "$DIR/shown.tbl" &&
    grep -Eq "^allreduce +host +\* +\* +64K-256K +mpi +# file $DIR/mpi\.tbl:3$" "$DIR/shown.tbl" &&
    GCOLL_TUNE_FILE=$DIR/shown.tbl "$INFO" -s >"$DIR/out" 2>&1
check "gcoll_info -s: the mpi rows with their origin; the output loads back" $?

GCOLL_ALGO=allreduce=mpi mpi 2 "$PROG" 64
rc=$?
[ "$rc" = 3 ] && grep -q "GCOLL_ALGO: 'mpi' is not an algorithm of allreduce" "$DIR/out"
check "GCOLL_ALGO=allreduce=mpi is refused (mpi rows only inform the drop-in)" $?

echo "run_tune.sh: $passed passed, $failed failed"
[ "$failed" = 0 ]
