#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# PyTorch DDP with gcoll.torch's communication hooks (test_ddp.py) under
# mpirun at 4 ranks as 2 simulated nodes (GCOLL_NODE_SIZE=2): 200 steps of
# examples/ddp_compressed.py's MLP with DDP's own allreduce and with the
# exact, bf16, topk and onebit hooks; topk's and onebit's loss within 10% of
# exact's, exact's equal to DDP's own.  About 20 s on 2 cores.
#
# The python: the first of $PYTHON_TORCH, $GCOLL_TORCH_VENV/bin/python3
# (default /opt/gcoll-torch/bin/python3), $PYTHON, /usr/bin/python3,
# python3 that imports numpy, mpi4py and torch.  torch comes from PyPI, in a
# venv that sees Debian's numpy and mpi4py (built against the system MPI,
# which libgcoll uses too):
#     python3 -m venv --system-site-packages /opt/gcoll-torch
#     /opt/gcoll-torch/bin/pip install --no-cache-dir torch
# (PyPI's default wheel, with its CUDA libraries: about 3 GB to download
# and 5.3 GB installed, 50 s here.)  SKIP (77) without mpirun, without a
# python that has numpy and mpi4py, or without one that also has torch.
export MPIRUN=${MPIRUN:-mpirun}
srcdir=${srcdir:-.}
command -v "$MPIRUN" >/dev/null 2>&1 || { echo "SKIP: no $MPIRUN"; exit 77; }
lib=$(pwd)/.libs/libgcoll.so
[ -e "$lib" ] || { echo "ERROR: $lib not built"; exit 99; }
venv=${GCOLL_TORCH_VENV:-/opt/gcoll-torch}
py='' base=''
for cand in "${PYTHON_TORCH:-}" "$venv/bin/python3" "${PYTHON:-}" /usr/bin/python3 python3; do
    if [ -z "$cand" ] || [ "$cand" = none ]; then continue; fi
    command -v "$cand" >/dev/null 2>&1 || continue
    "$cand" -c 'import numpy, mpi4py.MPI' >/dev/null 2>&1 || continue
    base=${base:-$cand}
    if "$cand" -c 'import torch' >/dev/null 2>&1; then py=$cand; break; fi
done
[ -n "$base" ] || { echo "SKIP: no python3 with numpy and mpi4py (apt-get install python3-mpi4py)"; exit 77; }
if [ -z "$py" ]; then
    echo "SKIP: no python3 with torch, numpy and mpi4py (looked at \$PYTHON_TORCH," \
         "$venv/bin/python3, \$PYTHON, /usr/bin/python3, python3): install torch with" \
         "'python3 -m venv --system-site-packages $venv && $venv/bin/pip install --no-cache-dir torch'"
    exit 77
fi
LAUNCH=$(dirname "$0")/../launch.sh   # Open MPI's or MPICH's flags
exec 9>test/mpi/mpi-jobs.lock && flock 9
export GCOLL_LIBRARY=$lib PYTHONPATH=$srcdir/bindings/python${PYTHONPATH:+:$PYTHONPATH}
echo "python: $py ($("$py" -c 'import numpy, mpi4py, torch; print("torch", torch.__version__, "numpy", numpy.__version__, "mpi4py", mpi4py.__version__)' 2>&1))"
out=$(timeout -k 10 300 "$LAUNCH" -n 4 \
    -x GCOLL_NODE_SIZE=2 ${TEST_DDP_ARGS:+-x TEST_DDP_ARGS} "$py" "$srcdir/test/python/test_ddp.py" 2>&1)
rc=$?
if [ $rc = 0 ] && grep -q "ranks: ok" <<<"$out"; then
    grep -v '^test_ddp:' <<<"$out" | grep -E '^(losses|  )'
    echo "PASS: test_ddp np=4 GCOLL_NODE_SIZE=2 $(grep 'ranks: ok' <<<"$out")"
    echo "run_ddp.sh: 1 passed, 0 failed"
    exit 0
fi
echo "FAIL: test_ddp np=4 GCOLL_NODE_SIZE=2 (exit $rc)"; tail -30 <<<"$out"
echo "run_ddp.sh: 0 passed, 1 failed"
exit 1
