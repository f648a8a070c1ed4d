#!/usr/bin/env python3
"""Plots concord-sparsebench results against the number of ranks P.

Reads the JSON files that `concord-sparsebench -J file` wrote at several P (one file per
P, e.g. sparse_np2.json ... sparse_np16.json) and draws, per density, two panels: bytes
sent per rank (busiest rank, in units of k words, log scale) and time per call (slowest
rank, milliseconds, log scale) against P, one line per algorithm. Writes one PNG.

    python3 tools/plot/plot_sparse.py sparse_np*.json -o sparse.png

Raises SystemExit with a message when no file holds any row.
"""
import argparse
import json
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402


def load(paths):
    """Returns {density: {algorithm: [(P, k_words, time_ms), ...] sorted by P}} and n."""
    series = defaultdict(lambda: defaultdict(list))
    n = None
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        n = data.get("n", n)
        for row in data.get("rows", []):
            series[row["density"]][row["algorithm"]].append(
                (data["ranks"], row["k_words"], row["time_s"] * 1e3))
    for by_algorithm in series.values():
        for points in by_algorithm.values():
            points.sort()
    return series, n


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", help="concord-sparsebench JSON files (one per P)")
    parser.add_argument("-o", "--output", default="sparse.png", help="PNG to write")
    args = parser.parse_args(argv)
    series, n = load(args.files)
    if not series:
        raise SystemExit("plot_sparse.py: no rows in " + ", ".join(args.files))
    densities = sorted(series)
    fig, axes = plt.subplots(len(densities), 2, figsize=(11, 4 * len(densities)), squeeze=False)
    for row_axes, density in zip(axes, densities):
        words_ax, time_ax = row_axes
        for algorithm, points in sorted(series[density].items()):
            ranks = [p[0] for p in points]
            words_ax.plot(ranks, [p[1] for p in points], marker="o", label=algorithm)
            time_ax.plot(ranks, [p[2] for p in points], marker="o", label=algorithm)
        words_ax.set_yscale("log")
        time_ax.set_yscale("log")
        words_ax.set_title(f"bytes sent per rank, d = {density} (n = {n})")
        words_ax.set_ylabel("k words (4k bytes), busiest rank")
        time_ax.set_title(f"time per call, d = {density}")
        time_ax.set_ylabel("ms, slowest rank")
        for ax in row_axes:
            ax.set_xlabel("ranks P")
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.output, dpi=110)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
