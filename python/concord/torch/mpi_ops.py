"""Collectives on torch tensors with Horovod's names and semantics.

Every call takes a ``name`` that identifies the tensor across ranks; unnamed calls get
``<collective>.noname.<n>`` from a per-process counter, which matches across ranks only if
every rank makes its unnamed calls in the same order. Asynchronous calls return an integer
handle for :func:`poll` and :func:`synchronize`. Input tensors are CPU or CUDA tensors of
a supported dtype, for every collective (concord.torch.device: the producer stream is
waited on, results are on the input's device; untested on a GPU); non-contiguous tensors
are handled through a contiguous copy.
"""

import itertools

import torch

from concord import _core
from concord._core import InvalidArgumentError
from concord.process_sets import global_process_set as _GLOBAL_SET
from concord.process_sets import set_id as _set_id
from concord.torch import device as _device
from concord.torch.compression import Compression as _Compression
from concord.torch.output_pool import pool as _output_pool

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


def _allreduce_into(tensor, output, name, op, prescale_factor, postscale_factor, process_set=None):
    """Submits the allreduce of ``tensor`` into ``output``, a tensor or a block of the output
    pool (``_core.OutputBlock``: the result tensor over it is made after the submission,
    i.e. while the collective runs); returns the handle."""
    device = _check(tensor, name, "allreduce")
    source = tensor.contiguous()
    if isinstance(output, torch.Tensor):
        target = output if output.is_contiguous() else torch.empty_like(output, memory_format=torch.contiguous_format)
        address = target.data_ptr()
    else:
        target, address = output, output.address
    if device != _device.HOST:  # CPU tensors: PyTorch's CPU operations are synchronous
        _device.wait_for_producers((source, target))
    core = _core.allreduce_async(name, source.data_ptr(), address, _DTYPE_NAMES[tensor.dtype],
                                 tensor.shape, op, float(prescale_factor), float(postscale_factor),
                                 _set_id(process_set, "allreduce"), device)
    if target is output and isinstance(output, torch.Tensor):
        if source is output:
            return _register(core, None, output)
        return _register(core, lambda: output, (source, output))
    if target is output:  # a pool block: kept alive by the registry before its tensor is made
        handle = _register(core, None, (source, output))
        result = _output_pool.wrap(output, tensor)
        _handles[handle] = (core, lambda: result, (source, result))
        return handle

    def finish():
        output.copy_(target)
        return output

    return _register(core, finish, (source, target, output))


def allreduce_async(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                    postscale_factor=1.0, process_set=None):
    """Start an allreduce of ``tensor`` into a new tensor; return a handle.

    Args:
        tensor (torch.Tensor): CPU or CUDA tensor, any shape, a supported dtype; the same
            shape, dtype, op and kind of memory (CPU or GPU) on every rank. A CUDA result
            is on the input's device.
        average (bool, optional): deprecated; ``True`` means ``op=Average``.
        name (str, optional): the tensor's name, identical on every rank.
        op: ``Average`` (default), ``Sum``, ``Min``, ``Max``, ``Product`` or ``Adasum``
            (adaptive summation, Maleki et al. 2021: float32/float64 tensors on a
            power-of-two number of ranks, else InvalidArgumentError). Average of integer
            tensors truncates toward zero.
        prescale_factor (float): multiplies the input before the reduction.
        postscale_factor (float): multiplies the result after the reduction.
        process_set (ProcessSet, optional): the ranks taking part (default: all;
            concord.process_sets). Every collective of this module takes it.

    Returns:
        int: a handle for :func:`poll` / :func:`synchronize`, which returns the result.

    Raises:
        InvalidArgumentError: unsupported dtype/device, empty name, name already in flight.
        StateError: not initialized.
        MemoryError: no memory for the result.
        MismatchError: from :func:`synchronize`, on every rank, when the ranks' requests
            differ.
    """
    name = _name(name, "allreduce")
    op = _resolve_op(average, op)
    # The new tensor's memory comes from the output pool (concord.torch.output_pool): a
    # released result of the same size, already faulted in; the algorithm reads `tensor`
    # and writes it directly (no copy, Executor's single-tensor path).
    block = _output_pool.take(tensor) if isinstance(tensor, torch.Tensor) else None
    if block is not None:
        return _allreduce_into(tensor, block, name, op, prescale_factor, postscale_factor, process_set)
    output = torch.empty_like(tensor, memory_format=torch.contiguous_format) \
        if isinstance(tensor, torch.Tensor) else tensor
    return _allreduce_into(tensor, output, name, op, prescale_factor, postscale_factor, process_set)


def allreduce(tensor, average=None, name=None, compression=None, op=None, prescale_factor=1.0,
              postscale_factor=1.0, process_set=None):
    """Blocking allreduce; returns a new tensor. ``compression`` is ``Compression.none``
    (default) or ``Compression.fp16``. See :func:`allreduce_async` for the arguments and
    errors."""
    if compression is None or compression is _Compression.none:  # the common case, with no extra calls
        return synchronize(allreduce_async(tensor, average, name, op, prescale_factor, postscale_factor,
                                           process_set))
    compressed, ctx = compression.compress(tensor)
    result = synchronize(allreduce_async(compressed, average, name, op, prescale_factor, postscale_factor,
                                         process_set))
    return compression.decompress(result, ctx)


def allreduce_async_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                     postscale_factor=1.0, process_set=None):
    """Start an in-place allreduce of ``tensor``; :func:`synchronize` returns ``tensor``
    holding the result. Arguments and errors as :func:`allreduce_async`."""
    # The common case of a backward pass (a contiguous CPU gradient of a supported dtype,
    # the global process set, op Sum/Average/...) in one frame: the general path below
    # costs ~3 us more per tensor in Python calls (docs/performance.md, runtime path).
    name = _name(name, "allreduce")
    if (average is None and (process_set is None or process_set is _GLOBAL_SET) and isinstance(tensor, torch.Tensor)
            and (op is None or op in _OPS) and tensor.is_contiguous()
            and _device.device_index(tensor, name, "allreduce") == _device.HOST):
        dtype = _DTYPE_NAMES.get(tensor.dtype)
        if dtype is not None:
            address = tensor.data_ptr()
            core = _core.allreduce_async(name, address, address, dtype, tensor.shape, Average if op is None else op,
                                         float(prescale_factor), float(postscale_factor), 0, _device.HOST)
            handle = next(_handle_ids)
            _handles[handle] = (core, None, tensor)
            return handle
    return _allreduce_into(tensor, tensor, name, _resolve_op(average, op), prescale_factor, postscale_factor,
                           process_set)


def allreduce_(tensor, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
               process_set=None):
    """Blocking in-place allreduce; returns ``tensor``. See :func:`allreduce_async`."""
    return synchronize(allreduce_async_(tensor, average, name, op, prescale_factor, postscale_factor, process_set))


def _grouped_allreduce_into(tensors, outputs, names, op, prescale_factor, postscale_factor, process_set=None):
    if not tensors:
        raise ValueError("grouped_allreduce: the group is empty")
    devices = [_check(member, member_name, "grouped_allreduce") for member, member_name in zip(tensors, names)]
    sources = [t.contiguous() for t in tensors]
    targets = [o if o.is_contiguous() else torch.empty_like(o, memory_format=torch.contiguous_format)
               for o in outputs]
    _device.wait_for_producers(sources + targets)
    cores = _core.grouped_allreduce_async(
        names, [t.data_ptr() for t in sources], [t.data_ptr() for t in targets],
        [_DTYPE_NAMES[t.dtype] for t in tensors], [list(t.shape) for t in tensors], op,
        float(prescale_factor), float(postscale_factor), _set_id(process_set, "grouped_allreduce"), devices)

    class _Group:  # one handle for the whole group, as in Horovod
        @staticmethod
        def poll():
            return all(core.poll() for core in cores)

        @staticmethod
        def wait():
            for core in cores:
                core.wait()

    def finish():
        for target, output in zip(targets, outputs):
            if target is not output:
                output.copy_(target)
        return list(outputs)

    return _register(_Group, finish, (sources, targets, outputs))


def grouped_allreduce_async(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                            postscale_factor=1.0, process_set=None):
    """Start an allreduce of a list of tensors as one group (Horovod's grouped allreduce):
    no member is negotiated as ready until every member has been submitted on every rank;
    the members are reduced in one cycle, fused with each other and with the other tensors
    ready in that cycle (Romero et al., NSDI 2022, section 3.2).

    Args:
        tensors (list of torch.Tensor): the members (CPU; each any shape and supported
            dtype); member i is named ``<name>.<i>``. The same grouping on every rank.
        average, name, op, prescale_factor, postscale_factor: as :func:`allreduce_async`.

    Returns:
        int: one handle; :func:`synchronize` returns the list of result tensors.

    Raises:
        ValueError: the group is empty.
        InvalidArgumentError: a bad member (then no member is submitted).
        MismatchError: from :func:`synchronize`, if the ranks group the tensors differently.
    """
    name = _name(name, "grouped_allreduce")
    tensors = list(tensors)
    outputs = [_output_pool.empty_like(t) if isinstance(t, torch.Tensor) else t for t in tensors]
    return _grouped_allreduce_into(tensors, outputs, [f"{name}.{i}" for i in range(len(tensors))],
                                   _resolve_op(average, op), prescale_factor, postscale_factor, process_set)


def grouped_allreduce(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                      postscale_factor=1.0, process_set=None):
    """Blocking grouped allreduce; returns a list of new tensors.

    See :func:`grouped_allreduce_async`."""
    return synchronize(grouped_allreduce_async(tensors, average, name, op, prescale_factor, postscale_factor,
                                               process_set))


def grouped_allreduce_async_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                             postscale_factor=1.0, process_set=None):
    """In-place grouped allreduce; :func:`synchronize` returns ``tensors`` holding the
    results. See :func:`grouped_allreduce_async`."""
    name = _name(name, "grouped_allreduce")
    tensors = list(tensors)
    return _grouped_allreduce_into(tensors, tensors, [f"{name}.{i}" for i in range(len(tensors))],
                                   _resolve_op(average, op), prescale_factor, postscale_factor, process_set)


def grouped_allreduce_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                       postscale_factor=1.0, process_set=None):
    """Blocking in-place grouped allreduce; returns ``tensors``."""
    return synchronize(grouped_allreduce_async_(tensors, average, name, op, prescale_factor, postscale_factor,
                                                process_set))


def allgather_async(tensor, name=None, process_set=None):
    """Start an allgather: the result concatenates every rank's ``tensor`` along dim 0 in
    rank order. Dim 0 may differ between ranks; the other dimensions and the dtype must
    match (else MismatchError on every rank).

    Args:
        tensor (torch.Tensor): CPU or CUDA tensor with at least one dimension, a supported
            dtype (bool included); CPU on every rank or CUDA on every rank.
        name (str, optional): the tensor's name, identical on every rank.
        process_set (ProcessSet, optional): the ranks taking part (default: all).

    Returns:
        int: a handle; :func:`synchronize` returns a new tensor of shape
        ``[sum of dim 0 over ranks, *tensor.shape[1:]]`` on ``tensor``'s device.

    Raises:
        InvalidArgumentError: a scalar (0-d), unsupported dtype/device.
        MismatchError: from synchronize, on every rank, when dtype or trailing dims differ,
            or the tensor is on the CPU on some ranks and on a GPU on others (naming the
            ranks and both devices).
    """
    name = _name(name, "allgather")
    device = _check(tensor, name, "allgather")
    source = tensor.contiguous()
    _device.wait_for_producers((source,))
    core = _core.allgather_async(name, source.data_ptr(), _DTYPE_NAMES[tensor.dtype], list(tensor.shape),
                                 _set_id(process_set, "allgather"), device)
    return _register(core, lambda: _gathered(core, tensor), (source,))


def allgather(tensor, name=None, process_set=None):
    """Blocking allgather; returns the concatenated tensor. See :func:`allgather_async`."""
    return synchronize(allgather_async(tensor, name, process_set))


def broadcast_async_(tensor, root_rank, name=None, process_set=None):
    """Start an in-place broadcast: ``tensor`` on every rank receives root_rank's values.
    Shape, dtype and root must match on every rank (else MismatchError on every rank).

    With ``process_set``, root_rank is still a global rank (as Horovod), one of the set's.

    Raises:
        InvalidArgumentError: root_rank outside [0, size()) or not in the set, unsupported
            dtype/device.
    """
    name = _name(name, "broadcast")
    device = _check(tensor, name, "broadcast")
    target = tensor if tensor.is_contiguous() else tensor.contiguous()
    _device.wait_for_producers((target,))
    core = _core.broadcast_async(name, target.data_ptr(), _DTYPE_NAMES[tensor.dtype], list(tensor.shape),
                                 int(root_rank), _set_id(process_set, "broadcast"), device)

    def finish():
        if target is not tensor:
            tensor.copy_(target)
        return tensor

    return _register(core, finish, (target, tensor))


def broadcast_(tensor, root_rank, name=None, process_set=None):
    """Blocking in-place broadcast; returns ``tensor``. See :func:`broadcast_async_`."""
    return synchronize(broadcast_async_(tensor, root_rank, name, process_set))


def broadcast_async(tensor, root_rank, name=None, process_set=None):
    """Start a broadcast into a new tensor (``tensor`` is left unchanged).

    See :func:`broadcast_async_`."""
    return broadcast_async_(tensor.clone(memory_format=torch.contiguous_format), root_rank, name, process_set)


def broadcast(tensor, root_rank, name=None, process_set=None):
    """Blocking broadcast; returns a new tensor with root_rank's values."""
    return synchronize(broadcast_async(tensor, root_rank, name, process_set))


def poll(handle):
    """Return True if the operation behind ``handle`` has finished (never blocks).

    Raises:
        ValueError: unknown handle (never issued, or already synchronized).
    """
    entry = _handles.get(handle)
    if entry is None:
        raise ValueError(f"poll: unknown handle {handle!r}")
    return entry[0].poll()


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
