"""The math surface written in Python: PyTorch's other spellings of the op table's math
functions, and the pointwise functions with more operands or parameters, each a short
composition of the table's rows.

- Spellings: a row of csrc/core/pg_ops.def lists every Python name that reaches it
  (Tensor.arcsin, Tensor.arcsin_ beside Tensor.asin, Tensor.asin_); the ones _C does not
  generate become the row's generated method here (_aliases), so no list of aliases is
  kept by hand. pygpu.arcsin and friends are exported from the same rows
  (pygpu/__init__.py).
- Compositions (their gradients come from the rows' backward rules):
    logit(eps)        clamp to [eps, 1 - eps], then the logit row
    nan_to_num        where(isnan) then one clamp (inf -> the bounds)
    lerp, addcmul,    one TERNARY node (csrc/core/pg_ops_ternary.c: three operands, one
    addcdiv           pass) for float32/float64 tensors, their gradients from the Function
                      below; other dtypes, and the in-place forms under autograd, compose
                      rows (start + weight * (end - start), input + value * t1 * t2, ...)
    clamp_min/max     clamp with one bound
    float_power       pow in float64
    polygamma(n, x)   digamma for n = 0, else (-1)**(n+1) n! zeta(n + 1, x)
    div(rounding_mode=) 'floor': the floor_divide row; 'trunc': trunc of the quotient
    ldexp             x * 2**e
  The composition of rows was 1.8x (addcdiv_) to 3x (addcmul_, lerp) PyTorch's fused time on a
  1M-element float32 tensor: three memory-bound passes and two temporaries."""
import math as _math

from .. import _C
from . import complex as _complex
from .._dtype import bool_, float64

Tensor = _C.Tensor
_c_div, _c_div_ = Tensor.div, Tensor.div_
_c_logit, _c_logit_ = Tensor.logit, Tensor.logit_


def _aliases():
    """Tensor methods a row names but _C does not generate: the row's own method (the in-place
    one for a name ending in '_')."""
    out = {}
    for row in _C._op_table():
        names = [q[len("Tensor."):] for q in row[3] if q.startswith("Tensor.")]
        have = [n for n in names if not n.startswith("__") and n in vars(Tensor)]
        for n in names:
            if n in vars(Tensor) or n.startswith("__"):
                continue
            inplace = n.endswith("_")
            target = next((h for h in have if h.endswith("_") == inplace), None)
            if target is not None:
                out[n] = vars(Tensor)[target]
    return out


def _is_t(x):
    return isinstance(x, Tensor)


def logit(self, eps=None):
    """log(x / (1 - x)); with eps, x is clamped to [eps, 1 - eps] first (PyTorch's logit)."""
    if eps is not None:
        self = self.clamp(eps, 1.0 - eps)
    return _c_logit(self)


def logit_(self, eps=None):
    if eps is not None:
        self.clamp_(eps, 1.0 - eps)
    return _c_logit_(self)


def _finite_bounds(dtype):
    info = {"float16": 65504.0, "bfloat16": 3.3895313892515355e38,
            "float32": 3.4028234663852886e38}.get(dtype.name, 1.7976931348623157e308)
    return info


def nan_to_num(self, nan=0.0, posinf=None, neginf=None):
    """NaN to `nan`, +inf to `posinf` (default: the dtype's largest finite value), -inf to
    `neginf` (default: the most negative); integers are returned as they are."""
    if not self.dtype.is_floating_point:
        return self.clone()
    big = _finite_bounds(self.dtype)
    hi = big if posinf is None else float(posinf)
    lo = -big if neginf is None else float(neginf)
    x = _C.where(_C.isnan(self), float(nan), self)
    x = _C.where(_C.isposinf(x), hi, x)
    return _C.where(_C.isneginf(x), lo, x)


def nan_to_num_(self, nan=0.0, posinf=None, neginf=None):
    return self.copy_(nan_to_num(self, nan, posinf, neginf))


# ---- addcmul, addcdiv, lerp: one TERNARY node for float32/float64 (pg_ops_ternary.c) ----

# the TERNARY rows of csrc/core/pg_subops.def, named by their IDs
_ADDCMUL, _ADDCDIV, _LERP, _LERP_TENSOR = "ADDCMUL", "ADDCDIV", "LERP", "LERP_TENSOR"
_FAST = ("float32", "float64")


def _fast(*ts):
    """Every operand a float32/float64 Tensor on one device: the one-pass node applies."""
    dev = None
    for t in ts:
        if not _is_t(t) or t.dtype.name not in _FAST:
            return False
        if dev is None:
            dev = str(t.device)
        elif str(t.device) != dev:
            return False
    return True


def _records(*ts):
    from ..autograd.grad_mode import is_grad_enabled
    return is_grad_enabled() and any(_is_t(t) and t.requires_grad for t in ts)


from ..autograd._broadcast import unbroadcast_like as _unbroadcast  # noqa: E402 (g, operand)


def _make_ternary_fn():
    from ..autograd.function import Function

    class Ternary(Function):
        """The node's gradients: addcmul (1, v c, v b), addcdiv (1, v/c, -v b/c^2), lerp
        (1 - w, w, end - start)."""
        @staticmethod
        def forward(ctx, op, a, b, c, value):
            ctx.op, ctx.value = op, value
            ctx.save(a, b, c)
            return _C._ternary(op, a, b, c, float(value), False)

        @staticmethod
        def backward(ctx, g):
            a, b, c = ctx.saved
            op, v = ctx.op, ctx.value
            if op == _ADDCMUL:
                return None, _unbroadcast(g, a), _unbroadcast(g * c * v, b), _unbroadcast(g * b * v, c), None
            if op == _ADDCDIV:
                return (None, _unbroadcast(g, a), _unbroadcast(g / c * v, b),
                        _unbroadcast(-(g * b * v) / (c * c), c), None)
            w = c if op == _LERP_TENSOR else v
            gc = _unbroadcast(g * (b - a), c) if op == _LERP_TENSOR else None
            return None, _unbroadcast(g * (1.0 - w), a), _unbroadcast(g * w, b), gc, None
    return Ternary


_Ternary = _make_ternary_fn()


def _ternary(op, a, b, c, value):
    if _records(a, b, c):
        return _Ternary.apply(op, a, b, c, value)
    return _C._ternary(op, a, b, c, float(value), False)


def lerp(self, end, weight):
    """self + weight * (end - self) (weight a number or a Tensor), broadcasting: one pass
    for float32/float64 tensors, else composed of rows."""
    if _is_t(weight):
        if _fast(self, end, weight):
            return _ternary(_LERP_TENSOR, self, end, weight, 0.0)
    elif _fast(self, end):
        return _ternary(_LERP, self, end, None, float(weight))
    return self + weight * (end - self)


def lerp_(self, end, weight):
    if not _records(self, end, weight):
        if _is_t(weight) and _fast(self, end, weight):
            return _C._ternary(_LERP_TENSOR, self, end, weight, 0.0, True)
        if not _is_t(weight) and _fast(self, end):
            return _C._ternary(_LERP, self, end, None, float(weight), True)
    return self.add_(weight * (end - self))


def _scaled(t, value):
    return t if value == 1 else t * value


def addcmul(self, tensor1, tensor2, *, value=1):
    """self + value * tensor1 * tensor2."""
    if _fast(self, tensor1, tensor2) and not _is_t(value):
        return _ternary(_ADDCMUL, self, tensor1, tensor2, value)
    return self + _scaled(tensor1, value) * tensor2


def addcmul_(self, tensor1, tensor2, *, value=1):
    if _fast(self, tensor1, tensor2) and not _is_t(value) and not _records(self, tensor1, tensor2):
        return _C._ternary(_ADDCMUL, self, tensor1, tensor2, float(value), True)
    return self.add_(_scaled(tensor1, value) * tensor2)


def addcdiv(self, tensor1, tensor2, *, value=1):
    """self + value * tensor1 / tensor2."""
    if _fast(self, tensor1, tensor2) and not _is_t(value):
        return _ternary(_ADDCDIV, self, tensor1, tensor2, value)
    return self + _scaled(tensor1, value) / tensor2


def addcdiv_(self, tensor1, tensor2, *, value=1):
    if _fast(self, tensor1, tensor2) and not _is_t(value) and not _records(self, tensor1, tensor2):
        return _C._ternary(_ADDCDIV, self, tensor1, tensor2, float(value), True)
    return self.add_(_scaled(tensor1, value) / tensor2)


def clamp_min(self, min):  # noqa: A002 - PyTorch's keyword
    return self.clamp(min=min)


def clamp_min_(self, min):  # noqa: A002
    return self.clamp_(min=min)


def clamp_max(self, max):  # noqa: A002
    return self.clamp(max=max)


def clamp_max_(self, max):  # noqa: A002
    return self.clamp_(max=max)


def float_power(self, exponent):
    """self ** exponent computed in float64 (PyTorch's float_power)."""
    base = self.double() if _is_t(self) else float(self)
    exp = exponent.double() if _is_t(exponent) else float(exponent)
    return base ** exp


def float_power_(self, exponent):
    if self.dtype != float64:
        raise RuntimeError(f"float_power_: the base given to float_power_ has dtype {self.dtype} "
                           "but the operation's result requires dtype float64")
    return self.copy_(float_power(self, exponent))


def polygamma(self, n):
    """The n-th derivative of digamma (Tensor.polygamma(n); torch.polygamma(n, x))."""
    n = int(n)
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    if n == 0:
        return _C.digamma(self)
    return _C.special_zeta(float(n + 1), self) * float((-1) ** (n + 1) * _math.factorial(n))


def polygamma_(self, n):
    return self.copy_(polygamma(self, n))


def positive(self):
    if self.dtype == bool_:
        raise TypeError("The `+` operator, on a bool tensor is not supported.")
    return self


def ldexp(self, other):
    """self * 2**other."""
    return self * (_C.exp2(other) if _is_t(other) else 2.0 ** other)


def ldexp_(self, other):
    return self.mul_(_C.exp2(other) if _is_t(other) else 2.0 ** other)


def div(self, other, *, rounding_mode=None):
    """self / other; rounding_mode 'floor' is floor_divide, 'trunc' rounds toward zero
    (integers stay integers under both, as PyTorch's)."""
    if rounding_mode is None:
        return _c_div(self, other)
    if rounding_mode == "floor":
        return _C.floor_divide(self, other)
    if rounding_mode == "trunc":
        if (self.dtype.is_floating_point or (_is_t(other) and other.dtype.is_floating_point)
                or isinstance(other, float)):
            return _C.trunc(_c_div(self, other))
        return _C.floor_divide(self - _C.fmod(self, other), other)  # exact for integers
    raise ValueError("div expected rounding_mode to be one of None, 'trunc', or 'floor' but "
                     f"found '{rounding_mode}'")


def div_(self, other, *, rounding_mode=None):
    if rounding_mode is None:
        return _c_div_(self, other)
    return self.copy_(div(self, other, rounding_mode=rounding_mode))


# ---- more of PyTorch's pointwise list, composed of rows ---------------------------------------

def angle(self):
    """The argument of a real number: 0 for x >= 0, pi for x < 0 (NaN stays NaN); of a
    complex one atan2(imag, real) (_tensor/complex.py)."""
    if self.dtype.is_complex:
        return _complex.angle(self)
    x = self if self.dtype.is_floating_point else self.to("float32")
    keep_nan = _C.where(x != x, x, 0.0)  # a number meets x's dtype, not float32
    return _C.where(x < 0, _math.pi, keep_nan)


def _real_identity(self):
    """conj, conj_physical, resolve_conj, resolve_neg: a real tensor is its own conjugate;
    a complex one's conj and conj_physical write the conjugate (pygpu has no lazy conj bit,
    so resolve_conj returns the tensor itself)."""
    return self


def _conj(self):
    return _complex.conj(self)


def mvlgamma(self, p):
    """The multivariate log-gamma function of dimension p (special.multigammaln):
    p(p-1)/4 log(pi) + sum_j lgamma(x - j/2), j = 0 .. p-1."""
    p = int(p)
    if p < 1:
        raise ValueError("multigammaln: p has to be greater than or equal to 1")
    out = _C.lgamma(self)
    for j in range(1, p):
        out = out + _C.lgamma(self - j / 2.0)
    return out + p * (p - 1) / 4.0 * _math.log(_math.pi)


def mvlgamma_(self, p):
    return self.copy_(mvlgamma(self, p))


def igamma(self, other):
    """The regularized lower incomplete gamma function P(self, other) (float64 internally)."""
    return _incomplete_gamma(self, other, upper=False)


def igammac(self, other):
    """The regularized upper incomplete gamma function Q(self, other) = 1 - P, computed as
    itself in its upper tail (where 1 - P would lose every digit)."""
    return _incomplete_gamma(self, other, upper=True)


def _incomplete_gamma(self, other, upper):
    from ..distributions.gamma_sampling import regularized_gamma_p, regularized_gamma_q
    a, x = _broadcast_pair(self, other)
    dt = a.dtype if a.dtype.is_floating_point else "float32"
    a64, x64 = a.to("float64"), x.to("float64")
    pos = x64 > 0
    fn = regularized_gamma_q if upper else regularized_gamma_p
    r = fn(a64, _C.where(pos, x64, 1.0))
    r = _C.where(pos, r, 1.0 if upper else 0.0)
    r = _C.where((a64 <= 0) | (x64 < 0) | (a64 != a64) | (x64 != x64), float("nan"), r)
    return r.to(dt)


def _broadcast_pair(a, b):
    from ..distributions.distribution import broadcast_all
    return broadcast_all(a, b)


_c_round, _c_round_ = Tensor.round, Tensor.round_


def round(self, *, decimals=0):  # noqa: A001 - PyTorch's name
    """x rounded to `decimals` decimal places (halves to even), as PyTorch: round(x * 10^d)
    / 10^d (a negative d rounds to tens, hundreds...)."""
    if decimals == 0:
        return _c_round(self)
    scale = 10.0 ** decimals
    return _c_round(self * scale) / scale


def round_(self, *, decimals=0):
    if decimals == 0:
        return _c_round_(self)
    return self.copy_(round(self, decimals=decimals))


def frexp(self):
    """(mantissa, exponent) with x = mantissa * 2**exponent, 0.5 <= |mantissa| < 1 (0, inf
    and NaN keep exponent 0 and mantissa x), as PyTorch's (int64 exponent: pygpu has no
    int32)."""
    import collections
    x = self
    finite = _C.isfinite(x) & (x != 0)
    a = _C.where(finite, x.abs(), 1.0)
    e = _C.floor(_C.log2(a)) + 1.0
    m = x / _C.exp2(e)
    # log2 may round an exact power of two up or down: one correction step either way
    big = m.abs() >= 1.0
    e = _C.where(big, e + 1.0, e)
    m = _C.where(big, m * 0.5, m)
    small = (m.abs() < 0.5) & finite
    e = _C.where(small, e - 1.0, e)
    m = _C.where(small, m * 2.0, m)
    t = collections.namedtuple("frexp", ["mantissa", "exponent"])
    return t(_C.where(finite, m, x), _C.where(finite, e, 0.0).to("int64"))


METHODS = {
    "logit": logit, "logit_": logit_, "nan_to_num": nan_to_num, "nan_to_num_": nan_to_num_,
    "lerp": lerp, "lerp_": lerp_, "addcmul": addcmul, "addcmul_": addcmul_,
    "addcdiv": addcdiv, "addcdiv_": addcdiv_, "clamp_min": clamp_min,
    "clamp_min_": clamp_min_, "clamp_max": clamp_max, "clamp_max_": clamp_max_,
    "float_power": float_power, "float_power_": float_power_, "polygamma": polygamma,
    "polygamma_": polygamma_, "positive": positive, "ldexp": ldexp, "ldexp_": ldexp_,
    "div": div, "div_": div_, "divide": div, "divide_": div_, "angle": angle,
    "conj": _conj, "conj_physical": _conj, "resolve_conj": _real_identity,
    "resolve_neg": _real_identity, "mvlgamma": mvlgamma, "mvlgamma_": mvlgamma_,
    "igamma": igamma, "igammac": igammac, "round": round, "round_": round_, "frexp": frexp,
}


def methods():
    """METHODS and the rows' other spellings (_aliases), for _tensor_surface.install()."""
    out = _aliases()
    out.update(METHODS)
    return out


def _polygamma_fn(n, input, *, out=None):
    r = polygamma(input, n)
    return r if out is None else out.copy_(r)


def _float_power_fn(input, exponent):
    return float_power(input, exponent)


# module functions whose first argument is not the tensor, or that torch spells differently
FUNCTIONS = {"polygamma": _polygamma_fn, "float_power": _float_power_fn}
# module functions that are the methods above (pygpu.lerp(x, end, w) is x.lerp(end, w))
AS_FUNCTIONS = ("logit", "nan_to_num", "nan_to_num_", "lerp", "addcmul", "addcdiv",
                "clamp_min", "clamp_min_", "clamp_max", "clamp_max_", "positive", "ldexp",
                "div", "divide", "true_divide", "logit_", "angle", "conj", "conj_physical",
                "resolve_conj", "resolve_neg", "mvlgamma", "igamma", "igammac", "round",
                "frexp")
