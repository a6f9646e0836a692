#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The GPU checks in one command, for a machine with an NVIDIA GPU and no
# network (the project's lent H200): build libgcoll with CUDA from a source
# tarball, run the device tests, and benchmark allreduce on device buffers.
#
#   scripts/gpu_check.sh --prepare    here, beforehand (network, autotools):
#                                     writes .gpu/ (ignored by git): the
#                                     `make dist` tarball, and the MPICH
#                                     wheel from PyPI (a relocatable MPI,
#                                     for machines without one)
#   scripts/gpu_check.sh [OUT_DIR]    there, with .gpu/ beside the tree:
#                                     build, test, bench; logs to OUT_DIR
#
# On the device tool: run(command="bash scripts/gpu_check.sh $OUT",
# carry=[".gpu"], timeout_s=540).  Steps print as they go; each step's log
# is in OUT_DIR.  Exit 0 only if every test passed.  Without a GPU the tests
# say SKIP (so it can be rehearsed on any machine).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
gpu=$top/.gpu

prepare() {
    set -e
    mkdir -p "$gpu"
    cd "$top"
    [ -x configure ] || ./autogen.sh
    mkdir -p build && cd build
    [ -f Makefile ] || ../configure
    rm -f "$gpu"/libgcoll-*.tar.gz   # one tarball: the tree as it is now
    make -s dist-gzip >/dev/null
    mv -f libgcoll-*.tar.gz "$gpu/"
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
        --implementation cp --platform manylinux_2_28_x86_64 -d "$gpu" mpich
    ls -l "$gpu"
}

if [ "${1:-}" = --prepare ]; then prepare; exit $?; fi

out=${1:-$top/gpu-results}
mkdir -p "$out"
step() { echo "== $(date +%T) $*"; }

main() {
t0=$(date +%s)
step "machine"
nvidia-smi -L 2>&1 || echo "nvidia-smi: none"
echo "$(nproc) CPUs, kernel $(uname -r)"
# With a GPU in the machine, a test that says SKIP is a failure.
if nvidia-smi -L 2>/dev/null | grep -q "^GPU"; then gpu_here=1; else gpu_here=0; fi

# MPI: MPICH unpacked from the carried wheel (the GPU machine has no MPI of
# its own; here it rehearses the same path), else the system's mpicc.
whl=$(ls "$gpu"/mpich-*.whl 2>/dev/null | head -n 1)
extra_configure=
if [ -n "$whl" ]; then
    rm -rf /tmp/gcoll-mpich && mkdir -p /tmp/gcoll-mpich
    (cd /tmp/gcoll-mpich && python3 -m zipfile -e "$whl" .)
    prefix=$(ls -d /tmp/gcoll-mpich/mpich-*.data/data)
    chmod +x "$prefix"/bin/* 2>/dev/null
    export PATH=$prefix/bin:$PATH LD_LIBRARY_PATH=$prefix/lib:${LD_LIBRARY_PATH:-}
    MPICC=$prefix/bin/mpicc
    # that MPICH carries its own UCX: a second one in the process would clash
    extra_configure=--without-ucx
elif command -v mpicc >/dev/null 2>&1; then
    MPICC=$(command -v mpicc)
else
    echo "no .gpu/mpich-*.whl and no mpicc: run scripts/gpu_check.sh --prepare first"; return 2
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
step "MPI: $MPICC ($("$MPICC" -show 2>/dev/null | cut -c1-60 || true))"

step "build (configure --with-cuda, make -j$(nproc))"
tarball=$(ls "$gpu"/libgcoll-*.tar.gz 2>/dev/null | head -n 1)
[ -n "$tarball" ] || { echo "no .gpu/libgcoll-*.tar.gz: run --prepare first"; return 2; }
src=/tmp/gcoll-src
rm -rf "$src" && mkdir -p "$src" && tar -xzf "$tarball" -C "$src" --strip-components=1
for d in include libgcoll test/cuda bench; do
    if ! diff -rq "$top/$d" "$src/$d" >/dev/null 2>&1; then
        echo "$tarball differs from the tree in $d/: run scripts/gpu_check.sh --prepare again"
        return 2
    fi
done
cd "$src"
if ! { ./configure CC="$MPICC" --with-cuda=/usr/local/cuda $extra_configure >"$out/build.log" 2>&1 &&
       make -j"$(nproc)" >>"$out/build.log" 2>&1 &&
       make -j"$(nproc)" test/cuda/test_cuda_kernels test/cuda/test_cuda_allreduce \
           test/cuda/test_codec_kernels bench/gcoll_bench_cuda_reduce \
           >>"$out/build.log" 2>&1; }; then
    echo "build FAILED:"; tail -n 40 "$out/build.log"; return 1
fi
grep -A6 "configuration summary" "$out/build.log"

failed=0
verdict() {   # exit status of a test: 0 passed, 77 skipped (a failure with a GPU here)
    [ "$1" = 0 ] || { [ "$1" = 77 ] && [ $gpu_here = 0 ]; } || failed=1
}
step "device kernels vs host kernels (test_cuda_kernels)"
./test/cuda/test_cuda_kernels 2>&1 | tail -n 45
verdict "${PIPESTATUS[0]}"

step "device codec kernels vs host codecs (test_codec_kernels)"
# one line per case: show the failing ones and the summary (the full log
# stays on the machine: at most 8 files come back, see the end)
codec_log=$(mktemp)
./test/cuda/test_codec_kernels >"$codec_log" 2>&1
codec_rc=$?
grep -v '^ok ' "$codec_log" | head -n 60
echo "($(grep -c '^ok ' "$codec_log") cases ok)"
verdict $codec_rc
rm -f "$codec_log"

step "device-buffer allreduce vs MPI (run_cuda.sh)"
MPIRUN=mpirun ./test/cuda/run_cuda.sh
verdict $?

step "Python binding with CuPy arrays (test_cuda_arrays.py, 1 and 2 ranks)"
if ! why=$(python3 -c "from mpi4py import MPI; import cupy" 2>&1); then
    echo "SKIP (not counted): python3 cannot import mpi4py with this MPI, or CuPy: ${why##*$'\n'}"
else
    for np in 1 2; do
        GCOLL_LIBRARY=$PWD/.libs/libgcoll.so PYTHONPATH=$PWD/bindings/python \
            timeout 300 mpirun -n "$np" python3 test/python/test_cuda_arrays.py 2>&1 | tail -n 25
        verdict "${PIPESTATUS[0]}"
    done
fi

step "benchmark: device reduction kernels vs cudaMemcpy (gcoll_bench_cuda_reduce)"
for t in float32 bfloat16; do
    timeout 120 ./bench/gcoll_bench_cuda_reduce -m 1M:1G -T $t --csv "$out/kernels-$t.csv"
done

step "benchmark: allreduce on device buffers, 1 / 2 / 4 ranks on the GPU"
for np in 1 2 4; do
    timeout 120 mpirun -n "$np" ./bench/gcoll_bench_allreduce -d cuda --impl gcoll -m 8:256M \
        --csv "$out/bench-cuda-np$np.csv"
done
step "done in $(( $(date +%s) - t0 )) s; tests $( [ $failed = 0 ] && echo passed || echo FAILED)"
return $failed
}

# At most 8 files come back from the device tool: gpu_check.log (everything
# printed), build.log (configure and make), and five CSVs.
main 2>&1 | tee "$out/gpu_check.log"
exit "${PIPESTATUS[0]}"
