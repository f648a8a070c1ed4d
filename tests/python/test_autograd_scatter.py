"""Gradients through alltoall, reducescatter and the grouped allgather/reducescatter
(concord/torch/autograd.py), checked as in test_autograd.py against Horovod
0.28.1's backward rules (horovod/torch/mpi_ops.py: HorovodAlltoall, HorovodReducescatter,
HorovodGroupedAllgather, HorovodGroupedReducescatter; horovod_reference.py): every rank
backpropagates L_r = sum(w_r * y_r), so g_r = w_r."""

import pytest
import torch

import concord.torch as hvd
import horovod_reference as horovod
from test_autograd import check_grad, w_of, x_of


def scatter_rows(total, size):
    """Rows of each rank in a reduce-scatter of `total` rows (earlier ranks get the extra)."""
    return [total // size + (1 if q < total % size else 0) for q in range(size)]


@pytest.mark.parametrize("uneven", [False, True])
def test_alltoall_gradient(uneven, rank, size, tname):
    """HorovodAlltoall.backward: an alltoall of the gradients with the received splits."""
    seed = 11
    # splits[q][j]: rows rank q sends to rank j (zeros included when uneven).
    splits = [[(q + 2 * j) % 3 if uneven else 2 for j in range(size)] for q in range(size)]
    rows = [sum(s) for s in splits]
    x = x_of(rank, (rows[rank], 2), seed).requires_grad_(True)
    if uneven:
        y, received = hvd.alltoall(x, splits=splits[rank], name=tname)
        assert received.tolist() == [splits[q][rank] for q in range(size)], f"rank {rank}: {received}"
    else:
        y = hvd.alltoall(x, name=tname)
    received_rows = [sum(splits[q][j] for q in range(size)) for j in range(size)]
    (w_of(rank, (received_rows[rank], 2), seed) * y).sum().backward()
    expected = horovod.alltoall_backward([w_of(j, (received_rows[j], 2), seed) for j in range(size)], splits)
    check_grad(x.grad, expected[rank], f"alltoall splits {splits[rank]}")


@pytest.mark.parametrize("op_name,pre,post", [("Sum", 1.0, 1.0), ("Average", 1.0, 1.0), ("Sum", 0.5, 3.0),
                                              ("Average", 2.0, 0.25)])
def test_reducescatter_gradient(op_name, pre, post, rank, size, tname):
    """HorovodReducescatter.backward: allgather(g) times size for Sum, times pre and post
    (at 2 ranks a loss sum(y) gives 2 for Sum and 1 for Average)."""
    total, seed = 2 * size + 1, 12  # uneven: earlier ranks get one row more
    rows = scatter_rows(total, size)
    x = x_of(rank, (total, 3), seed).requires_grad_(True)
    y = hvd.reducescatter(x, name=tname, op=getattr(hvd, op_name), prescale_factor=pre, postscale_factor=post)
    assert y.shape == (rows[rank], 3), f"rank {rank}: shape {tuple(y.shape)}"
    (w_of(rank, (rows[rank], 3), seed) * y).sum().backward()
    expected = horovod.reducescatter_backward([w_of(q, (rows[q], 3), seed) for q in range(size)], op_name, pre, post)
    check_grad(x.grad, expected[rank], f"reducescatter {op_name} pre={pre} post={post}")


def test_grouped_allgather_gradient(rank, size, tname):
    """HorovodGroupedAllgather.backward: per member, rank r's rows of the averaged gradient."""
    seed = 13
    rows = [[q + 1 for q in range(size)], [2] * size]
    xs = [x_of(rank, (rows[i][rank], 2), seed + i).requires_grad_(True) for i in range(2)]
    ys = hvd.grouped_allgather(xs, name=tname)
    totals = [(sum(r), 2) for r in rows]
    sum((w_of(rank, totals[i], seed + i) * ys[i]).sum() for i in range(2)).backward()
    for i in range(2):
        expected = horovod.allgather_backward([w_of(q, totals[i], seed + i) for q in range(size)], rows[i])
        check_grad(xs[i].grad, expected[rank], f"grouped_allgather member {i}")


@pytest.mark.parametrize("op_name", ["Sum", "Average"])
def test_grouped_reducescatter_gradient(op_name, rank, size, tname):
    """HorovodGroupedReducescatter.backward: per member, as HorovodReducescatter's."""
    seed = 14
    totals = [size + 1, 2 * size]
    xs = [x_of(rank, (totals[i], 2), seed + i).requires_grad_(True) for i in range(2)]
    ys = hvd.grouped_reducescatter(xs, name=tname, op=getattr(hvd, op_name), postscale_factor=2.0)
    rows = [scatter_rows(t, size) for t in totals]
    sum((w_of(rank, (rows[i][rank], 2), seed + i) * ys[i]).sum() for i in range(2)).backward()
    for i in range(2):
        grads = [w_of(q, (rows[i][q], 2), seed + i) for q in range(size)]
        expected = horovod.reducescatter_backward(grads, op_name, post=2.0)
        check_grad(xs[i].grad, expected[rank], f"grouped_reducescatter {op_name} member {i}")


def test_scatter_collectives_without_grad_skip_autograd(rank, size, tname):
    x = torch.ones(2 * size, 2)
    y = hvd.alltoall(x, name=f"{tname}.a")
    z = hvd.reducescatter(x, name=f"{tname}.r", op=hvd.Sum)
    assert not y.requires_grad and not z.requires_grad, f"rank {rank}"
    assert torch.equal(z, torch.full((2, 2), float(size))), f"rank {rank}: {z}"
