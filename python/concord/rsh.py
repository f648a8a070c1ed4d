"""Starting ranks on other hosts without MPI, shared by concord-run's launchers (the
multi-host ``--launcher local`` of concord.host_launch and the elastic driver of
concord.elastic.driver), as ``horovodrun --gloo`` does: the launcher serves a TCP store
(Concord's ZeroMQ store; ranks reach it as ``tcp-client:ADDRESS:PORT``) and runs each remote
rank's command line through an rsh agent (``ssh`` by default), with the environment it
forwards and the launcher's working directory.

A host named ``localhost``, ``127.0.0.1`` or this machine's host name is this host: its
ranks start without the agent.
"""

import shlex
import socket

#Variables forwarded to the ranks, whole names and prefixes. HOROVOD_*: Concord honours
#Horovod's names for its settings (docs/tuning.md); UCX_*: the launchers without MPI run
#over the UCX transport, whose settings a user gives as UCX's variables.
FORWARDED_NAMES = ("PATH", "PYTHONPATH", "LD_LIBRARY_PATH")
FORWARDED_PREFIXES = ("CONCORD_", "HOROVOD_", "UCX_")
LOCAL_NAMES = ("localhost", "127.0.0.1")


def forwarded_environment(environ):
    """The part of ``environ`` (a mapping) that concord-run exports to every rank: PATH,
    PYTHONPATH, LD_LIBRARY_PATH and every CONCORD_*, HOROVOD_* and UCX_* variable (a dict)."""
    return {k: v for k, v in environ.items() if k in FORWARDED_NAMES or k.startswith(FORWARDED_PREFIXES)}


def is_local(host):
    """True when ``host`` names this machine (localhost, 127.0.0.1 or its host name)."""
    return host in LOCAL_NAMES or host == socket.gethostname()


def store_address(hosts, given=None):
    """The address at which every rank reaches the launcher's store: 127.0.0.1 when all
    ``hosts`` (a list of (host, slots)) are this machine, else ``given`` (concord-run's
    --store-address) or the address this host name resolves to.

    Raises:
        ValueError: the host name does not resolve (the message says to pass --store-address).
    """
    if all(is_local(host) for host, _ in hosts):
        return "127.0.0.1"
    if given:
        return given
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError as error:
        raise ValueError(f"concord-run: this host's name '{socket.gethostname()}' does not resolve ({error}); "
                         "pass --store-address with the address the other hosts reach it at") from error


def serve_store():
    """Starts serving a TCP store on a port the system picks; returns the server (a
    ``concord._core.StoreServer``: it serves until garbage-collected; ``port()`` says where)."""
    from concord import _core
    return _core.StoreServer(0)


def remote_command(agent, host, command, environ, cwd):
    """The argument list that runs ``command`` on ``host`` through the rsh agent, as ssh
    takes it: ``agent + [host, LINE]``, LINE being one shell command line that changes to
    ``cwd`` (when the directory exists there, as horovodrun does) and runs the command under
    ``env`` with ``environ``'s variables, every word quoted for the remote shell.

    Args:
        agent (str or list of str): the rsh agent and its options (``ssh -o BatchMode=yes``);
            a string is split as a shell would.
        host (str): the host name the agent is given.
        command (list of str): the program and its arguments.
        environ (dict): the variables to set on the remote host (str -> str).
        cwd (str): the working directory.

    Raises:
        ValueError: an empty agent or command, or a variable name that is not an identifier.
    """
    words = shlex.split(agent) if isinstance(agent, str) else list(agent)
    if not words:
        raise ValueError("concord-run: --rsh-agent is empty")
    if not command:
        raise ValueError("concord-run: no program given")
    bad = [name for name in environ if not name.isidentifier()]
    if bad:
        raise ValueError(f"concord-run: cannot forward variables {bad} to {host}: not shell names")
    line = ["env"] + [f"{k}={v}" for k, v in sorted(environ.items())] + list(command)
    quoted = shlex.quote(cwd)
    return words + [host, f"cd {quoted} 2>/dev/null; exec " + " ".join(shlex.quote(w) for w in line)]
