"""A process that its launcher calls one of several must never train alone: concord.init()
raises, naming what it could not join, when (1) torchrun's variables name a world of 2 but
CONCORD_TRANSPORT=mpi and there is no mpirun (MPI would be a singleton), and (2) over UCX
the other rank never reaches the store (CommError within CONCORD_INIT_TIMEOUT, naming the
missing rank). Each case runs in a fresh interpreter (init() joins a world once per
process). Exits 0 when both refuse as expected; prints what happened otherwise."""

import os
import subprocess
import sys
import tempfile
import time

PROBE = ("import concord\n"
         "try:\n"
         "    concord.init()\n"
         "except concord.ConcordError as error:\n"
         "    print(type(error).__name__ + ': ' + str(error)); raise SystemExit(3)\n"
         "print('joined a world of', concord.size()); raise SystemExit(0)\n")


def probe(extra_env):
    """(exit status, output, seconds) of concord.init() in a fresh interpreter."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMI", "PMIX"))}
    env.update(extra_env)
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout + done.stderr, time.monotonic() - start


def main():
    failures = []
    code, out, _ = probe({"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "0", "CONCORD_TRANSPORT": "mpi"})
    if code != 3 or "StateError" not in out or "cannot join that world" not in out or "rank 0 of 2" not in out:
        failures.append(f"CONCORD_TRANSPORT=mpi under WORLD_SIZE=2 without mpirun: exit {code}: {out.strip()}")
    with tempfile.TemporaryDirectory() as store:
        code, out, seconds = probe({"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "CONCORD_TRANSPORT": "ucx",
                                    "CONCORD_STORE": f"file:{store}", "CONCORD_INIT_TIMEOUT": "2"})
    if code != 3 or "CommError" not in out or "rank(s) 0 of 2 never arrived" not in out or seconds > 30:
        failures.append(f"UCX rank 1 of 2 without rank 0: exit {code} after {seconds:.1f} s: {out.strip()}")
    for failure in failures:
        print("FAIL:", failure)
    if not failures:
        print("lonely_rank: both refused as expected")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
