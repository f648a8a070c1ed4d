"""Gradients through concord.torch's collectives (concord/torch/autograd.py), checked
against Horovod 0.28.1's backward rules (horovod/torch/mpi_ops.py; horovod_reference.py
holds them in single-process form).

Every rank r holds an input x_r and a weight w_r (pure functions of r and the test), runs
the collective and backpropagates its own loss, e.g. L_r = sum(w_r * y_r), whose gradient
with respect to y_r is g_r = w_r. The expected input gradient on rank r is what Horovod's
backward computes from every rank's g_q (e.g. HorovodAllgather.backward: rank r's rows of
the Average allreduce of the g_q), derived here in one process from the same g_q.
"""

import pytest
import torch

import concord.torch as hvd
import horovod_reference as horovod


def _gen(rank, seed):
    return torch.Generator().manual_seed(1000 * seed + rank)


def x_of(rank, shape, seed):
    return torch.randn(shape, generator=_gen(rank, seed), dtype=torch.float64)


def w_of(rank, shape, seed):
    return torch.randn(shape, generator=_gen(rank, seed + 500), dtype=torch.float64)


def check_grad(got, expected, what):
    assert got is not None, f"rank {hvd.rank()}/{hvd.size()} {what}: no gradient reached the input"
    assert got.shape == expected.shape, (
        f"rank {hvd.rank()}/{hvd.size()} {what}: gradient shape {tuple(got.shape)}, expected {tuple(expected.shape)}")
    diff = (got.double() - expected.double()).abs().max().item() if got.numel() else 0.0
    scale = 1 + (expected.abs().max().item() if expected.numel() else 0)
    assert diff <= 1e-5 * scale, f"rank {hvd.rank()}/{hvd.size()} {what}: gradient differs from Horovod's by {diff}"


@pytest.mark.parametrize("op_name,pre,post", [("Sum", 1.0, 1.0), ("Average", 1.0, 1.0), ("Sum", 0.5, 3.0),
                                              ("Average", 2.0, 0.25), ("Min", 1.0, 1.0), ("Max", 1.0, 2.0),
                                              ("Product", 1.0, 1.0)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_allreduce_gradient(op_name, pre, post, dtype, rank, size, tname):
    """HorovodAllreduce.backward: the same allreduce (op, factors) of the gradients, for
    every op (for Min, Max and Product Horovod's rule, not a derivative)."""
    shape, seed = (3, 4), 1
    x = x_of(rank, shape, seed).to(dtype).requires_grad_(True)
    y = hvd.allreduce(x, name=tname, op=getattr(hvd, op_name), prescale_factor=pre, postscale_factor=post)
    (w_of(rank, shape, seed).to(dtype) * y).sum().backward()
    expected = horovod.allreduce_backward([w_of(q, shape, seed) for q in range(size)], op_name, pre, post)
    check_grad(x.grad, expected[rank].to(dtype), f"allreduce {op_name} pre={pre} post={post} {dtype}")


def test_allreduce_gradient_through_a_model(rank, size, tname):
    """The gradient flows through ops before and after the collective: y = Sum of x_q^2,
    L_r = sum(w_r * sin(y)), so g_q = w_q cos(y) and x_r's gradient is 2 x_r times the
    Sum allreduce of the g_q."""
    x = x_of(rank, (5,), 2).requires_grad_(True)
    y = hvd.allreduce(x * x, name=tname, op=hvd.Sum)
    (w_of(rank, (5,), 2) * y.sin()).sum().backward()
    total = sum(x_of(q, (5,), 2) ** 2 for q in range(size))
    grads = [w_of(q, (5,), 2) * total.cos() for q in range(size)]
    expected = 2 * x_of(rank, (5,), 2) * horovod.allreduce_backward(grads, "Sum")[rank]
    check_grad(x.grad, expected, "allreduce inside a model")


def test_allreduce_unnamed_and_repeated(rank, size):
    """Unnamed forward/backward pairs and several iterations with the same name."""
    for step in range(3):
        x = x_of(rank, (2, 2), 3 + step).requires_grad_(True)
        hvd.allreduce(x, op=hvd.Sum).sum().backward()
        hvd.allreduce(x, name="autograd.repeated", op=hvd.Average).sum().backward()
        assert torch.allclose(x.grad, torch.full((2, 2), size + 1.0, dtype=torch.float64)), (
            f"rank {rank}/{size} step {step}: gradient {x.grad}")


def test_no_grad_calls_skip_autograd(rank, size, tname):
    x = torch.ones(3, requires_grad=True)
    with torch.no_grad():
        y = hvd.allreduce(x, name=tname)
        z = hvd.allgather(x, name=tname + ".g")
        b = hvd.broadcast(x, 0, name=tname + ".b")
    assert not y.requires_grad and not z.requires_grad and not b.requires_grad, f"rank {rank}"


@pytest.mark.parametrize("uneven", [False, True])
def test_allgather_gradient(uneven, rank, size, tname):
    """HorovodAllgather.backward: rank r's rows of the averaged gradient (at 2 ranks a
    loss sum(y) gives 1, not the adjoint's 2)."""
    seed = 4
    rows = [q + 1 if uneven else 2 for q in range(size)]
    x = x_of(rank, (rows[rank], 3), seed).requires_grad_(True)
    y = hvd.allgather(x, name=tname)
    total = (sum(rows), 3)
    (w_of(rank, total, seed) * y).sum().backward()
    expected = horovod.allgather_backward([w_of(q, total, seed) for q in range(size)], rows)
    check_grad(x.grad, expected[rank], f"allgather rows {rows}")


def test_allgather_gradient_with_zero_rows_on_rank_0(rank, size, tname):
    rows = [0] + [2] * (size - 1)
    x = x_of(rank, (rows[rank], 2), 5).requires_grad_(True)
    y = hvd.allgather(x, name=tname)
    (y * 2).sum().backward()
    expected = horovod.allgather_backward([torch.full((sum(rows), 2), 2.0, dtype=torch.float64)] * size, rows)
    check_grad(x.grad, expected[rank], f"allgather rows {rows}")


@pytest.mark.parametrize("root", [0, "last"])
def test_broadcast_gradient(root, rank, size, tname):
    """HorovodBroadcast.backward: the averaged gradient on the root, zero elsewhere; with
    L_r = sum(w_r * y * y), g_q = 2 w_q x_root."""
    root = size - 1 if root == "last" else root
    shape, seed = (4,), 6
    x = x_of(rank, shape, seed).requires_grad_(True)
    y = hvd.broadcast(x, root, name=tname)
    (w_of(rank, shape, seed) * y * y).sum().backward()
    grads = [2 * w_of(q, shape, seed) * x_of(root, shape, seed) for q in range(size)]
    expected = horovod.broadcast_backward(grads, root)
    check_grad(x.grad, expected[rank], f"broadcast root {root}")
    if rank != root:
        assert torch.count_nonzero(x.grad) == 0, f"rank {rank}: non-root gradient {x.grad}"


def test_allgather_scalar_with_grad_raises(rank, tname):
    with pytest.raises(hvd.InvalidArgumentError):
        hvd.allgather(torch.tensor(1.0, requires_grad=True), name=tname)


@pytest.mark.parametrize("op_name", ["Sum", "Average"])
def test_grouped_allreduce_gradient(op_name, rank, size, tname):
    """HorovodGroupedAllreduce.backward, with members of different shapes, one not
    requiring a gradient and one output unused (a zero gradient)."""
    shapes, seed = [(3,), (2, 2), (4,)], 8
    op = getattr(hvd, op_name)
    xs = [x_of(rank, s, seed + i).requires_grad_(i != 2) for i, s in enumerate(shapes)]
    ys = hvd.grouped_allreduce(xs, name=tname, op=op, postscale_factor=3.0)
    (w_of(rank, shapes[0], seed) * ys[0]).sum().backward()  # ys[1] unused: zero gradient
    expected = horovod.allreduce_backward([w_of(q, shapes[0], seed) for q in range(size)], op_name, post=3.0)
    check_grad(xs[0].grad, expected[rank], f"grouped_allreduce {op_name} member 0")
    check_grad(xs[1].grad, torch.zeros(shapes[1], dtype=torch.float64), f"grouped_allreduce {op_name} member 1")
    assert xs[2].grad is None, f"rank {rank}: a member without requires_grad got a gradient"
