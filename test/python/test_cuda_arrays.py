# SPDX-License-Identifier: BSD-3-Clause
"""The Python binding with CUDA arrays (CuPy), under mpirun, on a GPU machine.

gcoll.Comm takes any object with __cuda_array_interface__.  allreduce of
device arrays runs on libgcoll's CUDA IPC path; bcast and allgather stage
through host memory.  Each result is compared bit for bit with a serial
NumPy computation over all ranks' inputs (small integers: exact in every
type).  Run by scripts/gpu_check.sh; not part of `make check`, which has
no GPU.  Without CuPy or a device every rank prints SKIP and exits 77.

Prints "test_cuda_arrays: N ranks: ok (K checks)" and exits 0, or lists the
failures and exits 1."""
import sys

import numpy as np
from mpi4py import MPI

WORLD = MPI.COMM_WORLD
RANK, SIZE = WORLD.Get_rank(), WORLD.Get_size()

try:
    import cupy as cp
    cp.cuda.Device(RANK % cp.cuda.runtime.getDeviceCount()).use()
except Exception as e:   # no CuPy, no driver, no device: nothing to test here
    if RANK == 0:
        print(f"SKIP: no CuPy with a CUDA device ({type(e).__name__}: {e})")
    sys.exit(77)

import gcoll

TYPES = ["int32", "float16", "float32", "float64"]
COUNTS = [0, 1, 7, 65537, 3_000_001]   # the last: past the IPC path's 8 MiB chunk
failures, checks = [], 0


def data(rank, n, dtype):
    return ((np.arange(n, dtype=np.int64) * 7 + rank * 3) % 5).astype(dtype)


def reference(n, dtype, op):
    stack = np.stack([data(r, n, dtype).astype(np.float64) for r in range(SIZE)])
    out = {"sum": stack.sum(0), "max": stack.max(0), "avg": stack.sum(0) / SIZE}[op]
    return out.astype(dtype)


def check(what, got, want):
    global checks
    checks += 1
    got = cp.asnumpy(got)
    if got.dtype != want.dtype or got.shape != want.shape or got.tobytes() != want.tobytes():
        failures.append(f"rank {RANK}: {what}: differs from the serial reference")


def main():
    with gcoll.Comm(WORLD) as comm:
        for t in TYPES:
            for n in COUNTS:
                for op in ["sum", "max"] + (["avg"] if t.startswith("float") else []):
                    x = cp.asarray(data(RANK, n, t))
                    check(f"allreduce {t} {op} n={n}",
                          comm.allreduce(x, cp.empty_like(x), op=op), reference(n, t, op))
                    check(f"allreduce {t} {op} n={n} in place", comm.allreduce(x, op=op),
                          reference(n, t, op))
        for n in [1, 40000]:
            b = cp.asarray(data(RANK, n, "float32") if RANK == 0 else np.zeros(n, "float32"))
            check(f"bcast n={n}", comm.bcast(b, root=0), data(0, n, "float32"))
            g = cp.empty(n * SIZE, dtype="float32")
            check(f"allgather n={n}", comm.allgather(cp.asarray(data(RANK, n, "float32")), g),
                  np.concatenate([data(r, n, "float32") for r in range(SIZE)]))
    bad = WORLD.allreduce(len(failures))
    for f in failures[:20]:
        print("FAIL:", f)
    if RANK == 0:
        print(f"test_cuda_arrays: {SIZE} ranks: {'FAILED' if bad else 'ok'} ({checks} checks)")
    return 1 if bad else 0


sys.exit(main())
