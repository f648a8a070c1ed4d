#!/usr/bin/env python3
"""Training-iteration time of data-parallel SGD on one model, in one run (a benchmark, not a
test): Concord's plain DistributedOptimizer and its forward chaining
(``overlap_forward=True``, C-Cube; concord/torch/overlap.py; mode ``overlap`` with gradient
queuing in forward order, the default; ``overlap_eager`` with the allreduces started in
backward order, ``gradient_queuing=False``; ``overlap_priority`` with ByteScheduler's
credit-based priority scheduling, ``gradient_queuing="priority"``, ``--credit-mib``), each
with every allreduce
algorithm asked for (CONCORD_ALLREDUCE_ALGORITHM, switched by concord.shutdown()/init()
inside the run), against torch.nn.parallel.DistributedDataParallel on the Gloo backend (``ddp``) and on the
``"concord"`` torch.distributed backend (``ddp_concord``: the same DDP code on a group of every
rank run by Concord's runtime, concord.torch.process_group).
Two more modes give the C-Cube paper's reference points (its Fig. 13): ``after_backward``,
its baseline B: every gradient allreduced (``hvd.allreduce_async_``, all at once) only after
the whole backward pass, the forward pass waiting for all of them, so nothing overlaps; and
``compute``, the same iteration with no communication at all (one rank's compute time).
With both in the run, a summary line per algorithm gives the share of communication,
``1 - compute / after_backward``, and each mode's iteration time against ``after_backward``
and ``plain`` (negative: faster), and with ``tree`` and ``overlapped_tree`` both asked for, one
line compares the paper's C-Cube (``overlap`` on ``overlapped_tree``) with its B
(``after_backward`` on ``tree``).

The model is an MLP of ``--layers`` Linear(width, width) layers (default 8 x 2048 x 2048,
32 MiB of float32 gradients per layer), so communication is a large share of the step. An
iteration is zero_grad + forward + backward + step on a fixed batch; the time of ``--iters``
iterations after ``--warmup`` is divided by ``--iters`` (overlap's last pending update is
applied by finish() inside the timed region). The reported time is the slowest rank's.

Run (the launcher's rank variables give torch.distributed its rank and world size):
    scripts/mpirun.sh -np 4 /usr/bin/python3 tools/torch/iteration_bench.py
    scripts/mpirun.sh -np 2 /usr/bin/python3 tools/torch/iteration_bench.py --layers 2 --width 64 --iters 2
    scripts/mpirun.sh -np 2 /usr/bin/python3 tools/torch/iteration_bench.py --algorithms tree,overlapped_tree \
        --modes compute,after_backward,plain,overlap       # the C-Cube paper's comparison
Output: one row per configuration: mode, algorithm, ms/iter, ratio to DDP (lower is faster);
then the comparison lines ("# <algorithm>: ...", "# C-Cube, CC vs B: ...") when their modes ran.
"""

import argparse
import json
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

try:  # the installed package (PYTHONPATH=<build>/prefix/...), else the source tree's
    import concord.torch as hvd
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
    import concord.torch as hvd
from torch_launch import init_gloo, slowest  # noqa: E402


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", type=int, default=8, help="Linear layers (default 8)")
    parser.add_argument("--width", type=int, default=2048, help="features per layer (default 2048)")
    parser.add_argument("--batch", type=int, default=32, help="samples per rank per iteration (default 32)")
    parser.add_argument("--iters", type=int, default=10, help="timed iterations (default 10)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed iterations first (default 2)")
    parser.add_argument("--algorithms", default="ring,overlapped_tree",
                        help="CONCORD_ALLREDUCE_ALGORITHM values, comma-separated (default ring,overlapped_tree)")
    parser.add_argument("--modes", default="plain,overlap,overlap_eager,overlap_priority,ddp,ddp_concord",
                        help="plain, overlap, overlap_eager, overlap_priority, after_backward, compute, ddp, "
                             "ddp_concord, comma-separated (default: all but after_backward and compute)")
    parser.add_argument("--credit-mib", type=float, default=32,
                        help="overlap_priority's credit_bytes in MiB (default 32)")
    parser.add_argument("--port", type=int, default=29517, help="MASTER_PORT of the Gloo rendezvous")
    parser.add_argument("--json", metavar="PATH",
                        help="also write the rows here (rank 0; seconds per iteration; scripts/perf_report.sh)")
    return parser.parse_args(argv)


def make_model(args):
    torch.manual_seed(1234)
    layers = []
    for _ in range(args.layers):
        layers += [torch.nn.Linear(args.width, args.width), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers[:-1])


def make_batch(args, rank):
    generator = torch.Generator().manual_seed(rank + 1)
    x = torch.randn(args.batch, args.width, generator=generator)
    return x, torch.randint(0, args.width, (args.batch,), generator=generator)


def time_loop(args, model, optimizer, x, y, finish=None):
    """Seconds per iteration of zero_grad + forward + backward + step."""
    def iteration():
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()

    for _ in range(args.warmup):
        iteration()
    if finish is not None:
        finish()
    start = time.perf_counter()
    for _ in range(args.iters):
        iteration()
    if finish is not None:
        finish()
    return (time.perf_counter() - start) / args.iters


def run_concord(args, algorithm, mode, x, y):
    """Seconds per iteration of Concord in ``mode`` (plain, overlap, overlap_eager,
    overlap_priority)."""
    os.environ["CONCORD_ALLREDUCE_ALGORITHM"] = algorithm
    hvd.init()
    try:
        model = make_model(args)
        prefix = f"{mode}.{algorithm}"
        overlap = mode != "plain"
        optimizer = hvd.DistributedOptimizer(
            torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9),
            named_parameters=[(f"{prefix}.{n}", p) for n, p in model.named_parameters()],
            overlap_forward=overlap, model=model if overlap else None, gradient_queuing=QUEUING.get(mode, False),
            credit_bytes=int(args.credit_mib * 2**20))
        return time_loop(args, model, optimizer, x, y, finish=optimizer.finish if overlap else None)
    finally:
        hvd.shutdown()


class AfterBackward:
    """The C-Cube paper's baseline B around ``optimizer``: ``step`` allreduces (averages)
    every gradient, all submitted at once after the backward pass and all waited for, then
    steps; nothing overlaps with computation. ``prefix`` names the tensors."""

    def __init__(self, optimizer, named_parameters, prefix):
        self.optimizer = optimizer
        self.named = [(f"{prefix}.{name}", p) for name, p in named_parameters]

    def zero_grad(self):
        self.optimizer.zero_grad()

    def step(self):
        handles = [hvd.allreduce_async_(p.grad, name=name, op=hvd.Average) for name, p in self.named]
        for handle in handles:
            hvd.synchronize(handle)
        self.optimizer.step()


def run_after_backward(args, algorithm, x, y):
    """Seconds per iteration of the paper's baseline B (``AfterBackward``) on ``algorithm``."""
    os.environ["CONCORD_ALLREDUCE_ALGORITHM"] = algorithm
    hvd.init()
    try:
        model = make_model(args)
        optimizer = AfterBackward(torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9),
                                  model.named_parameters(), f"after_backward.{algorithm}")
        return time_loop(args, model, optimizer, x, y)
    finally:
        hvd.shutdown()


def run_compute(args, x, y):
    """Seconds per iteration with no communication (this rank's compute alone)."""
    model = make_model(args)
    return time_loop(args, model, torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9), x, y)


def summary(rows, algorithm):
    """The comparison line of ``algorithm``'s rows, or None without after_backward and compute.
    ``rows``: (mode, algorithm, seconds per iteration) tuples; compute's algorithm is "-"."""
    times = {mode: seconds for mode, algo, seconds in rows if algo in (algorithm, "-")}
    if "after_backward" not in times or "compute" not in times:
        return None
    base = times["after_backward"]
    parts = [f"communication {100 * (1 - times['compute'] / base):.0f}% of after_backward"]
    for mode in ("plain", *QUEUING):
        if mode in times:
            versus = f"{100 * (times[mode] / base - 1):+.1f}% vs after_backward"
            if mode != "plain" and "plain" in times:
                versus += f", {100 * (times[mode] / times['plain'] - 1):+.1f}% vs plain"
            parts.append(f"{mode} {versus}")
    return f"# {algorithm}: " + "; ".join(parts)


def paper_line(rows):
    """The paper's headline comparison, CC (overlap, i.e. gradient queuing, on the overlapped
    tree) against B (after_backward on the tree), or None without both rows. ``rows``: (mode,
    algorithm, seconds per iteration) tuples."""
    times = {(mode, algo): seconds for mode, algo, seconds in rows}
    cc, base = times.get(("overlap", "overlapped_tree")), times.get(("after_backward", "tree"))
    if cc is None or base is None:
        return None
    return f"# C-Cube, CC vs B: overlap on overlapped_tree {100 * (cc / base - 1):+.1f}% vs after_backward on tree"


# DistributedOptimizer's gradient_queuing per overlap mode.
QUEUING = {"overlap": True, "overlap_eager": False, "overlap_priority": "priority"}


def run_ddp(args, x, y, group=None):
    """Seconds per iteration of DDP on ``group`` (None: the default group, Gloo)."""
    model = torch.nn.parallel.DistributedDataParallel(make_model(args), process_group=group)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    return time_loop(args, model, optimizer, x, y)


def run_ddp_concord(args, x, y):
    """Seconds per iteration of DDP on the "concord" backend: ``new_group(backend="concord")``
    starts Concord's runtime (every rank), which is shut down afterwards."""
    try:
        return run_ddp(args, x, y, dist.new_group(backend="concord"))
    finally:
        hvd.shutdown()


def main(argv=None):
    args = parse_args(argv)
    rank, size = init_gloo(args.port)
    modes = [m for m in args.modes.split(",") if m]
    unknown = set(modes) - {"plain", "ddp", "ddp_concord", "after_backward", "compute", *QUEUING}
    if unknown:
        raise SystemExit(f"iteration_bench: unknown modes {sorted(unknown)}")
    x, y = make_batch(args, rank)
    rows = []
    load_start = os.getloadavg()[0]
    if "ddp" in modes:
        rows.append(("ddp", "gloo", slowest(run_ddp(args, x, y))))
    if "ddp_concord" in modes:
        rows.append(("ddp_concord", "-", slowest(run_ddp_concord(args, x, y))))
    if "compute" in modes:
        rows.append(("compute", "-", slowest(run_compute(args, x, y))))
    algorithms = [a for a in args.algorithms.split(",") if a]
    for algorithm in algorithms:
        if "after_backward" in modes:
            rows.append(("after_backward", algorithm, slowest(run_after_backward(args, algorithm, x, y))))
        for mode in ("plain", *QUEUING):
            if mode in modes:
                rows.append((mode, algorithm, slowest(run_concord(args, algorithm, mode, x, y))))
    if rank == 0:
        megabytes = sum(p.numel() for p in make_model(args).parameters()) * 4 / 2**20
        print(f"# iteration_bench: {size} ranks, {args.layers} x Linear({args.width}, {args.width}), "
              f"{megabytes:.1f} MiB of gradients, batch {args.batch}, {args.iters} iterations "
              f"after {args.warmup} warm-up")
        ddp = next((seconds for mode, _, seconds in rows if mode == "ddp"), None)
        print(f"{'mode':>16} {'algorithm':>16} {'ms/iter':>10} {'vs DDP':>8}")
        for mode, algorithm, seconds in rows:
            ratio = f"{seconds / ddp:8.2f}" if ddp else f"{'-':>8}"
            print(f"{mode:>16} {algorithm:>16} {seconds * 1e3:10.2f} {ratio}")
        for algorithm in algorithms:
            line = summary(rows, algorithm)
            if line:
                print(line)
        line = paper_line(rows)
        if line:
            print(line)
        if args.json:
            with open(args.json, "w", encoding="utf-8") as out:
                json.dump({"ranks": size, "layers": args.layers, "width": args.width, "batch": args.batch,
                           "iters": args.iters, "warmup": args.warmup, "gradient_mib": megabytes,
                           "load_start": load_start, "load_end": os.getloadavg()[0],
                           "rows": [{"mode": m, "algorithm": a, "seconds": s} for m, a, s in rows]}, out, indent=1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
