"""concord.kvstore.KVStore on NumPy arrays and torch tensors, for the three designs:
init takes rank 0's value, push sums (or averages) every rank's gradient, pull copies out;
misuse (keys in different orders, an unknown key, a wrong shape) raises on every rank and
the store keeps working. Every rank runs every collective before asserting."""

import numpy as np
import pytest
import torch

import concord
import concord.torch as hvd
from concord.kvstore import KVStore

TYPES = ["funneled", "concurrent", "depchain"]


def where(kv, what):
    return f"rank {kv.rank}/{kv.num_workers} {kv.type} {what}"


def push_then_pull(kv, keys, grad, out):
    """Pushes ``keys`` in order, then pulls each; {key: exception} of those that failed."""
    errors = {}
    for key in keys:
        try:
            kv.push(key, grad)
        except concord.ConcordError as error:
            errors[key] = error
    for key in keys:
        if key not in errors:
            try:
                kv.pull(key, out)
            except concord.ConcordError as error:
                errors[key] = error
    return errors


@pytest.mark.parametrize("kvtype", TYPES)
def test_numpy_init_push_pull(kvtype):
    with KVStore(kvtype, communicators=3, outstanding=2) as kv:
        P, r = kv.num_workers, kv.rank
        assert (P, r) == (hvd.size(), hvd.rank())
        shapes = {1: ((3, 4), np.float32), 2: ((1000,), np.int32), 3: ((0,), np.float64), 4: ((7,), np.uint8)}
        for key, (shape, dtype) in shapes.items():
            kv.init(key, np.full(shape, r + 5, dtype=dtype))
        inits = {key: kv.pull(key, np.zeros(shape, dtype)) for key, (shape, dtype) in shapes.items()}
        for iteration in range(3):
            for key, (shape, dtype) in shapes.items():
                kv.push(key, np.full(shape, r + key + iteration, dtype=dtype))
            sums = {key: kv.pull(key, np.zeros(shape, dtype)) for key, (shape, dtype) in shapes.items()}
            for key, (shape, dtype) in shapes.items():
                expected = sum(q + key + iteration for q in range(P))
                assert np.array_equal(sums[key], np.full(shape, expected, dtype=dtype)), \
                    where(kv, f"key {key} {np.dtype(dtype).name} {shape} iteration {iteration}: {sums[key].ravel()[:4]}")
        for key, (shape, dtype) in shapes.items():
            assert np.array_equal(inits[key], np.full(shape, 5, dtype=dtype)), where(kv, f"init of key {key}")


@pytest.mark.parametrize("kvtype", TYPES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.int64])
def test_torch_pushpull_in_place(kvtype, dtype):
    with KVStore(kvtype) as kv:
        P, r = kv.num_workers, kv.rank
        t = torch.zeros(5, 33, dtype=dtype)
        kv.init(0, t)
        t.fill_(r + 1)
        kv.pushpull(0, t, t)
        assert torch.equal(t, torch.full((5, 33), P * (P + 1) // 2, dtype=dtype)), where(kv, f"{dtype}: {t[0, :4]}")


@pytest.mark.parametrize("kvtype", TYPES)
def test_average(kvtype):
    with KVStore(kvtype, op="average") as kv:
        P, r = kv.num_workers, kv.rank
        out = np.zeros(100)
        kv.init(9, out)
        kv.pushpull(9, np.arange(100.0) + 2.0 * r, out)
        np.testing.assert_allclose(out, np.arange(100.0) + (P - 1), rtol=1e-12, err_msg=where(kv, "average"))


@pytest.mark.parametrize("kvtype", TYPES)
def test_misuse_fails_on_every_rank_then_works(kvtype):
    if hvd.size() < 2:
        pytest.skip("a mismatch across ranks needs at least two ranks")
    with KVStore(kvtype, communicators=3) as kv:
        P, r = kv.num_workers, kv.rank
        g, out = np.ones(6, np.float32), np.zeros(6, np.float32)
        kv.init(0, g)
        kv.init(3, g)
        misordered = push_then_pull(kv, [0, 3] if r == 0 else [3, 0], g, out)
        culprit_key = 6 if r == P - 1 else 0  # 6 never initialised; same communicator as 0 (6 mod 3)
        unknown = push_then_pull(kv, [culprit_key], g, out)
        wrong_shape = push_then_pull(kv, [3], np.ones(5, np.float32) if r == P - 1 else g, out)
        recovered = push_then_pull(kv, [0, 3], np.full(6, r + 1, np.float32), out)
        for key in (0, 3):
            assert isinstance(misordered.get(key), concord.MismatchError), where(kv, f"misordered key {key}: {misordered}")
            assert "key 0" in str(misordered[key]) and "key 3" in str(misordered[key]), where(kv, str(misordered[key]))
        assert isinstance(unknown.get(culprit_key), concord.InvalidArgumentError), where(kv, f"unknown key: {unknown}")
        assert f"rank {P - 1}" in str(unknown[culprit_key]) and "key 6" in str(unknown[culprit_key]), \
            where(kv, str(unknown[culprit_key]))
        assert isinstance(wrong_shape.get(3), concord.InvalidArgumentError), where(kv, f"wrong shape: {wrong_shape}")
        assert "[5]" in str(wrong_shape[3]) and "[6]" in str(wrong_shape[3]), where(kv, str(wrong_shape[3]))
        assert not recovered, where(kv, f"after the errors: {recovered}")
        assert np.array_equal(out, np.full(6, P * (P + 1) / 2, np.float32)), where(kv, f"after the errors: {out}")
        kv.barrier()


def test_bad_arguments():
    with pytest.raises(ValueError, match="unknown type"):
        KVStore("nccl")
    with pytest.raises(ValueError, match="unknown op"):
        KVStore("funneled", op="mean")
    with KVStore("funneled") as kv:
        kv.init(1, np.zeros(3, np.float32))
        with pytest.raises(TypeError, match="numpy.ndarray or torch.Tensor"):
            kv.push(1, [1.0, 2.0, 3.0])
        with pytest.raises(concord.InvalidArgumentError, match="holds float32 \\[3\\]"):
            kv.pull(1, np.zeros(4, np.float32))
        with pytest.raises(concord.InvalidArgumentError, match="never initialised"):
            kv.pull(2, np.zeros(3, np.float32))
    with pytest.raises(concord.StateError, match="after close"):
        kv.pull(1, np.zeros(3, np.float32))
