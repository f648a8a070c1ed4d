"""Elastic training's pieces that need no world: the store protocol's records, the host
lists of -H and discovery scripts, the ElasticSampler's re-sharding, Horovod's state
semantics (commit, restore, host-update interrupt) and the refusal to run elastic without
the driver. One process; the drills with real workers are test_elastic_drills.py."""

import random

import pytest
import torch

import concord
import concord.torch as hvd
from concord.elastic import protocol
from concord.elastic.driver import ElasticDriver, parse_host_lines
from concord.elastic.state import ObjectState, lost_world


def test_world_record_round_trip_and_local_ranks():
    hosts = {"a:0": "a", "a:1": "a", "b:0": "b"}
    text = protocol.encode_world({"b:0": 0, "a:1": 1, "a:0": 2}, hosts.get)
    world = protocol.decode_world(text)
    assert world["size"] == 3
    assert world["ranks"] == {"b:0": 0, "a:1": 1, "a:0": 2}
    # Local ranks follow the ranks within each host.
    assert world["local"] == {"b:0": [0, 1], "a:1": [0, 2], "a:0": [1, 2]}


@pytest.mark.parametrize("text", ['{"size": 2, "ranks": {"a:0": 0}, "local": {}}', '[1, 2]',
                                  '{"size": 1, "ranks": {"a:0": 0}, "local": {}, "x": 1}'])
def test_foreign_world_record_is_refused(text):
    with pytest.raises(ValueError, match="not an elastic world record"):
        protocol.decode_world(text)


def test_host_lines():
    assert parse_host_lines("a:2\n# comment\n\nb\nc:1 # trailing", default_slots=3) == [("a", 2), ("b", 3), ("c", 1)]
    for bad in ("a:0", "a:x", ":2"):
        with pytest.raises(ValueError, match="bad host entry"):
            parse_host_lines(bad)


def test_driver_refuses_inconsistent_sizes():
    with pytest.raises(ValueError, match="min-np"):
        ElasticDriver(["true"], np=1, min_np=2, hosts=[("localhost", 2)])
    with pytest.raises(ValueError, match="min-np"):
        ElasticDriver(["true"], np=4, min_np=2, max_np=3, hosts=[("localhost", 4)])
    with pytest.raises(ValueError, match="discovery"):
        ElasticDriver(["true"], np=2, min_np=2)


class _World:
    """Stands in for Concord's rank and size in the sampler."""

    def __init__(self, monkeypatch, rank, size):
        monkeypatch.setattr(concord, "is_initialized", lambda: True)
        monkeypatch.setattr(concord, "rank", lambda: rank)
        monkeypatch.setattr(concord, "size", lambda: size)


def shards(dataset, size, processed, epoch=0):
    """Every rank's indices for a world of ``size`` after ``processed`` samples."""
    result = []
    for rank in range(size):
        with pytest.MonkeyPatch.context() as patch:
            _World(patch, rank, size)
            sampler = hvd.elastic.ElasticSampler(dataset, shuffle=True, seed=3)
            sampler.load_state_dict({"epoch": epoch, "processed_num": processed})
            result.append(list(sampler))
    return result


def test_sampler_reshards_the_remaining_samples(monkeypatch):
    dataset = range(103)
    first = shards(dataset, 4, 0)
    assert set(i for shard in first for i in shard) == set(range(103))
    assert all(len(shard) == 26 for shard in first)  # ceil(103 / 4), padded
    # 4 ranks processed 5 batches of 4 samples each: 80 samples; 3 ranks share the other 23.
    _World(monkeypatch, 0, 4)
    sampler = hvd.elastic.ElasticSampler(dataset, shuffle=True, seed=3)
    for batch in range(5):
        sampler.record_batch(batch, 4)
    assert sampler.state_dict() == {"epoch": 0, "processed_num": 80}
    order = list(range(103))
    random.Random(3).shuffle(order)
    after = shards(dataset, 3, 80)
    assert set(i for shard in after for i in shard) == set(order[80:])
    assert all(len(shard) == 8 for shard in after)  # ceil(23 / 3)
    # A new epoch reshuffles and starts over.
    assert shards(dataset, 3, 0, epoch=1) != shards(dataset, 3, 0, epoch=0)


def _local_bcast(obj, root_rank=0):
    return obj


def test_object_state_commit_restore_and_host_update():
    state = ObjectState(_local_bcast, lambda: 0, epoch=0, weights=[1.0])
    state.epoch, state.weights = 3, [2.0]
    state.commit()
    state.epoch = 5
    state.weights.append(9.0)
    state.restore()
    assert (state.epoch, state.weights) == (3, [2.0])
    state.on_hosts_updated(1.0, removed_only=True)
    with pytest.raises(hvd.HostsUpdatedInterrupt) as interrupt:
        state.commit()
    assert interrupt.value.skip_sync
    state.commit()  # the notice was consumed
    state.on_hosts_updated(2.0, removed_only=False)
    with pytest.raises(hvd.HostsUpdatedInterrupt) as interrupt:
        state.check_host_updates()
    assert not interrupt.value.skip_sync


def test_torch_state_restores_model_and_optimizer():
    model = torch.nn.Linear(3, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    state = hvd.elastic.TorchState(model, optimizer, epoch=1)
    saved = {k: v.clone() for k, v in model.state_dict().items()}
    model(torch.ones(4, 3)).sum().backward()
    optimizer.step()
    state.epoch = 7
    assert not torch.equal(model.weight, saved["weight"])
    state.restore()
    assert all(torch.equal(model.state_dict()[k], v) for k, v in saved.items())
    assert state.epoch == 1 and optimizer.state_dict()["state"] == {}


def test_lost_world_errors():
    assert lost_world(concord.CommError("peer gone"))
    assert lost_world(concord.StateError("runtime stopped"))
    assert not lost_world(concord.MismatchError("shape differs"))
    assert not lost_world(ValueError("user bug"))


def test_elastic_run_without_the_driver_runs_once(monkeypatch):
    """A lone process (as under torchrun, whose agent restarts failed workers itself) runs
    the function once after a sync; errors propagate (the refusal under mpirun is the
    elastic.under_mpirun test)."""
    monkeypatch.delenv("CONCORD_ELASTIC_STORE", raising=False)
    hvd.init()
    calls = []

    @hvd.elastic.run
    def train(state):
        calls.append(state.epoch)
        if len(calls) == 2:
            raise concord.CommError("peer lost")
        return "ran"

    state = hvd.elastic.ObjectState(epoch=4)
    assert train(state) == "ran" and calls == [4]
    with pytest.raises(concord.CommError, match="peer lost"):
        train(state)
    assert calls == [4, 4]


def test_fresh_distributed_optimizer_state_initialises_without_collectives(monkeypatch):
    """A worker joining an elastic job has no optimizer state while the others have:
    broadcast_optimizer_state's initialisation step must not allreduce through the
    DistributedOptimizer (only the joining rank takes it, so its allreduces would wait
    forever for the others)."""
    from concord.torch import functions
    monkeypatch.delenv("CONCORD_ELASTIC_STORE", raising=False)
    hvd.init()
    model = torch.nn.Linear(3, 2)
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
                                         named_parameters=model.named_parameters())
    before = hvd.coordination_stats()
    functions._initialise_state(optimizer)
    after = hvd.coordination_stats()
    assert len(optimizer.state_dict()["state"]) == 2
    assert (after["coordinator_rounds"], after["cache_hits"]) == (before["coordinator_rounds"], before["cache_hits"])
