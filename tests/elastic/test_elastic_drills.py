"""Elastic training with real faults on one host: concord-run's elastic driver runs
examples/train_digits_elastic.py, whose ``--fail SLOT@STEP[/SIGNAL]`` drill makes a worker
SIGKILL or SIGSTOP itself at a step (or during its first reset). Each test checks the
worlds the driver formed, that the job ends within its timeout, that the survivors' final
parameters are bit-identical, and the accuracy where the issue names one (>= 95% after
losing a worker)."""

import os
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "train_digits_elastic.py")
TIMEOUT = 180


def launch(driver_args, example_args):
    """Starts the driver on the example; returns the Popen (output merged, text lines)."""
    command = [sys.executable, "-m", "concord.run", *driver_args, sys.executable, EXAMPLE, *example_args]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"}, start_new_session=True)


def finish(process, on_line=None):
    """Reads the job's output to its end (calling ``on_line(line)`` for each line); returns
    (exit status, output, seconds). Kills the job (its workers too) and fails the test at
    TIMEOUT, silent or not."""
    start, lines = time.monotonic(), []

    def read():
        for line in process.stdout:
            lines.append(line)
            if on_line:
                on_line(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        code = process.wait(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        pytest.fail("the elastic job did not end within %d s:\n%s" % (TIMEOUT, "".join(lines[-40:])))
    reader.join(timeout=10)
    return code, "".join(lines), time.monotonic() - start


def run_job(driver_args, example_args):
    return finish(launch(driver_args, example_args))


def assert_trained(output, ranks, min_accuracy=0.0):
    match = re.search(r"final test accuracy ([0-9.]+) on (\d+) ranks .* bit-identical on all \d+ ranks: (\w+)", output)
    assert match, "no final line:\n" + output[-3000:]
    assert int(match.group(2)) == ranks, output[-3000:]
    assert match.group(3) == "True", output[-3000:]
    assert float(match.group(1)) >= min_accuracy, output[-3000:]


def test_killed_worker_mid_epoch_keeps_training():
    code, output, _ = run_job(["-np", "4", "--min-np", "2"],
                              ["--epochs", "12", "--fail", "localhost:1@25", "--min-accuracy", "0.95"])
    assert code == 0, output[-3000:]
    assert "world 1: 3 workers (worker localhost:1 lost: signal SIGKILL)" in output, output[-3000:]
    assert_trained(output, 3, 0.95)


def test_stopped_worker_is_declared_lost_by_its_heartbeat():
    code, output, _ = run_job(["-np", "3", "--min-np", "2", "--heartbeat-timeout", "3"],
                              ["--epochs", "3", "--fail", "localhost:2@25/STOP"])
    assert code == 0, output[-3000:]
    assert re.search(r"worker localhost:2 lost: no heartbeat for [0-9.]+ s \(stopped or hung\)", output), output
    assert_trained(output, 2)


def test_two_failures_in_a_row_including_rank_0():
    code, output, _ = run_job(["-np", "4", "--min-np", "2"],
                              ["--epochs", "4", "--fail", "localhost:0@25", "--fail", "localhost:2@35"])
    assert code == 0, output[-3000:]
    assert "world 1: 3 workers (worker localhost:0 lost: signal SIGKILL)" in output, output[-3000:]
    assert "world 2: 2 workers (worker localhost:2 lost: signal SIGKILL)" in output, output[-3000:]
    assert_trained(output, 2)


def test_failure_during_a_reset():
    code, output, _ = run_job(["-np", "4", "--min-np", "2"],
                              ["--epochs", "4", "--fail", "localhost:1@25", "--fail", "localhost:3@reset"])
    assert code == 0, output[-3000:]
    assert "world 2: 2 workers (worker localhost:3 lost: signal SIGKILL)" in output, output[-3000:]
    assert_trained(output, 2)


def test_discovered_host_joins_and_receives_the_state(tmp_path):
    hosts = tmp_path / "hosts"
    hosts.write_text("localhost:3\n")
    script = tmp_path / "discover.sh"
    script.write_text(f"#!/bin/sh\ncat {hosts}\n")
    script.chmod(0o755)
    process = launch(["-np", "3", "--min-np", "2", "--max-np", "4", "--host-discovery-script", str(script)],
                     ["--epochs", "6", "--step-delay", "0.05", "--commit-every", "5"])

    def grow(line):
        if line.startswith("epoch 1:"):
            hosts.write_text("localhost:4\n")

    code, output, _ = finish(process, grow)
    assert code == 0, output[-3000:]
    assert "world 1: 4 workers (hosts added)" in output, output[-3000:]
    assert "epoch 6: 4 ranks" in output, output[-3000:]
    assert_trained(output, 4)


def test_fewer_than_min_np_ends_the_job_naming_the_lost_worker():
    code, output, seconds = run_job(["-np", "3", "--min-np", "3", "--elastic-timeout", "2"],
                                    ["--epochs", "20", "--fail", "localhost:1@25"])
    assert code == 1, output[-3000:]
    assert ("job failed: only 2 workers remain, fewer than --min-np 3, and none came within --elastic-timeout 2 s; "
            "lost workers: localhost:1 (signal SIGKILL)") in output, output[-3000:]
    assert seconds < TIMEOUT


def test_reset_limit_ends_the_job():
    code, output, _ = run_job(["-np", "3", "--min-np", "2", "--reset-limit", "0"],
                              ["--epochs", "20", "--fail", "localhost:2@25"])
    assert code == 1, output[-3000:]
    assert "job failed: --reset-limit 0 reached (worker localhost:2 lost: signal SIGKILL)" in output, output[-3000:]


def test_torchrun_restart_resumes_from_the_disk_checkpoint(tmp_path):
    """torchrun's agent restarts every worker after one dies; the job re-initialises from
    the new environment and resumes from the checkpoint rank 0 wrote at its last commit."""
    checkpoint = tmp_path / "digits.pt"
    command = [sys.executable, "-m", "torch.distributed.run", "--redirects", "1", "--tee", "1", "--nnodes=1:1",
               "--nproc_per_node=2", "--max_restarts=2", "--rdzv_backend", "c10d", "--rdzv_endpoint",
               "localhost:0", EXAMPLE, "--epochs", "4", "--checkpoint", str(checkpoint), "--fail", "rank1@25"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env={**os.environ, "PYTHONUNBUFFERED": "1"}, start_new_session=True)
    code, output, _ = finish(process)
    assert code == 0, output[-3000:]
    assert "drill: rank1 (rank 1) sends itself SIGKILL" in output, output[-3000:]
    assert re.search(r"resumed from .*digits.pt at epoch \d+, step [1-9]\d*", output), output[-3000:]
    assert_trained(output, 2)


def test_host_dropped_by_discovery_is_blacklisted(tmp_path):
    """Two 'hosts' on this machine (localhost and 127.0.0.1, both started directly); the
    discovery script drops one after the first epoch: its two workers are stopped, it is
    blacklisted, and the other host's two workers finish from the last commit."""
    hosts = tmp_path / "hosts"
    hosts.write_text("localhost:2\n127.0.0.1:2\n")
    script = tmp_path / "discover.sh"
    script.write_text(f"#!/bin/sh\ncat {hosts}\n")
    script.chmod(0o755)
    process = launch(["-np", "4", "--min-np", "2", "--host-discovery-script", str(script)],
                     ["--epochs", "5", "--step-delay", "0.05"])

    def shrink(line):
        if line.startswith("epoch 1:"):
            hosts.write_text("localhost:2\n")

    code, output, _ = finish(process, shrink)
    assert code == 0, output[-3000:]
    assert "host 127.0.0.1 removed by discovery" in output, output[-3000:]
    assert re.search(r"world 1: 2 workers \(worker 127\.0\.0\.1:[01] lost: host 127\.0\.0\.1 removed by discovery\)",
                     output), output[-3000:]
    assert_trained(output, 2)
