#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# CI leg: libgcoll built against MPICH and its tests run under MPICH's
# mpiexec (hydra), in a build directory of its own.
#
#   test/ci/mpich.sh [BUILD_DIR]        (default ./build/mpich)
#
# MPICH, mpi4py and NumPy come from PyPI into the venv $GCOLL_MPICH_VENV
# (default $GCOLL_PEERS_DIR/mpich, i.e. /opt/gcoll-peers/mpich: the one
# scripts/peers_report.sh installs and uses), created when missing.
#
# Configured with hard requirements, as the Open MPI leg: --with-ucx
# --with-hwloc --enable-python; a missing one fails the leg.  UCX: MPICH's
# wheel carries its own UCX (libraries only, no headers) and a process holds
# one UCX, so libgcoll links that copy (a ucx.pc in BUILD_DIR says where),
# compiled with Debian's UCX headers (libucx-dev: an older API, which the
# newer library serves).  Python: the venv's mpi4py (PyPI's wheel, which
# runs on MPICH) and NumPy.
#
# Runs every test of make check but these, each printed with its reason and
# counted as a SKIP:
#   test/fortran/run_fortran.sh  the wheel has no Fortran wrapper or mpi_f08
#                                module (configured --disable-fortran)
#   test/python/run_ddp.sh       torch lives in /opt/gcoll-torch beside
#                                Debian's mpi4py, built for Open MPI
# and leaves these two to the Open MPI leg, to keep CI inside its time (they
# are printed, not counted: they do run, in that leg):
#   test/mpi/run_coll_algos.sh   every algorithm forced in turn (7 min): the
#                                flat and nodes suites exercise both
#                                transports over MPICH already
#   test/mpi/run_large.sh        2^31 elements / 4 GiB (3 min)
# CUDA is not built here (--without-cuda; the Open MPI leg builds it).
# Prints "N passed, N failed, N skipped" of this leg last; exit 1 if
# anything failed.  Environment: JOBS (make -j, default 2), GCOLL_MPICH_VENV,
# GCOLL_CI_MPICH_TESTS="TEST ..." (only those tests).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=test/ci/lib.sh
. "$top/test/ci/lib.sh"
build=${1:-$top/build/mpich}
venv=${GCOLL_MPICH_VENV:-${GCOLL_PEERS_DIR:-/opt/gcoll-peers}/mpich}
PY=/usr/bin/python3; [ -x "$PY" ] || PY=python3

leg_init "$build" || exit 1
# shellcheck disable=SC2154  # leg_dir: set by leg_init (test/ci/lib.sh)
cd "$leg_dir" || exit 1
echo "== MPICH leg in $leg_dir, MPICH from $venv"

# As scripts/peers_report.sh installs it (plus mpi4py and NumPy).
install_mpich() {
    if ! { [ -x "$venv/bin/mpicc" ] && [ -x "$venv/bin/mpiexec" ]; }; then
        { [ -x "$venv/bin/pip" ] || "$PY" -m venv "$venv"; } &&
            "$venv/bin/pip" install --quiet mpich || return 1
    fi
    if ! "$venv/bin/python3" -c 'import numpy, mpi4py' 2>/dev/null; then
        "$venv/bin/pip" install --quiet mpi4py numpy || return 1
    fi
    "$venv/bin/mpichversion" | head -n 1
}

# mpi4py must be the MPICH one, or the Python tests would test nothing.
check_mpi4py() {
    "$venv/bin/python3" -c '
import numpy, mpi4py
from mpi4py import MPI
v = MPI.Get_library_version().split("\n")[0]
print("mpi4py", mpi4py.__version__, "numpy", numpy.__version__, "on", v)
assert "MPICH" in v, "mpi4py does not run on MPICH"'
}

# ucx.pc: MPICH's bundled UCX libraries, Debian's headers (in the default path).
write_ucx_pc() {
    local lib=$venv/lib/mpich
    [ -e "$lib/libucp.so.0" ] && [ -e "$lib/libucs.so.0" ] || {
        echo "no UCX in MPICH's wheel ($lib/libucp.so.0)"; return 1; }
    mkdir -p pkgconfig &&
        printf '%s\n' "Name: ucx" "Description: the UCX of MPICH's wheel, with Debian's headers" \
            "Version: $(grep -ao 'ucx-[0-9][0-9.]*[0-9]' "$lib/libucp.so.0" | head -n 1 | cut -c5-)" "Cflags:" \
            "Libs: -L$lib -Wl,-rpath,$lib -l:libucp.so.0 -l:libucs.so.0" >pkgconfig/ucx.pc
}

build_and_check() {
    stage install_mpich || return
    stage check_mpi4py || return
    stage write_ucx_pc || return
    leg_configure_and_build CC="$venv/bin/mpicc" --with-mpi="$venv" \
        PKG_CONFIG_PATH="$leg_dir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}" \
        --with-ucx --with-hwloc --without-cuda --disable-fortran \
        --enable-python PYTHON="$venv/bin/python3" || return
    grep -q '^#define GCOLL_MPI_FLAVOUR "MPICH"' gcoll_build.h ||
        { stage_fail configure "not configured with MPICH (gcoll_build.h)"; return 1; }
    local mpirun
    mpirun=$(sed -n 's/^MPIRUN = //p' Makefile | head -n 1)
    [ "$(MPIRUN=$mpirun "$top/test/launch.sh" --flavour)" = mpich ] ||
        { stage_fail configure "the configured launcher $mpirun is not MPICH's"; return 1; }

    local tests=() t
    echo "== tests of this leg (launcher $mpirun)"
    leg_exclude test/fortran/run_fortran.sh \
        "MPICH's PyPI wheel has no Fortran wrapper or mpi_f08 module (configured --disable-fortran)"
    leg_exclude test/python/run_ddp.sh \
        "torch is installed beside Debian's mpi4py, which is built for Open MPI"
    for t in $(leg_tests); do
        case $t in
        test/fortran/run_fortran.sh|test/python/run_ddp.sh) ;;
        test/mpi/run_coll_algos.sh|test/mpi/run_large.sh)
            echo "   left to the Open MPI leg (CI time): $t" ;;
        *) tests+=("$t") ;;
        esac
    done
    mapfile -t tests < <(leg_only "${GCOLL_CI_MPICH_TESTS:-}" "${tests[@]}")
    leg_check "${tests[@]}"
}

build_and_check </dev/null
echo "== MPICH leg:"
"$top/test/summary.sh" "$leg_dir" 0
