"""TorchState: the elastic state of a PyTorch training process (Horovod's
``hvd.elastic.TorchState``): models, optimizers, LR schedulers and ElasticSamplers by
handler, any other keyword argument as a plain object."""

import copy

import torch

from concord.elastic.state import ObjectState
from concord.torch.elastic.sampler import ElasticSampler
from concord.torch.functions import broadcast_optimizer_state, broadcast_parameters
from concord.torch.objects import broadcast_object
from concord import rank


class _Handler:
    """Save/restore/sync of one attribute's value through its state_dict."""

    def __init__(self, value):
        self.value = value
        self.save()

    def save(self):
        self._saved = copy.deepcopy(self.value.state_dict())

    def restore(self):
        self.value.load_state_dict(self._saved)

    def sync(self):
        self.value.load_state_dict(broadcast_object(self.value.state_dict(), root_rank=0))

    def set_value(self, value):
        self.value = value
        self.save()


class _ModelHandler(_Handler):
    def sync(self):
        broadcast_parameters(self.value.state_dict(), root_rank=0)


class _OptimizerHandler(_Handler):
    def restore(self):
        if hasattr(self.value, "abandon_allreduces"):  # a DistributedOptimizer
            self.value.abandon_allreduces()
        super().restore()

    def sync(self):
        broadcast_optimizer_state(self.value, root_rank=0)


# The handled types, first match wins; LR schedulers and samplers use the base handler.
_HANDLERS = ((torch.nn.Module, _ModelHandler), (torch.optim.Optimizer, _OptimizerHandler),
             (torch.optim.lr_scheduler._LRScheduler, _Handler), (ElasticSampler, _Handler))


def _handler(value):
    for kind, handler in _HANDLERS:
        if isinstance(value, kind):
            return handler(value)
    return None


class TorchState(ObjectState):
    """The state of a PyTorch training process, committed in host memory.

    Args:
        model (torch.nn.Module, optional): synced by broadcast_parameters from rank 0.
        optimizer (torch.optim.Optimizer, optional): synced by broadcast_optimizer_state.
        **kwargs: more models, optimizers, LR schedulers, ElasticSamplers (by their
            state_dict) or plain picklable values (epoch, batch, ...), all kept as
            attributes.

    ``commit()`` deep-copies every state_dict (parameters and optimizer moments: twice the
    model's size in host memory); ``restore()`` loads them back; ``sync()`` broadcasts
    rank 0's to every rank, so a new worker starts from the survivors' state. After a
    reset, samplers re-shard the epoch's remaining samples over the new world.
    """

    def __init__(self, model=None, optimizer=None, **kwargs):
        kwargs.update(model=model, optimizer=optimizer)
        handlers, plain = {}, {}
        for name, value in kwargs.items():
            handler = _handler(value)
            if handler is None:
                plain[name] = value
            else:
                handlers[name] = handler
        object.__setattr__(self, "_handlers", handlers)
        for name, handler in handlers.items():
            object.__setattr__(self, name, handler.value)
        super().__init__(bcast_object=broadcast_object, get_rank=rank, **plain)

    def save(self):
        for handler in self._handlers.values():
            handler.save()
        super().save()

    def restore(self):
        for handler in self._handlers.values():
            handler.restore()
        super().restore()

    def sync(self):
        for handler in self._handlers.values():
            handler.sync()
        super().sync()

    def reset(self):
        for handler in self._handlers.values():
            if isinstance(handler.value, ElasticSampler):
                handler.value.reset()

    def __setattr__(self, name, value):
        handlers = self.__dict__.get("_handlers", {})
        if name in handlers:
            handlers[name].set_value(value)
        super().__setattr__(name, value)
