"""Run by ``scripts/cluster.sh --launcher command`` on node0 of the emulated cluster (tests/
scripts/test_host_launch_cluster.py): ``concord-run --launcher local`` on the cluster's hosts
(CONCORD_CLUSTER_HOSTS) through the cluster's rsh agent (CONCORD_CLUSTER_AGENT), as it would
run over ssh, serving its store at node0's address.

    host_launch_drill.py run PROGRAM [ARGS...]    the job, its output passed through
    host_launch_drill.py kill RANK PROGRAM [ARGS...]
        SIGKILLs rank RANK's program 2 s after every rank's program runs, then reports
        "drill: ..." lines: the killed process, the launcher's exit status and how long the
        job took to end after the kill, and the job's processes left afterwards (every
        process whose environment holds this drill's tag); exits 1 when any is left.

Processes of the job are told apart from others' by CONCORD_DRILL_TAG, which concord-run
forwards to every rank (a CONCORD_* variable). All emulated hosts share this machine's
process table, so /proc shows the ranks of every host.
"""

import os
import signal
import subprocess
import sys
import time
import uuid

PROGRAM_WAIT_SECONDS = 120
LEFTOVER_WAIT_SECONDS = 5


def launcher_command(command):
    """concord-run over the cluster's hosts and agent."""
    return [sys.executable, "-m", "concord.run", "--launcher", "local", "-np", str(4), "-H",
            os.environ["CONCORD_CLUSTER_HOSTS"], "--rsh-agent", os.environ["CONCORD_CLUSTER_AGENT"],
            "--store-address", "10.231.98.1", "--grace-seconds", "5", *command]


def tagged(tag):
    """{pid: (environment dict, command line)} of the processes whose environment holds ``tag``."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as handle:
                words = handle.read().split(b"\0")
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        env = dict(word.decode(errors="replace").partition("=")[::2] for word in words if b"=" in word)
        if env.get("CONCORD_DRILL_TAG") == tag:
            found[int(entry)] = (env, cmdline)
    return found


def rank_programs(tag):
    """{rank (str): pid} of the ranks' programs (not their guards, not the launcher)."""
    return {env["RANK"]: pid for pid, (env, cmdline) in tagged(tag).items()
            if "RANK" in env and "concord.rank_guard" not in cmdline}


def kill_drill(rank, command):
    tag = uuid.uuid4().hex
    launcher = subprocess.Popen(launcher_command(command), env={**os.environ, "CONCORD_DRILL_TAG": tag})
    deadline = time.monotonic() + PROGRAM_WAIT_SECONDS
    ranks = {}
    while len(ranks) < 4 and time.monotonic() < deadline and launcher.poll() is None:
        time.sleep(0.2)
        ranks = rank_programs(tag)
    if str(rank) not in ranks:
        print(f"drill: rank {rank}'s program never ran (found ranks {sorted(ranks)})", flush=True)
        launcher.kill()
        return 1
    time.sleep(2.0)  # the job is inside its collectives
    victim = ranks[str(rank)]
    os.kill(victim, signal.SIGKILL)
    killed = time.monotonic()
    print(f"drill: sent SIGKILL to rank {rank} (process {victim})", flush=True)
    code = launcher.wait(PROGRAM_WAIT_SECONDS)
    print(f"drill: concord-run exited with status {code} {time.monotonic() - killed:.1f} s after the kill", flush=True)
    end = time.monotonic() + LEFTOVER_WAIT_SECONDS
    left = tagged(tag)
    while left and time.monotonic() < end:
        time.sleep(0.2)
        left = tagged(tag)
    print(f"drill: {len(left)} processes of the job left" +
          "".join(f"\ndrill: left: {pid} {cmdline}" for pid, (_, cmdline) in left.items()), flush=True)
    return 1 if left else 0


def main(argv):
    if argv[:1] == ["run"] and len(argv) > 1:
        return subprocess.call(launcher_command(argv[1:]))
    if argv[:1] == ["kill"] and len(argv) > 2 and argv[1].isdigit():
        return kill_drill(int(argv[1]), argv[2:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
