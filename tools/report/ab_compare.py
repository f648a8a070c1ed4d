#!/usr/bin/env python3
"""Before/after timings of two builds in one run: the same benchmarks, alternating between
the builds round by round, so that the load of a shared machine hits both alike. For a
change that must not slow anything down (a refactor), the ratios after / before should be
1 within the noise (the spread of the rounds, printed beside them).

Usage: tools/report/ab_compare.py BEFORE_BUILD AFTER_BUILD [--rounds 3] [--ranks 2] [--json OUT]
  BUILD  a build directory with an installed prefix (<build>/prefix: concord-bench and the
         Python package), e.g. one made by scripts/setup.sh in a worktree of the old commit.
Benchmarks per round and build: concord-bench -a all (allreduce, in place, 4 B .. 64 MiB by
16, at least 0.1 s per row), tools/torch/latency_bench.py's latency (4 B .. 64 KiB) and iteration
(150 tensors) sections, and tools/torch/iteration_bench.py's plain DistributedOptimizer. The
benchmark scripts are this checkout's; each build's own package and tools are used.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYTHON = "/usr/bin/python3"


def run(build, ranks, argv, json_path):
    """Runs `argv` under scripts/mpirun.sh with `ranks` ranks and `build`'s Python package;
    returns the JSON it wrote to `json_path`. Exits naming the command when it fails."""
    env = dict(os.environ, PYTHONPATH=os.path.join(build, "prefix", "lib", "python3", "dist-packages"))
    command = [os.path.join(ROOT, "scripts", "mpirun.sh"), "-np", str(ranks), *argv]
    done = subprocess.run(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode != 0:
        raise SystemExit(f"ab_compare: {' '.join(command)} failed:\n{done.stdout[-3000:]}")
    with open(json_path, encoding="utf-8") as f:
        return json.load(f)


def measure(build, ranks, scratch):
    """{metric: seconds} of one round on `build`."""
    metrics = {}
    bench = run(build, ranks, [os.path.join(build, "prefix", "bin", "concord-bench"), "-C", "allreduce", "-a", "all",
                               "-b", "4", "-e", "64M", "-f", "16", "-T", "0.1", "-J", f"{scratch}/bench.json"],
                f"{scratch}/bench.json")
    for r in bench["results"]:
        if r["in_place"] and r.get("time", 0) > 0:
            metrics[f"bench {r['algorithm']} {r['size']} B"] = r["time"] * 1e-6
    latency = run(build, ranks, [PYTHON, "tools/torch/latency_bench.py", "--sections", "latency,iteration",
                                 "--max-bytes", "65536", "--iters", "100", "--iteration-iters", "60", "--json",
                                 f"{scratch}/latency.json"], f"{scratch}/latency.json")
    for row in latency["latency"]:
        metrics[f"hvd.allreduce_ {row['bytes']} B"] = row["in_place"]
    metrics["150-tensor iteration"] = latency["iteration"]["concord"]
    training = run(build, ranks, [PYTHON, "tools/torch/iteration_bench.py", "--layers", "4", "--width", "1024",
                                  "--iters", "5", "--warmup", "2", "--modes", "plain", "--algorithms", "auto", "--json",
                                  f"{scratch}/training.json"], f"{scratch}/training.json")
    metrics["training iteration (plain)"] = training["rows"][0]["seconds"]
    return metrics


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--json", help="write every round's metrics here")
    args = parser.parse_args()
    rounds = {"before": [], "after": []}
    with tempfile.TemporaryDirectory() as scratch:
        for i in range(args.rounds):
            order = ("before", "after") if i % 2 == 0 else ("after", "before")  # neither always first
            for label in order:
                rounds[label].append(measure(os.path.abspath(getattr(args, label)), args.ranks, scratch))
                print(f"ab_compare: round {i + 1} {label} done, load {os.getloadavg()[0]:.1f}", flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"ranks": args.ranks, "rounds": rounds}, f, indent=1)
    print(f"{'metric':<44} {'before':>10} {'after':>10} {'after/before':>12} {'per-round ratios':>24}")
    for metric in rounds["after"][0]:
        if not all(metric in r for r in rounds["before"] + rounds["after"]):
            continue
        before = statistics.median(r[metric] for r in rounds["before"])
        after = statistics.median(r[metric] for r in rounds["after"])
        ratios = [a[metric] / b[metric] for a, b in zip(rounds["after"], rounds["before"])]
        print(f"{metric:<44} {before * 1e6:9.1f}u {after * 1e6:9.1f}u {after / before:12.2f} "
              f"{' '.join(f'{x:.2f}' for x in ratios):>24}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
