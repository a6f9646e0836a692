#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Checks of the peer report's parts that need no peer MPI (the report itself,
# scripts/peers_report.sh, installs peers and takes minutes: not run here):
#   - peers_report.sh --help prints its usage, and a bad option fails;
#   - the harness (bench/peers/peer_harness.c), built against the configured
#     MPI (peer_harness_mpi) and against libgcoll (peer_harness_gcoll), runs
#     at 2 ranks with tiny sizes and blocks, one valid "peer" row per
#     collective and size;
#   - peers_summary.py turns those two launches into the report's tables.
# Environment: MPIRUN (default mpirun), PYTHON (default python3), BENCH_DIR
# (default ./bench, the build tree), srcdir (set by automake).
# Exit 0 if all pass, 1 if any fails, 77 (skip) without mpirun.

BENCH_DIR=${BENCH_DIR:-./bench}
srcdir=${srcdir:-.}
export MPIRUN=${MPIRUN:-mpirun}
PYTHON=${PYTHON:-python3}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/gcoll_peers_test.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
failures=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

script=$srcdir/scripts/peers_report.sh
if bash "$script" --help >"$TMP/help.out" 2>&1 && grep -q '^Usage: scripts/peers_report.sh' "$TMP/help.out" &&
   grep -q -- '--skip-install' "$TMP/help.out"; then
    pass "peers_report.sh --help"
else
    fail "peers_report.sh --help"; sed 's/^/    | /' "$TMP/help.out" | head -20
fi
bash "$script" --no-such-option >/dev/null 2>&1
rc=$?
if [ "$rc" = 2 ]; then pass "peers_report.sh rejects a bad option"; else fail "bad option: exit $rc, want 2"; fi
bash "$script" --impls gcoll,nompi >/dev/null 2>&1
rc=$?
if [ "$rc" = 2 ]; then pass "peers_report.sh rejects an unknown impl"; else fail "unknown impl: exit $rc, want 2"; fi

if ! command -v "$MPIRUN" >/dev/null 2>&1; then
    echo "SKIP: $MPIRUN not found (set MPIRUN)"
    [ "$failures" = 0 ] && exit 77
    exit 1
fi
LAUNCH=$(dirname "$0")/../launch.sh   # Open MPI's or MPICH's flags

mkdir -p "$TMP/out/raw"
# 5 collectives x sizes 8, 256, 1024 (the maximum is always included)
tiny="-m 8:1K -f 32 -b 3 -t 1 -w 1 -p 1 -P 5"
for v in mpi gcoll; do
    label=$v; [ "$v" = mpi ] && label=ompi4
    out=$TMP/out/raw/np2_r1_$label.txt
    # shellcheck disable=SC2086  # tiny is a list of words
    timeout 120 "$LAUNCH" -n 2 "$BENCH_DIR/peers/peer_harness_$v" -l "$label" $tiny \
        >"$out" 2>"$TMP/$v.err"
    rc=$?
    rows=$(grep -c '^peer ' "$out")
    valid=$(grep -c '^peer .* valid=1$' "$out")
    if [ "$rc" = 0 ] && [ "$rows" = 15 ] && [ "$valid" = 15 ]; then
        pass "peer_harness_$v: 15 valid rows"
    else
        fail "peer_harness_$v: exit $rc, $rows rows, $valid valid (want 0, 15, 15)"
        sed 's/^/    | /' "$out" "$TMP/$v.err" | head -30
    fi
    if "$BENCH_DIR/peers/peer_harness_$v" -h 2>/dev/null | grep -q '^Usage:'; then
        pass "peer_harness_$v -h"
    else
        fail "peer_harness_$v -h"
    fi
done

# a wrong result must be caught: exit 1, valid=0, a message
PEER_HARNESS_INJECT_ERROR=1 timeout 120 "$LAUNCH" -x PEER_HARNESS_INJECT_ERROR -n 2 \
    "$BENCH_DIR/peers/peer_harness_mpi" -c allreduce -m 8 -b 1 -t 1 -w 1 -p 1 -P 5 \
    >"$TMP/inject.out" 2>"$TMP/inject.err"
rc=$?
if [ "$rc" = 1 ] && grep -q '^peer .* valid=0$' "$TMP/inject.out" &&
   grep -q 'VALIDATION FAILED' "$TMP/inject.err"; then
    pass "peer_harness catches a wrong result"
else
    fail "peer_harness with PEER_HARNESS_INJECT_ERROR=1: exit $rc (want 1, valid=0 and a message)"
    sed 's/^/    | /' "$TMP/inject.out" "$TMP/inject.err" | head -20
fi

# the state probe's lines, as peers_report.sh appends them to one launch
# (both slow: the state table compares them)
printf '%s\n' "# probe when=before cpus=0,1 rt_us=0.095 dirty32k_us=5.47" \
    "# probe when=after cpus=0,1 rt_us=0.101 dirty32k_us=5.50" >>"$TMP/out/raw/np2_r1_gcoll.txt"
printf '%s\n' "# probe when=before cpus=0,1 rt_us=0.095 dirty32k_us=4.90" \
    "# probe when=after cpus=0,1 rt_us=0.101 dirty32k_us=5.10" >>"$TMP/out/raw/np2_r1_ompi4.txt"

if command -v "$PYTHON" >/dev/null 2>&1; then
    if "$PYTHON" "$srcdir/scripts/peers_summary.py" "$TMP/out" >"$TMP/report.md" 2>"$TMP/sum.err" &&
       grep -q '^## allreduce, 2 ranks' "$TMP/report.md" &&
       grep -q '^State probe beside each launch at 2 ranks' "$TMP/report.md" &&
       grep -q '^| 1 | 5.47 / 5.50 slow | 4.90 / 5.10 slow |$' "$TMP/report.md" &&
       [ "$(grep -c "^By the machine's state" "$TMP/report.md")" = 5 ] &&
       grep -q '^| bytes | libgcoll slow | best other slow | ratio slow |$' "$TMP/report.md" &&
       grep -q ',slow.\{0,1\}$' "$TMP/out/results.csv" &&
       grep -q '^## reduce_scatter, 2 ranks' "$TMP/report.md" &&
       grep -q 'best other / libgcoll' "$TMP/report.md" &&
       [ "$(grep -c '^| 1 KiB |' "$TMP/report.md")" = 15 ] &&
       [ -s "$TMP/out/summary.json" ] && [ -s "$TMP/out/results.csv" ]; then
        pass "peers_summary.py: tables, CSV, JSON, the state probe's table and the per-state tables"
    else
        fail "peers_summary.py"
        sed 's/^/    | /' "$TMP/report.md" "$TMP/sum.err" | head -40
    fi
else
    echo "SKIP: peers_summary.py ($PYTHON not found)"
fi

[ "$failures" = 0 ] || exit 1
exit 0
