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

import numpy as np
from mpi4py import MPI

__all__ = ["Comm", "Compress", "Compressor", "Error", "SUM", "PROD", "MIN", "MAX", "AVG",
           "library_path"]

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
    }
    for name, (res, args) in sigs.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
    return lib, comm_t


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


class _Handle:
    """A libgcoll handle (self._h) that close() frees through the C call
    named _destroy, once; ``with`` closes it."""
    _destroy = None

    def close(self):
        if self._h:
            h, self._h = self._h, None
            _check(getattr(_libgcoll(), self._destroy)(h))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Comm(_Handle):
    """libgcoll's communicator over an mpi4py communicator (collective)."""

    def __init__(self, mpi_comm=MPI.COMM_WORLD):
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
    def allreduce(self, sendbuf, recvbuf=None, op=SUM):
        """recvbuf = op over ranks of sendbuf; in place on sendbuf when
        recvbuf is None.  Returns the result array."""
        h, op = self._handle(), _op(op)
        if recvbuf is None:
            b = _Buf(sendbuf, "sendbuf (reduced in place)", True)
            _check(_libgcoll().gcoll_allreduce(b.ptr, b.ptr, b.size, b.gdtype, op, h))
            return sendbuf
        s = _Buf(sendbuf, "sendbuf", False)
        r, recvbuf = self._recv(s, recvbuf, s.size)
        _check(_libgcoll().gcoll_allreduce(s.ptr, r.ptr, s.size, s.gdtype, op, h))
        return recvbuf

    def bcast(self, buf, root=0):
        """buf on root to buf on every rank.  Returns buf."""
        h, b = self._handle(), _Buf(buf, "buf", True)
        _check(_libgcoll().gcoll_bcast(b.ptr, b.size, b.gdtype, self._root(root), h))
        return buf

    def reduce(self, sendbuf, recvbuf=None, op=SUM, root=0):
        """op over ranks of sendbuf into recvbuf on root (in place on
        sendbuf when recvbuf is None); returns it on root, None elsewhere."""
        h, op, root = self._handle(), _op(op), self._root(root)
        if self.rank == root and recvbuf is None:
            b = _Buf(sendbuf, "sendbuf (reduced in place on the root)", True)
            _check(_libgcoll().gcoll_reduce(b.ptr, b.ptr, b.size, b.gdtype, op, root, h))
            return sendbuf
        s = _Buf(sendbuf, "sendbuf", False)
        r = self._recv(s, recvbuf, s.size)[0] if self.rank == root else None
        _check(_libgcoll().gcoll_reduce(s.ptr, r.ptr if r else None, s.size, s.gdtype, op,
                                        root, h))
        return recvbuf if self.rank == root else None

    def allgather(self, sendbuf, recvbuf=None):
        """Every rank's sendbuf, in rank order, in recvbuf (size x sendbuf's
        elements; allocated when None).  Returns recvbuf."""
        h, s = self._handle(), _Buf(sendbuf, "sendbuf", False)
        r, recvbuf = self._recv(s, recvbuf, s.size * self.size)
        _check(_libgcoll().gcoll_allgather(s.ptr, r.ptr, s.size, s.gdtype, h))
        return recvbuf

    def reduce_scatter(self, sendbuf, recvbuf=None, op=SUM):
        """Block `rank` of op over ranks of sendbuf (size equal blocks) in
        recvbuf (allocated when None).  Returns recvbuf."""
        h, op, s = self._handle(), _op(op), _Buf(sendbuf, "sendbuf", False)
        n = self._block(s)
        r, recvbuf = self._recv(s, recvbuf, n)
        _check(_libgcoll().gcoll_reduce_scatter(s.ptr, r.ptr, n, s.gdtype, op, h))
        return recvbuf

    def alltoall(self, sendbuf, recvbuf=None):
        """Block j of sendbuf to rank j; block i of recvbuf from rank i
        (size equal blocks; recvbuf allocated when None).  Returns recvbuf."""
        h, s = self._handle(), _Buf(sendbuf, "sendbuf", False)
        n = self._block(s)
        r, recvbuf = self._recv(s, recvbuf, s.size)
        _check(_libgcoll().gcoll_alltoall(s.ptr, r.ptr, n, s.gdtype, h))
        return recvbuf

    def barrier(self):
        """Return once every rank has entered."""
        _check(_libgcoll().gcoll_barrier(self._handle()))


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

    def allreduce(self, sendbuf, recvbuf=None, op=SUM):
        """recvbuf = sum (SUM) or mean (AVG) over ranks of sendbuf, float32 of
        ``count`` elements; in place on sendbuf when recvbuf is None or
        sendbuf itself.  Returns the result array.  Every rank ends with the
        same bits."""
        h, op = self._handle(), _op(op)
        in_place = recvbuf is None or recvbuf is sendbuf
        s = _Buf(sendbuf, "sendbuf (reduced in place)" if in_place else "sendbuf", in_place)
        if s.dtype != np.float32:
            raise TypeError(f"sendbuf has dtype {s.dtype}; compressed allreduce takes float32 "
                            f"gradients only")
        if s.size != self.count:
            raise ValueError(f"sendbuf has {s.size} elements, the compressor was made for "
                             f"{self.count}")
        r, recvbuf = (s, sendbuf) if in_place else self._comm._recv(s, recvbuf, self.count)
        _check(_libgcoll().gcoll_allreduce_compressed(s.ptr, r.ptr, s.size, s.gdtype, op, h))
        return recvbuf
