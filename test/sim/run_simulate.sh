#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# gcoll_simulate (docs/SIMULATION.md):
#   (a) allreduce --verify at 1x4, 2x2, 3x4 and 5x2 (nodes x ranks per node):
#       exit 0, the CSV has one row per (size, algorithm), every algorithm
#       that does not decline ran, predicted a positive time and computed the
#       right result on every rank, and the table printed every size;
#   (b) the other collectives --verify at 3x4, likewise;
#   (c) at 8x4 and 1 MiB the hierarchical allreduce sends at most as many
#       bytes across nodes per rank as the flat ring (the point of hierarchy);
#   (d) the shared-NIC model: at 8x4, 1 MiB, sharing one NIC per node slows
#       Rabenseifner (every rank crosses nodes) and not the ring (one rank per
#       node does), and makes hier_p2p faster than Rabenseifner;
#   (e) bad options exit 2.
# Run from the top build directory.  Exit 0 all passed, 1 a check failed,
# 99 setup error.
set -u

SIM=tools/gcoll_simulate
passed=0
failed=0
[ -x "$SIM" ] || { echo "ERROR: $SIM not built (run from the top build directory)"; exit 99; }
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT

check() {   # check LABEL STATUS
    if [ "$2" = 0 ]; then
        echo "PASS: $1"; passed=$((passed + 1))
    else
        echo "FAIL: $1"; failed=$((failed + 1))
    fi
}

# csv_ok FILE ROWS: header, ROWS rows, no error row, every ok row verified
# with a positive time, and at least one ok row.
csv_ok() {
    awk -F, -v rows="$2" '
        NR == 1 { if ($1 != "coll" || $7 != "time_us") bad = "bad header"; next }
        { n++ }
        $6 == "error" { bad = bad " " $5 "@" $4 ":error" }
        $6 == "ok" && ($11 != "yes" || $7 <= 0) { bad = bad " " $5 "@" $4 ":unverified" }
        $6 == "ok" { ok++ }
        $6 != "ok" && $6 != "declined" { bad = bad " " $5 "@" $4 ":status=" $6 }
        END {
            if (n != rows) bad = bad " " n " rows, expected " rows
            if (!ok) bad = bad " nothing ran"
            if (bad != "") { print "  " bad; exit 1 }
        }' "$1"
}

# run_case COLL NODES PPN RANGE NSIZES: --verify run and its checks.
run_case() {
    local coll=$1 n=$2 p=$3 range=$4 nsizes=$5 label="$1 ${2}x${3} $4"
    local csv="$DIR/$coll-$n-$p.csv" out="$DIR/$coll-$n-$p.out"
    timeout 300 "$SIM" -q -c "$coll" -n "$n" -p "$p" -m "$range" --verify --csv "$csv" \
        >"$out" 2>"$out.err"
    local rc=$?
    [ $rc = 0 ] || { cat "$out.err"; }
    check "$label: exit status $rc" $rc
    local nalgos
    nalgos=$(awk '/^# predicted time/ { getline; print NF - 2; exit }' "$out")   # size .. best
    [ -n "$nalgos" ] || nalgos=0
    csv_ok "$csv" $((nsizes * nalgos))
    check "$label: every algorithm that runs is verified ($nalgos algorithms)" $?
    local rows
    rows=$(awk '/^# predicted time/ { f = 1; getline; next } /^$/ { f = 0 } f' "$out" | wc -l)
    [ "$rows" = "$nsizes" ]
    check "$label: the time table has $nsizes rows (has $rows)" $?
}

# (a) allreduce at several shapes: 4 B .. 64 KiB by 4 = 8 sizes
for shape in "1 4" "2 2" "3 4" "5 2"; do
    # shellcheck disable=SC2086  # two words on purpose
    run_case allreduce $shape 4:64K 8
done
# the single-node algorithm declines on several nodes, runs on one
awk -F, '$5 == "shm" && $6 != "declined" { bad = 1 } END { exit bad }' "$DIR/allreduce-2-2.csv"
check "allreduce 2x2: shm declines on 2 nodes" $?
awk -F, '$5 == "shm" && $6 != "ok" { bad = 1 } END { exit bad }' "$DIR/allreduce-1-4.csv"
check "allreduce 1x4: shm runs on 1 node" $?

# (b) the other collectives (blocks for allgather/reduce_scatter/alltoall)
for coll in bcast reduce allgather reduce_scatter alltoall; do
    run_case "$coll" 3 4 4:4K 6
done
run_case barrier 3 4 4:4 1

# (c) inter-node bytes at 8x4, 1 MiB: hier <= ring
csv="$DIR/big.csv"
"$SIM" -q -c allreduce -n 8 -p 4 -m 1M:1M -a ring,hier,hier_leader --csv "$csv" >"$DIR/big.out" 2>&1
check "allreduce 8x4 1 MiB: exit status" $?
ring=$(awk -F, '$5 == "ring" && $6 == "ok" { print $8 }' "$csv")
hier=$(awk -F, '$5 == "hier" && $6 == "ok" { print $8 }' "$csv")
echo "  inter-node bytes per rank at 8x4, 1 MiB: ring ${ring:-?}, hier ${hier:-?}"
[ -n "$ring" ] && [ -n "$hier" ] && [ "$hier" -le "$ring" ]
check "allreduce 8x4 1 MiB: hier sends <= ring's bytes across nodes per rank" $?

# (d) shared NICs.  time_us is column 7.
t_of() {   # t_of CSV ALGO
    awk -F, -v a="$2" '$5 == a && $6 == "ok" { print $7 }' "$1"
}
for nics in 0 1; do
    "$SIM" -q -c allreduce -n 8 -p 4 -m 1M:1M -a ring,rabenseifner,hier_p2p --nics $nics \
        --csv "$DIR/nics$nics.csv" >/dev/null 2>&1
    check "allreduce 8x4 1 MiB --nics $nics: exit status" $?
done
r0=$(t_of "$DIR/nics0.csv" rabenseifner) r1=$(t_of "$DIR/nics1.csv" rabenseifner)
g0=$(t_of "$DIR/nics0.csv" ring) g1=$(t_of "$DIR/nics1.csv" ring)
h1=$(t_of "$DIR/nics1.csv" hier_p2p)
echo "  us, own NIC -> shared NIC: rabenseifner ${r0:-?} -> ${r1:-?}, ring ${g0:-?} -> ${g1:-?}; hier_p2p ${h1:-?}"
awk -v r0="$r0" -v r1="$r1" 'BEGIN { exit !(r0 > 0 && r1 > 1.5 * r0) }'
check "a shared NIC slows Rabenseifner (all ranks cross nodes)" $?
awk -v g0="$g0" -v g1="$g1" 'BEGIN { exit !(g0 > 0 && g1 == g0) }'
check "a shared NIC leaves the ring alone (one rank per node crosses)" $?
awk -v h1="$h1" -v r1="$r1" 'BEGIN { exit !(h1 > 0 && h1 < r1) }'
check "with a shared NIC hier_p2p beats Rabenseifner" $?

# (e) bad options
"$SIM" -c allreduce -n 2 -p 2 --nics -1 >/dev/null 2>&1
[ $? = 2 ]
check "negative NIC count exits 2" $?
"$SIM" -c nosuch -n 2 -p 2 >/dev/null 2>&1
[ $? = 2 ]
check "unknown collective exits 2" $?
"$SIM" -c allreduce -n 2 -p 2 -m 8 >/dev/null 2>&1
[ $? = 2 ]
check "malformed size range exits 2" $?
"$SIM" -c allreduce -n 0 -p 2 >/dev/null 2>&1
[ $? = 2 ]
check "zero nodes exits 2" $?

# (f) --compress: TopK 1% and 1-bit send >= 20x fewer inter-node bytes
#     per rank than the exact allreduce at 16 and 64 nodes x 8 ranks
for n in 16 64; do
    "$SIM" -q -c allreduce --compress -n $n -p 8 -m 4M:4M --csv "$DIR/c$n.csv" >/dev/null &&
    awk -F, 'NR > 1 { b[$5] = $8 } END { exit !(b["exact"] >= 20 * b["topk(0.01)"] &&
             b["exact"] >= 20 * b["onebit(2048)"]) }' "$DIR/c$n.csv"
    check "compressed allreduce ${n}x8: TopK 1% and 1-bit >= 20x fewer inter-node bytes" $?
done
"$SIM" -q -c allreduce --compress -n 1 -p 2 >/dev/null 2>&1; [ $? = 2 ]
check "--compress on one node exits 2" $?

echo "run_simulate: $passed passed, $failed failed"
[ "$failed" = 0 ]
