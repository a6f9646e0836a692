#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Compressed allreduce against the exact one on 4 ranks as 2 simulated nodes,
# with the inter-node link emulated: UCX over TCP on the loopback device
# (UCX_TLS=tcp,self), which a token-bucket qdisc limits to RATE.  Intra-node
# steps use libgcoll's shared segment and never touch the loopback device, so
# only "inter-node" traffic is throttled, as on a cluster whose NIC is the
# bottleneck.  Rounds alternate the codecs, so the machine's drift spreads
# over all of them; the table gives each codec's median over rounds.
#
# Needs root and tc(8); changes the loopback qdisc for the run and restores
# it on exit.  Without a RATE ("none") nothing is throttled.
#   usage: scripts/compress_report.sh [BUILD_DIR] [RATE e.g. 2gbit|none] [ROUNDS]
set -u
build=${1:-build}
rate=${2:-2gbit}
rounds=${3:-3}
b="$build/bench/gcoll_bench_allreduce_compressed"
[ -x "$b" ] || { echo "no $b: build first" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
if [ "$rate" != none ]; then
    command -v tc >/dev/null || { echo "tc(8) not found (apt-get install iproute2)" >&2; exit 1; }
    tc qdisc add dev lo root tbf rate "$rate" burst 256kb latency 100ms || exit 1
    trap 'tc qdisc del dev lo root' EXIT
fi
tmp=$(mktemp -d)
codecs=(none bf16 topk onebit)
for r in $(seq "$rounds"); do
    for c in "${codecs[@]}"; do
        echo "round $r/$rounds: $c" >&2
        GCOLL_BENCH_CODEC=$c mpirun --oversubscribe --bind-to none -n 4 -x UCX_TLS=tcp,self \
            -x GCOLL_NODE_SIZE=2 -x GCOLL_BENCH_CODEC "$b" --impl gcoll -m 256K:16M -i 20 -x 3 \
            2>/dev/null | grep -v '^#' | awk '{print $1, $2}' > "$tmp/$c.$r"
    done
done
python3 - "$tmp" "$rounds" "$rate" "${codecs[@]}" <<'PY'
import statistics, sys
tmp, rounds, rate, codecs = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
t = {c: {} for c in codecs}
for c in codecs:
    for r in range(1, rounds + 1):
        for line in open(f"{tmp}/{c}.{r}"):
            size, us = line.split()
            t[c].setdefault(int(size), []).append(float(us))
print(f"4 ranks as 2 nodes, inter-node link {rate}, median of {rounds} rounds, us "
      "(speed-up over the exact allreduce in brackets)\n")
print("| size | " + " | ".join(codecs) + " |")
print("| ---: |" + " ---: |" * len(codecs))
for size in sorted(t["none"]):
    base = statistics.median(t["none"][size])
    cells = [f"{base:.0f}"] + [f"{statistics.median(t[c][size]):.0f} "
                               f"({base / statistics.median(t[c][size]):.2f}x)" for c in codecs[1:]]
    label = f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"
    print(f"| {label} | " + " | ".join(cells) + " |")
PY
rm -rf "$tmp"
