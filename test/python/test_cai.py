# SPDX-License-Identifier: BSD-3-Clause
"""The binding's __cuda_array_interface__ parser, without a GPU, under mpirun.

A fake "device array" exposes __cuda_array_interface__ (version 3) over a
NumPy array's host memory.  libgcoll finds host memory behind the pointer,
so the collectives run on the host path and their results can be checked:
what the parser takes from the interface (pointer, element count over
every dimension, dtype, the read-only flag, strides) is exactly what
reaches libgcoll.  Checks: _Buf's fields; C-contiguous strides accepted
(None, (), explicit, any stride on a dimension of 1) and others refused;
read-only refused where written; non-native byte order and unsupported
types refused; a recvbuf required for device buffers; allreduce in place,
allreduce, bcast, allgather and reduce_scatter through fake device arrays
against a serial reference, on views at an offset into a larger buffer
whose guard bytes must stay untouched.

Prints "test_cai: N ranks: ok (K checks)" and exits 0, or lists the
failures and exits 1."""
import sys

import numpy as np

import gcoll
import test_bindings as tb     # check(), expect_raise(), data() and the failure list

WORLD, RANK, SIZE = tb.WORLD, tb.RANK, tb.SIZE


class FakeDevice:
    """__cuda_array_interface__ over host memory (a NumPy array)."""

    def __init__(self, a, readonly=False, strides="none", typestr=None, shape=None):
        self.a = a
        self.__cuda_array_interface__ = {
            "shape": tuple(a.shape) if shape is None else shape,
            "typestr": typestr or a.dtype.str,
            "data": (a.ctypes.data, readonly),
            "version": 3,
        }
        if strides == "none":
            self.__cuda_array_interface__["strides"] = None
        elif strides == "numpy":
            self.__cuda_array_interface__["strides"] = tuple(a.strides)
        elif strides is not None:
            self.__cuda_array_interface__["strides"] = strides
        # strides=None: no "strides" key at all (optional in version 3)


def check_true(what, cond):
    tb.check(what, np.array([bool(cond)]), np.array([True]))


def guarded(n, dtype, fill):
    """A view of n elements 3 elements into a buffer with guards on both sides."""
    whole = np.full(n + 6, fill, dtype=dtype)
    return whole, whole[3:3 + n]


def check_guards(what, whole, n, fill):
    tb.check(f"{what}: guard elements untouched",
             np.concatenate([whole[:3], whole[3 + n:]]), np.full(6, fill, whole.dtype))


def test_parse():
    x = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    b = gcoll._Buf(FakeDevice(x), "x", True)
    check_true("pointer from data[0]", b.ptr == x.ctypes.data)
    check_true("elements over every dimension", b.size == 60)
    check_true("dtype from typestr", b.dtype == np.float32 and b.gdtype == gcoll._DTYPES["float32"])
    check_true("marked as device memory", b.device)
    for strides in ["none", None, (), "numpy"]:
        b = gcoll._Buf(FakeDevice(x, strides=strides), "x", True)
        check_true(f"C-contiguous with strides {strides!r}", b.size == 60)
    ones = np.zeros((1, 8, 1), np.int32)
    b = gcoll._Buf(FakeDevice(ones, strides=(12345, 4, 999)), "x", True)
    check_true("any stride on a dimension of 1", b.size == 8)
    check_true("a 0-d array is one element", gcoll._Buf(FakeDevice(np.zeros((), np.int64)),
                                                        "x", True).size == 1)
    check_true("an empty array", gcoll._Buf(FakeDevice(np.zeros((4, 0), np.int8)), "x",
                                            True).size == 0)
    for t in ["|u1", "|i1", "<i4", "<u4", "<i8", "<u8", "<f2", "<f4", "<f8"]:
        if not np.dtype(t).isnative:
            continue
        a = np.zeros(7, np.dtype(t))
        b = gcoll._Buf(FakeDevice(a, typestr=t), "x", True)
        check_true(f"typestr {t}", b.dtype == np.dtype(t) and b.size == 7 and b.ptr == a.ctypes.data)
    sendonly = gcoll._Buf(FakeDevice(x, readonly=True), "sendbuf", False)
    check_true("read-only is fine where only read", sendonly.size == 60)


def test_refused(comm):
    x = np.arange(64, dtype=np.float32).reshape(8, 8)
    col = x[:, ::2]            # strides (32, 8): not C-contiguous
    tb.expect_raise("strided device array", ValueError,
                    lambda: comm.allreduce(FakeDevice(col, strides="numpy")))
    tb.expect_raise("transposed strides", ValueError,
                    lambda: comm.allreduce(FakeDevice(x, strides=(4, 32))))
    tb.expect_raise("read-only device array in place", ValueError,
                    lambda: comm.allreduce(FakeDevice(x, readonly=True)))
    tb.expect_raise("read-only device recvbuf", ValueError,
                    lambda: comm.allreduce(FakeDevice(x), FakeDevice(x.copy(), readonly=True)))
    swapped = ">f4" if np.dtype("<f4").isnative else "<f4"
    tb.expect_raise("non-native byte order", TypeError,
                    lambda: comm.allreduce(FakeDevice(x, typestr=swapped)))
    tb.expect_raise("complex typestr", TypeError,
                    lambda: comm.allreduce(FakeDevice(x, typestr="<c8", shape=(32,))))
    tb.expect_raise("device sendbuf without a recvbuf", ValueError,
                    lambda: comm.allgather(FakeDevice(x)))
    tb.expect_raise("device recvbuf of another dtype", TypeError,
                    lambda: comm.allreduce(FakeDevice(x), FakeDevice(np.zeros(64, np.float64))))
    tb.expect_raise("device recvbuf too small", ValueError,
                    lambda: comm.allreduce(FakeDevice(x), FakeDevice(np.zeros(63, np.float32))))


def test_collectives(comm):
    n = 1001
    for t in ["uint8", "int32", "float32", "float64"]:
        # allreduce in place on a 2-d view (count over both dimensions)
        whole, view = guarded(n * 2, t, 9)
        view[:] = tb.data(RANK, n * 2, t)
        got = comm.allreduce(FakeDevice(view.reshape(2, n)))
        check_true(f"allreduce {t} in place returns the fake array", isinstance(got, FakeDevice))
        tb.check(f"allreduce {t} in place", view, tb.reference(n * 2, t, "sum"))
        check_guards(f"allreduce {t} in place", whole, n * 2, 9)
        # out of place, read-only sendbuf
        src = tb.data(RANK, n, t)
        whole, view = guarded(n, t, 7)
        comm.allreduce(FakeDevice(src, readonly=True), FakeDevice(view), op="max")
        tb.check(f"allreduce {t} max", view, tb.reference(n, t, "max"))
        check_guards(f"allreduce {t} max", whole, n, 7)
        # bcast from the last rank
        whole, view = guarded(n, t, 5)
        view[:] = tb.data(RANK, n, t)
        comm.bcast(FakeDevice(view), root=SIZE - 1)
        tb.check(f"bcast {t}", view, tb.data(SIZE - 1, n, t))
        check_guards(f"bcast {t}", whole, n, 5)
        # allgather into a device recvbuf
        whole, view = guarded(n * SIZE, t, 3)
        comm.allgather(FakeDevice(tb.data(RANK, n, t)), FakeDevice(view))
        tb.check(f"allgather {t}", view,
                 np.concatenate([tb.data(r, n, t) for r in range(SIZE)]))
        check_guards(f"allgather {t}", whole, n * SIZE, 3)
        # reduce_scatter: this rank's block of the sum
        whole, view = guarded(n, t, 1)
        comm.reduce_scatter(FakeDevice(tb.data(RANK, n * SIZE, t)), FakeDevice(view))
        tb.check(f"reduce_scatter {t}", view,
                 tb.reference(n * SIZE, t, "sum")[RANK * n:(RANK + 1) * n])
        check_guards(f"reduce_scatter {t}", whole, n, 1)


def main():
    with gcoll.Comm(WORLD) as comm:
        test_parse()
        test_refused(comm)
        test_collectives(comm)
    all_failures = WORLD.gather(tb.failures, root=0)
    if RANK == 0:
        flat = [f for fs in all_failures for f in fs]
        for f in flat[:40]:
            print("FAIL:", f)
        print(f"test_cai: {SIZE} ranks: {'ok' if not flat else 'FAILED'} "
              f"({tb.checks} checks on rank 0, {len(flat)} failures)")
        return 1 if flat else 0
    return 0


if __name__ == "__main__":
    sys.exit(WORLD.bcast(main(), root=0))
