"""Tensor conversions between torch.distributed's calls and Concord's collectives, for the
``"concord"`` backend: reduce ops, the wire form of dtypes Concord does not carry
(complex as pairs of reals, bool as uint8 for reductions), flattening and checks.
"""

import torch
from torch._C._distributed_c10d import ReduceOp

from concord.torch.handles import Average, Max, Min, Product, Sum

_RedOpType = ReduceOp.RedOpType

#: torch.distributed's reduce ops that Concord's runtime reduces itself.
CONCORD_OPS = {_RedOpType.SUM: Sum, _RedOpType.AVG: Average, _RedOpType.MIN: Min, _RedOpType.MAX: Max,
               _RedOpType.PRODUCT: Product}
#: The ops Concord's reduce-scatter takes.
SCATTER_OPS = (_RedOpType.SUM, _RedOpType.AVG)
#: The bitwise ops (integer and bool tensors, as Gloo): allgather, then folded locally.
BITWISE_OPS = {_RedOpType.BAND: torch.bitwise_and, _RedOpType.BOR: torch.bitwise_or,
               _RedOpType.BXOR: torch.bitwise_xor}
#: bool reductions on uint8 0/1 values: SUM and MAX are logical or, PRODUCT and MIN and.
_BOOL_OPS = {_RedOpType.SUM: Max, _RedOpType.MAX: Max, _RedOpType.MIN: Min, _RedOpType.PRODUCT: Min}


def reduce_op(options):
    """The RedOpType of ``options`` (AllreduceOptions/ReduceOptions/ReduceScatterOptions,
    a ReduceOp, a RedOpType, or None = SUM)."""
    op = getattr(options, "reduceOp", options)
    if op is None:
        return _RedOpType.SUM
    return getattr(op, "op", op)


def one_tensor(tensors, what):
    """The single tensor of ``tensors`` (a tensor or a list of one).

    Raises:
        ValueError: a list of another length (the backend takes one tensor per process).
    """
    if isinstance(tensors, torch.Tensor):
        return tensors
    if len(tensors) != 1:
        raise ValueError(f"concord: {what} takes one tensor per process, got {len(tensors)}")
    return tensors[0]


def concord_op(op, tensor, what):
    """Concord's reduce op for ``op`` on ``tensor``'s dtype.

    Raises:
        ValueError: PREMUL_SUM (NCCL's), a bitwise op on a floating or complex tensor,
            MIN/MAX/PRODUCT on a complex tensor.
    """
    if op in BITWISE_OPS:
        if tensor.is_floating_point() or tensor.is_complex():
            raise ValueError(f"concord: {what}: {op.name} needs an integer or bool tensor, got {tensor.dtype}")
        return None
    if op not in CONCORD_OPS:
        raise ValueError(f"concord: {what}: reduce op {op.name} is not supported (NCCL's PREMUL_SUM)")
    if tensor.dtype == torch.bool:
        if op == _RedOpType.AVG:
            raise ValueError(f"concord: {what}: AVG of a bool tensor")
        return _BOOL_OPS[op]
    if tensor.is_complex() and op not in (_RedOpType.SUM, _RedOpType.AVG):
        raise ValueError(f"concord: {what}: {op.name} of a complex tensor (only SUM and AVG are defined)")
    return CONCORD_OPS[op]


def wire(tensor):
    """``tensor`` as Concord carries it: contiguous, complex as (..., 2) reals, bool as
    uint8 (a view when ``tensor`` is contiguous, else a copy)."""
    source = tensor.contiguous()
    if source.is_complex():
        return torch.view_as_real(source)
    if source.dtype == torch.bool:
        return source.view(torch.uint8)
    return source


def flat(tensor):
    """The wire form of ``tensor`` as one row: shape [1, k]."""
    return wire(tensor).reshape(1, -1)


def unwire(values, like):
    """``values`` (the wire form of tensors like ``like``, any shape with the right number
    of elements) viewed as ``like``'s dtype and shape."""
    if like.is_complex():
        values = torch.view_as_complex(values.reshape(-1, 2).contiguous())
    elif like.dtype == torch.bool:
        values = values.view(torch.bool) if values.dtype == torch.uint8 else values.to(torch.bool)
    return values.reshape(like.shape)


def wire_width(tensor):
    """Elements of ``tensor``'s one-row wire form."""
    return tensor.numel() * (2 if tensor.is_complex() else 1)


def check_like(tensors, reference, what):
    """Each of ``tensors`` has ``reference``'s dtype and number of elements.

    Raises:
        ValueError: naming the position, both dtypes or both sizes.
    """
    for i, tensor in enumerate(tensors):
        if tensor.dtype != reference.dtype:
            raise ValueError(f"concord: {what}: tensor {i} has dtype {tensor.dtype}, the input {reference.dtype}")
        if tensor.numel() != reference.numel():
            raise ValueError(f"concord: {what}: tensor {i} has {tensor.numel()} elements (shape "
                             f"{list(tensor.shape)}), the input {reference.numel()} (shape {list(reference.shape)})")
