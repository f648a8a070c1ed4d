"""Forward chaining for ``DistributedOptimizer(..., overlap_forward=True, model=model)``:
the parameter update of one step overlaps the gradient allreduces and the next forward
pass, as C-Cube's "gradient queuing" chains the next iteration's forward behind each
layer's completed allreduce (Jo, Son & Kim, "Logical/Physical Topology-Aware Collective
Communication in Deep Learning Training", HPCA 2023; ByteScheduler, Peng et al., SOSP 2019,
likewise lets the next forward start before every allreduce is done).

How a step runs:

1. backward queues each gradient as soon as it is ready (``gradient_queuing=True``, the
   default: C-Cube's gradient queuing; with False it starts the allreduce at once, in
   backward order, as the plain DistributedOptimizer does; with ``"priority"`` it starts
   the allreduce at once while fewer than ``credit_bytes`` of started allreduces are
   unfinished and queues it otherwise, and whenever backward produces a gradient the
   queued ones start, first layer first, as the finished ones free credit: the credit-based
   priority scheduling of ByteScheduler, so the wire stays busy during backward while the
   backlog that builds up when communication is slower than backward does not hold back
   the first layers' gradients, which step() then starts ahead of it). Gradients of
   ``groups`` / ``num_groups`` are submitted when their group is complete, as without
   overlap;
2. ``step()`` starts the queued allreduces in *forward* order (the order in which the
   modules' forward pre-hooks first ran), so the runtime fuses and reduces the first
   layer's gradient first and, with the tree allreduces (which finish their buffer front to
   back, per-range completion), it becomes final first, ready for the first module of the
   next forward pass; then it starts the allreduces backward did not reach (unused
   parameters, with a zero gradient) and returns at once: every trainable parameter is now
   *pending*, and the
   optimizer's hyperparameters (learning rate, ...) are captured as they are now, so an LR
   scheduler stepped after ``step()`` affects the next step, as without overlap;
3. in the next forward pass, a forward pre-hook on every module that owns parameters waits
   for just that module's allreduce handles, writes the averaged gradients and runs the
   wrapped optimizer on just those parameters (the param groups restricted to them; the
   optimizer's state is per parameter), then lets the module run. Modules later in the
   forward pass still have their allreduces in flight meanwhile;
4. parameters that no forward reached are updated by the next ``step()``/``synchronize()``,
   or by ``finish()`` (call it before evaluating without a forward pass, saving a
   checkpoint or reading parameters/optimizer state).

For optimizers whose update of a parameter depends only on that parameter's own gradient
and state (SGD with momentum, weight decay and Nesterov; Adam, AdamW, RMSprop, Adagrad, ...)
the parameters are bit-identical to the plain DistributedOptimizer's when every allreduce
sums in the same order in both (one algorithm for every fused size whose order does not
depend on a tensor's place in the fusion buffer, e.g. CONCORD_ALLREDUCE_ALGORITHM=
recursive_doubling); with measured selection the two fuse gradients differently and may get
different algorithms, and then agree to rounding. ``zero_grad()`` on a
pending parameter is deferred until its update (its gradient buffer is still being
reduced). Limits: a parameter must not be used (by another module, or functionally) before
its owning module runs in a forward pass while it is pending (the forward would see the
old value, and backward would accumulate into the gradient buffer still being reduced, so a
tensor hook raises RuntimeError before it does; call ``finish()`` before such a forward).
``step(closure)`` is not supported (ValueError). Call ``model.zero_grad()`` only after
``finish()``; ``optimizer.zero_grad()`` defers as above.
"""

from concord.torch.handles import poll, synchronize
from concord.torch.optimizer import _ZERO_GRAD_IN_FLIGHT, _DistributedOptimizer


class _PendingAllreduce:
    """One in-flight allreduce handle and the (parameter, compressed, ctx) it reduces."""

    __slots__ = ("handle", "members", "done")

    def __init__(self, handle, members):
        self.handle = handle
        self.members = members
        self.done = False


class ForwardChainingOptimizer(_DistributedOptimizer):
    """The plain DistributedOptimizer with forward chaining (this module's docstring): what
    it overrides reaches the plain optimizer through ``super()`` and the user's optimizer
    through ``super(_DistributedOptimizer, self)``."""

    def _init_overlap(self, model, queuing=True, credit_bytes=32 << 20):
        """Registers the forward pre-hooks (once) on every module of ``model`` that owns
        optimized parameters; ``queuing`` and ``credit_bytes`` as DistributedOptimizer's
        gradient_queuing and credit_bytes."""
        self._overlap_queuing = queuing
        self._overlap_credit = credit_bytes
        self._overlap_started = []  # (handle, bytes) of allreduces started with "priority" credit
        self._overlap_queue = {}     # parameter -> None: gradients ready, allreduce not started
        self._overlap_position = {}  # parameter -> its place in the forward order
        self._overlap_pending = {}   # parameter -> _PendingAllreduce, in update order
        self._overlap_hyper = None   # per param group: its hyperparameters at step()
        self._overlap_zero = None    # (args, kwargs) of a zero_grad() deferred for pending parameters
        self._overlap_zero_params = set()
        self._overlap_hooks = []
        for p in self._requires_update:
            self._overlap_hooks.append(p.register_hook(self._refuse_if_pending(p)))
        for module in model.modules():
            owned = [p for p in module.parameters(recurse=False) if p in self._requires_update]
            if owned:
                self._overlap_hooks.append(module.register_forward_pre_hook(self._make_pre_hook(owned)))

    def _make_pre_hook(self, owned):
        def pre_hook(_module, _inputs):
            for p in owned:  # the forward order, as first seen
                self._overlap_position.setdefault(p, len(self._overlap_position))
            if self._overlap_pending:
                self._apply_updates(owned)
        return pre_hook

    def _gradient_ready(self, p):
        """Queues p's gradient (started by _start_queued in forward order, or with
        "priority" by _start_within_credit as credit allows), or starts its allreduce at once
        without gradient queuing."""
        if not self._overlap_queuing:
            _DistributedOptimizer._gradient_ready(self, p)
            return
        self._overlap_queue[p] = None
        if self._overlap_queuing == "priority":
            self._start_within_credit()

    def _forward_order(self, params):
        """``params`` sorted by forward position (parameters no forward pre-hook has seen
        come last, by name)."""
        unseen = len(self._overlap_position)
        return sorted(params, key=lambda p: (self._overlap_position.get(p, unseen), self._parameter_names[p]))

    def _start_within_credit(self):
        """Forgets the finished "priority" allreduces, then starts queued ones in forward
        order while the unfinished ones hold fewer than credit_bytes."""
        self._overlap_started = [(h, n) for h, n in self._overlap_started if not poll(h)]
        in_flight = sum(n for _, n in self._overlap_started)
        if in_flight >= self._overlap_credit:
            return
        for p in self._forward_order(self._overlap_queue):
            if in_flight >= self._overlap_credit:
                break
            del self._overlap_queue[p]
            handle, packed = self._handles[p] = self._allreduce_grad_async(p)
            wire = p if packed is None else packed[0]  # the compressed gradient (sparse: p's size)
            size = wire.numel() * wire.element_size()
            self._overlap_started.append((handle, size))
            in_flight += size

    def _start_queued(self):
        """Starts the queued allreduces in forward order, so the runtime negotiates, fuses
        and reduces them in that order on every rank."""
        order = self._forward_order(self._overlap_queue)
        self._overlap_queue.clear()
        self._overlap_started = []
        for p in order:
            self._handles[p] = self._allreduce_grad_async(p)

    def _refuse_if_pending(self, p):
        """A tensor hook on ``p``: runs before backward accumulates into p.grad, which is
        still being reduced while p's update is pending."""
        def check(gradient):
            if p in self._overlap_pending:
                raise RuntimeError(
                    f"DistributedOptimizer(overlap_forward=True): the gradient of "
                    f"'{self._parameter_names[p]}' was computed while its previous update was still "
                    "pending (the parameter was used before its owning module ran in the forward "
                    "pass); call optimizer.finish() before such a forward")
            return gradient
        return check

    def _restricted_groups(self, params, hyper=None):
        """param_groups holding only ``params`` (a set), with ``hyper``'s settings if given."""
        groups = []
        for i, group in enumerate(self.param_groups):
            subset = [p for p in group["params"] if p in params]
            if subset:
                settings = hyper[i] if hyper is not None and i < len(hyper) else group
                groups.append(dict(settings, params=subset))
        return groups

    def _call_restricted(self, params, function, hyper=None):
        original = self.param_groups
        self.param_groups = self._restricted_groups(params, hyper)
        try:
            return function()
        finally:
            self.param_groups = original

    def _apply_updates(self, params):
        """Waits for the allreduces of the pending ones among ``params``, writes their
        averaged gradients and applies the wrapped optimizer's update to just them."""
        chosen = [p for p in params if p in self._overlap_pending]
        if not chosen:
            return
        for p in chosen:
            pending = self._overlap_pending[p]
            if not pending.done:
                synchronize(pending.handle)
                for member, compressed, ctx in pending.members:
                    self._write_gradient(member, compressed, ctx)
                pending.done = True
        chosen_set = set(chosen)
        self._call_restricted(chosen_set, lambda: super(_DistributedOptimizer, self).step(), self._overlap_hyper)
        for p in chosen:
            del self._overlap_pending[p]
        deferred = chosen_set & self._overlap_zero_params
        if deferred:
            args, kwargs = self._overlap_zero
            self._call_restricted(deferred, lambda: super(_DistributedOptimizer, self).zero_grad(*args, **kwargs))
            self._overlap_zero_params -= deferred

    def finish(self):
        """Applies every pending update now (waiting for its allreduce): call it before
        evaluating without a forward pass, saving a checkpoint, or reading parameters or
        optimizer state. A no-op when nothing is pending."""
        self._apply_updates(list(self._overlap_pending))

    def synchronize(self):
        """Applies pending updates (finish()), then as the plain DistributedOptimizer: waits
        for the current gradients' allreduces and writes them (the next step() then updates
        every parameter at once)."""
        self.finish()
        self._start_queued()
        super().synchronize()

    def step(self, closure=None):
        """Starts the missing allreduces and returns without waiting: every parameter is
        updated by its module's forward pre-hook in the next forward pass (or by finish()).
        After an explicit synchronize() or inside skip_synchronize(), updates everything at
        once like the plain DistributedOptimizer.

        Raises:
            ValueError: a closure was given (re-evaluating the loss needs the update first).
        """
        if not self._should_synchronize or self._synchronized:
            self.finish()
            return super().step(closure)
        if closure is not None:
            raise ValueError("DistributedOptimizer(overlap_forward=True): step(closure) is not supported")
        self.finish()  # parameters no forward reached since the last step
        self._start_queued()
        self._start_missing_allreduces()
        for p, (handle, (compressed, ctx)) in self._handles.items():
            self._overlap_pending[p] = _PendingAllreduce(handle, [(p, compressed, ctx)])
        for handle, members in self._group_handles.values():
            pending = _PendingAllreduce(handle, members)
            for p, _, _ in members:
                self._overlap_pending[p] = pending
        self._handles.clear()
        self._group_handles.clear()
        self._overlap_hyper = [{k: v for k, v in group.items() if k != "params"} for group in self.param_groups]
        return None

    def zero_grad(self, *args, **kwargs):
        """As the plain DistributedOptimizer's for parameters that are not pending; for
        pending ones (their gradient buffers are still being reduced) it is applied right
        after their update."""
        if self._overlap_queue:  # queued gradients not reduced yet: as a started allreduce
            raise AssertionError(_ZERO_GRAD_IN_FLIGHT)
        pending = set(self._overlap_pending)
        if pending:
            self._overlap_zero = (args, kwargs)
            self._overlap_zero_params = pending
        others = {p for group in self.param_groups for p in group["params"]} - pending
        self._call_restricted(others, lambda: super(ForwardChainingOptimizer, self).zero_grad(*args, **kwargs))
