"""hvd.allreduce(op=hvd.Adasum) (src/algorithms/allreduce_adasum.h through the runtime)
against a float64 reference of Maleki et al.'s binary tree over rank order, for single,
fused (many in flight) and grouped tensors; and its errors (world size not a power of two,
integer dtype), raised on every rank."""

import pytest
import torch

import concord.torch as hvd


def value_of(rank, shape, seed):
    g = torch.Generator().manual_seed(31 * seed + rank)
    return torch.randn(shape, generator=g, dtype=torch.float64)


def adasum_reference(vectors):
    level = [v.double().flatten() for v in vectors]
    while len(level) > 1:
        combined = []
        for a, b in zip(level[0::2], level[1::2]):
            ab, aa, bb = float(a @ b), float(a @ a), float(b @ b)
            ca = 1.0 if aa < 1e-30 else 1.0 - ab / (2 * aa)
            cb = 1.0 if bb < 1e-30 else 1.0 - ab / (2 * bb)
            combined.append(ca * a + cb * b)
        level = combined
    return level[0]


def power_of_two(size):
    return size & (size - 1) == 0


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape", [(0,), (1,), (7,), (33, 5)])
def test_adasum_matches_reference(dtype, shape, rank, size, tname):
    if not power_of_two(size):
        pytest.skip("Adasum needs a power-of-two world size (the error is tested below)")
    seed = len(shape) * 100 + shape[0]
    result = hvd.allreduce(value_of(rank, shape, seed).to(dtype), name=tname, op=hvd.Adasum)
    expected = adasum_reference([value_of(q, shape, seed).to(dtype) for q in range(size)]).view(shape)
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    torch.testing.assert_close(result.double(), expected, atol=tol, rtol=tol, msg=f"rank {rank}/{size} {shape} {dtype}")
    assert result.dtype == dtype


def test_adasum_fused_and_grouped_are_per_tensor(rank, size, tname):
    """Tensors fused into one batch are still combined each with its own dot products."""
    if not power_of_two(size):
        pytest.skip("Adasum needs a power-of-two world size")
    shapes = [(5,), (3, 2), (11,), (1,)]
    handles = [hvd.allreduce_async(value_of(rank, s, i), name=f"{tname}.{i}", op=hvd.Adasum)
               for i, s in enumerate(shapes)]
    results = [hvd.synchronize(h) for h in handles]
    grouped = hvd.grouped_allreduce([value_of(rank, s, i) for i, s in enumerate(shapes)], name=f"{tname}.g",
                                    op=hvd.Adasum, postscale_factor=2.0)
    for i, s in enumerate(shapes):
        expected = adasum_reference([value_of(q, s, i) for q in range(size)]).view(s)
        torch.testing.assert_close(results[i], expected, msg=f"rank {rank}/{size}: tensor {i}")
        torch.testing.assert_close(grouped[i], 2.0 * expected, msg=f"rank {rank}/{size}: group member {i}")


def test_adasum_of_parallel_gradients_is_their_average(rank, size, tname):
    if not power_of_two(size):
        pytest.skip("Adasum needs a power-of-two world size")
    same = torch.tensor([1.0, -2.0, 4.0])
    torch.testing.assert_close(hvd.allreduce(same, name=tname, op=hvd.Adasum), same, msg=f"rank {rank}")


def test_adasum_errors(rank, size, tname):
    if power_of_two(size):
        with pytest.raises(hvd.InvalidArgumentError, match="dtype int32 is not supported"):
            hvd.allreduce(torch.ones(3, dtype=torch.int32), name=tname, op=hvd.Adasum)
    else:
        with pytest.raises(hvd.InvalidArgumentError, match=f"power-of-two number of ranks.*{size} ranks"):
            hvd.allreduce(torch.ones(3), name=tname, op=hvd.Adasum)
    x = torch.ones(2, requires_grad=True)
    if power_of_two(size):
        # Horovod's HorovodAllreduce.backward: the Adasum allreduce of the gradients, which
        # for equal gradients (all ones here) is that gradient.
        y = hvd.allreduce(x, name=tname + ".grad", op=hvd.Adasum)
        y.sum().backward()
        torch.testing.assert_close(x.grad, torch.ones(2), msg=f"rank {rank}: Adasum gradient")
