#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Build libgcoll from scratch in ./build (VPATH) and run the whole test suite:
#   ./autogen.sh (if needed) && ../configure && make -j2 && make check
# (CI's Open MPI leg; .ci/run runs the others after it).
# The last line printed is test/summary.sh's "N passed, N failed, N skipped",
# whatever failed before it; exit status 1 if anything failed.  A stage that
# failed (configure, make, ...) is counted there as a failed test, recorded
# as build/stages/*.trs (test/ci/lib.sh).
#
# Every optional part is required, so that a dependency that went missing
# fails here instead of turning tests into SKIPs: configure --with-ucx
# --with-hwloc --enable-fortran --enable-python PYTHON=$PYTHON (default
# /usr/bin/python3, which must import numpy and mpi4py, or the Python tests
# would skip).  CUDA stays auto-detected (CI has no GPU).
#
# Environment: BUILD_DIR (default ./build), JOBS (default 2),
# CONFIGURE_FLAGS (extra configure arguments, split on spaces), PYTHON,
# GCOLL_REQUIRE_ALL=no (plain configure: every part auto-detected).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$top/build}
jobs=${JOBS:-2}
# mpirun refuses root without these; several tests run more ranks than cores.
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export OMPI_MCA_rmaps_base_oversubscribe=1
# shellcheck source=test/ci/lib.sh
. "$top/test/ci/lib.sh"     # stage, stage_fail: failures recorded as .trs

required=()
if [ "${GCOLL_REQUIRE_ALL:-yes}" != no ]; then
    py=${PYTHON:-/usr/bin/python3}
    [ -x "$py" ] || py=$(command -v python3)
    required=(--with-ucx --with-hwloc --enable-fortran --enable-python "PYTHON=$py")
fi

# The Python tests need numpy and mpi4py in that Python (not configure's
# business: the binding installs without them).
python_test_deps() {
    "$py" -c 'import numpy, mpi4py.MPI; print("test deps:", "numpy", numpy.__version__, "mpi4py", mpi4py.__version__)'
}

# Tests run one at a time: most are MPI jobs and the reference machine has 2
# cores.  Check programs are compiled in parallel first.
build_and_check() {
    cd "$top" || return
    if [ ! -x configure ]; then stage ./autogen.sh || return; fi
    cd "$build" || return
    if [ ${#required[@]} -gt 0 ]; then stage python_test_deps || return; fi
    # shellcheck disable=SC2086  # CONFIGURE_FLAGS is a list of words
    if [ ! -f Makefile ]; then stage "$top/configure" "${required[@]}" ${CONFIGURE_FLAGS:-} || return; fi
    stage make -j"$jobs" || return
    stage make -j"$jobs" check TESTS= || return
    echo "== make check VERBOSE=1"
    make check VERBOSE=1 && return 0
    # A failing test shows in its .trs; a make check that failed otherwise
    # (a test script missing, the harness broken) must still count.
    if ! find . -name '*.trs' -exec grep -qE '^:test-result: (FAIL|ERROR|XPASS)' {} \; -print | grep -q .; then
        stage_fail make-check "make check failed, no failed test recorded"
    fi
}

leg_init "$build" || { echo "cannot create $build"; echo "0 passed, 1 failed, 0 skipped"; exit 1; }
build_and_check </dev/null
"$top/test/summary.sh" "$build" 0
