#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The calibration cache under mpirun (docs/TUNING.md, core/tune_cache.c):
#   (a) a clean cache (the default directory, ${XDG_CACHE_HOME}/gcoll):
#       gcoll_comm_create calibrates, says so on stderr and writes an entry
#       in the table format, keyed by the MPI library too, whose medians
#       include the application's MPI_Allreduce ("mpi"), and whose mpi rows,
#       if any, come before its libgcoll rows; every rank chooses alike;
#   (b) the second creation reads the entry without measuring, its rows
#       make the decisions, and the choices are the first run's;
#   (c) GCOLL_TUNE_CACHE=off neither reads nor writes nor measures;
#   (d) gcoll_info says whether this shape has an entry; gcoll_info -s
#       names each row's origin; the entry loads as a GCOLL_TUNE_FILE;
#   (e) GCOLL_TUNE_CACHE=DIR: a corrupt entry, a garbage one and one of
#       another key are ignored with a warning (then measured again, unless
#       GCOLL_ALGO decided), never a crash;
#   (f) GCOLL_TUNE (the user decided): no measuring; an unwritable cache
#       directory: a warning, no measuring;
#   (g) 4 ranks as 2 simulated nodes: an entry of its own, all 4 ranks agree,
#       gcoll_info finds it, gcoll_info --calibrate replaces it;
#   (h) the MPI drop-in (preloaded libgcoll_mpi) measures inside MPI_Init,
#       before the program's first collective;
#   (i) an entry with an mpi row (measured ones taken out, one added by
#       hand: which one the MPI wins is the machine's to say): gcoll_info -s
#       names it as a cache row, libgcoll's own allreduce there runs the
#       entry's libgcoll row, and the drop-in leaves exactly its sizes to MPI.
# Run from the top build directory.  Exit 0 all passed, 1 a check failed,
# 77 no mpirun, 99 setup error.
set -u

export MPIRUN=${MPIRUN:-mpirun}
PROG=test/mpi/test_tune_create
INFO=tools/gcoll_info
passed=0
failed=0

command -v "$MPIRUN" >/dev/null 2>&1 || { echo "SKIP: no $MPIRUN on PATH"; exit 77; }
for p in "$PROG" "$INFO"; do
    [ -x "$p" ] || { echo "ERROR: $p not built (run from the top build directory)"; exit 99; }
done
# serialise MPI jobs with the other MPI test scripts
if command -v flock >/dev/null 2>&1; then exec 9>test/mpi/mpi-jobs.lock; flock 9; fi

LAUNCH=$(dirname "$0")/../launch.sh   # Open MPI's or MPICH's flags
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
unset GCOLL_ALGO GCOLL_TUNE GCOLL_TUNE_FILE GCOLL_NODE_SIZE GCOLL_DEBUG GCOLL_TUNE_CACHE
export GCOLL_TIMEOUT=${GCOLL_TIMEOUT:-120}
SIZES="8 4096 65536 1048576 16777216"

mpi() {   # mpi NP [-x VAR=VALUE...] PROGRAM ARGS...: stdout in $DIR/out, stderr in $DIR/err, status returned
    local np=$1
    shift
    timeout -k 10 300 "$LAUNCH" -np "$np" "$@" >"$DIR/out" 2>"$DIR/err"
}

check() {   # check LABEL CONDITION-STATUS
    if [ "$2" = 0 ]; then
        echo "PASS: $1"; passed=$((passed + 1))
    else
        echo "FAIL: $1"; cat "$DIR/out" "$DIR/err" | sed 's/^/  | /' | head -n 40; failed=$((failed + 1))
    fi
}

# the file's mpi rows (if any) all come before its first libgcoll row
mpi_rows_first() {
    local lastm firstl
    lastm=$(grep -n '^allreduce .* mpi$' "$1" | tail -1 | cut -d: -f1)
    firstl=$(grep -n '^allreduce ' "$1" | grep -v ' mpi$' | head -1 | cut -d: -f1)
    [ -n "$firstl" ] && { [ -z "$lastm" ] || [ "$lastm" -lt "$firstl" ]; }
}
selection() { sed -n 's/^test_tune_create: selection on all [0-9]* ranks: //p' "$DIR/out"; }
entries() { ls "$1"/*.tbl 2>/dev/null; }
# rivals_due ENTRY COLL WITHIN: whether the entry's own medians call for a
# row with rivals (try=): a size whose chosen libgcoll algorithm took 10-50 us
# (GCOLL_CALIB_RIVAL_MIN/MAX_SECS) with another libgcoll algorithm within
# WITHIN of it.  The check then follows the timings this calibration saw,
# not the ones a quiet machine would see.
rivals_due() {
    awk -v coll="$2" -v within="$3" '
        $0 ~ "^# " coll " medians" { on = 1; next }
        on && !/^#   / { on = 0 }
        on {
            win = -1; n = 0
            for (i = 3; i <= NF; i++) {
                split($i, kv, "="); name = kv[1]; t = kv[2] + 0
                if (name == "mpi") continue
                if (name == "*mpi") continue   # starred where MPI wins; the libgcoll rows still carry rivals
                if (substr(name, 1, 1) == "*") { win = t; continue }
                other[++n] = t
            }
            if (win < 10 || win > 50) next
            for (i = 1; i <= n; i++) if (other[i] <= within * win) due = 1
        }
        END { exit !due }' "$1"
}

# ---- (a) clean cache, default directory ---------------------------------------
export XDG_CACHE_HOME=$DIR/xdg
GCOLL_DEBUG=INFO mpi 2 "$PROG" -p $SIZES
rc=$?
entry=$(entries "$DIR/xdg/gcoll")
first=$(selection)
[ "$rc" = 0 ] && [ -n "$entry" ] && [ "$(echo "$entry" | wc -l)" = 1 ] &&
    grep -q "^gcoll: calibrating allreduce, allgather and bcast for this machine (2 ranks, 1 node)\.\.\. cached in $entry (" "$DIR/err" &&
    grep -q "^# key: libgcoll=.* ranks=2 nodes=1 ppn=2 .* mpi=\"[^\"]" "$entry" && grep -Eq "^allreduce +host +1 +2 " "$entry" &&
    grep -Eq "^#   8 .* \*?mpi=[0-9.]+" "$entry" && [ -n "$first" ] &&
    mpi_rows_first "$entry"
check "clean cache: calibrates, says so, writes $(basename "${entry:-none}") under \$XDG_CACHE_HOME/gcoll, ranks agree (rc=$rc)" $?
# allgather too: the block whose gathered result (2 x 8 MiB) fills 16 MiB,
# and the largest, whose results fill 128 MiB on the node (2 x 32 MiB each),
# its rows covering every size
ag_sizes=$(sed -n '/^# allgather medians/,/^# allgather write ways\|^[^#]/p' "${entry:-/dev/null}" | awk '$1 == "#" && $2 ~ /^[0-9]/ && $0 !~ /=[cs]( |$)/ {print $2}' | tr '\n' ' ')
[ -n "$entry" ] && grep -Eq "^allgather +host +1 +2 +([^ ]+-inf|\*) " "$entry" &&
    [[ " $ag_sizes" == *" 8M "* ]] && [[ "$ag_sizes" == *" 32M " ]]
check "the entry holds allgather rows, measured at 8M and up to 32M per rank at 2 ranks (sizes: $ag_sizes)" $?
# bcast too, from 16 KiB to 16 MiB and then 32 MiB (past the caches), its
# rows from 16 KiB (the built-in rows serve the sizes below) to inf (the
# largest's winner takes those above)
bc_sizes=$(sed -n '/^# bcast medians/,/^# bcast write ways\|^[^#]/p' "${entry:-/dev/null}" | awk '$1 == "#" && $2 ~ /^[0-9]/ && $0 !~ /=[cs]( |$)/ {print $2}' | tr '\n' ' ')
[ -n "$entry" ] && grep -Eq "^bcast +host +1 +2 +16K-" "$entry" &&
    ! grep -Eq "^bcast +host +1 +2 +0-" "$entry" &&
    grep -Eq "^bcast +host +1 +2 +([^ ]+-inf|\*) " "$entry" &&
    [ "${bc_sizes%% *}" = 16K ] && [[ " $bc_sizes" == *" 16M "* ]] && [[ "$bc_sizes" == *" 32M " ]]
check "the entry holds bcast rows from 16K to inf, measured at 16K-16M and 32M at 2 ranks (sizes: $bc_sizes)" $?
# the node's algorithms timed in both write ways from 8 KiB (GCOLL_SHM_STREAM
# is auto here), the way each was timed in written beside the medians
ways=$(sed -n '/^# allreduce write ways/,/^# allgather medians/p' "${entry:-/dev/null}")
echo "$ways" | grep -Eq '^#   16K +.* shm=[cs]( |$)' && echo "$ways" | grep -Eq '^#   16M +.* shm=[cs]( |$)' &&
    ! echo "$ways" | grep -Eq '^#   4K '
check "the entry says which write way each algorithm was timed in, from 8 KiB: $(echo "$ways" | grep -c '^#   ') sizes" $?
cp "$DIR/err" "$DIR/first.err"

# ---- (b) second creation reads it -------------------------------------------------
before=$(cat "$entry")
GCOLL_DEBUG=INFO mpi 2 "$PROG" -p $SIZES
rc=$?
[ "$rc" = 0 ] && ! grep -q "calibrating" "$DIR/err" &&
    grep -q "calibration cache: rows for this shape read from $entry (no measuring)" "$DIR/err" &&
    grep -q "select allreduce .*(cache $entry:[0-9]*: allreduce" "$DIR/err" &&
    [ "$(selection)" = "$first" ] && [ "$(cat "$entry")" = "$before" ]
check "second creation reads the entry without measuring; its rows decide, as in the first run ($first)" $?

# ---- (c) GCOLL_TUNE_CACHE=off ------------------------------------------------------
GCOLL_TUNE_CACHE=off XDG_CACHE_HOME=$DIR/xdg-off GCOLL_DEBUG=INFO mpi 2 "$PROG" -p 64
rc=$?
[ "$rc" = 0 ] && ! grep -q "calibrating" "$DIR/err" && [ ! -e "$DIR/xdg-off" ] &&
    grep -q "calibration cache: none (GCOLL_TUNE_CACHE=off)" "$DIR/err"
check "GCOLL_TUNE_CACHE=off on a clean cache: no measuring, nothing written" $?
GCOLL_TUNE_CACHE=off GCOLL_DEBUG=INFO mpi 2 "$PROG" -p 64
rc=$?
[ "$rc" = 0 ] && ! grep -q "(cache " "$DIR/err" && grep -q "select allreduce .*(built-in:" "$DIR/err"
check "GCOLL_TUNE_CACHE=off beside an entry: not read, the built-in table decides" $?

# ---- (d) gcoll_info ----------------------------------------------------------------
mpi 2 "$INFO"
rc=$?
[ "$rc" = 0 ] && grep -q "^  entry  : $entry (its rows are in force" "$DIR/out" &&
    grep -q "^  key    : libgcoll=" "$DIR/out" && grep -q "GCOLL_TUNE_CACHE" "$DIR/out"
check "mpirun -n 2 gcoll_info: the entry for this shape" $?
XDG_CACHE_HOME=$DIR/xdg-none mpi 2 "$INFO"
rc=$?
[ "$rc" = 0 ] && grep -q "^  entry  : none for this shape" "$DIR/out" && [ ! -e "$DIR/xdg-none" ]
check "gcoll_info on a clean cache: no entry (and it writes nothing)" $?
mpi 2 "$INFO" -s
rc=$?
cp "$DIR/out" "$DIR/shown.tbl"
[ "$rc" = 0 ] && grep -q "^# from calibration cache $entry" "$DIR/shown.tbl" &&
    grep -Eq "^allreduce +host +1 +2 .*# cache $entry:[0-9]+$" "$DIR/shown.tbl" &&
    grep -Eq "^allreduce .*# built-in:[0-9]+$" "$DIR/shown.tbl" &&
    GCOLL_TUNE_FILE=$DIR/shown.tbl "$INFO" -s >"$DIR/out" 2>"$DIR/err" &&
    GCOLL_TUNE_FILE=$entry GCOLL_TUNE_CACHE=off "$INFO" -s >"$DIR/out" 2>"$DIR/err" &&
    grep -Eq "^allreduce +host +1 +2 .*# file $entry:[0-9]+$" "$DIR/out"
check "gcoll_info -s: each row's origin (cache, built-in); the output and the entry load as GCOLL_TUNE_FILE" $?

# ---- (e) GCOLL_TUNE_CACHE=DIR: bad entries ------------------------------------------
export GCOLL_TUNE_CACHE=$DIR/dir
mpi 2 "$PROG" -p 64
rc=$?
dentry=$(entries "$DIR/dir")
[ "$rc" = 0 ] && [ -n "$dentry" ] && grep -q "cached in $dentry" "$DIR/err" &&
    [ "$(basename "$dentry")" = "$(basename "$entry")" ]
check "GCOLL_TUNE_CACHE=DIR: the entry goes there, same name as in the default directory" $?

sed -i 's/^\(allreduce .*\) [a-z_]*$/\1 bogus/' "$dentry"
GCOLL_ALGO=allreduce=ring mpi 2 "$PROG" -p 64
rc=$?
[ "$rc" = 0 ] && grep -q "WARN .*calibration cache entry $dentry ignored: selection table $dentry, line [0-9]*: 'bogus' is not an algorithm of allreduce" "$DIR/err" &&
    ! grep -q "calibrating" "$DIR/err" && grep -q bogus "$dentry"
check "corrupt entry with GCOLL_ALGO set: a warning naming the line, no measuring, no crash" $?

mpi 2 "$PROG" -p 64
rc=$?
[ "$rc" = 0 ] && grep -q "WARN .*calibration cache entry $dentry ignored: .*'bogus'.*; measuring again" "$DIR/err" &&
    grep -q "cached in $dentry" "$DIR/err" && ! grep -q bogus "$dentry"
check "corrupt entry: a warning, measured again and replaced" $?

sed -i 's/^\(# key: .*\) cores=[0-9]* /\1 cores=999 /' "$dentry"
mpi 2 "$PROG" -p 64
rc=$?
[ "$rc" = 0 ] && grep -q "WARN .*calibration cache entry $dentry ignored: it holds the entry of another key (.*cores=999" "$DIR/err" &&
    grep -q "cached in $dentry" "$DIR/err" && ! grep -q "cores=999" "$dentry"
check "entry of another key: a warning, measured again and replaced" $?

head -c 300 /dev/urandom >"$dentry"
GCOLL_ALGO=allreduce=ring mpi 2 "$PROG" -p 64
rc=$?
[ "$rc" = 0 ] && grep -q "WARN .*calibration cache entry $dentry ignored" "$DIR/err"
check "garbage entry: a warning, no crash" $?

# ---- (f) the user decided; an unwritable directory --------------------------------
GCOLL_TUNE_CACHE=$DIR/dir-tune GCOLL_TUNE="bcast:*:*:*:*:binomial" GCOLL_DEBUG=INFO mpi 2 "$PROG" -p 64
rc=$?
[ "$rc" = 0 ] && ! grep -q "calibrating" "$DIR/err" && [ -z "$(entries "$DIR/dir-tune")" ] &&
    grep -q "not measuring, since GCOLL_ALGO, GCOLL_TUNE or GCOLL_TUNE_FILE is set" "$DIR/err"
check "GCOLL_TUNE set: no measuring on a clean cache" $?

GCOLL_TUNE_CACHE=/proc/gcoll-cache mpi 2 "$PROG" -p 64
rc=$?
[ "$rc" = 0 ] && ! grep -q "calibrating" "$DIR/err" &&
    grep -q "WARN .*calibration cache directory /proc/gcoll-cache cannot be written" "$DIR/err"
check "unwritable cache directory: a warning, no measuring" $?

# ---- (g) 4 ranks as 2 simulated nodes ----------------------------------------------
GCOLL_TUNE_CACHE=$DIR/four GCOLL_NODE_SIZE=2 mpi 4 "$PROG" -p $SIZES
rc=$?
four=$(entries "$DIR/four")
sel4=$(selection)
[ "$rc" = 0 ] && [ -n "$sel4" ] && [[ "$(basename "${four:-x}")" == 4r-2x2-* ]] &&
    grep -q "calibrating allreduce, allgather and bcast for this machine (4 ranks, 2 simulated nodes of 2)\.\.\. cached in $four" "$DIR/err" &&
    grep -q "simulated=yes" "$four" && grep -Eq "^allreduce +host +2 +2 " "$four"
check "4 ranks as 2 nodes: an entry of its own, all 4 ranks choose alike ($sel4)" $?
# ranks sharing CPUs unbound: the leader-based allreduce, whose time there
# depends on where the kernel puts the ranks, is timed but never a row's
# winner, only a rival, and the rows name rivals (try=) for the job's calls
# to time; else it may win like any other
if grep -q "oversubscribed=yes bound=no" "${four:-/dev/null}"; then
    grep -q "^# ranks share CPUs unbound: .* hier_leader is a rival only" "$four" &&
        grep -q " hier_leader=" "$four" &&
        ! grep -Eq "^allreduce +host +2 +2 +[^ ]+ +hier_leader" "$four" &&
        if rivals_due "$four" allreduce 1.6; then
            grep -Eq "^allreduce +host +2 +2 +[^ ]+ +[a-z_]+ +try=" "$four"
        else
            ! grep -Eq "^allreduce +host +2 +2 +[^ ]+ +[a-z_]+ +try=" "$four"
        fi
    check "4 ranks on 2 CPUs, unbound: hier_leader timed, a rival only; rows name rivals" $?
elif [ -n "$four" ]; then
    ! grep -q "^# ranks share CPUs unbound" "$four" && grep -q " hier_leader=" "$four"
    check "4 ranks, bound or on their own CPUs: hier_leader timed" $?
fi
GCOLL_TUNE_CACHE=$DIR/four GCOLL_NODE_SIZE=2 mpi 4 "$PROG" -p $SIZES
rc=$?
[ "$rc" = 0 ] && ! grep -q "calibrating" "$DIR/err" && [ "$(selection)" = "$sel4" ]
check "4 ranks as 2 nodes, second creation: read, same choices" $?
GCOLL_TUNE_CACHE=$DIR/four GCOLL_NODE_SIZE=2 mpi 4 "$INFO"
rc=$?
[ "$rc" = 0 ] && grep -q "^  entry  : $four (its rows are in force" "$DIR/out" &&
    grep -q "^  shape  : 4 rank(s) on 2 simulated node(s), 2 per node; oversubscribed" "$DIR/out"
check "mpirun -n 4 gcoll_info with GCOLL_NODE_SIZE=2 finds that entry" $?
GCOLL_TUNE_CACHE=$DIR/four GCOLL_NODE_SIZE=2 mpi 4 "$INFO" --calibrate
rc=$?
[ "$rc" = 0 ] && grep -q "calibrating allreduce, allgather and bcast .*cached in $four" "$DIR/err" &&
    grep -q "^gcoll_info: entry for this shape: $four" "$DIR/out"
check "gcoll_info --calibrate measures again and replaces the entry" $?

# ---- (h) the drop-in --------------------------------------------------------------
LIB=$PWD/.libs/libgcoll_mpi.so
if [ -f "$LIB" ] && [ -x test/mpi/test_dropin ]; then
    GCOLL_TUNE_CACHE=$DIR/dropin mpi 2 -x "LD_PRELOAD=$LIB" \
        -x "LD_LIBRARY_PATH=$PWD/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" test/mpi/test_dropin
    rc=$?
    [ "$rc" = 0 ] && grep -q "calibrating allreduce, allgather and bcast for this machine (2 ranks, 1 node)\.\.\. cached in $DIR/dropin/" "$DIR/err" &&
        [ -n "$(entries "$DIR/dropin")" ]
    check "preloaded drop-in on a clean cache: MPI_Init measures and caches, the program passes" $?
else
    echo "SKIP: drop-in (no $LIB or test/mpi/test_dropin)"
fi

# ---- (i) an mpi row in an entry ----------------------------------------------------
mdir=$DIR/mpirows
mkdir -p "$mdir"
mentry=$mdir/$(basename "$entry")
sed '/^allreduce .* mpi$/d; 0,/^allreduce /s//allreduce host 1 2 0-1K mpi\n&/' "$entry" >"$mentry"
mline=$(grep -n '^allreduce host 1 2 0-1K mpi$' "$mentry" | cut -d: -f1)
at8=$(echo "$first" | sed -n 's/^8:\([^ ]*\) .*/\1/p')
GCOLL_TUNE_CACHE=$mdir mpi 2 "$INFO" -s
rc=$?
[ "$rc" = 0 ] && [ -n "$mline" ] &&
    grep -Eq "^allreduce +host +1 +2 +0-1K +mpi +# cache $mentry:$mline$" "$DIR/out"
check "an entry's mpi row: gcoll_info -s shows it as a cache row ($mentry:$mline)" $?
GCOLL_TUNE_CACHE=$mdir GCOLL_DEBUG=INFO mpi 2 "$PROG" -p 8 4096
rc=$?
at4k=$(echo "$first" | sed -n 's/.* 4096:\([^ ]*\) .*/\1/p')
[ "$rc" = 0 ] && [ -n "$at8" ] && [ -n "$at4k" ] && ! grep -q calibrating "$DIR/err" &&
    grep -q "^test_tune_create: ok" "$DIR/out" && [ "$(selection)" = "8:$at8 4096:$at4k" ] &&
    grep -q "select allreduce 5\.\.8 B.*: $at8 (cache $mentry:[0-9]*: .*; cache $mentry:$mline names mpi: " "$DIR/err"
check "an entry's mpi row: libgcoll's own 8 B allreduce runs the entry's row ($at8), right results" $?
if [ -f "$LIB" ] && [ -x test/mpi/test_dropin ]; then
    GCOLL_TUNE_CACHE=$mdir mpi 2 -x "LD_PRELOAD=$LIB" -x GCOLL_MPI_REPORT=1 \
        -x "LD_LIBRARY_PATH=$PWD/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" test/mpi/test_dropin sizes 2 255 256 4096
    rc=$?
    [ "$rc" = 0 ] && grep -q "^dropin: 4 checks, 0 failed" "$DIR/out" && ! grep -q calibrating "$DIR/err" &&
        grep -q "^gcoll_mpi: MPI_Allreduce served=2 fallback=2$" "$DIR/err" &&
        grep -q "^gcoll_mpi: fallback MPI_Allreduce: size where the MPI is faster (selection table) (2)$" "$DIR/err"
    check "an entry's mpi row: the drop-in leaves 8 B and 1020 B to MPI, serves 1 KiB and 16 KiB" $?
fi

echo "run_tune_cache.sh: $passed passed, $failed failed"
[ "$failed" = 0 ]
