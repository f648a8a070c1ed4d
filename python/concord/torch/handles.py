"""The handle table of concord.torch and the checks every collective shares: the reduce ops,
the dtypes the runtime takes, the name of an unnamed call, and :func:`poll` /
:func:`synchronize` (Horovod's names).

Every asynchronous collective (concord.torch.collectives) registers the runtime's handle
here with what finishes its result and the tensors it must keep alive, and returns an
integer handle; :func:`synchronize` waits for it and returns the result.
"""

import itertools

import torch

from concord import _core
from concord._core import InvalidArgumentError
from concord.torch import device as _device

Sum = _core.SUM
Average = _core.AVERAGE
Min = _core.MIN
Max = _core.MAX
Product = _core.PRODUCT
Adasum = _core.ADASUM  # Maleki et al. 2021; float32/float64, power-of-two ranks (allreduce_adasum.h)
_OPS = (Sum, Average, Min, Max, Product, Adasum)

_DTYPE_NAMES = {
    torch.float32: "float32", torch.float64: "float64", torch.float16: "float16",
    torch.bfloat16: "bfloat16", torch.int32: "int32", torch.int64: "int64", torch.int16: "int16",
    torch.int8: "int8", torch.uint8: "uint8", torch.bool: "bool",  # bool: broadcast/allgather/alltoall only
}

# handle id -> (core handle, finish callable, tensors kept alive); with finish None,
# synchronize returns the kept tensor. Taking the next id and inserting, getting or popping
# an entry are each atomic under the GIL, so the per-tensor path takes no lock.
_handles = {}
_handle_ids = itertools.count()
_noname = itertools.count()


def _check(tensor, name, collective):
    """Type, device and dtype checks; returns the runtime's device index (concord.torch.device)."""
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"{collective} of '{name}': expected a torch.Tensor, got {type(tensor).__name__}")
    device = _device.device_index(tensor, name, collective)
    if tensor.dtype not in _DTYPE_NAMES:
        raise InvalidArgumentError(
            f"{collective} of tensor '{name}': unsupported dtype {tensor.dtype}; supported: "
            + ", ".join(str(d) for d in _DTYPE_NAMES))
    return device


def _name(name, collective):
    return name if name is not None else f"{collective}.noname.{next(_noname)}"


def _gathered(core, tensor):
    """The allgather/alltoall result of ``core`` (done) as a new tensor on ``tensor``'s
    device: allocated there with PyTorch's allocator, filled by the runtime (a memcpy, or a
    device-to-device copy out of the device memory the runtime allocated for the result)."""
    output = torch.empty(core.output_shape(), dtype=tensor.dtype, device=tensor.device)
    core.copy_output_to(output.data_ptr())
    return output


def _register(core_handle, finish, keep):
    handle = next(_handle_ids)
    _handles[handle] = (core_handle, finish, keep)
    return handle


def _resolve_op(average, op):
    if average is not None and op is not None:
        raise ValueError("allreduce: pass either 'average' (deprecated) or 'op', not both")
    if op is None:
        return Average if average is None or average else Sum
    if op not in _OPS:
        raise ValueError(f"allreduce: unknown op {op!r}; use Sum, Average, Min, Max, Product or Adasum")
    return op


def poll(handle):
    """Return True if the operation behind ``handle`` has finished (never blocks).

    Raises:
        ValueError: unknown handle (never issued, or already synchronized).
    """
    entry = _handles.get(handle)
    if entry is None:
        raise ValueError(f"poll: unknown handle {handle!r}")
    return entry[0].poll()


def runtime_handle(handle):
    """The runtime's handle behind ``handle`` (``poll()``; ``wait_for(seconds)``, which
    raises the operation's error): valid after ``handle`` was synchronized, for code that
    must know when the operation finished without taking its result.

    Raises:
        ValueError: unknown handle.
    """
    entry = _handles.get(handle)
    if entry is None:
        raise ValueError(f"runtime_handle: unknown handle {handle!r}")
    return entry[0]


def wait_for(handle, seconds):
    """Wait at most ``seconds`` for the operation behind ``handle`` (GIL released); True
    when it finished (its error raised, as synchronize). The handle stays valid.

    Raises:
        MismatchError, StateError, CommError: the operation failed.
        ValueError: unknown handle.
    """
    entry = _handles.get(handle)
    if entry is None:
        raise ValueError(f"wait_for: unknown handle {handle!r}")
    return entry[0].wait_for(seconds)


def synchronize(handle):
    """Wait for the operation behind ``handle`` (the GIL is released while waiting) and
    return its result tensor. The handle is consumed.

    Raises:
        MismatchError, StateError, CommError: the operation failed.
        ValueError: unknown handle.
    """
    entry = _handles.pop(handle, None)
    if entry is None:
        raise ValueError(f"synchronize: unknown handle {handle!r}")
    core, finish, keep = entry
    core.wait()
    return keep if finish is None else finish()
