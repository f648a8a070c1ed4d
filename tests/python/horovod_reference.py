"""Horovod 0.28.1's backward rules, in one process: each function takes every rank's
gradient of the collective's output (``grads[q]``: rank q's, ranks numbered within the
process set) and returns every rank's input gradient as Horovod computes it
(horovod/torch/mpi_ops.py, the ``backward`` of each ``Horovod*`` autograd function).
The tests compare concord.torch's gradients with these, so they check Horovod's
behaviour rather than Concord's own reading of it.
"""

import torch


def _reduce(tensors, op_name):
    """Horovod's allreduce of ``tensors`` with op ``op_name`` (Average = sum / n)."""
    stacked = torch.stack(tensors)
    if op_name == "Sum":
        return stacked.sum(0)
    if op_name == "Average":
        return stacked.sum(0) / len(tensors)
    if op_name == "Min":
        return stacked.min(0).values
    if op_name == "Max":
        return stacked.max(0).values
    if op_name == "Product":
        return stacked.prod(0)
    raise ValueError(f"no reference for op {op_name}")


def allreduce_backward(grads, op_name, pre=1.0, post=1.0):
    """HorovodAllreduce.backward (and HorovodGroupedAllreduce's, per member): the same
    allreduce of the gradients, with the same op and scale factors."""
    return [post * _reduce([pre * g for g in grads], op_name)] * len(grads)


def allgather_backward(grads, rows):
    """HorovodAllgather.backward (and HorovodGroupedAllgather's, per member): the
    Average allreduce of the gradients; rank r keeps its own ``rows[r]`` rows, at the
    offset given by the allgathered row counts of the ranks before it."""
    averaged = _reduce(grads, "Average")
    offsets = [sum(rows[:r]) for r in range(len(rows))]
    return [averaged[offsets[r]:offsets[r] + rows[r]] for r in range(len(rows))]


def broadcast_backward(grads, root):
    """HorovodBroadcast.backward: the Average allreduce of the gradients, multiplied by
    zero on every rank but the root (``root`` as an index into ``grads``)."""
    averaged = _reduce(grads, "Average")
    return [averaged if r == root else averaged * 0 for r in range(len(grads))]


def alltoall_backward(grads, splits):
    """HorovodAlltoall.backward: an alltoall of the gradients with the received splits.
    ``splits[q][j]`` rows went from rank q to rank j in the forward pass, so rank j's
    gradient holds ``splits[q][j]`` rows from each q in rank order; rank r gets back, in
    the order of j, the rows that came from it."""
    size = len(grads)
    result = []
    for r in range(size):
        parts = []
        for j in range(size):
            start = sum(splits[q][j] for q in range(r))
            parts.append(grads[j][start:start + splits[r][j]])
        result.append(torch.cat(parts))
    return result


def reducescatter_backward(grads, op_name, pre=1.0, post=1.0):
    """HorovodReducescatter.backward (and the grouped form's, per member): the allgather
    of the gradients, multiplied by the set's size for op Sum, then by the prescale and
    postscale factors."""
    gathered = torch.cat(grads)
    factor = pre * post * (len(grads) if op_name == "Sum" else 1)
    return [gathered * factor] * len(grads)
