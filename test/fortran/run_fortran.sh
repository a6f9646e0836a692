#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The Fortran binding (module gcoll, libgcoll_f08) under mpirun at 1, 2, 3 and
# 4 ranks, and 4 ranks as 2 simulated nodes: test_bindings.F90 compares every
# collective with mpi_f08's own, bit for bit (blocking, nonblocking and
# persistent forms; once more with GCOLL_PROGRESS=caller), and checks the
# constants, the stats counters and bad input.  Uses the libraries of this
# build tree; run from the top build directory (make check does).  SKIP (77) without mpirun
# or when the binding was not built (configure found no Fortran compiler that
# can use mpi_f08: see its "Fortran binding" line, --enable-fortran, MPIFC).
export MPIRUN=${MPIRUN:-mpirun}
prog=test/fortran/test_bindings
command -v "$MPIRUN" >/dev/null 2>&1 || { echo "SKIP: no $MPIRUN"; exit 77; }
[ -x "$prog" ] || { echo "SKIP: Fortran binding not built ($prog missing: configure found no Fortran compiler that can use mpi_f08; try MPIFC=mpif90 --enable-fortran)"; exit 77; }
LAUNCH=$(dirname "$0")/../launch.sh   # Open MPI's or MPICH's flags
mkdir -p test/mpi && exec 9>test/mpi/mpi-jobs.lock && flock 9
export GCOLL_TIMEOUT=${GCOLL_TIMEOUT:-120}   # a hang names the peers it waited for
pass=0 fail=0
run() {   # run NP [ENV=VALUE ...]
    local np=$1; shift
    local env=(-x GCOLL_TIMEOUT); for e in "$@"; do env+=(-x "$e"); done
    local out; out=$(timeout -k 10 300 "$LAUNCH" -n "$np" "${env[@]}" "$prog" 2>&1)
    local rc=$?
    if [ $rc = 0 ] && grep -q "ranks: ok" <<<"$out"; then
        echo "PASS: np=$np $* $(grep 'ranks: ok' <<<"$out")"; pass=$((pass + 1))
    else
        echo "FAIL: np=$np $* (exit $rc)"; grep -m 20 "^FAIL rank" <<<"$out"; tail -12 <<<"$out"
        fail=$((fail + 1))
    fi
}
run 1
run 2
run 3
run 4
run 4 GCOLL_NODE_SIZE=2
run 2 GCOLL_PROGRESS=caller   # requests advance only inside gcoll_test/gcoll_wait
echo "run_fortran.sh: $pass passed, $fail failed"
[ $fail = 0 ]
