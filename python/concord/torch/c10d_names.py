"""The names of the ``"concord"`` backend's collectives: the same on every member of a
group, repeated so that Concord's response cache hits, never two in flight at once on one
rank.

c10d calls collectives without names, in the same order on every member of a group.
Concord negotiates by name, and its response cache (Horovod's, keyed by name: a request
whose name and parameters equal a cached response's is a hit, decided by one AND-allreduce
of bits instead of a round through the coordinator; NSDI 2022 Romero et al., see
src/control/response_cache.h) only hits when a name comes back with the same parameters.

Rules a name must keep:

* **Agreed on every member, even in a wrong program**: a rank calling another collective,
  shape, dtype or op at the same position must meet the others under the same name, so that
  the coordinator answers with a MismatchError on every rank. A name that held the call's
  own parameters would differ between such ranks, and both calls would wait for ever. So
  the name of a call is a function of the calls before it only.
* **Repeating**: a call is named after its *context*, the signature (collective, dtype,
  shape, op, root) of the group's previous call, and the number of earlier calls in that
  context modulo :data:`WINDOW`: ``c10d.<group>.after.<context>.<slot>``. A training loop
  calls the same sequence every iteration, so each name comes back with the parameters it
  had, and the cache hits (a context followed by different calls in turn, as a repeated
  tensor before the next, hits when the length of that cycle divides WINDOW). A name that
  meets other parameters is an invalid entry: renegotiated in full, then cached anew.
* **Never in flight twice on one rank** (the runtime refuses a name already in flight):
  before a call takes a name, this rank waits until the runtime finished the call that took
  it WINDOW calls of that context earlier. Another rank may still be executing that earlier
  call: its new request waits, as any request of a rank that is ahead.

Errors: after a MismatchError both ranks' contexts differ (each recorded its own call). A
failed call therefore starts a new series of names (``c10d.<group>.r<n>...``, n the
position after the failed call, contexts forgotten), entered as soon as a new call finds
the failed one finished: in a program that waits for its calls before the next
(synchronous calls), every rank enters it at the same call. Calls submitted behind a failed
one before its failure was seen are renamed in the count of their successors (the same
count on every rank), but may themselves have differed in name between the ranks; those
then fail with the group's timeout.
"""

import collections
import contextlib
import threading

import torch

#: Names of one context used in turn: a call waits for the one WINDOW calls of its context
#: earlier (its name's previous use) to finish in the runtime, so WINDOW calls of one
#: context overlap at most. 4 covers a context followed by 1, 2 or 4 different calls in turn.
WINDOW = 4
#: Contexts whose counts are kept (least recently used forgotten, alike on every rank, so a
#: forgotten context seen again counts from 0 on every rank): bounds this memory for calls
#: of ever new shapes. A loop of up to this many distinct calls keeps all its names.
CONTEXTS = 256
#: Submitted calls kept until the runtime finished them, oldest first, to see failures.
LOG_LIMIT = 4096

_START = ("start",)


def _part(value):
    if isinstance(value, torch.dtype):
        return str(value).replace("torch.", "")
    if isinstance(value, tuple):  # a shape ("3x5"), or several shapes or dtypes ("3x5+4")
        if all(isinstance(v, int) for v in value):
            return "x".join(str(v) for v in value) or "scalar"
        return "+".join(_part(v) for v in value)
    return getattr(value, "name", str(value))


def label(signature):
    """A signature as a name part: ``("allreduce", torch.float32, (4,), SUM)`` gives
    ``"allreduce.float32.4.SUM"``."""
    return ".".join(_part(v) for v in signature)


def _finished_with_error(handle):
    try:
        handle.wait_for(0.0)
    except Exception:  # the runtime's error (MismatchError, CommError, ...): the call failed everywhere
        return True
    return False


class Call:
    """One call being named: ``position`` (its index among the group's calls), ``name``;
    the caller sets ``handle`` (the runtime's: ``poll``, ``wait_for``) once submitted."""

    __slots__ = ("position", "name", "handle")

    def __init__(self, position, name):
        self.position, self.name, self.handle = position, name, None


class CallNames:
    """The names of one process group's collectives (module docstring).

    Args:
        group (str): the group's name (c10d's group id, "world" for the default group).
        timeout (float): seconds a call waits for its name's previous use to finish.
    """

    def __init__(self, group, timeout):
        self._group = group
        self._timeout = timeout
        self._lock = threading.Lock()
        self._position = 0
        self._log = collections.deque()  # (position, signature, runtime handle), submission order
        self._begin_series(0)

    def _begin_series(self, position):
        self._prefix = f"c10d.{self._group}." if position == 0 else f"c10d.{self._group}.r{position}."
        self._context = _START
        self._uses = collections.OrderedDict()  # context -> [calls named in it, its name part]
        self._latest = {}  # name -> runtime handle of the call that took it last

    def _advance(self, signature):
        """Names the next call (``signature`` becomes the context of the one after);
        returns the name and the context's entry."""
        entry = self._uses.pop(self._context, None)
        if entry is None:
            entry = [0, "after." + label(self._context)]
        self._uses[self._context] = entry
        if len(self._uses) > CONTEXTS:
            self._uses.popitem(last=False)
        name = f"{self._prefix}{entry[1]}.{entry[0] % WINDOW}"
        entry[0] += 1
        self._context = signature
        return name, entry

    def _settle(self):
        """Forgets the calls the runtime finished, oldest first; a failed one begins a new
        series, counting the calls submitted after it as the series' first."""
        while self._log and self._log[0][2].poll():
            position, _, handle = self._log.popleft()
            if _finished_with_error(handle):
                self._begin_series(position + 1)
                for _, signature, _ in self._log:
                    self._advance(signature)
        while len(self._log) > LOG_LIMIT:
            self._log.popleft()

    def _wait_free(self, name, what):
        handle = self._latest.get(name)
        if handle is None or handle.poll():
            return
        try:
            finished = handle.wait_for(self._timeout)
        except Exception:  # it failed: finished all the same
            return
        if not finished:
            raise RuntimeError(f"concord: {what} in group '{self._group}' takes the name '{name}', whose previous "
                               f"use has not finished within {self._timeout:g} s (the group's timeout); a rank may "
                               "not have called it")

    @contextlib.contextmanager
    def named(self, signature, what):
        """Names the group's next call, of ``signature`` (a hashable tuple that every member
        of a correct program computes alike: collective, dtype, shape, op, root), and yields
        its :class:`Call`; the body submits it under ``call.name`` and sets
        ``call.handle``. One call at a time per group (a lock); a body that raises leaves
        the names as they were (the call never reached the runtime).

        Raises:
            RuntimeError: the name's previous use did not finish within the timeout
                (``what`` names the call in the message).
        """
        with self._lock:
            self._settle()
            context = self._context
            name, entry = self._advance(signature)
            try:
                self._wait_free(name, what)
                call = Call(self._position, name)
                yield call
            except BaseException:
                entry[0] -= 1
                self._context = context
                raise
            self._position += 1
            self._latest[name] = call.handle
            if len(self._latest) > 2 * CONTEXTS * WINDOW:  # names of forgotten contexts: keep those in flight
                self._latest = {n: h for n, h in self._latest.items() if not h.poll()}
            self._log.append((call.position, signature, call.handle))
