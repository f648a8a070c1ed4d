"""Reused memory for the new tensors that out-of-place collectives return.

``hvd.allreduce`` returns a new tensor per call. A fresh tensor of a few MiB or more is
mapped anew by the C allocator (glibc serves it with ``mmap`` and unmaps it on free), so its
first write page-faults every 4 KiB page: on the machines measured in docs/performance.md
that costs more than the allreduce itself. This pool keeps the memory of released results
(tensors of at least ``MIN_BYTES``) and hands it to the next result of the same byte size,
already faulted in, as PyTorch's CUDA caching allocator does for device memory.

The memory is the runtime's (``concord._core.OutputPool``, src/runtime/output_pool.h): a
block has Python's buffer protocol, so a result is ``torch.frombuffer(block)`` (one call;
a NumPy holder and a finalizer per result cost 40-50 us more per call at 1 MiB, with the
caches cold from the collective), and the block returns to the pool when the tensor's
storage dies, i.e. once the caller, and every view of the result, has let go of it, so
reuse never aliases live data. Free blocks are kept up to ``CONCORD_OUTPUT_POOL_BYTES``
bytes (the configuration table; 0 disables the pool), the least recently released dropped
first. Such tensors cannot be resized in place (``resize_`` to a larger size raises), like
any tensor over external memory.
"""

import json
import threading

import torch

from concord import _core

MIN_BYTES = 1 << 20  # smaller results come from the C allocator's heap, already reused


def _configured_capacity():
    """CONCORD_OUTPUT_POOL_BYTES as the configuration table reads it (concord-info's JSON)."""
    for setting in json.loads(_core.build_info_json())["settings"]:
        if setting["name"] == "CONCORD_OUTPUT_POOL_BYTES":
            return int(setting["value"])
    return 0


class OutputPool:
    """Free blocks by byte size, at most ``capacity`` bytes in all (default:
    CONCORD_OUTPUT_POOL_BYTES, read on first use). Thread-safe: results may be created and
    released on any thread."""

    def __init__(self, capacity=None):
        self._capacity = capacity
        self._blocks = None  # the _core.OutputPool, made on first use
        self._lock = threading.Lock()

    @property
    def capacity(self):
        """The most bytes of free blocks kept (CONCORD_OUTPUT_POOL_BYTES unless given)."""
        if self._capacity is None:
            self._capacity = _configured_capacity()
        return self._capacity

    @property
    def free_bytes(self):
        """Bytes of released blocks currently kept for reuse."""
        return self._blocks.free_bytes if self._blocks is not None else 0

    def empty_like(self, tensor):
        """A new contiguous tensor with ``tensor``'s shape and dtype, contents unspecified.

        From the pool when it is a CPU tensor of at least MIN_BYTES and the pool is enabled,
        else ``torch.empty_like`` (on ``tensor``'s device).
        """
        block = self.take(tensor)
        if block is None:  # a CUDA result stays on its device
            return torch.empty_like(tensor, memory_format=torch.contiguous_format)
        return self.wrap(block, tensor)

    def take(self, tensor):
        """The memory for a result like ``tensor``: a ``_core.OutputBlock`` of its byte size
        (``block.address`` is its first byte), a released one when one fits, else new
        memory; None when the pool does not apply (not a CPU tensor, under MIN_BYTES, or the
        pool disabled). :meth:`wrap` makes the tensor; the caller may run it after handing
        ``block.address`` to a collective, i.e. while the collective runs, as
        ``allreduce_async`` does (keeping the block referenced meanwhile).

        Raises:
            MemoryError: no memory for a new block.
        """
        nbytes = tensor.numel() * tensor.element_size()
        if nbytes < MIN_BYTES or tensor.device.type != "cpu" or self.capacity <= 0:
            return None
        if self._blocks is None:
            with self._lock:
                if self._blocks is None:
                    self._blocks = _core.OutputPool(self.capacity)
        return self._blocks.take(nbytes)

    @staticmethod
    def wrap(block, like):
        """A tensor over ``block`` (from :meth:`take`) with ``like``'s shape and dtype; the
        block returns to the pool when that tensor's storage, and every view of it, dies."""
        result = torch.frombuffer(block, dtype=like.dtype)
        return result if like.dim() == 1 else result.view(like.shape)

    def clear(self):
        """Drops every free block."""
        if self._blocks is not None:
            self._blocks.clear()


pool = OutputPool()
