"""Starts the ranks of a job on this host without MPI: ``concord-run --launcher local`` (and
the ctest suites that run over UCX) use it, as ``torchrun --nproc_per_node`` or
``horovodrun --gloo`` would. Every rank gets torchrun's env:// variables (``RANK``,
``WORLD_SIZE``, ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``) and a fresh file store
(``CONCORD_STORE=file:DIR``, removed afterwards) to rendezvous through, so Concord picks its
UCX transport (``CONCORD_TRANSPORT=auto``). When a rank fails, the others are stopped after
a grace period (SIGTERM, then SIGKILL) and the launcher names the rank and its exit status.

Runnable as a script, without importing the ``concord`` package (the build tree's tests):
``python3 local_launch.py -np 4 [--grace-seconds S] program args...``.
"""

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time


def rank_environment(base, rank, size, store_spec, run_id, local_rank=None, local_size=None):
    """The environment of rank ``rank`` of ``size``: ``base`` plus the env:// variables
    (``LOCAL_RANK``/``LOCAL_WORLD_SIZE``: ``local_rank``/``local_size``, by default
    ``rank``/``size``, every rank on this host), the store ``store_spec`` (CONCORD_STORE's
    syntax: ``file:DIR``, ``tcp-client:HOST:PORT``) and the run id (a dict of strings)."""
    env = dict(base)
    env.update({"RANK": str(rank), "WORLD_SIZE": str(size),
                "LOCAL_RANK": str(rank if local_rank is None else local_rank),
                "LOCAL_WORLD_SIZE": str(size if local_size is None else local_size), "CONCORD_STORE": store_spec,
                "CONCORD_RUN_ID": run_id, "CONCORD_RUN_LOCAL": "1"})
    return env


def describe_status(code):
    """'exit status N' or 'signal NAME' for a Popen return code."""
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"exit status {code}"


def run_local(np, command, grace_seconds=30.0, environ=None, out=sys.stderr):
    """Runs ``command`` (a list) as ``np`` ranks on this host and returns the job's exit
    status: 0 when every rank exits 0, else the first failing rank's status (128 + signal
    for a rank killed by a signal). Once a rank fails, the others get ``grace_seconds`` to
    end by themselves (Concord reports the lost peer) before SIGTERM, then SIGKILL 5 s later.

    Raises:
        ValueError: np < 1 or an empty command.
    """
    if np < 1:
        raise ValueError(f"local launcher: -np must be >= 1, got {np}")
    if not command:
        raise ValueError("local launcher: no program given")
    store_dir = tempfile.mkdtemp(prefix="concord-store-")
    run_id = os.path.basename(store_dir)
    base = os.environ if environ is None else environ
    procs = []
    try:
        for rank in range(np):
            procs.append(subprocess.Popen(command, env=rank_environment(base, rank, np, f"file:{store_dir}", run_id)))
        return supervise(procs, grace_seconds, out)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        shutil.rmtree(store_dir, ignore_errors=True)


def exit_code(code):
    """The job's exit status for a rank's Popen return code (128 + N for signal N)."""
    return 128 - code if code < 0 else code


def supervise(procs, grace_seconds, out, names=None, describe=None, stop=None, order=None, settle_seconds=0.0):
    """Waits for the ranks ``procs`` (Popen objects, rank order) and returns the job's exit
    status (see run_local). After the first failure, the others get ``grace_seconds`` to end
    by themselves; then ``stop()`` is called (if given: asks remote ranks to end), every
    running process gets SIGTERM and, 5 s later, SIGKILL.

    Args:
        names (list of str): how to name each rank in messages (default ``rank R``).
        describe (callable): ``describe(index, returncode)`` -> the failure's description
            (default :func:`describe_status`).
        order (callable): ``order(index)`` -> when that failed rank exited (smaller first);
            the failure named first is the earliest of those seen within ``settle_seconds``
            of the first (default: the lowest rank of the first seen); the job's status is
            that rank's. The other ranks that failed by themselves (before being stopped)
            are named after it ("also failed: ...").
    """
    names = names or [f"rank {rank}" for rank in range(len(procs))]
    describe = describe or (lambda _index, code: describe_status(code))
    order = order or (lambda _index: 0.0)

    def failures():
        return [index for index, proc in enumerate(procs) if proc.returncode not in (None, 0)]

    first, seen, deadline = None, None, None
    while True:
        running = [p for p in procs if p.poll() is None]
        if first is None and failures():
            seen = seen or time.monotonic()
            deadline = deadline or seen + grace_seconds
            if time.monotonic() >= min(seen + settle_seconds, deadline) or not running:
                first = min(failures(), key=lambda i: (order(i), i))
                print(f"concord-run: {names[first]} failed ({describe(first, procs[first].returncode)}); stopping "
                      f"the other ranks within {grace_seconds:g} s", file=out, flush=True)
        if not running:
            break
        if first is not None and time.monotonic() > deadline:
            _report_others(procs, first, names, describe, out)
            if stop is not None:
                stop()
            for proc in running:
                proc.terminate()
            end = time.monotonic() + 5
            while any(p.poll() is None for p in running) and time.monotonic() < end:
                time.sleep(0.05)
            for proc in running:
                if proc.poll() is None:
                    proc.kill()
            deadline = float("inf")
        time.sleep(0.05)
    if first is None:
        return 0
    if deadline != float("inf"):
        _report_others(procs, first, names, describe, out)
    return exit_code(procs[first].returncode)


def _report_others(procs, first, names, describe, out):
    """Names the ranks other than ``first`` that failed by themselves (before being stopped):
    a lost peer's, or the same cause's."""
    others = [i for i, proc in enumerate(procs) if proc.returncode not in (None, 0) and i != first]
    if others:
        print("concord-run: also failed: " + ", ".join(f"{names[i]} ({describe(i, procs[i].returncode)})"
                                                      for i in others), file=out, flush=True)


def main(argv=None):
    """Script entry point: ``local_launch.py -np N [--grace-seconds S] program args...``."""
    parser = argparse.ArgumentParser(prog="local_launch.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("-np", type=int, required=True)
    parser.add_argument("--grace-seconds", type=float, default=30.0)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    try:
        return run_local(args.np, command, args.grace_seconds)
    except ValueError as error:
        parser.error(str(error))


if __name__ == "__main__":
    sys.exit(main())
