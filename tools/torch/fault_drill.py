#!/usr/bin/env python3
"""Fault drill: measures how long a failed Concord job takes to end, and what it says.

Each scenario launches ``scripts/mpirun.sh -np N python3 <this file> --worker <scenario>``:
every rank runs a loop of named allreduces (``g.<step>``, float32 [1024]), and one rank
(``--victim``, default 1) misbehaves at step 5:

* ``kill``:      the victim SIGKILLs itself (a crashed or OOM-killed process);
* ``stall``:     the victim stops submitting and sleeps (a rank stuck in other work), run with
                 CONCORD_STALL_WARNING_TIME=2 CONCORD_STALL_SHUTDOWN_TIME=5;
* ``exception``: the victim raises a Python exception between collectives (default settings).

A scenario passes when the whole job exits non-zero within its limit after the fault (kill 30 s, stall 20 s,
exception 20 s at 4 ranks) and its output names the victim rank (``rank 1`` / ``ranks [1]``) and, for
``stall``, the tensor. Prints one line per scenario (``scenario seconds exit-status verdict``)
and exits 1 if any failed. The job is killed at ``--hard-limit`` seconds (default 120), so the
drill itself never hangs.

Usage: tools/torch/fault_drill.py [-np 4] [--victim 1] [scenario ...]
"""

import argparse
import os
import re
import signal
import subprocess
import sys
import time

PYTHON = sys.executable  # the interpreter running the drill (ctest: the build's Python_EXECUTABLE)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

#: scenario -> (limit in seconds, extra environment, regex the output must match).
SCENARIOS = {
    "kill": (30.0, {}, r"process\s+rank\s+{victim}\s+with\s+PID\s+\d+\s+on\s+node\s+\S+\s+exited\s+on\s+signal\s+9"),
    "stall": (20.0, {"CONCORD_STALL_WARNING_TIME": "2", "CONCORD_STALL_SHUTDOWN_TIME": "5"},
              r"tensor 'g\.\d+' is missing on ranks \[{victim}\]"),
    "exception": (20.0, {}, r"Concord was shut down by ranks \[{victim}\]"),
}


def worker(scenario, victim, steps):
    """One rank's loop: allreduce g.0 .. g.<steps-1>; the victim misbehaves at step 5."""
    import torch

    import concord.torch as hvd

    hvd.init()
    for step in range(steps):
        if hvd.rank() == victim and step == 5:
            print(f"fault_drill: rank {victim} misbehaves ({scenario}) at {time.time():.3f}", flush=True)
            if scenario == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            elif scenario == "stall":
                time.sleep(600)
            elif scenario == "exception":
                raise RuntimeError("fault drill: a Python exception between collectives")
        hvd.allreduce(torch.ones(1024), name=f"g.{step}")
    hvd.shutdown()


def run_scenario(scenario, np_, victim, hard_limit, slack):
    """Runs one scenario; returns (seconds from the fault to the end of the job, exit status,
    output, passed, reason)."""
    limit, extra_env, pattern = SCENARIOS[scenario]
    limit *= slack
    env = dict(os.environ)
    env.update(extra_env)
    # The installed package (PYTHONPATH as the tests set it: build/prefix/...), else the tree.
    env.setdefault("PYTHONPATH", os.path.join(ROOT, "python"))
    env.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    command = [os.path.join(ROOT, "scripts", "mpirun.sh"), "-np", str(np_), PYTHON,
               os.path.abspath(__file__), "--worker", scenario, "--victim", str(victim)]
    start = time.monotonic()
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               start_new_session=True)
    try:
        output, _ = process.communicate(timeout=hard_limit)
        status = process.returncode
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        status = None
    end = time.time()
    text = output.decode(errors="replace")
    fault = re.search(r"fault_drill: rank \d+ misbehaves \(\w+\) at ([\d.]+)", text)
    if not fault:
        return time.monotonic() - start, status, text, False, "the victim never reached the fault"
    seconds = end - float(fault.group(1))
    if status is None:
        return seconds, status, text, False, f"still running after {hard_limit:.0f} s (killed)"
    if status == 0:
        return seconds, status, text, False, "exited with status 0"
    if seconds > limit:
        return seconds, status, text, False, f"took longer than {limit:.0f} s"
    if not re.search(pattern.format(victim=victim), text):
        return seconds, status, text, False, f"output does not match {pattern.format(victim=victim)!r}"
    return seconds, status, text, True, f"ended within {limit:.0f} s naming rank {victim}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="*", help=f"any of {', '.join(SCENARIOS)} (default: all)")
    parser.add_argument("-np", type=int, default=4, help="number of ranks (default 4)")
    parser.add_argument("--victim", type=int, default=1, help="the rank that misbehaves (default 1)")
    parser.add_argument("--steps", type=int, default=1000, help="allreduces per rank (default 1000)")
    parser.add_argument("--hard-limit", type=float, default=120.0, help="seconds before the job is killed")
    parser.add_argument("--slack", type=float, default=1.0,
                        help="multiply the time limits (tests on loaded machines use 3)")
    parser.add_argument("--verbose", action="store_true", help="print every job's output")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.victim, args.steps)
        return 0
    unknown = [s for s in args.scenarios if s not in SCENARIOS]
    if unknown:
        parser.error(f"unknown scenario(s) {unknown}; choose from {list(SCENARIOS)}")
    failed = 0
    print(f"{'scenario':<10} {'seconds':>8} {'status':>6}  verdict")
    for scenario in args.scenarios or list(SCENARIOS):
        seconds, status, text, passed, reason = run_scenario(scenario, args.np, args.victim, args.hard_limit,
                                                             args.slack)
        failed += not passed
        print(f"{scenario:<10} {seconds:8.1f} {str(status):>6}  {'PASS' if passed else 'FAIL'}: {reason}", flush=True)
        first = next((line for line in text.splitlines() if re.search(r"error|Error|ERROR", line)), "")
        if first:
            print(f"{'':<10} first error: {first.strip()[:300]}")
        if args.verbose or not passed:
            print(text[-4000:])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
