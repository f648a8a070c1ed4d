#!/usr/bin/env python3
"""Plots Ok-Topk's words sent per rank per call over time (scripts/paper_results.sh
step 1).

Reads concord-sparsebench JSON files (-J, which hold every timed call of every algorithm)
and/or train_digits.py --sparse-log files (one JSON object per line: step, u_over_k,
k_words) and draws, for each file's Ok-Topk row, k-words of the busiest rank per call
(top panel) and |U|/k (bottom panel) against the call number, with the 6k-word bound and
the re-evaluation calls marked. Labels are the file names, or LABEL=PATH.

    python3 tools/plot/plot_oktopk_calls.py cap=ok_eps0.25.json spec=ok_eps-1.json -o oktopk_calls.png

Raises SystemExit with a message when a file holds no Ok-Topk calls.
"""
import argparse
import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(path):
    """Returns (calls, k_words, u_over_k, reevaluation flags) of the file's Ok-Topk calls."""
    with open(path) as f:
        text = f.read()
    if text.lstrip().startswith("{\"ranks\"") or text.lstrip().startswith("{\n"):
        rows = [r for r in json.loads(text)["rows"] if r["algorithm"] == "oktopk" and r.get("calls")]
        if not rows:
            raise SystemExit(f"{path}: no oktopk row with per-call data (concord-sparsebench -a oktopk -J)")
        calls = rows[0]["calls"]
        return ([c["call"] for c in calls], [c["k_words"] for c in calls], [c["u_over_k"] for c in calls],
                [c["reevaluation"] for c in calls])
    steps = [json.loads(line) for line in text.splitlines() if line.strip()]
    if not steps:
        raise SystemExit(f"{path}: no steps")
    return ([s["step"] for s in steps], [s["k_words"] for s in steps], [s["u_over_k"] for s in steps],
            [False] * len(steps))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", help="[LABEL=]PATH of sparsebench JSON or --sparse-log files")
    parser.add_argument("-o", "--output", required=True, help="PNG to write")
    args = parser.parse_args()
    fig, (words_ax, size_ax) = plt.subplots(2, 1, figsize=(9, 7), sharex=True)
    for item in args.files:
        label, _, path = item.rpartition("=")
        label = label or os.path.basename(path)
        calls, words, sizes, reeval = load(path)
        line, = words_ax.plot(calls, words, label=label, linewidth=1)
        words_ax.scatter([c for c, r in zip(calls, reeval) if r], [w for w, r in zip(words, reeval) if r],
                         color=line.get_color(), marker="x", s=20)
        size_ax.plot(calls, sizes, label=label, linewidth=1, color=line.get_color())
    words_ax.axhline(6, color="black", linestyle="--", linewidth=1, label="6k-word bound")
    words_ax.set_ylabel("words sent per rank per call / k")
    words_ax.set_title("Ok-Topk volume per call (x: re-evaluation / repartition calls)")
    words_ax.legend(fontsize=8)
    size_ax.axhline(1, color="black", linestyle=":", linewidth=1)
    size_ax.set_ylabel("|U| / k")
    size_ax.set_xlabel("call (step)")
    fig.tight_layout()
    fig.savefig(args.output, dpi=100)


if __name__ == "__main__":
    main()
