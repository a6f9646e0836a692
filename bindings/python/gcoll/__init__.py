# SPDX-License-Identifier: BSD-3-Clause
"""Python binding of libgcoll over mpi4py, for NumPy arrays and CUDA arrays.

    from mpi4py import MPI
    import numpy as np
    import gcoll

    with gcoll.Comm(MPI.COMM_WORLD) as comm:
        x = np.ones(1 << 20, dtype=np.float32)
        comm.allreduce(x)                    # in place: x becomes the sum
        y = comm.allgather(x[:4])            # a new array of size * 4
        with gcoll.Compressor(comm, x.size, gcoll.Compress.TOPK, topk_ratio=0.01) as c:
            c.allreduce(x)                   # x: the sum, TopK-compressed between nodes

Buffers are C-contiguous NumPy arrays, or any object with
``__cuda_array_interface__`` (CuPy, PyTorch CUDA tensors): libgcoll detects
where the memory lives.  Types: int8, uint8, int32, uint32, int64, uint64,
float16, bfloat16 (ml_dtypes), float32, float64.  Ops: ``gcoll.SUM``,
``PROD``, ``MIN``, ``MAX``, ``AVG`` or their names as strings.

A ``Comm`` is collective to create and to close, like the C
``gcoll_comm_create`` / ``gcoll_comm_destroy``: every rank must close its
communicators in the same order, before MPI is finalized (``with`` or
``close()``).  One that is never closed is left to the process's exit.
A ``Compressor`` (gradient compression between nodes, float32 only) is
collective to create; closing it only frees local memory, so it may also be
left to the garbage collector.

Zero-copy arrays: ``gcoll.empty(shape, dtype)`` is ``numpy.empty`` on
memory from ``gcoll_mem_alloc`` (gcoll.h, "Zero-copy buffers"), which the
node's other ranks map.  When every rank of a node passes such arrays (the
send and the receive array, or the one array in place) the node's
shared-memory level reads and writes them directly instead of copying them
through its segment; otherwise the call copies, with the same result.  The
memory is freed when the array (and every view of it) is garbage
collected::

    grad = gcoll.empty(n, np.float32)    # zeros, in fact: fresh pages
    ...                                  # fill it
    comm.allreduce(grad)                 # in place, no copies on the node
    out = gcoll.empty(n, np.float32)
    comm.allreduce(grad, out)            # pass the result array: one that
                                         # the binding allocates is not shared

Nonblocking and persistent collectives (gcoll.h, "Nonblocking and
persistent collectives"): ``comm.iallreduce(x)``, ``ibcast``, ``ireduce``,
``iallgather``, ``ireduce_scatter``, ``ialltoall``, ``ibarrier`` and
``Compressor.iallreduce`` take the blocking method's arguments and return a
``gcoll.Request`` at once; its ``wait()`` returns what the blocking method
returns (the array it allocated, if any), ``test()`` says whether it is
done, and ``with`` waits at the end of the block::

    req = comm.iallreduce(grad)          # grad belongs to libgcoll until done
    compute()                            # overlapped (GCOLL_PROGRESS=thread)
    grad = req.wait()
    with comm.iallgather(x) as req:      # exit waits
        compute()
    everything = req.wait()              # done already: returns the result

``comm.allreduce_init(x)`` (and ``bcast_init``, ``reduce_init``,
``allgather_init``, ``reduce_scatter_init``, ``alltoall_init``,
``barrier_init``) make a persistent request: ``start()`` it, ``wait()`` it,
as often as needed, then ``free()`` it (or leave the ``with`` block).  As in
MPI, collectives of one communicator, blocking ones included, must be
posted in the same order on every rank; they may be waited in any order.

A request holds references to its arrays until it completes, so they cannot
be freed under libgcoll.  A request dropped while active (garbage collected
before wait() or test() said it was done) is waited for by its ``__del__``,
with a ``ResourceWarning``: the drop blocks until the collective completes,
which needs the other ranks to post it too, so wait explicitly.  Closing a
``Comm`` (or ``Compressor``) first waits for its requests and frees its
persistent ones, which libgcoll would otherwise refuse to destroy it with.

The library is ``$GCOLL_LIBRARY`` when set, else the libgcoll this package
was installed with, else ``libgcoll.so.0`` on the loader's path.  It must
use the same MPI library as mpi4py.  A libgcoll error raises ``gcoll.Error``
with the status and libgcoll's sentence; a bad argument caught here raises
``TypeError`` or ``ValueError`` before any rank communicates.
"""
import ctypes
import enum
import os
import warnings
import weakref

import numpy as np
from mpi4py import MPI

__all__ = ["Comm", "Compress", "Compressor", "Error", "Request", "SUM", "PROD", "MIN", "MAX",
           "AVG", "empty", "library_path", "waitall"]

SUM, PROD, MIN, MAX, AVG = range(5)
_OPS = {"sum": SUM, "prod": PROD, "min": MIN, "max": MAX, "avg": AVG}

# gcoll_dtype_t, by NumPy type name (bfloat16 from ml_dtypes, if used)
_DTYPES = {"int8": 0, "uint8": 1, "int32": 2, "uint32": 3, "int64": 4, "uint64": 5,
           "float16": 6, "bfloat16": 7, "float32": 8, "float64": 9}

# gcoll_status_t names, for messages
_STATUS = ["GCOLL_SUCCESS", "GCOLL_ERR_INVALID_ARG", "GCOLL_ERR_NO_MEMORY",
           "GCOLL_ERR_NOT_SUPPORTED", "GCOLL_ERR_TRANSPORT", "GCOLL_ERR_TIMEOUT",
           "GCOLL_ERR_MISMATCH", "GCOLL_ERR_INTERNAL"]


class Error(RuntimeError):
    """A libgcoll call failed: ``status`` is the gcoll_status_t value,
    ``status_name`` its name, the message libgcoll's sentence."""

    def __init__(self, status, message):
        self.status = status
        self.status_name = _STATUS[status] if 0 <= status < len(_STATUS) else str(status)
        super().__init__(f"{self.status_name}: {message}")


class Compress(enum.IntEnum):
    """Codecs of ``Compressor``: gcoll_compress_t, the same values (an int
    passes straight through to C)."""
    NONE = 0     # exact float32 allreduce
    BF16 = 1     # round to bfloat16, nearest-even
    TOPK = 2     # keep the ceil(ratio * n) largest magnitudes
    ONEBIT = 3   # sign per element, mean magnitude per block as its scale


class _CompressParams(ctypes.Structure):
    """gcoll_compress_params_t, field for field (zero means the default)."""
    _fields_ = [("kind", ctypes.c_int), ("topk_ratio", ctypes.c_double),
                ("onebit_block", ctypes.c_size_t), ("no_error_feedback", ctypes.c_int)]


class _Stats(ctypes.Structure):
    _fields_ = [("calls", ctypes.c_uint64), ("bytes_sent", ctypes.c_uint64),
                ("bytes_sent_inter_node", ctypes.c_uint64)]


def library_path():
    """Where libgcoll is loaded from (see the module text)."""
    if os.environ.get("GCOLL_LIBRARY"):
        return os.environ["GCOLL_LIBRARY"]
    try:
        from . import _build   # written by `make install`
        path = os.path.join(_build.LIBDIR, "libgcoll.so.0")
        if os.path.exists(path):
            return path
    except ImportError:
        pass
    return "libgcoll.so.0"


def _load():
    lib = ctypes.CDLL(library_path())
    # MPI_Comm is a pointer in Open MPI and an int in MPICH
    comm_t = ctypes.c_void_p if MPI._sizeof(MPI.Comm) == ctypes.sizeof(ctypes.c_void_p) \
        else ctypes.c_int
    vp, sz, i, st = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int
    sigs = {
        "gcoll_comm_create": (st, [comm_t, ctypes.POINTER(vp)]),
        "gcoll_comm_destroy": (st, [vp]),
        "gcoll_comm_rank": (st, [vp, ctypes.POINTER(i)]),
        "gcoll_comm_size": (st, [vp, ctypes.POINTER(i)]),
        "gcoll_comm_get_stats": (st, [vp, ctypes.POINTER(_Stats)]),
        "gcoll_allreduce": (st, [vp, vp, sz, i, i, vp]),
        "gcoll_bcast": (st, [vp, sz, i, i, vp]),
        "gcoll_reduce": (st, [vp, vp, sz, i, i, i, vp]),
        "gcoll_allgather": (st, [vp, vp, sz, i, vp]),
        "gcoll_reduce_scatter": (st, [vp, vp, sz, i, i, vp]),
        "gcoll_alltoall": (st, [vp, vp, sz, i, vp]),
        "gcoll_barrier": (st, [vp]),
        "gcoll_compressor_create": (st, [vp, sz, ctypes.POINTER(_CompressParams),
                                         ctypes.POINTER(vp)]),
        "gcoll_compressor_destroy": (st, [vp]),
        "gcoll_compressor_reset": (st, [vp]),
        "gcoll_allreduce_compressed": (st, [vp, vp, sz, i, i, vp]),
        "gcoll_compress_name": (ctypes.c_char_p, [i]),
        "gcoll_last_error": (ctypes.c_char_p, []),
        "gcoll_start": (st, [vp]),
        "gcoll_test": (st, [ctypes.POINTER(vp), ctypes.POINTER(i)]),
        "gcoll_wait": (st, [ctypes.POINTER(vp)]),
        "gcoll_waitall": (st, [sz, ctypes.POINTER(vp)]),
        "gcoll_request_free": (st, [ctypes.POINTER(vp)]),
        "gcoll_iallreduce_compressed": (st, [vp, vp, sz, i, i, vp, ctypes.POINTER(vp)]),
        "gcoll_mem_alloc": (st, [sz, ctypes.POINTER(vp)]),
        "gcoll_mem_free": (st, [vp]),
    }
    # The nonblocking (i...) and persistent (..._init) forms take the
    # blocking one's arguments plus a gcoll_request_t * at the end.
    for coll in ["allreduce", "bcast", "reduce", "allgather", "reduce_scatter", "alltoall",
                 "barrier"]:
        res, args = sigs["gcoll_" + coll]
        sigs["gcoll_i" + coll] = sigs["gcoll_" + coll + "_init"] = \
            (res, args + [ctypes.POINTER(vp)])
    for name, (res, args) in sigs.items():
        fn = getattr(lib, name, None)
        if fn is None and name in _OPTIONAL:
            continue    # the method that needs it raises GCOLL_ERR_NOT_SUPPORTED
        if fn is None:
            fn = getattr(lib, name)   # AttributeError naming the missing symbol
        fn.restype, fn.argtypes = res, args
    return lib, comm_t


# Symbols a libgcoll may lack without the whole binding failing to load:
# gcoll.h declares gcoll_iallreduce_compressed, but a libgcoll may not define
# it (yet); only Compressor.iallreduce needs it.
_OPTIONAL = {"gcoll_iallreduce_compressed"}


_lib = None


def _libgcoll():
    global _lib
    if _lib is None:
        _lib = _load()
    return _lib[0]


def _check(status):
    if status != 0:
        raise Error(status, (_libgcoll().gcoll_last_error() or b"").decode(errors="replace"))


class _Buf:
    """Pointer, element count and gcoll dtype of one contiguous array."""

    def __init__(self, obj, what, writable):
        cai = getattr(obj, "__cuda_array_interface__", None)
        if cai is not None:
            if cai.get("strides") not in (None, ()) and \
                    not _c_contiguous(cai["shape"], cai["strides"], np.dtype(cai["typestr"])):
                raise ValueError(f"{what} must be C-contiguous")
            if writable and cai["data"][1]:
                raise ValueError(f"{what} is read-only")
            self.ptr, self.dtype = cai["data"][0], np.dtype(cai["typestr"])
            self.size, self.device = int(np.prod(cai["shape"], dtype=np.int64)), True
        elif isinstance(obj, np.ndarray):
            if not obj.flags.c_contiguous:
                raise ValueError(f"{what} must be C-contiguous (use np.ascontiguousarray)")
            if writable and not obj.flags.writeable:
                raise ValueError(f"{what} is read-only")
            self.ptr, self.dtype = obj.ctypes.data, obj.dtype
            self.size, self.device = obj.size, False
        else:
            raise TypeError(f"{what} must be a NumPy array or have __cuda_array_interface__, "
                            f"not {type(obj).__name__}")
        if not self.dtype.isnative:
            raise TypeError(f"{what} has non-native byte order ({self.dtype.str}); "
                            f"use .astype({self.dtype.name!r})")
        if self.dtype.name not in _DTYPES:
            raise TypeError(f"{what} has dtype {self.dtype}, which libgcoll does not reduce or "
                            f"move; use one of {', '.join(_DTYPES)}")
        self.gdtype = _DTYPES[self.dtype.name]
        self.obj = obj


def _c_contiguous(shape, strides, dtype):
    expect = dtype.itemsize
    for n, s in zip(reversed(shape), reversed(strides)):
        if n != 1 and s != expect:
            return False
        expect *= n
    return True


def _op(op):
    if isinstance(op, str):
        if op.lower() not in _OPS:
            raise ValueError(f"unknown op {op!r}; use one of {', '.join(_OPS)}")
        return _OPS[op.lower()]
    if op not in range(5):
        raise ValueError(f"unknown op {op!r}; use gcoll.SUM, PROD, MIN, MAX or AVG")
    return op


def _kind(kind):
    """A Compress member from a member, its value or its name ("topk")."""
    try:
        return Compress[kind.upper()] if isinstance(kind, str) else Compress(kind)
    except (KeyError, ValueError):
        raise ValueError(f"unknown codec {kind!r}; use gcoll.Compress.NONE, BF16, TOPK or "
                         f"ONEBIT") from None


def _size(value, what):
    """A non-negative int for a size_t argument (ctypes would wrap a negative one)."""
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
        raise TypeError(f"{what} must be an int, not {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{what} must be >= 0, not {value}")
    return int(value)


class _Call:
    """One collective as checked here: its C arguments up to the
    communicator (or compressor) handle, the objects whose memory those
    arguments point into (a Request holds them), and what the call returns."""
    __slots__ = ("args", "keep", "result")

    def __init__(self, args, keep, result):
        self.args, self.keep, self.result = args, keep, result


def _post(name, call, handle, owners, persistent):
    """Post (or, persistent, build) gcoll_<name>; the Request it returns."""
    h = ctypes.c_void_p()
    _check(getattr(_libgcoll(), "gcoll_" + name)(*call.args, handle, ctypes.byref(h)))
    return Request(h, owners, call.keep, call.result, persistent)


class Request:
    """A nonblocking collective in flight, or a persistent one (gcoll_request_t).

    Made by ``Comm.i...()`` / ``Compressor.iallreduce()`` (active at once) or
    ``Comm...._init()`` (persistent, inactive until ``start()``).  While it
    is active it holds its arrays, its ``Comm`` and its ``Compressor``, so
    none can be freed under libgcoll; a non-persistent one lets go of them
    when it completes, a persistent one when freed.  ``with`` waits at exit
    (and frees a persistent one).  A request dropped while active is waited
    for by the garbage collector, with a ``ResourceWarning`` (see the module
    text): wait explicitly.  A failed collective raises ``gcoll.Error`` from
    the ``wait()`` or ``test()`` that completes it, once."""

    def __init__(self, handle, owners, keep, result, persistent):
        self._h = handle            # libgcoll sets it to NULL when it frees the request
        self._owners = owners       # a Comm (and Compressor): their close() completes us
        self._keep = keep
        self._result = result
        self.persistent = persistent
        self._active = not persistent
        for o in owners:
            o._requests.add(self)

    @property
    def active(self):
        """Posted or started, and not yet completed by wait() or test()."""
        return self._active

    def start(self):
        """Start a persistent request (inactive: new or completed).  Returns it."""
        self._refuse_active("gcoll_start")
        _check(_libgcoll().gcoll_start(self._h))
        self._active = True
        return self

    def test(self):
        """Advance the outstanding requests once; True when this one is done
        (then as wait(): its arrays are released, a failure raises)."""
        done = ctypes.c_int(0)
        st = _libgcoll().gcoll_test(ctypes.byref(self._h), ctypes.byref(done))
        if done.value:
            self._completed()
        _check(st)
        return bool(done.value)

    def wait(self):
        """Block until done; return what the blocking call returns (the
        result array, None for barrier and for reduce off the root).  At once
        when already done, or inactive."""
        st = _libgcoll().gcoll_wait(ctypes.byref(self._h))
        self._completed()
        _check(st)
        return self._result

    def free(self):
        """Free an inactive persistent request and release its arrays (an
        active one raises gcoll.Error: wait first).  Nothing to do for a
        non-persistent one that completed: that one freed itself."""
        self._refuse_active("gcoll_request_free")
        _check(_libgcoll().gcoll_request_free(ctypes.byref(self._h)))
        self._release()

    def _refuse_active(self, fn):
        # Active means "not yet waited", as in MPI.  libgcoll checks whether the
        # operation itself still runs, so a started request that has finished
        # but was not waited would pass there, its outcome lost; refusing it
        # here makes the answer the same whatever the timing.
        if self._active:
            raise Error(1, f"{fn}: the request is active (wait for it first)")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        try:
            self.wait()
        finally:
            if self.persistent:
                self.free()

    def __del__(self):
        if not getattr(self, "_h", None):
            return      # freed (or never made)
        if MPI is None or MPI.Is_finalized():
            return      # process exit after MPI_Finalize: nothing can run any more
        if self._active:
            warnings.warn("gcoll.Request dropped while active: waiting for it here (call "
                          "wait() instead)", ResourceWarning, stacklevel=2)
        self._finalize()

    def _finalize(self):
        """Complete and free: for __del__ and the owners' close()."""
        if self._active:
            self.wait()
        if self._h:     # persistent, inactive now
            self.free()

    def _completed(self):
        self._active = False
        if not self.persistent:
            self._release()

    def _release(self):
        self._keep = None
        for o in self._owners:
            o._requests.discard(self)
        self._owners = ()


def empty(shape, dtype=np.float64):
    """A new C-contiguous NumPy array of ``shape`` and ``dtype`` (as
    ``numpy.empty``) on memory from ``gcoll_mem_alloc``, which the node's
    peers can map: collectives on such arrays run without copies on the node
    when every rank passes such arrays (see the module text).  The memory is
    freed (``gcoll_mem_free``) when the array and all its views are garbage
    collected.  Needs no ``Comm``."""
    dt = np.dtype(dtype)
    dims = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    for d in dims:
        _size(d, "shape")
    n = int(np.prod(dims, dtype=np.int64)) if dims else 1
    nbytes = max(n * dt.itemsize, 1)   # gcoll_mem_alloc refuses 0 bytes
    lib = _libgcoll()
    p = ctypes.c_void_p()
    _check(lib.gcoll_mem_alloc(nbytes, ctypes.byref(p)))
    raw = (ctypes.c_char * nbytes).from_address(p.value)
    # the array's base is raw: when the last view goes, raw goes, and the memory with it
    weakref.finalize(raw, _mem_free, p.value)
    return np.frombuffer(raw, dtype=dt, count=n).reshape(dims)


def _mem_free(address):
    st = _libgcoll().gcoll_mem_free(address)
    if st != 0:   # a finalizer cannot raise: say so instead
        warnings.warn(f"gcoll_mem_free: {Error(st, _libgcoll().gcoll_last_error().decode())}",
                      RuntimeWarning)


def waitall(requests):
    """Wait for every request (gcoll_waitall: all complete even when one
    fails; the first failure then raises gcoll.Error).  Returns the list of
    what each wait() would return."""
    reqs = list(requests)
    if not all(isinstance(r, Request) for r in reqs):
        raise TypeError("waitall takes gcoll.Request objects")
    if len({id(r) for r in reqs}) != len(reqs):
        # the first wait frees a non-persistent one: the second would be a stale handle
        raise ValueError("waitall: the same request is listed twice")
    handles = (ctypes.c_void_p * len(reqs))(*[r._h.value for r in reqs])
    st = _libgcoll().gcoll_waitall(len(reqs), handles)
    for r, h in zip(reqs, handles):
        r._h = ctypes.c_void_p(h)    # NULL for the non-persistent ones, now freed
        r._completed()
    _check(st)
    return [r._result for r in reqs]


class _Handle:
    """A libgcoll handle (self._h) that close() frees through the C call
    named _destroy, once, after completing the requests that use it
    (self._requests, weak: a dropped request finalizes itself); ``with``
    closes it."""
    _destroy = None

    def close(self):
        if self._h:
            self._complete_requests()
            h, self._h = self._h, None
            _check(getattr(_libgcoll(), self._destroy)(h))

    def _complete_requests(self):
        """Wait for the active requests and free the persistent ones: libgcoll
        refuses to destroy a communicator that has any (they point into it).
        Every one is completed even when one fails; the first failure raises."""
        first = None
        for r in list(self._requests):
            try:
                r._finalize()
            except Error as e:
                first = first or e
        if first is not None:
            raise first

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Comm(_Handle):
    """libgcoll's communicator over an mpi4py communicator (collective)."""

    def __init__(self, mpi_comm=MPI.COMM_WORLD):
        self._requests = weakref.WeakSet()   # outstanding and persistent requests
        lib = _libgcoll()
        comm_t = _lib[1]
        self._h = ctypes.c_void_p()
        _check(lib.gcoll_comm_create(comm_t(MPI._handleof(mpi_comm)), ctypes.byref(self._h)))
        r, s = ctypes.c_int(), ctypes.c_int()
        _check(lib.gcoll_comm_rank(self._h, ctypes.byref(r)))
        _check(lib.gcoll_comm_size(self._h, ctypes.byref(s)))
        self.rank, self.size = r.value, s.value

    # -- life ---------------------------------------------------------------
    _destroy = "gcoll_comm_destroy"

    def close(self):
        """Destroy the communicator (collective).  Idempotent."""
        super().close()

    def __del__(self):
        if getattr(self, "_h", None):
            warnings.warn("gcoll.Comm never closed: closing is collective, so it is left to "
                          "process exit", ResourceWarning, stacklevel=2)

    def _handle(self):
        if not self._h:
            raise ValueError("this gcoll.Comm is closed")
        return self._h

    def stats(self):
        """This rank's counters: calls, bytes_sent, bytes_sent_inter_node."""
        s = _Stats()
        _check(_libgcoll().gcoll_comm_get_stats(self._handle(), ctypes.byref(s)))
        return {name: getattr(s, name) for name, _ in _Stats._fields_}

    # -- helpers ------------------------------------------------------------
    def _recv(self, s, recvbuf, recv_size):
        """Check recvbuf (allocated when None) against sendbuf's _Buf s."""
        if recvbuf is None:
            if s.device:
                raise ValueError("recvbuf is required for device buffers")
            recvbuf = np.empty(recv_size, dtype=s.dtype)
        r = _Buf(recvbuf, "recvbuf", True)
        if r.dtype != s.dtype:
            raise TypeError(f"recvbuf has dtype {r.dtype}, sendbuf {s.dtype}")
        if r.size != recv_size:
            raise ValueError(f"recvbuf has {r.size} elements, this call needs {recv_size}")
        return r, recvbuf

    def _block(self, s):
        """Elements per rank of a sendbuf cut into size equal blocks."""
        if s.size % self.size:
            raise ValueError(f"sendbuf has {s.size} elements, not a multiple of "
                             f"{self.size} ranks")
        return s.size // self.size

    def _root(self, root):
        if not isinstance(root, (int, np.integer)):
            raise TypeError(f"root must be an int, not {type(root).__name__}")
        return int(root)

    # -- collectives --------------------------------------------------------
    # Each collective is described once, by a _coll_* method that checks the
    # arguments and returns a _Call; the blocking method runs it, the i...
    # method posts it (a Request), the ..._init method makes it persistent.
    def _coll_allreduce(self, sendbuf, recvbuf, op):
        op = _op(op)
        if recvbuf is None:
            b = _Buf(sendbuf, "sendbuf (reduced in place)", True)
            return _Call((b.ptr, b.ptr, b.size, b.gdtype, op), (sendbuf,), sendbuf)
        s = _Buf(sendbuf, "sendbuf", False)
        r, recvbuf = self._recv(s, recvbuf, s.size)
        return _Call((s.ptr, r.ptr, s.size, s.gdtype, op), (sendbuf, recvbuf), recvbuf)

    def _coll_bcast(self, buf, root):
        b = _Buf(buf, "buf", True)
        return _Call((b.ptr, b.size, b.gdtype, self._root(root)), (buf,), buf)

    def _coll_reduce(self, sendbuf, recvbuf, op, root):
        op, root = _op(op), self._root(root)
        if self.rank == root and recvbuf is None:
            b = _Buf(sendbuf, "sendbuf (reduced in place on the root)", True)
            return _Call((b.ptr, b.ptr, b.size, b.gdtype, op, root), (sendbuf,), sendbuf)
        s = _Buf(sendbuf, "sendbuf", False)
        if self.rank != root:     # recvbuf is the root's only
            return _Call((s.ptr, None, s.size, s.gdtype, op, root), (sendbuf,), None)
        r, recvbuf = self._recv(s, recvbuf, s.size)
        return _Call((s.ptr, r.ptr, s.size, s.gdtype, op, root), (sendbuf, recvbuf), recvbuf)

    def _coll_allgather(self, sendbuf, recvbuf):
        s = _Buf(sendbuf, "sendbuf", False)
        r, recvbuf = self._recv(s, recvbuf, s.size * self.size)
        return _Call((s.ptr, r.ptr, s.size, s.gdtype), (sendbuf, recvbuf), recvbuf)

    def _coll_reduce_scatter(self, sendbuf, recvbuf, op):
        op, s = _op(op), _Buf(sendbuf, "sendbuf", False)
        n = self._block(s)
        r, recvbuf = self._recv(s, recvbuf, n)
        return _Call((s.ptr, r.ptr, n, s.gdtype, op), (sendbuf, recvbuf), recvbuf)

    def _coll_alltoall(self, sendbuf, recvbuf):
        s = _Buf(sendbuf, "sendbuf", False)
        n = self._block(s)
        r, recvbuf = self._recv(s, recvbuf, s.size)
        return _Call((s.ptr, r.ptr, n, s.gdtype), (sendbuf, recvbuf), recvbuf)

    def _run(self, name, call):
        _check(getattr(_libgcoll(), "gcoll_" + name)(*call.args, self._handle()))
        return call.result

    def _post(self, name, call, persistent=False):
        return _post(name, call, self._handle(), (self,), persistent)

    def allreduce(self, sendbuf, recvbuf=None, op=SUM):
        """recvbuf = op over ranks of sendbuf; in place on sendbuf when
        recvbuf is None.  Returns the result array."""
        return self._run("allreduce", self._coll_allreduce(sendbuf, recvbuf, op))

    def bcast(self, buf, root=0):
        """buf on root to buf on every rank.  Returns buf."""
        return self._run("bcast", self._coll_bcast(buf, root))

    def reduce(self, sendbuf, recvbuf=None, op=SUM, root=0):
        """op over ranks of sendbuf into recvbuf on root (in place on
        sendbuf when recvbuf is None); returns it on root, None elsewhere."""
        return self._run("reduce", self._coll_reduce(sendbuf, recvbuf, op, root))

    def allgather(self, sendbuf, recvbuf=None):
        """Every rank's sendbuf, in rank order, in recvbuf (size x sendbuf's
        elements; allocated when None).  Returns recvbuf."""
        return self._run("allgather", self._coll_allgather(sendbuf, recvbuf))

    def reduce_scatter(self, sendbuf, recvbuf=None, op=SUM):
        """Block `rank` of op over ranks of sendbuf (size equal blocks) in
        recvbuf (allocated when None).  Returns recvbuf."""
        return self._run("reduce_scatter", self._coll_reduce_scatter(sendbuf, recvbuf, op))

    def alltoall(self, sendbuf, recvbuf=None):
        """Block j of sendbuf to rank j; block i of recvbuf from rank i
        (size equal blocks; recvbuf allocated when None).  Returns recvbuf."""
        return self._run("alltoall", self._coll_alltoall(sendbuf, recvbuf))

    def barrier(self):
        """Return once every rank has entered."""
        self._run("barrier", _Call((), (), None))

    # -- nonblocking: a Request whose wait() returns what the blocking
    # method returns; the arrays belong to libgcoll until it completes -----
    def iallreduce(self, sendbuf, recvbuf=None, op=SUM):
        """Nonblocking allreduce()."""
        return self._post("iallreduce", self._coll_allreduce(sendbuf, recvbuf, op))

    def ibcast(self, buf, root=0):
        """Nonblocking bcast()."""
        return self._post("ibcast", self._coll_bcast(buf, root))

    def ireduce(self, sendbuf, recvbuf=None, op=SUM, root=0):
        """Nonblocking reduce(): wait() returns the result on root, None elsewhere."""
        return self._post("ireduce", self._coll_reduce(sendbuf, recvbuf, op, root))

    def iallgather(self, sendbuf, recvbuf=None):
        """Nonblocking allgather()."""
        return self._post("iallgather", self._coll_allgather(sendbuf, recvbuf))

    def ireduce_scatter(self, sendbuf, recvbuf=None, op=SUM):
        """Nonblocking reduce_scatter()."""
        return self._post("ireduce_scatter", self._coll_reduce_scatter(sendbuf, recvbuf, op))

    def ialltoall(self, sendbuf, recvbuf=None):
        """Nonblocking alltoall()."""
        return self._post("ialltoall", self._coll_alltoall(sendbuf, recvbuf))

    def ibarrier(self):
        """Nonblocking barrier(): done once every rank has entered it."""
        return self._post("ibarrier", _Call((), (), None))

    # -- persistent: an inactive Request to start() and wait() any number of
    # times on the same arrays (an allocated recvbuf is reused), then free() --
    def allreduce_init(self, sendbuf, recvbuf=None, op=SUM):
        """Persistent allreduce()."""
        return self._post("allreduce_init", self._coll_allreduce(sendbuf, recvbuf, op), True)

    def bcast_init(self, buf, root=0):
        """Persistent bcast()."""
        return self._post("bcast_init", self._coll_bcast(buf, root), True)

    def reduce_init(self, sendbuf, recvbuf=None, op=SUM, root=0):
        """Persistent reduce()."""
        return self._post("reduce_init", self._coll_reduce(sendbuf, recvbuf, op, root), True)

    def allgather_init(self, sendbuf, recvbuf=None):
        """Persistent allgather()."""
        return self._post("allgather_init", self._coll_allgather(sendbuf, recvbuf), True)

    def reduce_scatter_init(self, sendbuf, recvbuf=None, op=SUM):
        """Persistent reduce_scatter()."""
        return self._post("reduce_scatter_init",
                          self._coll_reduce_scatter(sendbuf, recvbuf, op), True)

    def alltoall_init(self, sendbuf, recvbuf=None):
        """Persistent alltoall()."""
        return self._post("alltoall_init", self._coll_alltoall(sendbuf, recvbuf), True)

    def barrier_init(self):
        """Persistent barrier()."""
        return self._post("barrier_init", _Call((), (), None), True)


class Compressor(_Handle):
    """A compressed float32 allreduce for one tensor of ``count`` elements on
    a ``Comm`` (collective to create): exact within a node, compressed with
    ``kind`` between nodes (see gcoll.h, "Gradient compression").  ``kind``
    is a ``Compress`` member, its value or its name ("topk").

    With ``error_feedback`` (the default) what a call's compression drops is
    added to the next call's input, so the compressor carries state: use one
    per tensor (gradient bucket), once per step, and ``reset()`` it when the
    model is reloaded.  ``topk_ratio`` (TOPK, in (0, 1]) and ``onebit_block``
    (ONEBIT) left at 0 take libgcoll's defaults (0.01 and 2048); a ratio
    outside (0, 1] raises ``gcoll.Error`` (GCOLL_ERR_INVALID_ARG) on every rank.
    Host arrays only for now (libgcoll: GCOLL_ERR_NOT_SUPPORTED for CUDA).
    """

    def __init__(self, comm, count, kind, topk_ratio=0.0, onebit_block=0, error_feedback=True):
        if not isinstance(comm, Comm):
            raise TypeError(f"comm must be a gcoll.Comm, not {type(comm).__name__}")
        self.count, self.kind = _size(count, "count"), _kind(kind)
        params = _CompressParams(self.kind, float(topk_ratio),
                                 _size(onebit_block, "onebit_block"), 0 if error_feedback else 1)
        self._requests = weakref.WeakSet()   # iallreduce requests not yet waited
        self._h = ctypes.c_void_p()
        _check(_libgcoll().gcoll_compressor_create(comm._handle(), self.count,
                                                   ctypes.byref(params), ctypes.byref(self._h)))
        self._comm = comm   # its _recv checks recvbuf like every other call's

    # -- life: destroying a compressor is local (no communication) ---------
    _destroy = "gcoll_compressor_destroy"

    def close(self):
        """Free the compressor (local: no communication).  Idempotent."""
        super().close()

    def __del__(self):
        # local, so safe here; at interpreter exit ctypes may be torn down
        try:
            self.close()
        except Exception:   # noqa: BLE001 - nothing to report to any more
            pass

    def _handle(self):
        if not self._h:
            raise ValueError("this gcoll.Compressor is closed")
        return self._h

    def reset(self):
        """Zero the error-feedback residuals (local, not collective)."""
        _check(_libgcoll().gcoll_compressor_reset(self._handle()))

    def _coll_allreduce(self, sendbuf, recvbuf, op):
        op = _op(op)
        in_place = recvbuf is None or recvbuf is sendbuf
        s = _Buf(sendbuf, "sendbuf (reduced in place)" if in_place else "sendbuf", in_place)
        if s.dtype != np.float32:
            raise TypeError(f"sendbuf has dtype {s.dtype}; compressed allreduce takes float32 "
                            f"gradients only")
        if s.size != self.count:
            raise ValueError(f"sendbuf has {s.size} elements, the compressor was made for "
                             f"{self.count}")
        r, recvbuf = (s, sendbuf) if in_place else self._comm._recv(s, recvbuf, self.count)
        return _Call((s.ptr, r.ptr, s.size, s.gdtype, op), (sendbuf, recvbuf), recvbuf)

    def allreduce(self, sendbuf, recvbuf=None, op=SUM):
        """recvbuf = sum (SUM) or mean (AVG) over ranks of sendbuf, float32 of
        ``count`` elements; in place on sendbuf when recvbuf is None or
        sendbuf itself.  Returns the result array.  Every rank ends with the
        same bits."""
        call = self._coll_allreduce(sendbuf, recvbuf, op)
        _check(_libgcoll().gcoll_allreduce_compressed(*call.args, self._handle()))
        return call.result

    def iallreduce(self, sendbuf, recvbuf=None, op=SUM):
        """Nonblocking allreduce(): a Request whose wait() returns the result.
        It runs as a task of libgcoll's progress engine, so with
        GCOLL_PROGRESS=thread it advances while the caller computes; the
        arrays are kept alive until the Request completes.  Raises
        gcoll.Error (GCOLL_ERR_NOT_SUPPORTED) with a libgcoll that does not
        export gcoll_iallreduce_compressed."""
        call = self._coll_allreduce(sendbuf, recvbuf, op)
        if not hasattr(_libgcoll(), "gcoll_iallreduce_compressed"):
            raise Error(3, f"{library_path()} does not export gcoll_iallreduce_compressed")
        return _post("iallreduce_compressed", call, self._handle(), (self._comm, self), False)
