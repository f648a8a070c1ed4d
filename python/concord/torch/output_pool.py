"""Reused memory for the new tensors that out-of-place collectives return.

``hvd.allreduce`` returns a new tensor per call. A fresh tensor of a few MiB or more is
mapped anew by the C allocator (glibc serves it with ``mmap`` and unmaps it on free), so its
first write page-faults every 4 KiB page: on the machines measured in docs/performance.md
that costs more than the allreduce itself. This pool keeps the memory of released results
(tensors of at least ``MIN_BYTES``) and hands it to the next result of the same byte size,
already faulted in, as PyTorch's CUDA caching allocator does for device memory.

A pooled tensor is an ordinary CPU tensor over a pooled block (``torch.frombuffer``); the
block returns to the pool only when the tensor's storage dies, i.e. once the caller, and
every view of the result, has let go of it, so reuse never aliases live data. Free blocks
are kept up to ``CONCORD_OUTPUT_POOL_BYTES`` bytes (the configuration table; 0 disables
the pool), the least recently released dropped first. Such tensors cannot be resized in
place (``resize_`` to a larger size raises), like any tensor over external memory.
"""

import collections
import json
import threading
import weakref

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
    """Free blocks (uint8 CPU tensors) by byte size, at most ``capacity`` bytes in all.

    Thread-safe: results may be created and released on any thread.
    """

    def __init__(self, capacity=None):
        self._capacity = capacity
        self._lock = threading.RLock()  # a release can run inside a locked section (GC)
        self._free = collections.OrderedDict()  # (block id) -> block, oldest release first
        self._free_bytes = 0

    @property
    def capacity(self):
        """The most bytes of free blocks kept (CONCORD_OUTPUT_POOL_BYTES unless given)."""
        if self._capacity is None:
            self._capacity = _configured_capacity()
        return self._capacity

    @property
    def free_bytes(self):
        """Bytes of released blocks currently kept for reuse."""
        return self._free_bytes

    def empty_like(self, tensor):
        """A new contiguous tensor with ``tensor``'s shape and dtype, contents unspecified.

        From the pool when it is a CPU tensor of at least MIN_BYTES and the pool is enabled,
        else ``torch.empty_like`` (on ``tensor``'s device).
        """
        nbytes = tensor.numel() * tensor.element_size()
        if tensor.device.type != "cpu" or nbytes < MIN_BYTES or self.capacity <= 0:  # a CUDA result stays on its device
            return torch.empty_like(tensor, memory_format=torch.contiguous_format)
        block = self._take(nbytes)
        if block is None:
            block = torch.empty(nbytes, dtype=torch.uint8)
        holder = block.numpy()  # what the result's storage references (buffer protocol)
        weakref.finalize(holder, self._release, block)
        return torch.frombuffer(holder, dtype=tensor.dtype).view(tensor.shape)

    def clear(self):
        """Drops every free block."""
        with self._lock:
            self._free.clear()
            self._free_bytes = 0

    def _take(self, nbytes):
        with self._lock:
            for key, block in self._free.items():
                if block.numel() == nbytes:
                    del self._free[key]
                    self._free_bytes -= nbytes
                    return block
        return None

    def _release(self, block):
        with self._lock:
            if block.numel() > self.capacity:
                return
            self._free[id(block)] = block
            self._free_bytes += block.numel()
            while self._free_bytes > self.capacity:
                _, dropped = self._free.popitem(last=False)
                self._free_bytes -= dropped.numel()


pool = OutputPool()
