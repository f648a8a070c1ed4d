"""KVStore: data-parallel parameter synchronisation with MXNet's key-value API.

Each rank holds a copy of every value (a dense tensor, identified by an integer key).
``push(key, grad)`` replaces the value by the reduction (sum by default) of every rank's
``grad``; ``pull(key, out)`` copies the value into ``out``. The collectives are Concord's
own allreduce algorithms (chosen by the cost model) over a duplicate of MPI_COMM_WORLD,
issued by one of three designs from Mamidala, "Efficient Embedding of MPI Collectives in
MXNET DAGs for scaling Deep Learning" (docs/architecture.md, "KVStore"):

* ``"funneled"`` -- the calling thread runs every allreduce itself, inside ``push``.
* ``"concurrent"`` -- ``communicators`` duplicated communicators, key k on communicator
  k mod C; pushes return at once and run on a progress thread, at most ``outstanding`` at a
  time (the pushing thread waits after every ``outstanding`` pushes).
* ``"depchain"`` -- pushes return at once and run one at a time in push order.

Every rank must ``init`` and ``push`` the same keys in the same order (for
``"concurrent"``: the same order per communicator). Misuse is reported on every rank, not
as a hang: keys in different orders raise :class:`~concord.MismatchError`, an unknown key
or a tensor whose dtype/shape differs from ``init``'s raises
:class:`~concord.InvalidArgumentError` (funneled: from ``push``; otherwise from the next
``pull`` of the key). The store keeps working afterwards.

Values may be NumPy arrays or CPU torch tensors of dtype float32, float64, float16,
int32, int64, int8 or uint8 (torch also bfloat16). ``push`` takes a snapshot of ``grad``, so
the caller may overwrite it at once. Under ``mpirun`` every rank constructs its stores in
the same order (construction is collective); MPI must provide MPI_THREAD_MULTIPLE except
for ``"funneled"`` without :func:`concord.init` (``StateError`` otherwise).
"""

import atexit
import weakref

import numpy as np

from concord import _core

__all__ = ["KVStore"]

_TYPES = ("funneled", "concurrent", "depchain")
_OPS = {"sum": _core.SUM, "average": _core.AVERAGE, "min": _core.MIN, "max": _core.MAX,
        "product": _core.PRODUCT}
_open_stores = weakref.WeakSet()


def _torch_dtype_names():
    try:
        import torch
    except ImportError:  # NumPy-only use
        return {}
    return {torch.float32: "float32", torch.float64: "float64", torch.float16: "float16",
            torch.bfloat16: "bfloat16", torch.int32: "int32", torch.int64: "int64",
            torch.int8: "int8", torch.uint8: "uint8"}


_NUMPY_DTYPES = ("float32", "float64", "float16", "int32", "int64", "int8", "uint8")


def _describe(tensor, what, writable):
    """(address, dtype name, shape) of a C-contiguous CPU tensor or NumPy array."""
    if isinstance(tensor, np.ndarray):
        if tensor.dtype.name not in _NUMPY_DTYPES:
            raise _core.InvalidArgumentError(
                f"KVStore {what}: unsupported NumPy dtype {tensor.dtype}; supported: {', '.join(_NUMPY_DTYPES)}")
        if not tensor.flags.c_contiguous or (writable and not tensor.flags.writeable):
            raise _core.InvalidArgumentError(
                f"KVStore {what}: the array must be C-contiguous{' and writable' if writable else ''}")
        return (tensor.ctypes.data, tensor.dtype.name, list(tensor.shape))
    names = _torch_dtype_names()
    if names and type(tensor).__module__.startswith("torch"):
        if tensor.device.type != "cpu" or tensor.dtype not in names or not tensor.is_contiguous():
            raise _core.InvalidArgumentError(
                f"KVStore {what}: expected a contiguous CPU tensor of a supported dtype, got "
                f"{tensor.dtype} on {tensor.device}")
        return (tensor.data_ptr(), names[tensor.dtype], list(tensor.shape))
    raise TypeError(f"KVStore {what}: expected a numpy.ndarray or torch.Tensor, got {type(tensor).__name__}")


def _snapshot(tensor):
    """A private contiguous copy of ``tensor`` (NumPy array or torch tensor)."""
    if isinstance(tensor, np.ndarray):
        return np.array(tensor, copy=True, order="C")
    return tensor.detach().contiguous().clone()


class KVStore:
    """A key-value store whose pushes are allreduced across all ranks (see the module doc).

    Args:
        type (str): ``"funneled"``, ``"concurrent"`` or ``"depchain"``.
        op (str): reduction of ``push``: ``"sum"`` (default, as MXNet), ``"average"`` (sum
            divided by the number of workers), ``"min"``, ``"max"`` or ``"product"``.
        communicators (int): ``"concurrent"`` only: number of communicators C (>= 1).
        outstanding (int): ``"concurrent"`` only: pushes after which ``push`` waits for
            them (>= 1).
        algorithm (str): allreduce algorithm name (``concord-info`` lists them); ``""``
            lets the cost model choose.

    Raises:
        ValueError: unknown ``type`` or ``op``.
        InvalidArgumentError: ``communicators`` or ``outstanding`` below 1, unknown algorithm.
        StateError: MPI provides too low a thread level (see the module doc).
    """

    def __init__(self, type="funneled", op="sum", communicators=2, outstanding=8, algorithm=""):
        if type not in _TYPES:
            raise ValueError(f"KVStore: unknown type {type!r}; use one of {', '.join(_TYPES)}")
        if op not in _OPS:
            raise ValueError(f"KVStore: unknown op {op!r}; use one of {', '.join(_OPS)}")
        self._core = _core.KVStore(type, _OPS[op], int(communicators), int(outstanding), algorithm)
        self._pinned = {}  # key -> snapshots of pushed gradients not yet known to be read
        _open_stores.add(self)

    @property
    def type(self):
        """The design: ``"funneled"``, ``"concurrent"`` or ``"depchain"``."""
        return self._core.type()

    @property
    def rank(self):
        """This process's rank in [0, num_workers)."""
        return self._core.rank()

    @property
    def num_workers(self):
        """Number of ranks taking part."""
        return self._core.num_workers()

    def init(self, key, value):
        """Collective: creates ``key`` (an int) holding rank 0's ``value`` on every rank.

        Every rank calls ``init`` with the same keys, dtypes and shapes in the same order;
        ``value`` is not modified. Raises MismatchError (ranks differ) or
        InvalidArgumentError (key already initialised) on every rank alike.
        """
        self._core.init(int(key), _describe(value, f"init of key {key}", False))

    def push(self, key, grad, priority=0):
        """Reduces every rank's ``grad`` (same dtype and shape as ``init``'s value) into ``key``.

        Takes a snapshot of ``grad``. ``funneled`` returns once the allreduce is done; the
        other designs return at once (``pull`` waits). ``priority``: higher runs first among
        ready pushes. Errors: see the module doc.
        """
        _describe(grad, f"push of key {key}", False)  # type and dtype checks before copying
        copy = _snapshot(grad)
        self._pinned.setdefault(int(key), []).append(copy)
        self._core.push(int(key), _describe(copy, f"push of key {key}", False), int(priority))

    def pull(self, key, out):
        """Copies ``key``'s value, after every push of it so far, into ``out`` (in place) and returns ``out``.

        Raises InvalidArgumentError for an unknown key or an ``out`` of another dtype or
        shape, and rethrows the error of the key's last push.
        """
        try:
            self._core.pull(int(key), _describe(out, f"pull of key {key}", True))
        finally:
            self._pinned.pop(int(key), None)  # the pushes of key are done (or failed)
        return out

    def pushpull(self, key, grad, out):
        """``push(key, grad)`` then ``pull(key, out)``; ``grad`` and ``out`` may be the same tensor."""
        self.push(key, grad)
        return self.pull(key, out)

    def barrier(self):
        """Collective: waits for this rank's pushes, then for every rank to arrive."""
        self._core.barrier()
        self._pinned.clear()

    def close(self):
        """Waits for pending pushes and frees the store's communicators. Idempotent;
        called for every open store at interpreter exit (before MPI is finalized)."""
        if self._core is not None:
            self._core.close()
            self._pinned.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


@atexit.register
def _close_open_stores():
    for store in list(_open_stores):
        store.close()
