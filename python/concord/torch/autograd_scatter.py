"""Differentiable ``alltoall``, ``reducescatter``, ``grouped_allgather`` and
``grouped_reducescatter`` with the backward passes of Horovod 0.28.1's ``HorovodAlltoall``,
``HorovodReducescatter``, ``HorovodGroupedAllgather`` and ``HorovodGroupedReducescatter``
(horovod/torch/mpi_ops.py), as :mod:`concord.torch.autograd` does for the others:

* alltoall: rank r's rows ``[sum(splits[:j]), sum(splits[:j+1]))`` went to rank j, so the
  gradient of those rows comes back from rank j: an alltoall of the output's gradient
  with the *received* splits (the adjoint).
* reducescatter ``y_r = post * op_q(pre * x_q)[rows of r]`` (Sum or Average over the n
  ranks of the set): ``allgather_q(g_q) * pre * post * (n if Sum else 1)``: for Sum n times
  the adjoint, for Average n^2 times it (the adjoint is ``allgather * pre * post / n``
  for Average).
* grouped_allgather / grouped_reducescatter: the same per member, as one group.

Calls whose inputs do not require a gradient (or with grad mode off) go straight to
:mod:`concord.torch.collectives`.
"""

import torch

from concord.torch import collectives, mpi_ops
from concord.torch.autograd import _grad_name, _my_rows, _needs_grad, _rank_and_size


def _member_name(name, i):
    return None if name is None else f"{name}.{i}"


class _Alltoall(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, splits, name, process_set):
        output, received = mpi_ops.synchronize(collectives.alltoall_async(tensor, splits, name, process_set))
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
    return prescale_factor * postscale_factor * (size if op == mpi_ops.Sum else 1)


class _Reducescatter(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, name, op, process_set, prescale_factor, postscale_factor):
        ctx.args = (name, _scatter_scale(op, prescale_factor, postscale_factor, process_set), process_set)
        return collectives.reducescatter(tensor, name=name, op=op, process_set=process_set,
                                         prescale_factor=prescale_factor, postscale_factor=postscale_factor)

    @staticmethod
    def backward(ctx, grad_output):
        name, scale, process_set = ctx.args
        grad = mpi_ops.allgather(grad_output.contiguous(), name=_grad_name(name), process_set=process_set)
        return grad * scale, None, None, None, None, None


def reducescatter(tensor, name=None, compression=None, op=mpi_ops.Average, process_set=None, prescale_factor=1.0,
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


def grouped_reducescatter(tensors, name=None, compression=None, op=mpi_ops.Average, process_set=None,
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
