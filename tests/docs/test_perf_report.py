"""tools/report/perf_report.py and tools/report/perf_tables.py on synthetic raw results: the markers check
refuses broken pages, --check refuses a table that drifted from its data, and the tables
take medians over runs and ratios inside each run (ctest docs.perf_report)."""

import argparse
import json
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools", "report"))
import perf_report  # noqa: E402
import perf_tables  # noqa: E402


def write(path, value):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as out:
        json.dump(value, out)


def meta(topic, names):
    return {"topic": topic, "quick": False, "repeats": 3, "started": "2026-01-01 00:00 UTC", "commit": "abc1234",
            "cores": 2, "commands": [{"name": n, "command": "x", "env": {}, "status": 0, "seconds": 1.0,
                                      "load_start": 0.5, "load_end": 1.5} for n in names]}


def page_with_every_table():
    return "# Page\n\n" + "\n\n".join("\n".join(perf_report.markers(name)) for name in perf_tables.TABLES) + "\n"


@pytest.fixture
def data(tmp_path):
    """Three runs at 2 ranks; in run 3 Gloo is slow (ratio 4) and Concord's in-place time
    differs, so medians and per-run ratios give other numbers than ratios of medians."""
    root = tmp_path / "data"
    runs = [(10e-6, 20e-6), (12e-6, 24e-6), (30e-6, 120e-6)]  # (in place, gloo) seconds at 4 B
    for i, (in_place, gloo) in enumerate(runs, 1):
        write(str(root / "collectives" / f"latency_np2_small_r{i}.json"),
              {"latency": [{"bytes": 4, "in_place": in_place, "out_of_place": 2 * in_place, "gloo": gloo,
                            "mpi4py": float("nan")}]})
    write(str(root / "collectives" / "meta.json"), meta("collectives", [f"latency_np2_small_r{i}" for i in (1, 2, 3)]))
    return str(root)


def test_markers_all_present_passes():
    assert perf_report.check_markers(page_with_every_table()) == []


@pytest.mark.parametrize("damage", ["drop_end", "duplicate_begin", "swap", "unknown"])
def test_markers_damage_is_reported(damage):
    page = page_with_every_table()
    begin, end = perf_report.markers("training")
    if damage == "drop_end":
        page = page.replace(end, "")
    elif damage == "duplicate_begin":
        page = page.replace(begin, begin + "\n" + begin)
    elif damage == "swap":
        page = page.replace(begin, "@@").replace(end, begin).replace("@@", end)
    else:
        page += "<!-- perf_report: begin nonsense -->\n<!-- perf_report: end nonsense -->\n"
    problems = perf_report.check_markers(page)
    assert problems, f"damage {damage} not reported"
    assert any(("training" if damage != "unknown" else "nonsense") in p for p in problems), problems


def test_collectives_median_of_runs_and_ratio_inside_each_run(data):
    table = perf_tables.TABLES["collectives_np2"](data)
    row = next(line for line in table.splitlines() if line.startswith("| 4 B"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "12.0 us", row  # median in-place time of 10, 12, 30 us
    assert cells[3] == "24.0 us", row  # median Gloo time of 20, 24, 120 us
    # per-run ratios 2, 2, 4: median 2.00, smallest 2.00 (the ratio of the medians would be 2.00
    # too, but the largest run ratio must not leak in as the minimum)
    assert cells[5] == "2.00 (2.00)", row
    assert cells[4] == "-", row  # mpi4py missing (NaN) is shown as "-", not "nan"
    assert "3 runs" in table and "load 0.5-1.5" in table


def test_transport_fastest_per_run_alternating_runs(tmp_path):
    """Per size: the algorithm fastest in most runs, the median of the runs' fastest times,
    and MPI / UCX taken within each pair of runs (a slow phase in one pair shows only as the
    smallest ratio)."""
    root = tmp_path / "data"
    # (mpi ring, mpi tree, ucx ring, ucx tree) in us at 256 KiB, per run; run 2 a slow phase for UCX
    times = [(30.0, 40.0, 20.0, 25.0), (31.0, 41.0, 60.0, 50.0), (29.0, 45.0, 22.0, 24.0)]
    names = []
    for run, (mr, mt, ur, ut) in enumerate(times, 1):
        for kind, ring, tree in (("mpi", mr, mt), ("ucx", ur, ut)):
            rows = [{"algorithm": a, "size": 262144, "in_place": True, "time": t}
                    for a, t in (("ring", ring), ("tree", tree), ("auto", 1.0))]
            rows.append({"algorithm": "ring", "size": 262144, "in_place": False, "time": 1.0})
            write(str(root / "transport" / f"{kind}_np2_r{run}.json"), {"results": rows})
            names.append(f"{kind}_np2_r{run}")
    write(str(root / "transport" / "meta.json"), meta("transport", names))
    table = perf_tables.TABLES["transport_np2"](str(root))
    row = next(line for line in table.splitlines() if line.startswith("| 256 KiB"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "ring, 30.0 us", row  # ring fastest in every MPI run; median of 30, 31, 29
    assert cells[2] == "ring, 22.0 us", row  # ring fastest in 2 of 3 UCX runs; median of 20, 50, 22
    assert cells[3] == "1.32 (0.62)", row  # per-pair ratios 1.50, 0.62, 1.32: "auto" and out of place left out


def test_missing_topic_says_how_to_measure(tmp_path):
    text = perf_tables.TABLES["training"](str(tmp_path))
    assert "scripts/perf_report.sh training" in text


def test_check_fails_when_a_table_drifted(data, tmp_path):
    page_path = tmp_path / "performance.md"
    page_path.write_text(perf_report.render_page(page_with_every_table(), data))
    assert perf_report.main(["--check", "--data", data, "--page", str(page_path)]) == 0
    page_path.write_text(page_path.read_text().replace("12.0 us", "11.0 us", 1))
    assert perf_report.main(["--check", "--data", data, "--page", str(page_path)]) == 1


def test_paper_results_parsing():
    text = ("\n== 1. Ok-Topk: < 6k words (P = 4) (load: 0.50 0.40 0.30)\n"
            "claim                                        | measured                           | baseline\n"
            "<= 6k words/rank/call from call 32 (reuse)   | worst 3.76k (cap eps=0.25)         | worst 15.30k\n"
            "plot: /tmp/x.png\n")
    sections = perf_tables.parse_paper_results(text)["sections"]
    assert sections[0]["load"] == "0.50 0.40 0.30"
    assert sections[0]["rows"] == [["<= 6k words/rank/call from call 32 (reuse)", "worst 3.76k (cap eps=0.25)",
                                    "worst 15.30k"]]
    assert sections[0]["notes"] == ["plot: /tmp/x.png"]


def test_fault_drill_parsing():
    text = ("scenario    seconds status  verdict\n"
            "kill           1.1    137  PASS: ended in 1.1 s, names rank 1\n"
            "           first error: [rank 0] CommError: rank 1 is gone\n"
            "stall         25.0      1  FAIL: took 25.0 s > 20 s\n")
    rows = perf_tables.parse_fault_drill(text)
    assert [(r["scenario"], r["passed"]) for r in rows] == [("kill", True), ("stall", False)]
    assert rows[0]["first_error"] == "[rank 0] CommError: rank 1 is gone"


def test_runner_starts_each_topic_afresh(tmp_path):
    """A topic's folder holds one run's results only: files and folders of an earlier run
    (soak's per-rank logs are a folder) are removed before the new one starts."""
    folder = tmp_path / "data" / "soak"
    (folder / "soak_logs").mkdir(parents=True)
    (folder / "soak_logs" / "rank0.stderr").write_text("old")
    (folder / "soak_np4.json").write_text("{}")
    perf_report.Runner(argparse.Namespace(data=str(tmp_path / "data")), "soak")
    assert list(folder.iterdir()) == []
