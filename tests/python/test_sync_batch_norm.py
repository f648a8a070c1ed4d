"""SyncBatchNorm (concord/torch/sync_batch_norm.py) against torch's BatchNorm on one
process over the concatenation of every rank's batch: output, input gradient, the sum over
ranks of the weight/bias gradients, and the running statistics."""

import pytest
import torch

import concord.torch as hvd

BATCH_NORMS = {2: torch.nn.BatchNorm1d, 3: torch.nn.BatchNorm1d, 4: torch.nn.BatchNorm2d, 5: torch.nn.BatchNorm3d}


def batch_of(rank, rows, tail, seed, dtype):
    g = torch.Generator().manual_seed(100 * seed + rank)
    return (3 * torch.randn((rows, 3) + tail, generator=g, dtype=torch.float64) + rank).to(dtype)


def dy_of(rank, shape, seed, dtype):
    g = torch.Generator().manual_seed(100 * seed + rank + 50)
    return torch.randn(shape, generator=g, dtype=torch.float64).to(dtype)


@pytest.mark.parametrize("tail", [(), (5,), (2, 3), (2, 1, 2)], ids=["1d", "1d-len", "2d", "3d"])
@pytest.mark.parametrize("uneven", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_matches_batch_norm_over_the_global_batch(tail, uneven, dtype, rank, size):
    seed = len(tail) + 7 * uneven
    rows = [(q % 3) + 2 if uneven else 2 for q in range(size)]
    tol = 1e-4 if dtype == torch.float32 else 1e-9
    sync = hvd.SyncBatchNorm(3, momentum=0.3).to(dtype)
    with torch.no_grad():
        sync.weight.copy_(torch.tensor([1.0, -2.0, 0.5]))
        sync.bias.copy_(torch.tensor([0.1, 0.2, -0.3]))
    x = batch_of(rank, rows[rank], tail, seed, dtype).requires_grad_(True)
    y = sync(x)
    y.backward(dy_of(rank, y.shape, seed, dtype))
    grad_sums = hvd.allreduce(torch.cat([sync.weight.grad, sync.bias.grad]), op=hvd.Sum, name="sbn.wb")

    reference = BATCH_NORMS[2 + len(tail)](3, momentum=0.3).double()
    with torch.no_grad():
        reference.weight.copy_(sync.weight.double())
        reference.bias.copy_(sync.bias.double())
    xs = torch.cat([batch_of(q, rows[q], tail, seed, dtype).double() for q in range(size)]).requires_grad_(True)
    ys = reference(xs)
    ys.backward(torch.cat([dy_of(q, (rows[q], 3) + tail, seed, dtype).double() for q in range(size)]))
    start = sum(rows[:rank])
    what = f"rank {rank}/{size} rows {rows} tail {tail} {dtype}"
    torch.testing.assert_close(y.double(), ys[start:start + rows[rank]], atol=tol, rtol=tol, msg=what + ": output")
    torch.testing.assert_close(x.grad.double(), xs.grad[start:start + rows[rank]], atol=tol, rtol=tol,
                               msg=what + ": input gradient")
    torch.testing.assert_close(grad_sums.double(), torch.cat([reference.weight.grad, reference.bias.grad]),
                               atol=tol * 10, rtol=tol, msg=what + ": weight/bias gradient summed over ranks")
    torch.testing.assert_close(sync.running_mean.double(), reference.running_mean, atol=tol, rtol=tol,
                               msg=what + ": running mean")
    torch.testing.assert_close(sync.running_var.double(), reference.running_var, atol=tol, rtol=tol,
                               msg=what + ": running var")


def test_eval_mode_uses_running_stats_without_communication(rank, size):
    sync = hvd.SyncBatchNorm(2).eval()
    with torch.no_grad():
        sync.running_mean.copy_(torch.tensor([1.0, 2.0]))
        sync.running_var.copy_(torch.tensor([4.0, 9.0]))
    x = torch.full((rank + 1, 2), 3.0)  # different batch sizes: no collective may run
    expected = torch.tensor([2.0, 1.0]) / torch.sqrt(torch.tensor([4.0, 9.0]) + 1e-5)
    torch.testing.assert_close(sync(x), expected.expand(rank + 1, 2), msg=f"rank {rank}")


def test_empty_batch_on_rank_0(rank, size):
    if size == 1:
        pytest.skip("needs a second rank holding the data")
    sync = hvd.SyncBatchNorm(2, affine=False)
    x = (torch.zeros((0, 2)) if rank == 0 else torch.tensor([[1.0, 2.0], [3.0, 6.0]])).requires_grad_(True)
    y = sync(x)
    (y * y).sum().backward()  # every rank joins the backward allreduce, rank 0 with nothing
    if rank != 0:
        torch.testing.assert_close(y, torch.tensor([[-1.0, -1.0], [1.0, 1.0]]), atol=1e-4, rtol=1e-4,
                                   msg=f"rank {rank}")
    assert x.grad.shape == x.shape, f"rank {rank}: gradient shape {tuple(x.grad.shape)}"


def test_errors(rank, size):
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        hvd.SyncBatchNorm(3)(torch.ones(3))
    with pytest.raises(ValueError, match="more than 1 value per channel .* got 0"):
        hvd.SyncBatchNorm(3)(torch.zeros((0, 3)))
    with pytest.raises(ValueError, match="more than 1 value per channel .* got 1"):
        hvd.SyncBatchNorm(3)(torch.zeros((1 if rank == 0 else 0, 3)))


def test_in_a_model_with_distributed_optimizer(rank, size):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), hvd.SyncBatchNorm(2), torch.nn.ReLU(),
                                torch.nn.Flatten(), torch.nn.Linear(2 * 4 * 4, 1))
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                         named_parameters=model.named_parameters())
    for step in range(2):
        optimizer.zero_grad()
        model(batch_of(rank, 3, (6, 6), step, torch.float32)[:, :1]).sum().backward()
        optimizer.step()
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    gathered = hvd.allgather(flat.unsqueeze(0), name="sbn.model")
    for q in range(size):
        torch.testing.assert_close(gathered[q], gathered[0], msg=f"rank {rank}: rank {q}'s parameters differ")
