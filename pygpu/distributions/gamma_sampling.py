"""Standard gamma draws and their reparameterized gradient, for Gamma, Beta and Dirichlet.

Draws: Marsaglia and Tsang's method (2000) on the device, vectorized: every element
proposes x = d (1 + c z)^3 from a normal z and keeps it when log u < z^2/2 + d - d v +
d log v; the elements still rejected propose again (one read back per round, about 1.05
rounds on average). A shape below 1 samples shape + 1 and multiplies by u^(1/shape).

Gradient (rsample): the implicit reparameterization dx/dalpha = -(dP(alpha, x)/dalpha) /
p(x; alpha), with P the regularized lower incomplete gamma function, computed in float64
by its series (x < alpha + 1) or Lentz's continued fraction for 1 - P, and differentiated
in alpha by a central difference. PyTorch's _standard_gamma_grad computes the same
quantity with fitted approximations."""
from .. import _C
from .._tensor import create as _tensor_create
from ..autograd.function import Function, fused_backward

_ITERS = 120  # series terms / continued-fraction steps: converged to 1e-12 for alpha, x < 1e3


def standard_gamma(alpha):
    """Gamma(alpha, 1) draws, one per element of alpha (no gradient)."""
    a = alpha.detach()
    small = a < 1.0
    a1 = _C.where(small, a + 1.0, a)
    d = a1 - 1.0 / 3.0
    c = 1.0 / _C.sqrt(d * 9.0)
    out = _tensor_create.zeros(tuple(a.shape), dtype=a.dtype, device=a.device)
    todo = _tensor_create.ones(tuple(a.shape), dtype="bool", device=a.device)
    for _ in range(64):
        z = _tensor_create.randn(*a.shape, dtype=a.dtype, device=a.device) if a.ndim else \
            _tensor_create.randn(1, dtype=a.dtype, device=a.device).reshape(())
        u = _tensor_create.rand(*a.shape, dtype=a.dtype, device=a.device) if a.ndim else \
            _tensor_create.rand(1, dtype=a.dtype, device=a.device).reshape(())
        t = 1.0 + c * z
        v = t * t * t
        vs = _C.where(v > 0, v, 1.0)
        ok = (v > 0) & (_C.log(u) < 0.5 * z * z + d - d * vs + d * _C.log(vs)) & todo
        out = _C.where(ok, d * vs, out)
        todo = todo & ~ok
        if not bool(todo.any()):
            break
    if bool(small.any()):
        u = _tensor_create.rand(*a.shape, dtype=a.dtype, device=a.device) if a.ndim else \
            _tensor_create.rand(1, dtype=a.dtype, device=a.device).reshape(())
        boost = _C.exp(_C.log(u) / _C.where(small, a, 1.0))
        out = _C.where(small, out * boost, out)
    tiny = 1e-30 if a.dtype.name == "float32" else 1e-300
    return _C.maximum(out, tiny)


def _log_prefactor(a, x):
    return a * _C.log(x) - x - _C.lgamma(a)


def regularized_gamma_p(a, x):
    """P(a, x) elementwise, float64 tensors (a > 0, x > 0)."""
    series_region, p_series, q_cf = _gamma_series_and_fraction(a, x)
    return _C.where(series_region, p_series, 1.0 - q_cf)


def regularized_gamma_q(a, x):
    """Q(a, x) = 1 - P(a, x), computed as itself where the continued fraction converges
    (x >= a + 1), so its upper tail keeps its digits (1 - P would round to 0 there)."""
    series_region, p_series, q_cf = _gamma_series_and_fraction(a, x)
    return _C.where(series_region, 1.0 - p_series, q_cf)


def _gamma_series_and_fraction(a, x):
    """(x < a + 1, P by its series, Q by Lentz's continued fraction): each is accurate in
    its own region."""
    series_region = x < a + 1.0
    # series: P = e^{-x} x^a / Gamma(a + 1) * sum_k x^k / ((a+1)...(a+k))
    term = 1.0 / a
    total = term
    ap = a
    for _ in range(_ITERS):
        ap = ap + 1.0
        term = term * x / ap
        total = total + term
    p_series = total * _C.exp(_log_prefactor(a, x))
    # continued fraction for Q = 1 - P (Lentz)
    tiny = 1e-300
    b = x + 1.0 - a
    c = _tensor_create.full(tuple(x.shape), 1.0 / tiny, dtype=x.dtype, device=x.device)
    d = 1.0 / _C.where(b.abs() < tiny, tiny, b)
    h = d
    for i in range(1, _ITERS + 1):
        an = -float(i) * (float(i) - a)
        b = b + 2.0
        d = an * d + b
        d = 1.0 / _C.where(d.abs() < tiny, tiny, d)
        c = b + an / c
        c = _C.where(c.abs() < tiny, tiny, c)
        h = h * d * c
    q_cf = _C.exp(_log_prefactor(a, x)) * h
    return series_region, p_series, q_cf


def standard_gamma_grad(x, alpha):
    """dx/dalpha of a standard gamma draw x (implicit reparameterization)."""
    a = alpha.detach().to("float64")
    xx = x.detach().to("float64")
    h = _C.maximum(a * 1e-5, 1e-7)
    dP = (regularized_gamma_p(a + h, xx) - regularized_gamma_p(a - h, xx)) / (h * 2.0)
    log_pdf = (a - 1.0) * _C.log(xx) - xx - _C.lgamma(a)
    return (-dP / _C.exp(log_pdf)).to(x.dtype)


class StandardGamma(Function):
    @staticmethod
    def forward(ctx, alpha):
        x = standard_gamma(alpha)
        ctx.save(x, alpha)
        return x

    @staticmethod
    @fused_backward  # the implicit-reparameterization gradient is numeric
    def backward(ctx, g):
        x, alpha = ctx.saved
        return (g * standard_gamma_grad(x, alpha),)
