#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The measurements behind docs/PERFORMANCE.md, in one run, from a build
# directory (default ./build).  Each benchmark times libgcoll and the system
# MPI interleaved on the same buffers (--impl both), so the machine's drift
# between runs cancels in the ratios.  Output: one log per part in OUT.
#   usage: scripts/perf_report.sh [BUILD_DIR] [OUT_DIR]
set -u
build=${1:-build}
out=${2:-perf-results}
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi=(mpirun --oversubscribe --bind-to none)
b="$build/bench/gcoll_bench_allreduce"
run() {   # run NAME CMD...: print the command, then its output, into OUT/NAME.txt
    local name=$1; shift
    echo "== $name" >&2
    { echo "\$ $*"; "$@" 2>&1; } > "$out/$name.txt"
}
run machine        lscpu
run membw-16M      "${mpi[@]}" -n 2 "$build/bench/gcoll_membw" 16M
run membw-64M      "${mpi[@]}" -n 2 "$build/bench/gcoll_membw" 64M
run np2-default    "${mpi[@]}" -n 2 "$b" --impl both -m 8:64M --csv "$out/np2-default.csv"
run np2-default-2  "${mpi[@]}" -n 2 "$b" --impl both -m 8:64M
for algo in rdouble rabenseifner ring; do
    run "np2-ucx-$algo" "${mpi[@]}" -n 2 -x GCOLL_TRANSPORT=ucx "$b" --impl both --algo "$algo" -m 8:64M
done
run np2-mpitl-ring "${mpi[@]}" -n 2 -x GCOLL_TRANSPORT=mpi "$b" --impl both --algo ring -m 64K:64M
run np2-vs-ompi-rabenseifner "${mpi[@]}" -n 2 --mca coll_tuned_use_dynamic_rules 1 \
    --mca coll_tuned_allreduce_algorithm 6 "$b" --impl both -m 8:64M
run np2-vs-ompi-linear "${mpi[@]}" -n 2 --mca coll_tuned_use_dynamic_rules 1 \
    --mca coll_tuned_allreduce_algorithm 1 "$b" --impl both -m 1M:64M
run np2-vs-ompi-pml-ucx "${mpi[@]}" -n 2 --mca pml ucx --mca pml_ucx_tls any \
    --mca pml_ucx_devices any "$b" --impl both -m 8:64M
for algo in default ring rabenseifner hier hier_leader; do
    extra=(); [ "$algo" = default ] || extra=(--algo "$algo")
    run "np4-2nodes-$algo" "${mpi[@]}" -n 4 -x GCOLL_NODE_SIZE=2 "$b" --impl both "${extra[@]}" \
        -m 8:16M -i 50 -x 5
done
# every allreduce algorithm interleaved per size (medians), eight sweeps,
# summarised as medians over sweeps: the fairest comparison of hier against
# the flat algorithms here (one sweep varies by tens of percent)
for k in 1 2 3 4 5 6 7 8; do
    run "np4-2nodes-tune-$k" "${mpi[@]}" -n 4 -x GCOLL_NODE_SIZE=2 "$build/tools/gcoll_tune" \
        -o "$out/np4-2nodes-tune-$k.tbl" -c allreduce -m 256K:16M -s 2
done
run np4-2nodes-tune-summary python3 "$(dirname "$0")/tune_medians.py" "$out"/np4-2nodes-tune-?.tbl
echo "results in $out/" >&2
