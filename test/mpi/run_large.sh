#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Collectives beyond the 32-bit limits, one real run of each, all at 2 ranks
# with uint8 data: an allreduce of 2^31 + 3 MiB + 11 elements (more than an int
# counts; 2 GiB) and a bcast of 2^32 + 3 MiB + 9 (more than 4 GiB)
#   - in the simulator (test_sim_large: ring, binomial);
#   - through the node's shared memory (GCOLL_ALGO=...=shm, one node);
#   - over the transport, GCOLL_TRANSPORT=ucx and mpi, as 2 simulated nodes
#     of 1 (no shared segment), each payload in one message: rdouble forced,
#     binomial with a chunk beyond the buffer (GCOLL_TUNE).
# Every result is checked on a sample against values computed by the test
# (test/large_data.h), and the byte counters against the payload; the
# GCOLL_DEBUG=TRACE selection line must name the algorithm and its shape,
# and a job whose algorithm declined (a "using X instead" warning) fails.
#
# The jobs run one after another under the MPI jobs' lock: at most 8 GiB
# (the bcast's two 4 GiB buffers) at a time.  A job that needs more memory
# than is available is skipped, and says so.  Environment: MPIRUN,
# GCOLL_TEST_TIMEOUT (seconds per job, default 300).
set -u
MPIRUN=${MPIRUN:-mpirun}
JOB_TIMEOUT=${GCOLL_TEST_TIMEOUT:-300}
MPI_PROG=./test/mpi/test_large
SIM_PROG=./test/sim/test_sim_large
# 3 MiB beyond the limits, so pipelined algorithms start chunks there too
ELEMS=$(( (1 << 31) + (3 << 20) + 11 ))   # allreduce: > 2^31 elements
BYTES=$(( (1 << 32) + (3 << 20) + 9 ))    # bcast: > 4 GiB
for p in "$MPI_PROG" "$SIM_PROG"; do
    [ -x "$p" ] || { echo "ERROR: $p not built"; exit 99; }
done
have_mpirun=1; command -v "$MPIRUN" >/dev/null 2>&1 || have_mpirun=0
LAUNCH=$(dirname "$0")/../launch.sh   # Open MPI's or MPICH's flags
exec 9>test/mpi/mpi-jobs.lock && flock 9   # one MPI job at a time (2 cores, memory)
transports="mpi"
grep -q '^#define HAVE_UCX 1' gcoll_build.h 2>/dev/null && transports="ucx mpi"
passed=0 failed=0 skipped=0

# enough_memory BYTES: MemAvailable covers BYTES and 1 GiB more.
enough_memory() {
    local kb
    kb=$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo 2>/dev/null)
    [ -z "$kb" ] || [ $((kb * 1024)) -gt $(($1 + (1 << 30))) ]
}

# job LABEL NEED_BYTES PATTERN COMMAND...: one run, judged by its "ok" line
# and, unless PATTERN is empty, a line matching it (grep -E): the selection
# line of the algorithm that must have run.
job() {
    local label=$1 need=$2 pattern=$3 out rc t0 why=""
    shift 3
    if ! enough_memory "$need"; then
        echo "SKIP: $label: needs $((need >> 20)) MiB, $(awk '/^MemAvailable:/ { print int($2 / 1024) }' /proc/meminfo) MiB available"
        skipped=$((skipped + 1)); return
    fi
    out=$(mktemp)
    t0=$(date +%s)
    GCOLL_TIMEOUT=120 timeout -k 10 "$JOB_TIMEOUT" "$@" </dev/null >"$out" 2>&1
    rc=$?
    t0=$(($(date +%s) - t0))
    if [ $rc != 0 ] || ! grep -q '^test_\(sim_\)\?large: .*: ok ' "$out"; then why="exit $rc"
    elif grep -q '; using [a-z_0-9]* instead' "$out"; then why="the forced algorithm declined"
    elif [ -n "$pattern" ] && ! grep -Eq "$pattern" "$out"; then why="no line matches '$pattern'"
    fi
    if [ -z "$why" ]; then
        echo "PASS: $label ($t0 s): $(grep '^test_\(sim_\)\?large: ' "$out")"
        passed=$((passed + 1))
    else
        echo "FAIL: $label ($why, $t0 s)"
        echo "  | $*"
        grep -v ' TRACE \| INFO ' "$out" | head -n 40 | sed 's/^/  | /'
        failed=$((failed + 1))
    fi
    rm -f "$out"
}

mpi_job() {   # mpi_job LABEL NEED PATTERN ENV... -- ARGS...
    local label=$1 need=$2 pattern=$3 envs=()
    shift 3
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    job "$label" "$need" "$pattern" env "${envs[@]}" GCOLL_DEBUG=TRACE "$LAUNCH" \
        --mca btl ^openib -n 2 "$MPI_PROG" "$@"
}

# The simulator: messages of one chunk, so the two buffers are the memory.
job "sim allreduce/ring $ELEMS uint8" $((2 * ELEMS)) "" "$SIM_PROG" allreduce/ring $ELEMS
job "sim bcast/binomial $BYTES uint8" $((2 * BYTES)) "" "$SIM_PROG" bcast/binomial $BYTES
if [ $have_mpirun = 0 ]; then
    echo "SKIP: the MPI jobs: no $MPIRUN"; skipped=$((skipped + 1))
else
    # The node's segment: the whole collective is one NODE step, streamed
    # through the segment's slices.
    mpi_job "shm allreduce $ELEMS uint8" $((2 * ELEMS)) ": shm, 1 rounds" -u GCOLL_NODE_SIZE \
        -u GCOLL_TUNE GCOLL_ALGO=allreduce=shm -- allreduce $ELEMS
    mpi_job "shm bcast $BYTES uint8" $((2 * BYTES)) ": shm, 1 rounds" -u GCOLL_NODE_SIZE \
        -u GCOLL_TUNE GCOLL_ALGO=bcast=shm -- bcast $BYTES
    # The transport, in single messages beyond the limits: recursive doubling
    # exchanges the whole 2 GiB buffer (its scratch as large: 8 GiB in all),
    # and a binomial bcast whose chunk exceeds the buffer sends 4 GiB at once.
    for tl in $transports; do
        mpi_job "tl=$tl allreduce=rdouble $ELEMS uint8" $((4 * ELEMS)) ": rdouble, 1 rounds" \
            -u GCOLL_TUNE GCOLL_TRANSPORT=$tl GCOLL_NODE_SIZE=1 GCOLL_ALGO=allreduce=rdouble \
            -- allreduce $ELEMS
        mpi_job "tl=$tl bcast=binomial, one message, $BYTES uint8" $((2 * BYTES)) \
            ": binomial, 1 rounds, 1 steps" -u GCOLL_ALGO GCOLL_TRANSPORT=$tl GCOLL_NODE_SIZE=1 \
            'GCOLL_TUNE=bcast:host:*:*:*:binomial:chunk=8G' -- bcast $BYTES
    done
fi
echo "run_large.sh: $passed passed, $failed failed, $skipped skipped"
[ $failed = 0 ] || exit 1
[ $passed -gt 0 ] || exit 77
exit 0
