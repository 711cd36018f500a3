"""Numeric functions PyTorch has beside its pointwise table, as torch functions and Tensor
methods: gcd, lcm (integers; the shifts are rows of the op table); diff, trapezoid,
trapz, cumulative_trapezoid (differences and integrals along an axis); inner, vdot, dist,
addmv, addr (small products); renorm; the in-place logical_xor_, igamma_, igammac_; prelu;
gradient (numpy's differences, uniform or on coordinates).

Compositions of pygpu's elementwise ops, slices, reductions and matmul on the tensor's
device, differentiable through them where PyTorch's are. gcd runs Euclid's algorithm on
whole tensors, one round per step of the slowest element (about log of the values)."""
from .. import _C, _dtype
from . import create as _tensor_create
from .join import cat

Tensor = _C.Tensor


def _int_only(x, name):
    if x.dtype.is_floating_point or x.dtype is _dtype.bool_:
        kind = {"float32": "Float", "float64": "Double", "float16": "Half",
                "bfloat16": "BFloat16", "bool": "Bool"}[x.dtype.name]
        raise RuntimeError(f'"{name}_cpu" not implemented for \'{kind}\'')


def gcd(input, other):
    """The greatest common divisor, elementwise (non-negative; gcd(0, 0) = 0)."""
    _int_only(input, "gcd")
    a, b = _C.abs(input), _C.abs(other)
    a, b = a + b * 0, b + a * 0  # broadcast both
    while bool((b != 0).any()):
        nz = b != 0
        safe = _C.where(nz, b, _tensor_create.ones((), dtype=b.dtype, device=b.device))
        a, b = _C.where(nz, b, a), _C.where(nz, a % safe, b)
    return a


def lcm(input, other):
    """The least common multiple, elementwise (0 when either is 0)."""
    _int_only(input, "lcm")
    g = gcd(input, other)
    safe = _C.where(g != 0, g, _tensor_create.ones((), dtype=g.dtype, device=g.device))
    return _C.abs(input // safe * other)


def gcd_(self, other):
    return self.copy_(gcd(self, other))


def lcm_(self, other):
    return self.copy_(lcm(self, other))


def diff(input, n=1, dim=-1, prepend=None, append=None):
    """The n-th forward difference along dim (after joining prepend and append there)."""
    if input.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    d = dim % input.ndim
    x = input
    parts = [p for p in (prepend, x, append) if p is not None]
    if len(parts) > 1:
        x = cat([p if isinstance(p, Tensor) else _tensor_create.tensor(p, device=x.device)
                 for p in parts], d)
    for _ in range(n):
        length = x.shape[d]
        if length == 0:
            break
        hi = x.narrow(d, 1, length - 1)
        lo = x.narrow(d, 0, length - 1)
        x = (hi != lo) if x.dtype is _dtype.bool_ else hi - lo
    return x


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoidal rule's integral of y along dim (over the sample points x, or a spacing
    dx, 1 by default)."""
    d = dim % y.ndim
    n = y.shape[d]
    if n == 0:
        return y.sum(d)
    avg = (y.narrow(d, 1, n - 1) + y.narrow(d, 0, n - 1)) * 0.5
    if x is not None:
        if isinstance(x, Tensor):
            xd = x if x.ndim == 1 else x
            step = diff(xd, dim=0 if x.ndim == 1 else d)
            if x.ndim == 1:
                shape = [1] * y.ndim
                shape[d] = n - 1
                step = step.reshape(shape)
            return (avg * step).sum(d)
        dx = x
    return avg.sum(d) * (1.0 if dx is None else float(dx))


def trapz(y, x=None, *, dx=None, dim=-1):
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoidal integral along dim (one element shorter)."""
    d = dim % y.ndim
    n = y.shape[d]
    avg = (y.narrow(d, 1, max(n - 1, 0)) + y.narrow(d, 0, max(n - 1, 0))) * 0.5
    if isinstance(x, Tensor):
        step = diff(x, dim=0 if x.ndim == 1 else d)
        if x.ndim == 1:
            shape = [1] * y.ndim
            shape[d] = n - 1
            step = step.reshape(shape)
        return (avg * step).cumsum(d)
    if x is not None:
        dx = x
    return (avg * (1.0 if dx is None else float(dx))).cumsum(d)


def inner(input, other, *, out=None):
    """The sum over the last axes of the products (a scalar times a tensor when one is 0-d)."""
    if input.ndim == 0 or other.ndim == 0:
        r = input * other
    else:
        if input.shape[-1] != other.shape[-1]:
            raise RuntimeError(f"inner() the last dimension must match on both input tensors "
                               f"but got shapes {list(input.shape)} and {list(other.shape)}")
        a = input.reshape(-1, input.shape[-1])
        b = other.reshape(-1, other.shape[-1])
        r = (a @ b.t()).reshape(*input.shape[:-1], *other.shape[:-1])
    return r if out is None else out.copy_(r)


def vdot(input, other, *, out=None):
    """The dot product of two 1-d tensors (the first conjugated: the same for real ones)."""
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D "
                           f"tensors")
    r = (input.conj() * other).sum()  # conj: a real tensor's is itself
    return r if out is None else out.copy_(r)


def dist(input, other, p=2):
    """The p-norm of input - other (broadcast)."""
    return (input - other).norm(p)


def addmv(input, mat, vec, *, beta=1, alpha=1, out=None):
    """beta * input + alpha * (mat @ vec)."""
    prod = mat @ vec
    r = prod * alpha if beta == 0 else input * beta + prod * alpha
    return r if out is None else out.copy_(r)


def addmv_(self, mat, vec, *, beta=1, alpha=1):
    return self.copy_(addmv(self, mat, vec, beta=beta, alpha=alpha))


def addr(input, vec1, vec2, *, beta=1, alpha=1, out=None):
    """beta * input + alpha * the outer product of vec1 and vec2."""
    prod = vec1.reshape(-1, 1) * vec2.reshape(1, -1)
    r = prod * alpha if beta == 0 else input * beta + prod * alpha
    return r if out is None else out.copy_(r)


def addr_(self, vec1, vec2, *, beta=1, alpha=1):
    return self.copy_(addr(self, vec1, vec2, beta=beta, alpha=alpha))


def renorm(input, p, dim, maxnorm):
    """Each slice along dim with a p-norm above maxnorm scaled to norm maxnorm."""
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    d = dim % input.ndim
    axes = tuple(i for i in range(input.ndim) if i != d)
    norms = input.abs().pow(p).sum(axes, keepdim=True).pow(1.0 / p) if axes else input.abs()
    scale = _C.where(norms > maxnorm, maxnorm / (norms + 1e-7),
                     _tensor_create.ones((), dtype=input.dtype, device=input.device))
    return input * scale


def renorm_(self, p, dim, maxnorm):
    return self.copy_(renorm(self, p, dim, maxnorm))


def logical_xor_(self, other):
    return self.copy_(_C.logical_xor(self, other))


def igamma_(self, other):
    return self.copy_(self.igamma(other))


def igammac_(self, other):
    return self.copy_(self.igammac(other))


def prelu(self, weight):
    from ..nn._pointwise import prelu as _prelu
    return _prelu(self, weight)


def _axis_gradient(f, d, h, edge_order):
    """numpy's gradient of f along axis d: second-order central differences inside, first-
    or second-order one-sided ones at the ends; h a number or the axis's coordinates (a
    1-d tensor)."""
    n = f.shape[d]
    if n < edge_order + 1:
        raise RuntimeError(f"torch.gradient expected each dimension size to be at least "
                           f"edge_order+1")

    def sl(a, b):
        return f.narrow(d, a, b - a)
    shape = [1] * f.ndim
    shape[d] = -1
    if isinstance(h, Tensor):  # coordinates: the non-uniform formulas
        dx = (h[1:] - h[:-1]).to(f.dtype)
        h1, h2 = dx[:-1].reshape(shape), dx[1:].reshape(shape)
        inner = (-(h2 / (h1 * (h1 + h2))) * sl(0, n - 2) + ((h2 - h1) / (h1 * h2)) * sl(1, n - 1)
                 + (h1 / (h2 * (h1 + h2))) * sl(2, n)) if n > 2 else None
        if edge_order == 1:
            first = (sl(1, 2) - sl(0, 1)) / dx[0]
            last = (sl(n - 1, n) - sl(n - 2, n - 1)) / dx[-1]
        else:
            a, b = dx[0], dx[1]
            first = (-(2 * a + b) / (a * (a + b)) * sl(0, 1) + (a + b) / (a * b) * sl(1, 2)
                     - a / (b * (a + b)) * sl(2, 3))
            a, b = dx[-2], dx[-1]
            last = (b / (a * (a + b)) * sl(n - 3, n - 2) - (a + b) / (a * b) * sl(n - 2, n - 1)
                    + (a + 2 * b) / (b * (a + b)) * sl(n - 1, n))
    else:
        h = float(h)
        inner = (sl(2, n) - sl(0, n - 2)) * (0.5 / h) if n > 2 else None
        if edge_order == 1:
            first = (sl(1, 2) - sl(0, 1)) * (1.0 / h)
            last = (sl(n - 1, n) - sl(n - 2, n - 1)) * (1.0 / h)
        else:
            first = (-1.5 * sl(0, 1) + 2.0 * sl(1, 2) - 0.5 * sl(2, 3)) * (1.0 / h)
            last = (0.5 * sl(n - 3, n - 2) - 2.0 * sl(n - 2, n - 1) + 1.5 * sl(n - 1, n)) * \
                (1.0 / h)
    parts = [first] + ([inner] if inner is not None else []) + [last]
    return cat(parts, d)


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """torch.gradient: the derivative estimate along each of `dim` (default: every axis),
    by differences of the values; spacing a number, one number per axis, or each axis's
    coordinates. A tuple of tensors, one per axis."""
    if edge_order not in (1, 2):
        raise RuntimeError(f"torch.gradient only supports edge_order=1 and edge_order=2.")
    if dim is None:
        dims = list(range(input.ndim))
    elif isinstance(dim, int):
        dims = [dim]
    else:
        dims = list(dim)
    dims = [d % input.ndim for d in dims]
    if isinstance(spacing, (list, tuple)):
        if len(spacing) != len(dims):
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or "
                               f"it's spacing and dim arguments to have the same length, but "
                               f"got a spacing argument of length {len(spacing)} and a dim "
                               f"argument of length {len(dims)}.")
        hs = list(spacing)
    else:
        hs = [spacing] * len(dims)
    f = input if input.dtype.is_floating_point else input.to(_dtype.float32)
    out = []
    for d, h in zip(dims, hs):
        if isinstance(h, Tensor) and h.ndim == 0:
            h = float(h.item())
        out.append(_axis_gradient(f, d, h, edge_order))
    return tuple(out)


METHODS = {name: globals()[name] for name in (
    "gcd", "lcm", "gcd_", "lcm_", "diff", "inner", "vdot", "dist", "addmv",
    "addmv_", "addr", "addr_", "renorm", "renorm_", "logical_xor_", "igamma_", "igammac_",
    "prelu")}
FUNCTIONS = {name: globals()[name] for name in (
    "gcd", "lcm", "gcd_", "lcm_", "diff", "trapezoid",
    "trapz", "cumulative_trapezoid", "inner", "vdot", "dist", "addmv", "addmv_", "addr",
    "renorm", "gradient")}
