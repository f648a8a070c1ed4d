"""The tables of docs/performance.md, each rendered from the raw results that
tools/report/perf_report.py keeps in <data>/<topic>/ (TABLES: name -> render(data) -> Markdown),
and the parsers of the tools whose results are text (paper_results.sh, fault_drill.py).

Conventions of every table: times are the slowest rank's median within a run, then the
median over the runs; a ratio "x / y" is taken inside each run (both measured in the same
processes, interleaved or back to back) and shown as the median over the runs with the
smallest in parentheses when there were several; > 1 means Concord is faster. busbw follows
nccl-tests (algbw x 2 (P - 1) / P for allreduce).
"""

import glob
import json
import math
import os
import re
import statistics

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _runs(data, topic, pattern):
    """The JSON of every file of <data>/<topic> whose name matches `pattern` (a regex, whole
    name), sorted by name."""
    folder = os.path.join(data, topic)
    names = sorted(n for n in os.listdir(folder) if re.fullmatch(pattern, n)) if os.path.isdir(folder) else []
    return [_load(os.path.join(folder, n)) for n in names]


def _meta(data, topic):
    path = os.path.join(data, topic, "meta.json")
    return _load(path) if os.path.exists(path) else None


def _shown(data, topic):
    """The data folder as the page names it (relative to the repository when inside it)."""
    folder = os.path.join(data, topic)
    inside = os.path.abspath(folder).startswith(ROOT + os.sep)
    return os.path.relpath(folder, ROOT) + "/" if inside else folder + "/"


def _caption(data, topic, prefix):
    """One line under a table: runs, date, commit, load range of the commands whose names
    start with `prefix`, and where the raw data and commands are."""
    meta = _meta(data, topic)
    commands = [c for c in meta["commands"] if c["name"].startswith(prefix)]
    loads = [c["load_start"] for c in commands] + [c["load_end"] for c in commands]
    load = f"load {min(loads):.1f}-{max(loads):.1f}" if loads else "no load recorded"
    quick = " (--quick: smoke-test sizes, not for reading)" if meta["quick"] else ""
    repeated = {m.group(1) for c in commands for m in [re.search(r"_r(\d+)$", c["name"])] if m}
    runs = f"{len(repeated)} runs" if len(repeated) > 1 else "1 run"
    return (f"*{runs}, {meta['started']}, commit {meta['commit']}, {meta['cores']} cores, "
            f"{load} (1-min average){quick}; commands and raw data: `{_shown(data, topic)}`.*")


def _missing(data, topic):
    return f"*Not measured yet: run `scripts/perf_report.sh {topic}` (no data in `{_shown(data, topic)}`).*"


def fmt_time(seconds):
    """A duration for a table cell: us below 1 ms, ms below 1 s, else s; '-' for none/NaN."""
    if seconds is None or (isinstance(seconds, float) and math.isnan(seconds)):
        return "-"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} us"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


def fmt_bytes(nbytes):
    """4 B, 64 KiB, 16 MiB ..."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if nbytes >= 1 << shift and nbytes % (1 << shift) == 0:
            return f"{nbytes >> shift} {unit}"
    return f"{nbytes} B"


def _median(values):
    values = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return statistics.median(values) if values else float("nan")


def fmt_ratio(ratios):
    """Median over the runs, the smallest in parentheses when there are several: '1.52 (1.48)'."""
    ratios = [r for r in ratios if r is not None and not math.isnan(r)]
    if not ratios:
        return "-"
    text = f"{statistics.median(ratios):.2f}"
    return text + (f" ({min(ratios):.2f})" if len(ratios) > 1 else "")


def _ratio(numerator, denominator):
    if numerator is None or denominator is None or math.isnan(numerator) or math.isnan(denominator) \
            or denominator <= 0:
        return float("nan")
    return numerator / denominator


def _table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def collectives(ranks):
    """Allreduce through concord.torch vs Gloo vs MPI at `ranks` ranks (latency_np<ranks>_*)."""
    def render(data):
        runs = {}  # run number -> rows of every size range
        folder = os.path.join(data, "collectives")
        for path in sorted(glob.glob(os.path.join(folder, f"latency_np{ranks}_*_r*.json"))):
            run = int(re.search(r"_r(\d+)\.json$", path).group(1))
            runs.setdefault(run, []).extend(_load(path)["latency"])
        if not runs:
            return _missing(data, "collectives")
        sizes = sorted({row["bytes"] for rows in runs.values() for row in rows})
        factor = 2 * (ranks - 1) / ranks
        body = []
        for size in sizes:
            rows = [row for rows in runs.values() for row in rows if row["bytes"] == size]
            in_place = _median([r["in_place"] for r in rows])
            body.append([fmt_bytes(size), fmt_time(in_place), fmt_time(_median([r["out_of_place"] for r in rows])),
                         fmt_time(_median([r["gloo"] for r in rows])), fmt_time(_median([r["mpi4py"] for r in rows])),
                         fmt_ratio([_ratio(r["gloo"], r["in_place"]) for r in rows]),
                         fmt_ratio([_ratio(r["mpi4py"], r["in_place"]) for r in rows]),
                         f"{size / in_place * factor / 1e9:.3f}"])
        header = ["size", "Concord in place", "Concord out of place", "Gloo", "MPI", "Gloo / Concord",
                  "MPI / Concord", "Concord busbw (GB/s)"]
        return _table(header, body) + "\n\n" + _caption(data, "collectives", f"latency_np{ranks}")
    return render


def algorithms(ranks):
    """Each allreduce algorithm alone (concord-bench -a all) at `ranks` ranks: the best, MPI's
    MPI_Allreduce, and what the runtime's selection picks (auto)."""
    def render(data):
        runs = _runs(data, "collectives", f"bench_np{ranks}\\.json")
        if not runs:
            return _missing(data, "collectives")
        results = [r for r in runs[0]["results"] if r["in_place"]]
        body = []
        for size in sorted({r["size"] for r in results}):
            at = {r["algorithm"]: r for r in results if r["size"] == size and r.get("time", 0) > 0}
            candidates = {name: r for name, r in at.items() if name not in ("auto", "runtime")}
            if not candidates:
                continue
            best = min(candidates, key=lambda name: candidates[name]["time"])
            auto = at.get("auto")
            mpi = at.get("mpi")
            body.append([fmt_bytes(size), best, fmt_time(candidates[best]["time"] * 1e-6),
                         fmt_time(mpi["time"] * 1e-6) if mpi else "-",
                         f"{mpi['time'] / candidates[best]['time']:.2f}" if mpi else "-",
                         auto.get("chosen", "-") if auto else "-",
                         f"{auto['time'] / candidates[best]['time']:.2f}" if auto else "-"])
        header = ["size", "fastest algorithm", "its time", "MPI_Allreduce", "MPI / fastest", "selection picks",
                  "picked / fastest"]
        return _table(header, body) + "\n\n" + _caption(data, "collectives", f"bench_np{ranks}")
    return render


def c10d(data):
    """dist.all_reduce on the concord backend vs Gloo, same processes (c10d_np*_r*): per size,
    the median time over the runs and the ratio's median (smallest)."""
    body = []
    for ranks in (2, 4):
        rows = [row for run in _runs(data, "collectives", f"c10d_np{ranks}_r\\d+\\.json") for row in run["rows"]]
        for size in sorted({row["bytes"] for row in rows}):
            at = [row for row in rows if row["bytes"] == size]
            body.append([ranks, fmt_bytes(size), fmt_time(_median([r["concord"] for r in at])),
                         fmt_time(_median([r["gloo"] for r in at])),
                         fmt_ratio([_ratio(r["gloo"], r["concord"]) for r in at])])
    if not body:
        return _missing(data, "collectives")
    return _table(["ranks", "size", "concord backend", "Gloo", "Gloo / concord"], body) + "\n\n" + \
        _caption(data, "collectives", "c10d_np")


def _fastest(run):
    """{size: (algorithm, us)} of the fastest of Concord's own algorithms, in place, in one
    concord-bench run (MPI's allreduce, the runtime and the selection rows left out)."""
    best = {}
    for r in run["results"]:
        if r["in_place"] and r.get("time", 0) > 0 and r["algorithm"] not in ("auto", "runtime", "mpi", "registry:mpi"):
            if r["size"] not in best or r["time"] < best[r["size"]][1]:
                best[r["size"]] = (r["algorithm"], r["time"])
    return best


def transport(world, topic="transport"):
    """The fastest algorithm alone over MPI and over UCX in the `world` runs (`np2`: 2 ranks
    on one host, transport topic; `h2`: 2 emulated hosts, cluster topic; `_r<run>`
    alternating): per size the algorithm fastest in most runs (ties: by name), the median of each run's
    fastest time, and the ratio's median (smallest) over the runs."""
    def render(data):
        runs = {kind: [_fastest(run) for run in _runs(data, topic, f"{kind}_{world}_r\\d+\\.json")]
                for kind in ("mpi", "ucx")}
        if not runs["mpi"] or not runs["ucx"]:
            return _missing(data, topic)
        pairs = list(zip(runs["mpi"], runs["ucx"]))
        body = []
        for size in sorted({size for m, u in pairs for size in m if size in u}):
            cells = []
            for kind in ("mpi", "ucx"):
                found = [run[size] for run in runs[kind] if size in run]
                names = [name for name, _ in found]
                fastest = max(sorted(set(names)), key=names.count)
                cells.append(f"{fastest}, {fmt_time(_median([t for _, t in found]) * 1e-6)}")
            ratios = [_ratio(m[size][1], u[size][1]) for m, u in pairs if size in m and size in u]
            body.append([fmt_bytes(size), *cells, fmt_ratio(ratios)])
        header = ["size", "over MPI: fastest, time", "over UCX: fastest, time", "MPI / UCX"]
        return _table(header, body) + "\n\n" + _caption(data, topic, "")
    return render


def runtime_iteration(data):
    """150 allreduces of 1,024 float32 per iteration, random order per rank (runtime_np*)."""
    body = []
    for ranks in (2, 4):
        runs = [r["iteration"] for r in _runs(data, "runtime", f"runtime_np{ranks}_r\\d+\\.json")]
        if not runs:
            continue
        body.append([ranks, fmt_time(_median([r["concord"] for r in runs])), fmt_time(_median([r["gloo"] for r in runs])),
                     fmt_time(_median([r["mpi4py"] for r in runs])),
                     fmt_ratio([_ratio(r["gloo"], r["concord"]) for r in runs]),
                     fmt_ratio([_ratio(r["mpi4py"], r["concord"]) for r in runs]),
                     f"{_median([r['rounds'] for r in runs]):.0f}",
                     f"{_median([r['submit_us_per_tensor'] for r in runs]):.1f}",
                     f"{_median([r['cpu_ms'] for r in runs]):.2f}"])
    if not body:
        return _missing(data, "runtime")
    header = ["ranks", "Concord", "Gloo", "MPI (mpi4py)", "Gloo / Concord", "MPI / Concord",
              "negotiation rounds", "submit (us/tensor)", "CPU (ms, busiest rank)"]
    return _table(header, body) + "\n\n" + _caption(data, "runtime", "runtime_np")


def runtime_outofplace(data):
    """Out of place vs in place vs the algorithm alone vs MPI, 2 ranks (runtime_np2_*)."""
    runs = [r["outofplace"] for r in _runs(data, "runtime", "runtime_np2_r\\d+\\.json") if "outofplace" in r]
    if not runs:
        return _missing(data, "runtime")
    body = []
    for size in sorted({row["bytes"] for rows in runs for row in rows}):
        rows = [row for rows in runs for row in rows if row["bytes"] == size and row["statistic"] == "median"]
        body.append([fmt_bytes(size), ", ".join(sorted({row["picked"] for row in rows})),
                     fmt_time(_median([r["out_of_place"] for r in rows])), fmt_time(_median([r["in_place"] for r in rows])),
                     fmt_time(_median([r["algorithm"] for r in rows])), fmt_time(_median([r["mpi4py"] for r in rows])),
                     fmt_ratio([_ratio(r["out_of_place"], r["in_place"]) for r in rows]),
                     fmt_ratio([_ratio(r["in_place"], r["algorithm"]) for r in rows]),
                     fmt_ratio([_ratio(r["mpi4py"], r["in_place"]) for r in rows])])
    header = ["size", "algorithm", "out of place", "in place", "algorithm alone", "MPI", "out of place / in place",
              "in place / alone", "MPI / in place"]
    return _table(header, body) + "\n\n" + _caption(data, "runtime", "runtime_np2")


def runtime_idle(data):
    """CPU of an initialised process that submits nothing (runtime_np2_*)."""
    runs = [r["idle"] for r in _runs(data, "runtime", "runtime_np2_r\\d+\\.json") if "idle" in r]
    if not runs:
        return _missing(data, "runtime")
    percents = [r["percent_of_core"] for r in runs]
    body = [[2, f"{runs[0]['seconds']:.0f} s", f"{statistics.median(percents):.2f}% ({max(percents):.2f}% at most)"]]
    return _table(["ranks", "idle for", "CPU, % of one core (busiest rank)"], body) + "\n\n" + \
        _caption(data, "runtime", "runtime_np2")


def training(data):
    """Seconds per training iteration, DistributedOptimizer and DDP on concord vs DDP on Gloo, and
    the iteration without communication, the bound on any speed-up (training_np*)."""
    body = []
    for ranks in (2, 4):
        runs = _runs(data, "training", f"training_np{ranks}_r\\d+\\.json")
        if not runs:
            continue
        times = [{row["mode"]: row["seconds"] for row in run["rows"]} for run in runs]
        first = runs[0]
        model = f"{first['layers']} x Linear({first['width']}), {first['gradient_mib']:.1f} MiB, batch {first['batch']}"
        body.append([ranks, model, fmt_time(_median([t["ddp"] for t in times])),
                     fmt_time(_median([t["plain"] for t in times])),
                     fmt_ratio([_ratio(t["ddp"], t["plain"]) for t in times]),
                     fmt_time(_median([t.get("ddp_concord") for t in times])),
                     fmt_ratio([_ratio(t["ddp"], t.get("ddp_concord", float("nan"))) for t in times]),
                     fmt_time(_median([t.get("compute") for t in times])),
                     fmt_ratio([_ratio(t["ddp"], t.get("compute", float("nan"))) for t in times])])
    if not body:
        return _missing(data, "training")
    header = ["ranks", "model (gradients)", "DDP on Gloo (per iteration)", "Concord DistributedOptimizer",
              "its throughput vs DDP on Gloo", "DDP on the concord backend", "its throughput vs DDP on Gloo",
              "no communication", "bound: DDP on Gloo / no communication"]
    return _table(header, body) + "\n\n" + _caption(data, "training", "training_np")


def parse_paper_results(text):
    """scripts/paper_results.sh's output as {"sections": [{"title", "load", "rows": [[claim,
    measured, baseline]], "notes": [other lines]}]}."""
    sections = []
    for line in text.splitlines():
        heading = re.match(r"== (.*) \(load: ([^)]*)\)$", line)
        if heading:
            sections.append({"title": heading.group(1), "load": heading.group(2), "rows": [], "notes": []})
        elif sections and line.count(" | ") == 2 and not line.startswith("claim "):
            sections[-1]["rows"].append([cell.strip() for cell in line.split(" | ")])
        elif sections and line.strip() and not line.startswith("claim "):
            sections[-1]["notes"].append(line.strip())
    return {"sections": sections}


def _paper_sections(data):
    runs = _runs(data, "papers", "paper_results\\.json")
    return runs[0]["sections"] if runs else None


def _turnaround_table(notes):
    """concord-turnaround's rows (bytes, algorithm, turnaround us, time us, time / turnaround,
    chunk bytes) among `notes`, as a table; None without any."""
    rows = [n.split() for n in notes]
    rows = [r for r in rows if len(r) == 6 and r[0].isdigit()]
    if not rows:
        return None
    body = [[fmt_bytes(int(r[0])), r[1], fmt_time(float(r[2]) * 1e-6), fmt_time(float(r[3]) * 1e-6), r[4]]
            for r in rows]
    return _table(["size", "algorithm", "first chunk final (turnaround)", "allreduce time", "time / turnaround"],
                  body)


def papers(data):
    """Every claim scripts/paper_results.sh checks, with what was measured and the baseline;
    C-Cube's turnaround rows as a table of their own, its forward-chaining summary lines."""
    sections = _paper_sections(data)
    if sections is None:
        return _missing(data, "papers")
    claims = [s for s in sections if "concord-sim" not in s["title"]]
    body = [[s["title"].split(" ")[0].rstrip("."), row[0], row[1], row[2], s["load"]] for s in claims
            for row in s["rows"]]
    text = _table(["step", "claim", "measured", "baseline", "load"], body)
    for s in claims:
        step = s["title"].split(" ")[0].rstrip(".")
        turnaround = _turnaround_table(s["notes"])
        if turnaround:
            text += f"\n\nStep {step}, {s['title'].split(' ', 1)[1]}:\n\n" + turnaround
        lines = [n for n in s["notes"] if not (n.startswith(("plot:", "wrote ", "mode ")) or
                                                 (len(n.split()) >= 3 and not n.startswith(("#", "testbed"))))]
        if lines:
            text += "\n\n" + "\n".join(f"- step {step}: {n.lstrip('# ')}" for n in lines)
    return text + "\n\n" + _caption(data, "papers", "paper_results")


def simulator(data):
    """concord-sim --validate's error against measured allreduce times (paper_results step 6)."""
    sections = _paper_sections(data)
    if sections is None:
        return _missing(data, "papers")
    six = [s for s in sections if "concord-sim" in s["title"]]
    if not six:
        return "*Not measured in this run (the emulated cluster was not available; see the papers' notes).*"
    body = []
    for note in six[0]["notes"]:
        match = re.match(r"P=(\d+): (.*)", note)
        if match:
            text = match.group(2)
            mean = re.search(r"points, mean \|relative error\| ([\d.]+%)", text)
            worst = re.search(r"worst size (.*?\))", text)
            sizes = re.search(r"by size: (.*?); worst", text)
            body.append([match.group(1), mean.group(1) if mean else "-", worst.group(1) if worst else "-",
                         sizes.group(1) if sizes else text.replace("|", "/")])
    return _table(["hosts", "mean error", "worst size", "mean error by size"], body) + "\n\n" + _caption(data, "papers", "paper_results")


def parse_fault_drill(text):
    """tools/torch/fault_drill.py's output as [{"scenario", "seconds", "status", "passed", "reason",
    "first_error"}]."""
    rows = []
    for line in text.splitlines():
        match = re.match(r"(\w+)\s+([\d.]+)\s+(\S+)\s+(PASS|FAIL): (.*)", line)
        if match:
            rows.append({"scenario": match.group(1), "seconds": float(match.group(2)), "status": match.group(3),
                         "passed": match.group(4) == "PASS", "reason": match.group(5), "first_error": ""})
        elif rows and line.strip().startswith("first error:"):
            rows[-1]["first_error"] = line.strip()[len("first error:"):].strip()
    return rows


def soak(data):
    """tools/torch/soak.py at 4 ranks: operations, rate, wrong results, errors, memory growth."""
    runs = _runs(data, "soak", "soak_np4\\.json")
    if not runs or runs[0] is None:
        return _missing(data, "soak")
    s = runs[0]
    body = [[s["ranks"], f"{s['seconds']:.0f} s", s["ops"], f"{s['ops_per_s']:.0f}", s["wrong"], s["errors"],
             s["warnings"], f"{max(s['rss_growth_mib']):.1f}"]]
    header = ["ranks", "ran for", "operations", "per second", "wrong results", "errors", "log warnings",
              "RSS growth (MiB, most of any rank)"]
    return _table(header, body) + "\n\n" + _caption(data, "soak", "soak")


def faults(data):
    """tools/torch/fault_drill.py at 4 ranks: seconds from the fault until the whole job ended."""
    runs = _runs(data, "soak", "fault_drill_np4\\.json")
    if not runs:
        return _missing(data, "soak")
    body = [[r["scenario"], f"{r['seconds']:.1f} s", r["status"], "yes" if r["passed"] else "**no**",
             r["first_error"][:120].replace("|", "/")] for r in runs[0]]
    header = ["fault (rank 1, step 5)", "job ended after", "exit status", "within limit, victim named",
              "first error line"]
    return _table(header, body) + "\n\n" + _caption(data, "soak", "fault_drill")


def elastic(data):
    """tools/torch/elastic_bench.py: recovery from a lost worker, and the cost of commit()."""
    runs = _runs(data, "elastic", "elastic_(np4|h4)\\.json")
    if not runs:
        return _missing(data, "elastic")
    header = ["where", "workers", "recovery: kill -> first step of the new world (min / median)",
              "commit() of the digits MLP (min / median)", "repetitions"]
    body = [["one host" if r.get("hosts", 1) == 1 else f"{r['hosts']} emulated hosts, 1 Gbit/s",
             f"{r['np']} -> {r['np'] - 1}", f"{r['recovery_s_min']:.2f} s / {r['recovery_s_median']:.2f} s",
             f"{r['commit_ms_min']:.3f} ms / {r['commit_ms_median']:.3f} ms", str(r["repeat"])]
            for r in sorted(runs, key=lambda r: r.get("hosts", 1))]
    # One command per row, which repeats the job itself: its repetitions are the runs.
    caption = _caption(data, "elastic", "elastic").replace("*1 run,", f"*{runs[0]['repeat']} runs per row,", 1)
    return _table(header, body) + "\n\n" + caption


TABLES = {
    "collectives_np2": collectives(2),
    "collectives_np4": collectives(4),
    "algorithms_np2": algorithms(2),
    "algorithms_np4": algorithms(4),
    "c10d": c10d,
    "transport_np2": transport("np2"),
    "transport_np4": transport("np4"),
    "cluster_h2": transport("h2", "cluster"),
    "cluster_h4": transport("h4", "cluster"),
    "runtime_iteration": runtime_iteration,
    "runtime_outofplace": runtime_outofplace,
    "runtime_idle": runtime_idle,
    "training": training,
    "papers": papers,
    "simulator": simulator,
    "soak": soak,
    "faults": faults,
    "elastic": elastic,
}
