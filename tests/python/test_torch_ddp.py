"""DistributedDataParallel and its companions on the ``"concord"`` backend, step by step
against the same code on a Gloo group of the same ranks: DDP (bucketed allreduce,
``no_sync``, ``find_unused_parameters``, ``static_graph``, uneven inputs through ``Join``),
the built-in comm hooks (allreduce, fp16 compression, PowerSGD), ZeroRedundancyOptimizer
and the object collectives.
"""

import pytest
import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as powersgd
from torch.distributed.algorithms.join import Join
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel as DDP

from torch_distributed_utils import where, world  # noqa: F401  (world: a fixture)


class _Net(nn.Module):
    """A small MLP with an optional branch that some steps leave unused."""

    def __init__(self):
        super().__init__()
        self.first = nn.Linear(10, 32)
        self.second = nn.Linear(32, 4)
        self.branch = nn.Linear(32, 4)

    def forward(self, x, use_branch=True):
        hidden = torch.relu(self.first(x))
        return self.second(hidden) + (self.branch(hidden) if use_branch else 0)


def _batches(steps, rank, rows=8):
    generator = torch.Generator().manual_seed(1000 + rank)
    return [torch.randn(rows, 10, generator=generator, dtype=torch.float64) for _ in range(steps)]


def _train(group, steps=4, hook=None, state=None, ddp_options=None, optimizer="sgd", use_branch=lambda step: True,
           no_sync_every=0):
    """Losses of ``steps`` DDP steps on ``group`` (None: the default group, concord) and
    the final parameters."""
    torch.manual_seed(0)
    model = _Net().to(torch.float64)
    ddp = DDP(model, process_group=group, bucket_cap_mb=0.001, **(ddp_options or {}))
    if hook is not None:
        ddp.register_comm_hook(state, hook)
    if optimizer == "zero":
        opt = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=torch.optim.SGD, process_group=group, lr=0.05)
    else:
        opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    losses = []
    for step, batch in enumerate(_batches(steps, dist.get_rank())):
        accumulate = no_sync_every and step % no_sync_every != no_sync_every - 1
        with ddp.no_sync() if accumulate else _nothing():
            loss = ddp(batch, use_branch(step)).pow(2).mean()
            loss.backward()
        if not accumulate:
            opt.step()
            opt.zero_grad()
        losses.append(loss.item())
    return losses, torch.cat([p.detach().reshape(-1) for p in model.parameters()])


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _assert_parity(world, what, tolerance=1e-12, **options):
    _, gloo = world
    concord_losses, concord_params = _train(None, **options)
    gloo_losses, gloo_params = _train(gloo, **options)
    for step, (ours, theirs) in enumerate(zip(concord_losses, gloo_losses)):
        assert abs(ours - theirs) <= tolerance * max(1.0, abs(theirs)), \
            where(what, step=step, concord=ours, gloo=theirs)
    gathered = [torch.empty_like(concord_params) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, concord_params)
    for rank, params in enumerate(gathered):
        assert torch.equal(params, concord_params), where(what + ": parameters differ from rank", other=rank)
    assert torch.allclose(concord_params, gloo_params, rtol=tolerance, atol=tolerance), where(what + " vs gloo")


def test_ddp_matches_gloo(world):
    _assert_parity(world, "ddp")


def test_ddp_no_sync(world):
    _assert_parity(world, "ddp no_sync", no_sync_every=2)


def test_ddp_find_unused_parameters(world):
    _assert_parity(world, "ddp find_unused_parameters", ddp_options={"find_unused_parameters": True},
                   use_branch=lambda step: step % 2 == 0)


def test_ddp_static_graph(world):
    _assert_parity(world, "ddp static_graph", ddp_options={"static_graph": True})


def test_ddp_allreduce_and_fp16_hooks(world):
    _assert_parity(world, "allreduce_hook", hook=default_hooks.allreduce_hook)
    _assert_parity(world, "fp16_compress_hook", tolerance=1e-2, hook=default_hooks.fp16_compress_hook)


def test_ddp_powersgd(world):
    _, gloo = world
    results = []
    for group in (None, gloo):
        state = powersgd.PowerSGDState(process_group=group, matrix_approximation_rank=1, start_powerSGD_iter=2,
                                       random_seed=7)
        results.append(_train(group, steps=5, hook=powersgd.powerSGD_hook, state=state))
    for step, (ours, theirs) in enumerate(zip(results[0][0], results[1][0])):
        assert abs(ours - theirs) <= 1e-9 * max(1.0, abs(theirs)), \
            where("powerSGD", step=step, concord=ours, gloo=theirs)


def test_zero_redundancy_optimizer(world):
    _assert_parity(world, "ZeroRedundancyOptimizer", optimizer="zero")


def test_join_uneven_inputs(world):
    """Rank r runs 3 + r steps; Join shadows the finished ranks' collectives."""
    torch.manual_seed(0)
    model = _Net().to(torch.float64)
    ddp = DDP(model, bucket_cap_mb=0.001)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    with Join([ddp]):
        for batch in _batches(3 + dist.get_rank(), dist.get_rank()):
            ddp(batch).pow(2).mean().backward()
            opt.step()
            opt.zero_grad()
    params = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    gathered = [torch.empty_like(params) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, params)
    for rank, other in enumerate(gathered):
        assert torch.equal(other, params), where("Join: parameters differ from rank", other=rank)


def test_object_collectives(world):
    rank, size = dist.get_rank(), dist.get_world_size()
    objects = [{"rank": rank, "text": "x" * rank}, None] if rank == 0 else [None, None]
    dist.broadcast_object_list(objects, src=0)
    assert objects[0] == {"rank": 0, "text": ""}, where("broadcast_object_list", got=objects)
    gathered = [None] * size
    dist.all_gather_object(gathered, ("from", rank, list(range(rank))))
    assert gathered == [("from", r, list(range(r))) for r in range(size)], where("all_gather_object", got=gathered)


@pytest.mark.parametrize("bucket_mb", [0.001, 25])
def test_ddp_buckets_bit_identical_across_ranks(world, bucket_mb):
    torch.manual_seed(0)
    model = _Net()
    ddp = DDP(model, bucket_cap_mb=bucket_mb, gradient_as_bucket_view=True)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    for batch in _batches(3, dist.get_rank()):
        ddp(batch.float()).sum().backward()
        opt.step()
        opt.zero_grad()
    params = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    gathered = [torch.empty_like(params) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, params)
    assert all(torch.equal(g, params) for g in gathered), where("float32 DDP parameters", bucket_mb=bucket_mb)
