"""tools/torch/iteration_bench.py's comparison lines, from given rows: the share of communication
(1 - compute / after_backward), each mode against after_backward and plain, and the C-Cube
paper's CC (overlap on overlapped_tree) against its B (after_backward on tree)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "torch"))
import iteration_bench as bench  # noqa: E402

ROWS = [("ddp", "gloo", 3.0), ("compute", "-", 1.0), ("after_backward", "tree", 4.0), ("plain", "tree", 3.0),
        ("overlap", "tree", 3.5), ("after_backward", "overlapped_tree", 2.0), ("overlap", "overlapped_tree", 2.5)]


def test_summary_gives_the_share_of_communication_and_each_mode_against_both_baselines():
    assert bench.summary(ROWS, "tree") == (
        "# tree: communication 75% of after_backward; plain -25.0% vs after_backward; "
        "overlap -12.5% vs after_backward, +16.7% vs plain")
    assert bench.summary(ROWS, "overlapped_tree") == (
        "# overlapped_tree: communication 50% of after_backward; overlap +25.0% vs after_backward")


def test_summary_needs_after_backward_and_compute():
    assert bench.summary([row for row in ROWS if row[0] != "compute"], "tree") is None
    assert bench.summary([row for row in ROWS if row[0] != "after_backward"], "tree") is None


def test_paper_line_compares_cc_on_the_overlapped_tree_with_b_on_the_tree():
    assert bench.paper_line(ROWS) == "# C-Cube, CC vs B: overlap on overlapped_tree -37.5% vs after_backward on tree"
    assert bench.paper_line(ROWS[:5]) is None
