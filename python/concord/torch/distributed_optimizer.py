"""``DistributedOptimizer``: Horovod's wrapper of a torch optimizer, choosing among the plain
wrapper (concord.torch.optimizer), forward chaining (concord.torch.overlap) and Adasum's delta
optimizer (concord.torch.adasum_optimizer) from its arguments."""

import numbers

import torch

from concord import size
from concord.process_sets import global_process_set
from concord.torch.adasum_optimizer import adasum_optimizer
from concord.torch.compression import Compression
from concord.torch.handles import Adasum, Average, Sum
from concord.torch.optimizer import _DistributedOptimizer, wrap
from concord.torch.overlap import ForwardChainingOptimizer


def DistributedOptimizer(optimizer, named_parameters=None, compression=Compression.none,
                         backward_passes_per_step=1, op=Average, gradient_predivide_factor=1.0,
                         num_groups=0, groups=None, overlap_forward=False, model=None, sparse_as_dense=False,
                         process_set=None, gradient_queuing=True, credit_bytes=32 << 20):
    """Wrap ``optimizer`` so that ``step()`` applies gradients averaged over all ranks.

    Args:
        optimizer (torch.optim.Optimizer): the local optimizer (its param groups and
            hyperparameters are reused; its state is not).
        named_parameters: ``model.named_parameters()``; gives each gradient's allreduce a
            name that is the same on every rank. Without it, names come from the parameter
            order in the optimizer, which must then be the same on every rank.
        compression: ``Compression.none`` or ``Compression.fp16`` (halves bytes on the wire).
        backward_passes_per_step (int): number of backward passes accumulated locally before
            the allreduce starts (gradient accumulation).
        op: ``Average`` (default), ``Sum`` or ``Adasum``. With Adasum on more than one
            rank this returns Horovod's delta optimizer (concord/torch/adasum_optimizer.py:
            the ranks' parameter updates, not their gradients, are combined by Adasum;
            global process set only, no overlap_forward); on one rank the gradients'
            allreduce uses op Adasum, as Horovod.
        gradient_predivide_factor (float): with Average, the gradient is multiplied by
            1/f before the sum and by f/size after it (any other op: ValueError).
        num_groups (int): split the trainable parameters (in optimizer order) into this many
            groups of consecutive parameters with equal counts; each group is submitted as
            one grouped allreduce once all its gradients are ready (0: no groups).
        groups (list of lists of parameters): explicit groups instead of ``num_groups``;
            parameters in no group are reduced individually.
        overlap_forward (bool): forward chaining (concord/torch/overlap.py): ``step()``
            returns without waiting for the allreduces; each module's parameters are
            updated by a forward pre-hook in the next forward pass, as soon as their own
            allreduces are done. Call ``optimizer.finish()`` before evaluating without a
            forward pass or saving. Needs ``model``.
        model (torch.nn.Module): with overlap_forward, the model whose modules get the
            forward pre-hooks.
        gradient_queuing (bool or str): with overlap_forward (ignored otherwise), C-Cube's
            gradient queuing (default True): the ungrouped gradients are queued during
            backward and their allreduces started by ``step()`` in forward order (the order
            the modules ran in the forward pass), so the first layer's gradient, which the
            next forward needs first, is reduced first; False starts each allreduce as soon
            as backward produces the gradient (backward order), as the plain optimizer does;
            ``"priority"`` starts it at once while fewer than ``credit_bytes`` of started
            allreduces are unfinished and queues it otherwise, starting queued gradients
            first layer first as credit frees (checked each time backward produces a
            gradient) and the rest at ``step()`` (ByteScheduler's credit-based priority
            scheduling, Peng et al., SOSP 2019): backward overlaps communication, and the
            first layers do not wait behind the backlog.
        credit_bytes (int): for ``gradient_queuing="priority"``, the bytes on the wire
            (after compression) of started, unfinished allreduces at which backward's
            gradients are queued (default 32 MiB: two 16 MiB layers in flight keep the link
            busy).
        process_set (ProcessSet, optional): average over these ranks only (default: all).
        sparse_as_dense (bool): allreduce a dense copy of each ``torch.sparse`` gradient
            (e.g. of ``nn.Embedding(sparse=True)``) like the others and write the result
            back into ``.grad`` as a sparse tensor (it stays sparse, for optimizers such as
            ``SparseAdam``); False (default): allgather their indices and values
            (:func:`sparse_allreduce_async`) and make ``.grad`` the resulting sparse
            tensor. Both as Horovod 0.28.1. Sparse gradients in ``groups`` need True.

    Returns:
        An optimizer of a subclass of ``type(optimizer)``.

    Raises:
        NotImplementedError: op=Adasum with a process set other than the global one.
        ValueError: duplicate names, parameters missing from named_parameters, bad op,
            gradient_predivide_factor != 1 with an op other than Average,
            backward_passes_per_step < 1, both num_groups and groups, a parameter in two
            groups or not in the optimizer, overlap_forward without a model,
            with overlap_forward: gradient_queuing not True, False or "priority", or (with
            "priority") credit_bytes not an integer >= 1.
        TypeError: ``model`` is not a torch.nn.Module.
    """
    if op not in (Average, Sum, Adasum):
        raise ValueError("DistributedOptimizer: op must be Average, Sum or Adasum")
    if gradient_predivide_factor != 1.0 and op != Average:
        raise ValueError("gradient_predivide_factor not supported with op != Average")
    if op == Adasum and size() > 1:  # Horovod's delta optimizer (adasum_optimizer.py)
        if process_set is not None and process_set is not global_process_set:
            raise NotImplementedError("Adasum does not support non-global process sets yet.")
        if overlap_forward:
            raise ValueError("DistributedOptimizer: overlap_forward is not supported with op=Adasum")
        return adasum_optimizer(optimizer, named_parameters, compression, backward_passes_per_step)
    if overlap_forward and not (type(gradient_queuing) is bool or gradient_queuing == "priority"):
        raise ValueError(f"DistributedOptimizer: gradient_queuing must be True, False or 'priority', "
                         f"got {gradient_queuing!r}")
    if overlap_forward and gradient_queuing == "priority" and (
            not isinstance(credit_bytes, numbers.Integral) or isinstance(credit_bytes, bool) or credit_bytes < 1):
        raise ValueError(f"DistributedOptimizer: credit_bytes must be an integer >= 1, got {credit_bytes!r}")
    if backward_passes_per_step < 1:
        raise ValueError("DistributedOptimizer: backward_passes_per_step must be >= 1")
    wrapper = _DistributedOptimizer
    if overlap_forward:
        if model is None:
            raise ValueError("DistributedOptimizer: overlap_forward=True needs model= (the module whose "
                             "forward pre-hooks apply the updates)")
        if not isinstance(model, torch.nn.Module):
            raise TypeError(f"DistributedOptimizer: model must be a torch.nn.Module, got {type(model).__name__}")
        wrapper = ForwardChainingOptimizer
    result = wrap(wrapper, optimizer)(optimizer.param_groups, named_parameters, compression, backward_passes_per_step, op,
                 gradient_predivide_factor, num_groups, groups, sparse_as_dense, process_set)
    if overlap_forward:
        result._init_overlap(model, gradient_queuing, credit_bytes)
    return result
