"""Broadcast helpers for model and optimizer state (``horovod.torch.functions``)."""

import io

import torch

from concord import rank
from concord.torch.mpi_ops import broadcast_, broadcast_async_, synchronize


def broadcast_parameters(params, root_rank):
    """Overwrite ``params`` on every rank with root_rank's values, in place.

    Args:
        params: ``model.state_dict()``, ``model.named_parameters()`` or a list of
            ``(name, tensor)`` pairs; names must be the same on every rank.
        root_rank (int): rank whose values are kept.

    Raises:
        ValueError: ``params`` is not a dict or an iterable of pairs; MismatchError if a
        name has a different shape or dtype on some rank.
    """
    if isinstance(params, dict):
        items = sorted(params.items())
    else:
        try:
            items = list(params)
        except TypeError as error:
            raise ValueError("broadcast_parameters expects a state_dict or (name, tensor) pairs") from error
        # Check every item: a bare tensor would otherwise be unpacked as (name, tensor).
        if not all(isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[0], str)
                   for item in items):
            raise ValueError("broadcast_parameters expects a state_dict or (name, tensor) pairs")
        items = sorted(items, key=lambda item: item[0])
    handles = []
    for name, tensor in items:
        if tensor is None:
            continue
        target = tensor.data if isinstance(tensor, torch.nn.Parameter) else tensor
        handles.append(broadcast_async_(target, root_rank, name=f"broadcast_parameters.{name}"))
    for handle in handles:
        synchronize(handle)


def broadcast_object(obj, root_rank=0, name=None):
    """Return root_rank's ``obj`` on every rank (serialised with ``torch.save``, so it may
    contain tensors). Two broadcasts: the byte length (int64), then the bytes (uint8).

    Args:
        obj: any object ``torch.save`` can serialise (only root_rank's is used).
        root_rank (int): rank whose object is returned.
        name (str, optional): prefix of the two broadcasts' tensor names.
    """
    name = name or "broadcast_object"
    if rank() == root_rank:
        buffer = io.BytesIO()
        torch.save(obj, buffer)
        payload = torch.frombuffer(bytearray(buffer.getvalue()), dtype=torch.uint8)
        length = torch.tensor([payload.numel()], dtype=torch.int64)
    else:
        length = torch.zeros(1, dtype=torch.int64)
    broadcast_(length, root_rank, name=f"{name}.length")
    if rank() != root_rank:
        payload = torch.empty(int(length.item()), dtype=torch.uint8)
    broadcast_(payload, root_rank, name=f"{name}.data")
    if rank() == root_rank:
        return obj
    return torch.load(io.BytesIO(payload.numpy().tobytes()))


def broadcast_optimizer_state(optimizer, root_rank):
    """Make every rank's optimizer state (``state_dict``: per-parameter buffers such as
    momentum, and the param-group hyperparameters such as ``lr``) equal to root_rank's.

    Args:
        optimizer (torch.optim.Optimizer): the same kind of optimizer over the same
            parameters on every rank (a DistributedOptimizer is fine).
        root_rank (int): rank whose state is kept.
    """
    state = broadcast_object(optimizer.state_dict(), root_rank, name="broadcast_optimizer_state")
    if rank() != root_rank:
        optimizer.load_state_dict(state)
