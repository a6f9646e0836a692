#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Compare two program outputs number by number.

    numdiff.py [--rtol R] [--atol A] EXPECTED ACTUAL

The files are split into tokens (numbers and the text between them): the
text must be equal (whitespace runs count as one space), the numbers equal
within |a - b| <= atol + rtol * max(|a|, |b|).  Why a tolerance at all: a
reduction of three or more ranks may add in another order under the drop-in
than in the MPI (libgcoll's algorithms are not Open MPI's), which changes
the last digits of a floating-point sum; an iterative solver then carries
that change into the digits it prints.  Exit 0 when they match, 1 with the
first differences on stdout, 2 on a usage error.
"""
import argparse
import re
import sys

NUM = re.compile(r'[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eEdD][-+]?\d+)?')


def tokens(path):
    with open(path, encoding='utf-8', errors='replace') as f:
        text = f.read()
    out = []
    pos = 0
    for m in NUM.finditer(text):
        out.append(('t', ' '.join(text[pos:m.start()].split())))
        # Fortran writes 1.0D+00
        out.append(('n', float(m.group().replace('d', 'e').replace('D', 'e'))))
        pos = m.end()
    out.append(('t', ' '.join(text[pos:].split())))
    return [t for t in out if t != ('t', '')]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--rtol', type=float, default=1e-8)
    ap.add_argument('--atol', type=float, default=0.0)
    ap.add_argument('expected')
    ap.add_argument('actual')
    a = ap.parse_args()
    x, y = tokens(a.expected), tokens(a.actual)
    bad = []
    worst = 0.0
    for i, (p, q) in enumerate(zip(x, y)):
        if p[0] != q[0] or (p[0] == 't' and p[1] != q[1]):
            bad.append(f'token {i}: {p[1]!r} != {q[1]!r}')
        elif p[0] == 'n' and p[1] != q[1]:
            d = abs(p[1] - q[1])
            scale = max(abs(p[1]), abs(q[1]))
            worst = max(worst, d / scale)
            if d > a.atol + a.rtol * scale:
                bad.append(f'number {i}: {p[1]!r} != {q[1]!r} (relative {d / scale:.3g})')
        if len(bad) >= 10:
            break
    if len(x) != len(y) and len(bad) < 10:
        bad.append(f'{len(x)} tokens != {len(y)} tokens')
    nums = sum(1 for t in x if t[0] == 'n')
    if bad:
        print(f'numdiff: {a.expected} vs {a.actual}: MISMATCH')
        for b in bad:
            print('  ' + b)
        return 1
    print(f'numdiff: {nums} number{"" if nums == 1 else "s"} equal within rtol={a.rtol:g} '
          f'(largest relative difference {worst:.3g})')
    return 0


if __name__ == '__main__':
    sys.exit(main())
