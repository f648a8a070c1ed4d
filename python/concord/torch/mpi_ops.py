"""Horovod's module name ``horovod.torch.mpi_ops``, kept for scripts that import from it:
the same public names, defined in concord.torch.handles (ops, poll, synchronize),
concord.torch.autograd (the differentiable forms, as Horovod's ``allreduce`` etc. are) and
concord.torch.collectives (the asynchronous and in-place forms, barrier, join). New code imports ``concord.torch``.
"""

__all__ = ["Adasum", "Average", "Max", "Min", "Product", "Sum", "allgather", "allgather_async", "allreduce",
           "allreduce_", "allreduce_async", "allreduce_async_", "alltoall", "alltoall_async", "barrier", "broadcast",
           "broadcast_", "broadcast_async", "broadcast_async_", "grouped_allgather", "grouped_allgather_async",
           "grouped_allreduce", "grouped_allreduce_", "grouped_allreduce_async", "grouped_allreduce_async_",
           "grouped_reducescatter", "grouped_reducescatter_async", "join", "poll", "reducescatter",
           "reducescatter_async", "synchronize"]

from concord.torch.autograd import (allgather, allreduce, alltoall, broadcast, grouped_allgather,
                                    grouped_allreduce, grouped_reducescatter, reducescatter)
from concord.torch.collectives import (allgather_async, allreduce_, allreduce_async, allreduce_async_,
                                       alltoall_async, barrier, broadcast_, broadcast_async, broadcast_async_,
                                       grouped_allgather_async, grouped_allreduce_, grouped_allreduce_async,
                                       grouped_allreduce_async_, grouped_reducescatter_async, join,
                                       reducescatter_async)
from concord.torch.handles import Adasum, Average, Max, Min, Product, Sum, poll, synchronize
