"""concord-run (concord/run.py): the mpirun command built from Horovod's horovodrun flags,
for Open MPI and MPICH, and every usage error. Pure command construction: no process is
started here (the end-to-end run is the python.concord_run test)."""

import os
import pathlib
import re
import subprocess

import pytest

from concord import run


def build(argv, flavour="openmpi", environ=None, is_root=False, cores=64):
    return run.build_command(run.make_parser().parse_args(argv), flavour, environ or {}, is_root, cores)


def test_default_is_localhost_with_np_slots():
    cmd = build(["-np", "3", "python", "train.py", "--epochs", "2"])
    assert cmd == ["mpirun", "-np", "3", "-H", "localhost:3", "--bind-to", "none", "--map-by", "slot",
                   "python", "train.py", "--epochs", "2"]


def test_more_local_ranks_than_cores_yield_when_idle():
    yield_flag = ["--mca", "mpi_yield_when_idle", "1"]
    cmd = build(["-np", "4", "python", "x.py"], cores=2)
    assert cmd[9:12] == yield_flag and cmd[-2:] == ["python", "x.py"]
    assert "mpi_yield_when_idle" not in build(["-np", "2", "p"], cores=2)
    assert "mpi_yield_when_idle" not in build(["-np", "4", "-H", "a:2,b:2", "p"], cores=2)  # other hosts' cores
    assert "mpi_yield_when_idle" not in build(["-np", "4", "p"], flavour="mpich", cores=2)


def mca(cmd):
    return {cmd[i + 1]: cmd[i + 2] for i, word in enumerate(cmd) if word == "--mca"}


ALL_TCP_SETTINGS = {name: value for group in run.TCP_SETTINGS for name, value in group.items()}
SIZES = ("btl_tcp_eager_limit", "btl_tcp_rndv_eager_limit", "btl_tcp_max_send_size")


def test_jobs_on_other_hosts_get_the_tcp_settings():
    cmd = build(["-np", "4", "-H", "a:2,b:2", "p"])
    assert mca(cmd) == ALL_TCP_SETTINGS and cmd[-1] == "p"
    assert all(cmd.count(name) == 1 for name in ALL_TCP_SETTINGS)  # each once
    assert mca(cmd)["btl_tcp_flags"] == "send,inplace,need-ack,need-csum"  # no PUT
    assert int(mca(cmd)["btl_tcp_eager_limit"]) >= 512 << 10  # the algorithms' chunks go eagerly
    assert int(mca(cmd)["btl_tcp_rndv_eager_limit"]) <= int(mca(cmd)["btl_tcp_eager_limit"])  # Open MPI's rule
    assert mca(build(["-np", "4", "--hostfile", __file__, "p"])) == ALL_TCP_SETTINGS  # a hostfile: other hosts
    assert mca(build(["-np", "4", "p"])) == {}  # localhost: shared memory, no TCP
    assert mca(build(["-np", "4", "-H", "localhost:4", "p"])) == {}
    assert "btl_tcp_flags" not in build(["-np", "4", "-H", "a:2,b:2", "p"], flavour="mpich")


def test_a_tcp_setting_of_the_user_replaces_its_whole_group():
    mine = build(["-np", "4", "-H", "a:2,b:2", "--mpi-args=--mca btl_tcp_flags send", "p"])
    assert mine.count("btl_tcp_flags") == 1 and mine[mine.index("btl_tcp_flags") + 1] == "send"
    assert all(mca(mine)[name] == ALL_TCP_SETTINGS[name] for name in SIZES)  # the other group still comes
    # an eager limit of the user's: no rendezvous limit above it, no fragment size of ours
    small = build(["-np", "4", "-H", "a:2,b:2", "--mpi-args=--mca btl_tcp_eager_limit 4096", "p"])
    assert small.count("btl_tcp_eager_limit") == 1 and small[small.index("btl_tcp_eager_limit") + 1] == "4096"
    assert not set(mca(small)) & {"btl_tcp_rndv_eager_limit", "btl_tcp_max_send_size"}
    assert mca(small)["btl_tcp_flags"] == ALL_TCP_SETTINGS["btl_tcp_flags"]
    env = mca(build(["-np", "4", "-H", "a:2,b:2", "p"], environ={"OMPI_MCA_btl_tcp_max_send_size": "65536"}))
    assert not set(env) & set(SIZES) and "btl_tcp_flags" in env
    env = mca(build(["-np", "4", "-H", "a:2,b:2", "p"], environ={"OMPI_MCA_btl_tcp_flags": "send"}))
    assert "btl_tcp_flags" not in env and set(SIZES) <= set(env)
    assert "btl_tcp_flags" in mca(build(["-np", "4", "-H", "a:2,b:2", "p"], environ={"OMPI_MCA_btl_tcp_flags": ""}))
    exported = build(["-np", "4", "-H", "a:2,b:2", "--mpi-args=-x OMPI_MCA_btl_tcp_max_send_size=65536", "p"])
    assert not set(mca(exported)) & set(SIZES) and "btl_tcp_flags" in mca(exported)


def test_the_testbed_passes_the_same_tcp_settings():
    # scripts/cluster.sh keeps its own copy (bash): the same groups as concord-run's.
    script = (pathlib.Path(__file__).resolve().parents[2] / "scripts" / "cluster.sh").read_text()
    table = re.search(r"^tcp_settings=\(([^)]*)\)", script, re.MULTILINE).group(1)
    groups = [dict(row.split("=", 1) for row in group.split()) for group in re.findall(r'"([^"]*)"', table)]
    assert groups == list(run.TCP_SETTINGS)


def cluster_tcp_flags(flags="", environ=None):
    """The --mca flags that scripts/cluster.sh's TCP settings block adds (run alone in bash)."""
    script = (pathlib.Path(__file__).resolve().parents[2] / "scripts" / "cluster.sh").read_text()
    block = re.search(r"^# Groups of NAME=VALUE.*?^done$", script, re.MULTILINE | re.DOTALL).group(0)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "CONCORD_CLUSTER_MPIRUN_FLAGS": flags, **(environ or {})}
    out = subprocess.run(["bash", "-c", "set -euo pipefail; mpirun_flags=()\n" + block +
                          '\nprintf "%s\\n" "${mpirun_flags[@]+"${mpirun_flags[@]}"}"'],
                         env=env, capture_output=True, text=True, check=True).stdout.split()
    return mca(out)


def test_the_testbed_leaves_out_a_group_the_user_sets():
    assert cluster_tcp_flags() == ALL_TCP_SETTINGS
    assert cluster_tcp_flags("--mca btl_tcp_flags send") == {name: ALL_TCP_SETTINGS[name] for name in SIZES}
    only_flags = {"btl_tcp_flags": ALL_TCP_SETTINGS["btl_tcp_flags"]}
    assert cluster_tcp_flags("--mca btl_tcp_eager_limit 4096") == only_flags
    assert cluster_tcp_flags("-x OMPI_MCA_btl_tcp_max_send_size=65536") == only_flags
    assert cluster_tcp_flags(environ={"OMPI_MCA_btl_tcp_rndv_eager_limit": "4096"}) == only_flags
    assert cluster_tcp_flags("--mca btl_tcp_flags send --mca btl_tcp_eager_limit 4096") == {}


def test_hosts_settings_and_forwarded_environment():
    cmd = build(["-np", "4", "-H", "a:2,b:2", "--timeline-filename", "/tmp/t.json", "--cycle-time-ms", "2.5",
                 "--fusion-threshold-mb", "32", "--cache-capacity", "0", "--mpi-args=--tag-output",
                 "python", "x.py"],
                environ={"PYTHONPATH": "/p", "HOME": "/h", "CONCORD_LOG_LEVEL": "debug",
                         "HOROVOD_DYNAMIC_PROCESS_SETS": "1"}, is_root=True)
    assert cmd[:6] == ["mpirun", "-np", "4", "--allow-run-as-root", "-H", "a:2,b:2"]
    exported = [cmd[i + 1] for i, part in enumerate(cmd) if part == "-x"]
    assert exported == ["CONCORD_CACHE_CAPACITY=0", "CONCORD_CYCLE_TIME=2.5",
                        f"CONCORD_FUSION_THRESHOLD={32 * 1024 * 1024}", "CONCORD_LOG_LEVEL=debug",
                        "CONCORD_TIMELINE=/tmp/t.json", "HOROVOD_DYNAMIC_PROCESS_SETS=1", "PYTHONPATH=/p"]
    assert cmd[-3:] == ["--tag-output", "python", "x.py"]


def test_mpich_command_line(tmp_path):
    hostfile = tmp_path / "hosts"
    hostfile.write_text("a slots=2\n")
    cmd = build(["-np", "2", "--hostfile", str(hostfile), "--cache-capacity", "7", "prog"], flavour="mpich")
    assert cmd == ["mpirun", "-np", "2", "-hostfile", str(hostfile), "-genv", "CONCORD_CACHE_CAPACITY", "7", "prog"]
    assert build(["-np", "2", "-H", "a,b", "prog"], flavour="mpich")[3:5] == ["-hosts", "a:1,b:1"]


def test_allocator_is_preloaded_in_every_rank(monkeypatch):
    found = {"jemalloc": "libjemalloc.so.2", "tcmalloc_minimal": "libtcmalloc_minimal.so.4"}
    monkeypatch.setattr(run.ctypes.util, "find_library", found.get)
    cmd = build(["-np", "2", "--allocator", "jemalloc", "p"])
    assert "LD_PRELOAD=libjemalloc.so.2" in cmd
    cmd = build(["-np", "2", "--allocator", "tcmalloc", "p"], environ={"LD_PRELOAD": "libx.so"})
    assert "LD_PRELOAD=libtcmalloc_minimal.so.4:libx.so" in cmd
    assert not any(part.startswith("LD_PRELOAD") for part in build(["-np", "2", "p"], environ={"LD_PRELOAD": "y"}))
    monkeypatch.setattr(run.ctypes.util, "find_library", lambda name: None)
    with pytest.raises(ValueError, match=r"--allocator jemalloc: no libjemalloc found; install it \(apt-get install "
                                         r"libjemalloc2\)"):
        build(["-np", "2", "--allocator", "jemalloc", "p"])


@pytest.mark.parametrize("argv,message", [
    (["-np", "0", "p"], "-np must be >= 1"),
    (["-np", "2"], "no program given"),
    (["-np", "5", "-H", "a:2,b:2", "p"], "has only 4 slots"),
    (["-np", "1", "-H", "a:x", "p"], "bad host entry 'a:x'"),
    (["-np", "1", "-H", "a:0", "p"], "bad host entry"),
    (["-np", "1", "-H", "a,,b", "p"], "bad host entry ''"),
    (["-np", "1", "--hostfile", "/nonexistent/hosts", "p"], "does not exist"),
    (["-np", "1", "--cycle-time-ms", "-1", "p"], "--cycle-time-ms must be >= 0"),
    (["-np", "1", "--fusion-threshold-mb", "nan", "p"], "--fusion-threshold-mb must be >= 0"),
    (["-np", "1", "--cache-capacity", "-3", "p"], "--cache-capacity must be >= 0"),
])
def test_usage_errors(argv, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        build(argv)


def test_parser_errors_exit_with_usage(capsys):
    with pytest.raises(SystemExit):
        run.make_parser().parse_args(["-np", "2", "-H", "a:1", "--hostfile", "f", "p"])  # mutually exclusive
    with pytest.raises(SystemExit) as exit_info:
        run.main(["python", "x.py"])  # -np is required unless the job is elastic
    assert exit_info.value.code == 2 and "-np is required" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        run.main(["-np", "4", "--min-np", "2", "--max-np", "3", "p"])
    assert exit_info.value.code == 2 and "--min-np (2) <= -np (4) <= --max-np (3)" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        run.main(["-np", "0", "p"])
    assert exit_info.value.code == 2 and "-np must be >= 1" in capsys.readouterr().err
