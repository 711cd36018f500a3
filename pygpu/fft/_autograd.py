"""The FFT node's gradients: each transform's adjoint, as PyTorch's derivatives.yaml has them
(fft_c2c_backward, fft_r2c_backward, fft_c2r_backward), in recorded ops, so that
create_graph=True differentiates them again.

A node along one axis of length n is linear: y = fct * F x, F the DFT matrix of the node's
sign. For a real loss PyTorch's gradient of a linear map is its adjoint (the conjugate
transpose) applied to the gradient, and the adjoint of each sub-op is another FFT node of the
opposite sign and the same factor:
- C2C: C2C of the gradient.
- R2C (n reals -> m = n/2+1 bins): the real part of the inverse transform of the bins padded
  with zeros to n. That is a C2R node of the bins with the ones a Hermitian extension would
  count twice (1 .. ceil(n/2)-1) halved, half the work of PyTorch's padded C2C.
- C2R (m bins -> n reals, each bin but 0 and n/2 counted twice): R2C of the gradient with
  those bins doubled (the imaginary parts the node ignores get the zero gradient R2C gives).
One Function per sub-op, named as PyTorch's grad_fn (FftC2CBackward0, ...), in the table
NODES; node() is what pygpu/fft/__init__.py's _node calls, with its unrecorded node `run`."""
from .. import _C
from .._tensor import complex as _complex
from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled


def _bin_weights(z, dim, lo, hi, value):
    """z (complex) with its bins lo..hi-1 along dim multiplied by the number value."""
    m = z.shape[dim]
    if hi <= lo:
        return z
    part = z.dtype.to_real()
    w = _C._full((m,), 1.0, part, z.device)
    w[lo:hi] = value
    shape = [1] * z.ndim + [1]
    shape[dim] = m
    pairs = _complex.view_as_real(z) * w.reshape(tuple(shape))
    return _complex.view_as_complex(_complex.pair_layout(pairs))


class _FftNode(Function):
    """One FFT node along dim (`run`: pygpu/fft/__init__.py's unrecorded node)."""

    @staticmethod
    def forward(ctx, x, dim, n, forward, fct, run, op):
        ctx.geom = (dim, n, forward, fct, run)
        return run(op, x, dim, n, forward, fct)


_NONE = (None,) * 6  # no gradient for dim, n, forward, fct, run, op


class FftC2C(_FftNode):
    @staticmethod
    def backward(ctx, g):
        dim, n, forward, fct, run = ctx.geom
        return (node("C2C", g, dim, n, not forward, fct, run),) + _NONE


class FftR2C(_FftNode):
    @staticmethod
    def backward(ctx, g):  # g: the m = n//2 + 1 bins
        dim, n, forward, fct, run = ctx.geom
        h = _bin_weights(g, dim, 1, (n + 1) // 2, 0.5)
        return (node("C2R", h, dim, n, not forward, fct, run),) + _NONE


class FftC2R(_FftNode):
    @staticmethod
    def backward(ctx, g):  # g: the n reals
        dim, n, forward, fct, run = ctx.geom
        bins = node("R2C", g, dim, n, not forward, fct, run)
        return (_bin_weights(bins, dim, 1, n - (n // 2 + 1) + 1, 2.0),) + _NONE


NODES = {"C2C": FftC2C, "R2C": FftR2C, "C2R": FftC2R}


def node(op, x, dim, n, forward, fct, run):
    """The FFT node op along dim of x: run(...) itself, recorded as NODES[op] when x
    requires grad (a backward under create_graph=True records its nodes too)."""
    if x.requires_grad and is_grad_enabled():
        return NODES[op].apply(x, dim, n, forward, fct, run, op)
    return run(op, x, dim, n, forward, fct)
