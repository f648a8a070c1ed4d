"""Process sets (Horovod's ``hvd.ProcessSet``): collectives among a subset of the ranks.

Each set negotiates on its own communicators with its own response cache
(src/runtime/process_set.h). Create sets at ``init(process_sets=[...])`` or, with
``CONCORD_DYNAMIC_PROCESS_SETS=1``, with :func:`add_process_set` /
:func:`remove_process_set` (collective: every rank calls them in the same order). Pass
``process_set=`` to any collective; within a set, sizes, splits and rows are the set's,
while roots (``root_rank``) stay global ranks, as in Horovod.
"""

import os

from concord import _core
from concord._core import InvalidArgumentError


class ProcessSet:
    """A set of global ranks. ``process_set_id`` is None until the set is registered
    (by ``init(process_sets=...)`` or :func:`add_process_set`)."""

    def __init__(self, ranks):
        try:
            self.ranks = sorted(int(r) for r in ranks)
        except TypeError as error:
            raise TypeError(f"ProcessSet: expected a sequence of ranks, got {ranks!r}") from error
        if len(set(self.ranks)) != len(self.ranks):
            raise InvalidArgumentError(f"ProcessSet: ranks {list(ranks)} contain duplicates")
        self.process_set_id = None

    def _invalidate(self):
        self.process_set_id = None

    def size(self):
        """Number of ranks in the set, or None if it is not registered."""
        if self.process_set_id is None:
            return None
        return len(_core.process_set_ranks(self.process_set_id))

    def rank(self):
        """This process's rank within the set (its index in ``ranks``), or None if the set
        is not registered.

        Raises:
            InvalidArgumentError (a ValueError, as Horovod's): this process is not in the set.
        """
        if self.process_set_id is None:
            return None
        rank = _core.process_set_rank(self.process_set_id)
        if rank < 0:
            raise InvalidArgumentError(f"ProcessSet.rank(): rank {_core.rank()} is not in {self!r}")
        return rank

    def included(self):
        """Whether this process is in the set, or None if the set is not registered."""
        if self.process_set_id is None:
            return None
        return _core.process_set_rank(self.process_set_id) >= 0

    def __eq__(self, other):
        return isinstance(other, ProcessSet) and self.ranks == other.ranks and \
            self.process_set_id == other.process_set_id

    def __hash__(self):
        return hash((tuple(self.ranks), self.process_set_id))

    def __repr__(self):
        return f"ProcessSet(process_set_id={self.process_set_id}, ranks={self.ranks})"


class _GlobalProcessSet(ProcessSet):
    """Every rank (id 0); its ranks are filled in at init()."""

    def __init__(self):
        self.ranks = []
        self.process_set_id = 0

    def size(self):
        return _core.size()

    def rank(self):
        return _core.rank()

    def included(self):
        return True


global_process_set = _GlobalProcessSet()


def set_id(process_set, what="collective"):
    """The runtime id of ``process_set`` (None = the global set)."""
    if process_set is None:
        return 0
    if not isinstance(process_set, ProcessSet):
        raise TypeError(f"{what}: process_set must be a ProcessSet, got {type(process_set).__name__}")
    if process_set.process_set_id is None:
        raise InvalidArgumentError(f"{what}: {process_set!r} is not registered: pass it to "
                                   "init(process_sets=[...]) or add_process_set()")
    return process_set.process_set_id


def register_initial(process_sets):
    """The rank lists to give the runtime for init(process_sets=...), in order."""
    if process_sets is None:
        return [], []
    if isinstance(process_sets, str) and process_sets.lower() == "dynamic":
        # Horovod's basics.py: no sets now, and HOROVOD_DYNAMIC_PROCESS_SETS=1 so that
        # add_process_set() works later; the CONCORD_* name is set so that it wins over a
        # CONCORD_DYNAMIC_PROCESS_SETS=0 of the environment, as the explicit argument should.
        os.environ["CONCORD_DYNAMIC_PROCESS_SETS"] = "1"
        return [], []
    sets = [p if isinstance(p, ProcessSet) else ProcessSet(p) for p in process_sets]
    return sets, [s.ranks for s in sets]


def assign_ids(sets):
    """After init: ids 1, 2, ... in the order given."""
    global_process_set.ranks = list(range(_core.size()))
    for i, process_set in enumerate(sets):
        process_set.process_set_id = i + 1


def add_process_set(process_set):
    """Register a new process set (collective: every rank calls it with the same ranks;
    needs ``CONCORD_DYNAMIC_PROCESS_SETS=1``). Returns the registered ProcessSet.

    Raises:
        InvalidArgumentError: dynamic process sets disabled, bad ranks, a set with these
            ranks already exists.
        MismatchError: ranks differ between callers.
    """
    if not isinstance(process_set, ProcessSet):
        process_set = ProcessSet(process_set)
    if process_set.process_set_id is not None:
        raise InvalidArgumentError(f"add_process_set: {process_set!r} is already registered")
    process_set.process_set_id = _core.add_process_set(process_set.ranks)
    return process_set


def remove_process_set(process_set):
    """Unregister ``process_set`` (collective; needs ``CONCORD_DYNAMIC_PROCESS_SETS=1``).
    Its pending operations fail with StateError. Returns True if it was removed.

    Raises:
        InvalidArgumentError: the global set, or dynamic process sets disabled.
    """
    identifier = set_id(process_set, "remove_process_set")
    if identifier == 0:
        raise InvalidArgumentError("remove_process_set: the global process set cannot be removed")
    _core.remove_process_set(identifier)
    process_set._invalidate()
    return True
