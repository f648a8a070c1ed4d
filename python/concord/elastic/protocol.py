"""The keys through which concord-run's elastic driver and its workers talk, in the
rendezvous store the driver serves (src/transport/rendezvous/tcp_store.h; a worker
reaches it at ``CONCORD_ELASTIC_STORE``). One place for both sides:

* ``elastic/generation``: the number of the latest world the driver formed (0, 1, ...);
* ``elastic/g<G>/world``: that world, JSON ``{"size": N, "ranks": {slot: rank},
  "local": {slot: [local_rank, local_size]}}``; a *slot* is ``"host:index"``;
* ``elastic/g<G>/abort``: why world G was abandoned (set by the driver when it declares a
  worker lost, or by a worker whose collective failed); every worker of G aborts its
  transport world on seeing it, so no collective of G waits for a dead peer;
* ``elastic/g<G>/hosts``: JSON ``{"timestamp": T, "removed_only": bool}`` when hosts
  were added or removed while G ran: its workers stop at their next ``commit()`` /
  ``check_host_updates()`` (Horovod's HostsUpdatedInterrupt) and join G+1;
* ``elastic/heartbeat/<slot>``: a counter each worker increments every
  :data:`HEARTBEAT_INTERVAL` seconds; the driver declares a worker whose counter stops lost;
* ``elastic/pid/<slot>``: ``"host pid"`` of the worker, so the driver can kill it remotely;
* ``elastic/joined/<slot>``: the last world the worker completed joining (its rendezvous
  done), so that when the job ends the driver can stop workers that never joined one.

World G's UCX rendezvous runs in the same store under Concord's run id ``<job>.g<G>``
(src/transport/rendezvous/world_rendezvous.h), so its keys, and its own abort key, never
meet another generation's.
"""

import json

#: Seconds between a worker's heartbeats.
HEARTBEAT_INTERVAL = 0.5

GENERATION = "elastic/generation"


def world_key(generation):
    """The key of world ``generation``'s assignment."""
    return f"elastic/g{generation}/world"


def abort_key(generation):
    """The key of world ``generation``'s abort reason."""
    return f"elastic/g{generation}/abort"


def hosts_key(generation):
    """The key of the host-update notice for the workers of world ``generation``."""
    return f"elastic/g{generation}/hosts"


def heartbeat_key(slot):
    """The heartbeat counter of worker ``slot``."""
    return f"elastic/heartbeat/{slot}"


def pid_key(slot):
    """Where worker ``slot`` says which host and process it is."""
    return f"elastic/pid/{slot}"


def joined_key(slot):
    """The last world worker ``slot`` joined."""
    return f"elastic/joined/{slot}"


def run_id(job, generation):
    """Concord's rendezvous run id of world ``generation`` of job ``job``."""
    return f"{job}.g{generation}"


def rendezvous_abort_key(job, generation):
    """World ``generation``'s abort key in Concord's own rendezvous (world_rendezvous.h),
    which the driver also sets so that workers still rendezvousing stop at once."""
    return f"concord/{run_id(job, generation)}/abort"


def encode_world(ranks, hosts_of):
    """The JSON of a world: ``ranks`` maps slot -> rank (0..N-1), ``hosts_of`` slot ->
    host; local ranks number each host's slots in rank order."""
    by_host = {}
    for slot in sorted(ranks, key=ranks.get):
        by_host.setdefault(hosts_of(slot), []).append(slot)
    local = {slot: [group.index(slot), len(group)] for group in by_host.values() for slot in group}
    return json.dumps({"size": len(ranks), "ranks": ranks, "local": local}, sort_keys=True)


def decode_world(text):
    """The dict of :func:`encode_world`'s JSON.

    Raises:
        ValueError: not a world record (truncated or foreign).
    """
    world = json.loads(text)
    if not isinstance(world, dict) or set(world) != {"size", "ranks", "local"} or \
            sorted(world["ranks"].values()) != list(range(world["size"])):
        raise ValueError(f"not an elastic world record: {text[:200]!r}")
    return world
