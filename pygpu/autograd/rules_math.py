"""Backward rules of the op table's math functions (sin ... zeta: the rows after
isfinite and ge in csrc/core/pg_ops.def), one small function each, with PyTorch's
formulas (tools/autograd/derivatives.yaml). rules.py finds them by name, as its own.

A unary rule's context is (input, detached output); a binary rule's is (a, b), either of
which may be a Python number. The sets at the end say what each rule reads, for the
version checks of in-place ops (rules.saved)."""
import math as _math

from .. import _C
from .._tensor import create as _tensor_create
from ._broadcast import unbroadcast_like

Tensor = _C.Tensor

_SQRT_PI = _math.sqrt(_math.pi)
_LN2 = _math.log(2.0)
_LN10 = _math.log(10.0)


def _is_t(x):
    return isinstance(x, Tensor)


def _mask(cond, like):
    return cond.astype(like.dtype)


# ---- unary: ctx = (a, out) -----------------------------------------------------------------

def _rule_sin(ctx, g):
    return g * _C.cos(ctx[0]), None


def _rule_cos(ctx, g):
    return -(g * _C.sin(ctx[0])), None


def _rule_tan(ctx, g):
    out = ctx[1]
    return g * (out * out + 1.0), None


def _rule_asin(ctx, g):
    a = ctx[0]
    return g * _C.rsqrt(1.0 - a * a), None


def _rule_acos(ctx, g):
    a = ctx[0]
    return -(g * _C.rsqrt(1.0 - a * a)), None


def _rule_atan(ctx, g):
    a = ctx[0]
    return g / (a * a + 1.0), None


def _rule_sinh(ctx, g):
    return g * _C.cosh(ctx[0]), None


def _rule_cosh(ctx, g):
    return g * _C.sinh(ctx[0]), None


def _rule_asinh(ctx, g):
    a = ctx[0]
    return g * _C.rsqrt(a * a + 1.0), None


def _rule_acosh(ctx, g):
    a = ctx[0]
    return g * _C.rsqrt(a * a - 1.0), None


def _rule_atanh(ctx, g):
    a = ctx[0]
    return g / (1.0 - a * a), None


def _rule_log1p(ctx, g):
    return g / (ctx[0] + 1.0), None


def _rule_expm1(ctx, g):
    return g * (ctx[1] + 1.0), None


def _rule_log2(ctx, g):
    return g / (ctx[0] * _LN2), None


def _rule_log10(ctx, g):
    return g / (ctx[0] * _LN10), None


def _rule_exp2(ctx, g):
    return g * ctx[1] * _LN2, None


def _rule_erf(ctx, g):
    a = ctx[0]
    return g * _C.exp(-(a * a)) * (2.0 / _SQRT_PI), None


def _rule_erfc(ctx, g):
    a = ctx[0]
    return g * _C.exp(-(a * a)) * (-2.0 / _SQRT_PI), None


def _rule_erfinv(ctx, g):
    out = ctx[1]
    return g * _C.exp(out * out) * (_SQRT_PI / 2.0), None


def _rule_lgamma(ctx, g):
    return g * _C.digamma(ctx[0]), None


def _rule_digamma(ctx, g):
    return g * _C.special_zeta(2.0, ctx[0]), None  # polygamma(1, x) = zeta(2, x)


def _rule_logit(ctx, g):
    a = ctx[0]
    return g / (a * (1.0 - a)), None


def _rule_sinc(ctx, g):
    a, out = ctx
    zero = a == 0
    safe = _C.where(zero, 1.0, a)
    d = (_C.cos(safe * _math.pi) - out) / safe
    return g * _C.where(zero, 0.0, d), None


def _rule_deg2rad(ctx, g):
    return g * (_math.pi / 180.0), None


def _rule_rad2deg(ctx, g):
    return g * (180.0 / _math.pi), None


def _rule_frac(ctx, g):
    return g, None


def _rule_i0(ctx, g):
    return g * _C.special_i1(ctx[0]), None


def _rule_special_i0e(ctx, g):
    a, out = ctx
    return g * (_C.special_i1e(a) - _C.sign(a) * out), None


def _rule_special_i1(ctx, g):
    a, out = ctx
    zero = a == 0
    d = _C.i0(a) - out / _C.where(zero, 1.0, a)
    return g * _C.where(zero, 0.5, d), None


def _rule_special_i1e(ctx, g):
    a, out = ctx
    zero = a == 0
    d = _C.special_i0e(a) - out * (_C.sign(a) + 1.0 / _C.where(zero, 1.0, a))
    return g * _C.where(zero, 0.5, d), None


def _rule_special_ndtr(ctx, g):
    a = ctx[0]
    return g * _C.exp(a * a * -0.5) * (1.0 / _math.sqrt(2.0 * _math.pi)), None


def _rule_special_entr(ctx, g):
    return -(g * (_C.log(ctx[0]) + 1.0)), None


def _rule_square(ctx, g):
    return g * ctx[0] * 2.0, None


# ---- binary: ctx = (a, b), either a Tensor or a Python number ------------------------------

def _rule_atan2(ctx, g):
    a, b = ctx
    denom = a * a + b * b
    return (unbroadcast_like(g * b / denom, a),
            unbroadcast_like(-(g * a) / denom, b))


def _rule_hypot(ctx, g):
    a, b = ctx
    out = _C.hypot(a, b)
    return (unbroadcast_like(g * a / out, a),
            unbroadcast_like(g * b / out, b))


def _rule_fmod(ctx, g):
    a, b = ctx
    gb = None
    if _is_t(b):
        gb = unbroadcast_like(-(g * _C.trunc(_C.divide(a, b))), b)
    return unbroadcast_like(g, a), gb


def _rule_remainder(ctx, g):
    a, b = ctx
    gb = None
    if _is_t(b):
        gb = unbroadcast_like(-(g * _C.floor(_C.divide(a, b))), b)
    return unbroadcast_like(g, a), gb


def _rule_copysign(ctx, g):
    a, b = ctx
    ga = gb = None
    if _is_t(a):
        ratio = _C.copysign(1.0, a) * (_C.copysign(1.0, b) if _is_t(b) else _math.copysign(1.0, b))
        ga = unbroadcast_like(g * _C.where(a == 0, 0.0, ratio), a)
    if _is_t(b):
        gb = _tensor_create.zeros(b.shape, dtype=g.dtype, device=g.device)
    return ga, gb


def _rule_xlogy(ctx, g):
    a, b = ctx
    ga = gb = None
    if _is_t(a):
        lb = _C.log(b) if _is_t(b) else _scalar_log(b)
        d = g * lb
        ga = unbroadcast_like(_C.where((a == 0) & (b <= 0), 0.0, d) if _is_t(b) else
                               (_C.where(a == 0, 0.0, d) if b <= 0 else d), a)
    if _is_t(b):
        gb = unbroadcast_like(g * a / b, b)
    return ga, gb


def _rule_special_xlog1py(ctx, g):
    a, b = ctx
    ga = gb = None
    if _is_t(a):
        lb = _C.log1p(b) if _is_t(b) else _scalar_log1p(b)
        d = g * lb
        ga = unbroadcast_like(_C.where((a == 0) & (b <= -1), 0.0, d) if _is_t(b) else
                               (_C.where(a == 0, 0.0, d) if b <= -1 else d), a)
    if _is_t(b):
        gb = unbroadcast_like(g * a / (b + 1.0), b)
    return ga, gb


def _scalar_log(b):
    return _math.log(b) if b > 0 else (-_math.inf if b == 0 else _math.nan)


def _scalar_log1p(b):
    return _math.log1p(b) if b > -1 else (-_math.inf if b == -1 else _math.nan)


def _logaddexp_rule(exp_fn):
    def rule(ctx, g):
        a, b = ctx
        ga = unbroadcast_like(g / (exp_fn(b - a) + 1.0), a)
        gb = unbroadcast_like(g / (exp_fn(a - b) + 1.0), b)
        return ga, gb
    return rule


def _fmaxmin(is_max):
    """g goes to a where a wins or b is NaN (fmax ignores a NaN), as PyTorch's."""
    def rule(ctx, g):
        a, b = ctx
        if _is_t(b):
            pick_a = (a >= b if is_max else a <= b) | _C.isnan(b)
        elif b != b:  # a NaN number: every element is a's
            pick_a = a == a
            pick_a = pick_a | ~pick_a
        else:
            pick_a = a >= b if is_max else a <= b
        if not _is_t(a):  # a number: b gets what a does not
            pick_a = (b <= a if is_max else b >= a) | _C.isnan(b)
        m = _mask(pick_a, g)
        ga = unbroadcast_like(g * m, a)
        gb = unbroadcast_like(g - g * m, b)
        return ga, gb
    return rule


def _rule_special_zeta(ctx, g):
    a, b = ctx
    if _is_t(a) and a.requires_grad:
        raise NotImplementedError("the derivative of special.zeta with respect to its first "
                                  "argument (x) is not implemented, as in PyTorch")
    gb = None
    if _is_t(b):
        gb = unbroadcast_like(-(g * a * _C.special_zeta(a + 1.0, b)), b)
    return None, gb


# ---- GELU (nn.functional.gelu): its gradient is a row of its own ----------------------------
# The rows gelu_backward / gelu_tanh_backward are one pass each but have no gradient of their
# own; under create_graph (grad mode on while the rule runs) GELU'(x) is written in
# differentiable ops instead, so the gradient has its gradient (PyTorch's double backward)

_INV_SQRT_2PI = 1.0 / _math.sqrt(2.0 * _math.pi)
_SQRT_2_OVER_PI = _math.sqrt(2.0 / _math.pi)


def _rule_gelu(ctx, g):
    x = ctx[0]
    if not _C.is_grad_enabled():
        return _C.gelu_backward(g, x), None
    cdf = (_C.erf(x * _math.sqrt(0.5)) + 1.0) * 0.5  # Phi(x)
    pdf = _C.exp(x * x * -0.5) * _INV_SQRT_2PI       # phi(x)
    return g * (cdf + x * pdf), None


def _rule_gelu_tanh(ctx, g):
    x = ctx[0]
    if not _C.is_grad_enabled():
        return _C.gelu_tanh_backward(g, x), None
    t = _C.tanh((x + x * x * x * 0.044715) * _SQRT_2_OVER_PI)
    du = (x * x * (3 * 0.044715) + 1.0) * _SQRT_2_OVER_PI
    return g * ((t + 1.0) * 0.5 + x * 0.5 * (1.0 - t * t) * du), None


_rule_logaddexp = _logaddexp_rule(_C.exp)
_rule_logaddexp2 = _logaddexp_rule(_C.exp2)
_rule_fmax = _fmaxmin(True)
_rule_fmin = _fmaxmin(False)

RULES = {k[6:]: v for k, v in dict(globals()).items() if k.startswith("_rule_")}

# what each rule reads is its row's saves column (csrc/core/pg_ops.def; rules.saved)
