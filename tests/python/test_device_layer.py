"""concord.torch's device layer (concord/torch/device.py) with stand-ins: Debian's PyTorch is
CPU-only, so CUDA tensors and torch.cuda are replaced by small fakes here. The device data
path behind it (the runtime moving device memory through the Device interface) is tested
from C++ on the strict emulated device (tests/unit/test_runtime_device.cc,
tests/mpi/device_test.cc). No collective runs in this file (it is rank-local)."""

import types

import pytest
import torch

from concord._core import InvalidArgumentError
from concord.torch import device as device_layer
from concord.torch import mpi_ops


def _fake_cuda_tensor(index):
    return types.SimpleNamespace(device=torch.device("cuda", index))


class _FakeCuda:
    """Records what the device layer asks of torch.cuda, in order."""

    def __init__(self):
        self.calls = []
        calls = self.calls

        class Event:
            def record(self, stream):
                calls.append(("record", stream))

            def synchronize(self):
                calls.append(("synchronize",))

        self.Event = Event

    def current_stream(self, device):
        return f"stream of {device}"

    def current_device(self):
        return 3


def test_cpu_tensor_is_host_memory_for_every_collective():
    for collective in ("allreduce", "allgather", "alltoall", "reducescatter", "broadcast"):
        assert device_layer.device_index(torch.zeros(2), "t", collective) == device_layer.HOST


def test_cuda_tensor_has_its_ordinal_for_the_device_collectives():
    for collective in device_layer.DEVICE_COLLECTIVES:
        assert device_layer.device_index(_fake_cuda_tensor(1), "t", collective) == 1


def test_cuda_tensor_without_index_takes_the_current_device(monkeypatch):
    monkeypatch.setattr(device_layer, "_torch", lambda: types.SimpleNamespace(cuda=_FakeCuda()))
    tensor = types.SimpleNamespace(device=torch.device("cuda"))
    assert device_layer.device_index(tensor, "t", "allreduce") == 3


@pytest.mark.parametrize("collective", ["allgather", "alltoall", "reducescatter", "grouped_allgather"])
def test_cuda_tensor_is_rejected_clearly_by_the_other_collectives(collective):
    with pytest.raises(InvalidArgumentError) as error:
        device_layer.device_index(_fake_cuda_tensor(0), "grads", collective)
    message = str(error.value)
    assert f"{collective} of tensor 'grads'" in message and "cuda:0" in message
    assert "allreduce, grouped_allreduce, broadcast take CUDA tensors" in message


def test_other_device_types_are_rejected_naming_the_device():
    meta = torch.empty(4, device="meta")
    with pytest.raises(InvalidArgumentError, match="allreduce of tensor 'm': it is on meta"):
        mpi_ops.allreduce_async(meta, name="m")


def test_producer_stream_is_waited_on_once_per_device(monkeypatch):
    cuda = _FakeCuda()
    monkeypatch.setattr(device_layer, "_torch", lambda: types.SimpleNamespace(cuda=cuda))
    device_layer.wait_for_producers([_fake_cuda_tensor(0), _fake_cuda_tensor(0), _fake_cuda_tensor(1),
                                     torch.zeros(1)])
    assert cuda.calls == [("record", "stream of cuda:0"), ("synchronize",),
                          ("record", "stream of cuda:1"), ("synchronize",)]


def test_cpu_tensors_need_no_wait(monkeypatch):
    monkeypatch.setattr(device_layer, "_torch", lambda: pytest.fail("torch.cuda touched for CPU tensors"))
    device_layer.wait_for_producers([torch.zeros(3)])


def test_allreduce_waits_for_the_producer_then_passes_the_device_index(monkeypatch):
    """The wiring of mpi_ops: a tensor the device layer calls CUDA device 2 is waited on
    before the runtime gets it, with device=2, and the result is the output tensor."""
    order = []
    monkeypatch.setattr(mpi_ops._device, "device_index", lambda tensor, name, collective: 2)
    monkeypatch.setattr(mpi_ops._device, "wait_for_producers", lambda tensors: order.append("wait"))

    class Core:
        @staticmethod
        def allreduce_async(name, source, target, dtype, shape, op, prescale, postscale, process_set, device):
            order.append(("allreduce", name, dtype, shape, device))
            return types.SimpleNamespace(poll=lambda: True, wait=lambda: None)

    monkeypatch.setattr(mpi_ops, "_core", Core)
    tensor = torch.ones(5)
    result = mpi_ops.synchronize(mpi_ops.allreduce_async_(tensor, name="on.gpu", op=mpi_ops.Sum))
    assert order == ["wait", ("allreduce", "on.gpu", "float32", [5], 2)]
    assert result is tensor


def test_output_pool_keeps_non_cpu_results_on_their_device():
    from concord.torch.output_pool import pool
    meta = torch.empty(1 << 20, device="meta")
    assert pool.empty_like(meta).device.type == "meta"
