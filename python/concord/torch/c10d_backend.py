"""Registers ``"concord"`` as a torch.distributed backend (``import concord.torch`` does):
``dist.init_process_group("concord", init_method=..., rank=..., world_size=...)`` then runs
``dist.*`` collectives, DistributedDataParallel, ZeroRedundancyOptimizer, ... on Concord's
runtime (concord.torch.process_group).

The backend is a Python subclass of torch 1.13's ``c10d::ProcessGroup`` registered with
``Backend.register_backend(..., extended_api=True)``: the creator receives the group's
PrefixStore, rank, size, timeout, group id and global ranks.

Starting the runtime (the default group's creator): under an MPI launcher (``mpirun``) the
creator starts it over MPI (``concord.init``, with dynamic process sets for ``new_group``)
and checks that torch.distributed's rank and world size are MPI's: a disagreement is a
RuntimeError naming both, never a wrong world. Otherwise (torchrun's env://, file:// or
tcp:// from any launcher) it starts it over UCX, rendezvousing through a TCP store rank 0
serves whose address it passes through the c10d store (join_through_store). A runtime
already started (``hvd.init()``) is used as is, after the same check.

Subgroups: ``dist.new_group(ranks)`` is called by every rank of the world, in the same
order (torch's contract), but calls the creator on the members only, and the members alone
form the group: Concord's process set of its ranks is registered by the members'
``concord._core.form_process_set`` (the other ranks' runtimes apply it where the world's
negotiation orders it; their application threads call nothing, and their runtimes record
only the set's id and ranks, which the world-wide add_process_set / remove_process_set
decide from on every rank alike: docs/torch_distributed.md, "Subgroups"), and the group's
point-to-point channel is a communicator of the members alone, made with the set's
(TransportWorld::create_group). Groups of the same ranks share one process set (and its
channel).
"""

import os
import socket

import torch.distributed as dist

import concord
from concord import _core
from concord import process_sets
from concord.torch.c10d_work import CallbackPool
from concord.torch.process_group import ProcessGroupConcord

BACKEND = "concord"
# : Environment variables an MPI launcher sets in every rank(Open MPI, MPICH / Hydra, PMIx).
MPI_LAUNCHER_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK")


def launched_by_mpi(environ=os.environ):
    """True when an MPI launcher started this process."""
    return any(variable in environ for variable in MPI_LAUNCHER_VARIABLES)


STORE_KEY = "concord/rendezvous_store"


def join_through_store(store, rank, size):
    """Starts Concord's runtime over UCX for rank ``rank`` of ``size``, rendezvousing
    through a TCP store that rank 0 serves (src/transport/rendezvous/) on a free port of
    MASTER_ADDR (or this host's address); its address travels to the other ranks through
    torch's ``store`` (env://, file:// or tcp:// alike), whose own timeout bounds the wait.
    Sets RANK, WORLD_SIZE and CONCORD_STORE in this process's environment, as a launcher
    would, and CONCORD_TRANSPORT=ucx unless the user chose one.

    Raises:
        RuntimeError: torch's store timed out before rank 0 published the address.
        CommError: Concord's rendezvous failed (a rank never arrived within
            CONCORD_INIT_TIMEOUT, a duplicate rank, differing world sizes).
    """
    if rank == 0:
        host = os.environ.get("MASTER_ADDR") or socket.gethostname()
        address = socket.gethostbyname(host)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:  # a port free right now
            probe.bind((address, 0))
            port = probe.getsockname()[1]
        store.set(STORE_KEY, f"tcp:{address}:{port}")
    published = store.get(STORE_KEY).decode()
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(size), CONCORD_STORE=published)
    os.environ.setdefault("CONCORD_TRANSPORT", "ucx")
    concord.init(process_sets="dynamic")


class ConcordBackend:
    """The backend's state: the runtime start, the process sets of the subgroups (by their
    sorted global ranks) and the threads completing futures."""

    def __init__(self):
        self._callbacks = CallbackPool()
        self._sets = {}

    def start_runtime(self, store, rank, size):
        """Starts Concord's runtime for a world of ``size`` ranks in which this process is
        ``rank`` (no-op when started), then checks the runtime agrees.

        Raises:
            RuntimeError: no way to start a world of this size here (no MPI launcher, no
                store-based init), or the runtime's rank/size differ from torch's.
        """
        if not concord.is_initialized():
            if launched_by_mpi() or size == 1:
                concord.init(process_sets="dynamic")
            elif store is not None:
                join_through_store(store, rank, size)
            else:
                raise RuntimeError(
                    f"init_process_group('concord'): rank {rank} of {size} got no store to rendezvous through "
                    "and no MPI launcher started it (docs/torch_distributed.md)")
        if concord.rank() != rank or concord.size() != size:
            raise RuntimeError(
                f"init_process_group('concord'): torch.distributed says rank {rank} of {size}, Concord's runtime "
                f"says rank "
                f"{concord.rank()} of {concord.size()}; under mpirun pass rank and world_size as the MPI launcher "
                "numbers the processes (e.g. OMPI_COMM_WORLD_RANK / OMPI_COMM_WORLD_SIZE)")

    def process_set(self, ranks, name):
        """The process set of the sorted global ``ranks`` (None for the whole world),
        formed by its members on first use under ``name`` (the same on every member):
        every member calls it, in the same order; the other ranks call nothing."""
        ranks = tuple(sorted(int(r) for r in ranks))
        if ranks == tuple(range(concord.size())):
            return None
        if ranks not in self._sets:
            process_set = process_sets.ProcessSet(list(ranks))
            process_set.process_set_id = _core.form_process_set(list(ranks), name)
            self._sets[ranks] = process_set
        return self._sets[ranks]

    def create(self, options, pg_options=None):
        """torch.distributed's creator (extended API): a ProcessGroupConcord for the
        group described by ``options`` (``_DistributedBackendOptions``)."""
        del pg_options  # the backend takes no options object
        ranks = list(options.global_ranks_in_group)
        if not ranks or (not concord.is_initialized() and ranks == list(range(dist.get_world_size()))):
#the default group, or a group of the whole world over another default backend
#(new_group(backend = "concord") beside Gloo) : the runtime's world is this group
            self.start_runtime(options.store, options.group_rank, options.group_size)
            ranks, process_set = list(range(options.group_size)), None
        elif not concord.is_initialized():
            raise RuntimeError(
                f"concord: group '{options.group_id}' of ranks {ranks} is the first use of the concord backend; "
                "Concord's runtime starts with a group of every rank (init_process_group or new_group over "
                "the whole world) before a subgroup")
        else:
            process_set = self.process_set(ranks, f"c10d.{options.group_id}")
        name = options.group_id or "world"
        if ranks != sorted(ranks) or ranks[options.group_rank] != concord.rank():
            raise RuntimeError(f"concord: group '{name}': group rank {options.group_rank} of global ranks {ranks} "
                               f"is not this process (global rank {concord.rank()})")
#the world 's channel duplicates the transport world; a subgroup' s is its set's
        channel = _core.P2pChannel(f"c10d.p2p.{name}", -1 if process_set is None else process_set.process_set_id)
        return ProcessGroupConcord(options.group_rank, options.group_size, ranks, process_set, name, options.store,
                                   channel, options.timeout, self._callbacks)


def register():
    """Registers the ``"concord"`` backend with torch.distributed (once per process)."""
    if BACKEND.upper() in dist.Backend._plugins:
        return
    dist.Backend.register_backend(BACKEND, ConcordBackend().create, extended_api=True)
