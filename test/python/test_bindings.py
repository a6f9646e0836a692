# SPDX-License-Identifier: BSD-3-Clause
"""The Python binding against independent references, under mpirun.

Every rank's input is a known function of (rank, index) with small integer
values, so sums are exact in every type: each result is compared bit for bit
with mpi4py's own MPI collective on the same arrays where MPI has the type,
and with a serial computation in float64 / int64 over all ranks' inputs
(which every rank can compute) for every type.  Then the bad-input paths:
each must raise the documented exception on every rank, and the
communicator must still work afterwards.

Prints "test_bindings: N ranks: ok (K checks)" and exits 0, or lists the
failures and exits 1."""
import sys

import numpy as np
from mpi4py import MPI

import gcoll

WORLD = MPI.COMM_WORLD
RANK, SIZE = WORLD.Get_rank(), WORLD.Get_size()
TYPES = ["int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "float32", "float64"]
MPI_TYPES = {"int32", "int64", "float32", "float64"}   # compared with MPI too
COUNTS = [0, 1, 7, 1000, 65537]       # 65537: prime, larger than 256 KiB in 32-bit types
failures, checks = [], 0


def data(rank, n, dtype, salt=0):
    """Rank's input: values 0..4 (products and sums of SIZE ranks stay exact)."""
    return ((np.arange(n, dtype=np.int64) * 7 + rank * 3 + salt) % 5).astype(dtype)


def reference(n, dtype, op, salt=0):
    """Serial reduction over all ranks' inputs, in float64 / int64."""
    wide = np.float64 if np.dtype(dtype).kind == "f" else np.int64
    stack = np.stack([data(r, n, dtype, salt).astype(wide) for r in range(SIZE)])
    out = {"sum": stack.sum(0), "prod": stack.prod(0), "min": stack.min(0),
           "max": stack.max(0), "avg": stack.sum(0) / SIZE}[op]
    if op == "avg" and wide is np.int64:
        out = stack.sum(0) // SIZE     # all sums are >= 0: floor == truncation
    return out.astype(dtype)


def check(what, got, want):
    global checks
    checks += 1
    if got is None or got.dtype != want.dtype or got.shape != want.shape or \
            got.tobytes() != want.tobytes():
        bad = "wrong type or shape" if got is None or got.shape != want.shape else \
            int(np.flatnonzero(got.view(np.uint8) != want.view(np.uint8))[0]) // want.itemsize
        failures.append(f"rank {RANK}: {what}: differs (first element {bad})")


def test_allreduce(comm):
    for t in TYPES:
        for n in COUNTS:
            for op in ["sum", "prod", "min", "max"] + (["avg"] if t.startswith("float") else []):
                x = data(RANK, n, t)
                check(f"allreduce {t} {op} n={n}", comm.allreduce(x, np.empty_like(x), op=op),
                      reference(n, t, op))
                if t in MPI_TYPES and op != "avg":
                    m = np.empty_like(x)
                    WORLD.Allreduce(x, m, op={"sum": MPI.SUM, "prod": MPI.PROD,
                                              "min": MPI.MIN, "max": MPI.MAX}[op])
                    check(f"allreduce {t} {op} n={n} vs MPI", comm.allreduce(x.copy(), op=op), m)


def test_others(comm):
    for t in ["int8", "int32", "float16", "float32", "float64"]:
        for n in [0, 1, 13, 40000]:
            for root in range(SIZE):
                b = data(RANK, n, t) if RANK == root else np.zeros(n, dtype=t)
                check(f"bcast {t} n={n} root={root}", comm.bcast(b, root=root), data(root, n, t))
                got = comm.reduce(data(RANK, n, t), op="max", root=root)
                if RANK == root:
                    check(f"reduce {t} n={n} root={root}", got, reference(n, t, "max"))
                elif got is not None:
                    failures.append(f"rank {RANK}: reduce returned data off the root")
            check(f"allgather {t} n={n}", comm.allgather(data(RANK, n, t)),
                  np.concatenate([data(r, n, t) for r in range(SIZE)]))
            full = reference(n * SIZE, t, "sum", salt=1)
            check(f"reduce_scatter {t} n={n}",
                  comm.reduce_scatter(data(RANK, n * SIZE, t, salt=1)),
                  full[RANK * n:(RANK + 1) * n])
            send = data(RANK, n * SIZE, t, salt=2)
            want = np.concatenate([data(r, n * SIZE, t, salt=2)[RANK * n:(RANK + 1) * n]
                                   for r in range(SIZE)])
            check(f"alltoall {t} n={n}", comm.alltoall(send), want)
            if t == "int32":    # the same against MPI's own
                m = np.empty(n * SIZE, dtype=t)
                WORLD.Allgather(data(RANK, n, t), m)
                check(f"allgather {t} n={n} vs MPI", comm.allgather(data(RANK, n, t)), m)
    x = data(RANK, 1000, "float32")
    y = comm.allreduce(x)                       # in place
    check("allreduce in place returns its buffer", np.array([y is x]), np.array([True]))
    check("allreduce in place", x, reference(1000, "float32", "sum"))
    comm.barrier()


def expect_raise(what, exc, fn, status=None):
    global checks
    checks += 1
    try:
        fn()
    except exc as e:
        if status is not None and e.status_name != status:
            failures.append(f"rank {RANK}: {what}: {e.status_name}, expected {status}")
        elif not str(e):
            failures.append(f"rank {RANK}: {what}: {exc.__name__} without a message")
        return
    except Exception as e:   # noqa: BLE001 - any other type is the failure
        failures.append(f"rank {RANK}: {what}: raised {type(e).__name__}: {e}")
        return
    failures.append(f"rank {RANK}: {what}: no {exc.__name__} raised")


def test_bad_input(comm):
    x = np.arange(64, dtype=np.float32)
    expect_raise("strided array", ValueError, lambda: comm.allreduce(x[::2]))
    expect_raise("complex dtype", TypeError, lambda: comm.allreduce(x.astype(np.complex64)))
    swapped = ">f4" if np.dtype("<f4").isnative else "<f4"
    expect_raise("non-native byte order", TypeError, lambda: comm.allreduce(x.astype(swapped)))
    expect_raise("a list", TypeError, lambda: comm.allreduce([1.0, 2.0]))
    expect_raise("recvbuf too small", ValueError, lambda: comm.allreduce(x, np.empty(63, np.float32)))
    expect_raise("recvbuf of another dtype", TypeError, lambda: comm.allreduce(x, np.empty(64)))
    expect_raise("unknown op", ValueError, lambda: comm.allreduce(x, op="xor"))
    ro = x.copy()
    ro.flags.writeable = False
    expect_raise("read-only in place", ValueError, lambda: comm.allreduce(ro))
    if SIZE > 1:
        expect_raise("reduce_scatter of an indivisible count", ValueError,
                     lambda: comm.reduce_scatter(np.zeros(SIZE + 1, np.float32)))
    # caught by libgcoll itself on every rank, before any communication
    expect_raise("root out of range", gcoll.Error, lambda: comm.bcast(x, root=SIZE),
                 status="GCOLL_ERR_INVALID_ARG")
    expect_raise("negative root", gcoll.Error, lambda: comm.reduce(x, op="sum", root=-1),
                 status="GCOLL_ERR_INVALID_ARG")
    y = data(RANK, 33, "int32")
    if RANK == 0:
        check("reduce in place on the root returns its buffer",
              np.array([comm.reduce(y, root=0) is y]), np.array([True]))
        check("reduce in place on the root", y, reference(33, "int32", "sum"))
    else:
        comm.reduce(y, root=0)
    check("the communicator works after the errors", comm.allreduce(data(RANK, 9, "int32")),
          reference(9, "int32", "sum"))


def main():
    with gcoll.Comm(WORLD) as comm:
        if (comm.rank, comm.size) != (RANK, SIZE):
            failures.append(f"rank {RANK}: Comm says rank {comm.rank} of {comm.size}")
        before = comm.stats()["calls"]
        test_allreduce(comm)
        test_others(comm)
        test_bad_input(comm)
        if comm.stats()["calls"] <= before:
            failures.append(f"rank {RANK}: stats()['calls'] did not grow")
    closed = comm
    expect_raise("use after close", ValueError, lambda: closed.barrier())
    closed.close()     # idempotent
    all_failures = WORLD.gather(failures, root=0)
    if RANK == 0:
        flat = [f for fs in all_failures for f in fs]
        for f in flat[:40]:
            print("FAIL:", f)
        print(f"test_bindings: {SIZE} ranks: {'ok' if not flat else 'FAILED'} "
              f"({checks} checks on rank 0, {len(flat)} failures)")
        return 1 if flat else 0
    return 0


if __name__ == "__main__":
    sys.exit(WORLD.bcast(main(), root=0))
