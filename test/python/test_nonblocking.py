# SPDX-License-Identifier: BSD-3-Clause
"""The Python binding's nonblocking and persistent collectives (gcoll.Request)
against independent references, under mpirun.

Inputs are test_bindings' (small integers, exact in every type).  Every
nonblocking collective is compared bit for bit with a serial NumPy
reference, and with mpi4py's own MPI collective where MPI has the type;
then: every kind outstanding at once and waited in reverse order (with a
blocking collective posted between them), test() loops, waitall, the
context manager, the arrays kept alive until completion (weak references),
a request dropped while active (waited by the garbage collector, with a
ResourceWarning, its result in place), persistent requests started several
times on changing input, the stats counters, the bad-input paths, Comm.close
with requests outstanding, and Compressor.iallreduce against the blocking
Compressor.allreduce of a twin compressor.

Prints "test_nonblocking: N ranks: ok (K checks)" and exits 0, or lists the
failures and exits 1."""
import gc
import sys
import warnings
import weakref

import numpy as np
from mpi4py import MPI

import gcoll
import test_bindings as tb     # data(), reference(), check(), expect_raise(), failures

WORLD, RANK, SIZE = tb.WORLD, tb.RANK, tb.SIZE
data, reference, check = tb.data, tb.reference, tb.check
TYPES = ["int8", "int32", "uint64", "float16", "float32", "float64"]
COUNTS = [0, 1, 7, 1000, 65537]
MPI_OPS = {"sum": MPI.SUM, "prod": MPI.PROD, "min": MPI.MIN, "max": MPI.MAX}


def fail(what):
    tb.failures.append(f"rank {RANK}: {what}")


def expect(what, cond):
    tb.checks += 1
    if not cond:
        fail(what)


def block(x, i, n):
    return x[i * n:(i + 1) * n]


# ---- what each collective must give, computed without libgcoll ---------------

def want_allgather(n, t, salt):
    return np.concatenate([data(r, n, t, salt) for r in range(SIZE)])


def want_reduce_scatter(n, t, op, salt):
    return block(reference(n * SIZE, t, op, salt), RANK, n)


def want_alltoall(n, t, salt):
    return np.concatenate([block(data(r, n * SIZE, t, salt), RANK, n) for r in range(SIZE)])


def post_all(comm, n, t):
    """One request of every kind, distinct inputs (salts); with what each
    wait() must return, by name."""
    root = SIZE - 1
    b = data(RANK, n, t, 3) if RANK == root else np.zeros(n, t)
    return [
        ("iallreduce", comm.iallreduce(data(RANK, n, t, 1), op="max"), reference(n, t, "max", 1)),
        ("ibcast", comm.ibcast(b, root=root), data(root, n, t, 3)),
        ("ireduce", comm.ireduce(data(RANK, n, t, 4), op="sum", root=0),
         reference(n, t, "sum", 4) if RANK == 0 else None),
        ("iallgather", comm.iallgather(data(RANK, n, t, 5)), want_allgather(n, t, 5)),
        ("ireduce_scatter", comm.ireduce_scatter(data(RANK, n * SIZE, t, 6), op="min"),
         want_reduce_scatter(n, t, "min", 6)),
        ("ialltoall", comm.ialltoall(data(RANK, n * SIZE, t, 7)), want_alltoall(n, t, 7)),
        ("ibarrier", comm.ibarrier(), None),
    ]


def check_result(what, got, want):
    if want is None:
        expect(f"{what} returns None", got is None)
    else:
        check(what, got, want)


# ---- every kind, waited in posting order -------------------------------------

def test_each(comm):
    """Post, wait, compare: serial reference for every type, MPI for MPI's."""
    for t in TYPES:
        for n in COUNTS:
            for name, req, want in post_all(comm, n, t):
                check_result(f"{name} {t} n={n}", req.wait(), want)
                expect(f"{name} {t} n={n}: inactive after wait", not req.active)
    for t in ["int32", "float64"]:
        for n in [1, 1000, 65537]:
            compare_with_mpi(comm, t, n)


def compare_with_mpi(comm, t, n):
    x, big = data(RANK, n, t, 8), data(RANK, n * SIZE, t, 9)
    for op in ["sum", "prod", "min", "max"]:
        m = np.empty_like(x)
        WORLD.Allreduce(x, m, op=MPI_OPS[op])
        check(f"iallreduce {t} {op} n={n} vs MPI",
              comm.iallreduce(x, np.empty_like(x), op=op).wait(), m)
    m = np.empty(n * SIZE, t)
    WORLD.Allgather(x, m)
    check(f"iallgather {t} n={n} vs MPI", comm.iallgather(x).wait(), m)
    m = np.empty(n * SIZE, t)
    WORLD.Alltoall(big, m)
    check(f"ialltoall {t} n={n} vs MPI", comm.ialltoall(big).wait(), m)
    m = np.empty(n, t)
    WORLD.Reduce_scatter_block(big, m, op=MPI.SUM)
    check(f"ireduce_scatter {t} n={n} vs MPI", comm.ireduce_scatter(big).wait(), m)
    m = np.zeros(n, t)
    WORLD.Reduce(x, m if RANK == 0 else None, op=MPI.MAX, root=0)
    got = comm.ireduce(x, op="max", root=0).wait()
    if RANK == 0:
        check(f"ireduce {t} n={n} vs MPI", got, m)
    b = x.copy() if RANK == 0 else np.zeros(n, t)
    WORLD.Bcast(b, root=0)
    got = comm.ibcast(x.copy() if RANK == 0 else np.zeros(n, t)).wait()
    check(f"ibcast {t} n={n} vs MPI", got, b)


# ---- several at once ------------------------------------------------------------

def test_reverse_order(comm):
    """Every kind outstanding together, a blocking allreduce posted after
    them, then waited last-posted first."""
    for t in ["int32", "float32"]:
        for n in [1, 65537]:
            reqs = post_all(comm, n, t)
            x = data(RANK, n, t, 2)
            check(f"blocking allreduce {t} n={n} among outstanding", comm.allreduce(x),
                  reference(n, t, "sum", 2))
            for name, req, want in reversed(reqs):
                check_result(f"{name} {t} n={n} waited in reverse", req.wait(), want)


def test_test_loops(comm):
    """test() until each is done, in reverse order; done ones stay done."""
    reqs = post_all(comm, 65537, "float64")
    pending = list(reversed(reqs))
    loops = 0
    while pending:
        loops += 1
        pending = [p for p in pending if not p[1].test()]
        if loops > 10_000_000:
            fail("test() loop never finished")
            return
    for name, req, want in reqs:
        expect(f"{name}: test() after done is True", req.test())
        expect(f"{name}: inactive after test", not req.active)
        check_result(f"{name} by test() loop", req.wait(), want)


def test_waitall(comm):
    reqs = post_all(comm, 1000, "int64")
    got = gcoll.waitall([r for _, r, _ in reqs])
    for (name, req, want), g in zip(reqs, got):
        check_result(f"{name} by waitall", g, want)
        expect(f"{name}: inactive after waitall", not req.active)
    tb.expect_raise("waitall of a request listed twice", ValueError,
                    lambda: gcoll.waitall([reqs[0][1], reqs[0][1]]))
    expect("waitall of nothing", gcoll.waitall([]) == [])


def test_context_manager(comm):
    x, y = data(RANK, 1000, "float32"), np.empty(1000, np.float32)
    with comm.iallreduce(x, y) as req:
        pass
    expect("inactive after with", not req.active)
    check("iallreduce in with, out of place", y, reference(1000, "float32", "sum"))
    expect("wait() returns the recvbuf passed", req.wait() is y)
    z = data(RANK, 1000, "int32")
    with comm.iallreduce(z) as req:
        pass
    check("iallreduce in with, in place", z, reference(1000, "int32", "sum"))
    expect("in place: wait() returns the buffer", req.wait() is z)


# ---- lifetimes -----------------------------------------------------------------

def test_keep_alive(comm):
    """The request holds sendbuf (and an allocated recvbuf) until it is
    waited, and no longer."""
    x = data(RANK, 65537, "float32", 1)
    ref = weakref.ref(x)
    req = comm.iallgather(x)
    del x
    expect("sendbuf alive while the request is active", ref() is not None)
    out = req.wait()
    expect("sendbuf released by wait()", ref() is None)
    check("iallgather of a dropped sendbuf", out, want_allgather(65537, "float32", 1))
    expect("allocated recvbuf returned by wait() again", req.wait() is out)


def test_dropped_active(comm):
    """A request that dies active is waited (ResourceWarning), by its refcount
    reaching 0 and by the cycle collector; the result is then in place."""
    n = 65537
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = np.zeros(n, np.float64)
        req = comm.iallreduce(data(RANK, n, "float64"), y)
        del req
        check("dropped request's result, refcount", y, reference(n, "float64", "sum"))
        z = np.zeros(n * SIZE, np.int32)
        cycle = [comm.iallgather(data(RANK, n, "int32"), z)]
        cycle.append(cycle)
        del cycle
        gc.collect()
        check("dropped request's result, cycle collector", z, want_allgather(n, "int32", 0))
    warned = [w for w in caught if issubclass(w.category, ResourceWarning)]
    expect(f"a ResourceWarning per dropped request (got {len(warned)})", len(warned) == 2)
    p = comm.allreduce_init(np.ones(4))
    del p    # inactive persistent: freed without a warning, or close() would fail
    expect("no requests left on the communicator", len(comm._requests) == 0)


# ---- persistent ---------------------------------------------------------------

def test_persistent(comm):
    """Each _init started 3 times; its input changed between starts."""
    n, t = 1001, "int32"
    x, y = np.empty(n, t), np.empty(n, t)
    reqs = {"allreduce": comm.allreduce_init(x, y, op="sum")}
    root = SIZE - 1
    b = np.empty(n, t)
    reqs["bcast"] = comm.bcast_init(b, root=root)
    xr = np.empty(n, t)
    reqs["reduce"] = comm.reduce_init(xr, op="max", root=0)     # in place on the root
    reqs["allgather"] = comm.allgather_init(x)                  # allocates
    big = np.empty(n * SIZE, t)
    reqs["reduce_scatter"] = comm.reduce_scatter_init(big, op="min")
    reqs["alltoall"] = comm.alltoall_init(big)
    reqs["barrier"] = comm.barrier_init()
    outs = {}
    for step in range(3):
        x[:], xr[:] = data(RANK, n, t, step), data(RANK, n, t, 30 + step)
        big[:] = data(RANK, n * SIZE, t, 10 + step)
        b[:] = data(RANK, n, t, 20 + step) if RANK == root else 0
        for r in reqs.values():
            expect("persistent inactive before start", not r.active)
            expect("start() returns the request", r.start() is r)
        for name in reversed(list(reqs)):
            got = reqs[name].wait()
            if step == 0:
                outs[name] = got
            expect(f"persistent {name}: same result object each start", got is outs[name])
        check(f"persistent allreduce step {step}", y, reference(n, t, "sum", step))
        check(f"persistent bcast step {step}", b, data(root, n, t, 20 + step))
        if RANK == 0:
            check(f"persistent reduce step {step}", outs["reduce"],
                  reference(n, t, "max", 30 + step))
            expect("persistent reduce in place returns its buffer", outs["reduce"] is xr)
        else:
            expect("persistent reduce off the root returns None", outs["reduce"] is None)
        check(f"persistent allgather step {step}", outs["allgather"], want_allgather(n, t, step))
        check(f"persistent reduce_scatter step {step}", outs["reduce_scatter"],
              want_reduce_scatter(n, t, "min", 10 + step))
        check(f"persistent alltoall step {step}", outs["alltoall"], want_alltoall(n, t, 10 + step))
    persistent_rules(comm, reqs["allreduce"], x, y)
    for r in reqs.values():
        r.free()


def persistent_rules(comm, p, x, y):
    """test() loop on a started one, start/free while active, with."""
    x[:] = data(RANK, x.size, "int32", 7)
    p.start()
    tb.expect_raise("start() of an active persistent request", gcoll.Error, p.start,
                    status="GCOLL_ERR_INVALID_ARG")
    tb.expect_raise("free() of an active persistent request", gcoll.Error, p.free,
                    status="GCOLL_ERR_INVALID_ARG")
    while not p.test():
        pass
    check("persistent allreduce by test()", y, reference(x.size, "int32", "sum", 7))
    expect("a persistent request stays valid: wait() after done", p.wait() is y)
    v = data(RANK, 50, "float64")
    with comm.allreduce_init(v) as q:       # in place: each start sums v over ranks
        q.start().wait()
        check("persistent in place, with", v, reference(50, "float64", "sum"))
        q.start()
    check("with waits a started persistent request", v,
          reference(50, "float64", "sum") * SIZE)
    tb.expect_raise("start() after with freed it", gcoll.Error, q.start,
                    status="GCOLL_ERR_INVALID_ARG")
    r = comm.ibarrier()
    tb.expect_raise("start() of a non-persistent request", gcoll.Error, r.start,
                    status="GCOLL_ERR_INVALID_ARG")
    r.wait()


# ---- counters, errors, close ----------------------------------------------------

def test_stats(comm):
    """calls grows by one per completed request (count 0 too), per start."""
    before = comm.stats()["calls"]
    reqs = [comm.iallreduce(data(RANK, n, "float32")) for n in [0, 5, 1000]]
    p = comm.bcast_init(np.zeros(3, np.int8))
    p.start().wait()
    p.start().wait()
    p.free()
    gcoll.waitall(reqs)
    got = comm.stats()["calls"] - before
    expect(f"stats: calls moved by {got}, made 5", got == 5)


def test_bad_input(comm):
    x = np.arange(64, dtype=np.float32)
    E, INVAL = gcoll.Error, "GCOLL_ERR_INVALID_ARG"
    tb.expect_raise("ibcast root out of range", E, lambda: comm.ibcast(x, root=SIZE), status=INVAL)
    tb.expect_raise("ireduce negative root", E, lambda: comm.ireduce(x, root=-1), status=INVAL)
    tb.expect_raise("bcast_init root out of range", E, lambda: comm.bcast_init(x, root=SIZE),
                    status=INVAL)
    tb.expect_raise("iallreduce unknown op", ValueError, lambda: comm.iallreduce(x, op="xor"))
    tb.expect_raise("iallreduce recvbuf too small", ValueError,
                    lambda: comm.iallreduce(x, np.empty(63, np.float32)))
    tb.expect_raise("iallgather of a list", TypeError, lambda: comm.iallgather([1, 2]))
    tb.expect_raise("allreduce_init of a strided array", ValueError,
                    lambda: comm.allreduce_init(x[::2]))
    expect("no request made by a failed post", len(comm._requests) == 0)
    check("the communicator works after the errors",
          comm.iallreduce(data(RANK, 9, "int32")).wait(), reference(9, "int32", "sum"))


def test_close_outstanding():
    """close() completes active requests and frees persistent ones first."""
    comm = gcoll.Comm(WORLD)
    y = np.zeros(1000, np.int64)
    a = comm.iallreduce(data(RANK, 1000, "int64"), y)
    g = comm.iallgather(data(RANK, 7, "int8"))
    p = comm.allreduce_init(np.ones(3))
    q = comm.barrier_init().start()
    comm.close()
    check("active iallreduce completed by close()", y, reference(1000, "int64", "sum"))
    expect("requests inactive after close()", not (a.active or g.active or q.active))
    check("iallgather completed by close()", g.wait(), want_allgather(7, "int8", 0))
    tb.expect_raise("start() of a persistent request freed by close()", gcoll.Error, p.start)
    tb.expect_raise("post on a closed Comm", ValueError, lambda: comm.ibarrier())


def test_compressor(comm):
    """iallreduce equals allreduce of a twin compressor, bit for bit, over
    3 steps (the residuals carry), in place and not."""
    lib = gcoll._libgcoll()
    n = 4099
    with gcoll.Compressor(comm, n, "topk", topk_ratio=0.1) as a, \
            gcoll.Compressor(comm, n, "topk", topk_ratio=0.1) as b:
        if not hasattr(lib, "gcoll_iallreduce_compressed"):
            tb.expect_raise("Compressor.iallreduce without the C symbol", gcoll.Error,
                            lambda: b.iallreduce(np.zeros(n, np.float32)),
                            status="GCOLL_ERR_NOT_SUPPORTED")
            if RANK == 0:
                print("NOTE: libgcoll does not export gcoll_iallreduce_compressed: "
                      "Compressor.iallreduce checked for its error only")
            return
        for step in range(3):
            x = np.random.default_rng([RANK, step]).integers(-1000, 1001, n).astype(np.float32)
            want = a.allreduce(x, np.empty_like(x), op="avg" if step == 1 else "sum")
            if step == 2:
                got = x.copy()
                with b.iallreduce(got) as req:
                    pass
                expect("compressed iallreduce in place returns its buffer", req.wait() is got)
            else:
                got = b.iallreduce(x, op="avg" if step == 1 else "sum").wait()
            check(f"compressed iallreduce step {step} vs allreduce", got, want)
        tb.expect_raise("compressed iallreduce of float64", TypeError,
                        lambda: b.iallreduce(np.zeros(n)))


def main():
    with gcoll.Comm(WORLD) as comm:
        for test in [test_each, test_reverse_order, test_test_loops, test_waitall,
                     test_context_manager, test_keep_alive, test_dropped_active,
                     test_persistent, test_stats, test_bad_input, test_compressor]:
            test(comm)
        expect("no requests left before close", len(comm._requests) == 0)
    test_close_outstanding()
    all_failures = WORLD.gather(tb.failures, root=0)
    if RANK == 0:
        flat = [f for fs in all_failures for f in fs]
        for f in flat[:40]:
            print("FAIL:", f)
        print(f"test_nonblocking: {SIZE} ranks: {'ok' if not flat else 'FAILED'} "
              f"({tb.checks} checks on rank 0, {len(flat)} failures)")
        return 1 if flat else 0
    return 0


if __name__ == "__main__":
    sys.exit(WORLD.bcast(main(), root=0))
