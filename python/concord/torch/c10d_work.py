"""The ``Work`` objects of the ``"concord"`` torch.distributed backend and the threads that
complete them.

A :class:`ConcordWork` is what every ProcessGroup call of the backend returns (c10d's
``Work``, torch 1.13: ``wait``, ``is_completed``, ``is_success``, ``exception``,
``get_future``, ``result``, ``source_rank``). Its collective runs in Concord's runtime; the
work is finished (the runtime's handle waited for with the GIL released, the result copied
into the caller's output tensors) by whichever comes first:

* the caller's ``wait()``, on the caller's thread (a synchronous ``dist.all_reduce`` never
  hands its result from one thread to another: the handoff cost more than the collective
  at small sizes);
* a :class:`Completer` (one thread per process group), which takes the works in
  submission order: at once for a work whose future was asked for (DDP's reducer) or that
  was polled with ``is_completed()``, otherwise after LINGER_SECONDS without a ``wait()``.

Submission order is the same on every member of a group (c10d's contract), so waiting in
that order never waits on a collective a member has not reached before a later one; groups
have their own threads, so one group's stalled collective does not hold another's.

Futures (``get_future()``; DDP's reducer asks for one on every bucket) are completed on a
thread of a :class:`CallbackPool`, never on the completer or on Concord's background thread:
``set_result`` runs the future's callbacks, and a callback may launch another collective and
block on its future (PowerSGD does), which needs the completer free. The pool starts a new
thread when every thread is busy in such a callback.
"""

import collections
import datetime
import math
import queue
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import torch
from torch._C._distributed_c10d import Work

from concord.torch import handles

#: Finished works a CallbackPool keeps alive. C++ code of torch (DDP's reducer, the
#: parameter broadcast) holds a returned Work by its C++ part and calls ``wait()`` /
#: ``getFuture()`` on it later, which reach this Python object only while it is alive
#: (pybind11 looks the override up by the live Python instance; without it torch's base
#: ``Work::wait`` would block forever). Those calls come within a training iteration, far
#: fewer calls than this apart.
RETAINED_WORKS = 4096

#: How long the Completer leaves a work to a ``wait()`` of its caller before finishing it
#: itself (a work nobody asked a future of nor polled): a synchronous call waits within
#: microseconds of submitting.
LINGER_SECONDS = 0.001

#: Most threads a CallbackPool runs at once: each is a future callback blocked on a nested
#: collective (PowerSGD nests two), so this bounds the nesting depth, not the throughput.
MAX_CALLBACK_THREADS = 32


#: The deadline (time.monotonic()) of the work a caller's ``wait()`` finishes on this thread.
_inline = threading.local()


class _InlineTimeout(Exception):
    """A caller's ``wait()`` reached its deadline before the runtime's handle finished."""


def synchronize(handle):
    """handles.synchronize, bounded by the deadline of the caller's ``wait()`` when one
    finishes a work on this thread (raises _InlineTimeout then, the handle still valid):
    what the finishing functions of the process group call first."""
    deadline = getattr(_inline, "deadline", None)
    if deadline is not None and not handles.wait_for(handle, max(deadline - time.monotonic(), 0.0)):
        raise _InlineTimeout
    return handles.synchronize(handle)


class CallbackPool:
    """Threads that complete futures (and so run their callbacks), and the finished works
    kept alive for torch's C++ callers (RETAINED_WORKS)."""

    def __init__(self):
        self._executor = ThreadPoolExecutor(max_workers=MAX_CALLBACK_THREADS,
                                            thread_name_prefix="concord-c10d-callback")
        self._retained = collections.deque(maxlen=RETAINED_WORKS)

    def retain(self, work):
        """Keeps ``work`` alive until RETAINED_WORKS later works finished."""
        self._retained.append(work)

    def settle(self, future, result, error):
        """Completes ``future`` with ``result`` (or fails it with ``error``) on a pool thread."""
        self._executor.submit(_settle, future, result, error)


def _settle(future, result, error):
    if error is None:
        future.set_result(result)
    else:
        future.set_exception(error)


def seconds(timeout, default):
    """``timeout`` (a timedelta, a number of seconds, or None / zero = c10d's kNoTimeout) as
    seconds; ``default`` (seconds) when none is given."""
    if timeout is None:
        return default
    value = timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else float(timeout)
    return default if value <= 0 else value


class ConcordWork(Work):
    """One call of the backend: done once its result is finished (or its error known).

    Args:
        description (str): what the call is, for error messages (e.g. ``"allreduce
            'c10d.0.17' of group 0 (rank 1 of 4)"``).
        timeout (float): seconds ``wait()`` waits when not given a timeout: the process
            group's, from ``init_process_group(timeout=...)`` / ``new_group(timeout=...)``.
        callbacks (CallbackPool): completes the future.
    """

    def __init__(self, description, timeout, callbacks):
        super().__init__()
        self._description = description
        self._timeout = timeout
        self._callbacks = callbacks
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._result = None
        self._error = None
        self._future = None
        self._source = -1
        self._complete = None   # the finishing function while no thread has taken it
        self._completer = None  # the Completer it was submitted to
        self._submitted = 0.0   # time.monotonic() of the submission
        self._urgent = False    # a future asked for, or a poll: the Completer takes it at once

    def _hurry(self):
        """Tells the Completer to finish this work without waiting for a ``wait()``."""
        if not self._urgent and self._completer is not None:
            self._urgent = True
            self._completer.hurry()

    def _take(self):
        """The finishing function, for the one thread that takes it (None: taken already,
        or there is none)."""
        with self._lock:
            complete, self._complete = self._complete, None
            return complete

    def _run(self, complete):
        """Runs ``complete()`` (which waits for the operation) and finishes the work with
        its result or error (non-RuntimeErrors wrapped in one, naming the work)."""
        try:
            result = complete()
        except _InlineTimeout:
            raise
        except RuntimeError as error:
            self.finish(None, error)
        except Exception as error:  # a bug or bad argument surfacing late: still a RuntimeError for c10d
            wrapped = RuntimeError(f"concord: {self._description} failed: {type(error).__name__}: {error}")
            wrapped.__cause__ = error
            self.finish(None, wrapped)
        else:
            self.finish(result, None)

    def finish(self, result, error, source_rank=-1):
        """Marks the work done with ``result`` (a list of tensors) or ``error`` (an
        exception); called once, by the thread that completed the operation."""
        with self._lock:
            if self._done.is_set():  # expired by the watchdog: the late completion is dropped
                return
            self._result, self._error, self._source = result, error, source_rank
            self._done.set()
            future = self._future
        self._callbacks.retain(self)
        if future is not None:
            self._callbacks.settle(future, result, error)

    def expire(self):
        """Fails the work (and its future) with a timeout error unless it finished: the
        group's timeout passed since it was submitted (Completer's watchdog)."""
        self.finish(None, RuntimeError(f"concord: {self._description} did not finish within {self._timeout:g} s "
                                       "of its submission (the timeout of init_process_group/new_group); a rank "
                                       "may not have called it"))

    def wait(self, timeout=None):
        """Block until done (at most ``timeout``, a timedelta; default: the group's timeout).

        Returns:
            True.

        Raises:
            RuntimeError: the operation failed (Concord's error: a MismatchError naming
                the tensor, the ranks and what differed; a CommError; ...), or it did not
                finish within the timeout (it stays in flight in Concord's runtime; its
                stall is reported by the runtime's stall inspector).
        """
        limit = seconds(timeout, self._timeout)
        complete = self._take()
        if complete is not None:  # finished here, on the caller's thread, within the limit
            _inline.deadline = time.monotonic() + limit
            try:
                self._run(complete)
            except _InlineTimeout:  # still in flight: back to the Completer
                with self._lock:
                    self._complete = complete
                self._urgent = True
                self._completer.resubmit(self)
            finally:
                _inline.deadline = None
        if not self._done.wait(0 if complete is not None else limit):
            raise RuntimeError(f"concord: {self._description} did not finish within {limit:g} s "
                               "(the timeout of init_process_group/new_group, or wait()'s); a rank "
                               "may not have called it")
        if self._error is not None:
            raise self._error
        return True

    def is_completed(self):
        """True once the operation finished, successfully or not (never blocks; a work
        polled is left to the Completer at once)."""
        if not self._done.is_set():
            self._hurry()
        return self._done.is_set()

    def is_success(self):
        """True once the operation finished without error."""
        return self._done.is_set() and self._error is None

    def exception(self):
        """The error of a failed operation (None while pending or on success)."""
        return self._error

    def result(self):
        """The output tensors (after ``wait()``)."""
        self.wait()
        return self._result

    def source_rank(self):
        """The group rank a ``recv_anysource`` received from (after ``wait()``); -1 for
        other operations."""
        self.wait()
        return self._source

    _source_rank = source_rank  # the name torch.distributed.recv calls

    def synchronize(self):
        """No device streams to join for CPU results: the work is complete after wait()."""

    def get_future(self):
        """A ``torch.futures.Future`` completed with the output tensor list (or failed with
        the error) when the operation finishes; its callbacks run on a CallbackPool
        thread, or at once on the caller's thread if it is already done."""
        with self._lock:
            if self._future is None:
                self._future = torch.futures.Future()
                if self._done.is_set():
                    _settle(self._future, self._result, self._error)
        self._hurry()
        return self._future


class Completer:
    """One thread finishing a process group's works in submission order (those their
    callers' ``wait()`` did not take first), and a watchdog thread failing those not
    finished within the group's timeout of their submission (so that futures waited by
    torch's C++ code, which waits without a timeout, fail too).

    A submitted work carries its finishing function (``work._complete``): it blocks until
    the operation finished (waiting with the GIL released) and returns the output tensor
    list; what it raises becomes the work's error. Submitting wakes no thread: the
    completer thread, while works are pending, looks at the oldest every TICK_SECONDS, and
    a future asked for or a poll (``hurry()``) wakes it at once; so a synchronous call
    costs no thread switch.
    """

    #: How often the completer thread looks at the oldest work while works come in; it
    #: sleeps until woken after IDLE_TICKS looks with nothing to do.
    TICK_SECONDS = 0.001
    IDLE_TICKS = 100

    def __init__(self, name):
        self._works = collections.deque()  # submitted, not yet seen by the completer thread
        self._wake = threading.Condition()
        self._sleeping = False  # the thread waits without a timeout: submit() must wake it
        self._pending = collections.deque()  # (deadline, work), submission order
        self._watch = threading.Condition()
        self._watch_until = math.inf  # the deadline the watchdog sleeps until (inf: no work pending)
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=f"concord-c10d-{name}", daemon=True)
        self._thread.start()
        self._watchdog = threading.Thread(target=self._expire_late, name=f"concord-c10d-watchdog-{name}",
                                          daemon=True)
        self._watchdog.start()

    def submit(self, work, complete):
        """Hands ``work`` (finished by ``complete()``) to this group: to its caller's
        ``wait()`` or to the completer thread, whichever takes it first."""
        work._complete = complete
        work._completer = self
        work._submitted = time.monotonic()
        deadline = work._submitted + work._timeout
        with self._watch:
            self._pending.append((deadline, work))
            # Only a deadline earlier than the watchdog's wakes it: in a loop of calls each
            # one's deadline is later than the last's, so the thread sleeps through them.
            if deadline < self._watch_until:
                self._watch_until = deadline
                self._watch.notify()
        self._works.append(work)
        if self._sleeping:
            self.hurry()
        return work

    def resubmit(self, work):
        """Gives back a work whose caller's ``wait()`` timed out before it finished."""
        self._works.append(work)
        self.hurry()

    def hurry(self):
        """Wakes the completer thread (a work's future was asked for, or it was polled)."""
        with self._wake:
            self._wake.notify()

    def close(self):
        """Stops the threads after the works already submitted."""
        with self._wake:
            self._closed = True
            self._wake.notify()
        with self._watch:
            self._watch.notify()

    def _done_with(self):
        """Forgets the finished works at the head of the watchdog's list (works finished by
        their callers' ``wait()`` may finish before earlier ones)."""
        with self._watch:
            while self._pending and self._pending[0][1]._done.is_set():
                self._pending.popleft()

    def _expire_late(self):
        while True:
            with self._watch:
                while not self._pending and not self._closed:
                    self._watch_until = math.inf
                    self._watch.wait()
                if self._closed:
                    return
                deadline, work = self._pending[0]
                remaining = deadline - time.monotonic()
                if remaining > 0:
                    self._watch_until = deadline
                    self._watch.wait(remaining)
                    continue
                self._pending.popleft()
            work.expire()

    def _next(self):
        """The oldest work to finish now (None: stop): waits for one taken by nobody that
        is urgent or LINGER_SECONDS old; drops those their callers took."""
        idle = 0
        while True:
            while self._works and self._works[0]._complete is None:
                self._works.popleft()  # taken by its caller's wait()
                self._done_with()
            with self._wake:
                if self._works:
                    work = self._works[0]
                    age = time.monotonic() - work._submitted
                    if work._urgent or age >= LINGER_SECONDS:
                        return self._works.popleft()
                    self._wake.wait(min(LINGER_SECONDS - age, self.TICK_SECONDS))
                    idle = 0
                elif self._closed:
                    return None
                elif idle < self.IDLE_TICKS:
                    self._wake.wait(self.TICK_SECONDS)
                    idle += 1
                else:
                    self._sleeping = True
                    if not self._works:
                        self._wake.wait()
                    self._sleeping = False
                    idle = 0  # woken by a submission: look every tick again, or every call would wake it

    def _run(self):
        while True:
            work = self._next()
            if work is None:
                return
            complete = work._take()
            if complete is not None:
                work._run(complete)
            self._done_with()
