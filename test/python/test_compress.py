# SPDX-License-Identifier: BSD-3-Clause
"""gcoll.Compressor (the compressed allreduce) against a serial reference of
the whole job in NumPy, under mpirun.

The reference has the semantics of test/mpi/test_compress_mpi.c, rewritten
here: group the ranks as libgcoll must (nodes of GCOLL_NODE_SIZE ranks, else
of one shared-memory domain; every rank alone when the nodes are unequal),
sum each group's integer-valued inputs exactly, cut the sum into one share
per rank of the group, add each share's residual (float32), decode with a
codec written here (bfloat16 by bit rounding, TopK by a stable sort, 1-bit
by a sequential float64 sum), keep x - decoded as the next residual, and
sum the decoded shares in group order in float32; for BF16 add the chunk
owner's residual, round once more and keep what that drops.  TopK and
1-bit go two-phase where that sends fewer bytes (N >= 3 nodes, or groups,
for all but tiny counts): each chunk of a share decoded alone, the chunk's
owner summing it over the groups, adding its residual, decoding again.  Residuals that
are not finite are dropped.  Every codec must match bit for bit.  One node,
or codec NONE, must equal mpi4py's Allreduce bit for bit.
Every rank must hold rank 0's bits.  Three calls per case (the residual
carries), alternating SUM / AVG and in place / out of place; then reset()
and the bad-input paths.

Prints "test_compress: N ranks: ok (K checks)" and exits 0, or lists the
failures and exits 1."""
import gc
import math
import os
import sys
import warnings

import numpy as np
from mpi4py import MPI

import gcoll
import test_bindings as tb     # check(), expect_raise() and the failure list

WORLD, RANK, SIZE = tb.WORLD, tb.RANK, tb.SIZE
f32 = np.float32
CALLS = 3
# (kind, topk_ratio, onebit_block, error_feedback, counts).  Few cases: a
# Compressor took up to ~0.85 s to create at 4 ranks as 2 nodes on 2 cores.
CASES = [
    (gcoll.Compress.NONE, 0.0, 0, True, [0, 7, 4099]),
    (gcoll.Compress.BF16, 0.0, 0, True, [1, 7, 1000, 4099]),
    (gcoll.Compress.TOPK, 0.1, 0, True, [0, 1, 7, 1000, 4099]),
    (gcoll.Compress.TOPK, 0.0, 0, True, [4099]),      # libgcoll's default ratio, 0.01
    (gcoll.Compress.TOPK, 0.1, 0, False, [1000]),     # no error feedback
    (gcoll.Compress.ONEBIT, 0.0, 64, True, [1, 7, 1000, 4099]),
    (gcoll.Compress.ONEBIT, 0.0, 0, True, [4099]),    # libgcoll's default block, 2048
]


# ---- the job's shape, found without libgcoll ---------------------------------

def find_shape():
    """(group of each rank, number of nodes, ranks per group L)."""
    ns = int(os.environ.get("GCOLL_NODE_SIZE", "0") or 0)
    if ns > 0:
        node = [r // ns for r in range(SIZE)]
    else:
        local = WORLD.Split_type(MPI.COMM_TYPE_SHARED, key=RANK)
        leader = local.allreduce(RANK, op=MPI.MIN)
        local.Free()
        node = WORLD.allgather(leader)
    ids = {n: k for k, n in enumerate(dict.fromkeys(node))}    # numbered in rank order
    sizes = [node.count(n) for n in ids]
    L = sizes[0] if len(set(sizes)) == 1 and sizes[0] > 1 else 1
    group = [ids[n] for n in node] if L > 1 else list(range(SIZE))
    return group, len(ids), L


GROUP, NNODES, L = find_shape()
NGROUPS = max(GROUP) + 1


def data(rank, n, call):
    """Rank's input of call `call`: integers in [-1000, 1000] (exact sums)."""
    return np.random.default_rng([rank, call, n]).integers(-1000, 1001, n).astype(f32)


# ---- reference codecs: each returns the decoded share --------------------------

def bf16(x):
    """Nearest bfloat16, ties to even (finite inputs: overflow rounds to inf)."""
    u = x.astype(f32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(f32)


def finite(e):
    """Residuals that are not finite are dropped (as libgcoll does)."""
    return np.where(np.isfinite(e), e, f32(0)).astype(f32)


def topk(x, ratio):
    n = x.size
    k = min(max(math.ceil(ratio * n * (1 - 1e-12)), 1), n) if n else 0   # forgive binary rounding
    keep = np.argsort(-np.abs(x), kind="stable")[:k]    # larger first, ties to lower index
    out = np.zeros_like(x)
    out[keep] = x[keep]
    return out


def onebit(x, block):
    out = np.empty_like(x)
    for o in range(0, x.size, block):
        b = x[o:o + block]
        # the block's mean |x| summed in float64 in index order, as a plain loop
        s = f32(np.cumsum(np.abs(b.astype(np.float64)))[-1] / b.size)
        out[o:o + block] = np.where(np.signbit(b), -s, s)
    return out


class Reference:
    """The whole job, serially: every group's shares with their residuals."""

    def __init__(self, kind, ratio, block, feedback, count):
        self.kind, self.count = kind, count
        self.ratio, self.block = ratio or 0.01, block or 2048
        self.share = -(-count // L)
        self.resid = np.zeros((NGROUPS, L, self.share), f32) if feedback else None
        self.owner = np.zeros(self.share * L, f32) if feedback else None   # BF16 owners'

    def decode(self, x):
        if self.kind == gcoll.Compress.BF16:
            return bf16(x)
        if self.kind == gcoll.Compress.TOPK:
            return topk(x, self.ratio)
        return onebit(x, self.block)

    def payload(self, n):
        """Bytes of a TopK or 1-bit payload of n elements, rounded up to 8
        (gcoll.h: an index and a value per kept element; a float scale per
        block and a bit per element)."""
        if self.kind == gcoll.Compress.TOPK:
            b = 8 * (min(max(math.ceil(self.ratio * n * (1 - 1e-12)), 1), n) if n else 0)
        else:
            blk = min(self.block, n) or 1
            b = 4 * -(-n // blk) + -(-n // 8)
        return -(-b // 8) * 8

    def chunk(self):
        """Elements per chunk of the two-phase exchange (TopK, 1-bit), or 0
        where libgcoll gathers whole shares: two-phase when 2 chunk payloads
        are fewer bytes than one share payload."""
        if self.kind not in (gcoll.Compress.TOPK, gcoll.Compress.ONEBIT):
            return 0
        cs = -(-self.share // NGROUPS)
        return cs if 2 * self.payload(cs) < self.payload(self.share) else 0

    def two_phase(self, t, cs):
        """Call t by the two-phase exchange: each group's share l decoded
        chunk by chunk with its worker residual; the owner of chunk j of
        share l sums it over the groups in group order (float32), adds its
        own residual, decodes once more and keeps what that drops."""
        n = self.share
        dec = np.zeros((NGROUPS, L, n), f32)
        for g in range(NGROUPS):
            acc = np.zeros(n * L, np.int64)
            for r in range(SIZE):
                if GROUP[r] == g:
                    acc[:self.count] += data(r, self.count, t).astype(np.int64)
            shares = acc.astype(f32).reshape(L, n)
            for l in range(L):
                x = shares[l] + self.resid[g, l] if self.resid is not None else shares[l]
                for o in range(0, n, cs):
                    dec[g, l, o:o + cs] = self.decode(x[o:o + cs])
                if self.resid is not None:
                    self.resid[g, l] = finite(x - (f32(0) + dec[g, l]))
        want = np.zeros(n * L, f32)
        for l in range(L):
            for o in range(0, n, cs):
                y = np.zeros(min(cs, n - o), f32)
                for g in range(NGROUPS):
                    y += dec[g, l, o:o + cs]
                at = slice(l * n + o, l * n + o + y.size)
                if self.owner is not None:
                    y = y + self.owner[at]
                z = f32(0) + self.decode(y)
                if self.owner is not None:
                    self.owner[at] = finite(y - z)
                want[at] = z
        return want[:self.count]

    def call(self, t):
        """Sum of call t over ranks (float32): every result must match it bit
        for bit."""
        cs = self.chunk()
        if cs:
            return self.two_phase(t, cs)
        want = np.zeros(self.share * L, f32)
        for g in range(NGROUPS):
            acc = np.zeros(self.share * L, np.int64)
            for r in range(SIZE):
                if GROUP[r] == g:
                    acc[:self.count] += data(r, self.count, t).astype(np.int64)
            shares = acc.astype(f32).reshape(L, self.share)    # exact: small integers
            for l in range(L):
                x = shares[l] + self.resid[g, l] if self.resid is not None else shares[l]
                d = self.decode(x)
                if self.resid is not None:
                    self.resid[g, l] = finite(x - (f32(0) + d))
                want[l * self.share:(l + 1) * self.share] += d    # group order, float32
        if self.kind == gcoll.Compress.BF16:    # the owner's rounding, and its residual
            y = want + self.owner if self.owner is not None else want
            want = bf16(y)
            if self.owner is not None:
                self.owner[:] = finite(y - want)
        return want[:self.count]


def expected(ref, exact, t):
    """The sum of call t: mpi4py's Allreduce where nothing is compressed,
    else the reference job's (which then advances)."""
    if not exact:
        return ref.call(t)
    want = np.empty(ref.count, f32)
    WORLD.Allreduce(data(RANK, ref.count, t), want, op=MPI.SUM)
    return want


# ---- the checks ----------------------------------------------------------------

def check_agree(what, got):
    """Every rank holds rank 0's bits."""
    r0 = got.copy()
    WORLD.Bcast(r0, root=0)
    tb.check(f"{what}: same bits as rank 0", got, r0)


def run_config(comm, kind, ratio, block, feedback, count):
    name = f"{kind.name.lower()}(ratio {ratio}, block {block}{'' if feedback else ', no EF'})"
    exact = kind == gcoll.Compress.NONE or NNODES == 1
    ref = Reference(kind, ratio, block, feedback, count)
    with gcoll.Compressor(comm, count, kind, topk_ratio=ratio, onebit_block=block,
                          error_feedback=feedback) as c:
        for t in range(CALLS):
            op = gcoll.AVG if t % 2 else gcoll.SUM
            mode = (t + count) % 3      # 0: out of place, 1: recvbuf None, 2: recvbuf is sendbuf
            what = f"{name} count {count} call {t} ({'avg' if op else 'sum'}, " + \
                ["out of place", "in place", "recvbuf=sendbuf"][mode] + ")"
            x = data(RANK, count, t)
            result = np.full(count, np.nan, f32) if mode == 0 else x
            calls = comm.stats()["calls"]
            got = c.allreduce(x, [result, None, x][mode], op=op)
            tb.check(f"{what}: returns its result buffer", np.array([got is result]),
                     np.array([True]))
            if mode == 0:
                tb.check(f"{what}: sendbuf unchanged", x, data(RANK, count, t))
            tb.check(f"{what}: one call in stats", np.array([comm.stats()["calls"] - calls]),
                     np.array([1]))
            want = expected(ref, exact, t)
            if op == gcoll.AVG:
                want = want / f32(SIZE)
            tb.check(what, got, want)
            check_agree(what, got)


def test_reset(comm):
    """reset() zeroes the residual: the call after it is the reference's with
    its residual zeroed too."""
    count = 1000
    ref = Reference(gcoll.Compress.TOPK, 0.1, 0, True, count)
    with gcoll.Compressor(comm, count, "topk", topk_ratio=0.1) as c:
        for t in range(3):
            if t == 2:
                c.reset()
                ref.resid[:] = 0
                ref.owner[:] = 0
            got = c.allreduce(data(RANK, count, t))
            want = expected(ref, NNODES == 1, t)
            tb.check(f"topk(0.1) count {count} call {t}{' after reset()' if t == 2 else ''}",
                     got, want)


def test_bad_input(comm):
    x = np.arange(64, dtype=f32)
    for k in gcoll.Compress:          # the enum is C's: libgcoll names each value
        tb.check(f"gcoll_compress_name({int(k)})",
                 np.array([gcoll._libgcoll().gcoll_compress_name(k).decode()]),
                 np.array([k.name.lower()]))
    tb.expect_raise("topk_ratio=2", gcoll.Error,
                    lambda: gcoll.Compressor(comm, 64, gcoll.Compress.TOPK, topk_ratio=2),
                    status="GCOLL_ERR_INVALID_ARG")
    tb.expect_raise("unknown codec 42", ValueError, lambda: gcoll.Compressor(comm, 64, 42))
    tb.expect_raise("unknown codec name", ValueError, lambda: gcoll.Compressor(comm, 64, "zstd"))
    tb.expect_raise("negative count", ValueError, lambda: gcoll.Compressor(comm, -1, "bf16"))
    tb.expect_raise("an mpi4py communicator", TypeError,
                    lambda: gcoll.Compressor(WORLD, 64, "bf16"))
    c = gcoll.Compressor(comm, 64, gcoll.Compress.ONEBIT)
    tb.expect_raise("float64 sendbuf", TypeError, lambda: c.allreduce(x.astype(np.float64)))
    tb.expect_raise("int32 sendbuf", TypeError, lambda: c.allreduce(x.astype(np.int32)))
    tb.expect_raise("float64 recvbuf", TypeError, lambda: c.allreduce(x, np.empty(64)))
    tb.expect_raise("count 63 of 64", ValueError, lambda: c.allreduce(x[:63]))
    tb.expect_raise("recvbuf of 65", ValueError, lambda: c.allreduce(x, np.empty(65, f32)))
    tb.expect_raise("strided sendbuf", ValueError, lambda: c.allreduce(np.zeros(128, f32)[::2]))
    tb.expect_raise("unknown op", ValueError, lambda: c.allreduce(x, op="xor"))
    tb.expect_raise("op max", gcoll.Error, lambda: c.allreduce(x, op="max"),
                    status="GCOLL_ERR_NOT_SUPPORTED")
    ro = x.copy()
    ro.flags.writeable = False
    tb.expect_raise("read-only in place", ValueError, lambda: c.allreduce(ro))
    got = c.allreduce(data(RANK, 64, 0))
    tb.check("onebit works after the errors", got,
             expected(Reference(gcoll.Compress.ONEBIT, 0, 0, True, 64), NNODES == 1, 0))
    check_agree("onebit after the errors", got)
    c.close()
    tb.expect_raise("allreduce after close", ValueError, lambda: c.allreduce(x))
    tb.expect_raise("reset after close", ValueError, lambda: c.reset())
    c.close()      # idempotent
    with warnings.catch_warnings(record=True) as seen:   # dropped unclosed: freed quietly
        warnings.simplefilter("always")
        gcoll.Compressor(comm, 8, "bf16")
        gc.collect()
    tb.check("an unclosed Compressor is freed without a warning when dropped",
             np.array([len(seen)]), np.array([0]))


def main():
    with gcoll.Comm(WORLD) as comm:
        if RANK == 0:
            print(f"{SIZE} ranks, {NNODES} node(s), {NGROUPS} group(s) of {L}")
        for kind, ratio, block, feedback, counts in CASES:
            for count in counts:
                run_config(comm, kind, ratio, block, feedback, count)
        test_reset(comm)
        test_bad_input(comm)
    all_failures = WORLD.gather(tb.failures, root=0)
    if RANK == 0:
        flat = [f for fs in all_failures for f in fs]
        for f in flat[:40]:
            print("FAIL:", f)
        print(f"test_compress: {SIZE} ranks: {'ok' if not flat else 'FAILED'} "
              f"({tb.checks} checks on rank 0, {len(flat)} failures)")
        return 1 if flat else 0
    return 0


if __name__ == "__main__":
    sys.exit(WORLD.bcast(main(), root=0))
