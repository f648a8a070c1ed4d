"""Horovod's elastic API for PyTorch (``hvd.elastic``): a training function wrapped by
:func:`run` survives lost and added workers under ``concord-run --min-np N --max-np M``,
rolling back to the last ``state.commit()`` (docs/elastic.md)::

    state = hvd.elastic.TorchState(model, optimizer, epoch=0, batch=0)

    @hvd.elastic.run
    def train(state):
        for state.epoch in range(state.epoch, epochs):
            ...
            state.commit()

    train(state)
"""

from concord.elastic.state import ObjectState as _ObjectState
from concord.elastic.state import State, reset_world, run_fn
from concord.elastic.worker import HostsUpdatedInterrupt
from concord.torch.elastic.sampler import ElasticSampler
from concord.torch.elastic.state import TorchState
from concord.torch.objects import broadcast_object
from concord import rank


class ObjectState(_ObjectState):
    """State of plain picklable objects given as keyword arguments, broadcast with
    concord.torch's broadcast_object (Horovod's ``hvd.elastic.ObjectState``)."""

    def __init__(self, **kwargs):
        super().__init__(bcast_object=broadcast_object, get_rank=rank, **kwargs)


def run(func):
    """Decorator: ``func(state, ...)`` becomes elastic (concord.elastic.state.run_fn with
    the reset that leaves the lost world and joins the driver's next one).

    Raises:
        StateError: the job was not started by the elastic driver (e.g. under mpirun).
    """
    return run_fn(func, reset_world)


__all__ = ["run", "State", "ObjectState", "TorchState", "ElasticSampler", "HostsUpdatedInterrupt"]
