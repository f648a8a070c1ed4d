"""``concord-run --launcher local -H host1:2,host2:2`` (or ``--hostfile``): the ranks of a
job on several hosts without MPI, as ``horovodrun --gloo`` starts them. The launcher serves
the job's TCP store (concord.rsh; ranks rendezvous through it as ``tcp-client:ADDRESS:PORT``
and run over the UCX transport), starts the ranks of this host itself and those of other
hosts through the rsh agent (``ssh -o BatchMode=yes`` by default), each under
concord.rank_guard, and reaps them all.

* Ranks fill the hosts' slots in order (host1's first), as ``mpirun --map-by slot``; each
  gets ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK`` and ``LOCAL_WORLD_SIZE`` (its index among,
  and the number of, the job's ranks on its host), ``CONCORD_STORE`` and ``CONCORD_RUN_ID``.
* Ranks on other hosts get the variables concord-run forwards (concord.rsh) and start in the
  launcher's working directory; ranks on this host get the launcher's whole environment.
* When a rank fails, the job ends: the others get ``grace_seconds`` to end by themselves
  (Concord reports the lost peer), then the launcher sets the store's stop key, SIGTERMs
  every rank's process (a remote rank's ssh client: its guard sees the session close) and
  SIGKILLs it 5 s later; the message names the rank, its host and its exit status. A rank
  whose launcher is gone (its store no longer answers) ends within seconds.

A job whose hosts are all this machine runs as concord.local_launch does (a file store).
"""

import os
import shlex
import signal
import subprocess
import sys
import uuid

from concord import local_launch, rank_guard, rsh


#Seconds the launcher waits after seeing a rank fail for other failures, to name the earliest
#(by the guards' exit times): a lost rank's peers fail too, and may be reaped before it.
SETTLE_SECONDS = 1.0


def _interrupt(signum, _frame):
    raise KeyboardInterrupt(signal.Signals(signum).name)


def place_ranks(hosts, np):
    """The host, local rank and local size of ranks 0..np-1 filling ``hosts`` (a list of
    (host, slots)) in order: a list of ``(host, local_rank, local_size)``.

    Raises:
        ValueError: np < 1, or fewer slots than np (the message gives both).
    """
    if np < 1:
        raise ValueError(f"concord-run: -np must be >= 1, got {np}")
    slots = sum(count for _, count in hosts)
    if slots < np:
        hosts_text = ",".join(f"{host}:{count}" for host, count in hosts)
        raise ValueError(f"concord-run: -np {np} but the hosts {hosts_text} have only {slots} slots")
    places, left = [], np
    for host, count in hosts:
        used = min(count, left)
        places += [(host, local_rank, used) for local_rank in range(used)]
        left -= used
    return places


def rank_commands(places, command, store_spec, run_id, environ, rsh_agent, cwd, python=sys.executable):
    """The argument list and environment that start each rank: a list of ``(argv, env)``,
    ``env`` None for a rank on another host (its variables are in ``argv``, for the agent).

    Args:
        places (list): :func:`place_ranks`'s result.
        command (list of str): the rank's program and arguments.
        store_spec (str): the launcher's store (``tcp-client:ADDRESS:PORT``).
        run_id (str): the job's CONCORD_RUN_ID.
        environ (dict): the launcher's environment with concord-run's settings.
        rsh_agent (str): the rsh agent and its options.
        cwd (str): the working directory of remote ranks.
        python (str): the Python that runs concord.rank_guard (the same path on every host,
            as horovodrun assumes).
    """
    size, result = len(places), []
    for rank, (host, local_rank, local_size) in enumerate(places):
        settings = local_launch.rank_environment({}, rank, size, store_spec, run_id, local_rank, local_size)
        guarded = [python, "-m", "concord.rank_guard", "--store", store_spec, "--rank", str(rank), "--", *command]
        if rsh.is_local(host):
            result.append((guarded, {**environ, **settings}))
        else:
            env = {**rsh.forwarded_environment(environ), **settings}
            result.append((rsh.remote_command(rsh_agent, host, guarded, env, cwd), None))
    return result


def run_hosts(hosts, np, command, rsh_agent="ssh -o BatchMode=yes", store_address=None, grace_seconds=10.0,
              environ=None, out=sys.stderr, verbose=False):
    """Runs ``command`` as ``np`` ranks on ``hosts`` (a list of (host, slots)); returns the
    job's exit status: 0 when every rank exits 0, else the first failing rank's (128 + N for
    a signal N). See the module docstring. ``verbose``: print each rank's command line
    (the rsh agent's, for a rank on another host) to ``out`` before starting it.

    Raises:
        ValueError: np < 1, too few slots, an empty command or agent, an unresolvable host name.
    """
    from concord import _core
    environ = dict(os.environ if environ is None else environ)
    places = place_ranks(hosts, np)
    if not command:
        raise ValueError("concord-run: no program given")
    used_hosts = [(host, 1) for host, _, _ in places]
    if all(rsh.is_local(host) for host, _ in used_hosts):
        return local_launch.run_local(np, command, grace_seconds, environ, out)
    address = rsh.store_address(used_hosts, store_address)
    server = rsh.serve_store()
    store_spec = f"tcp-client:{address}:{server.port()}"
    store = _core.Store(f"tcp-client:127.0.0.1:{server.port()}", 30.0)
    starts = rank_commands(places, command, store_spec, "concord-run-" + uuid.uuid4().hex[:12], environ,
                           rsh_agent, os.getcwd())
    names = [f"rank {rank} on {host}" for rank, (host, _, _) in enumerate(places)]
    procs = []

    def describe(index, code):
        recorded = store.try_get(rank_guard.status_key(index))
        if recorded is not None:
            return recorded
        text = local_launch.describe_status(code)
        if code == 255 and not rsh.is_local(places[index][0]):
            text += f": the rsh agent could not run it on {places[index][0]}, or the connection was lost"
        return text

    def exited_at(index):
        recorded = store.try_get(rank_guard.exit_time_key(index))
        return float(recorded) if recorded is not None else float("inf")

    previous = {sig: signal.signal(sig, _interrupt) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        for name, (argv, env) in zip(names, starts):
            if verbose:
                print(f"concord-run: {name}: {shlex.join(argv)}", file=out, flush=True)
            # The pipe stays open (nothing is written): its end tells the guard the launcher is gone.
            procs.append(subprocess.Popen(argv, env=env, stdin=subprocess.PIPE))
        return local_launch.supervise(procs, grace_seconds, out, names, describe,
                                      stop=lambda: store.set(rank_guard.stop_key(), "1"), order=exited_at,
                                      settle_seconds=SETTLE_SECONDS)
    except KeyboardInterrupt as interrupt:
        print(f"concord-run: interrupted ({interrupt or 'SIGINT'}); stopping every rank", file=out, flush=True)
        store.set(rank_guard.stop_key(), "1")
        return 130
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        _end(procs)  # the store stops serving when run_hosts returns (server is freed)


def _end(procs):
    """Ends the processes still running: SIGTERM (a guard then ends its rank), SIGKILL when
    one is still there after the guard's own grace; reaps them all."""
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
    for proc in procs:
        try:
            proc.wait(rank_guard.STOP_GRACE_SECONDS + 2)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdin.close()
