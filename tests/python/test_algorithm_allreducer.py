"""concord._bench.AlgorithmAllreducer (the benchmarks' module, built with the tools), the
baseline tools/torch/latency_bench.py times the runtime against: one registry algorithm run
alone, and runtime_choice(), the entry the runtime runs for a size (a CONCORD_ALLREDUCE_ALGORITHM rule, else rank 0's measured choice from the
cost-model cache file, else the cost model), decided on rank 0. Run on every rank in the same
order; each test makes all of its collective calls before it asserts."""

import json

import numpy as np
import pytest

import concord
import concord.torch as hvd
from concord import _bench



def require_one_node():
    """The tables written below are for a job on one node (the same answer on every rank)."""
    if hvd.local_size() != hvd.size():
        pytest.skip("the table's scope is written for one node")


def make_allreducer(monkeypatch, **environment):
    """An AlgorithmAllreducer built with `environment` set (its settings are read then)."""
    for name in ("CONCORD_ALLREDUCE_ALGORITHM", "CONCORD_AUTOTUNE", "CONCORD_COST_MODEL"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    return _bench.AlgorithmAllreducer()


def test_allreduce_runs_the_named_algorithm(monkeypatch):
    allreducer = make_allreducer(monkeypatch)
    results = {}
    for name in ("ring", "recursive_doubling"):
        data = np.full(1001, hvd.rank() + 1, dtype=np.float32)
        allreducer.allreduce(name, data.ctypes.data, data.size, "float32", hvd.Sum)
        results[name] = data
    expected = hvd.size() * (hvd.size() + 1) / 2
    for name, data in results.items():
        wrong = np.flatnonzero(data != expected)
        assert wrong.size == 0, (f"rank {hvd.rank()}/{hvd.size()}: {name}, 1001 float32: element {wrong[0]} is "
                                 f"{data[wrong[0]]}, expected {expected}")


def test_runtime_choice_follows_rank_0s_size_rule(monkeypatch):
    # Only rank 0's rule counts (the runtime adopts rank 0's settings): the others differ.
    rule = "0-4K:recursive_doubling;4K-:tree" if hvd.rank() == 0 else "0-:ring"
    allreducer = make_allreducer(monkeypatch, CONCORD_ALLREDUCE_ALGORITHM=rule)
    small, large = (allreducer.runtime_choice(n, "float32", hvd.Sum) for n in (16, 4096))
    assert (small, large) == ("recursive_doubling", "tree"), f"rank {hvd.rank()}/{hvd.size()}"


def write_table(path, entries):
    """A cost-model cache file holding `entries` for the measured-selection scope of this
    job with the settings of table_settings() (algorithms/autotune.h: autotune_scope)."""
    scope = f"ranks={hvd.size()} nodes=1 chunk=65536 tree_chunks=3 timing=pair,cpu"
    path.write_text(json.dumps({"autotune": {scope: entries}}))


def table_settings(cache):
    return dict(CONCORD_COST_MODEL=str(cache), CONCORD_RING_CHUNK_BYTES="65536", CONCORD_TREE_CHUNKS="3")


def test_runtime_choice_is_rank_0s_measured_choice(monkeypatch, tmp_path):
    require_one_node()
    cache = tmp_path / "cost_model.json"  # one file per rank: only rank 0's may count
    write_table(cache, {"allreduce/float32/2^12": "tree" if hvd.rank() == 0 else "ring"})
    allreducer = make_allreducer(monkeypatch, **table_settings(cache))
    tabled = allreducer.runtime_choice(1024, "float32", hvd.Sum)  # 4096 B: bucket 2^12
    untabled = allreducer.runtime_choice(16, "float32", hvd.Sum)
    model_1024, model_16 = allreducer.choose(1024, "float32", hvd.Sum), allreducer.choose(16, "float32", hvd.Sum)
    # The runtime measures only with 2+ ranks; a bucket the table lacks is the cost model's.
    assert tabled == ("tree" if hvd.size() > 1 else model_1024), f"rank {hvd.rank()}/{hvd.size()}"
    assert untabled == model_16, f"rank {hvd.rank()}/{hvd.size()}"


@pytest.mark.parametrize("entries", [None, {"allreduce/float32/2^12": 1}, {"allreduce/float32/2^12": "no_such"},
                                     {"allreduce/float32/2^12": "hierarchical"}])
def test_runtime_choice_without_a_usable_entry_is_the_cost_models(monkeypatch, tmp_path, entries):
    """No table for this scope, entries that are not names, an unknown name, or an entry
    that declines the problem (hierarchical on one node): the runtime would measure anew."""
    require_one_node()
    cache = tmp_path / "cost_model.json"
    if entries is None:
        cache.write_text(json.dumps({"autotune": {"another scope": {"allreduce/float32/2^12": "tree"}}}))
    else:
        write_table(cache, entries)
    allreducer = make_allreducer(monkeypatch, **table_settings(cache))
    got, model = allreducer.runtime_choice(1024, "float32", hvd.Sum), allreducer.choose(1024, "float32", hvd.Sum)
    write_table(cache, {"allreduce/float32/2^12": "tree"})
    off = make_allreducer(monkeypatch, CONCORD_AUTOTUNE="0", **table_settings(cache))
    got_off, model_off = off.runtime_choice(1024, "float32", hvd.Sum), off.choose(1024, "float32", hvd.Sum)
    assert got == model, f"rank {hvd.rank()}/{hvd.size()}: {entries}"
    assert got_off == model_off, f"rank {hvd.rank()}/{hvd.size()}: CONCORD_AUTOTUNE=0"


def test_runtime_choice_fails_on_every_rank_when_rank_0_cannot_decide(monkeypatch):
    rule = "0-:no_such_algorithm" if hvd.rank() == 0 else "0-:ring"
    allreducer = make_allreducer(monkeypatch, CONCORD_ALLREDUCE_ALGORITHM=rule)
    with pytest.raises(concord.InvalidArgumentError, match="rank 0 could not decide"):
        allreducer.runtime_choice(16, "float32", hvd.Sum)
