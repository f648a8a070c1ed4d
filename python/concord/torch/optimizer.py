"""DistributedOptimizer: data-parallel gradient averaging in the style of
``horovod.torch.DistributedOptimizer`` (Sergeev & Del Balso, 2018).

Each parameter's gradient accumulator gets a hook that starts the gradient's allreduce as
soon as backward has produced it, so communication overlaps the rest of backward;
``step()`` waits for every allreduce, writes the averaged gradients and then runs the
wrapped optimizer's update. With ``num_groups`` or ``groups`` the gradients of a group are
submitted together as one grouped allreduce once all of them are ready (Romero et al.,
NSDI 2022: stable fusion-buffer sizes).
"""

import warnings
from contextlib import contextmanager

import torch

from concord.torch.collectives import _grouped_allreduce_into, allreduce_async_
from concord.torch.handles import Average, _resolve_op, synchronize
from concord.torch.sparse_grad import sparse_allreduce_async


def _split_groups(params, groups, num_groups):
    """Lists of parameters reduced together: explicit ``groups``, or ``num_groups`` runs of
    consecutive parameters with equal counts (the first ones one longer)."""
    if groups is not None and num_groups:
        raise ValueError("DistributedOptimizer: pass either num_groups or groups, not both")
    if groups is not None:
        result, seen = [], set()
        for group in groups:
            group = list(group)
            for p in group:
                if not any(p is q for q in params):
                    raise ValueError("DistributedOptimizer: a parameter in groups is not optimized "
                                     "by the optimizer (or does not require grad)")
                if id(p) in seen:
                    raise ValueError("DistributedOptimizer: a parameter appears in two groups")
                seen.add(id(p))
            if group:
                result.append(group)
        return result
    if not num_groups:
        return []
    if num_groups < 0:
        raise ValueError("DistributedOptimizer: num_groups must be >= 0")
    count = min(num_groups, len(params))
    base, extra = divmod(len(params), count) if count else (0, 0)
    result, start = [], 0
    for g in range(count):
        length = base + (1 if g < extra else 0)
        result.append(params[start:start + length])
        start += length
    return result


# Horovod 0.28.1's texts (horovod/torch/optimizer.py), which scripts and tests match on.
_ZERO_GRAD_IN_FLIGHT = ("optimizer.zero_grad() was called after loss.backward() but before "
                        "optimizer.step() or optimizer.synchronize(). This is prohibited as it can cause a "
                        "race condition.")
_TOO_MANY_PASSES = ("Gradients were computed more than backward_passes_per_step times before call to step(). "
                    "Increase backward_passes_per_step to accumulate gradients locally.")


def parameter_names(all_params, named_parameters):
    """The allreduce name of each parameter: ``allreduce.<name>`` from named_parameters
    (unique names, covering every parameter of the optimizer), else a name from the
    parameter's position in the optimizer (the same on every rank only if the order is).

    Raises:
        ValueError: duplicate names, or optimizer parameters missing from named_parameters.
    """
    if named_parameters is None:
        return {p: f"DistributedOptimizer.grad.{i}" for i, p in enumerate(all_params)}
    named = list(named_parameters)
    names = [name for name, _ in named]
    if len(set(names)) != len(names):
        duplicates = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"DistributedOptimizer: parameter names must be unique; duplicates: {duplicates}")
    result = {p: f"allreduce.{name}" for name, p in named}
    unnamed = [p for p in all_params if p not in result]
    if unnamed:
        raise ValueError(f"DistributedOptimizer: {len(unnamed)} optimizer parameters are missing "
                         "from named_parameters")
    return result


def wrap(wrapper, optimizer):
    """A new optimizer class ``wrapper`` + ``type(optimizer)``: the wrapper's methods come
    first and reach the user's optimizer through ``super()``, as Horovod's wrappers do (its
    instance is built from ``optimizer.param_groups``, so the hyperparameters are reused)."""
    return type(optimizer.__class__.__name__, (wrapper, optimizer.__class__), {})


class _DistributedOptimizer(torch.optim.Optimizer):
    """The methods DistributedOptimizer adds to the user's optimizer class (wrap()): each
    gradient's allreduce starts from a hook as backward produces it; step() waits for them,
    writes the averaged gradients and runs the user's step."""

    _is_distributed_optimizer = True  # functions.py: its own step() would allreduce

    def __init__(self, params, named_parameters, compression, backward_passes_per_step, op,
                 gradient_predivide_factor, num_groups, groups, sparse_as_dense=False, process_set=None):
        super().__init__(params)
        self.process_set = process_set
        self.sparse_as_dense = sparse_as_dense
        self._compression = compression
        self.backward_passes_per_step = backward_passes_per_step
        self.op = op
        self.gradient_predivide_factor = gradient_predivide_factor
        all_params = [p for group in self.param_groups for p in group["params"]]
        self._parameter_names = parameter_names(all_params, named_parameters)
        self._handles = {}          # parameter -> (handle, (compressed, ctx)), ungrouped
        self._group_handles = {}    # group index -> (handle, [(p, compressed, ctx)])
        self._group_ready = {}      # group index -> set of parameters whose gradient is ready
        self._grad_accumulators = []
        self._allreduce_delay = {}
        trainable = [p for p in all_params if p.requires_grad]
        self._requires_update = set(trainable)
        self._groups = _split_groups(trainable, groups, num_groups)
        self._group_of = {p: g for g, members in enumerate(self._groups) for p in members}
        self._synchronized = False
        self._should_synchronize = True
        for p in trainable:
            self._allreduce_delay[p] = backward_passes_per_step
            self._register_hook(p)

    def _register_hook(self, p):
        # The check runs on p's incoming gradient, before it is added to p.grad: a pass too
        # many must not touch a p.grad whose in-place allreduce may still be in flight.
        p.register_hook(self._make_check(p))
        # The AccumulateGrad node of p: its hook runs once p.grad holds this backward's sum.
        accumulator = p.expand_as(p).grad_fn.next_functions[0][0]
        accumulator.register_hook(self._make_hook(p))
        self._grad_accumulators.append(accumulator)

    def _make_check(self, p):
        def check(_gradient):
            # A parameter whose overlap_forward update is pending has its own, more precise
            # error (overlap.py _refuse_if_pending).
            if self._allreduce_delay[p] <= 0 and p not in getattr(self, "_overlap_pending", ()):
                raise AssertionError(_TOO_MANY_PASSES)
        return check

    def _make_hook(self, p):
        def hook(*_):
            self._allreduce_delay[p] -= 1
            if self._allreduce_delay[p] > 0:
                return
            group = self._group_of.get(p)
            if group is None:
                self._gradient_ready(p)
                return
            ready = self._group_ready.setdefault(group, set())
            ready.add(p)
            if len(ready) == len(self._groups[group]):
                self._submit_group(group)
        return hook

    def _gradient_ready(self, p):
        """Backward has produced p's (ungrouped) gradient: start its allreduce now (forward
        chaining overrides this to queue it in forward order, overlap.py)."""
        self._handles[p] = self._allreduce_grad_async(p)

    def _scale_factors(self):
        if self.op == Average:
            return 1.0 / self.gradient_predivide_factor, self.gradient_predivide_factor
        return 1.0, 1.0

    def _dense_gradient(self, p):
        """p's gradient as the dense tensor its allreduce reduces in place: p.grad itself,
        or (sparse_as_dense) a dense copy of a sparse one, written back as a sparse
        gradient by _write_gradient, as Horovod's optimizer does."""
        if p.grad is None:
            p.grad = torch.zeros_like(p)
        return p.grad.to_dense() if p.grad.is_sparse else p.grad

    def _allreduce_grad_async(self, p):
        if p.grad is not None and p.grad.is_sparse and not self.sparse_as_dense:
            # Allgather of indices and values (sparse_grad.py), as Horovod.
            return sparse_allreduce_async(p.grad, name=self._parameter_names[p], op=self.op,
                                          process_set=self.process_set), None
        compressed, ctx = self._compression.compress(self._dense_gradient(p))
        prescale, postscale = self._scale_factors()
        handle = allreduce_async_(compressed, name=self._parameter_names[p], op=self.op, process_set=self.process_set,
                                  prescale_factor=prescale, postscale_factor=postscale)
        return handle, (compressed, ctx)

    def _submit_group(self, group):
        members = []
        for p in self._groups[group]:
            if p.grad is not None and p.grad.is_sparse and not self.sparse_as_dense:
                raise ValueError(f"DistributedOptimizer: the gradient of '{self._parameter_names[p]}' is sparse "
                                 "and sparse gradients cannot be grouped; pass sparse_as_dense=True or leave "
                                 "the parameter out of the groups")
            compressed, ctx = self._compression.compress(self._dense_gradient(p))
            members.append((p, compressed, ctx))
        prescale, postscale = self._scale_factors()
        tensors = [compressed for _, compressed, _ in members]
        names = [self._parameter_names[p] for p, _, _ in members]
        handle = _grouped_allreduce_into(tensors, tensors, names, _resolve_op(None, self.op), prescale, postscale,
                                         self.process_set)
        self._group_handles[group] = (handle, members)
        self._group_ready.pop(group, None)

    def _start_missing_allreduces(self):
        """Starts the allreduces that backward did not reach (e.g. unused parameters, with a
        zero gradient), so every rank reduces every gradient."""
        for p in self._requires_update:
            if p not in self._group_of and p not in self._handles:
                self._handles[p] = self._allreduce_grad_async(p)
        for group in range(len(self._groups)):
            if group not in self._group_handles:
                self._submit_group(group)

    def synchronize(self):
        """Wait for every gradient's allreduce (starting those that backward did not reach,
        e.g. unused parameters, with a zero gradient) and write the averaged gradients.

        When an allreduce fails (e.g. a lost worker), no allreduce of this step is left in
        flight afterwards, so the step can be retried after an elastic reset."""
        try:
            self._start_missing_allreduces()
            for p, (handle, compressed_ctx) in self._handles.items():
                result = synchronize(handle)
                if compressed_ctx is None:  # a sparse gradient: the sparse result replaces it
                    self._allreduce_delay[p] = self.backward_passes_per_step
                    p.grad.zero_().add_(result)
                    continue
                self._write_gradient(p, *compressed_ctx)
            for handle, members in self._group_handles.values():
                synchronize(handle)
                for p, compressed, ctx in members:
                    self._write_gradient(p, compressed, ctx)
        except BaseException:
            self.abandon_allreduces()
            raise
        self._handles.clear()
        self._group_handles.clear()
        self._synchronized = True

    def abandon_allreduces(self):
        """Forgets the gradient allreduces in flight, as if none had started this step:
        after their world was lost (an elastic reset restores the committed state; the
        handles of the lost world never complete) the next backward starts afresh."""
        self._handles.clear()
        self._group_handles.clear()
        self._group_ready.clear()
        for p in self._allreduce_delay:
            self._allreduce_delay[p] = self.backward_passes_per_step

    def _write_gradient(self, p, compressed, ctx):
        self._allreduce_delay[p] = self.backward_passes_per_step
        result = self._compression.decompress(compressed, ctx)
        if p.grad.is_sparse:  # sparse_as_dense: the gradient stays sparse (Horovod's optimizer.py)
            p.grad.zero_().add_(result.to_sparse())
        elif result is not p.grad:
            p.grad.copy_(result)

    @contextmanager
    def skip_synchronize(self):
        """Inside this context ``step()`` does not call :meth:`synchronize` (call it
        yourself first, e.g. to clip the averaged gradients)."""
        self._should_synchronize = False
        try:
            yield
        finally:
            self._should_synchronize = True

    def step(self, closure=None):
        """Wait for the gradients' allreduces, then run the wrapped optimizer's step.

        After an explicit :meth:`synchronize` outside :meth:`skip_synchronize`, it warns
        with Horovod's text and synchronizes again, reducing every gradient a second time
        as Horovod 0.28.1's optimizer does (for Average the values stay the same up to
        rounding; for Sum they are multiplied by the number of ranks)."""
        if self._should_synchronize:
            if self._synchronized:
                warnings.warn("optimizer.step() called without optimizer.skip_synchronize() context after "
                              "optimizer.synchronize(). This can cause training slowdown. You may want to "
                              "consider using optimizer.skip_synchronize() context if you use "
                              "optimizer.synchronize() in your code.")
            self.synchronize()
        self._synchronized = False
        return super().step(closure)

    def zero_grad(self, *args, **kwargs):
        """As the wrapped optimizer's, but refuses to run while allreduces are in flight."""
        if self._handles or self._group_handles or any(self._group_ready.values()):
            raise AssertionError(_ZERO_GRAD_IN_FLIGHT)
        return super().zero_grad(*args, **kwargs)
