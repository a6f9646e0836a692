#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Plot results of the gcoll_bench_<collective> programs.

Reads one or more result files written with --csv FILE or --json FILE and
draws, in one PNG, latency against message size (log-log) and bus bandwidth
against message size, one line per file and implementation (gcoll, mpi).

    mpirun -n 2 gcoll_bench_allreduce --impl both --csv ar.csv
    gcoll_plot.py ar.csv -o allreduce.png

Needs matplotlib (Debian: apt-get install python3-matplotlib).
"""

import argparse
import csv
import json
import os
import sys

IMPLS = ("gcoll", "mpi")


def read_csv(path):
    """Rows as dicts of floats (numeric columns) or strings, plus metadata."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise ValueError("%s: no result rows" % path)
    meta = {k: rows[0].get(k, "") for k in ("collective", "ranks", "dtype", "buffers")}
    return meta, [{k: _number(v) for k, v in r.items()} for r in rows]


def read_json(path):
    with open(path) as f:
        doc = json.load(f)
    rows = doc.get("results", [])
    if not rows:
        raise ValueError("%s: no result rows" % path)
    meta = {k: doc.get(k, "") for k in ("collective", "ranks", "dtype", "buffers")}
    return meta, rows


def _number(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return text


def read_results(path):
    """(metadata, rows) of a CSV or JSON results file, told apart by content."""
    with open(path) as f:
        first = f.read(1)
    return read_json(path) if first in "{[" else read_csv(path)


def series(rows, impl):
    """Sizes, latencies and bus bandwidths of impl, sizes > 0 only (log axes)."""
    key = impl + "_avg_us"
    pts = [(float(r["size_bytes"]), float(r[key]), float(r.get(impl + "_busbw_GBps", 0)))
           for r in rows if key in r and float(r["size_bytes"]) > 0]
    return [p[0] for p in pts], [p[1] for p in pts], [p[2] for p in pts]


def size_label(nbytes, _pos=None):
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if nbytes >= scale:
            return "%g%s" % (nbytes / scale, unit)
    return "%g" % nbytes


def label(path, meta, impl, nfiles):
    what = "%s %s" % (impl, meta.get("collective", ""))
    extra = ", ".join(str(x) for x in (
        "%s ranks" % _int(meta.get("ranks")) if meta.get("ranks") not in ("", None) else "",
        meta.get("dtype", ""), meta.get("buffers", "")) if x)
    name = os.path.basename(path) if nfiles > 1 else ""
    return " ".join(s for s in (name, what.strip(), "(%s)" % extra if extra else "") if s)


def _int(x):
    try:
        return int(float(x))
    except (TypeError, ValueError):
        return x


def plot(results, out, title):
    import matplotlib
    matplotlib.use("Agg")   # files only: no display needed
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    fig, (ax_lat, ax_bw) = plt.subplots(1, 2, figsize=(13, 5))
    drawn = 0
    for path, (meta, rows) in results:
        for impl in IMPLS:
            sizes, lat, bw = series(rows, impl)
            if not sizes:
                continue
            style = "-o" if impl == "gcoll" else "--s"
            lbl = label(path, meta, impl, len(results))
            ax_lat.plot(sizes, lat, style, markersize=3, label=lbl)
            ax_bw.plot(sizes, bw, style, markersize=3, label=lbl)
            drawn += 1
    if not drawn:
        raise ValueError("no rows with a message size > 0 to plot")
    ax_lat.set_xscale("log", base=2)
    ax_lat.set_yscale("log")
    ax_lat.set_ylabel("latency (us)")
    ax_lat.set_title("Latency")
    ax_bw.set_xscale("log", base=2)
    ax_bw.set_ylabel("busbw (GB/s)")
    ax_bw.set_title("Bus bandwidth (nccl-tests definition)")
    for ax in (ax_lat, ax_bw):
        ax.set_xlabel("message size (bytes)")
        ax.xaxis.set_major_formatter(FuncFormatter(size_label))
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize="small")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", help="CSV or JSON files from --csv / --json")
    ap.add_argument("-o", "--output", default="gcoll_bench.png", help="PNG to write")
    ap.add_argument("-t", "--title", default=None, help="figure title")
    args = ap.parse_args(argv)
    try:
        results = [(p, read_results(p)) for p in args.files]
        plot(results, args.output, args.title)
    except (OSError, ValueError, KeyError) as e:
        print("gcoll_plot.py: %s" % e, file=sys.stderr)
        return 1
    except ImportError as e:
        print("gcoll_plot.py: %s (Debian: apt-get install python3-matplotlib)" % e,
              file=sys.stderr)
        return 1
    print("wrote %s" % args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
