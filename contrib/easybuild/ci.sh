#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# CI stage: EasyBuild, installed from PyPI, checks every easyconfig in
# contrib/easybuild (eb --check-contrib) and resolves its dependencies
# against EasyBuild's own 2023a easyconfigs (eb --dry-run --robot); then it
# installs libgcoll for real from the reproducible release tarball
# (scripts/release.sh), its checksum put in by eb --inject-checksums: the
# shipped libgcoll-<version>-gompi-2023a.eb with --try-toolchain=system,
# Debian's Open MPI, UCX and hwloc as external modules (ci/hooks.py, Lmod),
# no test step (make check runs in the main stage).  Then the module is
# loaded and gcoll_bench_allreduce -c runs on 2 ranks.
#
#   contrib/easybuild/ci.sh [WORKDIR]      (default: build/easybuild)
#
# Each step prints "PASS: easybuild: ..." or "FAIL: ..." and leaves an
# automake-style WORKDIR/results/<step>.trs, which test/summary.sh counts
# when WORKDIR is under the build folder it summarises.  Exit status 1 if a
# step failed.  Needs (scripts/install-deps.sh): lmod, python3-venv, MPI,
# UCX and hwloc development packages, network access to PyPI.
# EASYBUILD_VERSION (default 5.4.1) pins the EasyBuild release.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:-$top/build/easybuild}
ebver=${EASYBUILD_VERSION:-5.4.1}
rm -rf "$work" && mkdir -p "$work/results" || exit 1
work=$(cd "$work" && pwd)
failed=0
t0=$(date +%s)

result() {  # result STEP PASS|FAIL|SKIP WHAT
    echo "$2: easybuild: $3"
    printf ':test-result: %s\n:global-test-result: %s\n' "$2" "$2" > "$work/results/$1.trs"
    [ "$2" != FAIL ] || failed=$((failed + 1))
}
step() {  # step NAME WHAT COMMAND...: run COMMAND, its output in WORKDIR/NAME.log
    local name=$1 what=$2; shift 2
    if "$@" > "$work/$name.log" 2>&1; then result "$name" PASS "$what"; return 0; fi
    tail -n 30 "$work/$name.log" | sed 's/^/    /'
    result "$name" FAIL "$what (log: $work/$name.log)"
    return 1
}
skip_rest() {
    for s in "$@"; do result "$s" SKIP "$s: an earlier step failed"; done
    echo "easybuild stage: $failed failed, $(( $(date +%s) - t0 )) s"
    exit 1
}

# -- EasyBuild from PyPI, Lmod from Debian
lmod_init=/usr/share/lmod/lmod/init/bash
install_eb() {
    [ -r "$lmod_init" ] || { echo "Lmod not installed (apt-get install lmod)"; return 1; }
    /usr/bin/python3 -m venv "$work/venv" \
        && "$work/venv/bin/pip" install -q "easybuild==$ebver" pycodestyle \
        && "$work/venv/bin/eb" --version
}
# outside CI, a machine without Lmod or venv skips the stage
if [ "${CI:-}" != true ] && { [ ! -r "$lmod_init" ] || ! /usr/bin/python3 -c 'import venv, ensurepip' 2>/dev/null; }; then
    for s in install tarball resolve inject build module run; do
        result "$s" SKIP "$s: no Lmod or python3-venv here (scripts/install-deps.sh)"
    done
    exit 0
fi
PATH=$work/venv/bin:$PATH
step install "EasyBuild $ebver from PyPI, Lmod" install_eb \
    || skip_rest tarball resolve inject build module run
# shellcheck disable=SC1090
. "$lmod_init"

# -- the release tarball and its checksum, into EasyBuild's source path
version=$(sed -n 's/^AC_INIT(\[libgcoll\], *\[\([^]]*\)\].*/\1/p' "$top/configure.ac")
src=$work/sources/l/libgcoll
step tarball "scripts/release.sh: libgcoll-$version.tar.gz, reproducible" \
    "$top/scripts/release.sh" -o "$src" || skip_rest resolve inject build module run
sha=$(sed -n 's/^sha256 \([0-9a-f]*\) .*/\1/p' "$work/tarball.log")
echo "    sha256 $sha"
root_ok=
[ "$(id -u)" != 0 ] || root_ok=--allow-use-as-root-and-accept-consequences
export EASYBUILD_PREFIX=$work/eb EASYBUILD_SOURCEPATH=$work/sources \
    EASYBUILD_MODULES_TOOL=Lmod EASYBUILD_MODULE_SYNTAX=Lua EASYBUILD_TMPDIR=$work/tmp

# -- every shipped easyconfig: EasyBuild's style and checksum checks, and its
# dependencies resolve against EasyBuild's own 2023a easyconfigs (dry run)
resolve() {
    eb $root_ok --check-contrib "$top"/contrib/easybuild/*.eb || return
    for f in "$top"/contrib/easybuild/*.eb; do
        eb $root_ok --dry-run --robot "$f" | grep -F "module: libgcoll/$version-" || return
    done
}
step resolve "eb --check-contrib, eb --dry-run --robot: every easyconfig's dependencies exist" \
    resolve

# -- the tarball's checksum put in by EasyBuild itself; nothing else changes
mkdir -p "$work/ec"
ec=$work/ec/libgcoll-$version-gompi-2023a.eb
inject() {
    cp "$top/contrib/easybuild/libgcoll-$version-gompi-2023a.eb" "$ec" \
        && eb $root_ok --inject-checksums=sha256 --force "$ec" \
        && grep -qx "checksums = \['$sha'\]" "$ec" \
        && diff "$top/contrib/easybuild/libgcoll-$version-gompi-2023a.eb" "$ec" \
           | grep -c '^[<>]' | grep -qx 2
}
step inject "eb --inject-checksums=sha256 changes only the checksums line" inject \
    || skip_rest build module run

# -- Debian's Open MPI, UCX and hwloc as external modules
ver() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null | sed 's/-[^-]*$//; s/^[0-9]*://; s/+.*//'; }
mpi=OpenMPI/$(ver libopenmpi-dev) ucx=UCX/$(ver libucx-dev) hwloc=hwloc/$(ver libhwloc-dev)
mkdir -p "$work/modules"
: > "$work/external.ini"
for m in "$mpi" "$ucx" "$hwloc"; do
    mkdir -p "$work/modules/${m%/*}"
    {
        echo "-- Debian's ${m%/*} ${m#*/} (/usr), an external module for EasyBuild"
        [ "$m" = "$mpi" ] && printf 'setenv("MPICC", "mpicc")\nsetenv("MPIF90", "mpif90")\n'
    } > "$work/modules/$m.lua"
    printf '[%s]\nname = %s\nversion = %s\nprefix = /usr\n\n' "$m" "${m%/*}" "${m#*/}" \
        >> "$work/external.ini"
done
export GCOLL_EB_EXTERNAL="$mpi $ucx $hwloc"
export MODULEPATH=$work/modules:$work/eb/modules/all
# shellcheck disable=SC2086
step build "eb $(basename "$ec") --try-toolchain=system,system: build, install, sanity check" \
    eb "$ec" --try-toolchain=system,system --disable-map-toolchains \
    --hooks="$top/contrib/easybuild/ci/hooks.py" --external-modules-metadata="$work/external.ini" \
    --skip-test-step --disable-robot --parallel="${JOBS:-2}" $root_ok || skip_rest module run
modfile=$work/eb/modules/all/libgcoll/$version.lua
step module "module file libgcoll/$version written, module load" \
    bash -c "test -f '$modfile' && . '$lmod_init' && module load libgcoll/$version \
             && command -v gcoll_bench_allreduce | grep -q '^$work/eb/software/libgcoll/'" \
    || skip_rest run
step run "module load libgcoll/$version; mpirun -np 2 gcoll_bench_allreduce -c" \
    bash -c ". '$lmod_init' && module load libgcoll/$version && mpirun -np 2 gcoll_bench_allreduce -c"
echo "easybuild stage: $failed failed, $(( $(date +%s) - t0 )) s"
[ "$failed" = 0 ]
