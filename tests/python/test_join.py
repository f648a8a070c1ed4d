"""hvd.join() with Horovod 0.28.1's semantics (horovod/common/controller.cc,
ConstructResponse; operations.cc): ranks with fewer batches join early; the others'
allreduces complete with each joined rank contributing zeros and Average dividing by all
ranks (the postscale 1 / size of Horovod's Average, truncated toward zero for integers),
while an allgather, broadcast, alltoall or reducescatter raises on every active rank with
Horovod's text; join() returns the last rank to join. Ends with a DistributedOptimizer
training run where rank r has r + 2 batches, checked against a single-process replay."""

import pytest
import torch

import concord.torch as hvd
from concord_test_utils import expect_raises

# Horovod's error texts for a collective while some rank has joined (controller.cc).
_REFUSED = {
    "allgather": "Allgather is not supported with Join at this time. Specify sparse_to_dense=True if using "
                 "DistributedOptimizer",
    "broadcast": "Broadcast is not supported with Join at this time.",
    "alltoall": "Alltoall is not supported with Join at this time.",
    "reducescatter": "Reducescatter is not supported with Join at this time.",
}


def test_joined_ranks_contribute_zeros_and_average_divides_by_all_ranks():
    """Rank r runs r + 1 steps, so step s has ranks s..P-1 active and 0..s-1 joined.
    Expected values as Horovod computes them: the sum of the active ranks' tensors, and
    for Average that sum times the postscale 1.0 / P, cast back to the integer type (e.g.
    an int32 75 on the one active rank of 2 gives int(75 * 0.5) = 37)."""
    P, me = hvd.size(), hvd.rank()
    results = []
    for step in range(me + 1):
        mine = torch.full((3,), float(me + 1))
        ints = torch.full((5,), 75 + 37 * me, dtype=torch.int32)
        results.append((step,
                        hvd.allreduce(mine, name=f"join.sum.{step}", op=hvd.Sum),
                        hvd.allreduce(mine, name=f"join.avg.{step}", op=hvd.Average),
                        hvd.allreduce(ints, name=f"join.int.{step}"),
                        hvd.grouped_allreduce([mine, ints], name=f"join.group.{step}", op=hvd.Average)))
    last = hvd.join()
    assert last == P - 1, f"rank {me}: join() returned {last}, expected the last rank to join, {P - 1}"
    for step, total, average, int_average, grouped in results:
        active = list(range(step, P))
        expected_sum = float(sum(q + 1 for q in active))
        int_sum = sum(75 + 37 * q for q in active)
        expected_int = torch.full((5,), int(int_sum * (1.0 / P)), dtype=torch.int32)
        what = f"rank {me}/{P} step {step} (ranks {active} active)"
        assert torch.equal(total, torch.full((3,), expected_sum)), f"{what}: Sum {total}"
        assert torch.allclose(average, torch.full((3,), expected_sum / P)), f"{what}: Average {average}"
        assert torch.equal(int_average, expected_int), f"{what}: int32 Average {int_average} != {expected_int}"
        assert torch.allclose(grouped[0], torch.full((3,), expected_sum / P)), f"{what}: grouped {grouped[0]}"
        assert torch.equal(grouped[1], expected_int), f"{what}: grouped int32 {grouped[1]}"


@pytest.mark.parametrize("collective", sorted(_REFUSED))
def test_collectives_other_than_allreduce_raise_horovods_error_while_a_rank_has_joined(collective):
    """Rank 0 joins first; every other rank's collective fails with Horovod's text (an
    InvalidArgumentError, i.e. a HorovodInternalError); a later allreduce still works."""
    P, me = hvd.size(), hvd.rank()
    if P < 2:
        pytest.skip("needs a joined rank and an active one")
    if me == 0:
        last = hvd.join()
        assert 0 < last < P, f"rank 0 joined first, yet join() returned {last}"
        return
    name = f"join.refused.{collective}"
    calls = {
        "allgather": lambda: hvd.allgather(torch.ones(2, 2), name=name),
        "broadcast": lambda: hvd.broadcast(torch.ones(2), 1, name=name),  # an active root: still refused
        "alltoall": lambda: hvd.alltoall(torch.ones(P, 1), name=name),
        "reducescatter": lambda: hvd.reducescatter(torch.ones(P, 2), name=name),
    }
    error = expect_raises(hvd.HorovodInternalError, f"{collective} with rank 0 joined", calls[collective])
    assert _REFUSED[collective] in str(error) and name in str(error), f"rank {me}: {error}"
    after = hvd.allreduce(torch.ones(2), name=f"{name}.after", op=hvd.Sum)
    assert torch.equal(after, torch.full((2,), float(P - 1))), f"rank {me}: allreduce after the refusal {after}"
    hvd.join()


def test_tensors_above_the_fusion_limit_with_small_ones_groups_and_a_joined_rank():
    """Tensors above CONCORD_FUSION_MAX_TENSOR_BYTES (128 KiB) run unfused, the small ones
    around them fuse: one burst of both, as a group and one by one, in and out of place,
    while ranks join one after another (each step has ranks step..P-1 active; Average
    divides by all P ranks, as Horovod)."""
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
            assert torch.allclose(averaged[i], expected / P), f"{what}: in place average over all {P} ranks"
            assert torch.equal(mine[i], torch.arange(n, dtype=torch.float32) + (me + 1)), \
                f"{what}: out-of-place input changed"


def test_join_twice_in_a_row_and_alone():
    assert hvd.join() in range(hvd.size())
    assert hvd.join() in range(hvd.size())


def _batches(rank, count):
    generator = torch.Generator().manual_seed(1000 + rank)
    return [(torch.randn(4, 5, generator=generator), torch.randn(4, 1, generator=generator)) for _ in range(count)]


def test_training_with_join_and_uneven_batches():
    """Rank r trains on r + 2 batches, then joins; at step s the gradient is, as under
    Horovod, the sum over the ranks that still have a batch divided by all P ranks (a
    joined rank contributes zeros). After join() every rank takes the last rank's
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
            p.grad = sum(g[i] for g in grads) / P
        sgd.step()
    for (name, got), expected in zip(model.named_parameters(), replay.parameters()):
        assert torch.allclose(got, expected, atol=1e-6), \
            f"rank {me}: parameter {name} after training with join: {got.tolist()} != {expected.tolist()}"
