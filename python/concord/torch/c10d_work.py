"""The ``Work`` objects of the ``"concord"`` torch.distributed backend and the threads that
complete them.

A :class:`ConcordWork` is what every ProcessGroup call of the backend returns (c10d's
``Work``, torch 1.13: ``wait``, ``is_completed``, ``is_success``, ``exception``,
``get_future``, ``result``, ``source_rank``). Its collective runs in Concord's runtime; a
:class:`Completer` (one thread per process group) waits for the runtime's handles in
submission order with the GIL released, finishes the result (copies into the caller's
output tensors) and marks the work done. Submission order is the same on every member of a
group (c10d's contract), so waiting in that order never waits on a collective a member has
not reached before a later one; groups have their own threads, so one group's stalled
collective does not hold another's.

Futures (``get_future()``; DDP's reducer asks for one on every bucket) are completed on a
thread of a :class:`CallbackPool`, never on the completer or on Concord's background thread:
``set_result`` runs the future's callbacks, and a callback may launch another collective and
block on its future (PowerSGD does), which needs the completer free. The pool starts a new
thread when every thread is busy in such a callback.
"""

import collections
import datetime
import queue
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import torch
from torch._C._distributed_c10d import Work

#: Finished works a CallbackPool keeps alive. C++ code of torch (DDP's reducer, the
#: parameter broadcast) holds a returned Work by its C++ part and calls ``wait()`` /
#: ``getFuture()`` on it later, which reach this Python object only while it is alive
#: (pybind11 looks the override up by the live Python instance; without it torch's base
#: ``Work::wait`` would block forever). Those calls come within a training iteration, far
#: fewer calls than this apart.
RETAINED_WORKS = 4096

#: Most threads a CallbackPool runs at once: each is a future callback blocked on a nested
#: collective (PowerSGD nests two), so this bounds the nesting depth, not the throughput.
MAX_CALLBACK_THREADS = 32


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
        if not self._done.wait(limit):
            raise RuntimeError(f"concord: {self._description} did not finish within {limit:g} s "
                               "(the timeout of init_process_group/new_group, or wait()'s); a rank "
                               "may not have called it")
        if self._error is not None:
            raise self._error
        return True

    def is_completed(self):
        """True once the operation finished, successfully or not (never blocks)."""
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
            return self._future


class Completer:
    """One thread completing a process group's works in submission order, and a watchdog
    thread failing those not finished within the group's timeout of their submission (so
    that futures waited by torch's C++ code, which waits without a timeout, fail too).

    Each submitted item is ``(work, complete)``: ``complete()`` blocks until the operation
    finished (waiting with the GIL released) and returns the output tensor list; what it
    raises becomes the work's error (non-RuntimeErrors wrapped in one, naming the work).
    """

    def __init__(self, name):
        self._queue = queue.SimpleQueue()
        self._pending = collections.deque()  # (deadline, work), submission order
        self._watch = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=f"concord-c10d-{name}", daemon=True)
        self._thread.start()
        self._watchdog = threading.Thread(target=self._expire_late, name=f"concord-c10d-watchdog-{name}",
                                          daemon=True)
        self._watchdog.start()

    def submit(self, work, complete):
        with self._watch:
            self._pending.append((time.monotonic() + work._timeout, work))
            if len(self._pending) == 1:
                self._watch.notify()
        self._queue.put((work, complete))
        return work

    def close(self):
        """Stops the threads after the works already submitted."""
        self._queue.put(None)
        with self._watch:
            self._closed = True
            self._watch.notify()

    def _done_with(self, work):
        with self._watch:
            if self._pending and self._pending[0][1] is work:
                self._pending.popleft()

    def _expire_late(self):
        while True:
            with self._watch:
                while not self._pending and not self._closed:
                    self._watch.wait()
                if self._closed:
                    return
                deadline, work = self._pending[0]
                remaining = deadline - time.monotonic()
                if remaining > 0:
                    self._watch.wait(remaining)
                    continue
                self._pending.popleft()
            work.expire()

    def _run(self):
        while True:
            item = self._queue.get()
            if item is None:
                return
            work, complete = item
            try:
                result = complete()
            except RuntimeError as error:
                work.finish(None, error)
            except Exception as error:  # a bug or bad argument surfacing late: still a RuntimeError for c10d
                wrapped = RuntimeError(f"concord: {work._description} failed: {type(error).__name__}: {error}")
                wrapped.__cause__ = error
                work.finish(None, wrapped)
            else:
                work.finish(result, None)
            self._done_with(work)
