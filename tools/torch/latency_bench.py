#!/usr/bin/env python3
"""Per-call cost of the runtime, in one run (a benchmark, not a test): concord.torch against
torch.distributed on Gloo and mpi4py (MPI_Allreduce), all three in the same processes.

Sections (``--sections``, comma-separated, default all):
  latency    median time of one synchronous allreduce of float32, 4 B .. ``--max-bytes``
             (x4 steps): ``hvd.allreduce_`` (in place), ``hvd.allreduce`` (out of place),
             ``dist.all_reduce`` (Gloo), ``comm.Allreduce`` (mpi4py, in place).
  iteration  one "backward pass" of ``--tensors`` allreduces of ``--elements`` float32:
             Concord submits them in a different random order on every rank (the response
             cache and negotiation sort it out), then waits for all; Gloo and mpi4py cannot
             reorder, so they issue the same order on every rank (async ops, then wait).
             Concord's row also gives the breakdown: submit (Python wrapper + binding +
             enqueue, per tensor), wait, negotiation rounds per iteration, and the mean CPU
             time of the whole process (framework and background threads) per iteration,
             the busiest rank's: with more ranks than cores, the iteration cannot take
             less than ranks x that / cores. Concord and mpi4py alternate in blocks of 10
             iterations (``c/mpi4py`` is their ratio); ``--iteration-series`` writes every
             iteration's time for a plot over calls (tools/plot/plot_iteration.py).
  outofplace at each of ``--oop-mib`` MiB (default 1,4,16,64), float32 Sum, the calls
             interleaved one by one so that load changes hit them alike (the order
             rotating each round, so no variant always runs first): ``hvd.allreduce``
             (out of place, the result dropped each call), ``hvd.allreduce_`` (in place), the
             C++ algorithm the runtime picks (``runtime_choice``, asked after the runtime's
             warm-up calls have measured the size) run alone in place on its own communicator
             (``concord._bench.AlgorithmAllreducer``: what concord-bench times, no runtime) and mpi4py's
             MPI_Allreduce (in place), and the runtime's out-of-place call into a tensor
             that already exists (``into``: no result tensor to make); medians and minima
             of ``--oop-iters``, then the ratios out-of-place / in-place (target <= 1.15),
             in-place / algorithm (target <= 1.1), MPI / in-place, MPI / out-of-place
             (target >= 1.5 at >= 16 MiB, 2 ranks) and into / in-place.
  fusion     (not in the default list: it restarts concord.torch) at each of
             ``--fusion-kib`` KiB, a burst of max(8, min(64, 64 MiB / size)) tensors
             submitted together and waited for (float32 average), under three fusion
             settings: ``default`` (CONCORD_FUSION_MAX_TENSOR_BYTES at its default:
             tensors above it run unfused), ``fuse_all`` (0: every tensor fused up to
             CONCORD_FUSION_THRESHOLD, as Horovod does) and ``unfused``
             (CONCORD_FUSION_THRESHOLD=0); two passes over the settings, the second in
             reverse order, so drift hits them alike; medians of the ``--fusion-iters``
             bursts of both passes and the ratios to ``fuse_all``.
  idle       CPU time of this process (utime + stime from /proc/self/stat) while
             ``concord.torch`` is initialised and nothing is submitted for ``--idle-seconds``,
             as a percentage of one core (the background thread must block when idle).

Every time is the slowest rank's median over ``--iters`` repetitions after ``--warmup``.

Run (the launcher's rank variables give torch.distributed its rank and world size):
    scripts/mpirun.sh -np 2 /usr/bin/python3 tools/torch/latency_bench.py
    scripts/mpirun.sh -np 4 /usr/bin/python3 tools/torch/latency_bench.py --sections iteration
    scripts/mpirun.sh -np 2 /usr/bin/python3 tools/torch/latency_bench.py --sections outofplace
    scripts/mpirun.sh -np 2 /usr/bin/python3 tools/torch/latency_bench.py --sections fusion
"""

import argparse
import json
import os
import random
import resource
import statistics
import sys
import time

import numpy as np
import torch
import torch.distributed as dist

try:  # the installed package (PYTHONPATH=<build>/prefix/...), else the source tree's
    import concord.torch as hvd
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
    import concord.torch as hvd
try:  # (an install from before the package was cut by concept keeps them in mpi_ops)
    from concord.torch.collectives import _allreduce_into  # noqa: E402
    from concord.torch.handles import synchronize as _synchronize  # noqa: E402
except ImportError:
    from concord.torch.mpi_ops import _allreduce_into, synchronize as _synchronize  # noqa: E402
import concord  # noqa: E402
from torch_launch import init_gloo, launched_by_mpi, slowest  # noqa: E402

MPI = None  # without an MPI launcher (UCX under concord-run --launcher local) or mpi4py: its column says so
if launched_by_mpi():
    try:
        from mpi4py import MPI
    except ImportError:  # python3-mpi4py missing
        pass


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sections", default="latency,iteration,outofplace,idle")
    parser.add_argument("--min-bytes", type=int, default=4, help="smallest latency size (default 4 B)")
    parser.add_argument("--max-bytes", type=int, default=1 << 20, help="largest latency size (default 1 MiB)")
    parser.add_argument("--iters", type=int, default=200, help="timed repetitions per size (default 200)")
    parser.add_argument("--warmup", type=int, default=20, help="untimed repetitions first (default 20)")
    parser.add_argument("--tensors", type=int, default=150, help="tensors per iteration (default 150)")
    parser.add_argument("--elements", type=int, default=1024, help="float32 per tensor (default 1024)")
    parser.add_argument("--iteration-iters", type=int, default=300,
                        help="timed iterations after the warm-up (default 300)")
    parser.add_argument("--iteration-series", metavar="JSON",
                        help="write every rank's per-iteration times (Concord, mpi4py) here, for "
                             "tools/plot/plot_iteration.py")
    parser.add_argument("--oop-mib", default="1,4,16,64", help="outofplace sizes in MiB (default 1,4,16,64)")
    parser.add_argument("--oop-iters", type=int, default=30, help="outofplace timed rounds per size (default 30)")
    parser.add_argument("--fusion-kib", default="16,64,128,256,1024,16384",
                        help="fusion tensor sizes in KiB (default 16,64,128,256,1024,16384)")
    parser.add_argument("--fusion-iters", type=int, default=8, help="fusion timed bursts per size (default 8)")
    parser.add_argument("--idle-seconds", type=float, default=10.0, help="idle measurement (default 10 s)")
    parser.add_argument("--port", type=int, default=29533, help="MASTER_PORT of the Gloo rendezvous")
    parser.add_argument("--json", metavar="PATH",
                        help="also write every section's results here (rank 0; seconds; scripts/perf_report.sh)")
    return parser.parse_args(argv)


def median_seconds(args, call):
    """Median seconds of `call()` over args.iters after args.warmup, slowest rank."""
    for _ in range(args.warmup):
        call()
    dist.barrier()
    times = []
    for _ in range(args.iters):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return slowest(statistics.median(times))


def latency_rows(args):
    """One row per size: (bytes, in-place, out-of-place, gloo, mpi4py) medians in seconds."""
    rows = []
    nbytes = max(4, args.min_bytes // 4 * 4)
    while nbytes <= args.max_bytes:
        n = nbytes // 4
        tensor = torch.ones(n)
        array = np.ones(n, dtype=np.float32)
        name = f"lat.{nbytes}"
        in_place = median_seconds(args, lambda: hvd.allreduce_(tensor, name=name, op=hvd.Sum))
        out_of_place = median_seconds(args, lambda: hvd.allreduce(tensor, name=name + ".oop", op=hvd.Sum))
        gloo = median_seconds(args, lambda: dist.all_reduce(tensor))
        mpi = (median_seconds(args, lambda: MPI.COMM_WORLD.Allreduce(MPI.IN_PLACE, array, op=MPI.SUM))
               if MPI else float("nan"))
        rows.append((nbytes, in_place, out_of_place, gloo, mpi))
        nbytes *= 4
    return rows


def iteration_rows(args, rank):
    """Median ms per iteration of args.tensors allreduces, plus Concord's breakdown."""
    tensors = [torch.ones(args.elements) for _ in range(args.tensors)]
    arrays = [np.ones(args.elements, dtype=np.float32) for _ in range(args.tensors)]
    names = [f"iter.{i}" for i in range(args.tensors)]
    shuffler = random.Random(rank + 7)
    submit_times, wait_times, rounds, cpu_times = [], [], [], []

    def cpu_seconds():
        usage = resource.getrusage(resource.RUSAGE_SELF)  # every thread of this process
        return usage.ru_utime + usage.ru_stime

    def concord_iteration():
        order = list(range(args.tensors))
        shuffler.shuffle(order)
        before = concord.coordination_stats()["cycles"]
        cpu_start = cpu_seconds()
        start = time.perf_counter()
        handles = [hvd.allreduce_async_(tensors[i], name=names[i], op=hvd.Sum) for i in order]
        submitted = time.perf_counter()
        for handle in handles:
            hvd.synchronize(handle)
        end = time.perf_counter()
        cpu_times.append(cpu_seconds() - cpu_start)
        submit_times.append(submitted - start)
        wait_times.append(end - submitted)
        rounds.append(concord.coordination_stats()["cycles"] - before)

    def gloo_iteration():
        works = [dist.all_reduce(t, async_op=True) for t in tensors]
        for work in works:
            work.wait()

    def mpi_iteration():
        requests = [MPI.COMM_WORLD.Iallreduce(MPI.IN_PLACE, a, op=MPI.SUM) for a in arrays]
        MPI.Request.Waitall(requests)

    # Concord and mpi4py alternate in blocks of 10 iterations, so that a load change on this
    # shared machine hits both alike; the first `warmup` iterations of each are the
    # transient (kept in the series, left out of the medians). Gloo runs afterwards, fewer
    # times: with more ranks than cores it takes ~0.5 s per iteration.
    warmup = max(3, args.warmup)
    series = {"concord": [], "mpi4py": []}
    timed = [("concord", concord_iteration)] + ([("mpi4py", mpi_iteration)] if MPI else [])
    dist.barrier()
    while len(series["concord"]) < warmup + args.iteration_iters:
        for label, call in timed:
            for _ in range(10):
                start = time.perf_counter()
                call()
                series[label].append(time.perf_counter() - start)
    measured = slice(warmup, None)
    result = {label: slowest(statistics.median(times[measured])) for label, times in series.items() if times}
    result["submit_us_per_tensor"] = slowest(statistics.median(submit_times[measured])) / args.tensors * 1e6
    result["wait_ms"] = slowest(statistics.median(wait_times[measured])) * 1e3
    result["rounds"] = statistics.median(rounds[measured])
    result["cpu_ms"] = slowest(statistics.mean(cpu_times[measured])) * 1e3
    result["gloo"] = median_seconds(argparse.Namespace(iters=min(args.iteration_iters, 10), warmup=2), gloo_iteration)
    result.setdefault("mpi4py", float("nan"))
    if args.iteration_series:  # every rank's per-iteration seconds, for a plot over calls
        everyone = [None] * dist.get_world_size()
        dist.all_gather_object(everyone, series)
        if rank == 0:
            with open(args.iteration_series, "w", encoding="utf-8") as out:
                json.dump({"warmup": warmup, "tensors": args.tensors, "elements": args.elements,
                           "ranks": everyone}, out)
    return result


def algorithm_allreducer():
    """concord._bench.AlgorithmAllreducer (built with the tools), or None where the module is
    missing: an install older than the module (a "before" run) or one built without the
    tools has no algorithm column. Collective."""
    try:
        from concord import _bench
    except ImportError:
        try:  # installs from before the module existed kept the class in the extension
            return concord._core.AlgorithmAllreducer()
        except AttributeError:
            return None
    return _bench.AlgorithmAllreducer()


def out_of_place_rows(args):
    """Two rows per size: (statistic, bytes, algorithm name, {variant: slowest rank's
    seconds}), statistic "median" then "min" (the least disturbed call: on a loaded machine
    the median mostly measures scheduling delays).

    The runtime's variants run 3 rounds first (its measured selection settles), then all
    variants run interleaved, one call each per round, after 3 more warm-up rounds; the
    order rotates by one each round, so every variant runs equally often in every position
    (the first call after the non-runtime ones finds the background thread napping and its
    caches cold, which alone cost 10-25% at 1 MiB when the order was fixed).
    """
    allreducer = algorithm_allreducer()
    forced = os.environ.get("CONCORD_ALLREDUCE_ALGORITHM", "auto")
    rows = []
    for mib in [float(m) for m in args.oop_mib.split(",") if m]:
        n = int(mib * (1 << 20)) // 4
        tensor, target, alone, existing = torch.ones(n), torch.ones(n), torch.ones(n), torch.empty(n)
        array = np.ones(n, dtype=np.float32)
        name = f"oop.{n}"
        variants = {
            "out_of_place": lambda: hvd.allreduce(tensor, name=name + ".oop", op=hvd.Sum),
            "in_place": lambda: hvd.allreduce_(target, name=name, op=hvd.Sum),
            # out of place into a tensor that already exists (what an integration with its
            # own output allocation would see): the runtime's out-of-place data path alone
            "into": lambda: _synchronize(_allreduce_into(tensor, existing, name + ".into", hvd.Sum,
                                                                        1.0, 1.0)),
        }
        # What the runtime runs for this size is known once its first call of the size has
        # measured (measured selection), so the runtime's variants warm up first.
        for _ in range(3):
            for call in variants.values():
                call()
        algorithm = "n/a"
        if allreducer:
            if hasattr(allreducer, "runtime_choice"):
                algorithm = allreducer.runtime_choice(n, "float32", hvd.Sum)
            else:
                # (an install without it: the cost model's pick)
                algorithm = allreducer.choose(n, "float32", hvd.Sum) if forced == "auto" or ":" in forced else forced
            variants["algorithm"] = lambda: allreducer.allreduce(algorithm, alone.data_ptr(), n, "float32", hvd.Sum)
        if MPI:
            variants["mpi4py"] = lambda: MPI.COMM_WORLD.Allreduce(MPI.IN_PLACE, array, op=MPI.SUM)
        times = {key: [] for key in variants}
        keys = list(variants)
        for round_ in range(3 + args.oop_iters):
            shift = round_ % len(keys)
            for key in keys[shift:] + keys[:shift]:
                call = variants[key]
                start = time.perf_counter()
                call()
                if round_ >= 3:
                    times[key].append(time.perf_counter() - start)
        for statistic in (statistics.median, min):
            result = {key: slowest(statistic(values)) for key, values in times.items()}
            result.setdefault("mpi4py", float("nan"))
            result.setdefault("algorithm", float("nan"))
            rows.append((statistic.__name__, n * 4, algorithm, result))
    return rows


FUSION_SETTINGS = {  # environment of each fusion variant; None = the setting's default
    "default": {"CONCORD_FUSION_MAX_TENSOR_BYTES": None, "CONCORD_FUSION_THRESHOLD": None},
    "fuse_all": {"CONCORD_FUSION_MAX_TENSOR_BYTES": "0", "CONCORD_FUSION_THRESHOLD": None},
    "unfused": {"CONCORD_FUSION_MAX_TENSOR_BYTES": None, "CONCORD_FUSION_THRESHOLD": "0"},
}


def fusion_rows(args):
    """One row per size: (bytes per tensor, tensors, {variant: slowest rank's median
    seconds per burst}). Restarts concord.torch for each variant and pass (the settings are
    read at init) and leaves it initialised with the caller's environment."""
    sizes = [int(float(k) * 1024) // 4 * 4 for k in args.fusion_kib.split(",") if k]
    saved = {name: os.environ.get(name) for name in FUSION_SETTINGS["default"]}
    times = {}  # (variant, bytes) -> burst seconds of every pass

    def set_environment(settings):
        for name, value in settings.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value

    try:
        variants = list(FUSION_SETTINGS)
        for order in (variants, variants[::-1]):
            for variant in order:
                hvd.shutdown()
                set_environment(FUSION_SETTINGS[variant])
                hvd.init()
                for nbytes in sizes:
                    tensors = [torch.ones(max(nbytes // 4, 1)) for _ in range(fusion_tensors(nbytes))]

                    def burst():
                        handles = [hvd.allreduce_async_(t, name=f"fusion.{nbytes}.{i}", op=hvd.Average)
                                   for i, t in enumerate(tensors)]
                        for handle in handles:
                            hvd.synchronize(handle)

                    for _ in range(max(3, args.warmup // 4)):
                        burst()
                    dist.barrier()
                    for _ in range(args.fusion_iters):
                        start = time.perf_counter()
                        burst()
                        times.setdefault((variant, nbytes), []).append(time.perf_counter() - start)
    finally:
        hvd.shutdown()
        set_environment(saved)
        hvd.init()
    return [(nbytes, fusion_tensors(nbytes),
             {v: slowest(statistics.median(times[(v, nbytes)])) for v in FUSION_SETTINGS}) for nbytes in sizes]


def fusion_tensors(nbytes):
    """Tensors in a fusion burst of `nbytes` each: 64 MiB in all, at least 8, at most 64."""
    return max(8, min(64, (64 << 20) // max(nbytes, 4)))


def idle_cpu_percent(seconds):
    """Percent of one core this process used while idle for `seconds` (utime + stime)."""
    def cpu_seconds():
        with open("/proc/self/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    start_cpu, start = cpu_seconds(), time.perf_counter()
    time.sleep(seconds)
    return 100.0 * (cpu_seconds() - start_cpu) / (time.perf_counter() - start)


def main(argv=None):
    args = parse_args(argv)
    rank, size = init_gloo(args.port)
    hvd.init()
    sections = [s for s in args.sections.split(",") if s]
    unknown = set(sections) - {"latency", "iteration", "outofplace", "fusion", "idle"}
    if unknown:
        raise SystemExit(f"latency_bench: unknown sections {sorted(unknown)}")
    say = print if rank == 0 else (lambda *a, **k: None)
    say(f"# latency_bench: {size} ranks, load {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}")
    report = {"ranks": size, "load_start": os.getloadavg()[0], "iters": args.iters, "warmup": args.warmup}
    if "latency" in sections:
        rows = latency_rows(args)
        report["latency"] = [dict(zip(("bytes", "in_place", "out_of_place", "gloo", "mpi4py"), row)) for row in rows]
        say(f"# sync allreduce latency, float32, median of {args.iters}, slowest rank (us)")
        say(f"{'bytes':>9} {'concord_':>10} {'concord':>10} {'gloo':>10} {'mpi4py':>10} {'oop/inpl':>9} "
            f"{'inpl/mpi':>9}")
        for nbytes, in_place, out_of_place, gloo, mpi in rows:
            say(f"{nbytes:>9} {in_place * 1e6:10.1f} {out_of_place * 1e6:10.1f} {gloo * 1e6:10.1f} "
                f"{mpi * 1e6:10.1f} {out_of_place / in_place:9.2f} {in_place / mpi:9.2f}")
    if "iteration" in sections:
        r = iteration_rows(args, rank)
        report["iteration"] = dict(r, tensors=args.tensors, elements=args.elements)
        say(f"# iteration: {args.tensors} allreduces of {args.elements} float32, median of "
            f"{args.iteration_iters} after {max(3, args.warmup)} warm-up (gloo: of 10), slowest rank (ms); concord "
            f"in random per-rank order, interleaved with mpi4py in blocks of 10")
        say(f"{'concord':>10} {'gloo':>10} {'mpi4py':>10} {'c/mpi4py':>9} | submit us/tensor  wait ms  rounds/iter  "
            f"cpu ms/iter")
        say(f"{r['concord'] * 1e3:10.2f} {r['gloo'] * 1e3:10.2f} {r['mpi4py'] * 1e3:10.2f} "
            f"{r['concord'] / r['mpi4py']:9.2f} | {r['submit_us_per_tensor']:16.1f} {r['wait_ms']:8.2f} "
            f"{r['rounds']:12.0f} {r['cpu_ms']:12.2f}")
    if "outofplace" in sections:
        rows = out_of_place_rows(args)
        report["outofplace"] = [{"statistic": st, "bytes": nbytes, "picked": alg, **times}
                                for st, nbytes, alg, times in rows]
        say(f"# out of place vs in place vs the algorithm alone vs MPI_Allreduce, float32 sum, median and "
            f"min of {args.oop_iters} interleaved rounds, slowest rank (ms); load {os.getloadavg()[0]:.2f}")
        say(f"{'stat':>6} {'bytes':>9} {'algorithm':>18} {'oop':>9} {'inplace':>9} {'alg':>9} {'mpi4py':>9} | "
            f"{'oop/inpl':>8} {'inpl/alg':>8} {'mpi/inpl':>8} {'mpi/oop':>8} {'into/inpl':>9}")
        for statistic, nbytes, algorithm, t in rows:
            oop, inplace, alg, mpi = t["out_of_place"], t["in_place"], t["algorithm"], t["mpi4py"]
            say(f"{statistic:>6} {nbytes:>9} {algorithm:>18} {oop * 1e3:9.2f} {inplace * 1e3:9.2f} "
                f"{alg * 1e3:9.2f} {mpi * 1e3:9.2f} | {oop / inplace:8.2f} {inplace / alg:8.2f} "
                f"{mpi / inplace:8.2f} {mpi / oop:8.2f} {t['into'] / inplace:9.2f}")
    if "fusion" in sections:
        rows = fusion_rows(args)
        report["fusion"] = [{"bytes": nbytes, "tensors": count, **times} for nbytes, count, times in rows]
        say(f"# fusion: a burst of max(8, min(64, 64 MiB / size)) tensors submitted together, float32 "
            f"average, median of 2 x {args.fusion_iters} bursts (two passes), slowest rank (ms)")
        say(f"{'bytes':>9} {'tensors':>7} {'default':>9} {'fuse_all':>9} {'unfused':>9} | "
            f"{'default/fuse_all':>16} {'unfused/fuse_all':>16}")
        for nbytes, count, t in rows:
            say(f"{nbytes:>9} {count:>7} {t['default'] * 1e3:9.2f} {t['fuse_all'] * 1e3:9.2f} "
                f"{t['unfused'] * 1e3:9.2f} | {t['default'] / t['fuse_all']:16.2f} "
                f"{t['unfused'] / t['fuse_all']:16.2f}")
    if "idle" in sections:
        dist.barrier()
        percent = slowest(idle_cpu_percent(args.idle_seconds))
        report["idle"] = {"seconds": args.idle_seconds, "percent_of_core": percent}
        say(f"# idle: {args.idle_seconds:.0f} s initialised, nothing submitted: {percent:.2f}% of a core "
            f"(busiest rank)")
    report["load_end"] = os.getloadavg()[0]
    if args.json and rank == 0:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(report, out, indent=1, allow_nan=True)
    hvd.shutdown()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
