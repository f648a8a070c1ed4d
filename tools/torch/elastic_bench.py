#!/usr/bin/env python3
"""Elastic training's recovery time and commit cost, as the user meets them: concord-run's
elastic driver runs examples/train_digits_elastic.py on N workers and one worker SIGKILLs
itself at a step (its ``--fail`` drill); the recovery time is from the kill (the drill's
timestamp) to the first completed training step of the new world (rank 0's "first step"
line), detection, abort, rendezvous, state sync and the step itself included. Commit cost
is the example's median ``state.commit()`` time for the digits MLP. Repeated ``--repeat``
times; prints min and median. ``--cluster-hosts H`` runs it on H emulated hosts instead
(scripts/cluster.sh --launcher command with tests/elastic/cluster_elastic.sh: one worker per
host, 1 Gbit/s links; the worker on node1 is killed).

    python3 tools/torch/elastic_bench.py --np 4 --repeat 3 [--cluster-hosts 4] [--json out.json]
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
EXAMPLE = os.path.join(ROOT, "examples", "train_digits_elastic.py")


def one_run(np, step, extra, cluster_hosts=0):
    """(recovery seconds, commit median ms) of one job that loses worker 1 at ``step``."""
    slot = "node1:0" if cluster_hosts else "localhost:1"
    example = ["--epochs", "3", "--fail", f"{slot}@{step}"]
    if cluster_hosts:
        command = [os.path.join(ROOT, "scripts", "cluster.sh"), "-H", str(cluster_hosts), "--launcher", "command", "--",
                   os.path.join(ROOT, "tests", "elastic", "cluster_elastic.sh"), *example]
    else:
        command = [sys.executable, "-m", "concord.run", "-np", str(np), "--min-np", "2", *extra, sys.executable,
                   EXAMPLE, *example]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    output = result.stdout + result.stderr
    killed = re.search(rf"drill: {slot} .* at ([0-9.]+)", output)
    first = re.search(r"world 1: \d+ ranks, first step after [0-9.]+ s \(at ([0-9.]+)\)", output)
    commit = re.search(r"commit: median ([0-9.]+) ms", output)
    if result.returncode != 0 or not (killed and first and commit):
        raise RuntimeError(f"elastic run failed (exit {result.returncode}):\n{output[-3000:]}")
    return float(first.group(1)) - float(killed.group(1)), float(commit.group(1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--np", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--step", type=int, default=25, help="global step at which worker 1 is killed")
    parser.add_argument("--cluster-hosts", type=int, default=0, help="run on this many emulated hosts (--np ignored)")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("driver_args", nargs="*", help="more concord-run flags (after --)")
    args = parser.parse_args()
    if args.cluster_hosts:
        args.np = args.cluster_hosts
    runs = [one_run(args.np, args.step, args.driver_args, args.cluster_hosts) for _ in range(args.repeat)]
    recovery = [r for r, _ in runs]
    commit = [c for _, c in runs]
    row = {"np": args.np, "hosts": args.cluster_hosts or 1, "repeat": args.repeat, "recovery_s_min": min(recovery),
           "recovery_s_median": statistics.median(recovery), "commit_ms_min": min(commit),
           "commit_ms_median": statistics.median(commit), "load": os.getloadavg()[0]}
    print(f"{args.np} workers -> {args.np - 1}: recovery (kill to first step of the new world) min "
          f"{row['recovery_s_min']:.2f} s, median {row['recovery_s_median']:.2f} s; commit of the digits MLP "
          f"min {row['commit_ms_min']:.3f} ms, median {row['commit_ms_median']:.3f} ms; load {row['load']:.1f}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(row, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
