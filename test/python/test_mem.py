# SPDX-License-Identifier: BSD-3-Clause
"""gcoll.empty (arrays on gcoll_mem_alloc memory) under mpirun.

The array itself (shape, dtype, zeroed, writable, C-contiguous; freed when
it and its views are garbage collected, counted by libgcoll's live
allocations), then every node-level collective on such arrays, bit for bit
against mpi4py's MPI on the same inputs, with the path libgcoll took read
from its zero-copy counters (an internal call, gcoll_comm_zcopy_stats): on
one node with more than one rank every call on gcoll.empty arrays must be
zero-copy, every call with a NumPy-allocated result array must copy.  With
GCOLL_NODE_SIZE set (simulated nodes, the built-in selection) only the
results are checked.  Then bad input to gcoll.empty.

Prints "test_mem: N ranks: ok (K checks)" and exits 0, or lists the
failures and exits 1."""
import ctypes
import gc
import os
import sys

# The shared-memory algorithms, so that every call runs the node level
# (set before libgcoll reads the environment at Comm creation).
SIMULATED = bool(os.environ.get("GCOLL_NODE_SIZE"))
if not SIMULATED:
    os.environ["GCOLL_ALGO"] = "allreduce=shm,reduce=shm,bcast=shm,allgather=shm," \
                               "reduce_scatter=shm"

import numpy as np          # noqa: E402
from mpi4py import MPI      # noqa: E402

import gcoll                # noqa: E402
import test_bindings as tb  # noqa: E402  data(), check(), expect_raise(), failures

WORLD, RANK, SIZE = tb.WORLD, tb.RANK, tb.SIZE
data, check = tb.data, tb.check
N = 100003                  # prime, 400 KB of float32: the large shared-memory forms
MPI_TYPES = {"int32": MPI.INT32_T, "float32": MPI.FLOAT, "float64": MPI.DOUBLE,
             "int64": MPI.INT64_T}


def expect(what, cond):
    tb.checks += 1
    if not cond:
        tb.failures.append(f"rank {RANK}: {what}")


def live():
    lib = gcoll._libgcoll()
    lib.gcoll_mem_live.restype = ctypes.c_size_t
    return lib.gcoll_mem_live()


def zcopy_taken(comm):
    """Calls whose node level ran zero-copy (internal counter)."""
    lib = gcoll._libgcoll()
    fn = lib.gcoll_comm_zcopy_stats
    fn.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64),
                   ctypes.POINTER(ctypes.c_uint64)]
    taken, declined = ctypes.c_uint64(), ctypes.c_uint64()
    gcoll._check(fn(comm._handle(), ctypes.byref(taken), ctypes.byref(declined)))
    return taken.value


def path(comm, what, shared, before):
    """Assert the path of the call since before (a zcopy_taken value)."""
    if SIMULATED or SIZE == 1:
        return
    got = zcopy_taken(comm) - before
    expect(f"{what}: zero-copy {'NOT taken' if shared else 'taken'} ({got} calls)",
           got == (1 if shared else 0))


def shared_copy(x):
    y = gcoll.empty(x.shape, x.dtype)
    y[...] = x
    return y


def test_array():
    n0 = live()
    a = gcoll.empty((3, 5), np.int32)
    expect("gcoll.empty shape and dtype", a.shape == (3, 5) and a.dtype == np.int32)
    expect("gcoll.empty C-contiguous and writable", a.flags.c_contiguous and a.flags.writeable)
    expect("gcoll.empty is zeroed (fresh pages)", not a.any())
    expect("gcoll.empty is one allocation", live() == n0 + 1)
    b = gcoll.empty(7)
    expect("gcoll.empty(7) is float64 as numpy.empty", b.shape == (7,) and b.dtype == np.float64)
    z = gcoll.empty(0, np.float32)
    expect("gcoll.empty(0)", z.size == 0 and z.shape == (0,))
    v = a[1:]                               # a view keeps the memory alive
    del a, b, z
    gc.collect()
    expect(f"views keep their allocation ({live() - n0} live)", live() == n0 + 1)
    v[...] = 3
    expect("the view still works", int(v.sum()) == 30)
    del v
    gc.collect()
    expect(f"freed with the last view ({live() - n0} left)", live() == n0)


def test_collectives(comm):
    for t in ["float32", "int32", "float64", "int64"]:
        mt = MPI_TYPES[t]
        x = data(RANK, N, t)
        # allreduce in place and not, and with a NumPy result array (copies)
        want = np.empty_like(x)
        WORLD.Allreduce(x, want, op=MPI.SUM)
        s = shared_copy(x)
        before = zcopy_taken(comm)
        comm.allreduce(s)
        check(f"allreduce {t} in place on gcoll.empty", s, want)
        path(comm, f"allreduce {t} in place", True, before)
        s, r = shared_copy(x), gcoll.empty(N, t)
        before = zcopy_taken(comm)
        comm.allreduce(s, r, op="max")
        WORLD.Allreduce(x, want, op=MPI.MAX)
        check(f"allreduce max {t} on gcoll.empty", r, want)
        path(comm, f"allreduce {t} into gcoll.empty", True, before)
        before = zcopy_taken(comm)
        got = comm.allreduce(s, np.empty(N, t), op="max")   # a NumPy result: copies
        check(f"allreduce max {t} into numpy", got, want)
        path(comm, f"allreduce {t} into numpy", False, before)
        # reduce to the last rank
        root = SIZE - 1
        r = gcoll.empty(N, t)
        before = zcopy_taken(comm)
        comm.reduce(s, r if RANK == root else None, op="min", root=root)
        WORLD.Reduce(x, want, op=MPI.MIN, root=root)
        if RANK == root:
            check(f"reduce min {t} on gcoll.empty", r, want)
        path(comm, f"reduce {t}", True, before)
        # bcast from rank 0
        b = shared_copy(x) if RANK == 0 else gcoll.empty(N, t)
        want = x.copy()
        WORLD.Bcast([want, mt], root=0)
        before = zcopy_taken(comm)
        comm.bcast(b, root=0)
        check(f"bcast {t} on gcoll.empty", b, want)
        path(comm, f"bcast {t}", True, before)
        # allgather and reduce_scatter
        r = gcoll.empty(N * SIZE, t)
        want = np.empty(N * SIZE, t)
        WORLD.Allgather(x, want)
        before = zcopy_taken(comm)
        comm.allgather(s, r)
        check(f"allgather {t} on gcoll.empty", r, want)
        path(comm, f"allgather {t}", True, before)
        big = shared_copy(data(RANK, N * SIZE, t))
        r = gcoll.empty(N, t)
        want = np.empty(N, t)
        WORLD.Reduce_scatter_block(data(RANK, N * SIZE, t), want, op=MPI.SUM)
        before = zcopy_taken(comm)
        comm.reduce_scatter(big, r)
        check(f"reduce_scatter {t} on gcoll.empty", r, want)
        path(comm, f"reduce_scatter {t}", True, before)
        # nonblocking, then freed by the collector
        want = np.empty_like(x)
        WORLD.Allreduce(x, want, op=MPI.SUM)
        reqs = [comm.iallreduce(shared_copy(x)) for _ in range(3)]
        for i, got in enumerate(gcoll.waitall(reqs)):
            check(f"iallreduce {t} #{i} on gcoll.empty", got, want)


def test_bad_input():
    tb.expect_raise("gcoll.empty(-1)", ValueError, lambda: gcoll.empty(-1))
    tb.expect_raise("gcoll.empty('x')", TypeError, lambda: gcoll.empty("x"))
    tb.expect_raise("gcoll.empty((2, -3))", ValueError, lambda: gcoll.empty((2, -3)))
    tb.expect_raise("gcoll.empty(2, 'no such type')", TypeError,
                    lambda: gcoll.empty(2, "no such type"))


def main():
    n0 = live()
    test_array()
    with gcoll.Comm(WORLD) as comm:
        test_collectives(comm)
    test_bad_input()
    gc.collect()
    expect(f"every gcoll.empty array freed ({live() - n0} left)", live() == n0)
    all_failures = WORLD.gather(tb.failures, root=0)
    if RANK == 0:
        flat = [f for fs in all_failures for f in fs]
        for f in flat[:40]:
            print("FAIL:", f)
        print(f"test_mem: {SIZE} ranks: {'ok' if not flat else 'FAILED'} "
              f"({tb.checks} checks on rank 0, {len(flat)} failures)")
        return 1 if flat else 0
    return 0


if __name__ == "__main__":
    sys.exit(WORLD.bcast(main(), root=0))
