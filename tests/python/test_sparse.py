"""SparseDistributedOptimizer and SparseAllreducer (Ok-Topk sparse allreduce with residuals;
Li & Hoefler, PPoPP 2022; docs/algorithms.md).

The exact-mode tests use gradients that are multiples of 2^-8 (or small integers) of
moderate size, so every sum is exact in float32 and the one division by P rounds the same
on both sides: the reference, computed in numpy from the allgathered gradients of every
rank, must then match bit for bit whatever order the implementation sums in.
"""

import numpy as np
import pytest
import torch

import concord.torch as hvd
from concord import _core
from concord_test_utils import assert_same_on_all_ranks, expect_raises


# --------------------------------------------------------------------------------------
# a model whose gradients are chosen by the test

class _Dyadic(torch.nn.Module):
    """Parameters of several shapes and both float dtypes; loss(c) = sum_p <p, c_p>, so the
    gradient of p is exactly c_p."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(3, 5)
        self.vector = torch.nn.Parameter(torch.zeros(7))
        self.matrix = torch.nn.Parameter(torch.zeros(2, 2, dtype=torch.float64))
        with torch.no_grad():
            for i, p in enumerate(self.parameters()):
                p.copy_(torch.arange(p.numel(), dtype=p.dtype).reshape(p.shape) / 4.0 - i)

    def loss(self, coefficients):
        return sum((p * c.to(p.dtype)).sum() for p, c in zip(self.parameters(), coefficients))


def _coefficients(model, rank, step, seed):
    """Rank's gradients at `step`: multiples of 2^-8 in [-4, 4) (float32-exact, sums exact)."""
    rng = np.random.default_rng([seed, rank, step])
    return [torch.from_numpy(rng.integers(-1024, 1024, size=p.numel()).astype(np.float32) / 256.0)
            .reshape(p.shape) for p in model.parameters()]


def _flat(tensors):
    return torch.cat([t.detach().reshape(-1).to(torch.float32) for t in tensors])


def _topk(values, candidates, k):
    """The k entries of `candidates` with largest |values| (ties: lower index), ascending."""
    candidates = np.asarray(candidates, dtype=np.int64)
    order = np.lexsort((candidates, -np.abs(values[candidates].astype(np.float64))))
    return np.sort(candidates[order[:k]])


def _exact_reference(accs, k):
    """Spec "Exact-mode semantics": (U indices, U values float32, residual per rank)."""
    size, n = accs.shape
    selections = [_topk(acc, np.arange(n), k) for acc in accs]
    reduced = np.zeros(n, dtype=np.float32)
    for acc, selected in zip(accs, selections):
        reduced[selected] += acc[selected]
    support = np.unique(np.concatenate(selections)) if selections else np.empty(0, np.int64)
    support = support[reduced[support] != 0]
    chosen = _topk(reduced, support, min(k, support.size))
    values = reduced[chosen] / np.float32(size)
    residuals = accs.copy()
    for residual, selected in zip(residuals, selections):
        residual[np.intersect1d(selected, chosen)] = 0
    return chosen, values.astype(np.float32), residuals


def _what(test, **extra):
    parts = [f"rank {hvd.rank()}/{hvd.size()}", test] + [f"{key}={value}" for key, value in extra.items()]
    return " ".join(parts)


def _first_difference(got, expected):
    got, expected = np.asarray(got), np.asarray(expected)
    if got.shape != expected.shape:
        return f"shape {got.shape} != expected {expected.shape}"
    bad = np.flatnonzero(got.reshape(-1) != expected.reshape(-1))
    if bad.size == 0:
        return None
    i = int(bad[0])
    return f"element {i} is {got.reshape(-1)[i]!r}, expected {expected.reshape(-1)[i]!r} ({bad.size} differ)"


# --------------------------------------------------------------------------------------
# optimizer against the exact-mode reference

# exact: the spec's exact mode; tau1: threshold mode re-evaluating both thresholds and the
# partition on every call, which selects the same entries (spec property 5).
_MODES = {"exact": {"exact": True}, "tau1": {"tau_local": 1, "tau_global": 1, "tau": 1}}


@pytest.mark.parametrize("mode", sorted(_MODES))
@pytest.mark.parametrize("fold_lr", [False, True])
def test_exact_mode_matches_allgathered_reference(size, tname, fold_lr, mode):
    torch.manual_seed(0)
    model, reference = _Dyadic(), _Dyadic()
    lr, density, steps = 0.5, 0.1, 5
    optimizer = hvd.SparseDistributedOptimizer(torch.optim.SGD(model.parameters(), lr=lr), density=density,
                                               fold_lr=fold_lr, named_parameters=model.named_parameters(),
                                               **_MODES[mode])
    n = sum(p.numel() for p in model.parameters())
    k = max(1, int(n * density))
    residuals = np.zeros((size, n), dtype=np.float32)
    problems = []
    for step in range(steps):
        coefficients = _coefficients(model, hvd.rank(), step, seed=11)
        optimizer.zero_grad()
        model.loss(coefficients).backward()
        optimizer.step()
        grads = hvd.allgather(_flat(coefficients).reshape(1, -1), name=f"{tname}.grads.{step}").numpy()
        accs = residuals + (np.float32(lr) * grads if fold_lr else grads)
        indices, values, residuals = _exact_reference(accs, k)
        update = torch.zeros(n, dtype=torch.float32)
        update[torch.from_numpy(indices)] = torch.from_numpy(values)
        offset = 0
        with torch.no_grad():
            for p in reference.parameters():
                piece = update[offset:offset + p.numel()].view(p.shape).to(p.dtype)
                offset += p.numel()
                if fold_lr:
                    p.sub_(piece)
                else:
                    p.add_(piece, alpha=-lr)
        what = _what("SparseDistributedOptimizer vs exact-mode reference", mode=mode, fold_lr=fold_lr, n=n, k=k,
                     step=step)
        got_indices, got_values = optimizer.last_update
        for label, got, expected in (("U indices", got_indices.numpy(), indices),
                                     ("U values", got_values.numpy(), values),
                                     ("residual", optimizer.residual.numpy(), residuals[hvd.rank()])):
            difference = _first_difference(got, expected)
            if difference:
                problems.append(f"{what}: {label}: {difference}")
        for (name, p), q in zip(model.named_parameters(), reference.parameters()):
            difference = _first_difference(p.detach().numpy(), q.detach().numpy())
            if difference:
                problems.append(f"{what}: parameter {name}: {difference}")
    final = _flat(list(model.parameters()))
    assert_same_on_all_ranks(final, f"{tname}.final", _what("parameters", mode=mode, fold_lr=fold_lr))
    assert not problems, "\n".join(problems[:5])


def test_spec_vector_a(size, tname):
    """The spec's Vector A (P=4, n=16, k=4): U = {0: 4.25, 5: 4.75, 8: 2.75, 9: 2.25}."""
    if size != 4:
        pytest.skip("Vector A is defined for 4 ranks")
    g = np.array([[9, -1, 0, 2, -7, 3, 0, 1, 5, 0, -2, 0, 8, 0, 1, -4],
                  [3, 0, -6, 0, 1, 10, 0, 2, -4, 0, 0, 7, -1, 0, 4.5, 0],
                  [8, 2, 0, 1, 6, 0, -3, 0, 4, 9, 0, 0, 0, -5, 0, 2],
                  [1, 0, 7, -3, 0, 9, 2, 0, 6, 0, 0, -11, 0, 0, 4, 0]], dtype=np.float32)
    zeros = [[0, 8], [5], [0, 9], [5, 8]]
    allreducer = _core.SparseAllreducer("oktopk", density=0.25, exact=True)
    acc = g[hvd.rank()].copy()
    indices, values = allreducer.allreduce(acc)
    what = _what("Vector A", algorithm="oktopk", n=16, k=4)
    assert list(indices) == [0, 5, 8, 9], f"{what}: U indices {list(indices)}"
    assert list(values) == [4.25, 4.75, 2.75, 2.25], f"{what}: U values {list(values)}"
    expected = g[hvd.rank()].copy()
    expected[zeros[hvd.rank()]] = 0
    difference = _first_difference(acc, expected)
    assert difference is None, f"{what}: residual: {difference}"


def _integer_gradient(rank, call, n):
    """Small integers (sums exact in float32) as a pure function of (rank, call, n)."""
    rng = np.random.default_rng(1000 * call + 17 * rank + n)
    return rng.integers(-40, 41, size=n).astype(np.float32)


@pytest.mark.parametrize("n", [0, 5, 1000])
def test_allreducer_exact_mode_matches_reference(size, n):
    """SparseAllreducer alone over several calls with residuals carried (spec exact mode)."""
    rank, density = hvd.rank(), 0.02
    k = 0 if n == 0 else max(1, int(n * density))
    reducer = _core.SparseAllreducer("oktopk", density=density, exact=True, tau=2)
    accs = np.zeros((size, n), dtype=np.float32)
    failures = []
    for call in range(4):
        for q in range(size):
            accs[q] += _integer_gradient(q, call, n)
        indices, values, residuals = _exact_reference(accs, k)
        mine = accs[rank].copy()
        got_indices, got_values = reducer.allreduce(mine)
        what = _what("SparseAllreducer exact mode", algorithm="oktopk", n=n, k=k, call=call)
        for label, got, expected in (("U indices", got_indices, indices), ("U values", got_values, values),
                                     ("residual", mine, residuals[rank])):
            difference = _first_difference(got, expected)
            if difference:
                failures.append(f"{what}: {label}: {difference}")
        accs = residuals
    assert not failures, "\n".join(failures[:5])


# --------------------------------------------------------------------------------------
# every algorithm on a real model: conservation

@pytest.mark.parametrize("algorithm", _core.SparseAllreducer.names())
def test_residual_invariant(size, tname, algorithm):
    """sum_i residual_i + P*U == sum_i acc_i (up to float32 rounding of the sums) and U is
    bit-identical on all ranks, for every sparse allreduce; Ok-Topk with threshold reuse
    (tau_local = tau_global = 2, repartition every 3 calls)."""
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    optimizer = hvd.SparseDistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
                                               density=0.05, algorithm=algorithm, tau=3, tau_local=2,
                                               tau_global=2)
    n = optimizer.numel
    generator = torch.Generator().manual_seed(100 + hvd.rank())
    problems = []
    for step in range(6):
        x = torch.randn(16, 8, generator=generator)
        y = torch.randint(0, 3, (16,), generator=generator)
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        acc = optimizer.residual + _flat([p.grad for p in model.parameters()])
        optimizer.step()
        indices, values = optimizer.last_update
        update = torch.zeros(n, dtype=torch.float64)
        update[indices] = values.to(torch.float64)
        sums = hvd.allreduce(torch.stack([acc.to(torch.float64), optimizer.residual.to(torch.float64),
                                          acc.abs().to(torch.float64)]), name=f"{tname}.sums.{step}", op=hvd.Sum)
        assert_same_on_all_ranks(update.to(torch.float32), f"{tname}.update.{step}",
                                 _what("U", algorithm=algorithm, n=n, step=step))
        left = sums[1] + size * update
        tolerance = 4 * size * 2.0 ** -23 * sums[2]
        bad = torch.nonzero((left - sums[0]).abs() > tolerance).reshape(-1)
        if bad.numel():
            j = int(bad[0])
            problems.append(f"{_what('residual invariant', algorithm=algorithm, n=n, step=step)}: element {j}: "
                            f"sum residual + P*U = {left[j].item()!r}, sum acc = {sums[0][j].item()!r}")
        if not 0 < indices.numel() <= n:
            problems.append(f"{_what('U size', algorithm=algorithm, n=n, step=step)}: |U| = {indices.numel()}")
    assert not problems, "\n".join(problems[:5])


# --------------------------------------------------------------------------------------
# warm-up

def test_warmup_equals_dense_distributed_optimizer(tname):
    torch.manual_seed(2)
    sparse_model, dense_model = _Dyadic(), _Dyadic()
    warmup = 3
    sparse = hvd.SparseDistributedOptimizer(torch.optim.SGD(sparse_model.parameters(), lr=0.25, momentum=0.5),
                                            density=0.1, warmup_steps=warmup)
    dense = hvd.DistributedOptimizer(torch.optim.SGD(dense_model.parameters(), lr=0.25, momentum=0.5),
                                     named_parameters=dense_model.named_parameters())
    problems = []
    for step in range(warmup + 1):
        coefficients = _coefficients(sparse_model, hvd.rank(), step, seed=5)
        for model, optimizer in ((sparse_model, sparse), (dense_model, dense)):
            optimizer.zero_grad()
            model.loss(coefficients).backward()
            optimizer.step()
        what = _what("warm-up vs DistributedOptimizer", warmup_steps=warmup, step=step)
        if step < warmup:
            for (name, p), q in zip(sparse_model.named_parameters(), dense_model.parameters()):
                if not torch.equal(p, q):
                    problems.append(f"{what}: parameter {name}: "
                                    f"{_first_difference(p.detach().numpy(), q.detach().numpy())}")
            if torch.count_nonzero(sparse.residual):
                problems.append(f"{what}: residual changed during warm-up")
        elif not torch.count_nonzero(sparse.residual):
            problems.append(f"{what}: first sparse step left no residual (k < n)")
    assert not problems, "\n".join(problems[:5])


# --------------------------------------------------------------------------------------
# the binding itself and bad input

def test_allreducer_numpy_and_torch_inputs(size, tname):
    names = hvd.sparse_allreduce_names()
    allreducer = _core.SparseAllreducer("oktopk", density=0.5, exact=True)
    array = np.full(6, hvd.rank() + 1, dtype=np.float32) * np.arange(1, 7, dtype=np.float32)
    tensor = torch.from_numpy(array.copy())
    before = allreducer.bytes_sent()
    first = allreducer.allreduce(array)
    second = allreducer.allreduce(tensor)
    empty = allreducer.allreduce(np.zeros(0, dtype=np.float32))
    sent = allreducer.bytes_sent() - before
    what = _what("SparseAllreducer", algorithm="oktopk", n=6)
    assert names and names[0] == "oktopk", f"{what}: names() = {names}"
    assert list(_core.sparse_allreduce_names()) == names, f"{what}: sparse_allreduce_names() != names()"
    assert allreducer.name == "oktopk" and allreducer.size == size and allreducer.rank == hvd.rank(), what
    total = size * (size + 1) // 2
    assert list(first[0]) == [3, 4, 5], f"{what}: U indices {list(first[0])}"
    assert list(first[1]) == [total * j / size for j in (4, 5, 6)], f"{what}: U values {list(first[1])}"
    assert first[0].dtype == np.int64 and first[1].dtype == np.float32, what
    assert list(array[3:]) == [0, 0, 0], f"{what}: numpy residual not written in place: {array}"
    assert list(second[0]) == list(first[0]), f"{what}: torch input gave {list(second[0])}"
    assert list(tensor[3:]) == [0, 0, 0], f"{what}: torch residual not written in place: {tensor}"
    assert empty[0].size == 0 and empty[1].size == 0, f"{what}: n=0 gave {empty}"
    assert (sent > 0) == (size > 1), f"{what}: bytes_sent grew by {sent} at size {size}"


def test_bad_input_errors():
    model = torch.nn.Linear(4, 2)
    sgd = torch.optim.SGD(model.parameters(), lr=0.1)
    for density in (0, -0.5, 1.5, float("nan")):
        expect_raises(ValueError, _what("density", density=density), hvd.SparseDistributedOptimizer, sgd,
                      density=density)
    expect_raises(ValueError, _what("warmup_steps=-1"), hvd.SparseDistributedOptimizer, sgd, warmup_steps=-1)
    for dtype in (torch.float16, torch.bfloat16):
        half = torch.nn.Linear(4, 2).to(dtype)
        expect_raises(ValueError, _what("parameter dtype", dtype=dtype), hvd.SparseDistributedOptimizer,
                      torch.optim.SGD(half.parameters(), lr=0.1))
    expect_raises(hvd.InvalidArgumentError, _what("unknown option"), hvd.SparseDistributedOptimizer, sgd,
                  no_such_option=1)
    expect_raises(hvd.InvalidArgumentError, _what("unknown algorithm"), hvd.SparseDistributedOptimizer, sgd,
                  algorithm="no-such-algorithm")
    expect_raises(hvd.InvalidArgumentError, _what("SparseAllreducer density=0"), _core.SparseAllreducer, "oktopk",
                  density=0.0)
    allreducer = _core.SparseAllreducer(density=0.5)
    expect_raises(hvd.InvalidArgumentError, _what("float64 acc"), allreducer.allreduce, np.zeros(4))
    expect_raises(hvd.InvalidArgumentError, _what("non-contiguous acc"), allreducer.allreduce,
                  np.zeros(8, dtype=np.float32)[::2])
    optimizer = hvd.SparseDistributedOptimizer(sgd, named_parameters=model.named_parameters())
    model.weight.grad = torch.zeros_like(model.weight)  # bias has no gradient
    error = expect_raises(ValueError, _what("missing gradient"), optimizer.step)
    assert "bias" in str(error), f"{_what('missing gradient')}: message does not name the parameter: {error}"
