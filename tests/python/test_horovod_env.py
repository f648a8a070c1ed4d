"""A Horovod job's environment, end to end: the python.horovod_env.npN tests (1 to 4 ranks)
run this file with only HOROVOD_* settings (tests/python/CMakeLists.txt), and, at odd
rank counts, with ``hvd.init(process_sets="dynamic")`` instead of
HOROVOD_DYNAMIC_PROCESS_SETS=1 (conftest.py reads CONCORD_TEST_INIT_PROCESS_SETS). Checked:
concord-info reports each value as set by its HOROVOD_* name (horovod/common/operations.cc
and utils/env_parser.cc read them), the ignored ones are listed, add_process_set() works,
HOROVOD_TIMELINE=DYNAMIC writes no timeline at init while start_timeline()/stop_timeline()
write one, and the autograd functions follow Horovod's backward rules inside a process set
(horovod_reference.py). Without that environment (python.npN) the file is skipped."""

import json
import os
import tempfile

import pytest
import torch

import concord.torch as hvd
import horovod_reference as horovod
from concord import _core

pytestmark = pytest.mark.skipif(os.environ.get("HOROVOD_TIMELINE") != "DYNAMIC",
                                reason="needs the Horovod environment of python.horovod_env.npN")

# What python.horovod_env.npN sets, and the CONCORD_* row each one sets.
_ALIASES = {
    "HOROVOD_CYCLE_TIME": ("CONCORD_CYCLE_TIME", "2"),
    "HOROVOD_FUSION_THRESHOLD": ("CONCORD_FUSION_THRESHOLD", "1048576"),
    "HOROVOD_CACHE_CAPACITY": ("CONCORD_CACHE_CAPACITY", "64"),
    "HOROVOD_TIMELINE": ("CONCORD_TIMELINE", "DYNAMIC"),
    "HOROVOD_STALL_CHECK_DISABLE": ("CONCORD_STALL_CHECK_DISABLE", "1"),
    "HOROVOD_STALL_CHECK_TIME_SECONDS": ("CONCORD_STALL_WARNING_TIME", "30"),
    "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS": ("CONCORD_STALL_SHUTDOWN_TIME", "0"),
    "HOROVOD_LOG_LEVEL": ("CONCORD_LOG_LEVEL", "WARNING"),
    "HOROVOD_AUTOTUNE": ("CONCORD_AUTOTUNE", "0"),
    "HOROVOD_HIERARCHICAL_ALLREDUCE": ("CONCORD_ALLREDUCE_ALGORITHM", "0"),
}


def test_concord_info_names_the_horovod_variable_of_each_value(rank):
    settings = {s["name"]: s for s in json.loads(_core.build_info_json())["settings"]}
    for horovod_name, (row, value) in _ALIASES.items():
        assert settings[row]["source"] == horovod_name and settings[row]["value"] == value, (
            f"rank {rank}: {row} = {settings[row]['value']!r} from {settings[row]['source']}, "
            f"expected {value!r} from {horovod_name}")
    for ignored in ("HOROVOD_TIMELINE_MARK_CYCLES", "HOROVOD_DISABLE_GROUP_FUSION"):
        assert settings[ignored]["type"] == "ignored" and settings[ignored]["value"] == "1", (
            f"rank {rank}: {ignored}: {settings[ignored]}")
    text = _core.build_info_text()
    assert "set by HOROVOD_CYCLE_TIME" in text, f"rank {rank}: concord-info text:\n{text}"


def test_timeline_dynamic_starts_none_at_init_and_start_timeline_writes_one(rank, tname):
    assert not os.path.exists("DYNAMIC"), f"rank {rank}: HOROVOD_TIMELINE=DYNAMIC was taken as a file name"
    path = os.path.join(tempfile.gettempdir(), f"concord_horovod_timeline_{os.getppid()}.json")
    hvd.start_timeline(path, mark_cycles=True)
    hvd.allreduce(torch.ones(4), name=f"{tname}.traced")
    hvd.stop_timeline()
    hvd.barrier()
    if rank == 0:
        with open(path) as handle:
            events = json.load(handle)
        os.remove(path)
        assert any(f"{tname}.traced" in json.dumps(event) for event in events), f"rank 0: {len(events)} events"


def _set_ranks(size):
    """Every other rank counting down from the last: [0], [1], [0, 2], [1, 3]."""
    return sorted(range(size - 1, -1, -2))


def test_add_process_set_and_horovods_gradients_inside_it(rank, size, tname):
    """add_process_set() needs dynamic process sets (HOROVOD_DYNAMIC_PROCESS_SETS=1 or
    init(process_sets="dynamic")); in the set, allgather's, broadcast's and
    reducescatter's backward passes are Horovod's, with the set's size and set ranks. On
    one rank the only set is the global one: adding it again is refused as existing (a
    check the runtime makes only once dynamic process sets are enabled)."""
    ranks = _set_ranks(size)
    if ranks == list(range(size)):
        with pytest.raises(hvd.InvalidArgumentError, match="already exists"):
            hvd.add_process_set(ranks)
        process_set = hvd.global_process_set
    else:
        process_set = hvd.add_process_set(ranks)
    try:
        if rank not in ranks:
            return
        n, me = len(ranks), ranks.index(rank)
        g = [torch.arange(6, dtype=torch.float64).reshape(6, 1) * (q + 1) for q in range(n)]  # set rank q's weight
        rows = [q + 1 for q in range(n)]
        x = torch.ones(rows[me], 1, dtype=torch.float64, requires_grad=True)
        y = hvd.allgather(x, name=f"{tname}.ag", process_set=process_set)
        (g[me][:y.shape[0]] * y).sum().backward()
        gathered = [t[:sum(rows)] for t in g]
        expected = horovod.allgather_backward(gathered, rows)[me]
        assert torch.allclose(x.grad, expected), f"rank {rank} (set rank {me}): allgather gradient {x.grad.tolist()}"

        b = torch.full((3,), float(rank), requires_grad=True)
        (hvd.broadcast(b, ranks[-1], name=f"{tname}.bc", process_set=process_set) * (me + 1)).sum().backward()
        expected = horovod.broadcast_backward([torch.full((3,), float(q + 1)) for q in range(n)], n - 1)[me]
        assert torch.allclose(b.grad, expected), f"rank {rank}: broadcast gradient {b.grad.tolist()}"

        s = torch.ones(2 * n, 2, requires_grad=True)
        out = hvd.reducescatter(s, name=f"{tname}.rs", op=hvd.Sum, process_set=process_set, postscale_factor=0.5)
        (out * (me + 1)).sum().backward()
        expected = horovod.reducescatter_backward([torch.full((2, 2), float(q + 1)) for q in range(n)], "Sum",
                                                  post=0.5)[me]
        assert torch.allclose(s.grad, expected), f"rank {rank}: reducescatter gradient {s.grad.tolist()}"
    finally:
        if process_set is not hvd.global_process_set:
            hvd.remove_process_set(process_set)
