#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Summarise several gcoll_tune sweeps of one collective: per size, each
algorithm's median over the sweeps (of the medians gcoll_tune wrote in the
table's comment lines), and how the hierarchical algorithms compare with the
best flat one, sweep by sweep.

    usage: scripts/tune_medians.py SWEEP.tbl [SWEEP.tbl ...]

One sweep on a host whose ranks share CPUs varies by tens of percent; the
median over sweeps, and the count of sweeps each algorithm won, is what
docs/PERFORMANCE.md quotes.  Prints a Markdown table."""
import collections
import statistics
import sys

HIER = ("hier", "hier_p2p", "hier_leader")


def read_sweep(path):
    """{size: {algo: us}} from the '#   SIZE  algo=us ...' lines under a
    '# ... medians' header (not those of the write ways)."""
    sweep = {}
    medians = False
    for line in open(path):
        if line.startswith("# ") and not line.startswith("#   "):
            medians = " medians" in line
        fields = line[1:].split()
        if not medians or not line.startswith("#   ") or not fields or "=" not in fields[-1]:
            continue
        sweep[fields[0]] = {k.lstrip("*"): float(v) for k, v in
                            (kv.split("=") for kv in fields[1:])}
    return sweep


def size_key(s):
    return float(s[:-1]) * {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[s[-1]] \
        if s[-1] in "KMG" else float(s)


def main(paths):
    sweeps = [read_sweep(p) for p in paths]
    sizes = sorted({s for sw in sweeps for s in sw}, key=size_key)
    algos = list(dict.fromkeys(a for sw in sweeps for s in sw for a in sw[s]))
    flat = [a for a in algos if a not in HIER]
    hier = [a for a in algos if a in HIER]
    print(f"{len(sweeps)} sweeps; median over sweeps, us (wins: sweeps in which "
          "the algorithm was fastest)\n")
    print("| size | " + " | ".join(algos) + " | " +
          " | ".join(f"{h} / best flat" for h in hier) + " |")
    print("| ---: |" + " ---: |" * (len(algos) + len(hier)))
    for s in sizes:
        runs = [sw[s] for sw in sweeps if s in sw]
        wins = collections.Counter(min(r, key=r.get) for r in runs)
        med = {a: statistics.median([r[a] for r in runs if a in r]) for a in algos
               if any(a in r for r in runs)}
        best_flat = min(med[a] for a in flat if a in med)
        cells = [f"{med[a]:.0f} ({wins[a]})" if a in med else "-" for a in algos]
        ratios = []
        for h in hier:
            per = [r[h] / min(r[a] for a in flat if a in r) for r in runs if h in r]
            ratios.append(f"{med[h] / best_flat:.2f} (per sweep {min(per):.2f}-{max(per):.2f})"
                          if h in med else "-")
        print(f"| {s} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
