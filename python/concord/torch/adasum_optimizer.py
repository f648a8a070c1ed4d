"""``DistributedOptimizer(op=Adasum)`` on more than one rank: Horovod 0.28.1's delta
optimizer (horovod/torch/optimizer.py, ``_DistributedAdasumOptimizer``), which combines the
ranks' *updates* rather than their gradients with Adasum (Maleki et al., "Scaling
Distributed Training with Adaptive Summation", MLSys 2021).

For each parameter p, once backward has produced its gradient (after
``backward_passes_per_step`` passes), the wrapped optimizer steps p alone from a saved
copy ``start``; the update ``delta = p - start`` (the wrapped optimizer's own rule, e.g.
``-lr * g`` for SGD) is allreduced with op Adasum in place, and ``step()`` sets
``p = start + Adasum(deltas)``. So an Adasum run does not scale the learning rate by the
number of ranks (Horovod's examples use ``lr_scaler = 1`` with Adasum). Between backward
and ``step()`` a parameter holds its local update, not its value, as under Horovod.
"""

import torch

from concord.torch.collectives import allreduce_async_
from concord.torch.handles import Adasum, synchronize
from concord.torch.optimizer import _TOO_MANY_PASSES, _ZERO_GRAD_IN_FLIGHT, parameter_names, wrap


class _AdasumDeltaOptimizer(torch.optim.Optimizer):
    _is_distributed_optimizer = True  # functions.py: its own step() would allreduce

    def __init__(self, params, named_parameters, compression, backward_passes_per_step):
        super().__init__(params)
        self._compression = compression
        self.backward_passes_per_step = backward_passes_per_step
        all_params = [p for group in self.param_groups for p in group["params"]]
        self._parameter_names = parameter_names(all_params, named_parameters)
        self._trainable = [p for p in all_params if p.requires_grad]
        self._start = {p: torch.zeros_like(p, requires_grad=False) for p in self._trainable}
        self._delay = {p: backward_passes_per_step for p in self._trainable}
        self._handles = {}  # parameter -> (handle, compression context)
        self._accumulators = []
        for p in self._trainable:
            p.grad = torch.zeros_like(p)
            accumulator = p.expand_as(p).grad_fn.next_functions[0][0]
            accumulator.register_hook(self._make_hook(p))
            self._accumulators.append(accumulator)

    def _make_hook(self, p):
        def hook(*_):
            if p in self._handles and self._delay[p] <= 0:
                raise AssertionError(_TOO_MANY_PASSES)
            self._delay[p] -= 1
            if self._delay[p] == 0:
                self._handles[p] = self._reduce_update(p)
        return hook

    def _reduce_update(self, p):
        """Steps p alone with the wrapped optimizer from a copy of its value, leaves the
        update in p and starts its in-place Adasum allreduce."""
        saved = [group["params"] for group in self.param_groups]
        for group in self.param_groups:
            group["params"] = [p] if any(p is q for q in group["params"]) else []
        try:
            start = self._start[p]
            start.copy_(p.detach())
            super().step()
            p.data.sub_(start)
        finally:
            for group, params in zip(self.param_groups, saved):
                group["params"] = params
        compressed, ctx = self._compression.compress(p.data)
        return allreduce_async_(compressed, name=self._parameter_names[p], op=Adasum), ctx

    def synchronize(self):
        """Nothing to do: the updates are combined by :meth:`step` (as Horovod's)."""

    def skip_synchronize(self):
        """Not supported with Adasum: raises AssertionError (Horovod's text) where a
        ``with`` statement would enter it."""
        raise AssertionError("Skipping synchronization is not supported when using Adasum optimizer.")

    def step(self, closure=None):
        """Reduces the updates of the parameters backward did not reach (their zero or
        accumulated gradients), waits for every Adasum allreduce and sets each parameter to
        its start plus the combined update. Returns ``closure()``'s loss, if given."""
        loss = closure() if closure is not None else None
        for p in self._trainable:
            if p not in self._handles:
                self._handles[p] = self._reduce_update(p)
        for p, (handle, ctx) in self._handles.items():
            delta = self._compression.decompress(synchronize(handle), ctx)
            start = self._start[p]
            start.add_(delta)
            p.data.copy_(start)
            self._delay[p] = self.backward_passes_per_step
        self._handles.clear()
        return loss

    def zero_grad(self, *args, **kwargs):
        """As the wrapped optimizer's, but refuses to run while allreduces are in flight."""
        if self._handles:
            raise AssertionError(_ZERO_GRAD_IN_FLIGHT)
        return super().zero_grad(*args, **kwargs)


def adasum_optimizer(optimizer, named_parameters, compression, backward_passes_per_step):
    """The delta optimizer over ``optimizer``'s parameter groups: an instance of a
    subclass of ``type(optimizer)`` (see the module docstring).

    Raises:
        ValueError: duplicate names, or parameters missing from named_parameters.
    """
    cls = wrap(_AdasumDeltaOptimizer, optimizer)
    return cls(optimizer.param_groups, named_parameters, compression, backward_passes_per_step)
