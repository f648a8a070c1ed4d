"""concord._core.AlgorithmAllreducer, the baseline tools/latency_bench.py times the runtime
against: one registry algorithm run alone, and runtime_choice(), the entry the runtime runs
for a size (a CONCORD_ALLREDUCE_ALGORITHM rule, else rank 0's measured choice from the
cost-model cache file, else the cost model). Run on every rank in the same order."""

import json

import numpy as np
import pytest

import concord
import concord.torch as hvd


def make_allreducer(monkeypatch, **environment):
    """An AlgorithmAllreducer built with `environment` set (its settings are read then)."""
    for name in ("CONCORD_ALLREDUCE_ALGORITHM", "CONCORD_AUTOTUNE", "CONCORD_COST_MODEL"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    return concord._core.AlgorithmAllreducer()


def test_allreduce_runs_the_named_algorithm(monkeypatch):
    allreducer = make_allreducer(monkeypatch)
    for name in ("ring", "recursive_doubling"):
        data = np.full(1001, hvd.rank() + 1, dtype=np.float32)
        allreducer.allreduce(name, data.ctypes.data, data.size, "float32", hvd.Sum)
        expected = hvd.size() * (hvd.size() + 1) / 2
        wrong = np.flatnonzero(data != expected)
        assert wrong.size == 0, (f"rank {hvd.rank()}/{hvd.size()}: {name}, 1001 float32: element {wrong[0]} is "
                                 f"{data[wrong[0]]}, expected {expected}")


def test_runtime_choice_follows_a_size_rule(monkeypatch):
    allreducer = make_allreducer(monkeypatch, CONCORD_ALLREDUCE_ALGORITHM="0-4K:recursive_doubling;4K-:tree")
    assert allreducer.runtime_choice(16, "float32", hvd.Sum) == "recursive_doubling"
    assert allreducer.runtime_choice(4096, "float32", hvd.Sum) == "tree"


def write_table(path, entries, chunk=65536, tree_chunks=3):
    """A cost-model cache file holding `entries` for this job's measured-selection scope
    (algorithms/autotune.h: autotune_scope)."""
    scope = f"ranks={hvd.size()} nodes=1 chunk={chunk} tree_chunks={tree_chunks} timing=pair,cpu"
    path.write_text(json.dumps({"autotune": {scope: entries}}))


def test_runtime_choice_is_rank_0s_measured_choice(monkeypatch, tmp_path):
    cache = tmp_path / "cost_model.json"  # one file per rank: only rank 0's may count
    write_table(cache, {"allreduce/float32/2^12": "tree" if hvd.rank() == 0 else "ring"})
    allreducer = make_allreducer(monkeypatch, CONCORD_COST_MODEL=str(cache), CONCORD_RING_CHUNK_BYTES="65536",
                                 CONCORD_TREE_CHUNKS="3")
    assert allreducer.runtime_choice(1024, "float32", hvd.Sum) == "tree"  # 4096 B: bucket 2^12
    # A bucket the table lacks: the cost model's pick.
    assert allreducer.runtime_choice(16, "float32", hvd.Sum) == allreducer.choose(16, "float32", hvd.Sum)


@pytest.mark.parametrize("entries", [None, {"allreduce/float32/2^12": 1}])
def test_runtime_choice_without_a_usable_table_is_the_cost_models(monkeypatch, tmp_path, entries):
    """No table for this scope, or one whose entries are not names (the runtime ignores it too)."""
    cache = tmp_path / "cost_model.json"
    if entries is None:
        cache.write_text(json.dumps({"autotune": {"another scope": {"allreduce/float32/2^12": "tree"}}}))
    else:
        write_table(cache, entries)
    settings = dict(CONCORD_COST_MODEL=str(cache), CONCORD_RING_CHUNK_BYTES="65536", CONCORD_TREE_CHUNKS="3")
    allreducer = make_allreducer(monkeypatch, **settings)
    assert allreducer.runtime_choice(1024, "float32", hvd.Sum) == allreducer.choose(1024, "float32", hvd.Sum)
    write_table(cache, {"allreduce/float32/2^12": "tree"})
    off = make_allreducer(monkeypatch, CONCORD_AUTOTUNE="0", **settings)
    assert off.runtime_choice(1024, "float32", hvd.Sum) == off.choose(1024, "float32", hvd.Sum)
