"""Horovod's alltoall, reducescatter, grouped allgather / reducescatter, barrier and join on
torch tensors (horovod.torch 0.28.1 signatures), over concord's C++ runtime.

Like :mod:`concord.torch.mpi_ops`: every call takes a ``name`` identical on every rank
(unnamed calls are numbered per process), tensors are CPU or CUDA tensors of dtype uint8,
int8, int16, int32, int64, float16, bfloat16, float32 or float64 (and bool for alltoall and
allgather), asynchronous calls return an integer handle for ``poll``/``synchronize``. A
CUDA tensor's producer stream is waited on before the runtime reads it, and results are on
the input's device (concord.torch.device); CPU on some ranks and CUDA on others is a
MismatchError on every rank naming the ranks and both devices.
"""

import torch

from concord import _core
from concord._core import InvalidArgumentError
from concord.process_sets import set_id as _set_id
from concord.torch import device as _device
from concord.torch.mpi_ops import (Average, Sum, _DTYPE_NAMES, _check, _gathered, _name, _register,
                                   synchronize)


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
