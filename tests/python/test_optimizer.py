"""Model and optimizer state across ranks: broadcast_parameters, broadcast_optimizer_state,
broadcast_object, and DistributedOptimizer (gradient averaging, accumulation, unused
parameters, misuse errors, a short training run)."""

import copy

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import concord.torch as hvd
from concord_test_utils import EPS, classification_batch as batch, expect_raises

# ----------------------------------------------------------------------------------------
# models, data and comparisons


def make_mlp(seed, hidden=16):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(6, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, 3))


def make_bn_model(seed):
    """A model with buffers (BatchNorm running statistics and an int64 0-d counter)."""
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.BatchNorm1d(7), torch.nn.ReLU(),
                                torch.nn.Linear(7, 2))
    with torch.no_grad():
        model[1].running_mean.uniform_(-1, 1)
        model[1].running_var.uniform_(0.5, 2)
        model[1].num_batches_tracked.fill_(seed)
    return model


def loss_of(model, x, y):
    return F.cross_entropy(model(x), y)


def named_grads(model):
    """[(name, gradient or zeros when None)] in named_parameters order."""
    return [(name, p.grad if p.grad is not None else torch.zeros_like(p)) for name, p in model.named_parameters()]


def flat(named):
    return torch.cat([t.detach().reshape(-1).to(torch.float32) for _, t in named])


def locate(named, i):
    """Flat index -> 'name[index]' of the named tensors flattened by flat()."""
    for name, tensor in named:
        if i < tensor.numel():
            index = tuple(int(k) for k in np.unravel_index(i, tuple(tensor.shape))) if tensor.dim() else ()
            return f"{name}{list(index)}"
        i -= tensor.numel()
    return f"<flat index past the end: {i}>"


def where(collective, **extra):
    return " ".join([f"rank {hvd.rank()}/{hvd.size()}", collective] + [f"{k}={v}" for k, v in extra.items()])


def assert_flat_close(named, got, expected, tolerance, what):
    """got/expected: flat float tensors over the named tensors; the message names the
    parameter and element of the first difference."""
    got = got.to(torch.float64)
    expected = expected.to(torch.float64)
    tolerance = torch.as_tensor(tolerance, dtype=torch.float64).expand_as(expected)
    bad = torch.nonzero(~((got - expected).abs() <= tolerance)).reshape(-1)
    if bad.numel():
        i = int(bad[0])
        raise AssertionError(f"{what}: {locate(named, i)} (flat element {i}) is {got[i].item()!r}, "
                             f"expected {expected[i].item()!r} (tolerance {tolerance[i].item():g}); "
                             f"{bad.numel()} of {got.numel()} elements differ")


def gather_rows(vector, name):
    """allgather a flat vector: [size, n], row q = rank q's vector."""
    return hvd.allgather(vector.reshape(1, -1).contiguous(), name=name)


def assert_rows_identical(named, rows, what):
    """Every row of an allgathered [size, n] tensor equals this rank's (bitwise)."""
    mine = rows[hvd.rank()]
    for other in range(rows.shape[0]):
        if not torch.equal(rows[other], mine):
            i = int(torch.nonzero(rows[other] != mine)[0, 0])
            raise AssertionError(f"{what}: {locate(named, i)} (flat element {i}) is {mine[i].item()!r} "
                                 f"on rank {hvd.rank()} but {rows[other][i].item()!r} on rank {other}")


def assert_model_identical_across_ranks(model, name, what):
    named = list(model.named_parameters())
    assert_rows_identical(named, gather_rows(flat(named), f"{name}.params"), what)


# ----------------------------------------------------------------------------------------
# broadcast_parameters / broadcast_optimizer_state / broadcast_object


@pytest.mark.parametrize("form", ["state_dict", "named_parameters", "pairs"])
def test_broadcast_parameters(form, tname):
    """Every rank ends with root's parameters (and, for a state_dict, root's buffers;
    otherwise its own buffers)."""
    runs = []
    for root in range(hvd.size()):
        model = make_bn_model(100 + hvd.rank())
        params = {"state_dict": model.state_dict(), "named_parameters": model.named_parameters(),
                  "pairs": list(model.named_parameters())}[form]
        hvd.broadcast_parameters(params, root_rank=root)
        runs.append((root, model))
    for root, model in runs:
        root_model = make_bn_model(100 + root)
        own_model = make_bn_model(100 + hvd.rank())
        parameter_names = {name for name, _ in model.named_parameters()}
        for name, tensor in model.state_dict().items():
            from_root = form == "state_dict" or name in parameter_names
            expected = (root_model if from_root else own_model).state_dict()[name]
            what = where("broadcast_parameters", form=form, root=root, tensor=name, dtype=tensor.dtype,
                         shape=tuple(tensor.shape), expected="root's" if from_root else "own")
            if not torch.equal(tensor, expected):
                i = int(torch.nonzero((tensor != expected).reshape(-1))[0, 0]) if tensor.dim() else 0
                raise AssertionError(f"{what}: element {i} is {tensor.reshape(-1)[i].item()!r}, expected "
                                     f"{expected.reshape(-1)[i].item()!r}")


NOT_PAIRS = {
    "tensors": lambda: [torch.ones(2), torch.ones(3)],
    "two_element_tensors": lambda: [torch.ones(2), torch.ones(2)],  # would unpack as (name, tensor)
    "not_iterable": lambda: 5,
    "unnamed_pairs": lambda: [(0, torch.ones(2))],
}


@pytest.mark.parametrize("case", list(NOT_PAIRS))
def test_broadcast_parameters_rejects_non_pairs(case):
    params = NOT_PAIRS[case]()
    what = where("broadcast_parameters", params=case)
    error = expect_raises(ValueError, what, hvd.broadcast_parameters, params, 0)
    assert "state_dict" in str(error), f"{what}: message {str(error)!r}"


def optimizer_state_vector(optimizer):
    """Every state tensor (in parameter order, keys sorted) and every group's lr, as one flat
    float64 vector; with the matching [(label, tensor)] for messages."""
    named = []
    for g, group in enumerate(optimizer.param_groups):
        named.append((f"param_groups[{g}].lr", torch.tensor([group["lr"]], dtype=torch.float64)))
        for i, p in enumerate(group["params"]):
            for key in sorted(optimizer.state[p]):
                value = optimizer.state[p][key]
                named.append((f"state[param {i}].{key}", torch.as_tensor(value, dtype=torch.float64).reshape(-1)))
    return named, torch.cat([t.to(torch.float64).reshape(-1) for _, t in named])


OPTIMIZERS = {
    "SGD_momentum": lambda params, r: torch.optim.SGD(params, lr=0.05 * (r + 1), momentum=0.9),
    "Adam": lambda params, r: torch.optim.Adam(params, lr=0.001 * (r + 1)),
}


@pytest.mark.parametrize("kind", list(OPTIMIZERS))
def test_broadcast_optimizer_state(kind, tname):
    """After rank-dependent local steps (different data, learning rates and step counts)
    the optimizer states differ; after broadcast_optimizer_state every rank holds root's,
    and one identical step from identical parameters keeps the ranks bit-identical."""
    r, p = hvd.rank(), hvd.size()
    runs = []
    for root in range(p):
        model = make_mlp(7)
        optimizer = OPTIMIZERS[kind](model.parameters(), r)
        for step in range(r + 2):
            optimizer.zero_grad()
            loss_of(model, *batch(r, step)).backward()
            optimizer.step()
        named, before = optimizer_state_vector(optimizer)
        rows_before = gather_rows(before, f"{tname}.root{root}.before")
        hvd.broadcast_optimizer_state(optimizer, root_rank=root)
        named_after, after = optimizer_state_vector(optimizer)
        hvd.broadcast_parameters(model.state_dict(), root_rank=root)
        optimizer.zero_grad()
        loss_of(model, *batch(0, 99)).backward()
        optimizer.step()
        params_rows = gather_rows(flat(list(model.named_parameters())), f"{tname}.root{root}.params")
        runs.append((root, named, rows_before, named_after, after, model, params_rows))
    for root, named, rows_before, named_after, after, model, params_rows in runs:
        what = where("broadcast_optimizer_state", optimizer=kind, root=root, dtype="float32",
                     elements=after.numel())
        if p > 1:
            assert any(not torch.equal(rows_before[q], rows_before[root]) for q in range(p)), \
                f"{what}: the states were already equal before the broadcast (the test would prove nothing)"
        assert [n for n, _ in named_after] == [n for n, _ in named], \
            f"{what}: state entries {[n for n, _ in named_after]} differ from {[n for n, _ in named]}"
        assert_flat_close(named_after, after, rows_before[root], 0, what + " (state vs root's state before)")
        assert after[0].item() == pytest.approx(OPTIMIZERS[kind]([torch.zeros(1)], root).param_groups[0]["lr"]), \
            f"{what}: lr is {after[0].item()}, expected root's"
        assert_rows_identical(list(model.named_parameters()), params_rows, what + " then one identical step")


def test_broadcast_object(tname):
    r = hvd.rank()
    results = []
    for root in range(hvd.size()):
        mine = {"rank": r, "items": list(range(r)), "tensor": torch.arange(r + 1.0), "text": "x" * (1000 * r)}
        results.append((root, mine, hvd.broadcast_object(mine, root_rank=root, name=f"{tname}.root{root}")))
    default_named = [hvd.broadcast_object(("default name", r, k), 0) for k in range(2)]
    for root, mine, result in results:
        what = where("broadcast_object", root=root)
        assert isinstance(result, dict), f"{what}: got {type(result).__name__}"
        expected_text = "x" * (1000 * root)
        assert result["rank"] == root and result["items"] == list(range(root)) and result["text"] == expected_text, \
            f"{what}: got rank={result['rank']} items={result['items']} len(text)={len(result['text'])}"
        assert torch.equal(result["tensor"], torch.arange(root + 1.0)), f"{what}: tensor {result['tensor']}"
        if root == r:
            assert result is mine, f"{what}: the root did not get its own object back"
    for k, result in enumerate(default_named):
        assert result == ("default name", 0, k), where("broadcast_object", call=k, root=0) + f": got {result!r}"


# ----------------------------------------------------------------------------------------
# DistributedOptimizer


def distributed(model, optimizer=None, **kwargs):
    optimizer = optimizer or torch.optim.SGD(model.parameters(), lr=0.1)
    return hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters(), **kwargs)


@pytest.mark.parametrize("names", ["named", "unnamed"])
@pytest.mark.parametrize("kind", ["SGD_momentum", "Adam"])
def test_distributed_optimizer_keeps_ranks_identical(kind, names, tname):
    """Different initial parameters, broadcast from rank 0, then 5 steps on rank-dependent
    data: the parameters stay bit-identical on every rank (and did move)."""
    model = make_mlp(100 + hvd.rank())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    start = flat(list(model.named_parameters())).clone()
    base = OPTIMIZERS[kind](model.parameters(), 0)
    if names == "named":
        optimizer = hvd.DistributedOptimizer(base, named_parameters=model.named_parameters())
    else:
        optimizer = hvd.DistributedOptimizer(base)
    for step in range(5):
        optimizer.zero_grad()
        loss_of(model, *batch(hvd.rank(), step)).backward()
        optimizer.step()
    what = where("DistributedOptimizer.step", optimizer=kind, names=names, steps=5, dtype="float32")
    assert_model_identical_across_ranks(model, tname, what)
    assert isinstance(optimizer, type(base)), f"{what}: {type(optimizer)} is not a {type(base)}"
    assert not torch.equal(flat(list(model.named_parameters())), start), f"{what}: the parameters did not change"


VARIANTS = {
    "Average": dict(op=hvd.Average),
    "Sum": dict(op=hvd.Sum),
    "Average_fp16": dict(op=hvd.Average, compression=hvd.Compression.fp16),
    "Average_predivide4": dict(op=hvd.Average, gradient_predivide_factor=4.0),
}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_distributed_optimizer_gradient_is_reduction_of_rank_gradients(variant, tname):
    """The gradient after synchronize() is the mean (Sum: the sum) of the gradients every
    rank computes locally (gathered separately with allgather), and step() under
    skip_synchronize() applies exactly that gradient."""
    kwargs = VARIANTS[variant]
    model = make_mlp(7)
    local_model = copy.deepcopy(model)
    optimizer = distributed(model, **kwargs)
    x, y = batch(hvd.rank(), 0)
    loss_of(local_model, x, y).backward()
    local = named_grads(local_model)
    rows = gather_rows(flat(local), f"{tname}.local_grads").to(torch.float64)

    optimizer.zero_grad()
    loss_of(model, x, y).backward()
    optimizer.synchronize()
    named = named_grads(model)
    got = flat(named)
    before = flat(list(model.named_parameters())).clone()
    with optimizer.skip_synchronize():
        optimizer.step()
    after = flat(list(model.named_parameters()))
    assert_model_identical_across_ranks(model, tname, where("DistributedOptimizer.step", variant=variant))

    p = hvd.size()
    scale = 1.0 if kwargs["op"] == hvd.Sum else 1.0 / p
    expected = rows.sum(0) * scale
    eps = EPS[torch.float16] if "compression" in kwargs else EPS[torch.float32]
    tolerance = eps * (p + 3) * rows.abs().sum(0) * scale + 1e-30
    what = where("DistributedOptimizer allreduce of gradients", variant=variant, dtype="float32",
                 elements=got.numel())
    if p > 1:
        assert not torch.equal(rows[0], rows[1]), f"{what}: ranks 0 and 1 have equal local gradients"
    assert_flat_close(named, got, expected, tolerance, what)
    if "compression" in kwargs:  # the gradients travelled as float16
        assert_flat_close(named, got, got.to(torch.float16).to(torch.float32), 0,
                          what + ": gradient not float16-representable (compression not applied?)")
    assert_flat_close(named, after, before - 0.1 * got, EPS[torch.float32] * 4 * (before.abs() + 0.1 * got.abs()),
                      where("DistributedOptimizer.step (SGD lr=0.1) with the reduced gradient", variant=variant))


def test_distributed_optimizer_backward_passes_per_step(tname):
    """backward_passes_per_step=2: the first backward pass leaves the local gradient alone
    (no allreduce started), the second starts one allreduce of the accumulated gradient."""
    model = make_mlp(7)
    local_model = copy.deepcopy(model)
    optimizer = distributed(model, backward_passes_per_step=2)
    batches = [batch(hvd.rank(), 0), batch(hvd.rank(), 1)]
    loss_of(local_model, *batches[0]).backward()
    first_local = flat(named_grads(local_model)).clone()
    loss_of(local_model, *batches[1]).backward()
    rows = gather_rows(flat(named_grads(local_model)), f"{tname}.local_grads").to(torch.float64)

    optimizer.zero_grad()
    loss_of(model, *batches[0]).backward()
    # Every rank submitted any allreduce the first pass started before this one, so once it
    # is done here those would be done too and would have overwritten the gradients.
    hvd.allreduce(torch.zeros(1), name=f"{tname}.fence")
    after_first = flat(named_grads(model)).clone()
    loss_of(model, *batches[1]).backward()
    optimizer.step()
    named = named_grads(model)
    got = flat(named)

    assert_flat_close(named, after_first, first_local, 0,
                      where("DistributedOptimizer(backward_passes_per_step=2) after pass 1 (must stay local)",
                            dtype="float32"))
    p = hvd.size()
    expected = rows.sum(0) / p
    assert_flat_close(named, got, expected, EPS[torch.float32] * (p + 3) * rows.abs().sum(0) / p + 1e-30,
                      where("DistributedOptimizer(backward_passes_per_step=2) allreduce after pass 2 "
                            "(mean over ranks of the 2-pass sums)", dtype="float32"))


def test_distributed_optimizer_too_many_backward_passes(tname):
    """A second backward pass before step() (backward_passes_per_step=1) raises
    AssertionError; step() afterwards still completes the first pass's allreduces."""
    model = make_mlp(7)
    optimizer = distributed(model)
    optimizer.zero_grad()
    loss_of(model, *batch(hvd.rank(), 0)).backward()
    error = expect_raises(AssertionError, where("second loss.backward() before step()"),
                          lambda: loss_of(model, *batch(hvd.rank(), 1)).backward())
    optimizer.step()
    assert "backward_passes_per_step" in str(error), where("DistributedOptimizer") + f": message {str(error)!r}"
    assert_model_identical_across_ranks(model, tname, where("DistributedOptimizer.step after the error"))


class WithUnused(torch.nn.Module):
    """fc1 -> tanh -> fc2; `unused` never takes part; `odd_only` is used on odd ranks only."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(7)
        self.fc1 = torch.nn.Linear(6, 8)
        self.fc2 = torch.nn.Linear(8, 3)
        self.unused = torch.nn.Linear(4, 4)
        self.odd_only = torch.nn.Linear(8, 8)

    def forward(self, x):
        h = torch.tanh(self.fc1(x))
        if hvd.rank() % 2 == 1:
            h = h + self.odd_only(h)
        return self.fc2(h)


def test_distributed_optimizer_unused_parameters(tname):
    """A layer no rank uses and a layer only odd ranks use: step() does not wait for
    gradients that never come; their reduced gradient is the mean with zeros from the
    ranks that did not use them; the never-used layer does not move."""
    model = WithUnused()
    local_model = copy.deepcopy(model)
    unused_before = model.unused.weight.detach().clone()
    optimizer = distributed(model)
    x, y = batch(hvd.rank(), 0)
    loss_of(local_model, x, y).backward()
    rows = gather_rows(flat(named_grads(local_model)), f"{tname}.local_grads").to(torch.float64)
    optimizer.zero_grad()
    loss_of(model, x, y).backward()
    optimizer.step()
    named = named_grads(model)
    got = flat(named)
    assert_model_identical_across_ranks(model, tname, where("DistributedOptimizer.step with unused parameters"))

    p = hvd.size()
    assert_flat_close(named, got, rows.sum(0) / p, EPS[torch.float32] * (p + 3) * rows.abs().sum(0) / p + 1e-30,
                      where("DistributedOptimizer allreduce with unused parameters (mean with zeros)",
                            dtype="float32"))
    assert torch.equal(model.unused.weight.detach(), unused_before), \
        where("DistributedOptimizer.step") + ": the never-used layer 'unused' moved"


def test_distributed_optimizer_duplicate_and_missing_names():
    model = make_mlp(7)
    params = list(model.parameters())
    what = where("DistributedOptimizer(named_parameters=...)")
    error = expect_raises(ValueError, what + " duplicate names", hvd.DistributedOptimizer,
                          torch.optim.SGD(params, lr=0.1),
                          named_parameters=[("w", params[0]), ("w", params[1]), ("b", params[2]), ("c", params[3])])
    assert "'w'" in str(error) and "unique" in str(error), f"{what}: message {str(error)!r}"
    error = expect_raises(ValueError, what + " missing names", hvd.DistributedOptimizer,
                          torch.optim.SGD(params, lr=0.1), named_parameters=[("w", params[0])])
    assert "missing" in str(error), f"{what}: message {str(error)!r}"
    expect_raises(ValueError, what + " op=Max", hvd.DistributedOptimizer, torch.optim.SGD(params, lr=0.1),
                  op=hvd.Max)
    expect_raises(ValueError, what + " backward_passes_per_step=0", hvd.DistributedOptimizer,
                  torch.optim.SGD(params, lr=0.1), backward_passes_per_step=0)


def test_distributed_optimizer_zero_grad_before_step(tname):
    """zero_grad() between backward() and step() raises AssertionError (the allreduces are
    in flight); step() then applies the reduced gradients as usual."""
    model = make_mlp(7)
    local_model = copy.deepcopy(model)
    optimizer = distributed(model)
    x, y = batch(hvd.rank(), 0)
    loss_of(local_model, x, y).backward()
    rows = gather_rows(flat(named_grads(local_model)), f"{tname}.local_grads").to(torch.float64)
    optimizer.zero_grad()
    loss_of(model, x, y).backward()
    error = expect_raises(AssertionError, where("DistributedOptimizer.zero_grad() after backward()"),
                          optimizer.zero_grad)
    optimizer.step()
    named = named_grads(model)
    got = flat(named)
    assert "zero_grad" in str(error), where("DistributedOptimizer.zero_grad") + f": message {str(error)!r}"
    p = hvd.size()
    assert_flat_close(named, got, rows.sum(0) / p, EPS[torch.float32] * (p + 3) * rows.abs().sum(0) / p + 1e-30,
                      where("DistributedOptimizer allreduce after the refused zero_grad()", dtype="float32"))


def test_training_reduces_loss(tname):
    """A tiny MLP on synthetic, linearly separable 2-class data, each rank training on its
    own shard for 30 steps: the loss on the whole data set falls on every rank, accuracy
    ends high, and the models are bit-identical."""
    generator = torch.Generator().manual_seed(2024)
    features = torch.randn(512, 6, generator=generator)
    labels = (features @ torch.tensor([1.0, -2.0, 0.5, 0.0, 1.5, -1.0]) > 0).long()
    shard_x, shard_y = features[hvd.rank()::hvd.size()], labels[hvd.rank()::hvd.size()]
    torch.manual_seed(100 + hvd.rank())
    model = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    optimizer = distributed(model, torch.optim.SGD(model.parameters(), lr=0.2, momentum=0.9))
    with torch.no_grad():
        initial = loss_of(model, features, labels).item()
    for step in range(30):
        rows = torch.arange(step * 16, step * 16 + 16) % shard_x.shape[0]
        optimizer.zero_grad()
        loss_of(model, shard_x[rows], shard_y[rows]).backward()
        optimizer.step()
    with torch.no_grad():
        final = loss_of(model, features, labels).item()
        accuracy = (model(features).argmax(1) == labels).double().mean().item()
    assert_model_identical_across_ranks(model, tname, where("training with DistributedOptimizer", steps=30))
    what = where("training with DistributedOptimizer (SGD momentum, Average)", steps=30, dtype="float32")
    assert final < 0.5 * initial, f"{what}: loss {initial:.4f} -> {final:.4f}, expected below half"
    assert accuracy >= 0.9, f"{what}: accuracy {accuracy:.3f} on the training set, expected >= 0.9"
