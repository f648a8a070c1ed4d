"""``concord-run``: Horovod's ``horovodrun`` for Concord, a thin wrapper that builds and
runs the ``mpirun`` command of a data-parallel job, or (``--launcher local``) starts the
ranks itself, without MPI, over the UCX transport (``horovodrun --gloo``'s role): on this
host rendezvousing through a file store (python/concord/local_launch.py); with ``-H`` or
``--hostfile`` on those hosts, the ranks of other hosts started through ``--rsh-agent``
(default ``ssh -o BatchMode=yes``), rendezvousing through a TCP store concord-run serves
(python/concord/host_launch.py: placement, forwarded environment, ending the job when a
rank fails, naming the rank and its host).

    concord-run -np 4 python train.py
    concord-run --launcher local -np 4 python train.py
    concord-run --launcher local -np 8 -H host1:4,host2:4 --rsh-agent "ssh -p 2222" python train.py
    concord-run -np 8 -H host1:4,host2:4 --fusion-threshold-mb 32 --verbose python train.py
    concord-run -np 4 --min-np 2 --max-np 8 --host-discovery-script ./hosts.sh python train.py

With ``--min-np``, ``--max-np`` or ``--host-discovery-script`` the job is elastic
(Horovod's elastic horovodrun; python/concord/elastic/driver.py): workers start without
MPI, over the UCX transport, and a job that loses or gains workers re-forms its world and
continues from the last ``state.commit()`` of a function wrapped by
``hvd.elastic.run`` (docs/elastic.md).

The Horovod flags that apply are accepted (``-np``, ``-H``/``--hosts``, ``--hostfile``,
``--timeline-filename``, ``--cycle-time-ms``, ``--fusion-threshold-mb``,
``--cache-capacity``, ``--verbose``); the tuning flags become ``CONCORD_*`` environment
variables (docs/configuration.md) exported to every rank, together with ``PATH``,
``PYTHONPATH``, ``LD_LIBRARY_PATH`` and any ``CONCORD_*``, ``HOROVOD_*`` or ``UCX_*`` already set
(concord.rsh). Without ``-H`` or
``--hostfile`` the job runs on ``localhost:<np>`` (as horovodrun; no oversubscription
error when np exceeds the cores). Open MPI and MPICH (Hydra) command lines are produced;
``--mpi-args`` passes anything else to mpirun. ``--allocator jemalloc|tcmalloc`` preloads
that malloc into every rank (``LD_PRELOAD``), as PyTorch's CPU launcher
(``torch.backends.xeon.run_cpu --enable-jemalloc``) does: the per-tensor path allocates
on the framework thread and frees on the background thread, which glibc's malloc handles
slowly (docs/tuning.md, "Many small tensors").
"""

import argparse
import ctypes.util
import os
import shlex
import shutil
import subprocess
import sys

from concord.hosts import parse_hostfile, parse_hosts
from concord.rsh import forwarded_environment

#Open MPI's TCP transport for jobs on other hosts (docs/tuning.md, "Several hosts"), in
#groups of MCA parameters that go together; scripts / cluster.sh passes the same.Without PUT
#a large message goes in send fragments, so a simultaneous exchange's two directions run at
#once; messages up to 1 MiB(the algorithms' 512 KiB chunks) go eagerly, without a
#rendezvous round trip each(the rendezvous part must not exceed the eager limit, so the
#three sizes are one group).
TCP_SETTINGS = (
    {"btl_tcp_flags": "send,inplace,need-ack,need-csum"},
    {"btl_tcp_eager_limit": "1048576", "btl_tcp_rndv_eager_limit": "1048576", "btl_tcp_max_send_size": "1048576"},
)
#-- allocator : the library names ctypes.util.find_library looks up, and the Debian package.
_ALLOCATORS = {"jemalloc": (("jemalloc",), "libjemalloc2"),
               "tcmalloc": (("tcmalloc_minimal", "tcmalloc"), "libtcmalloc-minimal4")}


def allocator_preload(name, current=None):
    """The ``LD_PRELOAD`` value that loads allocator ``name`` ('jemalloc' or 'tcmalloc')
    before ``current`` (the existing LD_PRELOAD, if any).

    Raises:
        ValueError: the allocator's library is not installed (the message names the Debian
            package).
    """
    names, package = _ALLOCATORS[name]
    for library in names:
        found = ctypes.util.find_library(library)
        if found:
            return f"{found}:{current}" if current else found
    raise ValueError(f"concord-run: --allocator {name}: no lib{names[0]} found; install it "
                     f"(apt-get install {package}) or leave --allocator out")


def make_parser():
    """The argparse parser of concord-run."""
    parser = argparse.ArgumentParser(
        prog="concord-run", description="Run a Concord (Horovod-compatible) training script on N ranks: "
        "through mpirun, or (--launcher local) started by concord-run itself without MPI, on this host or, with "
        "-H/--hostfile, on several hosts through --rsh-agent (ssh).")
    parser.add_argument("-np", "--num-proc", dest="np", type=int,
                        help="number of ranks (elastic: workers to start with)")
    hosts = parser.add_mutually_exclusive_group()
    hosts.add_argument("-H", "--hosts", help="hosts and slots, e.g. host1:4,host2:4 (default localhost:NP)")
    hosts.add_argument("--hostfile", help="an MPI hostfile ('host slots=N' per line)")
    parser.add_argument("--timeline-filename", help="write a Chrome-trace timeline (CONCORD_TIMELINE)")
    parser.add_argument("--cycle-time-ms", type=float, help="background cycle time, ms (CONCORD_CYCLE_TIME)")
    parser.add_argument("--fusion-threshold-mb", type=float,
                        help="fusion buffer size, MiB (CONCORD_FUSION_THRESHOLD); 0 disables fusion")
    parser.add_argument("--cache-capacity", type=int, help="response cache entries (CONCORD_CACHE_CAPACITY)")
    parser.add_argument("--allocator", choices=sorted(_ALLOCATORS),
                        help="preload this malloc into every rank (LD_PRELOAD); faster with many small tensors")
    parser.add_argument("--mpi-args", default="", help="extra arguments for mpirun, one string")
    parser.add_argument("--verbose", action="store_true",
                        help="print the mpirun command (--launcher local on several hosts: each rank's) before "
                        "running it")
    parser.add_argument("--launcher", choices=("mpirun", "local"), default="mpirun",
                        help="mpirun (default), or local: start the ranks without MPI, over the UCX transport; "
                        "on this host with a file store, on the hosts of -H/--hostfile through --rsh-agent "
                        "with a TCP store served by concord-run")
    parser.add_argument("--rsh-agent", default="ssh -o BatchMode=yes",
                        help="--launcher local and elastic jobs: the command (and its options) that runs a "
                        "program on another host, as ssh takes it (default 'ssh -o BatchMode=yes')")
    parser.add_argument("--store-address",
                        help="--launcher local and elastic jobs: the address at which ranks on other hosts reach "
                        "concord-run's store (default: what this host's name resolves to)")
    parser.add_argument("--grace-seconds", type=float, default=10.0,
                        help="--launcher local: seconds the other ranks get to end by themselves after one "
                        "failed, before they are stopped (default 10)")
    elastic = parser.add_argument_group("elastic training (docs/elastic.md)")
    elastic.add_argument("--min-np", type=int, help="fewest workers a world may have (default -np)")
    elastic.add_argument("--max-np", type=int, help="most workers a world may have (default -np)")
    elastic.add_argument("--host-discovery-script",
                         help="executable printing the available hosts, one host[:slots] per line")
    elastic.add_argument("--slots-per-host", type=int, default=1,
                         help="slots of a discovered host printed without :slots (default 1)")
    elastic.add_argument("--elastic-timeout", type=float, default=600.0,
                         help="seconds to wait for --min-np workers before failing (default 600)")
    elastic.add_argument("--reset-limit", type=int, help="most world resets before failing (default none)")
    elastic.add_argument("--heartbeat-timeout", type=float, default=10.0,
                         help="seconds without a worker's heartbeat before it is declared lost (default 10)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the program and its arguments")
    return parser


def settings_env(args):
    """The CONCORD_* variables set by the flags, as a dict of strings.

    Raises:
        ValueError: a negative or non-finite value.
    """
    env = {}
    if args.timeline_filename:
        env["CONCORD_TIMELINE"] = os.path.abspath(args.timeline_filename)
    if args.cycle_time_ms is not None:
        if not args.cycle_time_ms >= 0 or args.cycle_time_ms == float("inf"):
            raise ValueError(f"concord-run: --cycle-time-ms must be >= 0, got {args.cycle_time_ms}")
        env["CONCORD_CYCLE_TIME"] = repr(args.cycle_time_ms)
    if args.fusion_threshold_mb is not None:
        if not args.fusion_threshold_mb >= 0 or args.fusion_threshold_mb == float("inf"):
            raise ValueError(f"concord-run: --fusion-threshold-mb must be >= 0, got {args.fusion_threshold_mb}")
        env["CONCORD_FUSION_THRESHOLD"] = str(int(args.fusion_threshold_mb * 1024 * 1024))
    if args.cache_capacity is not None:
        if args.cache_capacity < 0:
            raise ValueError(f"concord-run: --cache-capacity must be >= 0, got {args.cache_capacity}")
        env["CONCORD_CACHE_CAPACITY"] = str(args.cache_capacity)
    return env


def _usable_cores():
    """The CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def mpi_flavour(mpirun="mpirun"):
    """'openmpi' or 'mpich' from ``mpirun --version`` (Open MPI when it cannot tell)."""
    try:
        text = subprocess.run([mpirun, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "openmpi"
    return "mpich" if ("HYDRA" in text or "MPICH" in text) and "Open MPI" not in text else "openmpi"


def build_command(args, flavour="openmpi", environ=None, is_root=False, cores=None):
    """The mpirun command (a list of strings) for parsed ``args``.

    Args:
        args: the namespace of :func:`make_parser`.
        flavour (str): 'openmpi' or 'mpich'.
        environ (dict): the environment whose PATH/PYTHONPATH/LD_LIBRARY_PATH/CONCORD_*/
            HOROVOD_* are forwarded (default ``os.environ``); the flags' settings override it.
        is_root (bool): add Open MPI's ``--allow-run-as-root``.
        cores (int): the CPUs this process may run on (default: its affinity mask, so a
            container's CPU limit counts, else ``os.cpu_count()``). With Open MPI, a
            job on localhost with more ranks than cores gets ``--mca mpi_yield_when_idle 1``:
            ``-H localhost:NP`` declares NP slots, so Open MPI would not know that it is
            oversubscribed and would busy-poll, each waiting rank taking the core another
            needs (10x slower small collectives measured on 2 cores at 4 ranks).
            A job on other hosts (``-H`` naming a host other than localhost, or
            ``--hostfile``) gets ``--mca NAME VALUE`` for each group of
            :data:`TCP_SETTINGS` none of whose names ``--mpi-args`` or an ``OMPI_MCA_NAME``
            variable sets.
            Without ``btl_tcp_flags`` Open MPI 4.1's TCP BTL sends a large message as one
            PUT fragment, a simultaneous exchange's other direction waits behind it, and
            about half of the 16 MiB exchanges between two hosts took twice the one-way
            time; with its default 64 KiB eager limit every larger message waits for a
            rendezvous round trip, which made 256 KiB recursive doubling 6x and 64 MiB
            trees 1.7x slower at 8 hosts (docs/troubleshooting.md).

    Raises:
        ValueError: np < 1, no command, a bad -H entry, fewer slots than ranks, a bad
        setting, an --allocator that is not installed.
    """
    environ = os.environ if environ is None else environ
    if args.np < 1:
        raise ValueError(f"concord-run: -np must be >= 1, got {args.np}")
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise ValueError("concord-run: no program given (e.g. concord-run -np 2 python train.py)")
    hosts = parse_hosts(args.hosts) if args.hosts else None
    if hosts is not None and sum(slots for _, slots in hosts) < args.np:
        raise ValueError(f"concord-run: -np {args.np} but -H '{args.hosts}' has only "
                         f"{sum(slots for _, slots in hosts)} slots")
    if args.hostfile and not os.path.isfile(args.hostfile):
        raise ValueError(f"concord-run: hostfile '{args.hostfile}' does not exist")
    if hosts is None and not args.hostfile:
        hosts = [("localhost", args.np)]
    env = forwarded_environment(environ)
    env.update(settings_env(args))
    if args.allocator:
        env["LD_PRELOAD"] = allocator_preload(args.allocator, environ.get("LD_PRELOAD"))
    host_list = ",".join(f"{host}:{slots}" for host, slots in hosts) if hosts else None

    cmd = ["mpirun", "-np", str(args.np)]
    if flavour == "mpich":
        cmd += ["-hostfile", args.hostfile] if args.hostfile else ["-hosts", host_list]
        for key in sorted(env):
            cmd += ["-genv", key, env[key]]
    else:
        if is_root:
            cmd.append("--allow-run-as-root")
        cmd += ["--hostfile", args.hostfile] if args.hostfile else ["-H", host_list]
        cmd += ["--bind-to", "none", "--map-by", "slot"]
        local = not args.hostfile and all(host == "localhost" for host, _ in hosts)
        if local and args.np > (cores or _usable_cores()):
            cmd += ["--mca", "mpi_yield_when_idle", "1"]
        if not local:
            words = shlex.split(args.mpi_args)  # "--mca NAME V" or "-x OMPI_MCA_NAME=V"
            given = set(words) | {w[len("OMPI_MCA_"):].split("=", 1)[0] for w in words if w.startswith("OMPI_MCA_")}
            given |= {k[len("OMPI_MCA_"):] for k, v in environ.items() if k.startswith("OMPI_MCA_") and v}
            for group in TCP_SETTINGS:
                if not given & group.keys():
                    for name, value in group.items():
                        cmd += ["--mca", name, value]
        for key in sorted(env):
            cmd += ["-x", f"{key}={env[key]}"]
    cmd += shlex.split(args.mpi_args)
    return cmd + command


def main(argv=None):
    """Entry point of ``concord-run``: parse, build, optionally print, then run mpirun and
    return its exit status (2 for a usage error, with the reason on stderr)."""
    parser = make_parser()
    args = parser.parse_args(argv)
    if args.min_np is not None or args.max_np is not None or args.host_discovery_script:
        return _run_elastic(parser, args)
    if args.np is None:
        parser.error("-np is required (or --min-np/--max-np for an elastic job)")
    if args.launcher == "local":
        return _run_local(parser, args)
    if shutil.which("mpirun") is None:
        parser.error("mpirun was not found on PATH (install Open MPI: apt-get install openmpi-bin)")
    try:
        cmd = build_command(args, mpi_flavour(), is_root=hasattr(os, "geteuid") and os.geteuid() == 0)
    except ValueError as error:
        parser.error(str(error))
    if args.verbose:
        print(" ".join(shlex.quote(part) for part in cmd), flush=True)
    return subprocess.call(cmd)


def _run_local(parser, args):
    """concord-run --launcher local: the flags' settings exported; the ranks started on this
    host by local_launch.run_local, or, with -H/--hostfile, on those hosts by
    host_launch.run_hosts (other hosts through --rsh-agent)."""
    from concord import host_launch
    env = dict(os.environ)
    try:
        env.update(settings_env(args))
        if args.allocator:
            env["LD_PRELOAD"] = allocator_preload(args.allocator, os.environ.get("LD_PRELOAD"))
        if not args.grace_seconds >= 0:
            raise ValueError(f"concord-run: --grace-seconds must be >= 0, got {args.grace_seconds}")
        hosts = (parse_hosts(args.hosts) if args.hosts else parse_hostfile(args.hostfile) if args.hostfile
                 else [("localhost", args.np)])
        command = args.command[1:] if args.command[:1] == ["--"] else list(args.command)
        return host_launch.run_hosts(hosts, args.np, command, rsh_agent=args.rsh_agent,
                                     store_address=args.store_address, grace_seconds=args.grace_seconds,
                                     environ=env, verbose=args.verbose)
    except ValueError as error:
        parser.error(str(error))


def _run_elastic(parser, args):
    """concord-run --min-np/--max-np/--host-discovery-script: the elastic driver
    (concord.elastic.driver) with the flags' settings exported to every worker."""
    from concord.elastic.driver import ElasticDriver
    if args.hostfile:
        parser.error("elastic mode takes -H or --host-discovery-script, not --hostfile")
    try:
        env = dict(os.environ)
        env.update(settings_env(args))
        if args.allocator:
            env["LD_PRELOAD"] = allocator_preload(args.allocator, os.environ.get("LD_PRELOAD"))
        np = args.np if args.np is not None else args.min_np
        hosts = parse_hosts(args.hosts) if args.hosts else (None if args.host_discovery_script else
                                                             [("localhost", args.max_np or np or 1)])
        command = args.command[1:] if args.command[:1] == ["--"] else list(args.command)
        driver = ElasticDriver(command, np=np, min_np=args.min_np or np or 1, max_np=args.max_np, hosts=hosts,
                               discovery_script=args.host_discovery_script, slots=args.slots_per_host,
                               elastic_timeout=args.elastic_timeout, reset_limit=args.reset_limit,
                               heartbeat_timeout=args.heartbeat_timeout, rsh_agent=args.rsh_agent,
                               store_address=args.store_address, environ=env)
    except ValueError as error:
        parser.error(str(error))
    return driver.run()


if __name__ == "__main__":
    sys.exit(main())
