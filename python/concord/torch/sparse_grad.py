"""Allreduce of ``torch.sparse`` COO tensors (e.g. the gradient of
``nn.Embedding(sparse=True)``), as Horovod's ``sparse_allreduce_async``: every rank's
indices and values are allgathered and the result is the (uncoalesced) sparse tensor
holding all of them, so duplicate indices add up when it is used or coalesced.

Bytes on the wire per rank: the sum over ranks of ``nnz_r * (8 * sparse_dim + value
bytes)``, i.e. this beats a dense allreduce only while the union of the ranks' non-zeros
stays well below the dense size.
"""

import torch

from concord import _core
from concord.torch import collectives, handles


class SparseHandle(int):
    """The handle of :func:`sparse_allreduce_async`: an integer handle for
    :func:`concord.torch.poll` / :func:`concord.torch.synchronize`, and callable, as
    Horovod's (whose ``sparse_allreduce_async`` returns a function): ``handle()`` waits and
    returns the sparse result, like ``synchronize(handle)``."""

    def __call__(self):
        return handles.synchronize(self)


class _Pair:
    """The core-handle interface (poll/wait) over two registered handles."""

    def __init__(self, first, second):
        self.handles = (first, second)

    def poll(self):
        return all(handles.poll(handle) for handle in self.handles)

    def wait(self):  # the results are taken (and waited for) by the finish callable
        pass


def sparse_allreduce_async(tensor, name=None, op=handles.Average, process_set=None):
    """Start the allreduce of a sparse COO tensor and return its handle (Horovod 0.28.1's
    ``sparse_allreduce_async``, horovod/torch/mpi_ops.py).

    Wait for it by calling the handle, as with Horovod (``handle()``), or with
    :func:`concord.torch.synchronize` (poll it with :func:`concord.torch.poll`); the result
    is a sparse tensor of ``tensor``'s size holding every rank's entries (divided by the
    number of ranks of the set for Average).

    Args:
        tensor (torch.Tensor): a CPU sparse COO tensor (``layout == torch.sparse_coo``),
            the same size, sparse dimensions and dtype on every rank; the number of
            non-zeros may differ (zero included).
        name (str, optional): the name, identical on every rank; its two allgathers are
            named ``<name>.indices`` and ``<name>.values``.
        op: ``Average`` (default) or ``Sum``. Average of integer values rounds down.
        process_set (ProcessSet, optional): the ranks taking part (default: all).

    Returns:
        SparseHandle: an int handle that is also callable.

    Raises:
        TypeError: ``tensor`` is not a sparse COO tensor.
        ValueError: op other than Sum or Average.
        MismatchError: from synchronize, on every rank, when dtype, sparse dimensions or
            dense value shape differ between ranks.
    """
    if not isinstance(tensor, torch.Tensor) or tensor.layout != torch.sparse_coo:
        raise TypeError(f"sparse_allreduce_async of '{name}': expected a sparse COO tensor, got "
                        f"{tensor.layout if isinstance(tensor, torch.Tensor) else type(tensor).__name__}")
    if op not in (handles.Sum, handles.Average):
        raise ValueError(f"sparse_allreduce_async of '{name}': op must be Sum or Average, got {op!r}")
    name = handles._name(name, "sparse_allreduce")
    kwargs = {} if process_set is None else {"process_set": process_set}
    size = _core.size() if process_set is None else process_set.size()
    indices = tensor._indices().t().contiguous()  # [nnz, sparse_dim]: allgather concatenates dim 0
    values = tensor._values().contiguous()
    index_handle = collectives.allgather_async(indices, name=f"{name}.indices", **kwargs)
    value_handle = collectives.allgather_async(values, name=f"{name}.values", **kwargs)
    shape = tensor.shape

    def finish():
        all_values = handles.synchronize(value_handle)
        all_indices = handles.synchronize(index_handle)
        if op == handles.Average:
            all_values = all_values / size if all_values.is_floating_point() else all_values // size
        return torch.sparse_coo_tensor(all_indices.t(), all_values, shape)

    return SparseHandle(handles._register(_Pair(index_handle, value_handle), finish, (indices, values)))


def sparse_allreduce(tensor, name=None, op=handles.Average, process_set=None):
    """Blocking :func:`sparse_allreduce_async`; returns the sparse result."""
    return handles.synchronize(sparse_allreduce_async(tensor, name, op, process_set))
