#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# CI leg: the thread model under ThreadSanitizer.  scripts/tsan_check.sh
# builds libgcoll with -fsanitize=thread in BUILD_DIR/build and runs
# test/mpi/run_threads.sh there over both transports (threads creating
# communicators and running collectives at once); it passes only if the
# tests pass and TSan reports nothing outside test/mpi/tsan.supp.
#
#   test/ci/tsan.sh [BUILD_DIR]         (default ./build/tsan)
#
# One result, BUILD_DIR/results/tsan.trs, which .ci/run's summary counts.
# Prints "N passed, N failed, N skipped" of this leg last; exit 1 if it failed.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=test/ci/lib.sh
. "$top/test/ci/lib.sh"
build=${1:-$top/build/tsan}

leg_init "$build" || exit 1
# shellcheck disable=SC2154  # leg_dir: set by leg_init (test/ci/lib.sh)
cd "$leg_dir" || exit 1
rm -rf results
echo "== ThreadSanitizer leg in $leg_dir"
if "$top/scripts/tsan_check.sh" "$leg_dir/build" </dev/null >tsan.log 2>&1; then
    result=PASS
else
    result=FAIL
fi
cat tsan.log
leg_record results "tsan_check" "$result" "$(cat tsan.log)"
echo "$result: scripts/tsan_check.sh"
echo "== ThreadSanitizer leg:"
"$top/test/summary.sh" "$leg_dir" 0
