"""Flatten, Unflatten and Identity: layers that only reshape (a reshape of a contiguous
input is a view) or pass their input through."""
from .module import Module


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
