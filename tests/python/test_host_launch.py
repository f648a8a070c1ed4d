"""concord-run --launcher local on several hosts (concord/host_launch.py, concord/rsh.py,
concord/rank_guard.py): the placement of ranks on hosts, the remote command line (its
quoting checked by running it in a shell), the forwarded environment, hostfiles, the rank
guard's watches, and whole jobs whose "other host" is an rsh agent that runs the line
here. The emulated-cluster run over real network namespaces is scripts.host_launch
(tests/scripts/test_host_launch_cluster.py)."""

import io
import json
import os
import shlex
import subprocess
import sys
import time
import uuid

import pytest

from concord import _core, host_launch, hosts, rank_guard, rsh, run

PYTHON = sys.executable


def test_ranks_fill_the_hosts_slots_in_order():
    assert host_launch.place_ranks([("a", 2), ("b", 2)], 3) == [("a", 0, 2), ("a", 1, 2), ("b", 0, 1)]
    assert host_launch.place_ranks([("a", 1), ("b", 3)], 4) == [("a", 0, 1), ("b", 0, 3), ("b", 1, 3), ("b", 2, 3)]
    with pytest.raises(ValueError, match=r"-np 5 but the hosts a:2,b:2 have only 4 slots"):
        host_launch.place_ranks([("a", 2), ("b", 2)], 5)
    with pytest.raises(ValueError, match=r"-np must be >= 1, got 0"):
        host_launch.place_ranks([("a", 2)], 0)


def test_forwarded_environment_is_concord_runs_list():
    environ = {"PATH": "/b", "PYTHONPATH": "/p", "LD_LIBRARY_PATH": "/l", "HOME": "/h", "CONCORD_X": "1",
               "HOROVOD_Y": "2", "UCX_TLS": "tcp", "MY_CONCORD_Z": "3", "OMPI_MCA_x": "4"}
    assert rsh.forwarded_environment(environ) == {"PATH": "/b", "PYTHONPATH": "/p", "LD_LIBRARY_PATH": "/l",
                                                  "CONCORD_X": "1", "HOROVOD_Y": "2", "UCX_TLS": "tcp"}


def test_store_address():
    assert rsh.store_address([("localhost", 2), ("127.0.0.1", 1)], "10.0.0.1") == "127.0.0.1"
    assert rsh.store_address([("localhost", 2), ("node1", 2)], "10.0.0.1") == "10.0.0.1"


def run_line(argv):
    """Runs the command line a fake agent would get (argv[-1]) in bash, as ssh would."""
    return subprocess.run(["bash", "-c", argv[-1]], capture_output=True, text=True, env={"PATH": os.environ["PATH"]})


def test_remote_command_line_keeps_every_word_and_value(tmp_path):
    odd = "it's \"quoted\" $HOME `x` ; a b"
    workdir = tmp_path / "work dir"
    workdir.mkdir()
    probe = "import json, os, sys; print(json.dumps([os.getcwd(), os.environ.get('CONCORD_ODD'), sys.argv[1:]]))"
    argv = rsh.remote_command("ssh -o BatchMode=yes", "node1", [PYTHON, "-c", probe, odd, ""],
                              {"CONCORD_ODD": odd, "PATH": os.environ["PATH"]}, str(workdir))
    assert argv[:4] == ["ssh", "-o", "BatchMode=yes", "node1"] and len(argv) == 5
    result = run_line(argv)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [str(workdir), odd, [odd, ""]]
    # A directory the remote host lacks: the rank starts where the agent put it (horovodrun).
    missing = rsh.remote_command(["agent"], "h", [PYTHON, "-c", "print('ran')"], {}, str(tmp_path / "none"))
    assert run_line(missing).stdout == "ran\n"


@pytest.mark.parametrize("agent,command,environ,message", [
    ("", ["p"], {}, "--rsh-agent is empty"),
    ("ssh", [], {}, "no program given"),
    ("ssh", ["p"], {"A-B": "1"}, r"cannot forward variables \['A-B'\] to h"),
])
def test_remote_command_errors(agent, command, environ, message):
    with pytest.raises(ValueError, match=message):
        rsh.remote_command(agent, "h", command, environ, "/")


def test_rank_commands_local_and_remote():
    places = host_launch.place_ranks([("localhost", 1), ("node1", 2)], 3)
    environ = {"PATH": "/b", "HOME": "/h", "CONCORD_X": "1"}
    starts = host_launch.rank_commands(places, ["prog", "arg"], "tcp-client:10.0.0.1:5", "run1", environ,
                                       "ssh -p 22", "/w", python="/py")
    guard = ["/py", "-m", "concord.rank_guard", "--store", "tcp-client:10.0.0.1:5", "--rank"]
    (local_argv, local_env), (remote_argv, remote_env), _ = starts
    assert local_argv == guard + ["0", "--", "prog", "arg"]
    assert local_env == {"PATH": "/b", "HOME": "/h", "CONCORD_X": "1", "RANK": "0", "WORLD_SIZE": "3",
                         "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1", "CONCORD_STORE": "tcp-client:10.0.0.1:5",
                         "CONCORD_RUN_ID": "run1", "CONCORD_RUN_LOCAL": "1"}
    assert remote_env is None and remote_argv[:3] == ["ssh", "-p", "22"] and remote_argv[3] == "node1"
    words = shlex.split(remote_argv[4])
    assert words[:3] == ["cd", "/w", "2>/dev/null;"] and words[3:5] == ["exec", "env"]
    assert "HOME=/h" not in words  # only the forwarded variables reach other hosts
    assert {"CONCORD_X=1", "PATH=/b", "RANK=1", "WORLD_SIZE=3", "LOCAL_RANK=0", "LOCAL_WORLD_SIZE=2",
            "CONCORD_STORE=tcp-client:10.0.0.1:5", "CONCORD_RUN_ID=run1"} <= set(words)
    assert words[-10:] == guard + ["1", "--", "prog", "arg"]


def test_hostfile(tmp_path):
    path = tmp_path / "hosts"
    path.write_text("# cluster\nnode0 slots=2\n\nnode1 slots=4 max_slots=8  # big\nnode2\n")
    assert hosts.parse_hostfile(str(path)) == [("node0", 2), ("node1", 4), ("node2", 1)]
    path.write_text("node0 slots=2\nnode1 slots=x\n")
    with pytest.raises(ValueError, match=r"line 2: bad slots 'x' in 'node1 slots=x'"):
        hosts.parse_hostfile(str(path))
    path.write_text("# nothing\n")
    with pytest.raises(ValueError, match="lists no host"):
        hosts.parse_hostfile(str(path))


def test_concord_run_passes_hosts_agent_and_settings(monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(host_launch, "run_hosts", lambda *a, **k: calls.append((a, k)) or 0)
    assert run.main(["--launcher", "local", "-np", "3", "-H", "node0:2,node1:2", "--rsh-agent", "ssh -p 2222",
                     "--store-address", "10.0.0.1", "--grace-seconds", "4", "--cycle-time-ms", "2", "p", "x"]) == 0
    (hosts_, np, command), kwargs = calls[-1]
    assert (hosts_, np, command) == ([("node0", 2), ("node1", 2)], 3, ["p", "x"])
    assert kwargs["rsh_agent"] == "ssh -p 2222" and kwargs["store_address"] == "10.0.0.1"
    assert kwargs["grace_seconds"] == 4 and kwargs["environ"]["CONCORD_CYCLE_TIME"] == "2.0"
    hostfile = tmp_path / "hosts"
    hostfile.write_text("node0 slots=1\nnode1 slots=1\n")
    run.main(["--launcher", "local", "-np", "2", "--hostfile", str(hostfile), "p"])
    assert calls[-1][0][0] == [("node0", 1), ("node1", 1)] and calls[-1][1]["rsh_agent"] == "ssh -o BatchMode=yes"


def start_guard(store_spec, command):
    """A rank guard over ``command`` with its standard input a pipe kept open."""
    return subprocess.Popen([PYTHON, "-m", "concord.rank_guard", "--store", store_spec, "--rank", "5",
                             "--poll-seconds", "0.2", "--store-timeout", "1", "--", *command],
                            stdin=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


SLEEPER = [PYTHON, "-c", "import time; time.sleep(120)"]


def test_guard_records_the_ranks_exit_status():
    server = _core.StoreServer(0)
    spec = f"tcp-client:127.0.0.1:{server.port()}"
    store = _core.Store(spec, 10.0)
    guard = start_guard(spec, [PYTHON, "-c", "import sys; sys.exit(3)"])
    assert guard.wait(60) == 3
    assert store.try_get(rank_guard.status_key(5)) == "exit status 3"
    guard = start_guard(spec, [PYTHON, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"])
    assert guard.wait(60) == 128 + 9
    assert store.try_get(rank_guard.status_key(5)) == "signal SIGKILL"


@pytest.mark.parametrize("how", ["store gone", "stop key", "stdin closed", "SIGTERM"])
def test_guard_ends_its_rank_with_the_launcher(how):
    server = _core.StoreServer(0)
    spec = f"tcp-client:127.0.0.1:{server.port()}"
    guard = start_guard(spec, SLEEPER)
    time.sleep(1.0)  # the guard started its rank and its watches
    assert guard.poll() is None, guard.stderr.read()
    start = time.monotonic()
    if how == "store gone":
        del server
    elif how == "stop key":
        _core.Store(spec, 10.0).set(rank_guard.stop_key(), "1")
    elif how == "stdin closed":
        guard.stdin.close()
    else:
        guard.terminate()
    code = guard.wait(30)
    seconds = time.monotonic() - start
    message = guard.stderr.read()
    assert code == 128 + 15, f"{how}: guard exit status {code}, stderr {message}"  # the rank got SIGTERM
    assert seconds < 10, f"{how}: the rank ended after {seconds:.1f} s"
    expected = {"store gone": "stopped answering", "stop key": "the launcher ended the job",
                "stdin closed": "session closed", "SIGTERM": "signal SIGTERM"}[how]
    assert f"rank 5 on {os.uname().nodename} ends: " in message and expected in message, message


@pytest.fixture
def fake_agent(tmp_path):
    """An rsh agent that runs the line here in a clean environment, as ssh on another host would."""
    agent = tmp_path / "agent"
    agent.write_text('#!/bin/bash\nhost="$1"; shift\nexec env -i HOME="$HOME" bash -c "$*"\n')
    agent.chmod(0o755)
    return str(agent)


def test_job_on_a_fake_other_host_gets_each_ranks_world(fake_agent, capfd):
    probe = ("import os; print('rank', os.environ['RANK'], 'of', os.environ['WORLD_SIZE'], 'local', "
             "os.environ['LOCAL_RANK'], 'of', os.environ['LOCAL_WORLD_SIZE'], 'cwd', os.getcwd(), "
             "'store', os.environ['CONCORD_STORE'].rsplit(':', 1)[0], flush=True)")
    code = host_launch.run_hosts([("localhost", 1), ("fakehost", 2)], 3, [PYTHON, "-c", probe],
                                 rsh_agent=fake_agent, store_address="127.0.0.1", grace_seconds=1)
    out = capfd.readouterr().out
    assert code == 0, out
    cwd, store = os.getcwd(), "tcp-client:127.0.0.1"
    for line in (f"rank 0 of 3 local 0 of 1 cwd {cwd} store {store}",
                 f"rank 1 of 3 local 0 of 2 cwd {cwd} store {store}",
                 f"rank 2 of 3 local 1 of 2 cwd {cwd} store {store}"):
        assert line in out, out


def test_failed_remote_rank_ends_the_job_naming_rank_and_host(fake_agent):
    marker = f"job-{uuid.uuid4().hex}"  # names this test's ranks (other ranks of the suite run it too)
    program = [PYTHON, "-c", "import os, sys, time; os.environ['RANK'] == '2' and sys.exit(3); time.sleep(120)",
               marker]
    start, report = time.monotonic(), io.StringIO()
    code = host_launch.run_hosts([("localhost", 2), ("fakehost", 2)], 4, program, rsh_agent=fake_agent,
                                 store_address="127.0.0.1", grace_seconds=1, out=report)
    seconds = time.monotonic() - start
    err = report.getvalue()
    assert code == 3, err
    assert "concord-run: rank 2 on fakehost failed (exit status 3); stopping the other ranks within 1 s" in err, err
    assert seconds < 30, f"the job took {seconds:.1f} s to end"
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split()
    assert not left, f"ranks left running: {left}"


def test_unreachable_host_is_named_with_the_agents_status(tmp_path):
    agent = tmp_path / "agent"
    agent.write_text('#!/bin/sh\necho "ssh: connect to host $1 port 22: No route to host" >&2\nexit 255\n')
    agent.chmod(0o755)
    report = io.StringIO()
    code = host_launch.run_hosts([("localhost", 1), ("deadhost", 1)], 2, [PYTHON, "-c", "import time; time.sleep(60)"],
                                 rsh_agent=str(agent), store_address="127.0.0.1", grace_seconds=0, out=report)
    assert code == 255, report.getvalue()
    assert ("concord-run: rank 1 on deadhost failed (exit status 255: the rsh agent could not run it on deadhost, "
            "or the connection was lost)") in report.getvalue(), report.getvalue()


#An rsh agent that behaves as ssh and sshd do: the command runs in a session of its own with
#pipes for its standard streams, relayed to and from the agent's; when the agent ends (the
#launcher stops it), the pipes close and nothing signals the command.
SSH_LIKE_AGENT = '''#!PYTHON
import os, signal, subprocess, sys, threading
remote = subprocess.Popen(["bash", "-c", sys.argv[2]], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, start_new_session=True)
def relay(source, target):
    for chunk in iter(lambda: os.read(source, 4096), b""):
        os.write(target, chunk)
    if target == remote.stdin.fileno():
        remote.stdin.close()
threading.Thread(target=relay, args=(0, remote.stdin.fileno()), daemon=True).start()
threading.Thread(target=relay, args=(remote.stdout.fileno(), 1), daemon=True).start()
threading.Thread(target=relay, args=(remote.stderr.fileno(), 2), daemon=True).start()
signal.signal(signal.SIGTERM, lambda *_: os._exit(255))
sys.exit(remote.wait())
'''


def test_remote_ranks_end_when_their_ssh_session_is_closed(tmp_path):
    """The launcher stops a remote rank by ending its ssh client; the guard then finds its
    input ended and its error stream closed, and must still end the rank (and not die of
    EPIPE while saying so)."""
    agent = tmp_path / "ssh"
    agent.write_text(SSH_LIKE_AGENT.replace("PYTHON", PYTHON))
    agent.chmod(0o755)
    marker = f"job-{uuid.uuid4().hex}"
    program = [PYTHON, "-c", "import os, sys, time; os.environ['RANK'] == '0' and sys.exit(5); time.sleep(120)",
               marker]
    report = io.StringIO()
    code = host_launch.run_hosts([("localhost", 1), ("fakehost", 2)], 3, program, rsh_agent=str(agent),
                                 store_address="127.0.0.1", grace_seconds=0, out=report)
    assert code == 5, report.getvalue()
    assert "concord-run: rank 0 on localhost failed (exit status 5)" in report.getvalue(), report.getvalue()
    deadline, left = time.monotonic() + 15, ["?"]
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split()
    assert not left, f"remote ranks left running after their sessions closed: {left}"
