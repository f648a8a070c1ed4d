"""Concord's dependency engine for Python callables.

An :class:`Engine` runs functions as soon as their data dependencies are met, on a pool of
CPU workers and a communication thread (the MXNet threaded-engine contract, used by
Mamidala's dependency chaining of MPI collectives; see docs/architecture.md,
"Dependency engine"):

* a :class:`Var` tags a piece of data; every operation lists the vars it reads and writes;
* per var, operations take effect in push order; writes are exclusive; the reads between
  two writes may run concurrently; operations sharing no var are unordered;
* an exception raised by an operation is stored on the vars it writes; later operations
  reading or writing such a var are skipped and inherit it; :meth:`Engine.wait_for_var`
  and :meth:`Engine.wait_all` raise it (the original Python exception object) once and
  clear it.

Operations run in engine threads with the GIL taken around the call, so Python operations
overlap only where they release the GIL (NumPy, torch, I/O, Concord collectives).
Independent of MPI: every process (rank) has its own engines.

Example::

    from concord.engine import Engine
    engine = Engine(cpu_threads=2)
    a, b = engine.new_var(), engine.new_var()
    data = {}
    engine.push(lambda: data.update(a=1), writes=[a])
    engine.push(lambda: data.update(b=data["a"] + 1), reads=[a], writes=[b])
    engine.wait_for_var(b)          # data["b"] == 2
    engine.shutdown()
"""

import atexit
import weakref

from concord import _core
from concord._core import EngineVar as Var

__all__ = ["Engine", "Var"]

# Engines still running at interpreter exit are shut down by atexit, while their threads can
# still take the GIL to finish pending Python operations.
_live_engines = weakref.WeakSet()


@atexit.register
def _shutdown_live_engines():
    for engine in list(_live_engines):
        engine.shutdown()


class Engine:
    """A dependency engine with its own threads.

    Args:
        cpu_threads (int): CPU worker threads (>= 1).
        comm_threads (int): communication threads (>= 1), for ``kind="comm"`` operations.

    Raises:
        InvalidArgumentError: a thread count below 1.

    Use it as a context manager, or call :meth:`shutdown` when done (pending operations
    are run first).
    """

    def __init__(self, cpu_threads=2, comm_threads=1):
        self._engine = _core.Engine(int(cpu_threads), int(comm_threads))
        _live_engines.add(self)

    def new_var(self):
        """A new :class:`Var` (version 0). Raises StateError after :meth:`shutdown`."""
        return self._engine.new_var()

    def delete_var(self, var):
        """Delete ``var`` once every operation already pushed on it is done (a deferred
        write). Using ``var`` afterwards raises InvalidArgumentError."""
        self._engine.delete_var(var)

    def push(self, fn, reads=(), writes=(), kind="cpu", priority=0, name="", asynchronous=False):
        """Queue ``fn()`` (no arguments, result ignored) to run after the earlier writes on
        ``reads`` and every earlier operation on ``writes``.

        Args:
            fn: a Python callable; exceptions it raises are stored on ``writes``. With
                ``asynchronous=True`` it is called as ``fn(on_complete)`` and the operation
                (holding its vars) ends when ``on_complete()`` -- or
                ``on_complete(exception)`` for a failure -- is called, exactly once, from
                any thread; a second call raises StateError.
            reads, writes: sequences of :class:`Var`; no var may appear twice or in both.
            kind (str): ``"cpu"`` (worker pool) or ``"comm"`` (communication thread).
            priority (int): higher runs first among ready operations of the same pool.
            name (str): shown in error messages.

        Raises:
            InvalidArgumentError: a var repeated, deleted or from another engine; a bad kind.
            StateError: after :meth:`shutdown`.
        """
        self._engine.push(fn, list(reads), list(writes), kind, int(priority), str(name), bool(asynchronous))

    def wait_for_var(self, var):
        """Block until every write pushed on ``var`` so far is done (pending reads do not
        count); raise (once) the error stored on it."""
        self._engine.wait_for_var(var)

    def wait_all(self):
        """Block until every operation pushed so far is done; raise the first stored error
        and clear all of them."""
        self._engine.wait_all()

    def version(self, var):
        """Number of completed writes on ``var`` (int)."""
        return self._engine.version(var)

    def shutdown(self):
        """Run every pending operation, then stop the threads. Idempotent; later pushes
        raise StateError. Errors still stored are discarded."""
        self._engine.shutdown()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.shutdown()
        return False
