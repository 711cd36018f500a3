"""pygpu.fft: PyTorch's torch.fft (fft, ifft, rfft, irfft, hfft, ihfft, their 2-D and N-D
forms, fftshift, ifftshift, fftfreq, rfftfreq), with its n/s, dim and norm arguments and its
errors.

Every transform is made of FFT nodes (csrc/core/pg_ops_fft.c): one 1-D transform per
transformed axis, applied along the last axis of the operand (the axis is moved there, as a
view; the node makes it contiguous). The node runs pocketfft in the CPU backend, on cpu and
on sim's worker, and cuFFT on cuda (csrc/backends/cuda/cuda_cufft.c, loaded on the first
transform: pygpu/backends/_cufft.py). _C._has_node("FFT", x) asks the backend, never the
device type: where it declines the node (cuda without a loadable libcufft), the operand is
moved to the cpu and the result back, both counted transfers. Padding and trimming to n (or
s) happen here before the node, as PyTorch's: the input is cut, or zero-padded, along each
transformed axis. The norm's factor is the node's: "backward" (the default) scales the
inverse by 1/n, "forward" the forward, "ortho" both by 1/sqrt(n). The Hermitian transforms
are the real ones in the other direction: hfft is a forward complex-to-real node (it reads
the conjugate of its input), ihfft a backward real-to-complex node (it conjugates its
result), as PyTorch composes them.

Autograd records each node as a Function whose backward is its adjoint transform, itself
recorded (pygpu/fft/_autograd.py); padding and trimming are recorded ops (a concatenation
with zeros, a narrow), so every function here has gradients of every order, as PyTorch's."""
import math as _math

from .. import _C, _defaults, _dtype
from .._C import Tensor
from .._tensor import complex as _complex
from ..autograd.grad_mode import is_grad_enabled as _is_grad_enabled
from . import _autograd

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2",
           "hfft2", "ihfft2", "fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn", "fftshift",
           "ifftshift", "fftfreq", "rfftfreq"]


def _factor(norm, n, forward):
    """The multiplier a transform of length n gets under norm (PyTorch's three modes)."""
    if norm is None or norm == "backward":
        return 1.0 if forward else 1.0 / n
    if norm == "forward":
        return 1.0 / n if forward else 1.0
    if norm == "ortho":
        return 1.0 / _math.sqrt(n)
    raise RuntimeError(f'Invalid normalization mode: "{norm}"')


def _check_input(x, name):
    if not isinstance(x, Tensor):
        raise TypeError(f"fft_{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")
    if x.dtype in (_dtype.float16, _dtype.bfloat16):
        raise RuntimeError(f"Unsupported dtype {'Half' if x.dtype is _dtype.float16 else 'BFloat16'}")


def _complex_of(x):
    """x as the complex dtype PyTorch's complex transforms take (integers: the default's)."""
    if x.dtype.is_complex:
        return x
    if x.dtype.is_floating_point:
        return x.to(x.dtype.to_complex())
    return x.to(_defaults.dtype().to_complex())


def _real_of(x, name):
    if x.dtype.is_complex:
        raise RuntimeError(f"{name} expects a real input tensor, but got "
                           f"{'ComplexFloat' if x.dtype is _dtype.complex64 else 'ComplexDouble'}")
    return x if x.dtype.is_floating_point else x.to(_defaults.dtype())


def _wrap_dim(d, ndim):
    top = max(ndim, 1)
    if not -top <= d < top:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-top}, "
                         f"{top - 1}], but got {d})")
    return d % top


def _resize(x, dim, n):
    """x cut or zero-padded along dim to n elements (PyTorch's n= and s=)."""
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")
    m = x.shape[dim]
    if m == n:
        return x
    if m > n:
        return x.narrow(dim, 0, n)
    shape = list(x.shape)
    if x.requires_grad and _is_grad_enabled():  # recorded: a cat with zeros, which take none
        from .._tensor.join import cat
        shape[dim] = n - m
        return cat([x, _C._full(tuple(shape), 0, x.dtype, x.device)], dim)
    shape[dim] = n
    out = _C._full(tuple(shape), 0, x.dtype, x.device)
    out.narrow(dim, 0, m).copy_(x)
    return out


def _node(op, x, dim, n, forward, fct):
    """One FFT node along dim of x, recorded when x requires grad (_autograd.py)."""
    return _autograd.node(op, x, dim, n, forward, fct, _run)


def _run(op, x, dim, n, forward, fct):
    """One FFT node along dim of x (moved last and back, as views), on x's device where its
    backend runs the node (asked with the lines it would get), else on the cpu."""
    last = x.ndim - 1
    moved = x if dim == last else x.movedim(dim, last)
    here = _C._has_node("FFT", moved)
    out = _C._fft(op, moved if here else moved.to("cpu"), n, forward, fct)
    out = out if here else out.to(x.device)
    return out if dim == last else out.movedim(last, dim)


def _c2c(x, dims, sizes, norm, forward):
    for d, n in zip(dims, sizes):
        x = _resize(x, d, n)
    for d, n in zip(dims, sizes):
        x = _node("C2C", x, d, n, forward, _factor(norm, n, forward))
    return x


def _dims_and_sizes(x, s, dim, name, default_all):
    """PyTorch's reading of (s, dim): both given (one length), s alone (its last axes), dim
    alone (their present sizes), neither (every axis, or the last two for the 2-D forms)."""
    if dim is not None:
        dims = [dim] if isinstance(dim, int) else list(dim)
        dims = [_wrap_dim(d, x.ndim) for d in dims]
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
        if s is not None and len(s) != len(dims):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
    elif s is not None:
        if len(s) > x.ndim:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has "
                               f"{x.ndim} dimensions.")
        dims = list(range(x.ndim - len(s), x.ndim))
    else:
        dims = list(range(x.ndim)) if default_all is None else [
            _wrap_dim(d, x.ndim) for d in default_all]
    sizes = [x.shape[d] if s is None or s[i] == -1 else s[i] for i, d in enumerate(dims)]
    return dims, sizes


# ---- 1-D ------------------------------------------------------------------------------

def fft(input, n=None, dim=-1, norm=None, *, out=None):
    """The discrete Fourier transform along dim (PyTorch's torch.fft.fft)."""
    _check_input(input, "fft")
    return _out(fftn(input, None if n is None else (n,), (dim,), norm), out)


def ifft(input, n=None, dim=-1, norm=None, *, out=None):
    _check_input(input, "ifft")
    return _out(ifftn(input, None if n is None else (n,), (dim,), norm), out)


def rfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The non-negative frequencies (n//2 + 1) of a real signal's transform."""
    _check_input(input, "rfft")
    return _out(rfftn(input, None if n is None else (n,), (dim,), norm, _name="rfft"), out)


def irfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The real signal of length n (default 2*(m-1)) whose rfft is input."""
    _check_input(input, "irfft")
    return _out(irfftn(input, None if n is None else (n,), (dim,), norm), out)


# ---- N-D (the 2-D forms are these over the last two axes) -----------------------------

def fftn(input, s=None, dim=None, norm=None, *, out=None, _default=None):
    _check_input(input, "fftn")
    x = _complex_of(input)
    dims, sizes = _dims_and_sizes(x, s, dim, "fftn", _default)
    return _out(_c2c(x, dims, sizes, norm, True), out)


def ifftn(input, s=None, dim=None, norm=None, *, out=None, _default=None):
    _check_input(input, "ifftn")
    x = _complex_of(input)
    dims, sizes = _dims_and_sizes(x, s, dim, "ifftn", _default)
    return _out(_c2c(x, dims, sizes, norm, False), out)


def rfftn(input, s=None, dim=None, norm=None, *, out=None, _default=None, _name="rfftn"):
    _check_input(input, _name)
    x = _real_of(input, _name)
    dims, sizes = _dims_and_sizes(x, s, dim, _name, _default)
    if not dims:
        return _out(_complex_of(x), out)
    last, n = dims[-1], sizes[-1]
    x = _resize(x, last, n)
    x = _node("R2C", x, last, n, True, _factor(norm, n, True))
    return _out(_c2c(x, dims[:-1], sizes[:-1], norm, True), out)


def irfftn(input, s=None, dim=None, norm=None, *, out=None, _default=None, _name="irfftn",
           _forward=False):
    _check_input(input, _name)
    x = _complex_of(input)
    dims, sizes = _dims_and_sizes(x, s, dim, _name, _default)
    if not dims:
        return _out(x.real.clone(), out)
    last = dims[-1]
    n = 2 * (x.shape[last] - 1) if s is None or s[-1] == -1 else sizes[-1]
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")
    x = _c2c(x, dims[:-1], sizes[:-1], norm, _forward)
    x = _resize(x, last, n // 2 + 1)
    return _out(_node("C2R", x, last, n, _forward, _factor(norm, n, _forward)), out)


# ---- Hermitian: a half-spectrum signal in time, a real spectrum (hfft), and back (ihfft) ----

def hfftn(input, s=None, dim=None, norm=None, *, out=None, _default=None, _name="hfftn"):
    """The real n-D spectrum of a signal with Hermitian symmetry along the last transformed
    axis, given by its first n//2 + 1 values there (PyTorch's hfftn): the forward complex
    transforms of the other axes, then a forward complex-to-real one of the last."""
    return irfftn(input, s, dim, norm, out=out, _default=_default, _name=_name, _forward=True)


def ihfftn(input, s=None, dim=None, norm=None, *, out=None, _default=None, _name="ihfftn"):
    """hfftn's inverse: the first n//2 + 1 values of the inverse transform of a real signal
    along the last transformed axis, then the inverse transforms of the other axes."""
    _check_input(input, _name)
    x = _real_of(input, _name)
    dims, sizes = _dims_and_sizes(x, s, dim, _name, _default)
    if not dims:
        raise RuntimeError(f"{_name} must transform at least one axis")
    last, n = dims[-1], sizes[-1]
    x = _resize(x, last, n)
    x = _node("R2C", x, last, n, False, _factor(norm, n, False))
    return _out(_c2c(x, dims[:-1], sizes[:-1], norm, False), out)


def hfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The real spectrum (length n, default 2*(m-1)) of a Hermitian signal given by its first
    m values along dim (PyTorch's torch.fft.hfft)."""
    _check_input(input, "hfft")
    return hfftn(input, None if n is None else (n,), (dim,), norm, out=out, _name="hfft")


def ihfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The first n//2 + 1 values of the inverse transform of a real signal (hfft's inverse)."""
    _check_input(input, "ihfft")
    return ihfftn(input, None if n is None else (n,), (dim,), norm, out=out, _name="ihfft")


def hfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return hfftn(input, s, dim, norm, out=out, _name="hfft2")


def ihfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return ihfftn(input, s, dim, norm, out=out, _name="ihfft2")


def fft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return fftn(input, s, dim, norm, out=out)


def ifft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return ifftn(input, s, dim, norm, out=out)


def rfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return rfftn(input, s, dim, norm, out=out, _name="rfft2")


def irfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return irfftn(input, s, dim, norm, out=out, _name="irfft2")


def _out(r, out):
    if out is None:
        return r
    return out.copy_(r)


# ---- helpers --------------------------------------------------------------------------

def _shift(input, dim, inverse):
    dims = list(range(input.ndim)) if dim is None else (
        [dim] if isinstance(dim, int) else list(dim))
    dims = [_wrap_dim(d, input.ndim) for d in dims]
    shifts = [(input.shape[d] + 1) // 2 if inverse else input.shape[d] // 2 for d in dims]
    if not dims:
        return input.clone()
    if input.dtype.is_complex:  # rolled as its real pairs (the same axes)
        pairs = _complex.view_as_real(input).roll(shifts, dims)
        return _complex.view_as_complex(pairs.contiguous())
    return input.roll(shifts, dims)


def fftshift(input, dim=None):
    """The zero frequency moved to the middle: each axis rolled by n // 2."""
    return _shift(input, dim, False)


def ifftshift(input, dim=None):
    """fftshift's inverse: each axis rolled back by n // 2 (by (n + 1) // 2 forward)."""
    return _shift(input, dim, True)


def fftfreq(n, d=1.0, *, dtype=None, device=None, layout=None, requires_grad=False):
    """The sample frequencies of an n-point transform: [0, 1, ..., -(n//2), ..., -1] / (d*n)."""
    from .._tensor.create import arange
    dt = _dtype.to_dtype(dtype) if dtype is not None else _defaults.dtype()
    pos = (n - 1) // 2 + 1
    idx = arange(n, dtype=_dtype.int64, device=device)
    idx = idx - (idx >= pos).to(_dtype.int64) * n
    r = idx.to(dt) / (d * n)
    return r.requires_grad_(True) if requires_grad else r


def rfftfreq(n, d=1.0, *, dtype=None, device=None, layout=None, requires_grad=False):
    """The non-negative frequencies of an n-point real transform: [0, ..., n//2] / (d*n)."""
    from .._tensor.create import arange
    dt = _dtype.to_dtype(dtype) if dtype is not None else _defaults.dtype()
    r = arange(n // 2 + 1, dtype=_dtype.int64, device=device).to(dt) / (d * n)
    return r.requires_grad_(True) if requires_grad else r
