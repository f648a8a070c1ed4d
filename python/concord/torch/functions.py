"""Broadcast helpers for model and optimizer state (``horovod.torch.functions``)."""

import torch

from concord import rank
from concord.torch.collectives import broadcast_async_
from concord.torch.handles import synchronize
from concord.torch.objects import broadcast_object


def broadcast_parameters(params, root_rank):
    """Overwrite ``params`` on every rank with root_rank's values, in place.

    Args:
        params: ``model.state_dict()``, ``model.named_parameters()`` or a list of
            ``(name, tensor)`` pairs; names must be the same on every rank.
        root_rank (int): rank whose values are kept.

    Raises:
        ValueError: ``params`` is not a dict or an iterable of pairs.
        MismatchError: a name has a different shape or dtype on some rank.
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


def _initialise_state(optimizer):
    """Horovod's initialisation of an empty optimizer state: zero gradients for the
    parameters that require one and have no state, then one step of the optimizer itself
    (for a DistributedOptimizer the wrapped class's step, so nothing is allreduced)."""
    if len(optimizer.state_dict()["state"]) != 0:
        return
    for group in optimizer.param_groups:
        for p in group["params"]:
            if p.requires_grad and p not in optimizer.state:
                p.grad = torch.zeros_like(p)
                if isinstance(optimizer, torch.optim.SparseAdam):
                    p.grad = p.grad.to_sparse()
    if getattr(optimizer, "_is_distributed_optimizer", False):
        # The user's optimizer class: the first in the MRO that is not one of Concord's
        # wrappers (whose step() would allreduce, which only this rank may be doing: a
        # worker joining an elastic job has no state while the others have).
        user_class = next(c for c in type(optimizer).__mro__[1:] if not c.__module__.startswith("concord."))
        user_class.step(optimizer)
    else:
        optimizer.step()


def broadcast_optimizer_state(optimizer, root_rank, process_set=None):
    """Make every rank's optimizer state (``state_dict``: per-parameter buffers such as
    momentum, and the param-group hyperparameters such as ``lr``) equal to root_rank's.

    As Horovod 0.28.1's (horovod/torch/functions.py), an optimizer whose state is empty
    (no step taken yet) is first initialised on every rank by one step of the wrapped
    optimizer with zero gradients: every parameter that requires a gradient and has no
    state gets a zero ``.grad`` (sparse for ``SparseAdam``), parameters that require none
    keep ``.grad`` None, and no allreduce runs. That step changes the parameters of an
    optimizer with weight decay, as under Horovod (docs/getting_started.md, "Differences
    from Horovod"). Root_rank's whole ``state_dict`` then travels as one object
    (:func:`broadcast_object`); parameters without state need no special case.

    Args:
        optimizer (torch.optim.Optimizer): the same kind of optimizer over the same
            parameters on every rank (a DistributedOptimizer is fine).
        root_rank (int): GLOBAL rank whose state is kept (one of ``process_set``'s ranks
            when one is given, as Horovod).
        process_set (ProcessSet, optional): the ranks taking part (default: all).

    Raises:
        ValueError (from ``load_state_dict``): the optimizers' param groups differ in size.
    """
    _initialise_state(optimizer)
    kwargs = {} if process_set is None else {"process_set": process_set}
    state = broadcast_object(optimizer.state_dict(), root_rank, name="broadcast_optimizer_state", **kwargs)
    if rank() != root_rank:
        optimizer.load_state_dict(state)
