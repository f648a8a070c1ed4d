"""Concord: collective communication for data-parallel training.

This package holds the framework-independent Python API; ``concord.torch`` mirrors
``horovod.torch``, ``concord.engine`` and ``concord.kvstore`` expose the dependency engine
and the KVStore. Every collective is negotiated by name across ranks (Horovod's
coordinator protocol, Sergeev & Del Balso 2018; Romero et al. 2022), fused and reduced by
one of Concord's allreduce algorithms over MPI point-to-point (chosen by the cost model or
``CONCORD_ALLREDUCE_ALGORITHM``; ``concord-info`` lists them).

Errors raised by the runtime (all subclasses of :class:`ConcordError`, a RuntimeError):

* :class:`MismatchError` -- the same tensor name was submitted with different shape,
  dtype, reduce op, scale factors or root on different ranks (raised on every rank).
* :class:`InvalidArgumentError` -- bad argument on this rank (empty name, name already in
  flight, unsupported dtype, root out of range, ...).
* :class:`StateError` -- call before :func:`init` / after :func:`shutdown`, or an operation
  pending when the runtime shut down.
* :class:`CommError` -- the transport (MPI) failed.
"""

import atexit

from concord import _core
from concord._core import (CommError, ConcordError, InternalError, InvalidArgumentError,
                           MismatchError, StateError)

#: Concord's version, "MAJOR.MINOR.PATCH": compiled into ``_core`` from
#: ``project(Concord VERSION ...)`` in CMakeLists.txt (so it is the version of the C++
#: runtime actually loaded).
__version__ = _core.__version__

__all__ = [
    "__version__", "init", "shutdown", "is_initialized", "rank", "size", "local_rank", "local_size",
    "ConcordError", "MismatchError", "InvalidArgumentError", "StateError", "CommError",
    "InternalError", "cross_rank", "cross_size", "mpi_threads_supported", "start_timeline", "stop_timeline", "repair_timeline", "coordination_stats",
]


def init(cycle_time_ms=None, fusion_threshold_bytes=None, process_sets=None, comm=None):
    """Start Concord on every rank (collective; a no-op when already initialized).

    Joins the process's world on the transport ``CONCORD_TRANSPORT`` selects (``auto``:
    MPI under ``mpirun`` or alone, UCX under ``torchrun``, ``srun`` or ``concord-run
    --launcher local``, rendezvousing through ``CONCORD_STORE`` or MASTER_ADDR/MASTER_PORT).
    Over MPI it initializes MPI unless someone else (e.g. mpi4py) already did, in which case
    MPI must provide at least MPI_THREAD_SERIALIZED. Without any launcher the process is one
    rank; when the environment says it is one of several but it cannot join them, init()
    raises instead of running alone. A worker of an elastic job (``concord-run --min-np``)
    first waits for the world the driver assigns it (concord.elastic.worker).

    Args:
        cycle_time_ms (float, optional): milliseconds between background cycles; default
            from ``CONCORD_CYCLE_TIME`` (its default: ``concord.info``, docs/tuning.md).
        fusion_threshold_bytes (int, optional): largest fused allreduce in bytes; default
            from ``CONCORD_FUSION_THRESHOLD``; 0 disables fusion.
        process_sets (list of ProcessSet or of rank lists, optional): process sets to
            register (ids 1, 2, ... in this order; concord.process_sets), the same on
            every rank; ``"dynamic"`` (any case, as Horovod) registers none and enables
            add_process_set() (sets ``CONCORD_DYNAMIC_PROCESS_SETS=1``).
        comm: Horovod's communicator argument; only None (MPI_COMM_WORLD) is supported.

    Raises:
        StateError: MPI was finalized or provides too low a thread level; the launcher
            names a world this process cannot join (e.g. ``WORLD_SIZE=4`` with
            ``CONCORD_TRANSPORT=mpi`` and no mpirun).
        CommError: the UCX rendezvous failed (a rank never arrived within
            ``CONCORD_INIT_TIMEOUT``, a duplicate rank, differing world sizes, no store).
        InvalidArgumentError: a malformed ``CONCORD_*`` environment variable, bad or
            differing process sets, a communicator other than the world.
    """
    from concord.elastic import worker as elastic_worker
    elastic = elastic_worker.current()
    if elastic is not None and not is_initialized():
        elastic.join(dict(cycle_time_ms=cycle_time_ms, fusion_threshold_bytes=fusion_threshold_bytes,
                          process_sets=process_sets, comm=comm))
        return
    start_runtime(cycle_time_ms, fusion_threshold_bytes, process_sets, comm)


def start_runtime(cycle_time_ms=None, fusion_threshold_bytes=None, process_sets=None, comm=None):
    """:func:`init` on the world the environment names, without the elastic driver's
    world assignment (that assignment sets the environment, then calls this). Same
    arguments and errors as :func:`init`."""
    from concord import process_sets as sets_module
    if comm is not None:
        raise InvalidArgumentError("init: comm= is not supported; Concord runs on MPI_COMM_WORLD "
                                   "(use process_sets= for subsets)")
    sets, ranks = sets_module.register_initial(process_sets)
    _core.init(-1.0 if cycle_time_ms is None else float(cycle_time_ms),
               -1 if fusion_threshold_bytes is None else int(fusion_threshold_bytes), ranks)
    sets_module.assign_ids(sets)


def shutdown():
    """Stop Concord on every rank (the first rank to call it stops all of them).

    Operations still pending fail with :class:`StateError`. ``init()`` may be called again.
    """
    _core.shutdown()


def is_initialized():
    """Return True between :func:`init` and :func:`shutdown`."""
    return _core.is_initialized()


def rank():
    """Return this process's rank in ``[0, size())``. Raises StateError before init()."""
    return _core.rank()


def size():
    """Return the number of ranks. Raises StateError before init()."""
    return _core.size()


def local_rank():
    """Return the rank among processes on this node. Raises StateError before init()."""
    return _core.local_rank()


def local_size():
    """Return the number of processes on this node. Raises StateError before init()."""
    return _core.local_size()


def cross_rank():
    """Return this rank's position among the ranks with the same local rank (Horovod's
    cross communicator: the node index when every node runs the same number of ranks).
    Raises StateError before init()."""
    return _core.cross_rank()


def cross_size():
    """Return the number of ranks with this rank's local rank (the number of nodes when
    every node runs the same number of ranks). Raises StateError before init()."""
    return _core.cross_size()


def mpi_threads_supported():
    """Return True if MPI provides MPI_THREAD_MULTIPLE (other threads may call MPI, e.g.
    mpi4py, beside Concord's background thread). Raises StateError before init()."""
    return _core.mpi_threads_supported()


def start_timeline(file_path, mark_cycles=False):
    """Start writing a Chrome-trace / Perfetto JSON timeline to ``file_path`` (rank 0 only;
    a no-op elsewhere). Per tensor: NEGOTIATE_<COLLECTIVE> with a mark per rank as it
    becomes ready, QUEUE, MEMCPY_IN_FUSION_BUFFER, the algorithm (e.g. ALLREDUCE_RING) and
    MEMCPY_OUT. Same as ``CONCORD_TIMELINE=file_path`` at init.

    Args:
        file_path (str): output file, truncated.
        mark_cycles (bool): accepted for Horovod compatibility; cycle markers are not
            written.

    Raises:
        StateError: not initialized, or a timeline is already being written.
        InvalidArgumentError: the file cannot be opened.
    """
    del mark_cycles
    _core.start_timeline(str(file_path))


def stop_timeline():
    """Stop the timeline; the file is then valid JSON. No-op when none is written."""
    _core.stop_timeline()


def repair_timeline(text):
    """Return valid JSON text from the text of a timeline file cut short (a crash before
    :func:`stop_timeline`): every complete event line, as a JSON array.

    Raises:
        InvalidArgumentError: the text is not a Concord timeline (first line is not "[").
    """
    return _core.repair_timeline(text)


def coordination_stats():
    """Return this rank's coordination counters since init() as a dict: ``cycles``,
    ``coordinator_rounds`` (cycles that gathered requests at rank 0), ``cache_hits``,
    ``cache_misses``, ``invalidations``, ``evictions``, ``stall_checks``. With the response
    cache on, ``coordinator_rounds`` stops growing once every tensor has been negotiated
    once. Raises StateError before init()."""
    return _core.coordination_stats()


# Stop the background thread before the interpreter frees the tensors it may still use;
# after a failure, the process's remaining exit (MPI finalisation) is bounded to 5 s.
atexit.register(_core.shutdown_at_exit)
