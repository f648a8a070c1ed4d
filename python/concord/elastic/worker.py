"""The worker side of elastic training: joining each world the driver forms, the heartbeat,
and the watch on the store that aborts an abandoned world and announces host updates.

A worker started by ``concord-run --min-np/--max-np`` has ``CONCORD_ELASTIC_STORE``
(``tcp-client:HOST:PORT``), ``CONCORD_ELASTIC_SLOT`` (``host:index``) and
``CONCORD_ELASTIC_JOB`` in its environment; :func:`current` returns its one
:class:`ElasticWorker`, or None outside an elastic job.
"""

import json
import os
import socket
import sys
import threading
import time

import concord
from concord import _core
from concord.elastic import protocol


class HostsUpdatedInterrupt(RuntimeError):
    """Raised by ``commit()`` / ``check_host_updates()`` on every rank at once when the
    driver added or removed hosts (Horovod's name and meaning). ``skip_sync`` is True when
    hosts were only removed: the survivors hold the same state, so the next world need
    not broadcast it."""

    def __init__(self, skip_sync=False):
        super().__init__("hosts were added or removed: the world is re-formed")
        self.skip_sync = skip_sync


class ElasticWorker:
    """This process's membership of an elastic job.

    Args:
        store_spec (str): the driver's store (``tcp-client:HOST:PORT``).
        slot (str): this worker's slot, ``host:index``.
        job (str): the job id (prefix of each world's rendezvous run id).
        timeout (float): seconds to wait for a new world before giving up (the driver's
            ``--elastic-timeout``).
    """

    def __init__(self, store_spec, slot, job, timeout):
        self.store_spec, self.slot, self.job, self.timeout = store_spec, slot, job, timeout
        self.generation = -1
        self.init_kwargs = {}
        self._store = _core.Store(store_spec, 30.0)
        self._lock = threading.Lock()
        self._listeners = []
        self._aborted = set()     # generations whose world this worker aborted
        self._announced = set()   # generations whose host update was passed on
        self._store.set(protocol.pid_key(slot), f"{socket.gethostname()} {os.getpid()}")
        threading.Thread(target=self._watch, name="concord-elastic-watch", daemon=True).start()

    def register_listener(self, state):
        """Passes host updates to ``state.on_hosts_updated(timestamp, removed_only)``."""
        with self._lock:
            if state not in self._listeners:
                self._listeners.append(state)

    def remove_listener(self, state):
        """Stops passing host updates to ``state``."""
        with self._lock:
            if state in self._listeners:
                self._listeners.remove(state)

    def join(self, init_kwargs=None):
        """Joins the first world newer than the last one joined: waits for the driver's
        assignment, sets RANK/WORLD_SIZE/LOCAL_RANK/LOCAL_WORLD_SIZE, CONCORD_RUN_ID and
        CONCORD_STORE as a launcher would, then starts Concord over UCX (collective among
        the world's workers).

        Raises:
            StateError: no newer world within ``timeout`` seconds, or the driver left this
                worker out of it (it was declared lost).
            CommError: the world's rendezvous failed (a member died meanwhile); call
                :meth:`join` again for the next world.
        """
        deadline = time.monotonic() + self.timeout
        while True:
            text = self._store.try_get(protocol.GENERATION)
            generation = int(text) if text else -1
            if generation > self.generation:
                record = self._store.try_get(protocol.world_key(generation))
                if record is not None:
                    world = protocol.decode_world(record)
                    break
            if time.monotonic() > deadline:
                raise concord.StateError(
                    f"elastic worker {self.slot}: no new world was formed within {self.timeout:g} s "
                    f"(last generation {self.generation}); the driver ended or lacks workers")
            time.sleep(0.05)
        if self.slot not in world["ranks"]:
            raise concord.StateError(f"elastic worker {self.slot}: the driver left this worker out of world "
                                     f"{generation} (declared lost)")
        with self._lock:  # the watch thread aborts a world only under this lock, for its generation
            self.generation = generation
        self.init_kwargs = dict(init_kwargs or {})
        local_rank, local_size = world["local"][self.slot]
        os.environ.update(RANK=str(world["ranks"][self.slot]), WORLD_SIZE=str(world["size"]),
                          LOCAL_RANK=str(local_rank), LOCAL_WORLD_SIZE=str(local_size),
                          CONCORD_RUN_ID=protocol.run_id(self.job, generation), CONCORD_STORE=self.store_spec,
                          CONCORD_TRANSPORT="ucx")
        concord.start_runtime(**self.init_kwargs)
        self._store.set(protocol.joined_key(self.slot), str(generation))

    def leave(self, reason=None):
        """Leaves the current world: if ``reason`` is given (a failed collective), first
        tells every worker of the world to abandon it (the world's abort key), then shuts
        Concord down on this rank and closes the world's endpoints."""
        if reason is not None and self.generation >= 0:
            self.report_failure(reason)
        _core.leave_world()

    def report_failure(self, reason):
        """Publishes ``reason`` as the current world's abort reason unless one is set."""
        key = protocol.abort_key(self.generation)
        if self._store.try_get(key) is None:
            self._store.set(key, f"rank {os.environ.get('RANK', '?')} ({self.slot}): {reason}")

    def _watch(self):
        """The watch thread: heartbeats, aborts of abandoned worlds, host updates."""
        last_beat = 0.0
        while True:
            try:
                now = time.monotonic()
                if now - last_beat >= protocol.HEARTBEAT_INTERVAL:
                    self._store.add(protocol.heartbeat_key(self.slot), 1)
                    last_beat = now
                generation = self.generation
                if generation >= 0 and generation not in self._aborted:
                    reason = self._store.try_get(protocol.abort_key(generation))
                    if reason is not None:
                        self._aborted.add(generation)
                        with self._lock:  # never the next world's: join() moves generation first
                            if self.generation == generation:
                                _core.abort_world(f"elastic world {generation} was abandoned: {reason}")
                if generation >= 0 and generation not in self._announced:
                    notice = self._store.try_get(protocol.hosts_key(generation))
                    if notice is not None:
                        self._announced.add(generation)
                        update = json.loads(notice)
                        with self._lock:
                            listeners = list(self._listeners)
                        for state in listeners:
                            state.on_hosts_updated(update["timestamp"], update["removed_only"])
            except concord.CommError as error:
                # A request unanswered for 30 s: the driver is gone, and with it the job
                # (nobody would form another world); end rather than linger as an orphan.
                print(f"[concord elastic {self.slot}] the elastic driver's store is unreachable, ending: {error}",
                      file=sys.stderr, flush=True)
                os._exit(1)
            time.sleep(0.1)


# One per process, as the transport world is: a process is one slot of one elastic job.
_worker = None
_worker_lock = threading.Lock()


def current():
    """This process's :class:`ElasticWorker` when concord-run's elastic driver started it,
    else None."""
    global _worker
    spec = os.environ.get("CONCORD_ELASTIC_STORE")
    if not spec:
        return None
    with _worker_lock:
        if _worker is None:
            _worker = ElasticWorker(spec, os.environ["CONCORD_ELASTIC_SLOT"], os.environ["CONCORD_ELASTIC_JOB"],
                                    float(os.environ.get("CONCORD_ELASTIC_TIMEOUT", "600")))
        return _worker
