#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Make the release tarball of a commit, reproducibly, and print what the
# recipes need.
#
#   scripts/release.sh [-o OUTDIR] [--update] [COMMIT]
#
# COMMIT (default HEAD) is cloned into a scratch folder, so uncommitted
# changes never reach the tarball; autogen.sh, configure (MPI is needed,
# nothing optional) and `make dist` run there twice, with SOURCE_DATE_EPOCH
# set to the commit's time and gzip -n, and the two sha256 sums must agree.
# The tarball is left in OUTDIR (default: the current folder).  Printed: the
# tarball, its sha256, the release URL and the lines for
# contrib/spack/packages/libgcoll/package.py and contrib/easybuild/*.eb.
# --update writes that sha256 into those recipes in this working tree (a
# commit after the released one: a recipe cannot carry its own tarball's sum).
# The last line is "sha256 <sum>  <tarball>".
set -eu
out=.
update=no
commit=HEAD
while [ $# -gt 0 ]; do
    case $1 in
        -o) out=$2; shift 2 ;;
        --update) update=yes; shift ;;
        -h|--help) sed -n '3,17p' "$0"; exit 0 ;;
        -*) echo "release.sh: unknown option $1" >&2; exit 2 ;;
        *) commit=$1; shift ;;
    esac
done
top=$(cd "$(dirname "$0")/.." && git rev-parse --show-toplevel)
rev=$(git -C "$top" rev-parse --verify "$commit^{commit}")
SOURCE_DATE_EPOCH=$(git -C "$top" log -1 --format=%ct "$rev")
export SOURCE_DATE_EPOCH
mkdir -p "$out"; out=$(cd "$out" && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
git clone -q --no-checkout "$top" "$tmp/src"
git -C "$tmp/src" checkout -q "$rev"
(cd "$tmp/src" && ./autogen.sh) >"$tmp/autogen.log" 2>&1 \
    || { tail "$tmp/autogen.log" >&2; echo "release.sh: autogen.sh failed" >&2; exit 1; }
mkdir "$tmp/build"
(cd "$tmp/build" && "$tmp/src/configure" --without-ucx --without-hwloc --without-cuda \
    --disable-fortran --disable-python) >"$tmp/configure.log" 2>&1 \
    || { tail "$tmp/configure.log" >&2; echo "release.sh: configure failed" >&2; exit 1; }
version=$(sed -n 's/^PACKAGE_VERSION = //p' "$tmp/build/Makefile")
tarball=libgcoll-$version.tar.gz
sums=
for i in 1 2; do
    rm -f "$tmp/build/$tarball"
    make -s -C "$tmp/build" dist GZIP_ENV="-9 -n" >"$tmp/dist.log" 2>&1 \
        || { tail "$tmp/dist.log" >&2; echo "release.sh: make dist failed" >&2; exit 1; }
    sums="$sums $(sha256sum "$tmp/build/$tarball" | cut -d' ' -f1)"
done
set -- $sums
if [ "$1" != "$2" ]; then
    echo "release.sh: make dist is not reproducible: $1 then $2" >&2; exit 1
fi
sha=$1
cp "$tmp/build/$tarball" "$out/$tarball"
touch -d "@$SOURCE_DATE_EPOCH" "$out/$tarball"
echo "commit   $rev ($(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ), SOURCE_DATE_EPOCH=$SOURCE_DATE_EPOCH)"
echo "tarball  $out/$tarball (make dist twice: same sha256)"
echo "url      https://github.com/libgcoll/libgcoll/releases/download/v$version/$tarball"
echo "spack    version(\"$version\", sha256=\"$sha\")"
echo "eb       checksums = ['$sha']"
if [ "$update" = yes ]; then
    pkg=$top/contrib/spack/packages/libgcoll/package.py
    sed -i "s/^\(    version(\"$version\", sha256=\"\)[0-9a-f]*\")/\1$sha\")/" "$pkg"
    grep -q "sha256=\"$sha\"" "$pkg" || { echo "release.sh: no version(\"$version\", ...) line in $pkg" >&2; exit 1; }
    for eb in "$top"/contrib/easybuild/libgcoll-"$version"-*.eb; do
        sed -i "s/^checksums = \['[0-9a-f]*'\]/checksums = ['$sha']/" "$eb"
        grep -q "^checksums = \['$sha'\]" "$eb" || { echo "release.sh: no checksums line in $eb" >&2; exit 1; }
    done
    echo "updated  $pkg and contrib/easybuild/libgcoll-$version-*.eb"
fi
echo "sha256 $sha  $out/$tarball"
