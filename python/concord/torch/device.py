"""Where a torch tensor lives, for the collectives of concord.torch (docs/architecture.md,
"Device layer").

A CPU tensor is passed to the runtime as host memory (device index -1). A CUDA tensor is
passed as device memory of CUDA device ``tensor.device.index`` -- the same index the
runtime's device table uses with ``CONCORD_DEVICE=auto`` -- to the collectives that have a
device data path (allreduce, grouped allreduce, broadcast); the others raise
InvalidArgumentError naming the tensor and its device. Before the runtime reads a CUDA
tensor, the stream that produced it (PyTorch's current stream of that device) is waited on
with an event: the runtime's own streams then see finished data. Results are written into
tensors on the input's device.

This layer is small on purpose: Debian's PyTorch is CPU-only, so it is unit-tested with
stand-in tensors and a stand-in ``torch.cuda`` (tests/python/test_device_layer.py), while
the device data path behind it is tested from C++ on the strict emulated device. It has not
run on a GPU.
"""

from concord._core import InvalidArgumentError

HOST = -1
"""Device index of a tensor in host memory (TensorView::device == kHostMemory)."""

DEVICE_COLLECTIVES = ("allreduce", "grouped_allreduce", "broadcast")
"""The collectives that accept CUDA tensors (the runtime's device data path)."""


def device_index(tensor, name, collective):
    """The runtime's device index of ``tensor`` for ``collective``.

    Args:
        tensor (torch.Tensor): any tensor (only ``tensor.device`` is read).
        name (str): the tensor's collective name, for the error message.
        collective (str): e.g. ``"allreduce"``; see DEVICE_COLLECTIVES.

    Returns:
        int: HOST (-1) for a CPU tensor, the CUDA ordinal for a CUDA tensor.

    Raises:
        InvalidArgumentError: a CUDA tensor given to a collective without a device data
            path, or a tensor on any other device type (meta, mps, xla, ...).
    """
    device = tensor.device
    if device.type == "cpu":
        return HOST
    if device.type == "cuda":
        if collective not in DEVICE_COLLECTIVES:
            raise InvalidArgumentError(
                f"{collective} of tensor '{name}': it is on {device}, but only "
                f"{', '.join(DEVICE_COLLECTIVES)} take CUDA tensors; copy it to the CPU first")
        return device.index if device.index is not None else _torch().cuda.current_device()
    raise InvalidArgumentError(
        f"{collective} of tensor '{name}': it is on {device}; Concord supports CPU tensors and, for "
        f"{', '.join(DEVICE_COLLECTIVES)}, CUDA tensors")


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
