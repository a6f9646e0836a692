#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Does the default allreduce choice fit this machine?  Issue 12's acceptance
# check: starting from a clean calibration cache, the default (no GCOLL_ALGO)
# must be within 10% of the best forced algorithm at 8 B, 4 KiB, 64 KiB,
# 1 MiB and 16 MiB.
#
#   scripts/check_selection.sh [-b BUILD] [-r ROUNDS] [-s "2 4:2"] [-l 1.10] [-k]
#
#   -b BUILD   build directory holding bench/gcoll_bench_allreduce (default ./build)
#   -r ROUNDS  launches per size group, default 5; the median counts
#   -s SHAPES  "NP" or "NP:NODE_SIZE" (GCOLL_NODE_SIZE), default "2 4:2"
#   -l LIMIT   default/best ratio allowed, default 1.10
#   -k         keep the temporary directory (cache entries, raw outputs)
#
# How: per shape, a fresh cache directory (GCOLL_TUNE_CACHE); a first
# default launch calibrates (its stderr line gives the time) and writes the
# entry.  Then ROUNDS launches per size group (8 B-4 KiB, 64 KiB, 1 MiB,
# 16 MiB), each timing the default (`auto`) and every allreduce algorithm
# forced, side by side in one launch (the benchmark's --algos: one
# communicator per variant, their blocks alternating in a new order each
# round, so no variant always follows the same one: base/shuffle.h).  One
# launch, not one per variant: this kind of machine runs whole launches in bands of speed
# 1.3-1.5x apart that move every variant alike (issue 12's notes), so
# variants timed in separate launches differ by which band each launch
# fell in.  "Best forced": the forced algorithm with the lowest median over
# the launches; "ratio": the median over launches of the default over that
# algorithm in the same launch.  An algorithm that declines on the shape
# (a short probe launch says "instead") is left out, reported n/a.
# Column "same": the default over the algorithm it ran, forced (both run
# one algorithm: the resolution of the ratio here; the verdict is the
# ratio's alone).  Column "pick": that algorithm forced over the best
# forced, the choice alone; a miss where the default ran the best
# algorithm itself says so.
#
# Environment: MPIRUN (default mpirun), MPIRUN_FLAGS (replace the default
# flags: none at 2 ranks, "--oversubscribe --bind-to none" above; e.g.
# "--oversubscribe --bind-to core:overload-allowed --map-by core" pins the
# ranks, which makes the two-level algorithms steady where ranks share
# cores), NICE (default "nice -n 19": the development machine is shared;
# set NICE= on a machine of your own).
# Exit status: 0 every size within the limit, 1 some size not, 2 usage or
# setup error.
set -u

top=$(cd "$(dirname "$0")/.." && pwd)
build=$top/build
rounds=5
shapes="2 4:2"
limit=1.10
keep=0
while getopts "b:r:s:l:kh" opt; do
    case $opt in
    b) build=$OPTARG ;;
    r) rounds=$OPTARG ;;
    s) shapes=$OPTARG ;;
    l) limit=$OPTARG ;;
    k) keep=1 ;;
    *) sed -n '2,/^set -u/p' "$0" | sed 's/^# \{0,1\}//; /^set -u/d'; exit 2 ;;
    esac
done
MPIRUN=${MPIRUN:-mpirun}
NICE=${NICE-nice -n 19}
bench=$build/bench/gcoll_bench_allreduce
info=$build/tools/gcoll_info
[ -x "$bench" ] && [ -x "$info" ] || { echo "check_selection: build $build first (no $bench)"; exit 2; }
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
unset GCOLL_ALGO GCOLL_TUNE GCOLL_TUNE_FILE GCOLL_NODE_SIZE GCOLL_DEBUG
tmp=$(mktemp -d)
if [ "$keep" = 1 ]; then echo "check_selection: keeping $tmp"; else trap 'rm -rf "$tmp"' EXIT; fi

algos=$("$info" -a | sed -n 's/^allreduce: //p')
# size groups: -m range, iterations, warm-up; the sizes taken from each
groups=("8:4K 1000 100" "64K:64K 500 50" "1M:1M 100 10" "16M:16M 30 3")
checked="8 4096 65536 1048576 16777216"

flags_for() {   # flags_for NP: more ranks than cores need these with Open MPI
    if [ -n "${MPIRUN_FLAGS:-}" ]; then
        echo "$MPIRUN_FLAGS"
    elif [ "$1" -gt 2 ] && "$MPIRUN" --version 2>&1 | grep -q "Open MPI"; then
        echo "--oversubscribe --bind-to none"
    fi
}

# launch SHAPE_DIR NP NODE_SIZE OUT ARGS...: one benchmark launch
launch() {
    local dir=$1 np=$2 ns=$3 out=$4 envs=("GCOLL_TUNE_CACHE=$1/cache")
    shift 4
    [ "$ns" != 0 ] && envs+=("GCOLL_NODE_SIZE=$ns")
    # shellcheck disable=SC2046,SC2086  # flags and NICE are words on purpose
    env "${envs[@]}" timeout -k 10 600 $NICE "$MPIRUN" $(flags_for "$np") -np "$np" "$bench" \
        --impl gcoll "$@" >"$out" 2>"$out.err"
    local rc=$?
    [ $rc = 0 ] || echo "  launch failed (rc $rc): $*, see $out.err" >&2
    if grep -q "cached in" "$out.err"; then
        sed -n 's/.*\(gcoll: calibrating.*\)/\1/p' "$out.err" | head -n 1 >"$dir/calibration"
    fi
}

# row SIZE DEFAULT (RUNS) BEST BEST-FORCED RATIO SAME PICK VERDICT: one line of the table
row() { printf "   %-10s %12s %-14s %12s  %-14s %7s %7s %7s  %s\n" "$@"; }
median() { sort -g | awk '{v[NR] = $1} END {if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2)}'; }
# value FILE VARIANT SIZE: VARIANT's column at SIZE in one --algos table
value() {
    awk -v v="$2" -v s="$3" '/^# Size/ {for (i = 3; i <= NF; i++) if ($i == v) c = i - 1}
                             c && $1 == s {print $c}' "$1"
}
# launches DIR: the --algos tables of the rounds (round 0 calibrates)
launches() { ls "$1"/algos.*.* 2>/dev/null | grep -v '\.err$'; }
# variant_median DIR VARIANT SIZE: VARIANT's median over the launches
variant_median() {
    local f
    for f in $(launches "$1"); do value "$f" "$2" "$3"; done | median
}
# paired_median DIR A B SIZE: the median over launches of A / B in the same launch
paired_median() {
    local f a b
    for f in $(launches "$1"); do
        a=$(value "$f" "$2" "$4") b=$(value "$f" "$3" "$4")
        [ -n "$a" ] && [ -n "$b" ] && awk -v a="$a" -v b="$b" 'BEGIN {if (b > 0) print a / b}'
    done | median
}

fail=0
for shape in $shapes; do
    np=${shape%%:*}
    ns=0
    [ "$shape" != "$np" ] && ns=${shape#*:}
    dir=$tmp/shape-$np-$ns
    mkdir -p "$dir/cache"
    nv=$(echo $algos | wc -w)
    label="$np ranks"
    [ "$ns" != 0 ] && label="$label, GCOLL_NODE_SIZE=$ns"
    echo "== $label: $rounds rounds x ${#groups[@]} size groups, $((nv + 1)) variants side by side"
    start=$SECONDS
    # the calibrating launch first, on a clean cache
    launch "$dir" "$np" "$ns" "$dir/calibrating" -m 8:8 -i 1 -x 0
    # which algorithms decline on this shape (they would time their fallback)
    use=auto
    for v in $algos; do
        launch "$dir" "$np" "$ns" "$dir/probe.$v" --algo "$v" -m 8:16M -i 1 -x 0
        if grep -q "instead" "$dir/probe.$v.err"; then touch "$dir/$v.declines"; else use="$use,$v"; fi
    done
    for ((r = 1; r <= rounds; r++)); do
        for ((g = 0; g < ${#groups[@]}; g++)); do
            read -r range iters warm <<<"${groups[$g]}"
            launch "$dir" "$np" "$ns" "$dir/algos.$g.$r" --algos "$use" -m "$range" -i "$iters" -x "$warm"
        done
    done
    echo "   $((SECONDS - start)) s of launches; $(cat "$dir/calibration" 2>/dev/null || echo 'no calibration line seen')"
    # which algorithm the default runs at each size: the decisions it logs
    # shellcheck disable=SC2046,SC2086
    env GCOLL_TUNE_CACHE="$dir/cache" GCOLL_DEBUG=INFO $( [ "$ns" != 0 ] && echo "GCOLL_NODE_SIZE=$ns" ) \
        timeout -k 10 600 "$MPIRUN" $(flags_for "$np") -np "$np" "$bench" --impl gcoll -m 8:16M -i 1 -x 0 \
        >/dev/null 2>"$dir/decisions"
    entry=$(ls "$dir"/cache/*.tbl 2>/dev/null | head -n 1)
    if [ -n "$entry" ]; then
        echo "   cache rows ($(basename "$entry")):"
        grep -v '^#' "$entry" | sed 's/^/     /'
    fi
    row size "default us" "(runs)" "best us" "best forced" ratio "same" "pick" verdict
    for size in $checked; do
        def=$(variant_median "$dir" auto "$size")
        best="" bname=""
        for v in $algos; do
            [ -e "$dir/$v.declines" ] && continue
            m=$(variant_median "$dir" "$v" "$size")
            [ -n "$m" ] || continue
            if [ -z "$best" ] || awk -v a="$m" -v b="$best" 'BEGIN {exit !(a < b)}'; then best=$m bname=$v; fi
        done
        runs=$(awk -v s="$size" '/ select allreduce [0-9]+\.\.[0-9]+ B/ {
                   split($0, p, "select allreduce "); split(p[2], r, "[. ]+"); lo = r[1] + 0; hi = r[2] + 0
                   if (s >= lo && s <= hi) { sub(/ \(.*/, "", p[2]); n = split(p[2], w, " "); print w[n]; exit } }' \
                   "$dir/decisions")
        if [ -z "$def" ] || [ -z "$best" ]; then
            row "$size" "${def:-?}" "(${runs:-?})" "${best:-?}" "$bname" - - - "NO DATA"
            fail=1
            continue
        fi
        ratio=$(paired_median "$dir" auto "$bname" "$size" | awk '{printf "%.2f", $1}')
        # "same": the default over the algorithm it ran, forced, in the same
        # launch.  Both run one algorithm, so this is the resolution of the
        # ratio on this machine (the verdict does not use it).
        # "pick": that algorithm forced over the best forced, in the same
        # launch: the choice alone (the verdict does not use it either; it
        # names a miss that is spread, not selection).
        same=- pick=-
        if [ -n "$runs" ] && [ ! -e "$dir/$runs.declines" ]; then
            same=$(paired_median "$dir" auto "$runs" "$size" | awk '{printf "%.2f", $1}')
            pick=$(paired_median "$dir" "$runs" "$bname" "$size" | awk '{printf "%.2f", $1}')
        fi
        verdict=ok
        if awk -v r="$ratio" -v l="$limit" 'BEGIN {exit !(r > l)}'; then
            verdict="OVER $limit"
            fail=1
            [ "$runs" = "$bname" ] && verdict="$verdict (ran the best algorithm: spread)"
        fi
        row "$size" "$def" "(${runs:-?})" "$best" "$bname" "$ratio" "$same" "$pick" "$verdict"
    done
    declined=$(cd "$dir" && ls ./*.declines 2>/dev/null | sed 's#^\./##; s/\.declines$//' | tr '\n' ' ')
    [ -n "$declined" ] && echo "   n/a (decline on this shape, fall back): $declined"
    echo "   per-algorithm medians (us) at the checked sizes:"
    for v in auto $algos; do
        [ -e "$dir/$v.declines" ] && continue
        line=$(printf "     %-13s" "$v")
        for size in $checked; do
            m=$(variant_median "$dir" "$v" "$size")
            line="$line $(printf "%10s" "${m:-?}")"
        done
        echo "$line"
    done
done
uptime | sed 's/^/load: /'
exit $fail
