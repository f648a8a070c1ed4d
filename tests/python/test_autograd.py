"""Gradients through concord.torch's collectives (concord/torch/autograd.py).

Every rank r holds an input x_r and a weight w_r (pure functions of r and the test), runs
the collective and backpropagates L_r = sum(w_r * y_r). The gradient of the sum over ranks
of L_r with respect to x_r is then rebuilt on every rank from a single-process float64
reference (the collective written with torch ops over all ranks' inputs), whose own
gradient is verified by finite differences (torch.autograd.gradcheck).
"""

import pytest
import torch

import concord.torch as hvd


def _gen(rank, seed):
    return torch.Generator().manual_seed(1000 * seed + rank)


def x_of(rank, shape, seed):
    return torch.randn(shape, generator=_gen(rank, seed), dtype=torch.float64)


def w_of(rank, shape, seed):
    return torch.randn(shape, generator=_gen(rank, seed + 500), dtype=torch.float64)


def reference_grads(forward, inputs, out_shapes, seed):
    """d(sum_r sum(w_r * forward(inputs)[r])) / d inputs, single process, with the
    reference's gradient checked by finite differences."""
    weights = [w_of(r, shape, seed) for r, shape in enumerate(out_shapes)]

    def objective(*xs):
        outputs = forward(list(xs))
        return sum((w * y).sum() for w, y in zip(weights, outputs))

    xs = [x.clone().requires_grad_(True) for x in inputs]
    assert torch.autograd.gradcheck(objective, tuple(xs)), "the single-process reference's gradient"
    grads = torch.autograd.grad(objective(*xs), xs, allow_unused=True)
    return [torch.zeros_like(x) if g is None else g for x, g in zip(xs, grads)]


def check_grad(got, expected, what):
    assert got is not None, f"rank {hvd.rank()}/{hvd.size()} {what}: no gradient reached the input"
    assert got.shape == expected.shape, f"rank {hvd.rank()}/{hvd.size()} {what}: gradient shape {tuple(got.shape)}"
    diff = (got.double() - expected).abs().max().item() if got.numel() else 0.0
    assert diff <= 1e-5 * (1 + expected.abs().max().item() if expected.numel() else 1), (
        f"rank {hvd.rank()}/{hvd.size()} {what}: gradient differs by {diff}")


@pytest.mark.parametrize("op_name,pre,post", [("Sum", 1.0, 1.0), ("Average", 1.0, 1.0), ("Sum", 0.5, 3.0),
                                              ("Average", 2.0, 0.25)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_allreduce_gradient(op_name, pre, post, dtype, rank, size, tname):
    shape, seed = (3, 4), 1
    op = getattr(hvd, op_name)
    x = x_of(rank, shape, seed).to(dtype).requires_grad_(True)
    y = hvd.allreduce(x, name=tname, op=op, prescale_factor=pre, postscale_factor=post)
    (w_of(rank, shape, seed).to(dtype) * y).sum().backward()
    divisor = size if op_name == "Average" else 1

    def forward(xs):
        total = post * sum(pre * t for t in xs) / divisor
        return [total] * size

    expected = reference_grads(forward, [x_of(q, shape, seed) for q in range(size)], [shape] * size, seed)
    check_grad(x.grad, expected[rank], f"allreduce {op_name} pre={pre} post={post} {dtype}")


def test_allreduce_gradient_through_a_model(rank, size, tname):
    """The gradient flows through ops before and after the collective."""
    x = x_of(rank, (5,), 2).requires_grad_(True)
    y = hvd.allreduce(x * x, name=tname, op=hvd.Sum)
    (w_of(rank, (5,), 2) * y.sin()).sum().backward()

    def forward(xs):
        total = sum(t * t for t in xs)
        return [total.sin()] * size

    expected = reference_grads(forward, [x_of(q, (5,), 2) for q in range(size)], [(5,)] * size, 2)
    check_grad(x.grad, expected[rank], "allreduce inside a model")


def test_allreduce_unnamed_and_repeated(rank, size):
    """Unnamed forward/backward pairs and several iterations with the same name."""
    for step in range(3):
        x = x_of(rank, (2, 2), 3 + step).requires_grad_(True)
        hvd.allreduce(x, op=hvd.Sum).sum().backward()
        hvd.allreduce(x, name="autograd.repeated", op=hvd.Average).sum().backward()
        assert torch.allclose(x.grad, torch.full((2, 2), size + 1.0, dtype=torch.float64)), (
            f"rank {rank}/{size} step {step}: gradient {x.grad}")


@pytest.mark.parametrize("op_name", ["Min", "Max", "Product"])
def test_allreduce_gradient_of_non_linear_op_raises(op_name, rank, size, tname):
    x = torch.ones(3, dtype=torch.float64, requires_grad=True)
    y = hvd.allreduce(x, name=tname, op=getattr(hvd, op_name))
    with pytest.raises(RuntimeError, match=f"gradient of op .* is not defined"):
        y.sum().backward()


def test_no_grad_calls_skip_autograd(rank, size, tname):
    x = torch.ones(3, requires_grad=True)
    with torch.no_grad():
        y = hvd.allreduce(x, name=tname)
        z = hvd.allgather(x, name=tname + ".g")
        b = hvd.broadcast(x, 0, name=tname + ".b")
    assert not y.requires_grad and not z.requires_grad and not b.requires_grad, f"rank {rank}"


@pytest.mark.parametrize("uneven", [False, True])
def test_allgather_gradient(uneven, rank, size, tname):
    seed = 4
    rows = [q + 1 if uneven else 2 for q in range(size)]
    x = x_of(rank, (rows[rank], 3), seed).requires_grad_(True)
    y = hvd.allgather(x, name=tname)
    total = (sum(rows), 3)
    (w_of(rank, total, seed) * y).sum().backward()

    def forward(xs):
        return [torch.cat(xs)] * size

    expected = reference_grads(forward, [x_of(q, (rows[q], 3), seed) for q in range(size)], [total] * size, seed)
    check_grad(x.grad, expected[rank], f"allgather rows {rows}")


def test_allgather_gradient_with_zero_rows_on_rank_0(rank, size, tname):
    rows = [0] + [2] * (size - 1)
    x = x_of(rank, (rows[rank], 2), 5).requires_grad_(True)
    y = hvd.allgather(x, name=tname)
    (y * 2).sum().backward()
    check_grad(x.grad, torch.full((rows[rank], 2), 2.0 * size, dtype=torch.float64), f"allgather rows {rows}")


@pytest.mark.parametrize("root", [0, "last"])
def test_broadcast_gradient(root, rank, size, tname):
    root = size - 1 if root == "last" else root
    shape, seed = (4,), 6
    x = x_of(rank, shape, seed).requires_grad_(True)
    y = hvd.broadcast(x, root, name=tname)
    (w_of(rank, shape, seed) * y * y).sum().backward()

    def forward(xs):
        return [xs[root] * xs[root]] * size

    expected = reference_grads(forward, [x_of(q, shape, seed) for q in range(size)], [shape] * size, seed)
    check_grad(x.grad, expected[rank], f"broadcast root {root}")
    if rank != root:
        assert torch.count_nonzero(x.grad) == 0, f"rank {rank}: non-root gradient {x.grad}"


def test_allgather_scalar_with_grad_raises(rank, tname):
    with pytest.raises(hvd.InvalidArgumentError):
        hvd.allgather(torch.tensor(1.0, requires_grad=True), name=tname)


@pytest.mark.parametrize("op_name", ["Sum", "Average"])
def test_grouped_allreduce_gradient(op_name, rank, size, tname):
    """Members of different shapes, one not requiring a gradient, one output unused."""
    shapes, seed = [(3,), (2, 2), (4,)], 8
    op = getattr(hvd, op_name)
    xs = [x_of(rank, s, seed + i).requires_grad_(i != 2) for i, s in enumerate(shapes)]
    ys = hvd.grouped_allreduce(xs, name=tname, op=op, postscale_factor=3.0)
    (w_of(rank, shapes[0], seed) * ys[0]).sum().backward()  # ys[1] unused: zero gradient
    divisor = size if op_name == "Average" else 1

    def forward(inputs):
        return [3.0 * sum(inputs) / divisor] * size

    expected = reference_grads(forward, [x_of(q, shapes[0], seed) for q in range(size)], [shapes[0]] * size, seed)
    check_grad(xs[0].grad, expected[rank], f"grouped_allreduce {op_name} member 0")
    check_grad(xs[1].grad, torch.zeros(shapes[1], dtype=torch.float64), f"grouped_allreduce {op_name} member 1")
    assert xs[2].grad is None, f"rank {rank}: a member without requires_grad got a gradient"
