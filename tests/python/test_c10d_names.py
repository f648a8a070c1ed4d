"""concord.torch.c10d_names.CallNames on its own, with stand-in runtime handles: several
"ranks" (one CallNames each) name the same calls alike, a failed call restarts the names
alike however late each rank sees it, a name's previous use is waited for, and the names a
group uses stay bounded for calls of ever new shapes.
"""

import pytest
import torch

from concord.torch import c10d_names
from concord.torch.c10d_names import CONTEXTS, WINDOW, CallNames


class FakeHandle:
    """A runtime handle whose outcome the test sets: ``done``, ``error``."""

    def __init__(self):
        self.done, self.error, self.waited = False, None, []

    def poll(self):
        return self.done

    def wait_for(self, seconds):
        self.waited.append(seconds)
        if self.done and self.error is not None:
            raise self.error
        return self.done


def _signature(numel, kind="allreduce"):
    return (kind, torch.float32, torch.Size([numel]), "SUM")


def _submit(names, signature):
    """Names one call on ``names`` and submits it; returns its name and handle."""
    with names.named(signature, "allreduce") as call:
        call.handle = FakeHandle()
    return call.name, call.handle


def test_names_repeat_per_context_and_window():
    names = CallNames("g", 1.0)
    loop = [_signature(1), _signature(2), _signature(2), _signature(3)]  # a context followed by 2 calls in turn
    taken = []
    for _ in range(3 * WINDOW):
        for signature in loop:
            name, handle = _submit(names, signature)
            handle.done = True
            taken.append(name)
    per_iteration = len(loop)
    steady = taken[WINDOW * per_iteration:]
    for i in range(len(steady) - WINDOW * per_iteration):
        assert steady[i] == steady[i + WINDOW * per_iteration], f"call {i}: {steady[i]} not reused a window later"
    assert len(set(taken)) == WINDOW * len(set(loop)) + 1, f"names used: {sorted(set(taken))}"
    assert taken[0] == "c10d.g.after.start.0" and taken[1] == "c10d.g.after.allreduce.float32.1.SUM.0", taken[:2]


@pytest.mark.parametrize("late_by", [0, 1, 3])
def test_a_failure_restarts_the_names_alike(late_by):
    """Rank a calls another shape at call 5 (a mismatch: call 5 fails on both). Rank b sees
    the failure before its next call; rank a only ``late_by`` calls later. From the call
    after rank a saw it, both name every call alike again."""
    ranks = {"a": CallNames("g", 1.0), "b": CallNames("g", 1.0)}
    calls = [_signature(4)] * 5 + [None] + [_signature(n % 3 + 1) for n in range(12)]
    names = {rank: [] for rank in ranks}
    for rank, namer in ranks.items():
        seen_after = 0 if rank == "b" else late_by
        for position, signature in enumerate(calls):
            name, handle = _submit(namer, signature or _signature(5 if rank == "a" else 4))
            names[rank].append(name)
            if position == 5:
                failed = handle  # in flight until the rank sees its failure
            else:
                handle.done = True
            if position == 5 + seen_after:
                failed.done, failed.error = True, RuntimeError("mismatch")
    first_agreed = 5 + late_by + 1
    assert names["a"][:6] == names["b"][:6], (names["a"][:6], names["b"][:6])
    assert names["a"][first_agreed:] == names["b"][first_agreed:], \
        f"late_by={late_by}: a {names['a'][first_agreed:]} b {names['b'][first_agreed:]}"
    assert names["b"][6].startswith("c10d.g.r6."), names["b"][6]


def test_a_call_waits_for_its_names_previous_use():
    names = CallNames("g", 0.05)
    handles = [_submit(names, _signature(1))[1] for _ in range(WINDOW + 1)]
    assert handles[1].waited == [], "a call waited for a name nobody used"
    with pytest.raises(RuntimeError, match="whose previous use has not finished within 0.05 s"):
        _submit(names, _signature(1))  # takes the name of handles[1], still in flight
    assert handles[1].waited == [0.05], handles[1].waited
    handles[1].done = True
    name, _ = _submit(names, _signature(1))  # the failed attempt left the names as they were
    assert name == "c10d.g.after.allreduce.float32.1.SUM.0", name


def test_names_stay_bounded_for_new_shapes():
    """Calls of ever new shapes after a fixed one (all_gather_object's size exchange, then
    its bytes) take names of the fixed context only, and the group's memory of contexts
    and names stays bounded."""
    names = CallNames("g", 1.0)
    taken = set()
    for numel in range(3 * CONTEXTS):
        name, handle = _submit(names, _signature(numel + 1, "allgather"))
        handle.done = True
        _, handle = _submit(names, _signature(1))  # the size exchange before each object's bytes
        handle.done = True
        taken.add(name)
    assert len(taken) <= 2 * WINDOW, f"{len(taken)} names for {3 * CONTEXTS} shapes"
    assert len(names._uses) <= CONTEXTS and len(names._latest) <= 2 * CONTEXTS * WINDOW + 1
    assert c10d_names.label(_signature(7)) == "allreduce.float32.7.SUM"
