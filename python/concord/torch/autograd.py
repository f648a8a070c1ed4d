"""Differentiable collectives: ``hvd.allreduce``, ``hvd.grouped_allreduce``,
``hvd.allgather`` and ``hvd.broadcast`` as ``torch.autograd.Function`` objects whose
backward passes are those of Horovod 0.28.1's ``HorovodAllreduce`` /
``HorovodGroupedAllreduce`` / ``HorovodAllgather`` / ``HorovodBroadcast``
(horovod/torch/mpi_ops.py), so that a model trains with the same gradients as under
Horovod (alltoall, reducescatter and the grouped allgather/reducescatter:
:mod:`concord.torch.autograd_scatter`). With ``g_q`` rank q's gradient of the output and n
the number of ranks of the process set, rank r's input gradient is:

* allreduce ``y = post * op_q(pre * x_q)``, any op: ``allreduce(g)`` with the same op,
  scale factors and process set (for Sum and Average this is the adjoint of
  ``F = sum_r L_r``; for Min, Max, Product and Adasum it is Horovod's rule, not a
  derivative).
* allgather ``y = concat_q x_q``: rank r's rows of ``average_q g_q`` (an Average
  allreduce), i.e. the adjoint divided by n.
* broadcast ``y = x_root``: ``average_q g_q`` on the root rank, zero elsewhere (the
  adjoint divided by n).

docs/getting_started.md ("Differences from Horovod") compares these with the adjoints.
Calls whose input does not require a gradient (or with grad mode off) go straight to the
plain collectives of :mod:`concord.torch.mpi_ops`, with no autograd bookkeeping.
"""

import torch

from concord.torch import mpi_ops
from concord.torch.compression import Compression


def _needs_grad(tensor):
    return isinstance(tensor, torch.Tensor) and tensor.requires_grad and torch.is_grad_enabled()


def _grad_name(name, suffix="grad"):
    """Name of a backward collective: derived from the forward name, so it is the same on
    every rank; unnamed forwards get unnamed (counter-numbered) backwards."""
    return None if name is None else f"{name}.{suffix}"


class _Allreduce(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, name, op, prescale_factor, postscale_factor, kwargs):
        ctx.args = (name, op, prescale_factor, postscale_factor, kwargs)
        return mpi_ops.allreduce(tensor, name=name, op=op, prescale_factor=prescale_factor,
                                 postscale_factor=postscale_factor, **kwargs)

    @staticmethod
    def backward(ctx, grad_output):
        # HorovodAllreduce.backward: the same allreduce (op, factors, set) of the gradient.
        name, op, prescale_factor, postscale_factor, kwargs = ctx.args
        grad = mpi_ops.allreduce(grad_output.contiguous(), name=_grad_name(name), op=op,
                                 prescale_factor=prescale_factor, postscale_factor=postscale_factor, **kwargs)
        return grad, None, None, None, None, None


def allreduce(tensor, average=None, name=None, compression=Compression.none, op=None, prescale_factor=1.0,
              postscale_factor=1.0, **kwargs):
    """Blocking allreduce into a new tensor, differentiable as Horovod's: the backward
    pass is the same allreduce (op, scale factors, process set) of the gradient.

    Takes the arguments and raises the errors of :func:`concord.torch.mpi_ops.allreduce_async`,
    ``compression`` as in :func:`concord.torch.mpi_ops.allreduce`; other keyword arguments
    (e.g. ``process_set``) are passed on to the forward and backward collectives."""
    if not _needs_grad(tensor):
        return mpi_ops.allreduce(tensor, average, name, compression, op, prescale_factor, postscale_factor,
                                 **kwargs)
    op = mpi_ops._resolve_op(average, op)
    compressed, context = compression.compress(tensor)
    result = _Allreduce.apply(compressed, name, op, prescale_factor, postscale_factor, kwargs)
    return compression.decompress(result, context)


class _GroupedAllreduce(torch.autograd.Function):
    @staticmethod
    def forward(ctx, name, op, prescale_factor, postscale_factor, kwargs, *tensors):
        ctx.args = (name, op, prescale_factor, postscale_factor, kwargs)
        return tuple(mpi_ops.grouped_allreduce(list(tensors), name=name, op=op, prescale_factor=prescale_factor,
                                               postscale_factor=postscale_factor, **kwargs))

    @staticmethod
    def backward(ctx, *grad_outputs):
        # HorovodGroupedAllreduce.backward: the same grouped allreduce of the gradients.
        name, op, prescale_factor, postscale_factor, kwargs = ctx.args
        grads = mpi_ops.grouped_allreduce([g.contiguous() for g in grad_outputs], name=_grad_name(name), op=op,
                                          prescale_factor=prescale_factor, postscale_factor=postscale_factor,
                                          **kwargs)
        return (None, None, None, None, None) + tuple(grads)


def grouped_allreduce(tensors, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                      **kwargs):
    """Blocking grouped allreduce (a list of new tensors), differentiable when some member
    requires a gradient: backward is the same grouped allreduce (op, factors, set) of the
    members' gradients, as Horovod's. Arguments and errors as
    :func:`concord.torch.mpi_ops.grouped_allreduce_async`."""
    tensors = list(tensors)
    if not any(_needs_grad(t) for t in tensors):
        return mpi_ops.grouped_allreduce(tensors, average, name, op, prescale_factor, postscale_factor, **kwargs)
    if not tensors:
        raise ValueError("grouped_allreduce: the group is empty")
    return list(_GroupedAllreduce.apply(name, mpi_ops._resolve_op(average, op), prescale_factor, postscale_factor,
                                        kwargs, *tensors))


def _rank_and_size(kwargs):
    process_set = kwargs.get("process_set")
    if process_set is not None and hasattr(process_set, "rank"):
        return process_set.rank(), process_set.size()
    return mpi_ops._core.rank(), mpi_ops._core.size()


def _my_rows(grad, rows, name, kwargs):
    """The gradient of an allgather's input whose rank r contributed ``rows`` rows, as
    Horovod's HorovodAllgather.backward: rank r's rows of the Average allreduce of
    ``grad`` over the set, located by an allgather of the row counts. (The reduction is
    the same Average allreduce Horovod runs; only this rank's rows are kept.)"""
    counts = mpi_ops.allgather(torch.tensor([rows], dtype=torch.int64), name=_grad_name(name, "grad.rows"),
                               **kwargs)
    rank, _ = _rank_and_size(kwargs)
    averaged = mpi_ops.allreduce(grad.contiguous(), name=_grad_name(name), op=mpi_ops.Average, **kwargs)
    offset = int(counts[:rank].sum())
    return averaged.narrow(0, offset, rows).clone()


class _Allgather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, name, kwargs):
        ctx.args = (tensor.shape[0], name, kwargs)
        return mpi_ops.allgather(tensor, name=name, **kwargs)

    @staticmethod
    def backward(ctx, grad_output):
        rows, name, kwargs = ctx.args
        return _my_rows(grad_output, rows, name, kwargs), None, None


def allgather(tensor, name=None, **kwargs):
    """Blocking allgather (concatenation along dim 0 in rank order), differentiable as
    Horovod's: backward gives each rank its own rows of the gradient averaged over the
    ranks of the set. Arguments and
    errors as :func:`concord.torch.mpi_ops.allgather_async`."""
    if not _needs_grad(tensor):
        return mpi_ops.allgather(tensor, name=name, **kwargs)
    mpi_ops._check(tensor, name, "allgather")
    if tensor.dim() == 0:  # the runtime's error, before autograd records anything
        return mpi_ops.allgather(tensor, name=name, **kwargs)
    return _Allgather.apply(tensor, name, kwargs)


class _Broadcast(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, root_rank, name, kwargs):
        ctx.args = (root_rank, name, kwargs)
        return mpi_ops.broadcast(tensor, root_rank, name=name, **kwargs)

    @staticmethod
    def backward(ctx, grad_output):
        # HorovodBroadcast.backward: the Average allreduce of the gradient, kept on the root.
        root_rank, name, kwargs = ctx.args
        grad = mpi_ops.allreduce(grad_output.contiguous(), name=_grad_name(name), op=mpi_ops.Average, **kwargs)
        if mpi_ops._core.rank() != root_rank:  # root_rank is global, with or without a process set
            grad.zero_()
        return grad, None, None, None


def broadcast(tensor, root_rank, name=None, **kwargs):
    """Blocking broadcast of root_rank's ``tensor`` into a new tensor, differentiable as
    Horovod's: the root's input gets the gradient averaged over the ranks of the set, the
    other ranks' inputs a zero gradient. Arguments and errors as :func:`concord.torch.mpi_ops.broadcast_async_`."""
    if not _needs_grad(tensor):
        return mpi_ops.broadcast(tensor, root_rank, name=name, **kwargs)
    return _Broadcast.apply(tensor, root_rank, name, kwargs)
