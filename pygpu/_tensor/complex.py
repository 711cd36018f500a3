"""Complex tensors: complex64 and complex128 arithmetic composed from real ops on the
tensors' (real, imaginary) views, and PyTorch's complex names (real, imag, conj, angle,
view_as_real, view_as_complex, complex, polar, is_complex).

The C core stores complex tensors and copies, casts and fills them through their real
views (csrc/core/pg_ops_complex.c), but no backend has complex kernels: the bindings send
every elementwise op, reduction, where and product with a complex operand here (the
"complex" hook, csrc/bindings/complex.c), and each rule below is a few real ops on the
views, so a rule runs unchanged on cpu, sim and cuda. A product is one real GEMM: A's pairs
(m, 2k) times the real block matrix [[br, bi], [-bi, br]] of B (2k, 2n) gives C's pairs
(m, 2n), with cgemm's 8 flops per complex multiply-add. Ops PyTorch refuses on complex
tensors raise PyTorch's NotImplementedError/RuntimeError words.

Autograd needs no complex rule of its own: the views between a complex tensor and its real
pairs (view_as_real, view_as_complex, real, imag) are recorded Functions, and everything
else is real ops on them, which record themselves. The gradient that reaches a complex
tensor is then that of its pairs, dL/dre + i dL/dim for a real loss L: PyTorch's convention
(the conjugate Wirtinger derivative, times two). Where a formula's untaken branch would
send 0 * inf = NaN into a gradient (division, sqrt, abs and angle at a zero part), the rule
keeps it finite with a second where, and the gradient there is the one PyTorch's formula
gives (tests/test_complex_autograd.py)."""
import builtins as _builtins

from .. import _C, _defaults, _dtype
from . import complex32 as _c32
from .._C import Tensor
from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled

# PyTorch's names of the complex dtypes in its messages
_TORCH_NAME = {"complex64": "ComplexFloat", "complex128": "ComplexDouble",
               "complex32": "ComplexHalf"}


def _torch_name(dtype):
    return _TORCH_NAME.get(dtype.name, dtype.name)


def _needs_grad(*xs):
    for x in xs:
        if isinstance(x, Tensor) and x.requires_grad:
            return is_grad_enabled()
    return False


def pair_layout(g):
    """g (..., 2) in the layout view_as_complex takes (last stride 1, the others and the
    offset even): g itself when it has it, else a contiguous copy."""
    st = g.strides
    if st[-1] == 1 and _C._storage_offset(g) % 2 == 0 and all(v % 2 == 0 for v in st[:-1]):
        return g
    g = g.contiguous()
    return g if _C._storage_offset(g) % 2 == 0 else g.clone()


# The four views between a complex tensor and its real pairs, as autograd Functions: each
# backward is the view back (itself recorded), so gradients of every order flow through.
# Not marked as views of their input (view=False): a base and a view of another dtype have
# no common element geometry for views.py's rebasing (docs/autograd.md says so).
class ViewAsReal(Function):
    @staticmethod
    def forward(ctx, z):
        return _C._view_as_real(z)

    @staticmethod
    def backward(ctx, g):
        return view_as_complex(pair_layout(g))


class ViewAsComplex(Function):
    @staticmethod
    def forward(ctx, x):
        return _C._view_as_complex(x)

    @staticmethod
    def backward(ctx, g):
        return view_as_real(g)


class Real(Function):
    @staticmethod
    def forward(ctx, z):
        ctx.dtype = z.dtype
        return _C._complex_part(z, False)

    @staticmethod
    def backward(ctx, g):  # g + 0i
        return _pairs(g, 0.0, ctx.dtype)


class Imag(Function):
    @staticmethod
    def forward(ctx, z):
        ctx.dtype = z.dtype
        return _C._complex_part(z, True)

    @staticmethod
    def backward(ctx, g):  # 0 + gi
        return _pairs(0.0, g, ctx.dtype)


def view_as_real(input):
    """PyTorch's view_as_real: a complex tensor's (real, imaginary) pairs as a trailing axis
    of 2, sharing its memory."""
    if _needs_grad(input):
        return ViewAsReal.apply(input)
    return _C._view_as_real(input)


def view_as_complex(input):
    """PyTorch's view_as_complex: a float32/float64 tensor whose last axis is 2 (stride 1) as
    complex64/complex128, sharing its memory."""
    if _needs_grad(input):
        return ViewAsComplex.apply(input)
    return _C._view_as_complex(input)


def real(input):
    """Tensor.real: a view of the real parts of a complex tensor; a real tensor itself."""
    if not input.dtype.is_complex:
        return input
    return Real.apply(input) if _needs_grad(input) else _C._complex_part(input, False)


def imag(input):
    """Tensor.imag: a view of the imaginary parts; PyTorch refuses it on a real tensor."""
    if not input.dtype.is_complex:
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return Imag.apply(input) if _needs_grad(input) else _C._complex_part(input, True)


def _pairs(re, im, dtype):
    """A new complex tensor of dtype from its parts (tensors or numbers, broadcast)."""
    part = dtype.to_real()
    like = re if isinstance(re, Tensor) else im
    re = re if isinstance(re, Tensor) else _C._full((), re, part, like.device)
    im = im if isinstance(im, Tensor) else _C._full((), im, part, like.device)
    shape = _broadcast(re.shape, im.shape)
    if _needs_grad(re, im):  # one recorded stack: its gradient splits back into the parts
        from .join import stack
        re = re if re.dtype is part else re.to(part)
        im = im if im.dtype is part else im.to(part)
        return view_as_complex(stack([re.expand(shape), im.expand(shape)], -1))
    out = _C._full(shape, None, dtype, like.device)
    _C._complex_part(out, False).copy_(re)
    _C._complex_part(out, True).copy_(im)
    return out


def _broadcast(a, b):
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b):
        if x != y and 1 not in (x, y):
            raise RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b "
                               f"({y}) at non-singleton dimension {len(out)}")
        out.append(y if x == 1 else x)
    return tuple(out)


def _parts(x):
    """(real, imaginary) real views of a complex tensor (recorded when x requires grad)."""
    if _needs_grad(x):
        return Real.apply(x), Imag.apply(x)
    return _C._complex_part(x, False), _C._complex_part(x, True)


def _as_complex(x, dtype, device):
    """x (a tensor or a Python number) as a complex tensor of dtype on device."""
    if isinstance(x, Tensor):
        return x if x.dtype is dtype else x.to(dtype)
    c = _builtins.complex(x)
    t = _C._full((), None, dtype, device)
    _C._fill_complex(t, c.real, c.imag)
    return t


def complex(real, imag):
    """torch.complex(real, imag): a complex tensor from float32/float64 parts of one dtype."""
    if not (isinstance(real, Tensor) and isinstance(imag, Tensor)):
        raise TypeError("complex(): argument 'real' and 'imag' must be Tensors")
    for t in (real, imag):
        if t.dtype not in (_dtype.float32, _dtype.float64, _dtype.float16):
            raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but "
                               f"got {_dtype_word(real.dtype)} and {_dtype_word(imag.dtype)}")
    if real.dtype is not imag.dtype:
        raise RuntimeError(f"Expected object of scalar type {_dtype_word(real.dtype)} but got "
                           f"scalar type {_dtype_word(imag.dtype)} for second argument")
    if real.device != imag.device:
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at "
                           f"least two devices, {real.device} and {imag.device}!")
    return _pairs(real, imag, real.dtype.to_complex())


def polar(abs, angle):
    """torch.polar(abs, angle): abs * (cos(angle) + i sin(angle))."""
    c = complex(abs, angle)  # the same checks as complex()
    return _pairs(abs * _C.cos(angle), abs * _C.sin(angle), c.dtype)


def _dtype_word(d):
    return {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long",
            "int32": "Int", "bool": "Bool", "complex64": "ComplexFloat",
            "complex128": "ComplexDouble"}.get(d.name, d.name)


def conj(input):
    """Tensor.conj: the complex conjugate (pygpu materializes it: is_conj() stays False);
    a real tensor is its own."""
    if not input.dtype.is_complex:
        return input
    re, im = _parts(input)
    return _pairs(re, -im, input.dtype)


def is_conj(input):
    """PyTorch's lazy-conjugation bit: pygpu's conj() writes the conjugate, so never set."""
    return False


def angle(input):
    """The argument atan2(imag, real) of a complex tensor, in its real dtype (its gradient
    at 0 is 0, as PyTorch's: atan2's would be 0/0 there)."""
    re, im = _parts(input)
    out = _C.atan2(im, re)
    if not _needs_grad(input):
        return out
    zero = (re == 0) & (im == 0)
    return _C.where(zero, out.detach(), _C.atan2(im, _C.where(zero, 1.0, re)))


def abs(input):
    """|z| = hypot(re, im); under autograd its gradient at 0 is 0 (PyTorch's sgn(0))."""
    re, im = _parts(input)
    if not _needs_grad(input):
        return _C.hypot(re, im)
    zero = (re == 0) & (im == 0)
    return _C.where(zero, 0.0, _C.hypot(_C.where(zero, 1.0, re), im))


# ---- elementwise rules on the real views ------------------------------------------------

def _add(a, b, dtype):
    return view_as_complex(view_as_real(a) + view_as_real(b))


def _sub(a, b, dtype):
    return view_as_complex(view_as_real(a) - view_as_real(b))


def _mul(a, b, dtype):
    ar, ai = _parts(a)
    br, bi = _parts(b)
    return _pairs(ar * br - ai * bi, ar * bi + ai * br, dtype)


def _div(a, b, dtype):
    # Smith's scaling (as c10's complex division): no overflow from |b|**2. Each ratio's
    # divisor is 1 where its branch is not taken, so no 0/0 reaches a gradient
    ar, ai = _parts(a)
    br, bi = _parts(b)
    big = _C.abs(br) >= _C.abs(bi)
    r = _C.where(big, bi / _C.where(big, br, 1.0), br / _C.where(big, 1.0, bi))
    den = _C.where(big, br + bi * r, bi + br * r)
    re = _C.where(big, ar + ai * r, ar * r + ai) / den
    im = _C.where(big, ai - ar * r, ai * r - ar) / den
    return _pairs(re, im, dtype)


def _pow(a, b, dtype):
    return _exp(_mul(b, _log(a, dtype), dtype), dtype)


def _eq(a, b, dtype):
    ar, ai = _parts(a)
    br, bi = _parts(b)
    return (ar == br) & (ai == bi)


def _ne(a, b, dtype):
    return ~_eq(a, b, dtype)


def _exp(x, dtype=None):
    re, im = _parts(x)
    m = _C.exp(re)
    return _pairs(m * _C.cos(im), m * _C.sin(im), x.dtype)


def _log(x, dtype=None):
    re, im = _parts(x)
    return _pairs(_C.log(_C.hypot(re, im)), _C.atan2(im, re), x.dtype)


def _sqrt(x):
    # the principal root, in the stable form: t = sqrt((|x| + |a|) / 2); for a >= 0 it is
    # t + i b / 2t, else |b| / 2t + i copysign(t, b). |a| and |b| are a and b times their
    # sign (a constant), so their derivative at a zero part is that side's, the one PyTorch's
    # holomorphic formula gives (b = +0 is above the cut); the gradient is finite but at 0
    re, im = _parts(x)
    pos = re >= 0
    t = _C.sqrt((_C.hypot(re, im) + _C.where(pos, re, -re)) * 0.5)
    t2 = _C.where(t == 0, 1.0, t) * 2.0
    abs_im = im * _C.copysign(1.0, im.detach())
    return _pairs(_C.where(pos, t, abs_im / t2), _C.where(pos, im / t2, _C.copysign(t, im)),
                  x.dtype)


def _neg(x):
    return view_as_complex(-view_as_real(x))


def _reciprocal(x):
    return _div(_as_complex(1.0, x.dtype, x.device), x, x.dtype)


def _sin(x):  # sin(a + bi) = sin a cosh b + i cos a sinh b
    re, im = _parts(x)
    return _pairs(_C.sin(re) * _C.cosh(im), _C.cos(re) * _C.sinh(im), x.dtype)


def _cos(x):  # cos(a + bi) = cos a cosh b - i sin a sinh b
    re, im = _parts(x)
    return _pairs(_C.cos(re) * _C.cosh(im), -(_C.sin(re) * _C.sinh(im)), x.dtype)


def _square(x):
    return _mul(x, x, x.dtype)


def _tanh(x):
    # tanh(a + bi) = (sinh 2a + i sin 2b) / (cosh 2a + cos 2b)
    #              = (sinh a cosh a + i sin b cos b) / (sinh^2 a + cos^2 b):
    # the second form has no cancellation near the poles (a = 0, cos b = 0). Beyond |a| = 40
    # the real part is +-1 and the imaginary part below 1e-34 in both dtypes: a is clamped
    # there, so sinh^2 never overflows (float32's would at a > 44) into inf / inf
    re, im = _parts(x)
    a = re.clamp(-40.0, 40.0)
    sa, cb = _C.sinh(a), _C.cos(im)
    den = sa * sa + cb * cb
    return _pairs(sa * _C.cosh(a) / den, _C.sin(im) * cb / den, x.dtype)


def _sigmoid(x):
    # 1 / (1 + exp(-x)) for a >= 0, exp(x) / (1 + exp(x)) for a < 0 (the same function):
    # the exponent's real part is -|a| either way, so nothing overflows, and a tiny sigmoid
    # keeps its relative accuracy; both branches are finite, so no NaN reaches a gradient
    re, im = _parts(x)
    pos = re >= 0
    e = _exp(_pairs(-_C.abs(re), _C.where(pos, -im, im), x.dtype))
    den = _add(e, _as_complex(1.0, x.dtype, x.device), x.dtype)
    return where(pos, _reciprocal(den), _div(e, den, x.dtype))


def _isnan(x):
    re, im = _parts(x)
    return _C.isnan(re) | _C.isnan(im)


def _isinf(x):
    re, im = _parts(x)
    return _C.isinf(re) | _C.isinf(im)


def _isfinite(x):
    re, im = _parts(x)
    return _C.isfinite(re) & _C.isfinite(im)


# the op table's names (pg_ops.def) -> the rules
_BINARY = {"add": _add, "subtract": _sub, "multiply": _mul, "divide": _div, "pow": _pow,
           "equal": _eq, "not_equal": _ne}
_UNARY = {"negative": _neg, "exp": _exp, "log": _log, "sqrt": _sqrt, "abs": abs,
          "reciprocal": _reciprocal, "sin": _sin, "cos": _cos, "square": _square,
          "tanh": _tanh, "sigmoid": _sigmoid,
          "isnan": _isnan, "isinf": _isinf, "isfinite": _isfinite}
# PyTorch's refusals, by op, where its words are not the kernel-name form of refuse()
_REFUSED = {
    "relu": "clamp is not supported for complex types",
    "clamp": "clamp is not supported for complex types",
    "floor": "floor is not supported for complex inputs",
    "ceil": "ceil is not supported for complex inputs",
    "trunc": "trunc is not supported for complex inputs",
    "round": "round is not supported for complex inputs",
    "floor_divide": '"div_floor_cpu" not implemented for \'{t}\'',
    "less": '"lt_cpu" not implemented for \'{t}\'',
    "less_equal": '"le_cpu" not implemented for \'{t}\'',
    "greater": '"gt_cpu" not implemented for \'{t}\'',
    "greater_equal": '"ge_cpu" not implemented for \'{t}\'',
    "max": '"max_all" not implemented for \'{t}\'',
    "min": '"min_all" not implemented for \'{t}\'',
}
_RUNTIME_REFUSED = {"argmax": "argmax(): does not support complex input",
                    "argmin": "argmin(): does not support complex input"}


def refuse(name, dtype):
    """PyTorch's error for an op it does not run on complex tensors."""
    if name in _RUNTIME_REFUSED:
        raise RuntimeError(_RUNTIME_REFUSED[name])
    words = _REFUSED.get(name, '"{n}_cpu" not implemented for \'{t}\'')
    raise NotImplementedError(words.format(n=name, t=_torch_name(dtype)))


def _result_dtype(a, b):
    from .compat import result_type
    return result_type(a, b)


def _device_of(a, b):
    return a.device if isinstance(a, Tensor) else b.device


def _inplace_operands(a, b):
    """The operands an in-place rule computes from under autograd: a copy of a (and of b
    where b is a or sees a's memory). The rule's recorded ops keep views of what they read,
    and a.copy_(r) then writes a, which PyTorch's version check would rightly refuse at
    backward time."""
    x = a.clone()
    if b is a:
        return x, x
    if isinstance(b, Tensor) and _C._same_storage(a, b):
        return x, b.clone()
    return x, b


def _complex32_hook(family, name, a, b, args, kwargs):
    """hook() with a complex32 operand: the ops PyTorch's CPU runs on it, in complex64 and
    rounded back once; its refusals for the rest (pygpu/_tensor/complex32.py)."""
    if family in ("binary", "binary_"):
        dtype = _result_dtype(a, b)
        r = _c32.run(name, lambda x, y: hook("binary", name, x, y, args, kwargs), dtype, a, b)
        return a.copy_(r) if family == "binary_" else r
    if family in ("unary", "unary_"):
        if family == "unary_" and name == "abs":
            raise RuntimeError("In-place abs is not supported for complex tensors.")
        out = _dtype.float16 if name == "abs" else _dtype.complex32
        r = _c32.run(name, lambda x: hook("unary", name, x, None, args, kwargs), out, a)
        return a.copy_(r) if family == "unary_" else r
    if family == "where":
        return _c32.run("where", lambda x, y: where(args[0], x, y), _result_dtype(a, b), a, b)
    _c32.refuse(name if family != "matmul" else "matmul")


def hook(family, name, a, b, args, kwargs):
    """The bindings' entry for an op with a complex operand (csrc/bindings/complex.c)."""
    if _c32.involved(a, b):
        return _complex32_hook(family, name, a, b, args, kwargs)
    target = a if family in ("binary_", "unary_") else None
    if target is not None and _needs_grad(a, b):
        a, b = _inplace_operands(a, b)
    if family in ("binary", "binary_"):
        fn = _BINARY.get(name)
        dtype = _result_dtype(a, b)
        if fn is None or (name not in ("equal", "not_equal") and not dtype.is_complex):
            refuse(name, dtype if dtype.is_complex else _dtype.complex64)
        dev = _device_of(a, b)
        if isinstance(a, Tensor) and isinstance(b, Tensor) and a.device != b.device:
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at "
                               f"least two devices, {a.device} and {b.device}!")
        if name == "pow" and not isinstance(b, Tensor) and b in (1, 2):
            r = _as_complex(a, dtype, dev)
            r = _square(r) if b == 2 else r.clone()
        else:
            r = fn(_as_complex(a, dtype, dev), _as_complex(b, dtype, dev), dtype)
        if target is not None:
            if not target.dtype.is_complex and r.dtype.is_complex:
                raise RuntimeError(f"result type {_torch_name(r.dtype)} can't be cast to the "
                                   f"desired output type {_dtype_word(target.dtype)}")
            return target.copy_(r)
        return r
    if family in ("unary", "unary_"):
        fn = _UNARY.get(name)
        if fn is None:
            refuse(name, a.dtype)
        r = fn(a)
        return target.copy_(r) if target is not None else r
    if family == "reduce":
        return _reduce(name, a, args or (), kwargs or {})
    if family == "matmul":
        return matmul(a, b)
    if family == "where":
        return where(args[0], a, b)
    raise RuntimeError(f"pygpu: no complex rule for {family} {name}")


def _reduce(name, x, args, kwargs):
    if name not in ("sum", "mean"):
        refuse(name, x.dtype)
    kw = dict(kwargs)
    dim = args[0] if args else kw.pop("dim", kw.pop("axis", None))
    keepdim = args[1] if len(args) > 1 else kw.pop("keepdim", kw.pop("keepdims", False))
    if kw:
        raise TypeError(f"{name}() got an unexpected keyword argument {next(iter(kw))!r}")
    nd = x.ndim
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        dims = tuple(range(nd))
    else:
        dims = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
        for d in dims:
            if not -max(nd, 1) <= d < max(nd, 1):
                raise IndexError(f"Dimension out of range (expected to be in range of "
                                 f"[{-max(nd, 1)}, {max(nd, 1) - 1}], but got {d})")
        dims = tuple(d % max(nd, 1) for d in dims) if nd else ()
    pairs = view_as_real(x)
    if not dims:
        r = pairs.clone()
        return view_as_complex(r / 1.0 if name == "mean" else r)
    r = getattr(pairs, name)(dim=dims, keepdim=bool(keepdim))
    return view_as_complex(pair_layout(r))


def matmul(a, b):
    """a @ b with a complex operand: one real GEMM of a's pairs with b's block matrix."""
    dtype = _dtype.promote_types(a.dtype, b.dtype)
    if not dtype.is_complex:
        raise RuntimeError("pygpu: matmul's complex rule needs a complex operand")
    if a.device != b.device:
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least "
                           f"two devices, {a.device} and {b.device}!")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{_torch_words(a.dtype)} != {_torch_words(b.dtype)}")
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{a.ndim}D and {b.ndim}D")
    a2 = a.unsqueeze(0) if a.ndim == 1 else a
    b2 = b.unsqueeze(-1) if b.ndim == 1 else b
    k = a2.shape[-1]
    if b2.shape[-2] != k:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied "
                           f"({a2.shape[-2]}x{k} and {b2.shape[-2]}x{b2.shape[-1]})")
    pa = view_as_real(a2.contiguous())                         # (.., m, k, 2)
    pa = pa.reshape(*a2.shape[:-1], 2 * k)                     # (.., m, 2k): re, im, re, ...
    br, bi = _parts(b2)                                        # (.., k, n) each
    from .join import stack
    top = stack([br, bi], -1)                                  # (.., k, n, 2): row 2p
    bottom = stack([-bi, br], -1)                              # (.., k, n, 2): row 2p+1
    w = stack([top, bottom], -3)                               # (.., k, 2, n, 2)
    n = b2.shape[-1]
    w = w.reshape(*b2.shape[:-2], 2 * k, 2 * n)                # (.., 2k, 2n)
    c = pa @ w                                                 # (.., m, 2n)
    c = view_as_complex(c.reshape(*c.shape[:-1], n, 2))        # (.., m, n)
    if a.ndim == 1:
        c = c.squeeze(-2)
    if b.ndim == 1:
        c = c.squeeze(-1)
    return c


def where(cond, a, b):
    """where(cond, a, b) with a complex operand: one real where of the pairs (cond gains the
    pairs' axis), so the gradient goes to the operand each element came from."""
    dtype = _result_dtype(a, b)
    if not isinstance(cond, Tensor):
        raise TypeError(f"where(): argument 'condition' (position 1) must be Tensor, not "
                        f"{type(cond).__name__}")
    for t in (a, b):
        if isinstance(t, Tensor) and t.device != cond.device:
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at "
                               f"least two devices, {cond.device} and {t.device}!")
    pa = view_as_real(_as_complex(a, dtype, cond.device))
    pb = view_as_real(_as_complex(b, dtype, cond.device))
    return view_as_complex(pair_layout(_C.where(cond.unsqueeze(-1), pa, pb)))


def prod(x, dim, keepdim):
    """The product along dim (every element when dim is None) of a complex tensor: a
    pairwise tree of complex multiplies, log2(n) levels, each recorded like any product."""
    from .create import ones
    from .join import cat
    from .views import norm_dim
    if dim is None:
        y, d = x.reshape(-1), 0
        shape = (1,) * x.ndim if keepdim else ()
    else:
        y = x.reshape(1) if x.ndim == 0 else x
        d = norm_dim("prod", dim, y.ndim)
        shape = None
    y = y.movedim(d, -1)
    n = y.shape[-1]
    if n == 0:
        out = ones(y.shape[:-1], dtype=x.dtype, device=x.device)
    else:
        while n > 1:
            h = n // 2
            p = _mul(y[..., :h], y[..., h:2 * h], x.dtype)
            y = cat([p, y[..., 2 * h:]], -1) if n % 2 else p
            n = h + n % 2
        out = y[..., 0]
    if dim is None:
        return out.reshape(shape)
    if keepdim and x.ndim:
        out = out.unsqueeze(d)
    return out


def on_pairs(fn, x, dim, *args):
    """fn(x, dim, *args), an op that moves whole elements along a non-negative dim
    (index_select, gather's index expanded), run on x's pairs, their axis riding along."""
    return view_as_complex(pair_layout(fn(view_as_real(x), dim, *args)))


def gather(fn, x, dim, index):
    """gather (fn, the real one) of a complex tensor: the index repeated over the pairs."""
    return on_pairs(fn, x, dim, index.unsqueeze(-1).expand(*index.shape, 2).contiguous())


def masked_fill_parts(x, mask, value):
    """x's elements where mask holds set to the number value, in place: one masked fill of
    each part (the real views share x's memory)."""
    c = _builtins.complex(value)
    _C._masked_fill_(_C._complex_part(x, False), mask, c.real)
    _C._masked_fill_(_C._complex_part(x, True), mask, c.imag)


def refuse_sort(x, name="Sort"):
    """PyTorch's refusal to sort complex values (sort, argsort, msort, topk)."""
    where = "CUDA" if x.device.type == "cuda" else "CPU"
    raise RuntimeError(f" {name} does not support complex dtypes on {where}")  # torch's space


def is_complex(input):
    return input.dtype.is_complex


def is_neg(input):
    """PyTorch's lazy-negation bit: never set in pygpu (nothing negates lazily)."""
    return False


def conj_physical_(input):
    """The conjugate written into input (a real tensor is left as it is)."""
    if input.dtype.is_complex:
        im = _C._complex_part(input, True)
        im.copy_(-im)
    return input


METHODS = {
    "real": property(real), "imag": property(imag), "is_conj": is_conj, "is_neg": is_neg,
    "conj_physical_": conj_physical_,
    "is_complex": is_complex, "cfloat": lambda self: self.to(_dtype.complex64),
    "cdouble": lambda self: self.to(_dtype.complex128),
    "chalf": lambda self, memory_format=None: self.to(_dtype.complex32),
}

FUNCTIONS = {"view_as_real": view_as_real, "view_as_complex": view_as_complex, "real": real,
             "imag": imag, "complex": complex, "polar": polar, "is_complex": is_complex,
             "is_conj": is_conj, "is_neg": is_neg, "conj_physical_": conj_physical_,
             "view_as_real_copy": lambda input: view_as_real(input).clone(),
             "view_as_complex_copy": lambda input: view_as_complex(input).clone()}


def default_complex():
    """The complex dtype a Python complex takes: the default dtype's (complex64 unless
    torch.set_default_dtype(torch.float64))."""
    return _defaults.dtype().to_complex()


def _torch_words(d):
    """PyTorch's C++ spelling in matmul's dtype message (c10::complex<float>, float)."""
    return {"complex64": "c10::complex<float>", "complex128": "c10::complex<double>",
            "float32": "float", "float64": "double", "int64": "long int"}.get(d.name, d.name)
