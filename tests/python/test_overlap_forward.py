"""DistributedOptimizer(overlap_forward=True) (concord/torch/overlap.py): the parameters are
bit-identical to the plain DistributedOptimizer's over several steps (SGD with momentum and
weight decay, Adam, an LR scheduler, grouped allreduces, gradient accumulation, an unused
module); updates really wait for the next forward (module by module); zero_grad() is
deferred for pending parameters; finish(); misuse errors."""

import os

import pytest
import torch
import torch.nn.functional as F

import concord.torch as hvd
from concord_test_utils import classification_batch as batch, expect_raises, read_timeline, shared_temp_path

STEPS = 4


class Net(torch.nn.Module):
    """An MLP of Linear layers with rank-independent initial weights, and a branch that
    forward never uses (its parameters get zero gradients)."""

    def __init__(self, seed, widths=(6, 24, 16, 16, 3)):
        super().__init__()
        torch.manual_seed(seed)
        self.layers = torch.nn.ModuleList(torch.nn.Linear(a, b) for a, b in zip(widths[:-1], widths[1:]))
        self.unused = torch.nn.Linear(4, 4)

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i + 1 < len(self.layers):
                x = torch.tanh(x)
        return x


def named(model, prefix):
    return [(f"{prefix}.{name}", p) for name, p in model.named_parameters()]


OPTIMIZERS = {
    "sgd_momentum_wd": lambda params: torch.optim.SGD(params, lr=0.05, momentum=0.9, weight_decay=1e-3),
    "sgd_nesterov": lambda params: torch.optim.SGD(params, lr=0.02, momentum=0.8, nesterov=True),
    "adam": lambda params: torch.optim.Adam(params, lr=1e-2, weight_decay=1e-4),
}


def train(kind, overlap, prefix, scheduler=False, num_groups=0, zero_to_none=False, passes=1, queuing=True,
          credit=32 << 20):
    """STEPS steps of Net on rank-dependent data, each of ``passes`` accumulated backward
    passes; returns the model (after finish()) and the optimizer."""
    model = Net(11)
    optimizer = hvd.DistributedOptimizer(OPTIMIZERS[kind](model.parameters()), named_parameters=named(model, prefix),
                                         num_groups=num_groups, backward_passes_per_step=passes,
                                         overlap_forward=overlap, model=model if overlap else None,
                                         gradient_queuing=queuing, credit_bytes=credit)
    lr_schedule = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5) if scheduler else None
    for step in range(STEPS):
        optimizer.zero_grad(set_to_none=zero_to_none)
        for k in range(passes):
            x, y = batch(hvd.rank(), step * passes + k)
            F.cross_entropy(model(x), y).backward()
        optimizer.step()
        if lr_schedule is not None:
            lr_schedule.step()
    if overlap:
        optimizer.finish()
    return model, optimizer


# Bit-identical results need the same summation order for every gradient in both runs, i.e.
# one algorithm whose order does not depend on a tensor's place in the fusion buffer, for
# every fused size. With measured selection (the default) the two runs' fused sizes can fall
# in size buckets with different measured winners, so there they agree to rounding only;
# ctest's python.overlap_forward.np{2,4} pin CONCORD_ALLREDUCE_ALGORITHM=recursive_doubling.
EXACT = os.environ.get("CONCORD_ALLREDUCE_ALGORITHM") == "recursive_doubling"


def same(p, q):
    return torch.equal(p, q) if EXACT else torch.allclose(p, q, rtol=1e-5, atol=1e-7)


def first_difference(a, b):
    for (name, p), (_, q) in zip(a.named_parameters(), b.named_parameters()):
        if not same(p, q):
            i = int(torch.nonzero((p != q).reshape(-1))[0, 0])
            return f"{name}[flat {i}] is {p.reshape(-1)[i].item()!r}, plain {q.reshape(-1)[i].item()!r}"
    return None


CASES = {
    "sgd_momentum_wd": dict(kind="sgd_momentum_wd"),
    "sgd_nesterov_set_to_none": dict(kind="sgd_nesterov", zero_to_none=True),
    "adam": dict(kind="adam"),
    "adam_steplr": dict(kind="adam", scheduler=True),
    "sgd_grouped": dict(kind="sgd_momentum_wd", num_groups=3),
    "sgd_accumulate2": dict(kind="sgd_momentum_wd", passes=2),
    "sgd_priority_credit1": dict(kind="sgd_momentum_wd", queuing="priority", credit=1),
    "adam_priority_accumulate2": dict(kind="adam", queuing="priority", credit=1, passes=2),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bit_identical_to_plain(case, tname):
    """Bit-identical with a pinned algorithm (EXACT), else equal to rounding."""
    plain, plain_optimizer = train(prefix=f"{tname}.plain", overlap=False, **CASES[case])
    overlapped, optimizer = train(prefix=f"{tname}.overlap", overlap=True, **CASES[case])
    initial = Net(11)
    what = f"rank {hvd.rank()}/{hvd.size()} overlap_forward {case} steps={STEPS}"
    assert first_difference(plain, initial) is not None, f"{what}: training changed nothing"
    if CASES[case]["kind"] == "sgd_momentum_wd":
        assert not torch.equal(plain.unused.weight, initial.unused.weight), \
            f"{what}: weight decay should move the unused layer (else the test proves nothing there)"
    difference = first_difference(overlapped, plain)
    assert difference is None, f"{what}: {difference}"
    for (name, p), q in zip(plain.named_parameters(), overlapped.parameters()):
        mine, theirs = optimizer.state[q], plain_optimizer.state[p]
        assert sorted(mine) == sorted(theirs), f"{what}: optimizer state keys of {name}: {sorted(mine)}"
        for key in theirs:
            assert same(torch.as_tensor(mine[key]), torch.as_tensor(theirs[key])), \
                f"{what}: optimizer state {key!r} of {name}" + ("" if EXACT else " (to rounding)")


def test_updates_wait_for_the_module_forward(tname):
    """After step() nothing has moved; in the next forward each layer is updated just
    before it runs (the later layers are still old when the first one runs)."""
    model = Net(5)
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                         named_parameters=named(model, tname), overlap_forward=True, model=model)
    x, y = batch(hvd.rank(), 0)
    F.cross_entropy(model(x), y).backward()
    before = [p.detach().clone() for p in model.parameters()]
    optimizer.step()
    after_step = [torch.equal(p, b) for p, b in zip(model.parameters(), before)]
    seen = []
    last = model.layers[-1]
    hook = model.layers[0].register_forward_hook(
        lambda *_: seen.append((torch.equal(model.layers[0].weight, before[0]), torch.equal(last.weight, before[6]))))
    model(x)
    hook.remove()
    moved_after_forward = [not torch.equal(p, b) for p, b in zip(model.layers.parameters(), before)]
    unused_moved = not torch.equal(model.unused.weight, before[-2])
    optimizer.finish()
    unused_after_finish = torch.equal(model.unused.weight, before[-2])  # zero gradient, no decay: unchanged
    what = f"rank {hvd.rank()}/{hvd.size()} overlap_forward SGD"
    assert all(after_step), f"{what}: step() changed parameters {after_step}"
    assert seen == [(False, True)], f"{what}: while layer 0 ran (layer 0 old?, last layer old?) = {seen}"
    assert all(moved_after_forward), f"{what}: after the forward, moved = {moved_after_forward}"
    assert not unused_moved and unused_after_finish, f"{what}: the unused layer"
    assert not optimizer._overlap_pending, f"{what}: updates still pending after finish()"


@pytest.mark.parametrize("set_to_none", [False, True])
def test_zero_grad_is_deferred_for_pending_parameters(set_to_none, tname):
    model = Net(3)
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                         named_parameters=named(model, f"{tname}"), overlap_forward=True, model=model)
    x, y = batch(hvd.rank(), 1)
    F.cross_entropy(model(x), y).backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=set_to_none)
    kept = all(p.grad is not None for p in model.layers.parameters())
    model(x)
    cleared = [p.grad is None if set_to_none else bool((p.grad == 0).all()) for p in model.layers.parameters()]
    unused_kept = model.unused.weight.grad is not None  # pending until finish()
    optimizer.finish()
    unused_cleared = model.unused.weight.grad is None if set_to_none else bool((model.unused.weight.grad == 0).all())
    what = f"rank {hvd.rank()}/{hvd.size()} overlap_forward zero_grad(set_to_none={set_to_none})"
    assert kept, f"{what}: a pending gradient was cleared before its update"
    assert all(cleared), f"{what}: after the forward, cleared = {cleared}"
    assert unused_kept and unused_cleared, f"{what}: the unused layer's gradient"


def test_errors(tname):
    model = Net(1)
    what = f"rank {hvd.rank()}/{hvd.size()} overlap_forward"
    expect_raises(ValueError, what + " without model", hvd.DistributedOptimizer,
                  torch.optim.SGD(model.parameters(), lr=0.1), overlap_forward=True)
    expect_raises(TypeError, what + " model=list", hvd.DistributedOptimizer,
                  torch.optim.SGD(model.parameters(), lr=0.1), overlap_forward=True, model=[model])
    error = expect_raises(ValueError, what + " gradient_queuing='credit'", hvd.DistributedOptimizer,
                          torch.optim.SGD(model.parameters(), lr=0.1), overlap_forward=True, model=model,
                          gradient_queuing="credit")
    assert "'priority'" in str(error), f"{what}: message {str(error)!r}"
    for credit in (0, True, 2.5):
        expect_raises(ValueError, what + f" credit_bytes={credit!r}", hvd.DistributedOptimizer,
                      torch.optim.SGD(model.parameters(), lr=0.1), overlap_forward=True, model=model,
                      gradient_queuing="priority", credit_bytes=credit)
    expect_raises(ValueError, what + " gradient_queuing=1", hvd.DistributedOptimizer,
                  torch.optim.SGD(model.parameters(), lr=0.1), overlap_forward=True, model=model,
                  gradient_queuing=1)
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                         named_parameters=named(model, tname), overlap_forward=True, model=model)
    x, y = batch(hvd.rank(), 2)
    F.cross_entropy(model(x), y).backward()
    expect_raises(ValueError, what + " step(closure)", optimizer.step, lambda: 0.0)
    optimizer.step()
    # Layer 1's weight used before layer 1 runs (while pending): backward must refuse.
    hidden = torch.tanh(model.layers[0](x)) @ model.layers[1].weight.t()
    error = expect_raises(RuntimeError, what + " parameter used before its module", hidden.sum().backward)
    optimizer.finish()
    assert "finish()" in str(error), f"{what}: message {str(error)!r}"


def _last_event_index(events, track):
    """Index in the timeline of the last event on ``track`` (the tensor's end: its copy out
    of the fusion buffer or its algorithm's end)."""
    tids = {e["tid"] for e in events if e["ph"] == "M" and e["args"]["name"] == track}
    indices = [i for i, e in enumerate(events) if e.get("tid") in tids and e["ph"] != "M"]
    assert indices, f"no timeline events for {track}"
    return indices[-1]


# The last Linear of Net(9) (16 -> 3): its weight and bias gradients, in bytes.
LAST_LAYER_BYTES = (16 * 3 + 3) * 4


@pytest.mark.parametrize("finished,credit", [(False, 1), (True, 1), (False, LAST_LAYER_BYTES)])
def test_priority_queuing_starts_queued_gradients_first_layer_first(finished, credit, tname, monkeypatch):
    """gradient_queuing="priority": while the started allreduces are unfinished (poll
    mocked to False) only backward's first gradients start before step(), as many as fit
    in the credit (one with a credit of one byte; the last layer's two with a credit of
    exactly their bytes), and step() starts the others in forward order; when every
    allreduce finishes at once (poll mocked to True) each starts as backward produces it
    (backward order)."""
    from concord.torch import overlap
    model = Net(9)
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                         named_parameters=named(model, f"{tname}.{finished}.{credit}"),
                                         overlap_forward=True, model=model, gradient_queuing="priority",
                                         credit_bytes=credit)
    names = {p: name for name, p in model.named_parameters()}
    started = []
    original = optimizer._allreduce_grad_async

    def record(p):
        started.append((names[p], in_step[0]))
        return original(p)

    in_step = [False]
    monkeypatch.setattr(optimizer, "_allreduce_grad_async", record)
    monkeypatch.setattr(overlap, "poll", lambda handle: finished)
    for step in range(2):
        started.clear()
        optimizer.zero_grad()
        x, y = batch(hvd.rank(), step)
        F.cross_entropy(model(x), y).backward()
        in_step[0] = True
        optimizer.step()
        in_step[0] = False
    optimizer.finish()
    forward = [name for name, _ in model.named_parameters() if not name.startswith("unused")]
    what = f"rank {hvd.rank()}/{hvd.size()} finished={finished} credit={credit}: started {started}"
    before = [name for name, during_step in started if not during_step]
    if finished:
        assert sorted(before) == sorted(forward), what
        assert before.index("layers.3.weight") < before.index("layers.0.weight"), what
    else:
        eager = 1 if credit == 1 else 2
        assert len(before) == eager and all(name.startswith("layers.3.") for name in before), what
        queued = [name for name, during_step in started if during_step and not name.startswith("unused")]
        assert queued == [name for name in forward if name not in before], what


@pytest.mark.parametrize("queuing", [True, False])
def test_gradient_queuing_makes_the_first_layer_final_first(queuing, tname):
    """C-Cube's gradient queuing, checked with the timeline: with
    gradient_queuing the first layer's gradient (needed first by the next forward) is
    reduced and copied out before the last layer's; without it (backward order) after."""
    model = Net(9, widths=(6, 64, 64, 64, 3))
    prefix = f"{tname}.{queuing}"
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                         named_parameters=named(model, prefix), overlap_forward=True, model=model,
                                         gradient_queuing=queuing)
    path = shared_temp_path("concord_queuing", prefix)
    for step in range(3):
        if step == 2:
            hvd.start_timeline(path)
        optimizer.zero_grad()
        x, y = batch(hvd.rank(), step)
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
    optimizer.finish()
    hvd.stop_timeline()
    if hvd.rank() != 0:
        return
    events = read_timeline(path)
    first = _last_event_index(events, f"allreduce.{prefix}.layers.0.weight")
    last = _last_event_index(events, f"allreduce.{prefix}.layers.3.weight")
    what = f"rank 0/{hvd.size()} gradient_queuing={queuing}: first layer ends at event {first}, last at {last}"
    assert (first < last) == queuing, what
