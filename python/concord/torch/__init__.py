"""Horovod-compatible PyTorch API: ``import concord.torch as hvd`` runs a Horovod script.

It provides init, shutdown, rank, size, local_rank and local_size; allreduce, grouped
allreduce, allgather and broadcast (sync, async and in-place forms); poll and synchronize;
start_timeline and stop_timeline; the reduce ops; Compression; broadcast_parameters,
broadcast_optimizer_state and broadcast_object; DistributedOptimizer and
SparseDistributedOptimizer (Ok-Topk sparse allreduce with residuals); alltoall,
reducescatter, grouped_allgather, grouped_reducescatter, barrier and join
(concord.torch.collectives; their differentiable forms: concord.torch.autograd;
handles: concord.torch.handles); process sets; and the torch.distributed backend
``"concord"`` (concord.torch.process_group), registered on import. Tensors must be CPU tensors of dtype float32, float64, float16,
bfloat16, int32, int64, int16, int8 or uint8 (bool for broadcast, allgather and alltoall).
"""

from concord import (CommError, ConcordError, InternalError, InvalidArgumentError, MismatchError,
                     StateError, coordination_stats, cross_rank, cross_size, init, is_initialized,
                     local_rank, local_size, mpi_threads_supported, rank, shutdown, size,
                     start_timeline, stop_timeline)
from concord.capabilities import (ccl_built, cuda_built, ddl_built, gloo_built, gloo_enabled,
                                  mpi_built, mpi_enabled, nccl_built, rocm_built)
from concord.process_sets import (ProcessSet, add_process_set, global_process_set,
                                  remove_process_set)
from concord.torch.collectives import (allgather_async, allreduce_, allreduce_async, allreduce_async_,
                                       alltoall_async, barrier, broadcast_, broadcast_async, broadcast_async_,
                                       grouped_allgather_async, grouped_allreduce_, grouped_allreduce_async,
                                       grouped_allreduce_async_, grouped_reducescatter_async, join,
                                       reducescatter_async)
from concord.torch.compression import Compression
from concord.torch.functions import broadcast_optimizer_state, broadcast_parameters
from concord.torch.objects import allgather_object, broadcast_object
from concord.torch.handles import Adasum, Average, Max, Min, Product, Sum, poll, synchronize
from concord.torch.autograd import (allgather, allreduce, alltoall, broadcast,  # differentiable forms
                                    grouped_allgather, grouped_allreduce, grouped_reducescatter,
                                    reducescatter)
from concord.torch.distributed_optimizer import DistributedOptimizer
from concord.torch.sparse_grad import sparse_allreduce, sparse_allreduce_async
from concord.torch.sync_batch_norm import SyncBatchNorm
from concord.torch.sparse import SparseDistributedOptimizer, sparse_allreduce_names
from concord.torch import c10d_backend as _c10d_backend
from concord.torch import elastic
from concord.elastic.worker import HostsUpdatedInterrupt

# torch.distributed.init_process_group("concord", ...) runs on this runtime (docs/torch_distributed.md).
_c10d_backend.register()

# Horovod's name for the error a failed collective raises: every error synchronize() can
# raise (MismatchError, CommError, StateError, ...) is a ConcordError.
HorovodInternalError = ConcordError

__all__ = [
    "init", "shutdown", "is_initialized", "rank", "size", "local_rank", "local_size",
    "allreduce", "allreduce_async", "allreduce_", "allreduce_async_", "allgather",
    "allgather_async", "broadcast", "broadcast_async", "broadcast_", "broadcast_async_", "poll",
    "synchronize", "Average", "Sum", "Min", "Max", "Product", "Compression",
    "broadcast_parameters", "broadcast_optimizer_state", "broadcast_object",
    "DistributedOptimizer", "ConcordError", "MismatchError", "InvalidArgumentError",
    "StateError", "CommError", "InternalError", "grouped_allreduce", "grouped_allreduce_async",
    "grouped_allreduce_", "grouped_allreduce_async_", "start_timeline", "stop_timeline",
    "coordination_stats", "SparseDistributedOptimizer", "sparse_allreduce_names",
    "alltoall", "alltoall_async", "reducescatter", "reducescatter_async", "grouped_allgather",
    "grouped_allgather_async", "grouped_reducescatter", "grouped_reducescatter_async", "barrier",
    "join", "HorovodInternalError", "ProcessSet", "global_process_set", "add_process_set",
    "remove_process_set",
    "cross_rank", "cross_size", "mpi_threads_supported", "mpi_built", "mpi_enabled", "gloo_built",
    "gloo_enabled", "nccl_built", "ddl_built", "ccl_built", "cuda_built", "rocm_built",
    "allgather_object", "SyncBatchNorm", "elastic", "HostsUpdatedInterrupt", "Adasum", "sparse_allreduce", "sparse_allreduce_async",
]
