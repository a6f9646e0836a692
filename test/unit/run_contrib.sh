#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The Spack and EasyBuild recipes in contrib/ against this tree:
# check_contrib.py compares them with ./configure --help, configure.ac's
# version and the files `make install` puts in a scratch DESTDIR.
srcdir=${srcdir:-.}
py=
for cand in "${PYTHON:-}" /usr/bin/python3 python3; do
    [ -n "$cand" ] && [ "$cand" != none ] && command -v "$cand" >/dev/null 2>&1 && { py=$cand; break; }
done
[ -n "$py" ] || { echo "SKIP: no python3"; exit 77; }
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
"$srcdir/configure" --help > "$tmp/help" || { echo "ERROR: configure --help failed"; exit 99; }
# a private install of this build (no parallel make: we run inside make check)
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s install DESTDIR="$tmp/root" >"$tmp/install.log" 2>&1 \
    || { echo "ERROR: make install DESTDIR failed"; tail "$tmp/install.log"; exit 99; }
prefix=$(sed -n "s/^prefix = //p" Makefile)
(cd "$tmp/root$prefix" && find . -type f -o -type l | sed 's|^\./||') > "$tmp/installed"
exec "$py" "$srcdir/test/unit/check_contrib.py" "$srcdir" "$tmp/help" "$tmp/installed"
