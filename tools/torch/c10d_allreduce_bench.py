#!/usr/bin/env python3
"""Time of ``torch.distributed.all_reduce`` (SUM, float32, synchronous) on the ``"concord"``
backend and on Gloo, in the same processes (a benchmark, not a test).

The default group is concord (file:// store, MPI's rank and size); a Gloo group of every
rank is created beside it, so both backends see the same processes, memory and load. For
each size, ``--warmup`` calls then ``--iters`` timed calls per backend, alternating the
backends in rounds of ``--round`` calls so that a load change on the shared host hits
both; the time per call is the median over rounds of the round's mean, the slowest rank's.

    scripts/mpirun.sh -np 2 /usr/bin/python3 tools/torch/c10d_allreduce_bench.py
    scripts/mpirun.sh -np 4 /usr/bin/python3 tools/torch/c10d_allreduce_bench.py --sizes 4,67108864 --iters 20
Output: one row per size: bytes, concord us/call, gloo us/call, gloo / concord.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import torch
import torch.distributed as dist

import concord.torch as hvd


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="4,67108864", help="message sizes in bytes, comma-separated")
    parser.add_argument("--iters", type=int, default=200, help="timed calls per size and backend (default 200)")
    parser.add_argument("--warmup", type=int, default=20, help="untimed calls first (default 20)")
    parser.add_argument("--json", metavar="PATH", help="also write the rows here (rank 0; seconds per call)")
    parser.add_argument("--round", type=int, default=10, help="calls per backend before switching (default 10)")
    return parser.parse_args(argv)


def time_round(tensor, group, calls):
    start = time.perf_counter()
    for _ in range(calls):
        dist.all_reduce(tensor, group=group)
    return (time.perf_counter() - start) / calls


def slowest(seconds):
    value = torch.tensor([seconds], dtype=torch.float64)
    dist.all_reduce(value, op=dist.ReduceOp.MAX)
    return value.item()


def main(argv=None):
    args = parse_args(argv)
    hvd.init()
    path = os.path.join(tempfile.mkdtemp(prefix="concord-c10d-bench-"), "store") if hvd.rank() == 0 else None
    path = hvd.broadcast_object(path, 0, name="bench_store_path")
    dist.init_process_group("concord", init_method=f"file://{path}", rank=hvd.rank(), world_size=hvd.size())
    backends = {"concord": None, "gloo": dist.new_group(backend="gloo")}
    rows = []
    for nbytes in [int(s) for s in args.sizes.split(",") if s]:
        tensor = torch.ones(max(1, nbytes // 4))
        calls = max(1, min(args.round, args.iters))
        iters = args.iters if nbytes < (1 << 20) else max(calls, args.iters // 10)
        for group in backends.values():
            time_round(tensor, group, max(1, args.warmup if nbytes < (1 << 20) else 2))
        means = {name: [] for name in backends}
        for _ in range(max(1, iters // calls)):
            for name, group in backends.items():
                means[name].append(time_round(tensor, group, calls))
        rows.append((nbytes, {name: slowest(statistics.median(values)) for name, values in means.items()}))
    if dist.get_rank() == 0:
        print(f"# c10d_allreduce_bench: {dist.get_world_size()} ranks, float32 SUM, synchronous dist.all_reduce")
        print(f"{'bytes':>10} {'concord us':>12} {'gloo us':>12} {'gloo/concord':>13}")
        for nbytes, times in rows:
            print(f"{nbytes:>10} {times['concord'] * 1e6:12.1f} {times['gloo'] * 1e6:12.1f} "
                  f"{times['gloo'] / times['concord']:13.2f}")
        if args.json:
            with open(args.json, "w", encoding="utf-8") as out:
                json.dump({"ranks": dist.get_world_size(), "iters": args.iters,
                           "rows": [{"bytes": nbytes, **times} for nbytes, times in rows]}, out, indent=1)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
