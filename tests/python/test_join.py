"""hvd.join(): ranks with fewer batches join early; the others' collectives complete with the
joined ranks contributing nothing (zeros to sums, averages over the active ranks, no rows
to allgather), a broadcast from a joined root and an alltoall raise on every rank, and
join() returns the last rank to join. Ends with a DistributedOptimizer training run where
rank r has r + 2 batches, checked against a single-process replay."""

import pytest
import torch

import concord.torch as hvd
from concord_test_utils import expect_raises


def test_join_contributes_nothing_to_allreduce_and_allgather():
    P, me = hvd.size(), hvd.rank()
    results = []
    for step in range(me + 1):  # rank r runs r + 1 steps: step s has ranks s..P-1 active
        mine = torch.full((3,), float(me + 1))
        results.append((step,
                        hvd.allreduce(mine, name=f"join.sum.{step}", op=hvd.Sum),
                        hvd.allreduce(mine, name=f"join.avg.{step}", op=hvd.Average),
                        hvd.allgather(torch.full((me + 1, 2), me, dtype=torch.int16), name=f"join.ag.{step}"),
                        hvd.reducescatter(torch.full((P, 2), float(me + 1)), name=f"join.rs.{step}",
                                          op=hvd.Average)))
    last = hvd.join()
    assert last == P - 1, f"rank {me}: join() returned {last}, expected the last rank to join, {P - 1}"
    for step, total, average, gathered, scattered in results:
        active = list(range(step, P))
        expected_sum = float(sum(q + 1 for q in active))
        assert torch.equal(total, torch.full((3,), expected_sum)), f"rank {me} step {step}: sum {total}"
        assert torch.allclose(average, torch.full((3,), expected_sum / len(active))), \
            f"rank {me} step {step}: average {average} over {len(active)} active ranks"
        expected_rows = torch.cat([torch.full((q + 1, 2), q, dtype=torch.int16) for q in active])
        assert torch.equal(gathered, expected_rows), f"rank {me} step {step}: allgather {gathered.tolist()}"
        assert torch.allclose(scattered, torch.full((1, 2), expected_sum / len(active))), \
            f"rank {me} step {step}: reducescatter {scattered}"


def test_tensors_above_the_fusion_limit_with_small_ones_groups_and_a_joined_rank():
    """Tensors above CONCORD_FUSION_MAX_TENSOR_BYTES (128 KiB) run unfused, the small ones
    around them fuse: one burst of both, as a group and one by one, in and out of place,
    while ranks join one after another (each step has ranks step..P-1 active)."""
    P, me = hvd.size(), hvd.rank()
    sizes = [7, 100_003, 1024, 70_000, 3, 32_769]  # 400, 280 and 128 KiB + 4 B above the limit
    results = []
    for step in range(me + 1):
        mine = [torch.arange(n, dtype=torch.float32) + (me + 1) for n in sizes]
        grouped = hvd.grouped_allreduce_async(mine, name=f"join.big.group.{step}", op=hvd.Sum)
        single = [hvd.allreduce_async(t, name=f"join.big.{step}.{i}", op=hvd.Sum) for i, t in enumerate(mine)]
        in_place = [t.clone() for t in mine]
        single_ = [hvd.allreduce_async_(t, name=f"join.big_.{step}.{i}", op=hvd.Average)
                   for i, t in enumerate(in_place)]
        results.append((step, hvd.synchronize(grouped), [hvd.synchronize(h) for h in single],
                        [hvd.synchronize(h) for h in single_], mine))
    hvd.join()
    for step, grouped, single, averaged, mine in results:
        active = range(step, P)
        for i, n in enumerate(sizes):
            expected = torch.arange(n, dtype=torch.float32) * len(active) + sum(q + 1 for q in active)
            what = f"rank {me} step {step} tensor {i} ({n} float32)"
            assert torch.equal(grouped[i], expected), f"{what}: grouped {grouped[i][:4]} vs {expected[:4]}"
            assert torch.equal(single[i], expected), f"{what}: out of place {single[i][:4]} vs {expected[:4]}"
            assert torch.allclose(averaged[i], expected / len(active)), f"{what}: in place average"
            assert torch.equal(mine[i], torch.arange(n, dtype=torch.float32) + (me + 1)), \
                f"{what}: out-of-place input changed"


def test_join_twice_in_a_row_and_alone():
    assert hvd.join() in range(hvd.size())
    assert hvd.join() in range(hvd.size())


def test_broadcast_from_joined_root_and_alltoall_raise_on_every_active_rank():
    if hvd.size() < 2:
        pytest.skip("needs a joined rank and an active one")
    me = hvd.rank()
    if me == 0:
        last = hvd.join()
        assert 0 < last < hvd.size(), f"rank 0 joined first, yet join() returned {last}"
        return
    error = expect_raises(hvd.InvalidArgumentError, "broadcast from joined root", hvd.broadcast,
                          torch.ones(2), 0, name="join.bcast")
    assert "root rank 0" in str(error) and "join" in str(error), str(error)
    error = expect_raises(hvd.InvalidArgumentError, "alltoall with a joined rank", hvd.alltoall,
                          torch.ones(hvd.size() - 1), name="join.a2a", splits=[0] + [1] * (hvd.size() - 1))
    assert "ranks [0]" in str(error), str(error)
    # a broadcast from an active root still works while rank 0 is joined
    got = hvd.broadcast(torch.full((2,), float(me)), 1, name="join.bcast.active")
    assert torch.equal(got, torch.full((2,), 1.0))
    hvd.join()


def _batches(rank, count):
    generator = torch.Generator().manual_seed(1000 + rank)
    return [(torch.randn(4, 5, generator=generator), torch.randn(4, 1, generator=generator)) for _ in range(count)]


def test_training_with_join_and_uneven_batches():
    """Rank r trains on r + 2 batches, then joins; at step s the gradient is the average
    over the ranks that still have a batch. After join() every rank takes the last rank's
    parameters; every rank replays all ranks' batches locally and must end with them."""
    P, me = hvd.size(), hvd.rank()
    torch.manual_seed(7)
    model = torch.nn.Linear(5, 1)
    replay = torch.nn.Linear(5, 1)
    replay.load_state_dict(model.state_dict())
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                         named_parameters=model.named_parameters())
    for x, y in _batches(me, me + 2):
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
    last = hvd.join()
    # a rank that joined early stopped updating: take the last rank's parameters (Horovod's idiom)
    hvd.broadcast_parameters(model.state_dict(), root_rank=last)

    sgd = torch.optim.SGD(replay.parameters(), lr=0.1)
    data = [_batches(q, q + 2) for q in range(P)]
    for step in range(P + 1):
        active = [q for q in range(P) if step < q + 2]
        grads = []
        for q in active:
            replay.zero_grad()
            x, y = data[q][step]
            torch.nn.functional.mse_loss(replay(x), y).backward()
            grads.append([p.grad.clone() for p in replay.parameters()])
        for i, p in enumerate(replay.parameters()):
            p.grad = sum(g[i] for g in grads) / len(active)
        sgd.step()
    for (name, got), expected in zip(model.named_parameters(), replay.parameters()):
        assert torch.allclose(got, expected, atol=1e-6), \
            f"rank {me}: parameter {name} after training with join: {got.tolist()} != {expected.tolist()}"
