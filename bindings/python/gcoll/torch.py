# SPDX-License-Identifier: BSD-3-Clause
"""PyTorch DDP communication hooks over libgcoll: exact, bf16, topk, onebit.

DistributedDataParallel hands each gradient bucket to a communication hook
in place of its own allreduce; these hooks average the bucket over the ranks
with libgcoll instead, exact or compressed between nodes (gcoll.Compressor,
see gcoll.h, "Gradient compression")::

    from mpi4py import MPI            # MPI_Init: libgcoll runs over MPI
    import torch.distributed as dist
    import gcoll.torch as gtorch

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}",
                            rank=MPI.COMM_WORLD.rank, world_size=MPI.COMM_WORLD.size)
    ddp_model = torch.nn.parallel.DistributedDataParallel(model)
    state = gtorch.GcollState(topk_ratio=0.01)      # a gcoll.Comm of MPI.COMM_WORLD
    ddp_model.register_comm_hook(state, gtorch.topk_hook)
    ...train...
    state.close()                                  # collective, before MPI_Finalize

DDP still needs a process group (it broadcasts the parameters at start and
rebuilds its buckets with it), but the gradients go through libgcoll.  The
process group's ranks must be the MPI ranks in the same order (rank and
world size taken from mpi4py, as above), so that bucket i of one rank meets
bucket i of the others.

The hooks:

``exact_hook``
    libgcoll's exact allreduce (``gcoll.Comm.iallreduce``, op AVG): the same
    mean as DDP's own allreduce, up to float rounding (another summation order).
``bf16_hook``, ``topk_hook``, ``onebit_hook``
    ``gcoll.Compressor.iallreduce`` with codec BF16, TOPK or ONEBIT, op AVG:
    exact within a node, compressed between nodes, with error feedback (what
    one step's compression drops is added to the next step's gradient).

The state (``GcollState``) holds the ``gcoll.Comm`` and one
``gcoll.Compressor`` per bucket index, created the first time a compressing
hook sees that bucket and sized to its flattened gradient (``bucket.buffer()``),
so its error-feedback residual follows that bucket from step to step.  The
first ``warmup_iters`` iterations (at least 2) use the exact allreduce:
DDP rebuilds its buckets after the first iteration, in the order the
gradients became ready, so the bucket indices and sizes are settled only
from the second iteration on; compressors made before would belong to
buckets that no longer exist.  Creating a compressor is collective over the
communicator, which is safe inside the hook because every rank sees its
buckets in the same order (DDP's own allreduces rely on that too).  A
bucket whose size changes later (another model) gets a new compressor.

The Future: each hook returns a ``torch.futures.Future`` completed from the
libgcoll request of the nonblocking allreduce (``Comm.iallreduce`` /
``Compressor.iallreduce``; the compressed one is an engine task in
libgcoll, progressed by its progress thread).  For host buckets the hook
returns at once and a waiter thread of the state waits for the requests in
posting order and completes their Futures, so the allreduce of bucket k
runs while autograd computes bucket k+1's gradients.  This needs libgcoll to
serialise calls from two threads, which it does with its progress thread
(GCOLL_PROGRESS=thread, the default) or under MPI_THREAD_MULTIPLE; otherwise
(``state.overlap`` is False, or set it so) the hook waits itself and returns
a completed Future.  CUDA buckets are always waited for in the hook.

Tensors: CPU tensors go to libgcoll as NumPy views of the bucket
(``tensor.numpy()``, no copy), float32 (float64 and float16 too for
``exact_hook``; other dtypes are averaged through a float32 copy, and the
compressed hooks take float32 only, so they also copy any other dtype).
CUDA tensors go to libgcoll through ``__cuda_array_interface__`` after the
device is synchronized (libgcoll must then be built with CUDA: a
libgcoll built without CUDA would read the device pointer as host memory;
pass ``stage_cuda=True`` for such a library).  The compressed allreduce
stages CUDA buffers through host memory itself (codecs on the host); a
libgcoll that refuses them (GCOLL_ERR_NOT_SUPPORTED, found on every rank
before anything is sent: one built without CUDA, or older) makes the state
stage that bucket through a host copy from then on.  The CUDA path is
untested so far (no GPU with torch where this was written).

Requires torch and mpi4py; importing ``gcoll`` itself does not import torch.
"""
import os
import queue
import threading

import torch
from mpi4py import MPI

from . import AVG, Comm, Compress, Compressor, Error

__all__ = ["GcollState", "exact_hook", "bf16_hook", "topk_hook", "onebit_hook", "HOOKS",
           "register"]

_NOT_SUPPORTED = 3       # gcoll_status_t GCOLL_ERR_NOT_SUPPORTED
# dtypes that libgcoll's exact allreduce takes as NumPy views (bfloat16
# would need ml_dtypes: it goes through float32 instead)
_EXACT_DTYPES = (torch.float32, torch.float64, torch.float16)


class GcollState:
    """State of the gcoll DDP hooks: the communicator, one compressor per
    bucket index, the iteration count and the warm-up.

    ``comm``: a ``gcoll.Comm`` whose ranks are the process group's, in the
    same order; when None, one is made over ``mpi_comm`` (default
    ``MPI.COMM_WORLD``, collective) and closed by ``close()``.
    ``warmup_iters`` (>= 2): iterations that use the exact allreduce while
    DDP rebuilds its buckets.  ``topk_ratio`` (TOPK; 0: libgcoll's 0.01),
    ``onebit_block`` (ONEBIT; 0: libgcoll's 2048) and ``error_feedback``
    are the ``gcoll.Compressor`` parameters.  ``stage_cuda``: copy CUDA
    buckets to host memory for every allreduce (for a libgcoll built
    without CUDA).

    One state serves one hook on one DDP model (its compressors carry that
    model's residuals); ``reset()`` zeroes the residuals (e.g. after loading
    a checkpoint).  ``close()`` is collective, like ``gcoll.Comm.close``.
    """

    def __init__(self, comm=None, *, mpi_comm=None, warmup_iters=2, topk_ratio=0.0,
                 onebit_block=0, error_feedback=True, stage_cuda=False):
        if not isinstance(warmup_iters, int) or warmup_iters < 2:
            raise ValueError(f"warmup_iters must be an int >= 2 (DDP rebuilds its buckets "
                             f"after the first iteration), not {warmup_iters!r}")
        if comm is not None and not isinstance(comm, Comm):
            raise TypeError(f"comm must be a gcoll.Comm, not {type(comm).__name__}")
        self._own_comm = comm is None
        self.comm = Comm(mpi_comm if mpi_comm is not None else MPI.COMM_WORLD) \
            if comm is None else comm
        self.warmup_iters = warmup_iters
        self.topk_ratio = float(topk_ratio)
        self.onebit_block = int(onebit_block)
        self.error_feedback = bool(error_feedback)
        self.stage_cuda = bool(stage_cuda)
        self.iter = 0                  # iterations completed (counted at bucket 0)
        self.kind = None               # the codec of the hook using this state
        self.compressors = {}          # bucket index -> gcoll.Compressor
        self.calls = {"exact": 0, "compressed": 0}   # allreduces made, by kind
        self._stage_compressed = False  # libgcoll refused a CUDA bucket: stage it
        # Host buckets complete in the background: a waiter thread waits for
        # each request in posting order and completes its Future, so the
        # hook returns while the allreduce runs (overlapping the rest of the
        # backward pass).  Posting from the autograd thread while the waiter
        # waits needs libgcoll's engine lock, which is on with
        # MPI_THREAD_MULTIPLE or its progress thread; otherwise (and with
        # overlap=False) the hook waits itself.
        self.overlap = _engine_serialises()
        self._queue = None
        self._waiter = None

    # -- life ---------------------------------------------------------------
    def reset(self):
        """Zero every compressor's error-feedback residual (local)."""
        for c in self.compressors.values():
            c.reset()

    def close(self):
        """Free the compressors and, if the state made it, the communicator
        (collective).  Idempotent."""
        self._stop_waiter()
        for c in self.compressors.values():
            c.close()
        self.compressors.clear()
        if self._own_comm and self.comm is not None:
            self.comm.close()
        self.comm = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- the waiter thread --------------------------------------------------
    def _complete_later(self, req, work, tensor, fut, kind):
        if self._waiter is None:
            self._queue = queue.Queue()
            self._waiter = threading.Thread(target=self._wait_loop, name="gcoll-ddp-waiter",
                                            daemon=True)
            self._waiter.start()
        self._queue.put((req, work, tensor, fut, kind))

    def _wait_loop(self):
        while True:
            item = self._queue.get()
            if item is None:
                return
            req, work, tensor, fut, kind = item
            try:
                req.wait()                  # releases the GIL inside libgcoll
                self.calls[kind] += 1
                if work.data_ptr() != tensor.data_ptr():
                    tensor.copy_(work)
                fut.set_result(tensor)
            except BaseException as e:      # the Future carries it to DDP
                fut.set_exception(e)

    def _stop_waiter(self):
        if self._waiter is not None:
            self._queue.put(None)
            self._waiter.join()
            self._waiter = None

    # -- for the hooks ------------------------------------------------------
    def _compressor(self, index, count, kind):
        """The compressor of bucket ``index``, made (collectively) when the
        bucket is new or changed size."""
        if self.kind is None:
            self.kind = kind
        elif self.kind != kind:
            raise ValueError(f"this GcollState serves the {self.kind.name.lower()} hook; make "
                             f"another one for the {kind.name.lower()} hook")
        c = self.compressors.get(index)
        if c is None or c.count != count:
            if c is not None:
                c.close()
            c = self.compressors[index] = Compressor(
                self.comm, count, kind, topk_ratio=self.topk_ratio,
                onebit_block=self.onebit_block, error_feedback=self.error_feedback)
        return c


def _engine_serialises():
    """Whether libgcoll serialises calls from two threads (see GcollState)."""
    if os.environ.get("GCOLL_PROGRESS", "auto").lower() != "caller":
        return True
    return MPI.Query_thread() >= MPI.THREAD_MULTIPLE


def _completed_future(tensor):
    fut = torch.futures.Future(devices=[tensor.device] if tensor.is_cuda else None)
    fut.set_result(tensor)
    return fut


def _post(state, compressor, tensor):
    """Average ``tensor`` over the ranks in place with libgcoll (the
    compressor's allreduce, or the exact one when None); wait for it."""
    if state.comm is None:
        raise ValueError("this GcollState is closed")
    wanted = (torch.float32,) if compressor is not None else _EXACT_DTYPES
    stage = tensor.is_cuda and (state.stage_cuda or
                                (compressor is not None and state._stage_compressed))
    work = tensor.detach()
    if stage:
        work = work.to("cpu", torch.float32)
    elif work.dtype not in wanted or not work.is_contiguous():
        work = work.to(torch.float32).contiguous()
    if work.is_cuda:
        # libgcoll orders only the legacy default stream before the call;
        # backward and DDP's bucket copies may run on others: finish them all
        torch.cuda.synchronize(work.device)
        buf = work
    else:
        buf = work.numpy()
    try:
        req = compressor.iallreduce(buf, op=AVG) if compressor is not None \
            else state.comm.iallreduce(buf, op=AVG)
    except Error as e:
        if not (e.status == _NOT_SUPPORTED and work.is_cuda and compressor is not None):
            raise
        # Refused on every rank before anything was sent (the argument check
        # is local and the same everywhere): stage through the host from now on.
        state._stage_compressed = True
        return _post(state, compressor, tensor)
    kind = "compressed" if compressor is not None else "exact"
    if state.overlap and not work.is_cuda:
        fut = torch.futures.Future()
        state._complete_later(req, work, tensor, fut, kind)
        return fut
    req.wait()
    state.calls[kind] += 1
    if work.data_ptr() != tensor.data_ptr():
        tensor.copy_(work)
    return _completed_future(tensor)


def _hook(kind, state, bucket):
    tensor = bucket.buffer()
    compress = kind != Compress.NONE and state.iter >= state.warmup_iters
    if bucket.is_last():            # bucket 0 is reduced last in an iteration
        state.iter += 1
    c = state._compressor(bucket.index(), tensor.numel(), kind) if compress else None
    return _post(state, c, tensor)


def exact_hook(state, bucket):
    """DDP comm hook: libgcoll's exact allreduce (mean over ranks) of the
    bucket.  ``ddp_model.register_comm_hook(GcollState(), exact_hook)``."""
    return _hook(Compress.NONE, state, bucket)


def bf16_hook(state, bucket):
    """DDP comm hook: mean over ranks, bfloat16 between nodes with error
    feedback (exact during the warm-up)."""
    return _hook(Compress.BF16, state, bucket)


def topk_hook(state, bucket):
    """DDP comm hook: mean over ranks, the ``state.topk_ratio`` largest
    magnitudes between nodes with error feedback (exact during the warm-up)."""
    return _hook(Compress.TOPK, state, bucket)


def onebit_hook(state, bucket):
    """DDP comm hook: mean over ranks, a sign per element and a scale per
    ``state.onebit_block`` elements between nodes with error feedback (exact
    during the warm-up)."""
    return _hook(Compress.ONEBIT, state, bucket)


HOOKS = {"exact": exact_hook, "bf16": bf16_hook, "topk": topk_hook, "onebit": onebit_hook}


def register(ddp_model, hook, state=None, **state_args):
    """``ddp_model.register_comm_hook(state, HOOKS[hook])`` with a new
    ``GcollState(**state_args)`` when ``state`` is None (``hook``: a name of
    ``HOOKS`` or one of the hook functions).  Returns the state, to close."""
    if isinstance(hook, str):
        if hook not in HOOKS:
            raise ValueError(f"unknown hook {hook!r}; use one of {', '.join(HOOKS)}")
        hook = HOOKS[hook]
    if state is None:
        state = GcollState(**state_args)
    ddp_model.register_comm_hook(state, hook)
    return state
