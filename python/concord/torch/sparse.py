"""SparseDistributedOptimizer: data-parallel SGD with top-k sparsified gradients and local
residuals (error feedback), reduced by a sparse allreduce -- Ok-Topk by default (Li &
Hoefler, "Near-Optimal Sparse Allreduce for Distributed Deep Learning", PPoPP 2022) or one
of its baselines (TopkA, TopkDSA, gTopk, Gaussiank; see ``SparseAllreducer.names()``).

Each ``step()``:

1. flattens every trainable parameter's gradient (optimizer order) into one float32 buffer
   ``g`` of ``n`` elements;
2. forms ``acc = residual + g`` (or ``residual + lr * g`` with ``fold_lr``, the paper's form;
   ``lr`` of the parameter's param group);
3. runs the sparse allreduce: about ``k = max(1, floor(n * density))`` entries of the sum
   of the ``acc`` over ranks survive as ``U`` (already divided by the number of ranks,
   identical on every rank); ``acc`` becomes the new residual (the entries this rank
   contributed to ``U`` are zeroed, everything else carries over to the next step);
4. without ``fold_lr`` writes ``U`` into the parameters' ``.grad`` (dense, zeros outside the
   support) and runs the wrapped optimizer (the reference implementation's SGD-momentum /
   Adam path); with ``fold_lr`` applies ``w -= U`` directly and does not call it.

The first ``warmup_steps`` steps are dense instead: the gradients are averaged by Concord's
allreduce (``Average``, as :func:`concord.torch.DistributedOptimizer` does), the wrapped
optimizer steps and the residual is left untouched.
"""

import torch

from concord import _core
from concord._core import InvalidArgumentError
from concord.torch.collectives import grouped_allreduce_
from concord.torch.handles import Average
from concord.torch.optimizer import wrap

_DTYPES = (torch.float32, torch.float64)
_instances = [0]  # SparseDistributedOptimizers created in this process (names dense allreduces)


def sparse_allreduce_names():
    """Names of the sparse allreduces (``algorithm=`` of :func:`SparseDistributedOptimizer`),
    in registry order."""
    return list(_core.SparseAllreducer.names())


class _SparseDistributedOptimizer(torch.optim.Optimizer):
    def __init__(self, params, named_parameters, density, algorithm, warmup_steps, fold_lr, options):
        super().__init__(params)
        self.density = density
        self.warmup_steps = warmup_steps
        self.fold_lr = fold_lr
        self._params = []  # (parameter, param group, name), optimizer order, trainable only
        names = {}
        if named_parameters is not None:
            named = list(named_parameters)
            listed = [name for name, _ in named]
            if len(set(listed)) != len(listed):
                duplicates = sorted({n for n in listed if listed.count(n) > 1})
                raise ValueError(f"SparseDistributedOptimizer: parameter names must be unique; duplicates: "
                                 f"{duplicates}")
            names = {p: name for name, p in named}
        index = 0
        for group in self.param_groups:
            for p in group["params"]:
                if not p.requires_grad:
                    continue
                if named_parameters is not None and p not in names:
                    raise ValueError("SparseDistributedOptimizer: an optimizer parameter is missing from "
                                     "named_parameters")
                name = names.get(p, f"parameter {index}")
                index += 1
                if p.dtype not in _DTYPES:
                    raise ValueError(f"SparseDistributedOptimizer: {name} has dtype {p.dtype}; only float32 "
                                     "and float64 parameters are supported")
                if p.device.type != "cpu":  # top-k and residuals are host code (no device kernels)
                    raise InvalidArgumentError(
                        f"SparseDistributedOptimizer: {name} is on {p.device}; Ok-Topk selects top-k entries "
                        "and keeps residuals in host memory, so only CPU parameters are supported (move the "
                        "model to the CPU, or use DistributedOptimizer, which takes CUDA gradients)")
                self._params.append((p, group, name))
        self.numel = sum(p.numel() for p, _, _ in self._params)
        self.residual = torch.zeros(self.numel, dtype=torch.float32)
        self.last_update = (torch.empty(0, dtype=torch.int64), torch.empty(0, dtype=torch.float32))
        self.steps = 0
        self._name = f"SparseDistributedOptimizer.{_instances[0]}"
        _instances[0] += 1
        self.allreducer = _core.SparseAllreducer(algorithm, density=density, **options)

    def _gradients(self):
        missing = [name for p, _, name in self._params if p.grad is None]
        if missing:
            raise ValueError(f"SparseDistributedOptimizer: {len(missing)} parameter(s) have no gradient "
                             f"(first: {missing[0]}); run backward first, or set .grad to zeros for "
                             "parameters the loss does not use")
        return [p.grad for p, _, _ in self._params]

    def _accumulate(self, grads):
        """acc = residual + g, or residual + lr * g with fold_lr (float32, n elements)."""
        acc = self.residual.clone()
        offset = 0
        for (p, group, _), grad in zip(self._params, grads):
            segment = acc[offset:offset + p.numel()]
            flat = grad.detach().reshape(-1).to(torch.float32)
            if self.fold_lr:
                segment.add_(flat, alpha=group["lr"])
            else:
                segment.add_(flat)
            offset += p.numel()
        return acc

    def _apply_update(self, indices, values):
        """U (dense over the flat layout) into each parameter: w -= U with fold_lr, else .grad = U."""
        update = torch.zeros(self.numel, dtype=torch.float32)
        update[indices] = values
        offset = 0
        with torch.no_grad():
            for p, _, _ in self._params:
                piece = update[offset:offset + p.numel()].view(p.shape).to(p.dtype)
                offset += p.numel()
                if self.fold_lr:
                    p.sub_(piece)
                else:
                    p.grad.copy_(piece)

    def step(self, closure=None):
        """One sparse (or, during warm-up, dense) step; returns the closure's loss.

        ``closure`` (optional) is evaluated first, with gradients enabled, to compute the
        gradients; the wrapped optimizer is then called without it.

        Raises:
            ValueError: a trainable parameter has no ``.grad``.
            ConcordError: the allreduce failed (or ranks passed different sizes).
        """
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        grads = self._gradients()
        if self.steps < self.warmup_steps:
            if grads:
                grouped_allreduce_(grads, name=f"{self._name}.dense", op=Average)
            self.steps += 1
            super().step()
            return loss
        acc = self._accumulate(grads)
        indices, values = self.allreducer.allreduce(acc)
        self.residual = acc
        indices, values = torch.from_numpy(indices), torch.from_numpy(values)
        self.last_update = (indices, values)
        self._apply_update(indices, values)
        self.steps += 1
        if not self.fold_lr:
            super().step()
        return loss


def SparseDistributedOptimizer(optimizer, density=0.01, algorithm="oktopk", warmup_steps=0, fold_lr=False,
                               named_parameters=None, **options):
    """Wrap ``optimizer`` so that ``step()`` applies top-k sparsified gradients summed over
    all ranks with local residuals (Ok-Topk SGD; see the module docstring for the steps).

    Collective: every rank must create its optimizers in the same order (each owns a
    duplicate of MPI_COMM_WORLD) and call ``step()`` the same number of times with the same
    parameter shapes. MPI must provide MPI_THREAD_MULTIPLE while ``concord.init()`` is
    active (the sparse allreduce runs on the Python thread next to Concord's background
    thread); ``concord.init()`` requests it.

    Args:
        optimizer (torch.optim.Optimizer): the local optimizer (its param groups and
            hyperparameters are reused; its state is not). Parameters must be float32 or
            float64 CPU tensors; gradients travel as float32.
        density (float): fraction of the n gradient entries kept, 0 < density <= 1
            (k = max(1, floor(n * density))).
        algorithm (str): sparse allreduce: "oktopk" (default) or a baseline, see
            :func:`sparse_allreduce_names`.
        warmup_steps (int): number of initial dense steps (>= 0).
        fold_lr (bool): fold each param group's ``lr`` into the accumulator and apply
            ``w -= U`` directly (the paper's form) instead of calling the wrapped optimizer.
        named_parameters: ``model.named_parameters()``, used in error messages.
        **options: sparse allreduce options (``tau``, ``tau_local``, ``tau_global``,
            ``bucket_steps``, ``balance_factor``, ``max_overshoot``, ``strict``, ``exact``, ``local_feedback``,
            ``global_feedback`` as (lo, hi, factor), ``gaussian_corrections``); see
            docs/algorithms.md, "Ok-Topk sparse allreduce" (Li & Hoefler, PPoPP 2022).
            ``max_overshoot`` (default 0.25) is Ok-Topk's volume cap: at most (1 + it) k
            entries are kept per rank and globally; ``max_overshoot=-1`` leaves the
            paper's threshold feedback alone.
            ``exact=True`` selects the exact top-k every step (tau_local = tau_global = 1).

    Returns:
        An optimizer of a subclass of ``type(optimizer)`` with attributes ``residual``
        (float32, n), ``last_update`` ((indices int64, values float32) of the last sparse
        step), ``steps`` and ``allreducer`` (``bytes_sent()``, ``messages_sent()``).

    Raises:
        ValueError: density out of (0, 1], negative warmup_steps, a parameter not float32 /
            float64, duplicate or missing names in named_parameters.
        InvalidArgumentError: an unknown algorithm or option; a parameter not on the CPU
            (e.g. CUDA: Ok-Topk's top-k selection and residuals are host code with no device
            kernels, and staging every gradient through host memory each step would cost
            more than the dense DistributedOptimizer on a GPU, which takes CUDA gradients).
        StateError: MPI's thread level is below MPI_THREAD_MULTIPLE while concord.init() is active.
    """
    if not isinstance(density, (int, float)) or not 0.0 < density <= 1.0:
        raise ValueError(f"SparseDistributedOptimizer: density must be in (0, 1], got {density!r}")
    if not isinstance(warmup_steps, int) or warmup_steps < 0:
        raise ValueError(f"SparseDistributedOptimizer: warmup_steps must be an int >= 0, got {warmup_steps!r}")
    cls = wrap(_SparseDistributedOptimizer, optimizer)
    return cls(optimizer.param_groups, named_parameters, float(density), algorithm, warmup_steps, bool(fold_lr),
               options)
