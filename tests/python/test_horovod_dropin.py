"""Horovod 0.28.1 scripts run unchanged: the calls of Horovod's own
examples/pytorch/pytorch_synthetic_benchmark.py (a model built with
``norm_layer=hvd.SyncBatchNorm``, SGD at ``0.01 * hvd.size()``, DistributedOptimizer with
named parameters, compression and op, broadcast_parameters / broadcast_optimizer_state,
timeit-driven steps), and the warning text of horovod/torch/optimizer.py's step() after an
explicit synchronize(), with its second reduction of every gradient."""

import timeit
import warnings

import pytest
import torch
import torch.nn.functional as F

import concord.torch as hvd
from test_adasum import adasum_reference, value_of
from test_optimizer import assert_model_identical_across_ranks

_STEP_AFTER_SYNCHRONIZE = ("optimizer.step() called without optimizer.skip_synchronize() context after "
                           "optimizer.synchronize(). This can cause training slowdown.")


class SmallResNet(torch.nn.Module):
    """A torchvision-style model whose constructor takes ``norm_layer`` (the benchmark
    passes ``hvd.SyncBatchNorm``) and classifies 1000 classes, small enough for CI."""

    def __init__(self, norm_layer=torch.nn.BatchNorm2d):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn = norm_layer(8)
        self.fc = torch.nn.Linear(8, 1000)

    def forward(self, x):
        x = F.relu(self.bn(self.conv(x)))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


@pytest.mark.parametrize("fp16_allreduce", [False, True])
@pytest.mark.parametrize("use_adasum", [False, True])
def test_synthetic_benchmark_calls(fp16_allreduce, use_adasum, rank, size, tname):
    """pytorch_synthetic_benchmark.py's sequence of calls on CPU tensors; every rank has
    its own random data (the script seeds nothing), yet the parameters stay identical on
    every rank, and the loss is finite."""
    if use_adasum and (size & (size - 1)) != 0:
        pytest.skip("Adasum needs a power-of-two number of ranks (as Horovod's CPU Adasum)")
    if use_adasum and fp16_allreduce:
        pytest.skip("Adasum reduces float32/float64 only")
    torch.manual_seed(1234 + rank)
    model = SmallResNet(norm_layer=hvd.SyncBatchNorm)
    lr_scaler = hvd.size() if not use_adasum else 1
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01 * lr_scaler)
    compression = hvd.Compression.fp16 if fp16_allreduce else hvd.Compression.none
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters(),
                                         compression=compression, op=hvd.Adasum if use_adasum else hvd.Average)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    data = torch.randn(4, 3, 8, 8)
    target = torch.LongTensor(4).random_() % 1000
    losses = []

    def benchmark_step():
        optimizer.zero_grad()
        output = model(data)
        loss = F.cross_entropy(output, target)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())

    timeit.timeit(benchmark_step, number=2)  # warm-up
    seconds = timeit.timeit(benchmark_step, number=3)
    what = f"rank {rank}/{size} synthetic benchmark fp16={fp16_allreduce} adasum={use_adasum}"
    assert seconds > 0 and all(torch.isfinite(torch.tensor(losses))), f"{what}: losses {losses}"
    assert_model_identical_across_ranks(model, tname, what)


@pytest.mark.parametrize("op_name", ["Average", "Sum"])
def test_step_after_synchronize_warns_with_horovods_text_and_reduces_again(op_name, rank, size):
    """horovod/torch/optimizer.py step(): after synchronize() outside skip_synchronize()
    it warns and synchronizes again, which allreduces every gradient a second time: the
    Average of already averaged gradients, or n times the Sum."""
    weight = torch.nn.Parameter(torch.zeros(3))
    op = getattr(hvd, op_name)
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD([weight], lr=1.0),
                                         named_parameters=[(f"step_after_sync.{op_name}", weight)], op=op)
    (weight * torch.tensor([1.0, 2.0, 3.0]) * (rank + 1)).sum().backward()
    optimizer.synchronize()
    once = weight.grad.clone()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        optimizer.step()
    texts = [str(w.message) for w in caught]
    local = torch.tensor([1.0, 2.0, 3.0])
    total = local * sum(q + 1 for q in range(size))
    expected_once = total / size if op_name == "Average" else total
    expected_twice = expected_once if op_name == "Average" else expected_once * size
    what = f"rank {rank}/{size} {op_name}"
    assert any(_STEP_AFTER_SYNCHRONIZE in t for t in texts), f"{what}: warnings {texts}"
    torch.testing.assert_close(once, expected_once, msg=f"{what}: gradient after synchronize()")
    torch.testing.assert_close(weight.detach(), -expected_twice, msg=f"{what}: step after a second reduction")


def test_adasum_distributed_optimizer_combines_updates(rank, size):
    """horovod/torch/optimizer.py _DistributedAdasumOptimizer (more than one rank): each
    rank's update delta_r = -lr * g_r of SGD is combined by Adasum (test_adasum.py's
    reference, Maleki et al.'s tree over rank order) and added to the parameter; on one
    rank the gradient's allreduce uses op Adasum (the identity there)."""
    if size & (size - 1):
        pytest.skip("Adasum needs a power-of-two number of ranks")
    weight = torch.nn.Parameter(torch.zeros(5, dtype=torch.float64))
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD([weight], lr=0.5),
                                         named_parameters=[("adasum_delta.weight", weight)], op=hvd.Adasum)
    directions = [value_of(q, (5,), 3) for q in range(size)]
    (weight * directions[rank]).sum().backward()
    optimizer.step()
    expected = adasum_reference([-0.5 * d for d in directions])
    torch.testing.assert_close(weight.detach(), expected, msg=f"rank {rank}/{size}: parameter after one Adasum step")
    if size > 1:
        with pytest.raises(AssertionError, match="Skipping synchronization is not supported"):
            with optimizer.skip_synchronize():
                pass
