#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Checks of the OSU-style benchmarks (bench/gcoll_bench_*): run them under
# mpirun with 2 ranks and tiny sizes and check that
#   - the output is OSU-style: title, column header, one numeric row per size,
#     and the final "# Avg bus bandwidth" line;
#   - -c passes on correct results, and fails, with a message and a non-zero
#     exit, when GCOLL_BENCH_INJECT_ERROR=1 corrupts one;
#   - --impl both prints the MPI/gcoll ratio column;
#   - --csv and --json write parseable records, one per size;
#   - gcoll_plot.py turns them into a PNG (where matplotlib is installed);
#   - gcoll_bench_reduce, _allgather and _allreduce_compressed (3 codecs
#     over 2 simulated nodes) print OSU columns with values above 0, -c
#     passes and catches an injected error where the program has -c, and
#     gcoll_membw prints its four kernels with times and GB/s above 0;
#   - the overlap programs (gcoll_bench_iallreduce, _ibcast, _iallgather)
#     print OSU's osu_i<coll> columns with sane, self-consistent values, in
#     GCOLL_PROGRESS=thread and caller modes, and -c passes and catches an
#     injected error there too.
# Environment: MPIRUN (default mpirun), BENCH_DIR (default ./bench, the build
# tree), srcdir (set by automake; the plot script is in $srcdir/bench).
# Exit 0 if all pass, 1 if any fails, 77 (skip) without mpirun.

BENCH_DIR=${BENCH_DIR:-./bench}
srcdir=${srcdir:-.}
export MPIRUN=${MPIRUN:-mpirun}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/gcoll_bench_test.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
failures=0
SIZES="4 8 16 32 64"

if ! command -v "$MPIRUN" >/dev/null 2>&1; then
    echo "SKIP: $MPIRUN not found (set MPIRUN)"
    exit 77
fi
LAUNCH=$(dirname "$0")/../launch.sh   # Open MPI's or MPICH's flags

pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# run NAME PROGRAM ARGS...: 2 ranks; stdout in $TMP/NAME.out, stderr in
# $TMP/NAME.err, exit status in $rc.
run() {
    name=$1 prog=$2
    shift 2
    timeout 300 "$LAUNCH" -n 2 "$BENCH_DIR/$prog" "$@" \
        >"$TMP/$name.out" 2>"$TMP/$name.err"
    rc=$?
}

show() {
    sed 's/^/    | /' "$TMP/$1.out" "$TMP/$1.err" | head -40
}

# rows FILE: the data rows (lines not starting with '#').
rows() {
    grep -v '^#' "$1" | grep -v '^[[:space:]]*$'
}

# check_rows NAME NCOLS SIZES: every row has NCOLS numeric fields and the
# sizes, in order, are SIZES.
check_rows() {
    got=$(rows "$TMP/$1.out" | awk -v n="$2" '
        NF != n { print "bad-field-count:" NF; next }
        { for (i = 1; i <= NF; i++)
              if ($i !~ /^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$/) { print "not-numeric:" $i; next }
          print $1 }' | tr '\n' ' ' | sed 's/ $//')
    [ "$got" = "$3" ]
}

check_osu() {
    name=$1 title=$2 ncols=$3 sizes=$4
    f="$TMP/$name.out"
    if ! grep -q "^# OSU-style libgcoll $title Latency Test" "$f"; then
        fail "$name: no OSU title line"; show "$name"; return
    fi
    if ! grep -q '^# Size .*Latency(us)' "$f" && ! grep -q '^# Size .*Avg(us)' "$f"; then
        fail "$name: no column header"; show "$name"; return
    fi
    if ! check_rows "$name" "$ncols" "$sizes"; then
        fail "$name: rows are not $ncols numeric columns for sizes '$sizes' (got '$got')"
        show "$name"; return
    fi
    if ! grep -Eq '^# Avg bus bandwidth : [0-9]+(\.[0-9]+)? GB/s$' "$f"; then
        fail "$name: no final '# Avg bus bandwidth : X GB/s' line"; show "$name"; return
    fi
    pass "$name: OSU-style output, $ncols columns, sizes $sizes"
}

# ---- allreduce: plain, full statistics, validation -------------------------
run plain gcoll_bench_allreduce -m 4:64 -i 20 -x 2
if [ "$rc" -ne 0 ]; then fail "allreduce exited $rc"; show plain
else check_osu plain Allreduce 4 "$SIZES"; fi

run full gcoll_bench_allreduce -m 4:64 -i 20 -x 2 -f
if [ "$rc" -ne 0 ]; then fail "allreduce -f exited $rc"; show full
else check_osu full Allreduce 7 "$SIZES"; fi

run valid gcoll_bench_allreduce -m 4:4K -i 5 -x 1 -c
if [ "$rc" -eq 0 ] && ! grep -q 'VALIDATION FAILED' "$TMP/valid.err"; then
    pass "allreduce -c passes on correct results"
else
    fail "allreduce -c exited $rc on correct results"; show valid
fi

GCOLL_BENCH_INJECT_ERROR=1
export GCOLL_BENCH_INJECT_ERROR
run inject gcoll_bench_allreduce -m 4:64 -i 5 -x 1 -c
unset GCOLL_BENCH_INJECT_ERROR
if [ "$rc" -ne 0 ] && grep -q 'VALIDATION FAILED' "$TMP/inject.err" &&
   grep -q 'validation failed' "$TMP/inject.err"; then
    pass "allreduce -c catches an injected error (exit $rc, message on stderr)"
else
    fail "allreduce -c with GCOLL_BENCH_INJECT_ERROR=1: exit $rc, message missing?"; show inject
fi

# ---- --impl both: ratio column ---------------------------------------------
run both gcoll_bench_allreduce -m 4:64 -i 20 -x 2 --impl both --blocks 3
if [ "$rc" -ne 0 ]; then fail "allreduce --impl both exited $rc"; show both
elif ! grep -q '^# Size .*MPI/gcoll' "$TMP/both.out"; then
    fail "--impl both: no MPI/gcoll ratio column in the header"; show both
elif ! grep -q 'above 1 means libgcoll is faster' "$TMP/both.out"; then
    fail "--impl both: the header does not say which way the ratio reads"; show both
elif ! check_rows both 8 "$SIZES"; then
    fail "--impl both: rows not 8 numeric columns (got '$got')"; show both
elif ! rows "$TMP/both.out" | awk '$4 <= 0 { bad = 1 } END { exit bad }'; then
    fail "--impl both: a ratio is not positive"; show both
else
    pass "allreduce --impl both prints gcoll, MPI and ratio columns"
fi

# ---- --csv and --json ------------------------------------------------------
run files gcoll_bench_allreduce -m 4:64 -i 10 -x 1 --impl both --csv "$TMP/r.csv" --json "$TMP/r.json"
if [ "$rc" -ne 0 ] || [ ! -s "$TMP/r.csv" ]; then
    fail "--csv: exit $rc, file missing or empty"; show files
else
    bad=$(awk -F, 'NR == 1 { n = NF; if ($0 !~ /size_bytes/ || $0 !~ /ratio_mpi_over_gcoll/) print "header"; next }
        NF != n { print "fields:" NR }
        { for (i = 5; i <= NF; i++) if ($i !~ /^-?[0-9]+(\.[0-9]+)?$/) print "value:" NR ":" $i }
        END { if (NR != 6) print "records:" NR - 1 }' "$TMP/r.csv")
    if [ -z "$bad" ]; then pass "--csv writes a header and 5 numeric records"
    else fail "--csv: $bad"; sed 's/^/    | /' "$TMP/r.csv"; fi
fi
PY=""
for p in ${PYTHON:-} python3 /usr/bin/python3; do
    if [ -n "$p" ] && command -v "$p" >/dev/null 2>&1; then PY=$p; break; fi
done
if [ -z "$PY" ]; then
    echo "SKIP: --json check (no python3)"
elif "$PY" -c 'import json, sys
d = json.load(open(sys.argv[1]))
r = d["results"]
assert [x["size_bytes"] for x in r] == [4, 8, 16, 32, 64], r
assert all(x["gcoll_avg_us"] > 0 and x["mpi_avg_us"] > 0 and "ratio_mpi_over_gcoll" in x for x in r)
assert d["collective"] == "allreduce" and d["ranks"] == 2' "$TMP/r.json" 2>"$TMP/json.err"; then
    pass "--json writes one record per size with both implementations"
else
    fail "--json: $(tail -1 "$TMP/json.err")"
fi

# ---- other collectives, validated ------------------------------------------
run bcast gcoll_bench_bcast -m 4:64 -i 10 -x 1 -c -r 1 --impl both
if [ "$rc" -ne 0 ]; then fail "bcast -c -r 1 exited $rc"; show bcast
else check_osu bcast Broadcast 8 "$SIZES"; fi

run rs gcoll_bench_reduce_scatter -m 4:64 -i 10 -x 1 -c -T int32
if [ "$rc" -ne 0 ]; then fail "reduce_scatter -c -T int32 exited $rc"; show rs
else check_osu rs Reduce_scatter 4 "$SIZES"; fi

run a2a gcoll_bench_alltoall -m 4:64 -i 10 -x 1 -c -T float64
if [ "$rc" -ne 0 ]; then fail "alltoall -c -T float64 exited $rc"; show a2a
else check_osu a2a All-to-All 4 "8 16 32 64"; fi   # float64: 4 bytes is below one element

run barrier gcoll_bench_barrier -i 20 -x 2
if [ "$rc" -eq 0 ] && check_rows barrier 4 "0"; then pass "barrier: one numeric row"
else fail "barrier exited $rc or rows wrong (got '$got')"; show barrier; fi

# positive NAME COL...: every data row has those columns above 0.
positive() {
    name=$1
    shift
    bad=$(rows "$TMP/$name.out" | awk -v cols="$*" '
        BEGIN { n = split(cols, c, " ") }
        { for (i = 1; i <= n; i++) if (!($c[i] > 0)) print $1 ":col" c[i] "=" $c[i] }' | tr '\n' ' ')
    [ -z "$bad" ]
}

# Sizes where the GB/s columns stay above the 0.001 they can show even on a
# loaded machine (8 ms a call would be needed to print 0.000 at 4 KiB).
BSIZES="4096 8192 16384 32768 65536"

# reduce: OSU columns, -c at a root other than 0, in both implementations
run reduce gcoll_bench_reduce -m 4K:64K -i 10 -x 1 -c -r 1 --impl both --blocks 3
if [ "$rc" -ne 0 ]; then fail "reduce -c -r 1 --impl both exited $rc"; show reduce
elif ! grep -q '^# Size .*MPI/gcoll' "$TMP/reduce.out"; then
    fail "reduce --impl both: no MPI/gcoll column"; show reduce
elif ! positive reduce 2 3 4 5 6 7 8; then
    fail "reduce: values not above 0: $bad"; show reduce
else check_osu reduce Reduce 8 "$BSIZES"; fi

GCOLL_BENCH_INJECT_ERROR=1
export GCOLL_BENCH_INJECT_ERROR
run rinject gcoll_bench_reduce -m 4:64 -i 5 -x 1 -c   # root 0: the corrupted output is rank 0's
unset GCOLL_BENCH_INJECT_ERROR
if [ "$rc" -ne 0 ] && grep -q 'VALIDATION FAILED' "$TMP/rinject.err"; then
    pass "reduce -c catches an injected error (exit $rc)"
else fail "reduce -c with GCOLL_BENCH_INJECT_ERROR=1: exit $rc, message missing?"; show rinject; fi

# allgather: host buffers (-d gcoll is above), -c, both implementations
run ag gcoll_bench_allgather -m 4K:64K -i 10 -x 1 -c -T int8 --impl both --blocks 3
if [ "$rc" -ne 0 ]; then fail "allgather -c -T int8 --impl both exited $rc"; show ag
elif ! positive ag 2 3 4 5 6 7 8; then fail "allgather: values not above 0: $bad"; show ag
else check_osu ag Allgather 8 "$BSIZES"; fi

GCOLL_BENCH_INJECT_ERROR=1
export GCOLL_BENCH_INJECT_ERROR
run aginject gcoll_bench_allgather -m 4:64 -i 5 -x 1 -c
unset GCOLL_BENCH_INJECT_ERROR
if [ "$rc" -ne 0 ] && grep -q 'VALIDATION FAILED' "$TMP/aginject.err"; then
    pass "allgather -c catches an injected error (exit $rc)"
else fail "allgather -c with GCOLL_BENCH_INJECT_ERROR=1: exit $rc, message missing?"; show aginject; fi

# allreduce_compressed: 2 simulated nodes of 1, so the shares cross
# compressed; lossy by design, so it has no -c check of its own
# (test_compress_mpi checks the results).
CSIZES="4096 8192 16384 32768"
for codec in topk onebit:64 bf16; do
    name=comp_$(echo "$codec" | tr -c 'a-z0-9\n' _)
    GCOLL_BENCH_CODEC=$codec GCOLL_NODE_SIZE=1
    export GCOLL_BENCH_CODEC GCOLL_NODE_SIZE
    run "$name" gcoll_bench_allreduce_compressed -m 4K:32K -i 10 -x 2 --impl both --blocks 3
    unset GCOLL_BENCH_CODEC GCOLL_NODE_SIZE
    if [ "$rc" -ne 0 ]; then fail "allreduce_compressed ($codec) exited $rc"; show "$name"
    elif ! positive "$name" 2 3 4 5 6 7 8; then
        fail "allreduce_compressed ($codec): values not above 0: $bad"; show "$name"
    else check_osu "$name" 'Allreduce (compressed)' 8 "$CSIZES"; fi
done
GCOLL_BENCH_CODEC=zstd
export GCOLL_BENCH_CODEC
run compbad gcoll_bench_allreduce_compressed -m 4:64 -i 2 -x 1
unset GCOLL_BENCH_CODEC
if [ "$rc" -eq 2 ] && grep -q 'GCOLL_BENCH_CODEC=zstd: unknown codec' "$TMP/compbad.err"; then
    pass "allreduce_compressed refuses an unknown codec with a message"
else fail "allreduce_compressed with GCOLL_BENCH_CODEC=zstd: exit $rc"; show compbad; fi

# gcoll_membw (no correctness check of its own): the four kernels, in
# order, each a time and a bandwidth above 0 for 2 ranks x 1 MiB.
run membw gcoll_membw 1M
bad=$(awk '
    { if (match($0, / 2 ranks x 1024 KiB arrays: +[0-9.]+ us, +[0-9.]+ GB\/s aggregate \(read \+ written\)$/)) {
          name = substr($0, 1, RSTART - 1); sub(/ +$/, "", name)
          split(substr($0, RSTART), f, /[ ,]+/)
          # f: "" 2 ranks x 1024 KiB arrays: T us GB GB/s ...
          if (!(f[8] > 0) || !(f[10] > 0)) print "zero:" name
          names = names name ";"
      } else print "line:" $0 }
    END { if (names != "memcpy (c = a);stream (c = a);c = a + b;a += b;") print "kernels:" names }' \
    "$TMP/membw.out" | tr '\n' ' ')
if [ "$rc" -eq 0 ] && [ -z "$bad" ]; then pass "gcoll_membw: four kernels, times and GB/s above 0"
else fail "gcoll_membw: exit $rc $bad"; show membw; fi
run membwbad gcoll_membw 12
if [ "$rc" -eq 2 ] && grep -q '^usage: gcoll_membw' "$TMP/membwbad.err"; then
    pass "gcoll_membw refuses a size under 64 bytes"
else fail "gcoll_membw 12: exit $rc"; show membwbad; fi

# ---- overlap benchmarks (nonblocking collectives) ---------------------------
OSIZES="4096 8192 16384 32768 65536"

# check_ovl NAME TITLE NCOLS SIZES: OSU osu_i<coll> output.  NCOLS: 5 (one
# impl), 10 (one impl, -f), 9 (--impl both), 14 (--impl both -f).  Values:
# times positive, Overlap in [0, 100] and equal to the formula applied to the
# printed times, Overall >= Compute, with -f post + compute + wait = Overall,
# and a compute that really takes time where the pure time is 5 us or more.
check_ovl() {
    name=$1 title=$2 ncols=$3 sizes=$4
    f="$TMP/$name.out"
    if ! grep -q "^# OSU-style libgcoll Non-blocking $title Latency Test" "$f"; then
        fail "$name: no OSU title line"; show "$name"; return
    fi
    if [ "$ncols" = 9 ] || [ "$ncols" = 14 ]; then
        hdr='^# Size .*gcoll Overall(us) .*gcoll Compute(us) .*gcoll Pure(us) .*gcoll Overlap(%) .*MPI Overall(us) .*MPI Compute(us) .*MPI Pure(us) .*MPI Overlap(%)'
        if ! grep -q 'progresses nonblocking collectives only inside MPI calls' "$f" ||
           ! grep -q 'no MPI_Test' "$f"; then
            fail "$name: the header does not say how MPI progresses (no MPI_Test)"; show "$name"; return
        fi
    else
        hdr='^# Size .*Overall(us) .*Compute(us) .*Pure Comm.(us) .*Overlap(%)'
    fi
    if ! grep -q "$hdr" "$f"; then fail "$name: no overlap column header"; show "$name"; return; fi
    if ! grep -q '^# gcoll: GCOLL_PROGRESS=' "$f"; then
        fail "$name: the header does not say the progress mode"; show "$name"; return
    fi
    if ! check_rows "$name" "$ncols" "$sizes"; then
        fail "$name: rows are not $ncols numeric columns for sizes '$sizes' (got '$got')"
        show "$name"; return
    fi
    bad=$(rows "$f" | awk -v n="$ncols" '
        { ni = (n == 9 || n == 14) ? 2 : 1; full = (n == 10 || n == 14)
          for (i = 0; i < ni; i++) {
              b = 2 + 4 * i; ov = $b; cp = $(b + 1); pu = $(b + 2); pct = $(b + 3)
              if (ov <= 0 || cp <= 0 || pu <= 0) { print $1 ":time<=0"; continue }
              if (pct < 0 || pct > 100) { print $1 ":overlap=" pct; continue }
              if (ov + 0.02 < cp) { print $1 ":overall<compute"; continue }
              want = 100 * (1 - (ov - cp) / pu)
              if (want < 0) want = 0
              if (want > 100) want = 100
              d = want - pct; if (d < 0) d = -d
              if (d > 0.1 + 2 / pu) { print $1 ":overlap-formula:" pct "/" want; continue }
              if (pu >= 5 && cp < 0.2 * pu) { print $1 ":compute-too-short:" cp "/" pu; continue }
              if (full) {
                  p = n == 10 ? 8 : 10 + 2 * i; po = $p; wa = $(p + 1)
                  s = po + cp + wa; d = s - ov; if (d < 0) d = -d
                  if (po < 0 || wa < 0 || d > 0.03 + 0.001 * ov) { print $1 ":post+compute+wait!=overall"; continue }
              }
          } }' | tr '\n' ' ')
    if [ -n "$bad" ]; then fail "$name: insane values: $bad"; show "$name"; return; fi
    pass "$name: osu_i-style overlap output, $ncols columns, sizes $sizes"
}

GCOLL_PROGRESS=thread
export GCOLL_PROGRESS
run iar gcoll_bench_iallreduce -m 4K:64K -i 12 -x 1 -c -f --impl both --blocks 3
if [ "$rc" -ne 0 ]; then fail "iallreduce (thread) --impl both -c -f exited $rc"; show iar
else check_ovl iar Allreduce 14 "$OSIZES"; fi

run ibc gcoll_bench_ibcast -m 4K:64K -i 12 -x 1 -c -r 1 --impl both --blocks 3
if [ "$rc" -ne 0 ]; then fail "ibcast (thread) -c -r 1 --impl both exited $rc"; show ibc
else check_ovl ibc Broadcast 9 "$OSIZES"; fi

run iag gcoll_bench_iallgather -m 4K:64K -i 12 -x 1 -c -T int32 --impl both --blocks 3
if [ "$rc" -ne 0 ]; then fail "iallgather (thread) -c -T int32 --impl both exited $rc"; show iag
else check_ovl iag Allgather 9 "$OSIZES"; fi

GCOLL_PROGRESS=caller
run iarc gcoll_bench_iallreduce -m 4K:64K -i 12 -x 1 -c
if [ "$rc" -ne 0 ]; then fail "iallreduce (caller) -c exited $rc"; show iarc
elif ! grep -q '^# gcoll: GCOLL_PROGRESS=caller' "$TMP/iarc.out"; then
    fail "iallreduce (caller): the header does not say caller mode"; show iarc
else check_ovl iarc Allreduce 5 "$OSIZES"; fi

run iagf gcoll_bench_iallgather -m 4K:64K -i 12 -x 1 -f
if [ "$rc" -ne 0 ]; then fail "iallgather (caller) -f exited $rc"; show iagf
else check_ovl iagf Allgather 10 "$OSIZES"; fi
unset GCOLL_PROGRESS

GCOLL_BENCH_INJECT_ERROR=1
export GCOLL_BENCH_INJECT_ERROR
run iinject gcoll_bench_iallreduce -m 4:64 -i 5 -x 1 -c
unset GCOLL_BENCH_INJECT_ERROR
if [ "$rc" -ne 0 ] && grep -q 'VALIDATION FAILED' "$TMP/iinject.err"; then
    pass "iallreduce -c catches an injected error (exit $rc)"
else
    fail "iallreduce -c with GCOLL_BENCH_INJECT_ERROR=1: exit $rc, message missing?"; show iinject
fi

run icsv gcoll_bench_ibcast -m 4:64 --csv "$TMP/i.csv"
if [ "$rc" -eq 2 ] && grep -q 'not available in the overlap' "$TMP/icsv.err"; then
    pass "overlap benchmarks refuse --csv with a message"
else fail "ibcast --csv: exit $rc"; show icsv; fi

# ---- usage errors and device placement -------------------------------------
run usage gcoll_bench_allreduce -m 64:4
if [ "$rc" -ne 0 ] && grep -q "bad value" "$TMP/usage.err"; then pass "bad -m is refused with a message"
else fail "bad -m: exit $rc"; show usage; fi

run cuda gcoll_bench_allreduce -d cuda -m 4:64 -i 5 -x 1 -c
if [ "$rc" -eq 0 ]; then pass "-d cuda runs (a CUDA device is present)"
elif [ "$rc" -eq 77 ] && grep -q -- '-d cuda' "$TMP/cuda.err"; then
    pass "-d cuda without a usable device: clear message, exit 77"
else fail "-d cuda: exit $rc"; show cuda; fi

# --algos: the default and forced algorithms side by side in one launch,
# each on its own communicator; -c validates every variant, and the trace
# shows each forced one running (a silent fallback would not say its name)
GCOLL_DEBUG=TRACE run algos gcoll_bench_allreduce --algos auto,ring,rdouble -m 8:64K -i 5 -x 1 -c
if [ "$rc" -eq 0 ] && grep -Eq '^# Size +auto +ring +rdouble$' "$TMP/algos.out" &&
   check_rows algos 4 "8 16 32 64 128 256 512 1024 2048 4096 8192 16384 32768 65536" &&
   grep -q 'gcoll_allreduce count=.*: ring, ' "$TMP/algos.err" &&
   grep -q 'gcoll_allreduce count=.*: rdouble, ' "$TMP/algos.err"; then
    pass "--algos times each variant in one launch, one column each, each forced one running"
else fail "--algos: exit $rc"; show algos; fi
run algosboth gcoll_bench_allreduce --algos auto,ring --impl both -m 8:64
if [ "$rc" -eq 2 ] && grep -q -- '--algos times libgcoll alone' "$TMP/algosboth.err"; then
    pass "--algos with --impl both is refused with a message"
else fail "--algos --impl both: exit $rc"; show algosboth; fi

# -d gcoll: gcoll_mem_alloc buffers, the node level zero-copy (-c checks every output)
run gmem gcoll_bench_allreduce -d gcoll --algo shm -m 64K:1M -i 5 -x 1 -c
if [ "$rc" -eq 0 ] && grep -q 'gcoll buffers' "$TMP/gmem.out"; then
    pass "-d gcoll (gcoll_mem_alloc buffers) validates and says so"
else fail "-d gcoll: exit $rc"; show gmem; fi
run gmemag gcoll_bench_allgather -d gcoll -m 16K:256K -i 5 -x 1 -c
if [ "$rc" -eq 0 ]; then pass "allgather -d gcoll validates"
else fail "allgather -d gcoll: exit $rc"; show gmemag; fi

# ---- plot ------------------------------------------------------------------
PLOTPY=""
for p in ${PYTHON:-} python3 /usr/bin/python3; do
    if [ -n "$p" ] && command -v "$p" >/dev/null 2>&1 && "$p" -c 'import matplotlib' 2>/dev/null; then
        PLOTPY=$p; break
    fi
done
if [ -z "$PLOTPY" ]; then
    echo "SKIP: gcoll_plot.py (no python3 with matplotlib)"
elif [ ! -s "$TMP/r.csv" ]; then
    echo "SKIP: gcoll_plot.py (no CSV from the run above)"
elif "$PLOTPY" "$srcdir/bench/gcoll_plot.py" "$TMP/r.csv" "$TMP/r.json" -o "$TMP/r.png" \
        >"$TMP/plot.out" 2>&1 && [ "$(head -c 4 "$TMP/r.png" | tail -c 3)" = PNG ]; then
    pass "gcoll_plot.py draws a PNG from CSV and JSON results"
else
    fail "gcoll_plot.py"; sed 's/^/    | /' "$TMP/plot.out"
fi

if [ "$failures" -ne 0 ]; then
    echo "$failures check(s) FAILED"
    exit 1
fi
echo "all benchmark checks passed"
exit 0
