#!/usr/bin/env python3
"""Regenerates the tables of docs/performance.md: runs each topic's benchmarks, keeps their raw
results in docs/data/<topic>/ (the tools' JSON and text output, meta.json with every command,
its wall time and the load average around it, and a README.md saying how they were made), and
rewrites every table between its generated markers. Called by scripts/perf_report.sh.

Usage: scripts/perf_report.sh [--quick] [--render | --check] [--data DIR] [--page FILE]
                              [--build DIR] [--repeats N] [topic ...]
  topic      collectives, transport, cluster, runtime, training, papers, soak (default: all)
  --quick    small sizes, one repeat, 2 ranks, the papers' steps that need no testbed: a smoke
             test of a few minutes (CI runs it). Writes into <build>/perf-quick/ (data and a
             copy of the page) unless --data / --page say otherwise, so the committed numbers
             stay those of a full run.
  --render   run nothing: rewrite the page's tables from the data as it is.
  --check    run nothing, write nothing: exit 1 when a marker pair is missing, repeated or
             out of order, or a table differs from what its data gives (ctest docs.perf_tables).
  --repeats  runs of each timed benchmark (default 3; --quick 1). Tables give the median of
             the runs and, for the ratios, the smallest run's ratio in parentheses; every
             ratio is taken inside one run, never across runs.

The full run is for a quiet machine: nothing else running (no build, no other benchmark).
Markers (one pair per table, `name` as in TABLES):
    <!-- perf_report: begin name -->   ...   <!-- perf_report: end name -->
"""

import argparse
import datetime
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools", "report"))
import perf_tables  # noqa: E402  (the renderers, one per table)

PYTHON = "/usr/bin/python3"
TOPICS = ("collectives", "transport", "cluster", "runtime", "training", "papers", "soak", "elastic")


class Runner:
    """Runs one topic's commands, keeping each one's output in <data>/<topic>/<name>.txt and a
    record of it (command, environment additions, exit status, seconds, load before and after)
    for meta.json."""

    def __init__(self, args, topic):
        self.args = args
        self.topic = topic
        self.dir = os.path.join(args.data, topic)
        self.commands = []
        self.started = datetime.datetime.now(datetime.timezone.utc)
        os.makedirs(self.dir, exist_ok=True)
        for name in os.listdir(self.dir):  # a topic's data is one run's, never a mix
            path = os.path.join(self.dir, name)
            shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)

    def path(self, name):
        """Absolute path of `name` in this topic's data folder."""
        return os.path.join(self.dir, name)

    def run(self, name, argv, env=None, timeout=1800, check=True):
        """Runs `argv` (list) from the repository root with `env` added to the environment;
        its stdout and stderr go to <name>.txt. Returns (exit status, output text). Raises
        RuntimeError when `check` and the status is not 0."""
        environment = dict(os.environ, PYTHONPATH=self.args.pythonpath, **(env or {}))
        load_start = os.getloadavg()[0]
        start = time.monotonic()
        try:
            done = subprocess.run(argv, cwd=ROOT, env=environment, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True, timeout=timeout)
            status, text = done.returncode, done.stdout
        except subprocess.TimeoutExpired as expired:
            status, text = "timeout", (expired.stdout or b"").decode(errors="replace")
        seconds = time.monotonic() - start
        with open(self.path(name + ".txt"), "w", encoding="utf-8") as out:
            out.write(text)
        shown = " ".join(shlex.quote(a) for a in argv).replace(ROOT + "/", "").replace(self.dir + "/", "")
        self.commands.append({"name": name, "command": shown, "env": env or {}, "status": status,
                              "seconds": round(seconds, 1), "load_start": round(load_start, 2),
                              "load_end": round(os.getloadavg()[0], 2)})
        print(f"perf_report: {self.topic}/{name}: {seconds:.0f} s, status {status}, "
              f"load {load_start:.1f} -> {os.getloadavg()[0]:.1f}", flush=True)
        if check and status != 0:
            raise RuntimeError(f"{self.topic}/{name} failed ({status}): {shown}\n{text[-3000:]}")
        return status, text

    def mpirun(self, ranks, *argv):
        """The argv of `argv` under scripts/mpirun.sh with `ranks` ranks."""
        return [os.path.join(ROOT, "scripts", "mpirun.sh"), "-np", str(ranks), *argv]

    def finish(self, description):
        """Writes meta.json and README.md: what ran, how, on what, and when."""
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, stdout=subprocess.PIPE,
                                text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               stdout=subprocess.PIPE, text=True).stdout.strip()
        meta = {"topic": self.topic, "quick": self.args.quick, "repeats": self.args.repeats,
                "started": self.started.strftime("%Y-%m-%d %H:%M UTC"), "commit": commit + ("+" if dirty else ""),
                "cores": os.cpu_count(), "commands": self.commands}
        with open(self.path("meta.json"), "w", encoding="utf-8") as out:
            json.dump(meta, out, indent=1)
        lines = [f"# {self.topic}: raw results", "", description, "",
                 f"Made by `scripts/perf_report.sh{' --quick' if self.args.quick else ''} {self.topic}` "
                 f"on {meta['started']} at commit {meta['commit']} ({meta['cores']} cores); "
                 f"{self.args.repeats} run(s) of each timed benchmark. Every command, from the "
                 "repository root, with its wall time and the 1-minute load average before and after "
                 "(also in meta.json); `<name>.txt` is its output, `<name>.json` its results:", ""]
        for c in self.commands:
            env = " ".join(f"{k}={v}" for k, v in c["env"].items())
            lines.append(f"- `{c['name']}`: `{(env + ' ') if env else ''}{c['command']}` "
                         f"({c['seconds']} s, load {c['load_start']} -> {c['load_end']}, status {c['status']})")
        with open(self.path("README.md"), "w", encoding="utf-8") as out:
            out.write("\n".join(lines) + "\n")


def run_collectives(r, a):
    """Allreduce through concord.torch against Gloo and MPI (tools/torch/latency_bench.py, latency
    section: all three in the same processes) and each algorithm alone (concord-bench -a all)."""
    ranks = (2,) if a.quick else (2, 4)
    # Small sizes: many repetitions; large ones: few (a 256 MiB Gloo allreduce takes seconds here).
    ranges = [("small", 4, 64 << 10, 20, 5)] if a.quick else [("small", 4, 1 << 20, 100, 10),
                                                              ("large", 4 << 20, 256 << 20, 4, 1)]
    for p in ranks:
        for run in range(1, a.repeats + 1):
            for label, low, high, iters, warmup in ranges:
                name = f"latency_np{p}_{label}_r{run}"
                r.run(name, r.mpirun(p, PYTHON, "tools/torch/latency_bench.py", "--sections", "latency", "--min-bytes",
                                     str(low), "--max-bytes", str(high), "--iters", str(iters), "--warmup",
                                     str(warmup), "--json", r.path(name + ".json")))
        for run in range(1, a.repeats + 1):
            name = f"c10d_np{p}_r{run}"
            r.run(name, r.mpirun(p, PYTHON, "tools/torch/c10d_allreduce_bench.py", "--sizes",
                                 "4,65536" if a.quick else "4,65536,67108864", "--iters", "20" if a.quick else "100",
                                 "--json", r.path(name + ".json")))
        name = f"bench_np{p}"
        high = "64K" if a.quick else "64M"
        r.run(name, r.mpirun(p, os.path.join(a.bin, "concord-bench"), "-C", "allreduce", "-a", "all", "-b", "4",
                             "-e", high, "-f", "16", "-T", "0.05" if a.quick else "0.2", "-R", str(a.repeats),
                             "-J", r.path(name + ".json")))
    r.finish("Allreduce (float32 sum) through `hvd.allreduce_` / `hvd.allreduce` against "
             "`dist.all_reduce` on Gloo and mpi4py's `Allreduce` (MPI_Allreduce), all in the same "
             "processes and sizes (`latency_np*`: seconds, slowest rank's median); `dist.all_reduce` on the "
             "concord backend and on Gloo in the same processes (`c10d_np*`, tools/torch/c10d_allreduce_bench.py, "
             "seconds per call); and every algorithm of the registry run alone by `concord-bench` "
             "(`bench_np*`, times in us).")


def run_transport(r, a):
    """Each allreduce algorithm alone over the MPI transport and over UCX (concord-bench),
    the two alternating run by run so that a change of the machine's speed hits both."""
    high = "64K" if a.quick else "64M"
    bench = [os.path.join(a.bin, "concord-bench"), "-C", "allreduce", "-a", "all", "-b", "4", "-e", high, "-f", "16",
             "-T", "0.05" if a.quick else "0.2"]
    for p in ((2,) if a.quick else (2, 4)):
        for run in range(1, a.repeats + 1):
            name = f"mpi_np{p}_r{run}"
            r.run(name, r.mpirun(p, *bench, "-J", r.path(name + ".json")), env={"CONCORD_TRANSPORT": "mpi"})
            name = f"ucx_np{p}_r{run}"
            r.run(name, [PYTHON, os.path.join(ROOT, "python", "concord", "local_launch.py"), "-np", str(p), *bench,
                         "-J", r.path(name + ".json")], env={"CONCORD_TRANSPORT": "ucx"})
    r.finish("Every allreduce algorithm of the registry alone (`concord-bench -a all`, in place, times in us) "
             "over the MPI transport under mpirun (`mpi_np*`) and over UCX started by `concord-run "
             "--launcher local` with a file store (`ucx_np*`), alternating run by run (`_r<run>`).")


def run_cluster(r, a):
    """Each allreduce algorithm alone over MPI and over UCX on the emulated hosts of
    scripts/cluster.sh (1 Gbit/s links), the two launchers alternating run by run."""
    high = "64K" if a.quick else "16M"
    bench = [os.path.join(a.bin, "concord-bench"), "-C", "allreduce", "-a", "all", "-b", "4", "-e", high, "-f", "16",
             "-T", "0.05" if a.quick else "0.2"]
    for hosts in ((2,) if a.quick else (2, 4)):
        for run in range(1, a.repeats + 1):
            for kind, launcher in (("mpi", "mpirun"), ("ucx", "store")):
                name = f"{kind}_h{hosts}_r{run}"
                status, text = r.run(name, [os.path.join(ROOT, "scripts", "cluster.sh"), "-H", str(hosts),
                                            "--launcher", launcher, "--", *bench, "-J", r.path(name + ".json")],
                                     check=False)
                if status == 77:  # no network namespaces here: nothing to measure
                    print(f"perf_report: cluster: skipped ({text.strip().splitlines()[-1]})", flush=True)
                    return
                if status != 0:
                    raise RuntimeError(f"cluster/{name} failed ({status}):\n{text[-3000:]}")
    r.finish("Every allreduce algorithm of the registry alone (`concord-bench -a all`, in place, times in us) "
             "on H emulated hosts of one rank each (scripts/cluster.sh, every host's egress shaped to 1 Gbit/s "
             "with tbf), over the MPI transport under mpirun (`mpi_h*`) and over UCX started by `cluster.sh "
             "--launcher store` with a TCP store (`ucx_h*`), alternating run by run (`_r<run>`).")


def run_runtime(r, a):
    """The runtime's per-call costs (tools/torch/latency_bench.py iteration, outofplace, idle)."""
    for p in ((2,) if a.quick else (2, 4)):
        for run in range(1, a.repeats + 1):
            name = f"runtime_np{p}_r{run}"
            sections = "iteration,outofplace,idle" if p == 2 else "iteration"
            extra = (["--iteration-iters", "20", "--oop-mib", "1", "--oop-iters", "5", "--idle-seconds", "2"]
                     if a.quick else ["--iteration-iters", "100", "--oop-mib", "1,16,64", "--oop-iters", "10",
                                      "--idle-seconds", "5"])
            r.run(name, r.mpirun(p, PYTHON, "tools/torch/latency_bench.py", "--sections", sections, *extra,
                                 "--json", r.path(name + ".json")))
    r.finish("The runtime's costs through `concord.torch` (tools/torch/latency_bench.py): an iteration of "
             "150 allreduces of 1,024 float32 in a random order per rank against Gloo and mpi4py "
             "(`iteration`), out of place vs in place vs the algorithm alone vs MPI at 1-64 MiB "
             "(`outofplace`), and the CPU an idle initialised process uses (`idle`). Seconds.")


def run_training(r, a):
    """Training-iteration time of DistributedOptimizer against DDP on Gloo (tools/torch/iteration_bench.py)."""
    model = ["--layers", "2", "--width", "256", "--iters", "2", "--warmup", "1"] if a.quick else \
        ["--layers", "4", "--width", "1024", "--iters", "6", "--warmup", "2"]
    for p in ((2,) if a.quick else (2, 4)):
        for run in range(1, a.repeats + 1):
            name = f"training_np{p}_r{run}"
            r.run(name, r.mpirun(p, PYTHON, "tools/torch/iteration_bench.py", *model, "--modes",
                                 "ddp,plain,ddp_concord,compute", "--algorithms", "auto", "--json",
                                 r.path(name + ".json")))
    r.finish("Seconds per training iteration (zero_grad + forward + backward + step) of an MLP, "
             "Concord's `DistributedOptimizer` (`plain`, the runtime's own algorithm choice) against "
             "`DistributedDataParallel` on Gloo (`ddp`) and on the concord backend (`ddp_concord`), and the "
             "iteration without communication (`compute`: the bound on any speed-up over DDP), in the same "
             "processes (tools/torch/iteration_bench.py).")


def run_papers(r, a):
    """The papers' claims on the emulated cluster (scripts/paper_results.sh)."""
    argv = [os.path.join(ROOT, "scripts", "paper_results.sh"), "--out", r.dir, "--build", a.build]
    if a.quick:
        argv.append("--no-testbed")
    _, text = r.run("paper_results", argv, timeout=5400)
    with open(r.path("paper_results.json"), "w", encoding="utf-8") as out:
        json.dump(perf_tables.parse_paper_results(text), out, indent=1)
    r.finish("scripts/paper_results.sh: each paper's claim, what was measured here and the baseline "
             "(its own README of steps is its --help); `paper_results.json` is its table parsed.")


def run_soak(r, a):
    """Soak (random checked collectives) and the fault drill (how a failed job ends)."""
    minutes = "0.2" if a.quick else "1"
    _, text = r.run("soak_np4", r.mpirun(4, PYTHON, "tools/torch/soak.py", "--minutes", minutes,
                                         "--log-dir", r.path("soak_logs")), check=False)
    summary = next((json.loads(line) for line in reversed(text.splitlines()) if line.startswith("{")), None)
    with open(r.path("soak_np4.json"), "w", encoding="utf-8") as out:
        json.dump(summary, out, indent=1)
    scenarios = ["kill"] if a.quick else ["kill", "stall", "exception"]
    _, text = r.run("fault_drill_np4", [PYTHON, "tools/torch/fault_drill.py", "-np", "4", *scenarios], check=False)
    with open(r.path("fault_drill_np4.json"), "w", encoding="utf-8") as out:
        json.dump(perf_tables.parse_fault_drill(text), out, indent=1)
    r.finish("tools/torch/soak.py (every collective, dtype and size drawn at random, every result checked "
             "exactly) for a fixed wall time at 4 ranks, and tools/torch/fault_drill.py (a rank killed, "
             "stalled or raising at step 5 of 1,000 allreduces): seconds until the job ended.")


def run_elastic(r, a):
    """Elastic training: a worker of 4 SIGKILLed mid-epoch, time to the new world's first step."""
    repeats = "1" if a.quick else str(a.repeats)
    r.run("elastic_np4", [PYTHON, "tools/torch/elastic_bench.py", "--np", "4", "--repeat", repeats,
                          "--json", r.path("elastic_np4.json")])
    r.run("elastic_h4", [PYTHON, "tools/torch/elastic_bench.py", "--cluster-hosts", "4", "--repeat", repeats,
                         "--json", r.path("elastic_h4.json")])
    r.finish("tools/torch/elastic_bench.py: concord-run's elastic driver runs examples/train_digits_elastic.py "
             "on 4 workers, on one host and on 4 emulated hosts (1 Gbit/s; scripts/cluster.sh --launcher command); worker 1 SIGKILLs itself at step 25; recovery = from the kill to the first "
             "completed step of the 3-worker world; commit = the median state.commit() of the digits MLP.")


RUNS = {"collectives": run_collectives, "transport": run_transport, "cluster": run_cluster, "runtime": run_runtime,
        "training": run_training, "papers": run_papers, "soak": run_soak, "elastic": run_elastic}


def markers(name):
    """The begin and end marker lines of table `name`."""
    return f"<!-- perf_report: begin {name} -->", f"<!-- perf_report: end {name} -->"


def check_markers(page):
    """Problems with the page's markers: each table of perf_tables.TABLES has one begin and
    one end marker, in that order, and no unknown table is marked. Returns messages."""
    problems = []
    for name in perf_tables.TABLES:
        begin, end = markers(name)
        if page.count(begin) != 1 or page.count(end) != 1:
            problems.append(f"table {name}: {page.count(begin)} begin and {page.count(end)} end markers (want 1 each)")
        elif page.index(begin) > page.index(end):
            problems.append(f"table {name}: end marker before its begin marker")
    for found in re.findall(r"<!-- perf_report: (?:begin|end) (\S+) -->", page):
        if found not in perf_tables.TABLES:
            problems.append(f"unknown table {found} marked")
    return problems


def render_page(page, data):
    """The page with every table between its markers rendered from `data`."""
    for name, render in perf_tables.TABLES.items():
        begin, end = markers(name)
        head, rest = page.split(begin, 1)
        _, tail = rest.split(end, 1)
        page = head + begin + "\n" + render(data).rstrip("\n") + "\n" + end + tail
    return page


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("topics", nargs="*", help=f"any of {', '.join(TOPICS)} (default: all)")
    parser.add_argument("--quick", action="store_true", help="smoke-test sizes (minutes)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--render", action="store_true", help="rewrite the tables from the data, run nothing")
    mode.add_argument("--check", action="store_true", help="check markers and tables against the data")
    parser.add_argument("--build", default=os.path.join(ROOT, "build"), help="build directory (default build)")
    parser.add_argument("--data", help="raw results (default docs/data; --quick: <build>/perf-quick/data)")
    parser.add_argument("--page", help="the page (default docs/performance.md; --quick: a copy in <build>/perf-quick)")
    parser.add_argument("--repeats", type=int, help="runs of each timed benchmark (default 3, --quick 1)")
    args = parser.parse_args(argv)
    unknown = [t for t in args.topics if t not in TOPICS]
    if unknown:
        parser.error(f"unknown topic(s) {unknown}; choose from {list(TOPICS)}")
    args.topics = args.topics or list(TOPICS)
    args.build = os.path.abspath(args.build)
    quick_dir = os.path.join(args.build, "perf-quick")
    page = os.path.join(ROOT, "docs", "performance.md")
    args.data = os.path.abspath(args.data or (os.path.join(quick_dir, "data") if args.quick else
                                              os.path.join(ROOT, "docs", "data")))
    if args.page is None and args.quick and not (args.render or args.check):
        os.makedirs(quick_dir, exist_ok=True)
        args.page = os.path.join(quick_dir, "performance.md")
        with open(page, encoding="utf-8") as src, open(args.page, "w", encoding="utf-8") as dst:
            dst.write(src.read())
    args.page = os.path.abspath(args.page or page)
    args.repeats = args.repeats or (1 if args.quick else 3)
    args.bin = os.path.join(args.build, "prefix", "bin")
    args.pythonpath = os.path.join(args.build, "prefix", "lib", "python3", "dist-packages")
    return args


def load_page(path):
    """The page's text, or None (after saying why on stderr) when its markers are broken."""
    with open(path, encoding="utf-8") as f:
        page = f.read()
    problems = check_markers(page)
    if problems:
        print("perf_report: " + "\n  ".join([f"{path}: broken markers:"] + problems), file=sys.stderr)
        return None
    return page


def main(argv=None):
    args = parse_args(argv)
    page = load_page(args.page)
    if page is None:
        return 1
    if args.check:
        rendered = render_page(page, args.data)
        if rendered != page:
            print(f"perf_report: {args.page}: tables differ from what {args.data} gives "
                  "(scripts/perf_report.sh --render rewrites them):", file=sys.stderr)
            import difflib
            sys.stderr.writelines(difflib.unified_diff(page.splitlines(True), rendered.splitlines(True),
                                                       "page", "from data", n=1))
            return 1
        print(f"perf_report: {len(perf_tables.TABLES)} tables match {os.path.relpath(args.data, ROOT)}")
        return 0
    if not args.render:
        if not os.path.exists(os.path.join(args.bin, "concord-bench")):
            print(f"perf_report: build first ({args.bin}/concord-bench missing: scripts/setup.sh)", file=sys.stderr)
            return 2
        for topic in args.topics:
            runner = Runner(args, topic)
            RUNS[topic](runner, args)
        page = load_page(args.page)  # as it is now: prose edited while the benchmarks ran is kept
        if page is None:
            return 1
    with open(args.page, "w", encoding="utf-8") as f:
        f.write(render_page(page, args.data))
    print(f"perf_report: tables rewritten in {args.page} from {args.data}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
