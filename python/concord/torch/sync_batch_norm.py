"""SyncBatchNorm: batch normalisation whose batch statistics are those of the global batch
(the concatenation of every rank's batch), as ``horovod.torch.SyncBatchNorm`` (Ioffe &
Szegedy 2015 for the normalisation; the statistics are exchanged with one allgather of
each rank's per-channel mean, biased variance and element count).

For an input of shape ``[N, C, *]`` rank r has ``n_r = N * prod(*)`` elements per channel,
mean ``m_r`` and biased variance ``v_r``. The global statistics over ``n = sum n_r`` are

    m = sum_r n_r m_r / n,        v = sum_r n_r (v_r + (m_r - m)^2) / n

(the parallel-variance formula, Chan et al. 1979), and ``y = (x - m) / sqrt(v + eps) *
weight + bias``. Backward (for the objective sum over ranks of each rank's loss) needs two
per-channel sums over the global batch, taken by one allreduce (Sum) of a ``[2, C]``
tensor: with ``g = dy * weight`` and ``xhat = (x - m) / sqrt(v + eps)``,

    dx = (g - sum(g) / n - xhat * sum(g * xhat) / n) / sqrt(v + eps).

``weight.grad`` and ``bias.grad`` are this rank's own sums (``sum(dy * xhat)``,
``sum(dy)``), which a DistributedOptimizer then averages, as in Horovod. In eval mode (or
without batch statistics tracking in eval) the running statistics are used locally, with
no communication.
"""

import torch
import torch.nn.functional as F

from concord.torch import collectives, handles


def _channel_view(tensor, dims):
    return tensor.view([1, -1] + [1] * (dims - 2))


class _SyncBatchNormFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, eps, process_kwargs):
        channels = x.shape[1]
        compute = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
        reduce_dims = [0] + list(range(2, x.dim()))
        count = x.numel() // channels if channels else 0
        if count:
            var_local, mean_local = torch.var_mean(compute, dim=reduce_dims, unbiased=False)
        else:
            mean_local = var_local = compute.new_zeros(channels)
        local = torch.cat([mean_local, var_local, compute.new_tensor([float(count)])]).unsqueeze(0)
        stats = collectives.allgather(local, **process_kwargs)
        means, variances, counts = stats[:, :channels], stats[:, channels:2 * channels], stats[:, 2 * channels:]
        total = counts.sum()
        if total.item() <= 1:
            raise ValueError(f"SyncBatchNorm: expected more than 1 value per channel in the global batch when "
                             f"training, got {int(total.item())} (the batches of all ranks together)")
        mean = (counts * means).sum(0) / total
        var = (counts * (variances + (means - mean) ** 2)).sum(0) / total
        invstd = torch.rsqrt(var + eps)
        xhat = (compute - _channel_view(mean, x.dim())) * _channel_view(invstd, x.dim())
        y = xhat
        if weight is not None:
            y = y * _channel_view(weight.to(compute.dtype), x.dim()) + _channel_view(bias.to(compute.dtype), x.dim())
        ctx.save_for_backward(xhat, invstd, weight)
        ctx.total = total.item()
        ctx.process_kwargs = process_kwargs
        ctx.input_dtype = x.dtype
        ctx.mark_non_differentiable(mean, var, total)
        return y.to(x.dtype), mean, var, total

    @staticmethod
    def backward(ctx, grad_y, _grad_mean, _grad_var, _grad_total):
        xhat, invstd, weight = ctx.saved_tensors
        dims = xhat.dim()
        reduce_dims = [0] + list(range(2, dims))
        dy = grad_y.to(xhat.dtype)
        g = dy * _channel_view(weight.to(xhat.dtype), dims) if weight is not None else dy
        sums = torch.stack([g.sum(reduce_dims), (g * xhat).sum(reduce_dims)])
        sums = collectives.allreduce(sums, op=handles.Sum, **ctx.process_kwargs)
        n = ctx.total
        dx = (g - _channel_view(sums[0], dims) / n - xhat * _channel_view(sums[1], dims) / n) * \
            _channel_view(invstd, dims)
        grad_weight = grad_bias = None
        if weight is not None:
            grad_weight = (dy * xhat).sum(reduce_dims).to(weight.dtype)
            grad_bias = dy.sum(reduce_dims).to(weight.dtype)
        return dx.to(ctx.input_dtype), grad_weight, grad_bias, None, None


class SyncBatchNorm(torch.nn.modules.batchnorm._BatchNorm):
    """Batch normalisation over the global batch of all ranks (of ``process_set``); a
    drop-in for ``torch.nn.BatchNorm1d/2d/3d`` (input ``[N, C]``, ``[N, C, L]``,
    ``[N, C, H, W]`` or ``[N, C, D, H, W]``, CPU, floating point).

    Args:
        num_features (int): C.
        eps, momentum, affine, track_running_stats: as ``torch.nn.BatchNorm2d``
            (``momentum=None``: cumulative moving average).
        process_set (ProcessSet, optional): the ranks whose batches are normalised together
            (default: all).

    In training mode every rank must call forward (and backward) the same number of times
    in the same order: each forward is one allgather and each backward one allreduce,
    unnamed. A rank may have an empty batch (N = 0) as long as some rank has data.

    Raises:
        ValueError: input of fewer than 2 dimensions, or a global batch with at most one
            value per channel in training (as torch's BatchNorm), raised on every rank.
    """

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 process_set=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats)
        self.process_set = process_set

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"SyncBatchNorm: expected an input of at least 2 dimensions [N, C, ...], "
                             f"got {input.dim()}")

    def _momentum(self):
        if self.momentum is not None:
            return self.momentum
        return 1.0 / float(self.num_batches_tracked)

    def forward(self, input):
        self._check_input_dim(input)
        use_batch_stats = self.training or not self.track_running_stats
        if not use_batch_stats:
            return F.batch_norm(input, self.running_mean, self.running_var, self.weight, self.bias, False, 0.0,
                                self.eps)
        if self.training and self.track_running_stats:
            self.num_batches_tracked.add_(1)
        kwargs = {} if self.process_set is None else {"process_set": self.process_set}
        y, mean, var, total = _SyncBatchNormFunction.apply(input, self.weight, self.bias, self.eps, kwargs)
        if self.training and self.track_running_stats:
            momentum = self._momentum()
            with torch.no_grad():
                unbiased = var * (total / (total - 1)) if total > 1 else var
                self.running_mean.mul_(1 - momentum).add_(mean.to(self.running_mean.dtype), alpha=momentum)
                self.running_var.mul_(1 - momentum).add_(unbiased.to(self.running_var.dtype), alpha=momentum)
        return y
