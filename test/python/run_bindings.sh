#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The Python binding (bindings/python/gcoll) under mpirun at 1, 2, 3 and 4
# ranks, and 4 ranks as 2 simulated nodes: test_bindings.py compares every
# collective with mpi4py's MPI and a serial reference, test_compress.py the
# compressed allreduce (gcoll.Compressor) with a serial reference of the
# whole job; the latter also at 3 ranks as unequal nodes (2 + 1), where
# every rank compresses its whole tensor.  test_nonblocking.py checks the
# nonblocking and persistent collectives (gcoll.Request) the same way, also
# with GCOLL_PROGRESS=caller, where a request advances only inside libgcoll
# calls (so a dropped request's result is there only if its __del__ waited).
# test_mem.py checks gcoll.empty (arrays on gcoll_mem_alloc memory) and the
# zero-copy path the collectives take on them.  test_cai.py (1 and 2 ranks)
# checks the __cuda_array_interface__ parser with fake device arrays over
# host memory, which libgcoll serves on the host path.
# Uses the libgcoll of
# this build tree.  SKIP (77) without mpirun, or without a Python that has
# numpy and mpi4py (Debian: python3-numpy python3-mpi4py).
export MPIRUN=${MPIRUN:-mpirun}
srcdir=${srcdir:-.}
command -v "$MPIRUN" >/dev/null 2>&1 || { echo "SKIP: no $MPIRUN"; exit 77; }
lib=$(pwd)/.libs/libgcoll.so
[ -e "$lib" ] || { echo "ERROR: $lib not built"; exit 99; }
py=
for cand in "${PYTHON:-}" /usr/bin/python3 python3; do
    [ -n "$cand" ] && [ "$cand" != none ] || continue
    if "$cand" -c 'import numpy, mpi4py.MPI' >/dev/null 2>&1; then py=$cand; break; fi
done
[ -n "$py" ] || { echo "SKIP: no python3 with numpy and mpi4py (apt-get install python3-mpi4py)"; exit 77; }
LAUNCH=$(dirname "$0")/../launch.sh   # Open MPI's or MPICH's flags
exec 9>test/mpi/mpi-jobs.lock && flock 9
export GCOLL_LIBRARY=$lib PYTHONPATH=$srcdir/bindings/python${PYTHONPATH:+:$PYTHONPATH}
pass=0 fail=0
run() {   # run TEST NP [ENV=VALUE ...]
    local test=$1 np=$2; shift 2
    local env=(); for e in "$@"; do env+=(-x "$e"); done
    local out; out=$(timeout -k 10 300 "$LAUNCH" \
        -n "$np" "${env[@]}" "$py" "$srcdir/test/python/$test.py" 2>&1)
    local rc=$?
    if [ $rc = 0 ] && grep -q "ranks: ok" <<<"$out"; then
        echo "PASS: $test np=$np $* $(grep 'ranks: ok' <<<"$out")"; pass=$((pass + 1))
        grep '^NOTE' <<<"$out" | sort -u   # what a test could not check, and why
    else
        echo "FAIL: $test np=$np $* (exit $rc)"; tail -20 <<<"$out"; fail=$((fail + 1))
    fi
}
echo "python: $py ($("$py" -c 'import numpy, mpi4py; print("numpy", numpy.__version__, "mpi4py", mpi4py.__version__)'))"
for test in test_bindings test_compress test_nonblocking test_mem; do
    run $test 1
    run $test 2
    run $test 3
    run $test 4
    run $test 4 GCOLL_NODE_SIZE=2
done
run test_compress 3 GCOLL_NODE_SIZE=2
run test_cai 1
run test_cai 2
run test_nonblocking 2 GCOLL_PROGRESS=caller
run test_nonblocking 4 GCOLL_NODE_SIZE=2 GCOLL_PROGRESS=caller
echo "run_bindings.sh: $pass passed, $fail failed"
[ $fail = 0 ]
