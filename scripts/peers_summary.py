#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Summarise a peer report run (scripts/peers_report.sh).

Reads OUT/meta.txt and OUT/raw/np<N>_r<R>_<impl>.txt (the harness's
"peer key=value ..." lines), prints markdown tables on stdout and writes
OUT/results.csv (every row of every round), OUT/summary.csv and
OUT/summary.json (medians over rounds, ratios) and OUT/<coll>_np<N>.png
(where matplotlib is installed).

States: the probe before and after each launch (bench/peers/state_probe.c)
classes the launch by the µs to copy 32 KiB that the other core just wrote:
fast below 2.5 (a shared cache), slow below 12 (the line comes through
memory: cores without a shared L3, as two CCDs), busy above (the host is
loaded); a launch whose two probes disagree is "mixed".  The state table
compares each implementation only with launches that met the same state.

Ratios: "best other / libgcoll" is the fastest peer's median over rounds
divided by libgcoll's (>= 1: libgcoll at least as fast); "per-round" is the
median over rounds of the same ratio formed within each round, which
cancels the machine's drift between rounds.  A result that failed the
harness's validation in any round is shown as FAIL and left out of both.

    usage: peers_summary.py OUT_DIR
"""
import csv
import glob
import json
import os
import re
import statistics
import sys

IMPLS = ["gcoll", "ompi4", "ompi5", "mpich", "impi"]
LABELS = {"gcoll": "libgcoll", "ompi4": "Open MPI 4.1", "ompi5": "Open MPI 5",
          "mpich": "MPICH 5", "impi": "Intel MPI"}
COLLS = ["allreduce", "bcast", "reduce", "allgather", "reduce_scatter"]
FIELDS = ["impl", "ranks", "round", "coll", "bytes", "count", "iters", "block_us",
          "block_min_us", "block_max_us", "calls", "p50_us", "p99_us", "mean_us", "valid", "state"]
KV = re.compile(r'(\w+)=("[^"]*"|\S+)')
# state classes by the probe's dirty 32 KiB transfer, µs (upper bounds)
STATES = [("fast", 2.5), ("slow", 12.0), ("busy", float("inf"))]


def parse_kv(line):
    return {k: v.strip('"') for k, v in KV.findall(line)}


def read_meta(out):
    meta, skipped = {}, {}
    try:
        with open(os.path.join(out, "meta.txt")) as f:
            for line in f:
                k, _, v = line.rstrip("\n").partition("=")
                if k.startswith("skipped."):
                    skipped[k[len("skipped."):]] = v
                elif k:
                    meta[k] = v
    except OSError:
        pass
    return meta, skipped


def read_raw(out):
    """Rows, the library each impl reported, launches that failed, and the
    state probes beside each launch ({(ranks, round, impl): {when: kv}})."""
    rows, libs, failures, probes = [], {}, [], {}
    name = re.compile(r"np(\d+)_r(\d+)_(\w+)\.txt$")
    for path in sorted(glob.glob(os.path.join(out, "raw", "np*_r*_*.txt"))):
        m = name.search(path)
        if not m:
            continue
        ranks, rnd, impl = int(m.group(1)), int(m.group(2)), m.group(3)
        n = 0
        with open(path) as f:
            for line in f:
                if line.startswith("peer "):
                    kv = parse_kv(line)
                    row = {k: kv.get(k) for k in FIELDS}
                    row.update(impl=impl, ranks=ranks, round=rnd)
                    for k in ("bytes", "count", "iters", "calls", "valid"):
                        row[k] = int(row[k])
                    for k in ("block_us", "block_min_us", "block_max_us", "p50_us",
                              "p99_us", "mean_us"):
                        row[k] = float(row[k])
                    rows.append(row)
                    n += 1
                elif line.startswith("# peer_harness"):
                    kv = parse_kv(line)
                    lib = kv.get("mpi", "")
                    if "lib" in kv:
                        lib = "%s over %s" % (kv["lib"], lib)
                    libs[impl] = lib
                elif line.startswith("# probe when="):
                    kv = parse_kv(line[2:])
                    probes.setdefault((ranks, rnd, impl), {})[kv.get("when")] = kv
                elif line.startswith("# exit="):
                    failures.append({"impl": impl, "ranks": ranks, "round": rnd,
                                     "exit": int(line.split("=", 1)[1]), "rows": n})
    return rows, libs, failures, probes


def fmt(v):
    if v is None:
        return "–"
    if v >= 100:
        return "%.0f" % v
    if v >= 10:
        return "%.1f" % v
    if v >= 1:
        return "%.2f" % v
    return "%.3f" % v


def fmt_bytes(b):
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if b >= 1 << shift and b % (1 << shift) == 0:
            return "%d %s" % (b >> shift, unit)
    return "%d B" % b


def median(v):
    return statistics.median(v) if v else None


class Cell:
    """One implementation at one (ranks, coll, bytes): its rounds."""

    def __init__(self, rows):
        self.rows = sorted(rows, key=lambda r: r["round"])
        self.valid = all(r["valid"] for r in rows)
        self.by_round = {r["round"]: r for r in rows}

    def med(self, key):
        return median([r[key] for r in self.rows])


def summarise(rows):
    """{(ranks, coll, bytes): {impl: Cell}}"""
    groups = {}
    for r in rows:
        groups.setdefault((r["ranks"], r["coll"], r["bytes"]), {}).setdefault(
            r["impl"], []).append(r)
    return {k: {i: Cell(v) for i, v in g.items()} for k, g in groups.items()}


def ratios(cells):
    """(best other impl, its median / libgcoll's, median of per-round ratios)."""
    g = cells.get("gcoll")
    others = {i: c for i, c in cells.items() if i != "gcoll" and c.valid}
    if not g or not g.valid or not others:
        return None, None, None
    best = min(others, key=lambda i: others[i].med("block_us"))
    ratio = others[best].med("block_us") / g.med("block_us")
    per_round = []
    for rnd, grow in g.by_round.items():
        peers = [c.by_round[rnd]["block_us"] for c in others.values() if rnd in c.by_round]
        if peers:
            per_round.append(min(peers) / grow["block_us"])
    return best, ratio, median(per_round)


def table(header, lines):
    out = ["| " + " | ".join(header) + " |",
           "| " + " | ".join(["---:"] * len(header)) + " |"]
    out += ["| " + " | ".join(line) + " |" for line in lines]
    return "\n".join(out)


def probe_cell(p):
    """'before / after' µs of the dirty 32 KiB transfer, '–' without a probe."""
    if not p:
        return "–"
    return " / ".join(p[w].get("dirty32k_us", "?") if w in p else "?" for w in ("before", "after"))


def probe_state(p):
    """The launch's state class from its probes, or None without both."""
    classes = set()
    for w in ("before", "after"):
        try:
            us = float(p[w]["dirty32k_us"])
        except (KeyError, TypeError, ValueError):
            return None
        classes.add(next(name for name, top in STATES if us < top))
    return classes.pop() if len(classes) == 1 else "mixed"


def launch_states(probes):
    """{(ranks, round, impl): state}"""
    return {k: probe_state(p) for k, p in probes.items()}


def state_table(ranks, coll, summary, impls, states):
    """Lines of the per-state comparison at one (ranks, coll), or None where
    no state has both a libgcoll launch and a peer's."""
    keys = sorted(k for k in summary if k[:2] == (ranks, coll))
    per = {}  # state -> {impl: {bytes: [block_us]}}
    for k in keys:
        for i, c in summary[k].items():
            if not c.valid:
                continue
            for rnd, row in c.by_round.items():
                st = states.get((ranks, rnd, i))
                if st in (None, "mixed"):
                    continue
                per.setdefault(st, {}).setdefault(i, {}).setdefault(k[2], []).append(
                    row["block_us"])
    usable = [s for s, _ in STATES if s in per and "gcoll" in per[s]
              and any(i != "gcoll" for i in per[s])]
    if not usable:
        return None, None
    head, counts = ["bytes"], []
    for st in usable:
        n = {i: len(next(iter(v.values()))) for i, v in per[st].items()}
        counts.append("%s: %s" % (st, ", ".join("%s %d" % (LABELS[i], n[i])
                                                 for i in impls if i in n)))
        head += ["libgcoll " + st, "best other " + st, "ratio " + st]
    lines = []
    for k in keys:
        line = [fmt_bytes(k[2])]
        for st in usable:
            g = median(per[st]["gcoll"].get(k[2], []))
            peers = {i: median(v.get(k[2], [])) for i, v in per[st].items() if i != "gcoll"}
            peers = {i: m for i, m in peers.items() if m is not None}
            if g is None or not peers:
                line += ["–", "–", "–"]
                continue
            best = min(peers, key=peers.get)
            line += [fmt(g), "%s %s" % (fmt(peers[best]), LABELS[best]),
                     "%.2f" % (peers[best] / g)]
        lines.append(line)
    return table(head, lines), "; ".join(counts)


def report(meta, skipped, libs, failures, summary, impls, probes):
    p = print
    states = launch_states(probes)
    p("# Peer report\n")
    p("Command: `%s`  " % meta.get("command", "scripts/peers_report.sh"))
    p("Date: %s; CPU: %s; binding: %s; rounds: %s.  " % (
        meta.get("date", "?"), meta.get("cpu", "?"), meta.get("bind", "?"),
        meta.get("rounds", "?")))
    p("float32 sum, out of place, root 0; µs per call.  Bytes: one call's buffer "
      "(allreduce, bcast, reduce) or one rank's block (allgather, reduce_scatter).\n")
    for i in impls:
        if i in libs:
            p("- %s (`%s`): %s" % (LABELS[i], i, libs[i]))
    for i, why in skipped.items():
        p("- %s (`%s`): skipped: %s" % (LABELS.get(i, i), i, why))
    why = {1: "a result was wrong or a call failed", 124: "timed out (--timeout)",
           137: "killed after the timeout"}
    for f in failures:
        p("- %s, %d ranks, round %d: launch exited %d (%s) after %d rows" % (
            LABELS.get(f["impl"], f["impl"]), f["ranks"], f["round"], f["exit"],
            why.get(f["exit"], "see raw/*.err"), f["rows"]))
    p("")
    have_g = "gcoll" in impls
    for ranks in sorted({k[0] for k in summary}):
        for coll in [c for c in COLLS if any(k[:2] == (ranks, c) for k in summary)]:
            keys = sorted(k for k in summary if k[:2] == (ranks, coll))
            p("## %s, %d ranks\n" % (coll, ranks))
            p("Median of 7 timed blocks, median over rounds (µs per call):\n")
            head = ["bytes"] + [LABELS[i] for i in impls]
            if have_g:
                head += ["best other", "best other / libgcoll", "per-round ratio"]
            lines = []
            for k in keys:
                cells = summary[k]
                line = [fmt_bytes(k[2])]
                for i in impls:
                    c = cells.get(i)
                    line.append("–" if not c else fmt(c.med("block_us")) if c.valid else "FAIL")
                if have_g:
                    best, ratio, pr = ratios(cells)
                    line += [LABELS.get(best, "–") if best else "–",
                             "%.2f" % ratio if ratio else "–", "%.2f" % pr if pr else "–"]
                lines.append(line)
            p(table(head, lines) + "\n")
            p("Per call, p50 / p99 / mean of the slowest rank's time, median over rounds "
              "(µs):\n")
            lines = []
            for k in keys:
                line = [fmt_bytes(k[2])]
                for i in impls:
                    c = summary[k].get(i)
                    line.append("–" if not c else "FAIL" if not c.valid else " / ".join(
                        fmt(c.med(s)) for s in ("p50_us", "p99_us", "mean_us")))
                lines.append(line)
            p(table(["bytes"] + [LABELS[i] for i in impls], lines) + "\n")
            tab, counts = state_table(ranks, coll, summary, impls, states)
            if tab:
                p("By the machine's state (launches classed by the probe, see the "
                  "script's help; launches per state: %s), median over the launches "
                  "that met it (µs; ratio = best other / libgcoll):\n" % counts)
                p(tab + "\n")
        # which mode each launch ran in: the smallest size of the first collective
        first = min((k for k in summary if k[0] == ranks), key=lambda k: (COLLS.index(k[1]), k[2]))
        cells = summary[first]
        rnds = sorted({r for c in cells.values() for r in c.by_round})
        p("Rounds at %d ranks: %s %s, block µs per launch (the machine's fast or slow "
          "mode shows here):\n" % (ranks, first[1], fmt_bytes(first[2])))
        lines = [[str(r)] + [fmt(cells[i].by_round[r]["block_us"])
                             if i in cells and r in cells[i].by_round else "–" for i in impls]
                 for r in rnds]
        p(table(["round"] + [LABELS[i] for i in impls], lines) + "\n")
        if any(k[0] == ranks for k in probes):
            p("State probe beside each launch at %d ranks (bench/peers/state_probe.c): µs to "
              "copy 32 KiB that the other core just wrote, before / after the launch; "
              "launches that met different values met different machines:\n" % ranks)
            lines = [[str(r)] + [" ".join(filter(None, (probe_cell(probes.get((ranks, r, i))),
                                                         states.get((ranks, r, i)))))
                                 for i in impls]
                     for r in rnds]
            p(table(["round"] + [LABELS[i] for i in impls], lines) + "\n")


def write_files(out, rows, summary, impls, meta, skipped, libs, failures):
    with open(os.path.join(out, "results.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        for r in sorted(rows, key=lambda r: (r["ranks"], COLLS.index(r["coll"]), r["bytes"],
                                             IMPLS.index(r["impl"]), r["round"])):
            w.writerow(r)
    recs = []
    for k in sorted(summary, key=lambda k: (k[0], COLLS.index(k[1]), k[2])):
        cells = summary[k]
        best, ratio, pr = ratios(cells)
        for i in impls:
            c = cells.get(i)
            if not c:
                continue
            recs.append({"ranks": k[0], "coll": k[1], "bytes": k[2], "impl": i,
                         "rounds": len(c.rows), "valid": int(c.valid),
                         "block_us": c.med("block_us"),
                         "block_us_rounds": [r["block_us"] for r in c.rows],
                         "p50_us": c.med("p50_us"), "p99_us": c.med("p99_us"),
                         "mean_us": c.med("mean_us"),
                         "best_other": best, "best_other_over_gcoll": ratio,
                         "per_round_ratio": pr})
    with open(os.path.join(out, "summary.csv"), "w", newline="") as f:
        keys = [k for k in recs[0] if k != "block_us_rounds"] if recs else []
        w = csv.DictWriter(f, fieldnames=keys, extrasaction="ignore")
        w.writeheader()
        w.writerows(recs)
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump({"meta": meta, "libraries": libs, "skipped": skipped,
                   "launch_failures": failures, "results": recs}, f, indent=1)


def plot(out, summary, impls):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(no matplotlib: no plots)", file=sys.stderr)
        return
    for ranks, coll in sorted({k[:2] for k in summary}):
        keys = sorted(k for k in summary if k[:2] == (ranks, coll))
        fig, (top, bot) = plt.subplots(2, 1, figsize=(8, 7), sharex=True,
                                       gridspec_kw={"height_ratios": [2, 1]})
        for i in impls:
            pts = [(k[2], summary[k][i]) for k in keys
                   if i in summary[k] and summary[k][i].valid]
            if not pts:
                continue
            x = [b for b, _ in pts]
            y = [c.med("block_us") for _, c in pts]
            lo = [min(r["block_us"] for r in c.rows) for _, c in pts]
            hi = [max(r["block_us"] for r in c.rows) for _, c in pts]
            line, = top.plot(x, y, marker="o", ms=3, label=LABELS[i],
                             lw=2.2 if i == "gcoll" else 1.2)
            top.fill_between(x, lo, hi, color=line.get_color(), alpha=0.15)
            if i != "gcoll" and "gcoll" in impls:
                rx = [b for b, c in pts if "gcoll" in summary[(ranks, coll, b)]
                      and summary[(ranks, coll, b)]["gcoll"].valid]
                ry = [summary[(ranks, coll, b)][i].med("block_us") /
                      summary[(ranks, coll, b)]["gcoll"].med("block_us") for b in rx]
                bot.plot(rx, ry, marker="o", ms=3, color=line.get_color(), label=LABELS[i])
        top.set_xscale("log", base=2)
        ticks = [k[2] for k in keys]
        while len(ticks) > 12:
            ticks = ticks[::2]
        bot.set_xticks(ticks)
        bot.set_xticklabels([fmt_bytes(b).replace(" ", "\u2009") for b in ticks],
                            rotation=45, fontsize=8)
        bot.minorticks_off()
        top.set_yscale("log")
        top.set_ylabel("µs per call (median over rounds)")
        top.set_title("%s, %d ranks, float32 sum (band: min..max over rounds)" % (coll, ranks))
        top.grid(True, which="both", alpha=0.3)
        top.legend(fontsize=8)
        bot.axhline(1.0, color="k", lw=0.8)
        bot.set_yscale("log")
        bot.set_ylabel("peer / libgcoll\n(> 1: libgcoll faster)")
        bot.set_xlabel("bytes")
        bot.grid(True, which="both", alpha=0.3)
        fig.tight_layout()
        fig.savefig(os.path.join(out, "%s_np%d.png" % (coll, ranks)), dpi=110)
        plt.close(fig)


def main():
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(sys.argv) == 2 else 2
    out = sys.argv[1]
    meta, skipped = read_meta(out)
    rows, libs, failures, probes = read_raw(out)
    if not rows:
        print("peers_summary: no results under %s/raw" % out, file=sys.stderr)
        return 1
    states = launch_states(probes)
    for r in rows:
        r["state"] = states.get((r["ranks"], r["round"], r["impl"])) or ""
    present = {r["impl"] for r in rows}
    impls = [i for i in IMPLS if i in present]
    summary = summarise(rows)
    report(meta, skipped, libs, failures, summary, impls, probes)
    write_files(out, rows, summary, impls, meta, skipped, libs, failures)
    plot(out, summary, impls)
    return 0


if __name__ == "__main__":
    sys.exit(main())
