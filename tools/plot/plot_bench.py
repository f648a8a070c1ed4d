#!/usr/bin/python3
"""Plots concord-bench JSON results (written with -J): bus bandwidth (GB/s) against size
(bytes, log2 axis), one line per algorithm, one panel per world size P.

    /usr/bin/python3 tools/plot/plot_bench.py out_np2.json out_np4.json -o busbw.png [--out-of-place]

In-place rows are plotted by default (alltoall: out-of-place, the only rows every
algorithm has); --out-of-place plots those instead. Files of different collectives can be
mixed; each line is labelled "collective/algorithm" then.
"""
import argparse
import json
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


# The baseline and the model's choice stand out from the algorithms.
STYLES = {"mpi": {"color": "black", "linestyle": "--"}, "auto": {"color": "grey", "linestyle": ":"}}


def load(paths, out_of_place):
    """Returns {P: {label: [(size, busbw), ...]}} from the files' "results" lists."""
    rows = []
    for path in paths:
        with open(path) as f:
            rows.extend(json.load(f)["results"])
    collectives = {row["collective"] for row in rows}
    panels = defaultdict(lambda: defaultdict(list))
    for row in rows:
        in_place_wanted = not out_of_place and row["collective"] != "alltoall"
        if row["in_place"] != in_place_wanted:
            continue
        label = row["algorithm"] if len(collectives) == 1 else f'{row["collective"]}/{row["algorithm"]}'
        panels[row["P"]][label].append((row["size"], row["busbw"]))
    return panels


def plot(panels, output, title):
    ranks = sorted(panels)
    fig, axes = plt.subplots(1, len(ranks), figsize=(6 * len(ranks), 4.5), squeeze=False)
    for ax, p in zip(axes[0], ranks):
        for label, points in sorted(panels[p].items()):
            points.sort()
            style = STYLES.get(label.split("/")[-1], {})
            ax.plot([s for s, _ in points], [b for _, b in points], marker="o", markersize=3, label=label, **style)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("size (bytes)")
        ax.set_ylabel("busbw (GB/s)")
        ax.set_title(f"{title} P={p}" if title else f"P={p}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(output, dpi=120)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("json", nargs="+", help="concord-bench -J files")
    parser.add_argument("-o", "--output", default="busbw.png", help="PNG to write")
    parser.add_argument("--out-of-place", action="store_true", help="plot out-of-place rows")
    parser.add_argument("--title", default="", help="panel title prefix")
    args = parser.parse_args(argv)
    panels = load(args.json, args.out_of_place)
    if not panels:
        sys.exit("plot_bench.py: no results to plot in " + ", ".join(args.json))
    plot(panels, args.output, args.title)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main(sys.argv[1:])
