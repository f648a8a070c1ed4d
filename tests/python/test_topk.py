"""concord._core's top-k bindings (python/bind_topk.cc) against numpy references.

Local computations only (no collectives), so every rank runs them independently.
"""

import numpy as np
import pytest

from concord import _core


def reference_topk(x, k):
    """Indices of the k largest |x| (ties: lower index), ascending: a stable sort."""
    order = np.argsort(-np.abs(x), kind="stable")
    return np.sort(order[: min(k, x.size)])


@pytest.mark.parametrize("n", [0, 1, 7, 1023, 100003])
@pytest.mark.parametrize("ties", [False, True])
def test_topk_exact_matches_sort(n, ties):
    rng = np.random.default_rng(n + ties)
    if ties:
        x = (rng.integers(-3, 4, size=n) * 0.5).astype(np.float32)
    else:
        x = rng.standard_normal(n).astype(np.float32)
    for k in sorted({0, 1, n // 100, n // 2, n, n + 3}):
        got = _core.topk_exact(x, k)
        want = reference_topk(x, k)
        assert got.dtype == np.int64, f"n={n} k={k}: dtype {got.dtype}"
        assert np.array_equal(got, want), f"n={n} k={k} ties={ties}: first difference at " \
            f"{np.flatnonzero(got[: want.size] != want[: got.size])[:1]}"


def test_select_above_and_threshold():
    rng = np.random.default_rng(5)
    x = rng.standard_normal(50001).astype(np.float32)
    k = 500
    th = _core.kth_largest_magnitude(x, k)
    assert th == np.sort(np.abs(x))[-k], f"kth_largest_magnitude k={k}"
    assert np.array_equal(_core.select_above(x, th), np.flatnonzero(np.abs(x) >= th))
    assert np.array_equal(_core.select_above(x, th, strict=True), np.flatnonzero(np.abs(x) > th))
    assert np.array_equal(_core.select_above(x, th), _core.topk_exact(x, k))
    g = _core.gaussian_threshold(x, 0.01)
    count = np.count_nonzero(np.abs(x) >= g)
    assert 0.75 * k <= count <= 1.25 * k, f"gaussian_threshold {g}: {count} pass, k={k}"


def test_rejects_other_dtypes_and_bad_k():
    with pytest.raises(TypeError):
        _core.topk_exact(np.zeros(4, dtype=np.float64), 2)
    with pytest.raises(_core.InvalidArgumentError):
        _core.topk_exact(np.zeros(4, dtype=np.float32), -1)
    with pytest.raises(_core.InvalidArgumentError):
        _core.kth_largest_magnitude(np.zeros(4, dtype=np.float32), 5)
