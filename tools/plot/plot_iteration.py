#!/usr/bin/env python3
"""Plots the 150-tensor iteration of tools/torch/latency_bench.py over calls (docs/performance.md,
"150 small tensors per iteration"): the time of every iteration, slowest rank, for Concord and mpi4py,
with the warm-up (the transient) shaded and each one's steady-state median drawn.

Reads the JSON of ``latency_bench.py --sections iteration --iteration-series FILE``:
``{"warmup": W, "tensors": T, "elements": E, "ranks": [{"concord": [s, ...], "mpi4py":
[s, ...]}, ...]}`` (seconds per iteration, per rank, in call order).

    python3 tools/plot/plot_iteration.py series.json -o iteration.png

Raises SystemExit with a message when the file holds no iterations.
"""
import argparse
import json
import statistics

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def slowest_per_call(ranks, label):
    """Milliseconds of each iteration on the slowest rank (every rank times the same calls)."""
    per_rank = [r[label] for r in ranks if r.get(label)]
    if not per_rank:
        return []
    calls = min(len(times) for times in per_rank)
    return [1e3 * max(times[i] for times in per_rank) for i in range(calls)]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("series", help="the --iteration-series JSON of tools/torch/latency_bench.py")
    parser.add_argument("-o", "--output", default="iteration.png", help="PNG to write")
    args = parser.parse_args(argv)
    with open(args.series, encoding="utf-8") as f:
        data = json.load(f)
    warmup = data["warmup"]
    fig, ax = plt.subplots(figsize=(8, 4))
    plotted = False
    for label, color in (("concord", "tab:blue"), ("mpi4py", "tab:orange")):
        ms = slowest_per_call(data["ranks"], label)
        if not ms:
            continue
        plotted = True
        median = statistics.median(ms[warmup:]) if len(ms) > warmup else float("nan")
        ax.plot(range(len(ms)), ms, ".", ms=3, color=color, label=f"{label} (steady median {median:.2f} ms)")
        ax.axhline(median, color=color, lw=1)
    if not plotted:
        raise SystemExit(f"{args.series}: no iterations")
    ax.axvspan(0, warmup, color="0.9", label="warm-up (left out of the medians)")
    ax.set_xlabel("iteration (call order)")
    ax.set_ylabel("ms per iteration, slowest rank")
    ax.set_title(f"{data['tensors']} allreduces of {data['elements']} float32, {len(data['ranks'])} ranks")
    ax.set_ylim(bottom=0)
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(args.output, dpi=110)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
