"""Runs one rank of a multi-host ``concord-run --launcher local`` job on its host and ties
its life to the launcher's (concord.host_launch starts every rank under it, through the
rsh agent on other hosts): the rank ends when

* the launcher's store stops answering (the launcher is gone: killed, or its host lost);
  the store is asked every ``--poll-seconds``, each request given ``--store-timeout`` s;
* the launcher asks the ranks to stop (it sets :func:`stop_key` after a rank failed);
* its standard input closes (the launcher's end of the ssh session went away: ssh does
  not signal a remote command whose session ends, so it would otherwise run on);
* it gets SIGTERM, SIGHUP or SIGINT.

The rank then gets SIGTERM and, 5 s later, SIGKILL. When the rank exits, its exit status
in words (``exit status 3``, ``signal SIGKILL``) is recorded under :func:`status_key` for
the launcher's message, and the guard exits with the rank's status (128 + N for signal N).

    python3 -m concord.rank_guard --store tcp-client:HOST:PORT --rank R -- program args...
"""

import argparse
import os
import signal
import socket
import subprocess
import sys
import threading
import time

from concord.local_launch import describe_status, exit_code

STOP_GRACE_SECONDS = 5.0


def stop_key():
    """The store key the launcher sets when every rank must end."""
    return "concord-run/stop"


def status_key(rank):
    """The store key under which rank ``rank``'s guard records its exit status in words."""
    return f"concord-run/status/{rank}"


def exit_time_key(rank):
    """The store key under which rank ``rank``'s guard records when it saw the rank exit
    (seconds since the epoch, ``time.time()``): the launcher names the earliest failure when
    several ranks failed before it looked (a lost peer makes the others fail too)."""
    return f"concord-run/exit-time/{rank}"


class _Guard:
    """The watches of one rank (see the module docstring); ``reason`` is set by the first
    that fires, ``fired`` then set."""

    def __init__(self, store_spec, poll_seconds, store_timeout):
        self.store_spec, self.poll_seconds, self.store_timeout = store_spec, poll_seconds, store_timeout
        self.reason = None
        self.fired = threading.Event()

    def fire(self, reason):
        """Records the first reason the rank must end (later ones are ignored)."""
        if not self.fired.is_set():
            self.reason = reason
            self.fired.set()

    def watch_store(self):
        """Asks the launcher's store for the stop key every poll_seconds; fires when it is
        set or when the store does not answer within store_timeout."""
        from concord import _core
        try:
            store = _core.Store(self.store_spec, self.store_timeout)
            while not self.fired.wait(self.poll_seconds):
                if store.try_get(stop_key()) is not None:
                    self.fire("the launcher ended the job")
        except Exception as error:  # CommError: the store does not answer
            self.fire(f"the launcher's store {self.store_spec} stopped answering ({error})")

    def watch_stdin(self):
        """Reads standard input to its end (nothing is ever written to it); fires then."""
        try:
            while os.read(0, 4096):  # unbuffered: no lock held by this daemon thread at exit
                pass
        except OSError:
            pass
        self.fire("the launcher's session closed (standard input ended)")


def run(command, rank, store_spec, poll_seconds=1.0, store_timeout=5.0, out=sys.stderr):
    """Runs ``command`` as rank ``rank`` under the watches; returns the exit status."""
    guard = _Guard(store_spec, poll_seconds, store_timeout)
    previous = {sig: signal.signal(sig, lambda s, _f: guard.fire(f"signal {signal.Signals(s).name}"))
                for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)}
    try:
        child = subprocess.Popen(command, stdin=subprocess.DEVNULL)
    except OSError as error:
        _say(out, f"concord-run: rank {rank} on {socket.gethostname()}: cannot start {command[0]}: {error}")
        return 127
    exited = []  # when the rank was seen to exit

    def watch_child():
        child.wait()
        exited.append(time.time())
        guard.fire("the rank exited")

    for watch in (watch_child, guard.watch_store, guard.watch_stdin):
        threading.Thread(target=watch, daemon=True).start()
    try:
        while not guard.fired.wait(0.5):  # a timeout, so that the signal handlers run
            pass
        if not exited:
            child.terminate()
            _say(out, f"concord-run: rank {rank} on {socket.gethostname()} ends: {guard.reason}")
            try:
                child.wait(STOP_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                child.kill()
        code = child.wait()
    finally:
        if child.poll() is None:  # the guard itself failed: never leave the rank behind
            child.kill()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    _record(store_spec, rank, describe_status(code), exited[0] if exited else time.time())
    return exit_code(code)


def _say(out, text):
    """Writes ``text`` to ``out`` if it can: once the launcher's ssh session has closed,
    writing to it fails (EPIPE), and that must not keep the guard from ending its rank."""
    try:
        print(text, file=out, flush=True)
    except (OSError, ValueError):
        pass


def _record(store_spec, rank, text, when):
    """Records the rank's exit status and time for the launcher (nothing when the store is gone)."""
    from concord import _core
    try:
        store = _core.Store(store_spec, 2.0)
        store.set(exit_time_key(rank), repr(when))
        store.set(status_key(rank), text)
    except Exception:  # the launcher is gone: nobody to tell
        pass


def main(argv=None):
    """Entry point: ``rank_guard --store SPEC --rank R [--poll-seconds S] -- program args...``."""
    parser = argparse.ArgumentParser(prog="concord.rank_guard", description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", required=True, help="the launcher's store (tcp-client:HOST:PORT)")
    parser.add_argument("--rank", type=int, required=True)
    parser.add_argument("--poll-seconds", type=float, default=1.0)
    parser.add_argument("--store-timeout", type=float, default=5.0)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no program given")
    return run(command, args.rank, args.store, args.poll_seconds, args.store_timeout)


if __name__ == "__main__":
    sys.exit(main())
