"""Differentiable collectives: ``hvd.allreduce``, ``hvd.grouped_allreduce``,
``hvd.allgather`` and ``hvd.broadcast``
as ``torch.autograd.Function`` objects whose backward is the adjoint collective, as
Horovod's ``HorovodAllreduce`` / ``HorovodAllgather`` / ``HorovodBroadcast``
(alltoall, reducescatter and the grouped allgather/reducescatter:
:mod:`concord.torch.autograd_scatter`).

Convention (Horovod's): the objective being differentiated is the *sum over ranks* of each
rank's loss, ``F = sum_r L_r(y_r)`` where ``y_r`` is rank r's output of the collective.
Its gradient with respect to rank r's input ``x_r`` is then:

* allreduce ``y = post * op_q(pre * x_q)`` (op Sum or Average):
  ``dF/dx_r = allreduce(dL/dy)`` with the same op and scale factors.
* allgather ``y = concat_q x_q``: rank r's rows of ``sum_q dL_q/dy``, i.e. a
  reduce-scatter (Sum) of the gradient over the ranks' dim-0 extents.
* broadcast ``y = x_root``: ``sum_q dL_q/dy`` on the root (a reduce to the root), zero
  elsewhere.

Min, Max and Product allreduces are not differentiable here (backward raises). Calls
whose input does not require a gradient (or with grad mode off) go straight to the plain
collectives of :mod:`concord.torch.mpi_ops`, with no autograd bookkeeping.
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
        name, op, prescale_factor, postscale_factor, kwargs = ctx.args
        if op not in (mpi_ops.Sum, mpi_ops.Average):
            raise RuntimeError(f"allreduce of tensor '{name}': the gradient of op {op} is not defined; "
                               "only Sum and Average allreduces are differentiable")
        grad = mpi_ops.allreduce(grad_output.contiguous(), name=_grad_name(name), op=op,
                                 prescale_factor=prescale_factor, postscale_factor=postscale_factor, **kwargs)
        return grad, None, None, None, None, None


def allreduce(tensor, average=None, name=None, compression=Compression.none, op=None, prescale_factor=1.0,
              postscale_factor=1.0, **kwargs):
    """Blocking allreduce into a new tensor, differentiable for ``op`` Sum and Average:
    the backward pass is the same allreduce of the gradient.

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
        name, op, prescale_factor, postscale_factor, kwargs = ctx.args
        if op not in (mpi_ops.Sum, mpi_ops.Average):
            raise RuntimeError(f"grouped_allreduce '{name}': the gradient of op {op} is not defined; "
                               "only Sum and Average allreduces are differentiable")
        grads = mpi_ops.grouped_allreduce([g.contiguous() for g in grad_outputs], name=_grad_name(name), op=op,
                                          prescale_factor=prescale_factor, postscale_factor=postscale_factor,
                                          **kwargs)
        return (None, None, None, None, None) + tuple(grads)


def grouped_allreduce(tensors, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                      **kwargs):
    """Blocking grouped allreduce (a list of new tensors), differentiable for Sum and
    Average when some member requires a gradient: backward is the grouped allreduce of the
    members' gradients. Arguments and errors as
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
    """Rank r's ``rows`` rows of the sum over ranks of ``grad`` (the adjoint of an
    allgather whose rank r contributed ``rows`` rows): one allgather of the row counts,
    then a reduce-scatter when they are equal and the runtime has one, else an allreduce
    (Sum) of the whole gradient and this rank's slice of it."""
    counts = mpi_ops.allgather(torch.tensor([rows], dtype=torch.int64), name=_grad_name(name, "grad.rows"),
                               **kwargs)
    rank, _ = _rank_and_size(kwargs)
    reducescatter = getattr(mpi_ops, "reducescatter", None)
    if reducescatter is not None and bool((counts == rows).all()):
        return reducescatter(grad.contiguous(), name=_grad_name(name), op=mpi_ops.Sum, **kwargs)
    summed = mpi_ops.allreduce(grad.contiguous(), name=_grad_name(name), op=mpi_ops.Sum, **kwargs)
    offset = int(counts[:rank].sum())
    return summed.narrow(0, offset, rows).clone()


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
    """Blocking allgather (concatenation along dim 0 in rank order), differentiable:
    backward gives each rank its own rows of the gradient summed over ranks. Arguments and
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
        root_rank, name, kwargs = ctx.args
        grad = mpi_ops.allreduce(grad_output.contiguous(), name=_grad_name(name), op=mpi_ops.Sum, **kwargs)
        if mpi_ops._core.rank() != root_rank:  # root_rank is global, with or without a process set
            grad.zero_()
        return grad, None, None, None


def broadcast(tensor, root_rank, name=None, **kwargs):
    """Blocking broadcast of root_rank's ``tensor`` into a new tensor, differentiable:
    backward reduces (sums) the gradient to the root; the other ranks' inputs get a zero
    gradient. Arguments and errors as :func:`concord.torch.mpi_ops.broadcast_async_`."""
    if not _needs_grad(tensor):
        return mpi_ops.broadcast(tensor, root_rank, name=name, **kwargs)
    return _Broadcast.apply(tensor, root_rank, name, kwargs)
