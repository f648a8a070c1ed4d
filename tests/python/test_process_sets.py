"""Process sets (hvd.ProcessSet): init(process_sets=...), add/remove_process_set with
CONCORD_DYNAMIC_PROCESS_SETS=1 (and the error without it), rank()/size()/included(),
process_set= on every collective and on DistributedOptimizer, sets of odd sizes, and the
errors of misuse. Registered as python.process_sets.npN (1..4 ranks, dynamic sets on);
under python.npN the dynamic tests check the error instead."""

import os

import pytest
import torch

import concord.torch as hvd
from concord_test_utils import expect_raises

def _dynamic_sets_enabled():
    """CONCORD_DYNAMIC_PROCESS_SETS, else Horovod's HOROVOD_DYNAMIC_PROCESS_SETS read as
    Horovod reads a boolean (an integer > 0)."""
    concord = os.environ.get("CONCORD_DYNAMIC_PROCESS_SETS")
    if concord:
        return concord == "1"
    return int(os.environ.get("HOROVOD_DYNAMIC_PROCESS_SETS") or 0) > 0


DYNAMIC = _dynamic_sets_enabled()


def subsets(size):
    """Sets different from the world: even ranks, odd ranks, the last rank alone."""
    candidates = [list(range(0, size, 2)), list(range(1, size, 2)), [size - 1]]
    result = []
    for ranks in candidates:
        if ranks and ranks != list(range(size)) and ranks not in result:
            result.append(ranks)
    return result


def exercise(process_set, tag):
    """Every collective on `process_set`, checked on its members against references built
    from the members' global ranks; non-members check that submitting raises."""
    me = hvd.rank()
    members = process_set.ranks
    if not process_set.included():
        expect_raises(hvd.InvalidArgumentError, "rank() outside the set (Horovod: ValueError)", process_set.rank)
        error = expect_raises(hvd.InvalidArgumentError, "allreduce on a set without this rank", hvd.allreduce,
                              torch.ones(1), name=f"{tag}.outsider",
                              process_set=process_set)
        assert "not in process set" in str(error), str(error)
        return
    assert process_set.size() == len(members) and process_set.rank() == members.index(me)
    ps = dict(process_set=process_set)
    total = hvd.allreduce(torch.full((3,), float(me)), name=f"{tag}.sum", op=hvd.Sum, **ps)
    assert torch.equal(total, torch.full((3,), float(sum(members)))), f"rank {me} {tag}: sum {total}"
    average = hvd.allreduce(torch.full((2,), float(me)), name=f"{tag}.avg", **ps)
    assert torch.allclose(average, torch.full((2,), sum(members) / len(members)))
    gathered = hvd.allgather(torch.full((me + 1, 2), me, dtype=torch.int16), name=f"{tag}.ag", **ps)
    assert torch.equal(gathered, torch.cat([torch.full((q + 1, 2), q, dtype=torch.int16) for q in members]))
    root = members[-1]
    got = hvd.broadcast(torch.full((2,), float(me)), root, name=f"{tag}.bc", **ps)
    assert torch.equal(got, torch.full((2,), float(root))), f"rank {me} {tag}: broadcast from {root}: {got}"
    rows = len(members) + 1  # the set's rank 0 gets the extra row
    scattered = hvd.reducescatter(torch.arange(rows * 2, dtype=torch.float64).reshape(rows, 2) + me,
                                  name=f"{tag}.rs", op=hvd.Sum, **ps)
    full = sum(torch.arange(rows * 2, dtype=torch.float64).reshape(rows, 2) + q for q in members)
    mine = process_set.rank()
    start = mine * (rows // len(members)) + min(mine, rows % len(members))
    count = rows // len(members) + (1 if mine < rows % len(members) else 0)
    assert torch.equal(scattered, full[start:start + count]), f"rank {me} {tag}: reducescatter {scattered}"
    received, splits = hvd.alltoall(torch.full((len(members),), me), splits=[1] * len(members),
                                    name=f"{tag}.a2a", **ps)
    assert torch.equal(received, torch.tensor(members)) and splits.tolist() == [1] * len(members)
    grouped = hvd.grouped_allreduce([torch.ones(2), torch.ones(3)], name=f"{tag}.grouped", op=hvd.Sum, **ps)
    assert all(torch.equal(g, torch.full_like(g, float(len(members)))) for g in grouped)
    hvd.barrier(process_set=process_set)
    if len(members) < hvd.size():
        outsider = next(r for r in range(hvd.size()) if r not in members)
        error = expect_raises(hvd.InvalidArgumentError, "broadcast from a root outside the set", hvd.broadcast,
                              torch.ones(1), outsider, name=f"{tag}.bad_root", **ps)
        assert f"root rank {outsider} is not in process set" in str(error), str(error)


def test_init_with_process_sets_and_every_collective_on_them():
    size = hvd.size()
    sets = [hvd.ProcessSet(ranks) for ranks in subsets(size)]
    hvd.shutdown()
    try:
        hvd.init(process_sets=sets)
        assert [s.process_set_id for s in sets] == list(range(1, len(sets) + 1))
        assert hvd.global_process_set.size() == size and hvd.global_process_set.included()
        for process_set in sets:
            exercise(process_set, f"init.{process_set.process_set_id}")
        # the same tensor name in flight in two sets at once is fine: each set has its own queue
        handles = [hvd.allreduce_async(torch.ones(1), name="same.name", process_set=s, op=hvd.Sum)
                   for s in sets if s.included()]
        results = [hvd.synchronize(h) for h in handles]
        assert [r.item() for r in results] == [float(len(s.ranks)) for s in sets if s.included()]
        # shutdown() stops every rank's runtime (as Horovod's): wait until all are done
        hvd.barrier()
    finally:
        hvd.shutdown()
        hvd.init()


def test_init_rejects_bad_process_sets():
    size = hvd.size()
    hvd.shutdown()
    try:
        for bad, words in [([[size]], "outside"), ([list(range(size))], "twice"), ([[0, 0]], "duplicates")]:
            error = expect_raises(hvd.InvalidArgumentError, f"init(process_sets={bad})", hvd.init, process_sets=bad)
            assert words in str(error), str(error)
            assert not hvd.is_initialized()
    finally:
        hvd.init()


def test_unregistered_process_set_raises():
    error = expect_raises(hvd.InvalidArgumentError, "unregistered set", hvd.allreduce, torch.ones(1),
                          name="unregistered", process_set=hvd.ProcessSet([0]))
    assert "not registered" in str(error)


@pytest.mark.skipif(DYNAMIC, reason="checks the error without CONCORD_DYNAMIC_PROCESS_SETS=1")
def test_add_process_set_needs_the_dynamic_setting():
    error = expect_raises(hvd.InvalidArgumentError, "add without the setting", hvd.add_process_set, [0])
    assert "CONCORD_DYNAMIC_PROCESS_SETS=1" in str(error), str(error)


@pytest.mark.skipif(not DYNAMIC, reason="needs CONCORD_DYNAMIC_PROCESS_SETS=1")
def test_dynamic_add_exercise_remove():
    size = hvd.size()
    for ranks in subsets(size):
        process_set = hvd.add_process_set(ranks)
        assert process_set.process_set_id > 0
        exercise(process_set, f"dyn.{process_set.process_set_id}")
        stale = hvd.ProcessSet(ranks)
        stale.process_set_id = process_set.process_set_id  # a copy that misses the removal
        assert hvd.remove_process_set(process_set)
        assert process_set.process_set_id is None and process_set.size() is None
        error = expect_raises(hvd.InvalidArgumentError, "collective on a removed set", hvd.allreduce, torch.ones(1),
                              name="dyn.gone", process_set=process_set)
        assert "not registered" in str(error), str(error)
        error = expect_raises(hvd.InvalidArgumentError, "collective on a removed id", hvd.allreduce, torch.ones(1),
                              name="dyn.gone", process_set=stale)
        assert f"no process set with id {stale.process_set_id}" in str(error), str(error)
    expect_raises(hvd.InvalidArgumentError, "remove the global set", hvd.remove_process_set, hvd.global_process_set)
    if size > 1:
        first = hvd.add_process_set([0])
        error = expect_raises(hvd.InvalidArgumentError, "add the same ranks twice", hvd.add_process_set, [0])
        assert "already exists" in str(error), str(error)
        hvd.remove_process_set(first)
        mine = [0] if hvd.rank() == 0 else [1]
        error = expect_raises(hvd.MismatchError, "ranks differ between callers", hvd.add_process_set, mine)
        assert "process set ranks" in str(error), str(error)


@pytest.mark.skipif(not DYNAMIC, reason="needs CONCORD_DYNAMIC_PROCESS_SETS=1")
def test_distributed_optimizer_on_a_process_set():
    """The even ranks average their gradients among themselves only."""
    size, me = hvd.size(), hvd.rank()
    evens = hvd.add_process_set(list(range(0, size, 2))) if size > 1 else hvd.global_process_set
    if evens.included():
        torch.manual_seed(3)
        model = torch.nn.Linear(2, 1, bias=False)
        start = model.weight.detach().clone()
        optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=1.0),
                                             named_parameters=model.named_parameters(), process_set=evens)
        optimizer.zero_grad()
        (model(torch.full((1, 2), float(me + 1))).sum()).backward()
        optimizer.step()
        members = evens.ranks if size > 1 else [0]
        expected = start - sum(float(q + 1) for q in members) / len(members)
        assert torch.allclose(model.weight, expected), f"rank {me}: {model.weight} != {expected}"
    if size > 1:
        hvd.remove_process_set(evens)


def _evens_set():
    """The even ranks as a registered set: added dynamically, or the world at 1 rank or
    without CONCORD_DYNAMIC_PROCESS_SETS=1 (then the calls below run on the world)."""
    if DYNAMIC and hvd.size() > 1:
        return hvd.add_process_set(list(range(0, hvd.size(), 2)))
    return hvd.global_process_set


def _remove(process_set):
    if process_set is not hvd.global_process_set:
        hvd.remove_process_set(process_set)


def test_objects_and_optimizer_state_on_a_process_set_take_global_roots():
    """broadcast_object / broadcast_optimizer_state: root_rank is a GLOBAL rank (Horovod
    compares it with hvd.rank()); allgather_object lists the set's ranks in order."""
    me = hvd.rank()
    evens = _evens_set()
    members = evens.ranks if evens is not hvd.global_process_set else list(range(hvd.size()))
    root = members[-1]
    if evens.included():
        got = hvd.broadcast_object({"from": me}, root_rank=root, name="ps.obj", process_set=evens)
        gathered = hvd.allgather_object(("rank", me), name="ps.objs", process_set=evens)
        model = torch.nn.Linear(2, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1 * (me + 1), momentum=0.9)
        hvd.broadcast_optimizer_state(optimizer, root_rank=root, process_set=evens)
        assert got == {"from": root}, f"rank {me}: broadcast_object from global rank {root}: {got}"
        assert gathered == [("rank", q) for q in members], f"rank {me}: allgather_object {gathered}"
        lr = optimizer.param_groups[0]["lr"]
        assert abs(lr - 0.1 * (root + 1)) < 1e-12, f"rank {me}: lr {lr}, root {root}'s is {0.1 * (root + 1)}"
    _remove(evens)


def test_broadcast_gradient_on_a_process_set_reaches_the_global_root():
    """Autograd broadcast, as Horovod's HorovodBroadcast.backward: the gradient averaged
    over the set (here every rank's is 1) reaches the (global) root only."""
    me = hvd.rank()
    evens = _evens_set()
    members = evens.ranks if evens is not hvd.global_process_set else list(range(hvd.size()))
    if evens.included():
        x = torch.ones(3, requires_grad=True)
        y = hvd.broadcast(x * (me + 1), members[-1], name="ps.bcast.grad", process_set=evens)
        y.sum().backward()
        expected = float(me + 1) if me == members[-1] else 0.0
        assert torch.allclose(x.grad, torch.full((3,), expected)), f"rank {me}: grad {x.grad}, want {expected}"
    _remove(evens)


def test_mismatch_in_a_process_set_names_global_ranks_and_the_set():
    me = hvd.rank()
    evens = _evens_set()
    members = evens.ranks if evens is not hvd.global_process_set else list(range(hvd.size()))
    if evens.included() and len(members) > 1:
        rows = 3 if me == members[-1] else 2
        error = expect_raises(hvd.MismatchError, "shape mismatch in a set", hvd.allreduce, torch.ones(rows),
                              name="ps.mismatch", process_set=evens)
        assert f"[3] on ranks [{members[-1]}]" in str(error), str(error)
        if evens is not hvd.global_process_set:
            assert f"in process set {evens.process_set_id} (ranks " in str(error), str(error)
    _remove(evens)


def test_set_and_world_collectives_from_two_threads_at_once():
    """A thread reduces on the world while the main thread reduces on a set: each set
    negotiates on its own communicator, so neither waits for the other."""
    import threading
    me, size = hvd.rank(), hvd.size()
    evens = _evens_set()
    members = evens.ranks if evens is not hvd.global_process_set else list(range(size))
    world_results, errors = [], []

    def world_loop():
        try:
            for i in range(10):
                world_results.append(hvd.allreduce(torch.full((4,), float(me)), name=f"thr.world.{i}", op=hvd.Sum))
        except Exception as error:  # reported below, on the main thread
            errors.append(error)

    thread = threading.Thread(target=world_loop)
    thread.start()
    set_results = []
    if evens.included():
        for i in range(10):
            set_results.append(hvd.allreduce(torch.full((3,), float(me)), name=f"thr.set.{i}", op=hvd.Sum,
                                             process_set=evens))
    thread.join()
    _remove(evens)
    assert not errors, f"rank {me}: world thread failed: {errors}"
    assert all(torch.equal(r, torch.full((4,), float(sum(range(size))))) for r in world_results), world_results
    assert len(world_results) == 10
    assert all(torch.equal(r, torch.full((3,), float(sum(members)))) for r in set_results), set_results
