"""Tests of scripts/cluster.sh, the emulated-cluster testbed: hosts, shaping, exit status and
that teardown leaves nothing behind (namespaces, /etc/netns entries, work directories,
processes) after a normal exit, Ctrl-C (SIGINT), SIGTERM, and after a SIGKILLed run once the
next run starts. Skipped where network namespaces cannot be created (cluster.sh exits 77).

Run directly with pytest (not under mpirun): the script launches mpirun itself.
"""
import glob
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "cluster.sh"
NS_PREFIX = "concord-c"  # the switch namespace concord-csw shares the prefix


def run(args, timeout=120):
    """Runs cluster.sh with `args`; returns the CompletedProcess (text, both streams)."""
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout)


def namespaces():
    """The network namespaces whose names cluster.sh uses that exist now."""
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith(NS_PREFIX)]


def leftovers():
    """Everything a cluster.sh run may create, as a readable list (empty when clean)."""
    found = [f"namespace {ns}" for ns in namespaces()]
    found += [f"file {p}" for p in glob.glob(f"/etc/netns/{NS_PREFIX}*")]
    found += [f"workdir {p}" for p in glob.glob("/tmp/concord-cluster.*")]
    return found


def wait_for(predicate, what, timeout=60.0):
    """Polls `predicate` every 0.2 s until it is true; fails naming `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out after {timeout} s waiting for {what}"
        time.sleep(0.2)


@pytest.fixture(scope="module", autouse=True)
def namespaces_available():
    """Skips the module where cluster.sh cannot make namespaces (it exits 77 with the reason)."""
    probe = run(["--check"])
    if probe.returncode == 77:
        pytest.skip(probe.stderr.strip())
    assert probe.returncode == 0, f"cluster.sh --check failed: {probe.stderr}"
    assert leftovers() == [], "cluster.sh --check left things behind"


def test_hosts_ranks_and_clean_exit():
    """H = 3 hosts x 2 ranks: every host name twice, exit 0, nothing left."""
    result = run(["-H", "3", "-r", "2", "--", "hostname"])
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.split()) == ["node0", "node0", "node1", "node1", "node2", "node2"]
    assert leftovers() == []


def test_eight_hosts_and_tbf_shaping():
    """H = 8 hosts x 1 rank: each host's eth0 has the tbf root qdisc at the requested rate."""
    result = run(["-H", "8", "--rate", "200mbit", "--burst", "64kb", "--", "tc", "qdisc", "show", "dev", "eth0"])
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stdout.splitlines() if "tbf" in line]
    assert len(lines) == 8, f"expected a tbf qdisc on 8 hosts, got:\n{result.stdout}"
    assert all("rate 200Mbit" in line for line in lines), result.stdout
    assert "netem is not in this kernel" in result.stderr
    assert leftovers() == []


def test_exit_status_of_the_command_is_returned():
    """A failing command fails cluster.sh too (mpirun's non-zero status), and cleans up."""
    result = run(["-H", "2", "--", "sh", "-c", "exit 3"])
    assert result.returncode != 0
    assert leftovers() == []


@pytest.mark.parametrize("args", [["-H", "1", "--", "true"], ["-H", "9", "--", "true"], ["-H", "2", "-r", "0", "--", "true"],
                                  ["-H", "2"]])
def test_usage_errors(args):
    """Hosts outside 2..8, zero ranks per host, or no command: exit 2 with a message."""
    result = run(args)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("cluster: ")


# The ranks' command: `sleep` for about 300 s, with an argument of this run's own, so that no
# other `sleep 300` on the machine counts as a rank left behind.
SLEEP_SECONDS = f"300.{os.getpid()}"


def start_sleeping_cluster():
    """Starts `cluster.sh -H 2 -r 2 -- sleep SLEEP_SECONDS`; returns the Popen once all 4 sleeps run."""
    proc = subprocess.Popen([str(SCRIPT), "-H", "2", "-r", "2", "--", "sleep", SLEEP_SECONDS],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def sleeps_running():
        pids = []
        for ns in namespaces():
            out = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout
            pids += [p for p in out.split() if Path(f"/proc/{p}/comm").exists()
                     and Path(f"/proc/{p}/comm").read_text().strip() == "sleep"]
        return len(pids) == 4

    wait_for(sleeps_running, f"4 ranks running 'sleep {SLEEP_SECONDS}' in the namespaces")
    return proc


def sleeps_of_this_test():
    """This run's 'sleep SLEEP_SECONDS' processes anywhere on the machine (the ranks' command)."""
    out = subprocess.run(["pgrep", "-x", "-f", f"sleep {SLEEP_SECONDS}"], capture_output=True, text=True).stdout
    return out.split()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_tears_everything_down(sig):
    """Ctrl-C (SIGINT) or SIGTERM to cluster.sh mid-run: the ranks end, nothing is left."""
    proc = start_sleeping_cluster()
    proc.send_signal(sig)
    proc.wait(timeout=60)
    assert proc.returncode != 0
    assert leftovers() == []
    wait_for(lambda: sleeps_of_this_test() == [], "the ranks' processes to end", timeout=10)


def test_next_run_cleans_up_after_sigkill():
    """A SIGKILLed run cannot clean up; the next run (here --check) removes what it left."""
    proc = start_sleeping_cluster()
    proc.kill()
    proc.wait(timeout=30)
    assert namespaces() != [], "expected namespaces left behind by the SIGKILLed run"
    probe = run(["--check"])
    assert probe.returncode == 0, probe.stderr
    assert leftovers() == []
    wait_for(lambda: sleeps_of_this_test() == [], "the ranks' processes to end", timeout=10)


def test_store_launcher_environment_and_hosts():
    """--launcher store, H = 2 x 2: ranks 0..3 with env:// variables, hosts in rank order, the
    TCP store on node0, the UCX transport on eth0; exit 0 and nothing left."""
    result = run(["-H", "2", "-r", "2", "--launcher", "store", "--", "sh", "-c",
                  'echo "$RANK $WORLD_SIZE $LOCAL_RANK $LOCAL_WORLD_SIZE $(hostname) $CONCORD_TRANSPORT $CONCORD_STORE '
                  '$UCX_NET_DEVICES"'])
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.splitlines()) == [
        f"{rank} 4 {rank % 2} 2 node{rank // 2} ucx tcp:10.231.98.1:29400 eth0" for rank in range(4)], result.stdout
    assert leftovers() == []


def test_store_launcher_hosts_have_their_own_boot_id():
    """Each emulated host reads a boot id of its own (UCX's test for 'same machine'); ranks of
    one host read the same one."""
    result = run(["-H", "2", "-r", "2", "--launcher", "store", "--", "sh", "-c",
                  'echo "$(hostname) $(cat /proc/sys/kernel/random/boot_id)"'])
    assert result.returncode == 0, result.stderr
    ids = {}
    for line in result.stdout.splitlines():
        host, boot_id = line.split()
        ids.setdefault(host, set()).add(boot_id)
    assert sorted(ids) == ["node0", "node1"] and all(len(v) == 1 for v in ids.values()), result.stdout
    assert ids["node0"] != ids["node1"], f"both hosts read boot id {ids['node0']}"
    assert Path("/proc/sys/kernel/random/boot_id").read_text().strip() not in ids["node1"]


def test_store_launcher_returns_the_failing_rank_status():
    """A rank that fails fails the job with its status, named on stderr; the others are stopped."""
    start = time.monotonic()
    result = run(["-H", "2", "--launcher", "store", "--", "sh", "-c",
                  f'if [ "$RANK" = 1 ]; then exit 7; fi; sleep {SLEEP_SECONDS}'])
    assert result.returncode == 7, result.stderr
    assert "rank 1 exited with status 7" in result.stderr
    assert time.monotonic() - start < 60, "the surviving rank was not stopped after the grace period"
    assert leftovers() == []


@pytest.mark.skipif(not os.environ.get("CONCORD_CLUSTER_BENCH"),
                    reason="CONCORD_CLUSTER_BENCH (a concord-bench built with UCX) not given")
def test_store_launcher_ucx_lanes_shared_memory_within_tcp_between_hosts(tmp_path):
    """Over UCX (2 hosts x 2 ranks), every rank's endpoints use shared memory (sysv/cma) to its
    own host and tcp/eth0 to the other host, never shared memory across hosts: UCX logs each
    endpoint configuration it creates (UCX_LOG_LEVEL=info: 'ep_cfg[N]: tag(LANES)'), here into
    one file per rank (UCX_LOG_FILE with %h and %p), so that the ranks' lines never interleave."""
    env = dict(os.environ, UCX_LOG_LEVEL="info", UCX_LOG_FILE=str(tmp_path / "ucx.%h.%p.log"),
               CONCORD_INIT_TIMEOUT="60")
    result = subprocess.run([str(SCRIPT), "-H", "2", "-r", "2", "--launcher", "store", "--",
                             os.environ["CONCORD_CLUSTER_BENCH"], "-C", "allreduce", "-a", "ring", "-b", "4", "-e",
                             "4", "-T", "0.01"], capture_output=True, text=True, timeout=240, env=env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    configs = {log.name: re.findall(r"ep_cfg\[\d+\]: tag\(([^)]*)\)", log.read_text()) for log in tmp_path.glob("ucx.*.log")}
    assert len(configs) == 4 and sorted(name.split(".")[1] for name in configs) == ["node0", "node0", "node1", "node1"], \
        f"expected the UCX logs of 2 ranks on each of node0 and node1, got {sorted(configs)}"
    for rank, lanes in configs.items():
        network = [entry for entry in lanes if "tcp/" in entry]
        assert network and all(entry.split() == ["tcp/eth0"] for entry in network), \
            f"{rank}: no endpoint over tcp/eth0 alone to the other host: {lanes}"
        assert any("memory" in entry for entry in lanes), f"{rank}: no shared-memory endpoint: {lanes}"
