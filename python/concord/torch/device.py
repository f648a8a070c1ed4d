"""Where a torch tensor lives, for the collectives of concord.torch (docs/architecture.md,
"Device layer").

A CPU tensor is passed to the runtime as host memory (device index -1). A CUDA tensor is
passed as device memory of CUDA device ``tensor.device.index`` -- the same index the
runtime's device table uses with ``CONCORD_DEVICE=auto`` -- to every dense collective
(DEVICE_COLLECTIVES); other device types (meta, mps, xla, ...) raise InvalidArgumentError
naming the tensor and its device. Before the runtime reads a CUDA tensor, the stream that
produced it (PyTorch's current stream of that device) is waited on with an event: the
runtime's own streams then see finished data. Results are tensors on the input's device:
allreduce, broadcast and reduce-scatter outputs are allocated here with PyTorch's
allocator before submission; allgather and alltoall outputs, whose sizes are known only
after negotiation, are allocated on the input's device when the handle is synchronized and
filled from the device memory the runtime allocated for the result (one device-to-device
copy). Negotiation compares the kind of memory: a CPU tensor on some ranks and a CUDA
tensor on others fails on every rank with MismatchError naming the tensor, the ranks and
both devices.

Sparse gradients: ``sparse_allreduce_async`` is two allgathers (indices and values), so a
CUDA sparse tensor works and its result is on the same device. Ok-Topk
(``SparseDistributedOptimizer``, concord.torch.sparse) selects top-k entries and keeps
residuals in host memory in C++, with no device kernels: a CUDA parameter raises
InvalidArgumentError (move the model to the CPU, or use DistributedOptimizer). ``join``
takes ``device=-1`` only (concord.torch.collectives.join explains why).

This layer is small on purpose: Debian's PyTorch is CPU-only, so it is unit-tested with
stand-in tensors and a stand-in ``torch.cuda`` (tests/python/test_device_layer.py), while
the device data path behind it is tested from C++ on the strict emulated device. It has not
run on a GPU.
"""

from concord._core import InvalidArgumentError

HOST = -1
"""Device index of a tensor in host memory (TensorView::device == kHostMemory)."""

DEVICE_COLLECTIVES = ("allreduce", "grouped_allreduce", "broadcast", "allgather", "grouped_allgather",
                      "reducescatter", "grouped_reducescatter", "alltoall")
"""The collectives that accept CUDA tensors (every dense collective: the runtime's device
data path; allreduce with the Adasum op is refused by the runtime for device tensors)."""


def device_index(tensor, name, collective):
    """The runtime's device index of ``tensor`` for ``collective``.

    Args:
        tensor (torch.Tensor): any tensor (only ``tensor.device`` is read).
        name (str): the tensor's collective name, for the error message.
        collective (str): e.g. ``"allreduce"``; see DEVICE_COLLECTIVES.

    Returns:
        int: HOST (-1) for a CPU tensor, the CUDA ordinal for a CUDA tensor.

    Raises:
        InvalidArgumentError: a CUDA tensor given to a collective not in
            DEVICE_COLLECTIVES, or a tensor on any other device type (meta, mps, xla, ...).
    """
    if tensor.is_cpu:  # the common case, without building a torch.device (~0.4 us)
        return HOST
    device = tensor.device
    if device.type == "cuda":
        if collective not in DEVICE_COLLECTIVES:
            raise InvalidArgumentError(
                f"{collective} of tensor '{name}': it is on {device}, but only "
                f"{', '.join(DEVICE_COLLECTIVES)} take CUDA tensors; copy it to the CPU first")
        return device.index if device.index is not None else _torch().cuda.current_device()
    raise InvalidArgumentError(
        f"{collective} of tensor '{name}': it is on {device}; Concord supports CPU and CUDA tensors")


def wait_for_producers(tensors):
    """Blocks until the work that produced the CUDA ``tensors`` is done: one event recorded
    on PyTorch's current stream of each device involved, then waited on. CPU tensors need
    nothing (PyTorch's CPU operations are synchronous).

    Args:
        tensors (iterable of torch.Tensor): the inputs (and in-place outputs) about to be
            handed to the runtime.

    Raises:
        RuntimeError: from PyTorch's CUDA runtime (e.g. a failed kernel).
    """
    devices = []
    for tensor in tensors:
        if tensor.device.type == "cuda" and tensor.device not in devices:
            devices.append(tensor.device)
    if not devices:
        return
    cuda = _torch().cuda
    for device in devices:
        event = cuda.Event()
        event.record(cuda.current_stream(device))
        event.synchronize()


def _torch():
    import torch
    return torch
