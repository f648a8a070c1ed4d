"""The names of the ``"concord"`` backend's collectives (concord.torch.c10d_names): calls
repeated in a loop hit Concord's response cache (its counters, concord.coordination_stats,
count hits and no coordinator round), async calls beyond the window never share a name in
flight, and a mismatch inside a cached loop still fails on every rank, after which the loop
hits again.
"""

import time

import pytest
import torch
import torch.distributed as dist

import concord
from concord.torch.c10d_names import WINDOW
from torch_distributed_utils import where, world  # noqa: F401  (world: a fixture)

R = dist.ReduceOp


def _iteration(step):
    """One iteration of a loop of four cacheable calls of different signatures; returns
    the results, checked by the caller."""
    size, rank = dist.get_world_size(), dist.get_rank()
    summed = torch.full((4,), float(rank + step))
    dist.all_reduce(summed)
    largest = torch.tensor([rank, step, -rank], dtype=torch.int64)
    dist.all_reduce(largest, op=R.MAX)
    gathered = [torch.empty(2) for _ in range(size)]
    dist.all_gather(gathered, torch.tensor([float(rank), float(step)]))
    dist.barrier()
    return summed, largest, gathered


def _check_iteration(step, results):
    size = dist.get_world_size()
    summed, largest, gathered = results
    expected = float(sum(range(size)) + size * step)
    assert torch.equal(summed, torch.full((4,), expected)), where("all_reduce in the loop", step=step, got=summed)
    assert largest.tolist() == [size - 1, step, 0], where("all_reduce MAX in the loop", step=step, got=largest)
    assert [g.tolist() for g in gathered] == [[float(r), float(step)] for r in range(size)], \
        where("all_gather in the loop", step=step, got=gathered)


def _delta(before):
    after = concord.coordination_stats()
    return {key: after[key] - before[key] for key in ("cache_hits", "cache_misses", "invalidations")}


def test_repeated_calls_hit_the_response_cache(world):
    """Once every name of the loop was negotiated (WINDOW + 1 iterations: each name is
    used every WINDOW-th time its context comes), every call is a cache hit: no request
    reaches the coordinator."""
    for step in range(WINDOW + 1):
        _check_iteration(step, _iteration(step))
    iterations = 3 * WINDOW
    before = concord.coordination_stats()
    for step in range(iterations):
        _check_iteration(step, _iteration(step))
    delta = _delta(before)
    assert delta == {"cache_hits": 4 * iterations, "cache_misses": 0, "invalidations": 0}, \
        where("response cache counters over a loop of 4 calls", iterations=iterations, got=delta)


def test_async_calls_beyond_the_window(world):
    """3 * WINDOW + 1 outstanding all_reduces of one signature (rank 0 submits late, so the
    others' stay in flight): names repeat every WINDOW calls and a call waits for its
    name's previous use, never submitting a name still in flight (which the runtime
    refuses)."""
    size, rank = dist.get_world_size(), dist.get_rank()
    if rank == 0:
        time.sleep(0.3)
    count = 3 * WINDOW + 1
    tensors = [torch.full((8,), float(i)) for i in range(count)]
    works = [dist.all_reduce(t, async_op=True) for t in tensors]
    names = [w._description.split("'")[1] for w in works]
    for i, work in enumerate(works):
        work.wait()
        assert torch.equal(tensors[i], torch.full((8,), float(i * size))), where("async all_reduce", call=i)
    for i in range(1, count - WINDOW):
        assert names[i] == names[i + WINDOW], where("name not reused a window later", call=i, names=names)
        assert len(set(names[i:i + WINDOW])) == WINDOW, where("names repeat within a window", call=i, names=names)


@pytest.mark.parametrize("wrong", ["shape", "collective"])
def test_mismatch_in_a_cached_loop(world, wrong):
    """In a loop whose calls hit the cache, rank 0 calls another shape (or a broadcast
    instead of an all_reduce): every rank gets the mismatch error (the name is the same on
    every rank: it follows from the calls before), and the loop then hits again."""
    size, rank = dist.get_world_size(), dist.get_rank()
    if size == 1:
        pytest.skip("a mismatch needs two ranks")
    for step in range(WINDOW + 1):
        _check_iteration(step, _iteration(step))
    tensor = torch.ones(5 if rank == 0 and wrong == "shape" else 4)
    with pytest.raises(RuntimeError, match="(?i)mismatch"):
        if rank == 0 and wrong == "collective":
            dist.broadcast(tensor, 0)
        else:
            dist.all_reduce(tensor)
    for step in range(WINDOW + 1):  # a new series of names: negotiated once more
        _check_iteration(step, _iteration(step))
    before = concord.coordination_stats()
    _check_iteration(7, _iteration(7))
    delta = _delta(before)
    assert delta == {"cache_hits": 4, "cache_misses": 0, "invalidations": 0}, \
        where("cache counters after a mismatch", wrong=wrong, got=delta)
