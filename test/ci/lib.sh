# SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=bash
# Helpers of the CI legs, sourced by test/run_all.sh (the Open MPI leg),
# test/ci/mpich.sh and test/ci/asan.sh.  Each leg builds libgcoll in a build
# directory of its own and runs make check there.  What a leg counts is a
# .trs file under its directory, read by test/summary.sh: the tests' own,
# and two kinds more, so that a summary over a directory above the legs
# (.ci/run's last line) counts everything:
#   stages/N-NAME.trs     FAIL: a stage that failed (configure, make, a
#                         missing dependency, a make check that broke
#                         without a failed test), what failed in N-NAME.log
#   excluded/NAME.trs     SKIP: a test this leg cannot run, the reason in
#                         NAME.log (and printed)
# bash only.

# leg_init DIR: the leg's records start afresh in DIR (created)
leg_init() {
    mkdir -p "$1" || return 1
    leg_dir=$(cd "$1" && pwd) || return 1
    leg_n=0
    rm -rf "$leg_dir/stages" "$leg_dir/excluded"
}

# leg_record KIND NAME RESULT TEXT: KIND/N-NAME.trs with RESULT, TEXT in its .log
leg_record() {
    local name
    leg_n=$((leg_n + 1))
    name=$(printf '%s' "$2" | tr -c 'A-Za-z0-9._-' '_' | cut -c1-60)
    [ "$1" = stages ] && name=$leg_n-$name
    mkdir -p "$leg_dir/$1" || return 1
    printf '%s\n' "$4" >"$leg_dir/$1/$name.log"
    printf ':test-result: %s\n:global-test-result: %s\n' "$3" "$3" >"$leg_dir/$1/$name.trs"
}

# stage CMD...: run it; a failure is printed and recorded as stages/N-CMD.trs
stage() {
    echo "== $*"
    "$@" && return 0
    echo "== FAILED: $*"
    leg_record stages "$(basename "$1")" FAIL "failed: $*"
    return 1
}

# stage_fail NAME TEXT: a failure that is not a command's exit status
stage_fail() {
    echo "== FAILED: $1: $2"
    leg_record stages "$1" FAIL "$2"
}

# leg_exclude TEST REASON: TEST is not run in this leg; says so and counts a SKIP
leg_exclude() {
    echo "   excluded: $1: $2"
    leg_record excluded "$1" SKIP "$1 not run in this leg: $2"
}

# leg_tests: the TESTS of the Makefile in the current directory, one a line
leg_tests() {
    printf 'gcoll-leg-tests:\n\t@echo $(TESTS)\n' | make -s -f Makefile -f - gcoll-leg-tests | tr ' ' '\n' | grep .
}

# leg_only LIST TEST...: the TESTs that LIST (words) names, or all of them
# when LIST is empty; what LIST leaves out is printed
leg_only() {
    local list=$1 t
    shift
    if [ -z "$list" ]; then printf '%s\n' "$@"; return; fi
    for t in "$@"; do
        case " $list " in
            *" $t "*) echo "$t" ;;
            *) echo "   not selected: $t" >&2 ;;
        esac
    done
}

# leg_configure_and_build CONFIGURE-ARGS...: in the current directory (the
# leg's build directory): configure (once: a Makefile there is kept), make,
# and the check programs, in parallel ($JOBS, default 2)
leg_configure_and_build() {
    local top jobs=${JOBS:-2}
    top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
    if [ ! -x "$top/configure" ]; then (cd "$top" && stage ./autogen.sh) || return; fi
    if [ ! -f Makefile ]; then stage "$top/configure" "$@" || return; fi
    stage make -j"$jobs" || return
    stage make -j"$jobs" check TESTS= || return
}

# leg_check TEST...: make check of those tests (one at a time: most are MPI
# jobs, serialised by their lock anyway); earlier results of this directory
# are removed first, since make check replaces only those of the tests it
# runs.  A make check that failed without a failed test counts as a failure.
leg_check() {
    [ -d test ] && find test \( -name '*.trs' -o -name '*.log' \) -exec rm -f {} +
    echo "== make check VERBOSE=1 TESTS=<$# tests>"
    make check VERBOSE=1 TESTS="$*" && return 0
    if ! find . -name '*.trs' -exec grep -qE '^:test-result: (FAIL|ERROR|XPASS)' {} \; -print | grep -q .; then
        stage_fail "make-check" "make check failed, no failed test recorded"
    fi
}
