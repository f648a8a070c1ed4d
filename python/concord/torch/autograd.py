"""Differentiable collectives: ``hvd.allreduce``, ``hvd.grouped_allreduce``,
``hvd.allgather``, ``hvd.broadcast``, ``hvd.alltoall``, ``hvd.reducescatter``,
``hvd.grouped_allgather`` and ``hvd.grouped_reducescatter`` as ``torch.autograd.Function`` objects whose
backward passes are those of Horovod 0.28.1's ``HorovodAllreduce`` /
``HorovodGroupedAllreduce`` / ``HorovodAllgather`` / ``HorovodBroadcast`` /
``HorovodAlltoall`` / ``HorovodReducescatter`` and the grouped forms
(horovod/torch/mpi_ops.py), so that a model trains with the same gradients as under
Horovod. With ``g_q`` rank q's gradient of the output and n the number of ranks of the
process set, rank r's input gradient is:

* allreduce ``y = post * op_q(pre * x_q)``, any op: ``allreduce(g)`` with the same op,
  scale factors and process set (for Sum and Average this is the adjoint of
  ``F = sum_r L_r``; for Min, Max, Product and Adasum it is Horovod's rule, not a
  derivative).
* allgather ``y = concat_q x_q``: rank r's rows of ``average_q g_q`` (an Average
  allreduce), i.e. the adjoint divided by n.
* broadcast ``y = x_root``: ``average_q g_q`` on the root rank, zero elsewhere (the
  adjoint divided by n).
* alltoall: rank r's rows ``[sum(splits[:j]), sum(splits[:j+1]))`` went to rank j, so the
  gradient of those rows comes back from rank j: an alltoall of the output's gradient
  with the *received* splits (the adjoint).
* reducescatter ``y_r = post * op_q(pre * x_q)[rows of r]`` (Sum or Average over the n
  ranks of the set): ``allgather_q(g_q) * pre * post * (n if Sum else 1)``: for Sum n times
  the adjoint, for Average n^2 times it (the adjoint is ``allgather * pre * post / n``
  for Average).
* grouped_allgather / grouped_reducescatter: the same per member, as one group.

docs/getting_started.md ("Differences from Horovod") compares these with the adjoints.
Calls whose input does not require a gradient (or with grad mode off) go straight to the
plain collectives of :mod:`concord.torch.collectives`, with no autograd bookkeeping.
"""

import torch

from concord import _core
from concord.torch import collectives, handles
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
        return collectives.allreduce(tensor, name=name, op=op, prescale_factor=prescale_factor,
                                 postscale_factor=postscale_factor, **kwargs)

    @staticmethod
    def backward(ctx, grad_output):
        # HorovodAllreduce.backward: the same allreduce (op, factors, set) of the gradient.
        name, op, prescale_factor, postscale_factor, kwargs = ctx.args
        grad = collectives.allreduce(grad_output.contiguous(), name=_grad_name(name), op=op,
                                 prescale_factor=prescale_factor, postscale_factor=postscale_factor, **kwargs)
        return grad, None, None, None, None, None


def allreduce(tensor, average=None, name=None, compression=Compression.none, op=None, prescale_factor=1.0,
              postscale_factor=1.0, **kwargs):
    """Blocking allreduce into a new tensor, differentiable as Horovod's: the backward
    pass is the same allreduce (op, scale factors, process set) of the gradient.

    Takes the arguments and raises the errors of :func:`concord.torch.collectives.allreduce_async`,
    ``compression`` as in :func:`concord.torch.collectives.allreduce`; other keyword arguments
    (e.g. ``process_set``) are passed on to the forward and backward collectives."""
    if not _needs_grad(tensor):
        return collectives.allreduce(tensor, average, name, compression, op, prescale_factor, postscale_factor,
                                 **kwargs)
    op = handles._resolve_op(average, op)
    compressed, context = compression.compress(tensor)
    result = _Allreduce.apply(compressed, name, op, prescale_factor, postscale_factor, kwargs)
    return compression.decompress(result, context)


class _GroupedAllreduce(torch.autograd.Function):
    @staticmethod
    def forward(ctx, name, op, prescale_factor, postscale_factor, kwargs, *tensors):
        ctx.args = (name, op, prescale_factor, postscale_factor, kwargs)
        return tuple(collectives.grouped_allreduce(list(tensors), name=name, op=op, prescale_factor=prescale_factor,
                                               postscale_factor=postscale_factor, **kwargs))

    @staticmethod
    def backward(ctx, *grad_outputs):
        # HorovodGroupedAllreduce.backward: the same grouped allreduce of the gradients.
        name, op, prescale_factor, postscale_factor, kwargs = ctx.args
        grads = collectives.grouped_allreduce([g.contiguous() for g in grad_outputs], name=_grad_name(name), op=op,
                                          prescale_factor=prescale_factor, postscale_factor=postscale_factor,
                                          **kwargs)
        return (None, None, None, None, None) + tuple(grads)


def grouped_allreduce(tensors, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                      **kwargs):
    """Blocking grouped allreduce (a list of new tensors), differentiable when some member
    requires a gradient: backward is the same grouped allreduce (op, factors, set) of the
    members' gradients, as Horovod's. Arguments and errors as
    :func:`concord.torch.collectives.grouped_allreduce_async`."""
    tensors = list(tensors)
    if not any(_needs_grad(t) for t in tensors):
        return collectives.grouped_allreduce(tensors, average, name, op, prescale_factor, postscale_factor, **kwargs)
    if not tensors:
        raise ValueError("grouped_allreduce: the group is empty")
    return list(_GroupedAllreduce.apply(name, handles._resolve_op(average, op), prescale_factor, postscale_factor,
                                        kwargs, *tensors))


def _rank_and_size(kwargs):
    process_set = kwargs.get("process_set")
    if process_set is not None and hasattr(process_set, "rank"):
        return process_set.rank(), process_set.size()
    return _core.rank(), _core.size()


def _my_rows(grad, rows, name, kwargs):
    """The gradient of an allgather's input whose rank r contributed ``rows`` rows, as
    Horovod's HorovodAllgather.backward: rank r's rows of the Average allreduce of
    ``grad`` over the set, located by an allgather of the row counts. (The reduction is
    the same Average allreduce Horovod runs; only this rank's rows are kept.)"""
    counts = collectives.allgather(torch.tensor([rows], dtype=torch.int64), name=_grad_name(name, "grad.rows"),
                               **kwargs)
    rank, _ = _rank_and_size(kwargs)
    averaged = collectives.allreduce(grad.contiguous(), name=_grad_name(name), op=handles.Average, **kwargs)
    offset = int(counts[:rank].sum())
    return averaged.narrow(0, offset, rows).clone()


class _Allgather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, name, kwargs):
        ctx.args = (tensor.shape[0], name, kwargs)
        return collectives.allgather(tensor, name=name, **kwargs)

    @staticmethod
    def backward(ctx, grad_output):
        rows, name, kwargs = ctx.args
        return _my_rows(grad_output, rows, name, kwargs), None, None


def allgather(tensor, name=None, **kwargs):
    """Blocking allgather (concatenation along dim 0 in rank order), differentiable as
    Horovod's: backward gives each rank its own rows of the gradient averaged over the
    ranks of the set. Arguments and
    errors as :func:`concord.torch.collectives.allgather_async`."""
    if not _needs_grad(tensor):
        return collectives.allgather(tensor, name=name, **kwargs)
    handles._check(tensor, name, "allgather")
    if tensor.dim() == 0:  # the runtime's error, before autograd records anything
        return collectives.allgather(tensor, name=name, **kwargs)
    return _Allgather.apply(tensor, name, kwargs)


class _Broadcast(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, root_rank, name, kwargs):
        ctx.args = (root_rank, name, kwargs)
        return collectives.broadcast(tensor, root_rank, name=name, **kwargs)

    @staticmethod
    def backward(ctx, grad_output):
        # HorovodBroadcast.backward: the Average allreduce of the gradient, kept on the root.
        root_rank, name, kwargs = ctx.args
        grad = collectives.allreduce(grad_output.contiguous(), name=_grad_name(name), op=handles.Average, **kwargs)
        if _core.rank() != root_rank:  # root_rank is global, with or without a process set
            grad.zero_()
        return grad, None, None, None


def broadcast(tensor, root_rank, name=None, **kwargs):
    """Blocking broadcast of root_rank's ``tensor`` into a new tensor, differentiable as
    Horovod's: the root's input gets the gradient averaged over the ranks of the set, the
    other ranks' inputs a zero gradient. Arguments and errors as :func:`concord.torch.collectives.broadcast_async_`."""
    if not _needs_grad(tensor):
        return collectives.broadcast(tensor, root_rank, name=name, **kwargs)
    return _Broadcast.apply(tensor, root_rank, name, kwargs)


def _member_name(name, i):
    return None if name is None else f"{name}.{i}"


class _Alltoall(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, splits, name, process_set):
        output, received = handles.synchronize(collectives.alltoall_async(tensor, splits, name, process_set))
        # Equal splits (None) stay equal in the backward pass.
        ctx.args = (None if splits is None else received.tolist(), name, process_set)
        ctx.mark_non_differentiable(received)
        return output, received

    @staticmethod
    def backward(ctx, grad_output, _grad_splits):
        received, name, process_set = ctx.args
        grad = collectives.alltoall(grad_output.contiguous(), splits=received, name=_grad_name(name),
                                    process_set=process_set)
        if received is not None:
            grad = grad[0]
        return grad, None, None, None


def alltoall(tensor, splits=None, name=None, process_set=None):
    """Blocking alltoall (arguments, result and errors as
    :func:`concord.torch.collectives.alltoall_async`), differentiable: the backward pass
    sends each received row's gradient back to the rank it came from (an alltoall with the
    received splits). Returns the received tensor, or ``(tensor, received_splits)`` when
    ``splits`` is given."""
    if not _needs_grad(tensor) or tensor.dim() == 0:
        return collectives.alltoall(tensor, splits=splits, name=name, process_set=process_set)
    if splits is not None:  # validated and converted as the plain collective does
        splits = collectives._splits_list(splits, tensor, name)
    output, received = _Alltoall.apply(tensor, splits, name, process_set)
    return output if splits is None else (output, received)


def _scatter_scale(op, prescale_factor, postscale_factor, process_set):
    """The factor HorovodReducescatter.backward multiplies the allgathered gradient by:
    the set's size for op Sum (1 for Average), times the prescale and postscale factors."""
    _, size = _rank_and_size({"process_set": process_set})
    return prescale_factor * postscale_factor * (size if op == handles.Sum else 1)


class _Reducescatter(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, name, op, process_set, prescale_factor, postscale_factor):
        ctx.args = (name, _scatter_scale(op, prescale_factor, postscale_factor, process_set), process_set)
        return collectives.reducescatter(tensor, name=name, op=op, process_set=process_set,
                                         prescale_factor=prescale_factor, postscale_factor=postscale_factor)

    @staticmethod
    def backward(ctx, grad_output):
        name, scale, process_set = ctx.args
        grad = collectives.allgather(grad_output.contiguous(), name=_grad_name(name), process_set=process_set)
        return grad * scale, None, None, None, None, None


def reducescatter(tensor, name=None, compression=None, op=handles.Average, process_set=None, prescale_factor=1.0,
                  postscale_factor=1.0):
    """Blocking reduce-scatter (arguments and errors as
    :func:`concord.torch.collectives.reducescatter_async`), differentiable for ``op``
    Sum and Average as Horovod's: the backward pass allgathers the ranks' gradients and
    multiplies them by the scale factors and, for Sum, by the n ranks of the set."""
    if not _needs_grad(tensor) or compression is not None or tensor.dim() == 0:
        return collectives.reducescatter(tensor, name=name, compression=compression, op=op, process_set=process_set,
                                         prescale_factor=prescale_factor, postscale_factor=postscale_factor)
    return _Reducescatter.apply(tensor, name, op, process_set, prescale_factor, postscale_factor)


class _GroupedAllgather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, name, process_set, *tensors):
        ctx.args = ([t.shape[0] for t in tensors], name, process_set)
        return tuple(collectives.grouped_allgather(list(tensors), name=name, process_set=process_set))

    @staticmethod
    def backward(ctx, *grads):
        rows, name, process_set = ctx.args
        kwargs = {"process_set": process_set}
        return (None, None) + tuple(_my_rows(g, rows[i], _member_name(name, i), kwargs) for i, g in enumerate(grads))


def grouped_allgather(tensors, name=None, process_set=None):
    """Blocking grouped allgather (see :func:`concord.torch.collectives.grouped_allgather_async`),
    differentiable: each member's backward is that of :func:`concord.torch.allgather`
    (Horovod's HorovodGroupedAllgather: this rank's rows of the averaged gradient)."""
    if not any(_needs_grad(t) for t in tensors) or any(t.dim() == 0 for t in tensors):
        return collectives.grouped_allgather(tensors, name=name, process_set=process_set)
    return list(_GroupedAllgather.apply(name, process_set, *tensors))


class _GroupedReducescatter(torch.autograd.Function):
    @staticmethod
    def forward(ctx, name, op, process_set, prescale_factor, postscale_factor, *tensors):
        ctx.args = (name, _scatter_scale(op, prescale_factor, postscale_factor, process_set), process_set)
        return tuple(collectives.grouped_reducescatter(list(tensors), name=name, op=op, process_set=process_set,
                                                       prescale_factor=prescale_factor,
                                                       postscale_factor=postscale_factor))

    @staticmethod
    def backward(ctx, *grads):
        name, scale, process_set = ctx.args
        gathered = collectives.grouped_allgather([g.contiguous() for g in grads], name=_grad_name(name),
                                                 process_set=process_set)
        return (None,) * 5 + tuple(g * scale for g in gathered)


def grouped_reducescatter(tensors, name=None, compression=None, op=handles.Average, process_set=None,
                          prescale_factor=1.0, postscale_factor=1.0):
    """Blocking grouped reduce-scatter (see
    :func:`concord.torch.collectives.grouped_reducescatter_async`), differentiable for
    Sum and Average: each member's backward is that of :func:`reducescatter`, as one
    grouped allgather."""
    if not any(_needs_grad(t) for t in tensors) or compression is not None or any(t.dim() == 0 for t in tensors):
        return collectives.grouped_reducescatter(tensors, name=name, compression=compression, op=op,
                                                 process_set=process_set, prescale_factor=prescale_factor,
                                                 postscale_factor=postscale_factor)
    return list(_GroupedReducescatter.apply(name, op, process_set, prescale_factor, postscale_factor, *tensors))
