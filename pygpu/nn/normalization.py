"""LayerNorm and BatchNorm1d (with running statistics, train/eval), Embedding, Dropout,
Flatten, Unflatten and Identity: the small layers PyTorch's tutorials use."""
import numbers

from .. import _creation
from ..autograd import no_grad
from .._dtype import int64
from . import functional as F
from .module import Module
from .parameter import Parameter


class LayerNorm(Module):
    """Normalize over the last len(normalized_shape) axes; weight (ones) and bias (zeros)
    of normalized_shape when elementwise_affine."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True,
                 device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (int(normalized_shape),)
        self.normalized_shape = tuple(int(s) for s in normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(_creation.ones(self.normalized_shape, device=device,
                                                   dtype=dtype))
            if bias:
                self.bias = Parameter(_creation.zeros(self.normalized_shape, device=device,
                                                      dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, x):
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")


class BatchNorm1d(Module):
    """Per-channel normalization of (N, C) or (N, C, L): batch statistics in training
    (running_mean/running_var updated with momentum; momentum=None: a cumulative average
    over num_batches_tracked), running statistics in eval."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, device=None, dtype=None, bias=True):
        super().__init__()
        self.num_features, self.eps, self.momentum = int(num_features), eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        C = self.num_features
        if affine:
            self.weight = Parameter(_creation.ones(C, device=device, dtype=dtype))
            if bias:
                self.bias = Parameter(_creation.zeros(C, device=device, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", _creation.zeros(C, device=device, dtype=dtype))
            self.register_buffer("running_var", _creation.ones(C, device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked",
                                 _creation.zeros((), device=device, dtype=int64))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def reset_running_stats(self):
        if self.track_running_stats:
            with no_grad():
                self.running_mean.copy_(self.running_mean * 0.0)
                self.running_var.copy_(self.running_var * 0.0 + 1.0)
                self.num_batches_tracked.copy_(self.num_batches_tracked * 0)

    def forward(self, x):
        if x.ndim not in (2, 3) or x.shape[1] != self.num_features:
            raise ValueError(f"BatchNorm1d({self.num_features}): expected input (N, "
                             f"{self.num_features}) or (N, {self.num_features}, L), got "
                             f"{x.shape}")
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            with no_grad():
                self.num_batches_tracked.copy_(self.num_batches_tracked + 1)
            if self.momentum is None:
                momentum = 1.0 / float(self.num_batches_tracked.item())
        use_batch = self.training or not self.track_running_stats
        return F.batch_norm(x, self.running_mean if not use_batch or self.training else None,
                            self.running_var if not use_batch or self.training else None,
                            self.weight, self.bias, use_batch, momentum, self.eps)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


class Embedding(Module):
    """A (num_embeddings, embedding_dim) table, rows ~ N(0, 1) (padding_idx's row zero);
    forward(indices) gives the rows at int64 indices."""

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None,
                 norm_type=2.0, scale_grad_by_freq=False, sparse=False, _weight=None,
                 _freeze=False, device=None, dtype=None):
        super().__init__()
        self.num_embeddings, self.embedding_dim = int(num_embeddings), int(embedding_dim)
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError("Embedding: padding_idx must be within num_embeddings")
            padding_idx %= num_embeddings
        self.padding_idx = padding_idx
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        if _weight is None:
            w = _creation.randn(num_embeddings, embedding_dim, device=device, dtype=dtype)
            if padding_idx is not None:
                w[padding_idx] = 0.0
        else:
            w = _weight
        self.weight = Parameter(w, requires_grad=not _freeze)

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, padding_idx=None, **kwargs):
        rows, cols = embeddings.shape
        return cls(rows, cols, padding_idx=padding_idx, _weight=embeddings, _freeze=freeze,
                   **kwargs)

    def forward(self, input):
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)

    def extra_repr(self):
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s


class Dropout(Module):
    """Zero elements with probability p in training (scaling the rest by 1/(1-p));
    the identity in eval()."""

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, x):
        return F.dropout(x, self.p, self.training, self.inplace)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Identity(Module):
    """Returns its input (any constructor arguments are ignored, as PyTorch's)."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x):
        return x


def _dims(ndim, start, end, who):
    s, e = start % max(ndim, 1), end % max(ndim, 1)
    if not (-ndim <= start < max(ndim, 1) and -ndim <= end < max(ndim, 1)) or s > e:
        raise IndexError(f"{who}: dims {start}..{end} are out of range (or reversed) for a "
                         f"{ndim}-d tensor")
    return s, e


class Flatten(Module):
    """Joins axes start_dim..end_dim into one (a reshape: a view of contiguous input)."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x):
        if x.ndim == 0:
            return x.reshape(1)
        s, e = _dims(x.ndim, self.start_dim, self.end_dim, "Flatten")
        return x.reshape(*x.shape[:s], -1, *x.shape[e + 1:]) if x.numel() else \
            x.reshape(*x.shape[:s], _prod(x.shape[s:e + 1]), *x.shape[e + 1:])

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


def _prod(xs):
    out = 1
    for v in xs:
        out *= v
    return out


class Unflatten(Module):
    """Splits axis dim into unflattened_size."""

    def __init__(self, dim, unflattened_size):
        super().__init__()
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, x):
        d = self.dim % x.ndim
        size = list(self.unflattened_size)
        if size.count(-1) > 1:
            raise ValueError("Unflatten: only one size may be -1")
        known = _prod(v for v in size if v != -1)
        if -1 in size:
            size[size.index(-1)] = x.shape[d] // known if known else 0
        if _prod(size) != x.shape[d]:
            raise RuntimeError(f"Unflatten: sizes {self.unflattened_size} don't multiply up to "
                               f"the size of dim {self.dim} ({x.shape[d]}) in input {x.shape}")
        return x.reshape(*x.shape[:d], *size, *x.shape[d + 1:])

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
