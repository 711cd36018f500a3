"""nn.SyncBatchNorm: batch normalization over the batch of every rank of a process group, and
convert_sync_batchnorm, as PyTorch has them (torch/nn/modules/batchnorm.py, _functions.py).

In training, each rank reduces its input (N, C, *) to per-channel (mean, M2, count), the ranks
all-gather those (one all_gather_into_tensor of 2C + 1 numbers) and merge them (Chan's
parallel formula: M2 = sum M2_r + sum n_r (mean_r - mean)^2, no sum of squares to cancel),
so every rank normalizes with the statistics of the whole global batch; the running
statistics take the global mean and the unbiased global variance. Backward all-reduces the
per-channel sums of dy and dy * (x - mean), so the input gradient is the one-process full
batch's; the weight and bias gradients stay local sums, which DistributedDataParallel then
averages, as in PyTorch. Out of training, or alone in its group, it is BatchNorm."""
from .. import distributed as dist
from .._tensor.create import empty, tensor
from .._tensor.join import cat
from ..autograd import Function, no_grad
from .normalization import _BatchNorm


def _by_channel(x):
    """(N, C, *) -> (C, N * prod(*)): each channel's values in one row."""
    c = x.shape[1]
    return x.transpose(0, 1).reshape(c, -1)


def _channel_view(v, ndim):
    return v.reshape(1, -1, *([1] * (ndim - 2)))


class _SyncBatchNormFn(Function):
    @staticmethod
    def forward(ctx, x, weight, bias, running_mean, running_var, eps, momentum, group):
        xc = _by_channel(x)                                   # (C, M) this rank's values
        c, m = xc.shape
        mean_l = xc.mean(1)                                   # (C,)
        m2_l = ((xc - mean_l.reshape(c, 1)) ** 2).sum(1)      # (C,)
        count = tensor([float(m)], dtype=x.dtype, device=x.device)
        stats = cat([mean_l, m2_l, count])                    # (2C + 1,)
        p = group.size()
        gathered = empty(p * (2 * c + 1), dtype=x.dtype, device=x.device)
        dist.all_gather_into_tensor(gathered, stats, group=group)
        g = gathered.reshape(p, 2 * c + 1)
        means, m2s, ns = g[:, :c], g[:, c:2 * c], g[:, 2 * c:]  # (p, C), (p, C), (p, 1)
        n = ns.sum()
        mean = (means * ns).sum(0) / n                        # (C,) the global batch's
        m2 = m2s.sum(0) + (ns * (means - mean.reshape(1, c)) ** 2).sum(0)
        var = m2 / n
        invstd = 1.0 / (var + eps).sqrt()
        if running_mean is not None:
            total = float(n.item())
            with no_grad():
                running_mean.copy_(running_mean * (1.0 - momentum) + mean * momentum)
                unbiased = m2 / max(total - 1.0, 1.0)
                running_var.copy_(running_var * (1.0 - momentum) + unbiased * momentum)
        y = (x - _channel_view(mean, x.ndim)) * _channel_view(invstd, x.ndim)
        if weight is not None:
            y = y * _channel_view(weight, x.ndim)
        if bias is not None:
            y = y + _channel_view(bias, x.ndim)
        ctx.save_for_backward(x, weight, mean, invstd)
        ctx.n, ctx.group, ctx.has_bias = n, group, bias is not None
        return y

    @staticmethod
    def backward(ctx, dy):
        x, weight, mean, invstd = ctx.saved_tensors
        c = x.shape[1]
        dyc, xmu = _by_channel(dy), _by_channel(x) - mean.reshape(c, 1)
        sum_dy = dyc.sum(1)                                   # (C,) this rank's
        sum_dy_xmu = (dyc * xmu).sum(1)
        grad_weight = sum_dy_xmu * invstd if weight is not None else None
        grad_bias = sum_dy if ctx.has_bias else None
        both = cat([sum_dy, sum_dy_xmu])
        dist.all_reduce(both, group=ctx.group)                # the global batch's sums
        n = ctx.n
        g_dy, g_dy_xmu = both[:c] / n, both[c:] / n
        scale = invstd * weight if weight is not None else invstd
        nd = x.ndim
        dx = (dy - _channel_view(g_dy, nd) - (x - _channel_view(mean, nd))
              * _channel_view(invstd * invstd * g_dy_xmu, nd)) * _channel_view(scale, nd)
        return dx, grad_weight, grad_bias, None, None, None, None, None


class SyncBatchNorm(_BatchNorm):
    """torch.nn.SyncBatchNorm(num_features, eps, momentum, affine, track_running_stats,
    process_group): batch normalization over the batch of every rank of process_group (the
    default group when None), of (N, C, *) input of at least 2 dimensions."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, process_group=None, device=None, dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)
        self.process_group = process_group

    def _check_input_dim(self, x):
        if x.ndim < 2:
            raise ValueError(f"expected at least 2D input (got {x.ndim}D input)")

    def _check_non_zero_input_channels(self, x):
        if x.shape[1] == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")

    def forward(self, x, activation=None):
        self._check_input_dim(x)
        self._check_non_zero_input_channels(x)
        group = None
        if self.training and dist.is_initialized():
            group = dist.groups.resolve(self.process_group)
        if group is None or group.size() == 1:
            return super().forward(x, activation)
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.track_running_stats:
            with no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:
                momentum = 1.0 / float(self.num_batches_tracked.item())
        y = _SyncBatchNormFn.apply(x, self.weight, self.bias, self.running_mean,
                                   self.running_var, self.eps, momentum, group)
        return y.relu() if activation == "relu" else y

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """module with every BatchNorm*D layer replaced by a SyncBatchNorm that keeps its
        parameters, buffers and training flag (module itself when it is one)."""
        out = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            out = SyncBatchNorm(module.num_features, module.eps, module.momentum, module.affine,
                                module.track_running_stats, process_group)
            if module.affine:
                with no_grad():
                    out.weight = module.weight
                    out.bias = module.bias
            out.running_mean = module.running_mean
            out.running_var = module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
            if hasattr(module, "qconfig"):
                out.qconfig = module.qconfig
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        del module
        return out


__all__ = ["SyncBatchNorm"]
