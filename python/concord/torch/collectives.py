"""Collectives on torch tensors with Horovod's names and semantics (horovod.torch 0.28.1
signatures): allreduce, grouped allreduce, allgather, broadcast, alltoall, reducescatter,
grouped allgather / reducescatter, barrier and join, in their synchronous, asynchronous and
in-place forms, over concord's C++ runtime.

Every call takes a ``name`` that identifies the tensor across ranks; unnamed calls get
``<collective>.noname.<n>`` from a per-process counter, which matches across ranks only if
every rank makes its unnamed calls in the same order. Asynchronous calls return an integer
handle for :func:`concord.torch.handles.poll` and :func:`concord.torch.handles.synchronize`.
Input tensors are CPU or CUDA tensors of dtype uint8, int8, int16, int32, int64, float16,
bfloat16, float32 or float64 (and bool for broadcast, allgather and alltoall); a CUDA
tensor's producer stream is waited on before the runtime reads it and results are on the
input's device (concord.torch.device); CPU on some ranks and CUDA on others is a
MismatchError on every rank naming the ranks and both devices. Non-contiguous tensors are
handled through a contiguous copy. The differentiable forms are in concord.torch.autograd.
"""

import time

import torch

from concord import _core
from concord._core import InvalidArgumentError
from concord.process_sets import global_process_set as _GLOBAL_SET
from concord.process_sets import set_id as _set_id
from concord.torch import device as _device
from concord.torch.compression import Compression as _Compression
from concord.torch.handles import (_DTYPE_NAMES, _OPS, Average, Sum, _check, _gathered, _handle_ids, _handles,
                                   _name, _register, _resolve_op, synchronize)
from concord.torch.output_pool import pool as _output_pool


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

    def finish():
        for target, output in zip(targets, outputs):
            if target is not output:
                output.copy_(target)
        return list(outputs)

    return _register(_Group(cores), finish, (sources, targets, outputs))


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


def _reduce_op(op, what):
    if op is None:
        return Average
    if op not in (Sum, Average):
        raise InvalidArgumentError(f"{what}: op {op!r} is not supported; use Sum or Average")
    return op


def _splits_list(splits, tensor, name):
    """``splits`` as a list of ints, read as Horovod 0.28.1's ``_alltoall_async`` reads it
    (horovod/torch/mpi_ops.py): a list or tuple becomes an int32 tensor (floats are
    truncated toward zero), a tensor must already be int32."""
    if isinstance(splits, (list, tuple)):
        try:
            splits = torch.tensor(splits, dtype=torch.int32)
        except (TypeError, ValueError, RuntimeError) as error:
            raise TypeError(f"alltoall of tensor '{name}': splits must be numbers, got {list(splits)!r}") from error
    if isinstance(splits, torch.Tensor):
        if splits.dtype != torch.int32:  # Horovod's text (mpi_ops_v2.cc), which scripts match on
            raise ValueError(f"alltoall expects splits to contain 32-bit integer elements. (tensor '{name}': "
                             f"splits are {splits.dtype})")
        if splits.dim() != 1:
            raise InvalidArgumentError(
                f"alltoall of tensor '{name}': splits must be 1-D, got shape {list(splits.shape)}")
        return [int(v) for v in splits.tolist()]
    raise TypeError(f"alltoall of tensor '{name}': splits must be a list or an int32 tensor, "
                    f"got {type(splits).__name__}")


def alltoall_async(tensor, splits=None, name=None, process_set=None):
    """Start an alltoall: rows ``[sum(splits[:j]), sum(splits[:j+1]))`` of ``tensor`` go to
    rank j; the result concatenates, in rank order, the rows every rank sent here.

    Args:
        tensor (torch.Tensor): CPU or CUDA tensor with at least one dimension; the dtype and
            all but dim 0 must agree across ranks.
        splits (list of numbers or 1-D int32 tensor, optional): rows sent to each rank
            (one non-negative entry per rank, summing to dim 0); a list is converted to
            int32 as Horovod does (floats truncated). Default: dim 0 split equally (it must
            be divisible by the number of ranks).
        name (str, optional): the tensor's name, identical on every rank.
        process_set (ProcessSet, optional): the ranks taking part (default: all); splits
            then have one entry per member, in the set's rank order.

    Returns:
        int: a handle; :func:`synchronize` returns ``(output, received_splits)``: output on
        ``tensor``'s device, received_splits an int32 CPU tensor of the rows received from
        each rank.

    Raises:
        ValueError: a splits tensor that is not int32 (Horovod's text, "alltoall expects
            splits to contain 32-bit integer elements.").
        TypeError: splits neither a list/tuple of numbers nor a tensor.
        InvalidArgumentError: a scalar, splits of the wrong length, negative or not summing
            to dim 0; from synchronize, on every rank, when some rank has joined
            ("Alltoall is not supported with Join at this time.").
        MismatchError: from synchronize, when ranks disagree on dtype or trailing dims.
    """
    name = _name(name, "alltoall")
    device = _check(tensor, name, "alltoall")
    split_list = [] if splits is None else _splits_list(splits, tensor, name)
    source = tensor.contiguous()
    _device.wait_for_producers((source,))
    core = _core.alltoall_async(name, source.data_ptr(), _DTYPE_NAMES[tensor.dtype], list(tensor.shape), split_list,
                                _set_id(process_set, "alltoall"), device)

    def finish():
        return _gathered(core, tensor), torch.tensor(core.received_splits(), dtype=torch.int32)

    return _register(core, finish, (source,))


def alltoall(tensor, splits=None, name=None, process_set=None):
    """Blocking alltoall (see :func:`alltoall_async`). Returns the received tensor, or
    ``(tensor, received_splits)`` when ``splits`` is given (as Horovod)."""
    output, received_splits = synchronize(alltoall_async(tensor, splits, name, process_set))
    return output if splits is None else (output, received_splits)


def _scatter_output(tensor, process_set):
    identifier = _set_id(process_set, "reducescatter")
    ranks = _core.process_set_ranks(identifier) if identifier else None
    size = len(ranks) if ranks else _core.size()
    rank = _core.process_set_rank(identifier) if identifier else _core.rank()
    rows = _core.reducescatter_rows(tensor.shape[0], size, max(rank, 0)) if tensor.dim() > 0 else 0
    return torch.empty([rows, *tensor.shape[1:]], dtype=tensor.dtype, device=tensor.device)


def reducescatter_async(tensor, name=None, op=Average, process_set=None, prescale_factor=1.0,
                        postscale_factor=1.0):
    """Start a reduce-scatter: ``tensor`` (same shape and dtype on every rank) is reduced
    over the ranks and split along dim 0; rank r receives ``dim0 // size`` rows, plus one
    if ``r < dim0 % size`` (earlier ranks get the extra rows, as Horovod).

    Args:
        tensor (torch.Tensor): CPU or CUDA tensor with at least one dimension, not bool.
        name (str, optional): the tensor's name, identical on every rank.
        op: ``Average`` (default; divides by the number of ranks of the set) or ``Sum``.
        process_set (ProcessSet, optional): the ranks taking part (default: all); rows are
            split over the set's members.
        prescale_factor, postscale_factor (float): multiply the input before, the result
            after the reduction.

    Returns:
        int: a handle; :func:`synchronize` returns this rank's rows, a new tensor on
        ``tensor``'s device.

    Raises:
        InvalidArgumentError: a scalar, bool, another op.
        MismatchError: from synchronize, when ranks disagree on shape, dtype, op or scale
            factors.
        InvalidArgumentError: from synchronize, on every rank, while some rank has joined
            ("Reducescatter is not supported with Join at this time.").
    """
    name = _name(name, "reducescatter")
    device = _check(tensor, name, "reducescatter")
    op = _reduce_op(op, f"reducescatter of tensor '{name}'")
    if tensor.dim() == 0:
        raise InvalidArgumentError(
            f"reducescatter of tensor '{name}': a scalar has no dim 0 to scatter; reshape it to [1]")
    source = tensor.contiguous()
    output = _scatter_output(tensor, process_set)
    _device.wait_for_producers((source,))
    core = _core.reducescatter_async(name, source.data_ptr(), output.data_ptr(), _DTYPE_NAMES[tensor.dtype],
                                     list(tensor.shape), list(output.shape), op, float(prescale_factor),
                                     float(postscale_factor), _set_id(process_set, "reducescatter"), device)
    return _register(core, lambda: output, (source, output))


def reducescatter(tensor, name=None, compression=None, op=Average, process_set=None, prescale_factor=1.0,
                  postscale_factor=1.0):
    """Blocking reduce-scatter; returns this rank's rows. ``compression`` is
    ``Compression.none`` (default) or ``Compression.fp16``. See :func:`reducescatter_async`."""
    from concord.torch.compression import Compression
    compression = compression or Compression.none
    compressed, ctx = compression.compress(tensor)
    result = synchronize(reducescatter_async(compressed, name, op, process_set, prescale_factor, postscale_factor))
    return compression.decompress(result, ctx)


class _Group:
    """One handle for a whole group, as in Horovod."""

    def __init__(self, cores):
        self.cores = cores

    def poll(self):
        return all(core.poll() for core in self.cores)

    def wait(self):
        for core in self.cores:
            core.wait()

    def wait_for(self, seconds):
        """Waits at most ``seconds`` in all; True when every member finished."""
        deadline = time.monotonic() + seconds
        return all(core.wait_for(max(deadline - time.monotonic(), 0.0)) for core in self.cores)


def _members(tensors, name, collective):
    tensors = list(tensors)
    if not tensors:
        raise ValueError(f"{collective}: the group is empty")
    name = _name(name, collective)
    names = [f"{name}.{i}" for i in range(len(tensors))]
    devices = [_check(member, member_name, collective) for member, member_name in zip(tensors, names)]
    return tensors, names, devices


def grouped_reducescatter_async(tensors, name=None, op=Average, process_set=None, prescale_factor=1.0,
                                postscale_factor=1.0):
    """Start a reduce-scatter of a list of tensors as one group (member i is named
    ``<name>.<i>``; negotiated together and fused). :func:`synchronize` returns the list of
    this rank's rows of each member. Errors as :func:`reducescatter_async`, plus
    ValueError for an empty group; a bad member submits nothing."""
    tensors, names, devices = _members(tensors, name, "grouped_reducescatter")
    op = _reduce_op(op, "grouped_reducescatter")
    for member, member_name in zip(tensors, names):
        if member.dim() == 0:
            raise InvalidArgumentError(
                f"reducescatter of tensor '{member_name}': a scalar has no dim 0 to scatter; reshape it to [1]")
    sources = [t.contiguous() for t in tensors]
    outputs = [_scatter_output(t, process_set) for t in tensors]
    _device.wait_for_producers(sources)
    cores = _core.grouped_reducescatter_async(
        names, [t.data_ptr() for t in sources], [o.data_ptr() for o in outputs],
        [_DTYPE_NAMES[t.dtype] for t in tensors], [list(t.shape) for t in tensors],
        [list(o.shape) for o in outputs], op, float(prescale_factor), float(postscale_factor),
        _set_id(process_set, "grouped_reducescatter"), devices)
    return _register(_Group(cores), lambda: list(outputs), (sources, outputs))


def grouped_reducescatter(tensors, name=None, compression=None, op=Average, process_set=None,
                          prescale_factor=1.0, postscale_factor=1.0):
    """Blocking grouped reduce-scatter; returns a list of tensors. See
    :func:`grouped_reducescatter_async`."""
    from concord.torch.compression import Compression
    compression = compression or Compression.none
    pairs = [compression.compress(t) for t in tensors]
    results = synchronize(grouped_reducescatter_async([p[0] for p in pairs], name, op, process_set,
                                                      prescale_factor, postscale_factor))
    return [compression.decompress(r, p[1]) for r, p in zip(results, pairs)]


def grouped_allgather_async(tensors, name=None, process_set=None):
    """Start an allgather of a list of tensors as one group (member i is named
    ``<name>.<i>``; fused into one allgatherv). :func:`synchronize` returns the list of
    gathered tensors, each on its input's device. Errors as ``allgather_async``, plus
    ValueError for an empty group."""
    tensors, names, devices = _members(tensors, name, "grouped_allgather")
    sources = [t.contiguous() for t in tensors]
    _device.wait_for_producers(sources)
    cores = _core.grouped_allgather_async(names, [t.data_ptr() for t in sources],
                                          [_DTYPE_NAMES[t.dtype] for t in tensors], [list(t.shape) for t in tensors],
                                          _set_id(process_set, "grouped_allgather"), devices)

    def finish():
        return [_gathered(core, tensor) for core, tensor in zip(cores, tensors)]

    return _register(_Group(cores), finish, (sources,))


def grouped_allgather(tensors, name=None, process_set=None):
    """Blocking grouped allgather; returns a list of tensors."""
    return synchronize(grouped_allgather_async(tensors, name, process_set))


def barrier(process_set=None):
    """Block until every rank (of ``process_set``) has called barrier() (the n-th call of
    each rank meets the n-th of the others)."""
    _core.barrier(_set_id(process_set, "barrier"))


def join(device=-1):
    """Declare that this rank has no more data, and block until every rank has.

    Meanwhile, as in Horovod 0.28.1 (horovod/common/controller.cc, operations.cc), this
    rank takes part in the other ranks' allreduces contributing zeros, and Average divides
    by every rank of the set, joined ones included; an allgather, broadcast, alltoall or
    reducescatter fails on every rank with InvalidArgumentError (a HorovodInternalError)
    carrying Horovod's text, e.g. "Allgather is not supported with Join at this time.
    Specify sparse_to_dense=True if using DistributedOptimizer" (docs/getting_started.md,
    "Differences from Horovod"). ``device`` is accepted for Horovod compatibility,
    where it is the device of the zero tensors a joined rank contributes: Concord's joined
    rank contributes host placeholders, and a collective of CUDA tensors fails on every
    rank with InvalidArgumentError while some rank has joined (the device allreduces run
    device algorithms a host placeholder cannot take part in), so only ``-1`` (or None) is
    meaningful.

    Args:
        device (int): -1 (or None).

    Returns:
        int: the last rank to join.

    Raises:
        InvalidArgumentError: any other device, e.g. a CUDA ordinal.
    """
    if device not in (-1, None):
        raise InvalidArgumentError(
            f"join: device {device!r}; a joined rank contributes host placeholders and collectives of CUDA tensors "
            "fail while a rank has joined, so only device=-1 is supported")
    return _core.join()
