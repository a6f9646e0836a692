#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# ThreadSanitizer check of the thread model: build libgcoll with
# -fsanitize=thread in its own directory and run test/mpi/run_threads.sh
# there (threads creating communicators and running collectives at once,
# both transports).  Passes only if the tests pass and TSan reports nothing
# outside test/mpi/tsan.supp (the MPI library's and UCX's internals, and
# one documented false positive).
#   scripts/tsan_check.sh [BUILD_DIR]     (default ./build-tsan)
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build-tsan}
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
mkdir -p "$build" && cd "$build" || exit 1
if [ ! -f Makefile ]; then
    echo "== configure (ThreadSanitizer) in $build"
    "$top/configure" CFLAGS="-fsanitize=thread -g -O1" LDFLAGS="-fsanitize=thread" \
        >configure.log 2>&1 || { tail -20 configure.log; exit 1; }
fi
echo "== make"
make -j"${JOBS:-2}" >make.log 2>&1 &&
    make -j"${JOBS:-2}" test/mpi/test_threads test/mpi/test_nonblocking >>make.log 2>&1 ||
    { tail -30 make.log; exit 1; }
export TSAN_OPTIONS="suppressions=$top/test/mpi/tsan.supp report_signal_unsafe=0 exitcode=66"
export UCX_MEM_EVENTS=no   # UCX's memory hooks crash under TSan as threads exit
status=0
# judge LOG RC SUMMARY [MUST_SAY]: print the log's SUMMARY lines; fail on a
# non-zero exit, any ThreadSanitizer report, or a log without MUST_SAY.
judge() {
    local log=$1 rc=$2 n
    grep "$3" "$log"
    n=$(grep -c "WARNING: ThreadSanitizer" "$log")
    if [ "$rc" != 0 ] || [ "$n" != 0 ] || { [ -n "${4:-}" ] && ! grep -q "$4" "$log"; }; then
        # shellcheck disable=SC2016  # the quotes are literal inside the double quotes
        echo "FAIL: exit $rc, $n ThreadSanitizer report(s)${4:+, or the log never said '$4'}:"
        grep -A20 "WARNING: ThreadSanitizer" "$log" | head -60
        tail -5 "$log"
        status=1
    fi
}
for tl in mpi ucx; do
    echo "== GCOLL_TRANSPORT=$tl"
    GCOLL_TRANSPORT=$tl "$top/test/mpi/run_threads.sh" >"threads-$tl.log" 2>&1
    judge "threads-$tl.log" $? "test_threads:"
done
# One application thread beside the progress thread: the caller-biased lock
# (engine.c), whose two sides TSan sees through the flags' release stores and
# acquire loads (the membarrier that orders them is invisible to it).
if grep -q '^#define HAVE_UCX 1' gcoll_build.h 2>/dev/null; then
    for mode in many background; do
        echo "== caller-biased lock: test_nonblocking $mode"
        GCOLL_TEST_MPI_THREAD=serialized GCOLL_TRANSPORT=ucx GCOLL_PROGRESS=thread GCOLL_DEBUG=INFO \
            timeout -k 10 600 "$top/test/launch.sh" -x GCOLL_TEST_MPI_THREAD -x GCOLL_TRANSPORT \
            -x GCOLL_PROGRESS -x GCOLL_DEBUG -x TSAN_OPTIONS -x UCX_MEM_EVENTS -np 2 \
            test/mpi/test_nonblocking $mode >"biased-$mode.log" 2>&1
        judge "biased-$mode.log" $? "checks," "caller-biased lock"
    done
fi
[ $status = 0 ] && echo "== ThreadSanitizer: clean"
exit $status
