"""concord.torch's device layer (concord/torch/device.py) with stand-ins: Debian's PyTorch is
CPU-only, so CUDA tensors and torch.cuda are replaced by small fakes here. The device data
path behind it (the runtime moving device memory through the Device interface) is tested
from C++ on the strict emulated device (tests/unit/test_runtime_device.cc,
test_runtime_device.cc, tests/mpi/device_test.cc). The wiring tests are
rank-local; the "CUDA model" tests at the end run real collectives: every tensor is
reported as CUDA device 0 by the device layer, and the runtime is handed host memory
(device -1) behind a recording stand-in of concord._core, so DistributedOptimizer and
broadcast_parameters run unchanged while the test checks what a GPU run would pass."""

import copy
import types

import pytest
import torch

from concord._core import InvalidArgumentError
from concord.torch import device as device_layer
from concord.torch import collectives, handles


def _fake_cuda_tensor(index):
    return types.SimpleNamespace(device=torch.device("cuda", index), is_cpu=False)  # a torch.Tensor's fields


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
    tensor = types.SimpleNamespace(device=torch.device("cuda"), is_cpu=False)
    assert device_layer.device_index(tensor, "t", "allreduce") == 3


def test_every_dense_collective_takes_cuda_tensors():
    assert set(device_layer.DEVICE_COLLECTIVES) == {
        "allreduce", "grouped_allreduce", "broadcast", "allgather", "grouped_allgather", "reducescatter",
        "grouped_reducescatter", "alltoall"}


def test_cuda_tensor_is_rejected_clearly_by_a_collective_without_a_device_path():
    with pytest.raises(InvalidArgumentError) as error:
        device_layer.device_index(_fake_cuda_tensor(0), "grads", "oktopk")
    message = str(error.value)
    assert "oktopk of tensor 'grads'" in message and "cuda:0" in message
    assert "allreduce, grouped_allreduce, broadcast, allgather" in message


def test_other_device_types_are_rejected_naming_the_device():
    meta = torch.empty(4, device="meta")
    with pytest.raises(InvalidArgumentError, match="allreduce of tensor 'm': it is on meta"):
        collectives.allreduce_async(meta, name="m")


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
    """The wiring of concord.torch.collectives: a tensor the device layer calls CUDA device 2 is waited on
    before the runtime gets it, with device=2, and the result is the output tensor."""
    order = []
    monkeypatch.setattr(collectives._device, "device_index", lambda tensor, name, collective: 2)
    monkeypatch.setattr(collectives._device, "wait_for_producers", lambda tensors: order.append("wait"))

    class Core:
        @staticmethod
        def allreduce_async(name, source, target, dtype, shape, op, prescale, postscale, process_set, device):
            order.append(("allreduce", name, dtype, list(shape), device))
            return types.SimpleNamespace(poll=lambda: True, wait=lambda: None)

    monkeypatch.setattr(collectives, "_core", Core)
    tensor = torch.ones(5)
    result = handles.synchronize(collectives.allreduce_async_(tensor, name="on.gpu", op=handles.Sum))
    assert order == ["wait", ("allreduce", "on.gpu", "float32", [5], 2)]
    assert result is tensor


def test_output_pool_keeps_non_cpu_results_on_their_device():
    from concord.torch.output_pool import pool
    meta = torch.empty(1 << 20, device="meta")
    assert pool.empty_like(meta).device.type == "meta"


class _RecordingCore:
    """Stands in for concord._core in the wiring tests: records every call (and whether the
    producers were waited on first) and returns finished handles with a result of
    ``output_shape``."""

    def __init__(self, order, output_shape=(4, 2)):
        self.order = order
        self.copies = []
        core = self

        class Handle:
            def poll(self):
                return True

            def wait(self):
                pass

            def output_shape(self):
                return list(output_shape)

            def received_splits(self):
                return [1]

            def copy_output_to(self, pointer):
                core.copies.append(pointer)

        self.Handle = Handle

    def __getattr__(self, collective):
        def submit(*args):
            self.order.append((collective, args[-1]))  # the device (list) is the last argument
            return [self.Handle() for _ in args[0]] if collective.startswith("grouped") else self.Handle()
        return submit

    def size(self):
        return 1

    def rank(self):
        return 0

    def reducescatter_rows(self, rows, ranks, rank):
        return rows


@pytest.mark.parametrize("collective", ["allgather", "alltoall", "reducescatter", "grouped_allgather",
                                        "grouped_reducescatter"])
def test_other_collectives_wait_for_the_producer_then_pass_the_device_index(monkeypatch, collective):
    """allgather, alltoall, reducescatter and their grouped forms: the producers are waited
    on before the runtime gets the tensor, with device=2 (a list for groups), and the
    result is a tensor on the input's device filled by the runtime."""
    from concord.torch import collectives
    order = []
    core = _RecordingCore(order)
    monkeypatch.setattr(device_layer, "device_index", lambda tensor, name, what: 2)
    monkeypatch.setattr(device_layer, "wait_for_producers", lambda tensors: order.append("wait"))
    monkeypatch.setattr(collectives, "_core", core)
    monkeypatch.setattr(collectives, "_core", core)
    allocated_on = []  # the device= of every result allocation
    real_empty = torch.empty

    def empty(*args, **kwargs):
        allocated_on.append(kwargs.get("device"))
        return real_empty(*args, **{k: v for k, v in kwargs.items() if k != "device"})

    tensor = torch.ones(4, 2)
    monkeypatch.setattr(torch, "empty", empty)
    call = {"allgather": lambda: collectives.allgather(tensor, name="g"),
            "alltoall": lambda: collectives.alltoall(tensor, name="a"),
            "reducescatter": lambda: collectives.reducescatter(tensor, name="r", op=handles.Sum),
            "grouped_allgather": lambda: collectives.grouped_allgather([tensor, tensor], name="gg"),
            "grouped_reducescatter": lambda: collectives.grouped_reducescatter([tensor, tensor], name="gr",
                                                                               op=handles.Sum)}[collective]
    result = call()
    grouped = collective.startswith("grouped")
    assert order == ["wait", (f"{collective}_async", [2, 2] if grouped else 2)]
    results = result if grouped else [result]
    assert allocated_on == [tensor.device] * len(results), "results must be allocated on the input's device"
    if "allgather" in collective or collective == "alltoall":  # filled by the runtime's copy
        assert core.copies == [output.data_ptr() for output in results]


def test_join_refuses_a_cuda_device():
    from concord.torch import collectives
    with pytest.raises(InvalidArgumentError, match="only device=-1"):
        collectives.join(device=0)


def test_oktopk_refuses_cuda_parameters(monkeypatch):
    """SparseDistributedOptimizer: InvalidArgumentError naming the parameter and its device
    (Ok-Topk's top-k and residuals are host code)."""
    import concord.torch as hvd
    model = torch.nn.Linear(3, 2)
    cuda = torch.device("cuda", 0)
    weight = model.weight
    monkeypatch.setattr(type(weight), "device", property(lambda self: cuda if self is weight else torch.device("cpu")))
    with pytest.raises(InvalidArgumentError, match="weight is on cuda:0; Ok-Topk"):
        hvd.SparseDistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                       named_parameters=model.named_parameters())


# ----------------------------------------------------------------------------------------
# A "CUDA model": DistributedOptimizer and broadcast_parameters unchanged, real collectives


class _HostBackedCore:
    """concord._core for tensors the device layer calls CUDA device 0 while they are host
    memory: records the device each allreduce/broadcast is submitted with, and whether the
    producers of that very tensor were waited on first, then runs it on host memory."""

    def __init__(self, real, log, waited):
        self._real, self.log, self._waited = real, log, waited

    def __getattr__(self, name):
        return getattr(self._real, name)

    def _record(self, collective, names, pointers, devices):
        for name, pointer, device in zip(names, pointers, devices):
            self.log.append((collective, name, device, pointer in self._waited))

    def allreduce_async(self, name, source, target, dtype, shape, op, prescale, postscale, process_set, device):
        self._record("allreduce", [name], [source], [device])
        return self._real.allreduce_async(name, source, target, dtype, shape, op, prescale, postscale, process_set, -1)

    def grouped_allreduce_async(self, names, sources, targets, dtypes, shapes, op, prescale, postscale, process_set,
                                devices):
        self._record("grouped_allreduce", names, sources, devices)
        return self._real.grouped_allreduce_async(names, sources, targets, dtypes, shapes, op, prescale, postscale,
                                                  process_set, [])

    def broadcast_async(self, name, target, dtype, shape, root, process_set, device):
        self._record("broadcast", [name], [target], [device])
        return self._real.broadcast_async(name, target, dtype, shape, root, process_set, -1)


@pytest.fixture
def cuda_model_stand_in(monkeypatch):
    """Every tensor is CUDA device 0 to the device layer; returns the log of submissions."""
    waited, log = set(), []
    monkeypatch.setattr(device_layer, "device_index", lambda tensor, name, collective: 0)
    monkeypatch.setattr(device_layer, "wait_for_producers",
                        lambda tensors: waited.update(t.data_ptr() for t in tensors))
    monkeypatch.setattr(collectives, "_core", _HostBackedCore(collectives._core, log, waited))
    return log


def _mlp(seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))


def _batch(rank):
    generator = torch.Generator().manual_seed(7919 * rank + 1)
    return torch.randn(5, 6, generator=generator), torch.randint(0, 3, (5,), generator=generator)


def _where():
    import concord.torch as hvd
    return f"rank {hvd.rank()}/{hvd.size()}"


def test_broadcast_parameters_of_a_cuda_model(cuda_model_stand_in):
    import concord.torch as hvd
    model = _mlp(seed=100 + hvd.rank())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    root = _mlp(seed=100)
    for (name, got), (_, expected) in zip(model.state_dict().items(), root.state_dict().items()):
        assert torch.equal(got, expected), f"{_where()}: {name} differs from root's"
    names = sorted(f"broadcast_parameters.{name}" for name in model.state_dict())
    assert sorted(entry[1] for entry in cuda_model_stand_in) == names
    for collective, name, device, waited in cuda_model_stand_in:
        assert (collective, device, waited) == ("broadcast", 0, True), f"{_where()}: {name}"


@pytest.mark.parametrize("num_groups", [0, 2])
def test_distributed_optimizer_on_a_cuda_model(cuda_model_stand_in, num_groups):
    """One SGD step of an unchanged DistributedOptimizer: every gradient is allreduced as
    CUDA device 0 after its producer was waited on, and the step applies the average of the
    ranks' gradients."""
    import concord.torch as hvd
    model = _mlp(seed=5)
    reference = copy.deepcopy(model)
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.5),
                                         named_parameters=model.named_parameters(), num_groups=num_groups)
    x, y = _batch(hvd.rank())
    torch.nn.functional.cross_entropy(model(x), y).backward()
    optimizer.step()
    # The expected step, computed locally from every rank's batch.
    grads = [torch.zeros_like(p) for p in reference.parameters()]
    for rank in range(hvd.size()):
        reference.zero_grad()
        x, y = _batch(rank)
        torch.nn.functional.cross_entropy(reference(x), y).backward()
        for total, p in zip(grads, reference.parameters()):
            total += p.grad
    with torch.no_grad():
        for (name, p), expected_grad, start in zip(model.named_parameters(), grads, reference.parameters()):
            expected = start - 0.5 * expected_grad / hvd.size()
            assert torch.allclose(p, expected, atol=1e-6), f"{_where()}: {name} after the step"
    names = {f"allreduce.{name}" for name, _ in model.named_parameters()}
    assert {entry[1] for entry in cuda_model_stand_in} == names, f"{_where()}: {cuda_model_stand_in}"
    for collective, name, device, waited in cuda_model_stand_in:
        assert device == 0 and waited, f"{_where()}: {collective} of {name}: device {device}, waited {waited}"
