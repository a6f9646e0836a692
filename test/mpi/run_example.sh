#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The README's example runs and prints the right sum on 1, 3 and 4 ranks;
# the compressed SGD example converges on 2 simulated nodes of 2 (it exits 1
# if the loss did not fall a thousandfold).
prog=./examples/allreduce_hello
export MPIRUN=${MPIRUN:-mpirun}
command -v "$MPIRUN" >/dev/null 2>&1 || { echo "SKIP: no $MPIRUN"; exit 77; }
[ -x "$prog" ] || { echo "ERROR: $prog not built"; exit 99; }
LAUNCH=$(dirname "$0")/../launch.sh   # Open MPI's or MPICH's flags
exec 9>test/mpi/mpi-jobs.lock && flock 9
status=0
for np in 1 3 4; do
    timeout -k 10 120 "$LAUNCH" -n "$np" "$prog" || status=1
done
GCOLL_NODE_SIZE=2 timeout -k 10 120 "$LAUNCH" -n 4 ./examples/compressed_sgd || status=1
exit $status
