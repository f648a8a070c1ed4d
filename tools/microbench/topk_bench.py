#!/usr/bin/env python3
"""Top-k by magnitude: concord's topk_exact (python/bind_topk.cc -> src/sparse/topk.h)
next to torch.topk(x.abs(), k) and numpy's argpartition, on float32 N(0, 1) data.

    PYTHONPATH=build/prefix/lib/python3/dist-packages /usr/bin/python3 tools/microbench/topk_bench.py \
        [--sizes 1M,4M,16M,64M] [--density 0.01] [--iters 5] [--threads 1]

Per size n and k = max(1, floor(n * density)): the median milliseconds of `iters` calls
(after one untimed call) of
  concord   _core.topk_exact(x, k)                    exact, indices ascending
  torch     torch.topk(x.abs(), k, sorted=False)      includes the abs pass
  numpy     np.argpartition(-np.abs(x), k - 1)[:k]    includes the abs/negate passes
and the ratios torch/concord and numpy/concord (> 1: concord is faster). torch and numpy
results are checked against concord's: the same multiset of magnitudes (index sets may
differ only among ties). Exits 1 on a mismatch. --threads sets torch's intra-op threads
(1 = the single core concord uses).
"""

import argparse
import statistics
import sys
import time

import numpy as np
import torch

from concord import _core


def parse_size(text):
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:].upper(), 1)
    return int(float(text[:-1] if scale > 1 else text) * scale)


def median_ms(call, iters):
    call()  # warm-up (page faults, allocator)
    times = []
    for _ in range(iters):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1M,4M,16M,64M", help="element counts, K/M/G = 2^10/2^20/2^30")
    parser.add_argument("--density", type=float, default=0.01)
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    print(f"# topk_bench.py: float32 N(0,1), density {args.density}, median of {args.iters} calls (ms), "
          f"torch {torch.__version__} with {args.threads} thread(s), numpy {np.__version__}")
    print(f"{'n':>11} {'k':>9} {'concord':>9} {'torch':>9} {'numpy':>9} {'torch/concord':>14} {'numpy/concord':>14}")
    failures = 0
    for n in (parse_size(s) for s in args.sizes.split(",")):
        x = np.random.default_rng(n).standard_normal(n, dtype=np.float32)
        xt = torch.from_numpy(x)
        k = max(1, int(n * args.density))
        result = {}

        def run_concord():
            result["concord"] = _core.topk_exact(x, k)

        def run_torch():
            result["torch"] = torch.topk(xt.abs(), k, sorted=False).indices.numpy()

        def run_numpy():
            result["numpy"] = np.argpartition(-np.abs(x), k - 1)[:k]

        t_concord = median_ms(run_concord, args.iters)
        t_torch = median_ms(run_torch, args.iters)
        t_numpy = median_ms(run_numpy, args.iters)
        print(f"{n:>11} {k:>9} {t_concord:>9.3f} {t_torch:>9.3f} {t_numpy:>9.3f} "
              f"{t_torch / t_concord:>13.1f}x {t_numpy / t_concord:>13.1f}x", flush=True)
        want = np.sort(np.abs(x[result["concord"]]))
        for name in ("torch", "numpy"):
            got = np.sort(np.abs(x[result[name]]))
            if got.shape != want.shape or not np.array_equal(got, want):
                print(f"MISMATCH n={n} k={k}: {name}'s magnitudes differ from concord's", file=sys.stderr)
                failures += 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
