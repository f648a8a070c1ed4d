"""concord-run's elastic driver (``concord-run --min-np N --max-np M``; Horovod's elastic
``horovodrun``): it serves the job's store, starts one worker per slot, watches them, and
forms a new world (a generation) whenever a worker is lost or hosts are added, so that
training continues from the last commit (concord.elastic.state).

* **Slots** come from ``-H`` (``host:slots``) or, re-read every ``discovery_interval``
  seconds, from a host discovery script printing one ``host[:slots]`` per line.
* **A lost worker** (exited non-zero, or no heartbeat for ``heartbeat_timeout`` seconds:
  SIGSTOPped or hung) is killed and its slot excluded from every later world; its host is
  blacklisted only when the host itself is lost (dropped by discovery, or every slot of it
  failed). Horovod 0.28.1 blacklists the host on any worker failure, which ends a
  one-host job at its first failure.
* **Each world** is published in the store (concord.elastic.protocol): survivors keep
  their order (so rank 0 is a survivor holding the committed state), new workers follow;
  ranks are 0..size-1. A world abandoned for a failure gets its abort key at once, so every
  member stops waiting for the dead one.
* **The job ends** with 0 when its workers exit 0; with 1 and a message naming the lost
  workers when fewer than ``min_np`` remain for ``elastic_timeout`` seconds, or after
  ``reset_limit`` resets.
"""

import os
import shlex
import signal
import subprocess
import sys
import time
import uuid

from concord import _core, rsh
from concord.elastic import protocol
from concord.local_launch import describe_status
from concord.hosts import parse_host_entry


def parse_host_lines(text, default_slots=1):
    """Parses ``host[:slots]`` lines (blank lines and ``#`` comments skipped) into an
    ordered list of ``(host, slots)``.

    Raises:
        ValueError: a slot count that is not a positive integer.
    """
    hosts = []
    for line in text.replace(",", "\n").splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parsed = parse_host_entry(line, default_slots)
        if parsed is None:
            raise ValueError(f"bad host entry '{line}': expected host:slots with slots a positive integer")
        hosts.append(parsed)
    return hosts


def _interrupt(signum, _frame):
    raise KeyboardInterrupt(signal.Signals(signum).name)


class _Worker:
    """One started worker: its slot, host, process and heartbeat."""

    def __init__(self, slot, host, process):
        self.slot, self.host, self.process = slot, host, process
        self.beats = 0
        self.beat_time = self.checked = time.monotonic()


class ElasticDriver:
    """Runs one elastic job (see the module docstring).

    Args:
        command (list of str): the worker's program and arguments.
        np (int): workers to start with (default: every slot up to ``max_np``).
        min_np (int): fewest workers a world may have.
        max_np (int): most workers a world may have (None: every slot).
        hosts (list of (host, slots)): fixed slots when there is no discovery script.
        discovery_script (str): executable printing ``host[:slots]`` lines.
        slots (int): slots of a discovered host printed without ``:slots``.
        elastic_timeout (float): seconds to wait for ``min_np`` workers before failing.
        reset_limit (int): most resets before failing (None: no limit).
        heartbeat_timeout (float): seconds without a heartbeat after which a worker is lost.
        discovery_interval (float): seconds between runs of the discovery script.
        rsh_agent (str): command starting a program on another host (``ssh``'s syntax).
        store_address (str): the address workers on other hosts reach this driver at.
        environ (dict): the workers' base environment (default ``os.environ``).
        out: where the driver reports (default stderr).
    """

    def __init__(self, command, np=None, min_np=1, max_np=None, hosts=None, discovery_script=None, slots=1,
                 elastic_timeout=600.0, reset_limit=None, heartbeat_timeout=10.0, discovery_interval=1.0,
                 rsh_agent="ssh -o BatchMode=yes", store_address=None, environ=None, out=sys.stderr):
        if not command:
            raise ValueError("concord-run: no program given")
        if min_np < 1 or (max_np is not None and max_np < min_np) or (np is not None and np < min_np) or \
                (np is not None and max_np is not None and np > max_np):
            raise ValueError(f"concord-run: need 1 <= --min-np ({min_np}) <= -np ({np}) <= --max-np ({max_np})")
        if not discovery_script and not hosts:
            raise ValueError("concord-run: elastic mode needs -H or --host-discovery-script")
        # As horovodrun: without --max-np a job grows to -np workers at most (to every slot
        # when -np is not given either).
        self.command, self.np, self.min_np, self.max_np = list(command), np, min_np, max_np or np
        self.fixed_hosts, self.discovery_script, self.default_slots = hosts, discovery_script, slots
        self.elastic_timeout, self.reset_limit = elastic_timeout, reset_limit
        self.heartbeat_timeout, self.discovery_interval = heartbeat_timeout, discovery_interval
        self.rsh_agent, self.store_address = shlex.split(rsh_agent), store_address
        self.environ = dict(os.environ if environ is None else environ)
        self.out = out
        self.job = "elastic-" + uuid.uuid4().hex[:8]
        self.workers = {}       # slot -> _Worker, running
        self.members = []       # slots of the current world, in rank order
        self.excluded = set()   # slots of lost workers
        self.blacklist = set()  # lost hosts
        self.lost = []          # "slot (reason)" for messages
        self.finished = set()   # slots whose worker exited 0
        self.generation = -1
        self.resets = 0
        self.hosts = []         # (host, slots) as last discovered, blacklisted hosts removed
        self._failure = None    # why the current world is lost, until the loop handles it
        self._seen_abort = None  # the generation whose reported abort was handled

    # ---- the main loop --------------------------------------------------------------

    def run(self):
        """Runs the job to its end; returns the exit status (0 success, 1 failure). SIGTERM
        and SIGINT stop every worker before the driver exits."""
        self._server = rsh.serve_store()
        self._store = _core.Store(f"tcp-client:127.0.0.1:{self._server.port()}", 30.0)
        previous = {sig: signal.signal(sig, _interrupt) for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            return self._run()
        except KeyboardInterrupt:
            return self._fail("interrupted")
        finally:
            self._stop_all()
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _run(self):
        self._discover()
        self._spawn(self.np if self.np is not None else self._capacity())
        pending = "start"          # why a new world is needed, None when the world stands
        waiting_since = time.monotonic()
        settle_until = 0.0
        next_discovery = time.monotonic() + self.discovery_interval
        while True:
            now = time.monotonic()
            self._poll_workers()
            added = False
            if self.discovery_script and now >= next_discovery and not self.finished:
                next_discovery = now + self.discovery_interval
                added = self._discover()
            failure, self._failure = self._failure or self._abort_reported(), None
            if failure and not self.finished:
                if pending is None:
                    waiting_since = now
                self._abandon(failure)
                pending, settle_until = failure, now + 0.5  # let the other deaths of one event show
            if self.finished:
                # The training ended: a worker started for a world that never formed (its
                # peers finished instead of joining) waits in vain.
                for slot in [s for s in self.workers if self._store.try_get(protocol.joined_key(s)) is None]:
                    self._kill(slot)
                if not self.workers:
                    self._say(f"{len(self.finished)} workers finished")
                    return 0
            if self.finished and failure:
                return self._fail(f"a worker failed after others had finished: {failure}")
            if added and pending is None and self.generation >= 0:
                self._store.set(protocol.hosts_key(self.generation),
                                f'{{"timestamp": {time.time()!r}, "removed_only": false}}')
                pending, waiting_since, settle_until = "hosts added", now, now
            if (added or pending) and not self.finished:
                self._spawn(self._capacity() - len(self.workers))
            if pending and now >= settle_until:
                candidates = self._candidates()
                if self.generation >= 0 and self.reset_limit is not None and self.resets >= self.reset_limit:
                    return self._fail(f"--reset-limit {self.reset_limit} reached ({pending})")
                if len(candidates) >= self.min_np:
                    self.resets += 1 if self.generation >= 0 else 0
                    self._form(candidates, pending)
                    pending = None
                elif now - waiting_since > self.elastic_timeout:
                    return self._fail(f"only {len(candidates)} workers remain, fewer than --min-np {self.min_np}, "
                                      f"and none came within --elastic-timeout {self.elastic_timeout:g} s")
            time.sleep(0.05)

    # ---- worlds ---------------------------------------------------------------------

    def _candidates(self):
        """The next world's slots: survivors in rank order, then new workers, at most max_np."""
        alive = [slot for slot in self.members if slot in self.workers]
        alive += [slot for slot in self.workers if slot not in alive]
        return alive[:self.max_np] if self.max_np else alive

    def _form(self, slots, why):
        """Publishes world generation+1 over ``slots`` (ranks in that order)."""
        hosts_of = {slot: worker.host for slot, worker in self.workers.items()}
        self.generation += 1
        self.members = list(slots)
        record = protocol.encode_world({slot: rank for rank, slot in enumerate(slots)}, hosts_of.get)
        self._store.set(protocol.world_key(self.generation), record)
        self._store.set(protocol.GENERATION, str(self.generation))
        self._say(f"world {self.generation}: {len(slots)} workers ({why})")
        # A worker started but left out (beyond --max-np) would wait for a world forever.
        for slot in [s for s in self.workers if s not in slots]:
            self._kill(slot)

    def _abandon(self, reason):
        """Sets the current world's abort keys (the elastic one and its rendezvous')."""
        if self.generation < 0:
            return
        self._seen_abort = self.generation  # this reason is being handled already
        for key in (protocol.abort_key(self.generation), protocol.rendezvous_abort_key(self.job, self.generation)):
            if self._store.try_get(key) is None:
                self._store.set(key, reason)

    def _abort_reported(self):
        """A member's report that the current world failed (its abort key), once."""
        if self.generation < 0 or self._seen_abort == self.generation:
            return None
        reason = self._store.try_get(protocol.abort_key(self.generation))
        if reason is None:
            return None
        self._seen_abort = self.generation
        return f"world {self.generation} failed: {reason}"

    # ---- workers --------------------------------------------------------------------

    def _poll_workers(self):
        """Reaps exited workers and checks heartbeats (a member lost sets _failure)."""
        now = time.monotonic()
        for slot, worker in list(self.workers.items()):
            code = worker.process.poll()
            if code is None:
                if now - worker.checked < protocol.HEARTBEAT_INTERVAL:
                    continue
                worker.checked = now
                beats = int(self._store.try_get(protocol.heartbeat_key(slot)) or 0)
                if beats != worker.beats:
                    worker.beats, worker.beat_time = beats, now
                elif now - worker.beat_time > self._heartbeat_limit(worker):
                    self._lose(slot, f"no heartbeat for {now - worker.beat_time:.1f} s (stopped or hung)")
                continue
            del self.workers[slot]
            if code == 0:
                self.finished.add(slot)
            else:
                self._lose(slot, describe_status(code))

    def _heartbeat_limit(self, worker):
        # Before its first heartbeat a worker is importing its framework: allow more.
        return self.heartbeat_timeout if worker.beats else max(self.heartbeat_timeout, 60.0)

    def _lose(self, slot, reason):
        """Declares ``slot``'s worker lost: kills it, excludes the slot, blacklists its host
        when no slot of it is left. A member's loss becomes the pending failure."""
        host = slot.rpartition(":")[0]
        self._kill(slot)
        self.excluded.add(slot)
        self.lost.append(f"{slot} ({reason})")
        self._say(f"worker {slot} lost: {reason}")
        slots = dict(self.hosts).get(host, 0)
        if slots and all(f"{host}:{i}" in self.excluded for i in range(slots)):
            self.blacklist.add(host)
            self._say(f"host {host} blacklisted: all its slots failed")
        if slot in self.members and not self._failure:
            self._failure = f"worker {slot} lost: {reason}"

    def _capacity(self):
        """How many workers the slots allow now (max_np at most)."""
        free = sum(1 for host, slots in self.hosts for i in range(slots) if f"{host}:{i}" not in self.excluded)
        return min(free, self.max_np) if self.max_np else free

    def _discover(self):
        """Re-reads the slots (fixed hosts or the discovery script); blacklists hosts that
        disappeared (killing their workers). Returns True when slots were added."""
        if self.discovery_script:
            try:
                result = subprocess.run([self.discovery_script], capture_output=True, text=True, timeout=30)
                found = parse_host_lines(result.stdout, self.default_slots) if result.returncode == 0 else None
            except (OSError, subprocess.TimeoutExpired, ValueError) as error:
                self._say(f"host discovery failed: {error}")
                found = None
            if found is None:
                return False
        else:
            found = self.fixed_hosts
        found = [(host, slots) for host, slots in found if host not in self.blacklist]
        before = {f"{h}:{i}" for h, s in self.hosts for i in range(s)}
        now = {f"{h}:{i}" for h, s in found for i in range(s)}
        for host in {h for h, _ in self.hosts} - {h for h, _ in found}:
            self.blacklist.add(host)
            self._say(f"host {host} removed by discovery")
            for slot in [s for s in self.workers if s.rpartition(":")[0] == host]:
                self._lose(slot, f"host {host} removed by discovery")
        self.hosts = found
        return bool(now - before - self.excluded) and bool(before)

    def _spawn(self, count):
        """Starts up to ``count`` workers on free slots, in host order."""
        for host, slots in self.hosts:
            for index in range(slots):
                slot = f"{host}:{index}"
                if count <= 0:
                    return
                if slot in self.workers or slot in self.excluded or slot in self.finished:
                    continue
                self.workers[slot] = _Worker(slot, host, self._start(host, slot))
                count -= 1

    def _start(self, host, slot):
        """Starts the worker of ``slot`` on ``host`` (directly, or through the rsh agent)."""
        address = rsh.store_address([(host, 1)] + self.hosts, self.store_address)
        settings = {"CONCORD_ELASTIC_STORE": f"tcp-client:{address}:{self._server.port()}",
                    "CONCORD_ELASTIC_SLOT": slot, "CONCORD_ELASTIC_JOB": self.job,
                    "CONCORD_ELASTIC_TIMEOUT": repr(self.elastic_timeout)}
        if "CONCORD_INIT_TIMEOUT" not in self.environ:
            # A new world's rendezvous waits for the old members to reach their commit.
            settings["CONCORD_INIT_TIMEOUT"] = repr(self.elastic_timeout)
        if "UCX_TLS" not in self.environ:
            # UCX's single-copy CMA transport aborts the reading process when its peer dies
            # mid-transfer (process_vm_readv: "No such process" is fatal in UCX 1.13), which
            # would turn one lost worker into two; shared memory and TCP survive it.
            settings["UCX_TLS"] = "^cma"
        if rsh.is_local(host):
            return subprocess.Popen(self.command, env={**self.environ, **settings})
        env = {**rsh.forwarded_environment(self.environ), **settings}
        return subprocess.Popen(rsh.remote_command(self.rsh_agent, host, self.command, env, os.getcwd()),
                                stdin=subprocess.DEVNULL)

    def _kill(self, slot):
        """Kills the worker of ``slot`` (on its host too when it runs elsewhere) and reaps it."""
        worker = self.workers.pop(slot, None)
        if worker is None:
            return
        if not rsh.is_local(worker.host):
            where = self._store.try_get(protocol.pid_key(slot))
            if where:
                pid = where.split()[-1]
                subprocess.run(self.rsh_agent + [worker.host, f"kill -9 {shlex.quote(pid)}"],
                               stdin=subprocess.DEVNULL, capture_output=True, timeout=30)
        if worker.process.poll() is None:
            worker.process.kill()
        worker.process.wait()

    def _stop_all(self):
        for slot in list(self.workers):
            self._kill(slot)

    def _fail(self, message):
        lost = "; lost workers: " + ", ".join(self.lost) if self.lost else ""
        self._say(f"job failed: {message}{lost}")
        return 1

    def _say(self, text):
        print(f"concord-run: {text}", file=self.out, flush=True)
