#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Summarise an automake test run from its .trs files (one ":test-result:"
# line per result; PASS/XFAIL count as passed, FAIL/ERROR/XPASS as failed,
# SKIP as skipped).  The last line printed is exactly
#     N passed, N failed, N skipped
#
#   summary.sh [BUILD_DIR [EXTRA_FAILED]]
#
# EXTRA_FAILED adds failures the .trs files cannot show (a build stage that
# failed before the tests ran).  Exit status 1 if anything failed.
set -u
build=${1:-.}
extra=${2:-0}

results=$(cd "$build" 2>/dev/null && find . -name '*.trs' -type f -exec awk '
    /^:test-result:/ { name = FILENAME; sub(/\.trs$/, "", name); sub(/^\.\//, "", name); print $2, name }' {} +)

count() {
    [ -n "$results" ] || { echo 0; return; }
    grep -cE "^($1) " <<<"$results"
}

passed=$(count 'PASS|XFAIL')
failed=$(count 'FAIL|ERROR|XPASS')
skipped=$(count 'SKIP')

if [ -n "$results" ]; then
    grep -E '^(FAIL|ERROR|XPASS|SKIP) ' <<<"$results" | sort | sed 's/^/  /'
fi
failed=$((failed + extra))
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
