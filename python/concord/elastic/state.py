"""Horovod's elastic state and its run loop, framework-independent
(``horovod.common.elastic``): a :class:`State` is what a training function commits in host
memory so that, after a lost worker, every survivor rolls back to the same point and a new
worker receives it. concord.torch.elastic adds the PyTorch handlers.
"""

import copy
import functools
import queue

from concord import CommError, StateError, _core
from concord.elastic import worker as elastic_worker
from concord.elastic.worker import HostsUpdatedInterrupt


class State:
    """Base of the elastic states: reset callbacks and host-update notices.

    Args:
        bcast_object: ``f(obj, root_rank=0) -> obj``, broadcasting a picklable object.
        get_rank: ``f() -> int``, this worker's current rank.
    """

    def __init__(self, bcast_object, get_rank):
        self._bcast_object = bcast_object
        self._rank = get_rank
        self._host_messages = queue.Queue()
        self._last_updated_timestamp = 0
        self._reset_callbacks = []

    def register_reset_callbacks(self, callbacks):
        """Adds functions called (without arguments) after every reset, once the new world
        is formed and the state synced: e.g. to scale the learning rate with the new size."""
        self._reset_callbacks.extend(callbacks)

    def on_reset(self):
        """Called by :func:`run_fn` after a reset: drops stale notices, runs the callbacks."""
        self._host_messages = queue.Queue()
        self.reset()
        for callback in self._reset_callbacks:
            callback()

    def on_hosts_updated(self, timestamp, removed_only=False):
        """Called by the worker's watch thread when the driver announces a host change."""
        self._host_messages.put((timestamp, removed_only))

    def commit(self):
        """Saves the state (:meth:`save`) as the point every worker returns to after a
        failure, then :meth:`check_host_updates`. Collective: every rank calls it at the
        same step. Costs one copy of the state in host memory (and, for an ElasticSampler,
        an allgather of its processed indices): commit every few batches, not every one.

        Raises:
            HostsUpdatedInterrupt: hosts were added or removed (on every rank at once).
        """
        self.save()
        self.check_host_updates()

    def check_host_updates(self):
        """Raises HostsUpdatedInterrupt on every rank at once when the driver announced an
        added or removed host since the last check: rank 0's view is broadcast, so ranks
        whose watch thread saw the notice at different steps still agree. Collective."""
        last, removed_only = self._last_updated_timestamp, True
        seen = False
        while not self._host_messages.empty():
            timestamp, removed = self._host_messages.get()
            if timestamp > last:
                last, seen = timestamp, True
                removed_only = removed_only and removed
        previous = self._last_updated_timestamp
        self._last_updated_timestamp, removed_only = self._bcast_object(
            (last, removed_only and seen), root_rank=0)
        if self._last_updated_timestamp > previous:
            raise HostsUpdatedInterrupt(skip_sync=removed_only)

    def save(self):
        """Copies the state to host memory (overridden)."""
        raise NotImplementedError

    def restore(self):
        """Returns to the last saved state (overridden)."""
        raise NotImplementedError

    def sync(self):
        """Broadcasts the state from rank 0 to every rank (overridden)."""
        raise NotImplementedError

    def reset(self):
        """Adapts to the new world after a reset (overridden where needed)."""


class ObjectState(State):
    """State of plain picklable Python objects, each given as a keyword argument and kept as
    an attribute (``state.epoch``, ``state.batch``): saved by copy, synced by broadcast.

    Args:
        bcast_object, get_rank: as :class:`State`.
        **kwargs: the attributes and their initial values.
    """

    def __init__(self, bcast_object, get_rank, **kwargs):
        self._saved_state = kwargs
        self._set_attrs()
        super().__init__(bcast_object=bcast_object, get_rank=get_rank)

    def save(self):
        self._saved_state = {name: copy.deepcopy(getattr(self, name)) for name in self._saved_state}

    def restore(self):
        self._set_attrs()

    def sync(self):
        if self._saved_state:
            self._saved_state = self._bcast_object(self._saved_state, root_rank=0)
            self._set_attrs()

    def _set_attrs(self):
        for name, value in self._saved_state.items():
            setattr(self, name, copy.deepcopy(value))


def lost_world(error):
    """True when ``error`` means the world is lost (a peer died or was declared lost, the
    runtime stopped for it), as opposed to a program error that would recur on every retry
    (MismatchError, InvalidArgumentError), which ends the job."""
    return isinstance(error, (CommError, StateError))


def run_fn(func, reset):
    """Wraps ``func(state, *args, **kwargs)`` for elastic training (Horovod's run_fn): sync
    the state, run; on a lost world restore the last commit, ``reset()`` (form the next
    world) and run again; on HostsUpdatedInterrupt reset without restoring (and without
    syncing when hosts were only removed). Returns what ``func`` returns.

    Without concord-run's elastic driver (torchrun, whose agent restarts every worker on a
    failure, or a lone process) the function runs once after a sync, and an error ends the
    process: resume from a disk checkpoint at start (docs/elastic.md).

    Raises:
        StateError: started by an MPI launcher (the MPI world cannot be re-formed in-process),
            or no new world was formed.
    """
    @functools.wraps(func)
    def wrapper(state, *args, **kwargs):
        worker = elastic_worker.current()
        if worker is None:
            if _core.is_initialized() and _core.world_origin()[1] == "mpirun":
                raise StateError("elastic.run needs the elastic driver and the store-based UCX transport: start "
                                 "the job with concord-run --min-np N --max-np M (under mpirun the MPI world "
                                 "cannot be re-formed after a lost worker)")
            state.sync()
            return func(state, *args, **kwargs)
        worker.register_listener(state)
        skip_sync = False
        try:
            while True:
                try:
                    if not skip_sync:
                        state.sync()
                    return func(state, *args, **kwargs)
                except HostsUpdatedInterrupt as interrupt:
                    skip_sync = interrupt.skip_sync
                    reason = None
                except Exception as error:  # noqa: BLE001 -- re-raised unless the world is lost
                    if not lost_world(error):
                        raise
                    state.restore()
                    skip_sync, reason = False, str(error).splitlines()[0]
                reset(worker, reason)
                state.on_reset()
        finally:
            worker.remove_listener(state)
    return wrapper


def reset_world(worker, reason):
    """Leaves the current world (telling its members why when ``reason`` is given) and
    joins the next one the driver forms, retrying while a forming world fails (a member
    lost during the rendezvous).

    Raises:
        StateError: no new world within the driver's elastic timeout, or this worker was
            left out of it.
    """
    worker.leave(reason)
    while True:
        try:
            worker.join(worker.init_kwargs)
            return
        except CommError as error:
            worker.leave(str(error).splitlines()[0])
