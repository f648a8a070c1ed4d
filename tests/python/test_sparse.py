"""concord._core.SparseAllreducer (python/bind_sparse.cc) under mpirun: Ok-Topk in exact
mode against a numpy reference that every rank computes from every rank's (deterministic)
accumulator, over several calls with residuals; the registry names; argument errors.

The allreducer's collectives all run before any assertion (conftest.py), so a failing check
on one rank cannot leave the others waiting.
"""

import numpy as np
import pytest

import concord.torch as hvd
from concord import _core


def gradient(rank, call, n):
    """Small integers (sums exact in float32) as a pure function of (rank, call, n)."""
    rng = np.random.default_rng(1000 * call + 17 * rank + n)
    return rng.integers(-40, 41, size=n).astype(np.float32)


def topk(x, k):
    """Indices of the k largest |x| (ties: lower index), ascending."""
    order = np.argsort(-np.abs(x), kind="stable")
    return np.sort(order[: min(k, x.size)])


def exact_reference(accs, k):
    """(G, U, residuals) of the spec's exact-mode semantics (../shared/specs/oktopk.md)."""
    P, n = len(accs), accs[0].size
    selected = [np.array([j for j in topk(a, k) if a[j] != 0], dtype=np.int64) for a in accs]
    reduced = np.zeros(n, dtype=np.float32)
    for a, s in zip(accs, selected):
        reduced[s] += a[s]
    support = np.flatnonzero(reduced)
    g = np.sort(support[topk(reduced[support], k)])
    u = reduced[g] / np.float32(P)
    residuals = []
    for a, s in zip(accs, selected):
        r = a.copy()
        r[np.intersect1d(s, g)] = 0
        residuals.append(r)
    return g, u, residuals


def test_names_list_oktopk_first():
    assert _core.sparse_allreduce_names()[0] == "oktopk"


@pytest.mark.parametrize("n", [0, 5, 1000])
def test_oktopk_exact_mode_matches_reference(n):
    P, rank = hvd.size(), hvd.rank()
    density = 0.02
    k = 0 if n == 0 else max(1, int(n * density))
    reducer = _core.SparseAllreducer("oktopk", density=density, exact=True, tau=2)
    assert reducer.name == "oktopk"
    accs = [np.zeros(n, dtype=np.float32) for _ in range(P)]
    failures = []
    for call in range(4):
        for q in range(P):
            accs[q] += gradient(q, call, n)
        g, u, residuals = exact_reference(accs, k)
        mine = accs[rank].copy()
        indices, values = reducer.allreduce(mine)
        if not np.array_equal(indices, g):
            failures.append(f"rank {rank}/{P} n={n} call={call}: G {indices[:8]} expected {g[:8]}")
        elif not np.array_equal(values, u):
            failures.append(f"rank {rank}/{P} n={n} call={call}: U differs at element "
                            f"{g[np.flatnonzero(values != u)[0]]}")
        if not np.array_equal(mine, residuals[rank]):
            failures.append(f"rank {rank}/{P} n={n} call={call}: residual differs at element "
                            f"{np.flatnonzero(mine != residuals[rank])[0]}")
        accs = residuals
    assert not failures, "\n".join(failures)


def test_rejects_bad_arguments():
    with pytest.raises(_core.InvalidArgumentError, match="density"):
        _core.SparseAllreducer("oktopk", density=0.0)
    with pytest.raises(_core.InvalidArgumentError, match="known"):
        _core.SparseAllreducer("no-such-algorithm")
    reducer = _core.SparseAllreducer("oktopk")
    with pytest.raises(_core.InvalidArgumentError, match="float32"):
        reducer.allreduce(np.zeros(8, dtype=np.float64))
    with pytest.raises(_core.InvalidArgumentError, match="contiguous"):
        reducer.allreduce(np.zeros((8, 2), dtype=np.float32)[:, 0])
