"""The random samplers, as PyTorch's Tensor methods and torch functions: uniform_, normal_,
bernoulli_, random_, exponential_, cauchy_, log_normal_, geometric_, bernoulli, normal,
multinomial (the method; the function is pygpu.distributions.discrete's).

Each draws uniform or normal numbers on the tensor's own device from Philox (the device's
generator, or generator=: pygpu/_random.py), transforms them there with tensor ops (the
inverse CDF of the distribution) and writes them with copy_, so a sampler moves no data
between host and device. The draws are in float32 (float64 for a float64 tensor) and round
once into self's dtype. PyTorch's checks and messages, with its exception types."""
import math

from . import _dtype, _tensor_create

Tensor = _tensor_create.Tensor


def _work_dtype(t):
    return _dtype.float64 if t.dtype is _dtype.float64 else _dtype.float32


def _uniform(t, generator, dtype=None):
    return _tensor_create.rand(*t.shape, dtype=dtype or _work_dtype(t), device=t.device,
                               generator=generator)


def _normal(t, generator):
    return _tensor_create.randn(*t.shape, dtype=_work_dtype(t), device=t.device,
                                generator=generator)


def _float_only(t, kernel):
    if not t.dtype.is_floating_point:
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{_type_word(t.dtype)}'")


def _continuous_only(t, name):
    if not t.dtype.is_floating_point:
        raise RuntimeError(f"{name} distribution is a continuous probability distribution. "
                           f"dtype must be a floating point but you specified "
                           f"{_type_word(t.dtype)}")


def _type_word(dt):
    """PyTorch's scalar type names in its kernel messages ('Long', 'Float', ...)."""
    return {"int64": "Long", "bool": "Bool", "float32": "Float", "float64": "Double",
            "float16": "Half", "bfloat16": "BFloat16", "int32": "Int", "int16": "Short",
            "int8": "Char", "uint8": "Byte"}.get(dt.name, dt.name)


def uniform_(self, a=0.0, b=1.0, *, generator=None, **kwargs):
    """Fill with samples of U(a, b), in place; returns self (PyTorch's from=, to= too)."""
    a, b = kwargs.pop("from", a), kwargs.pop("to", b)
    _no_more(kwargs, "uniform_")
    _float_only(self, "check_uniform_bounds")
    if not a <= b:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={a} "
                           f"> to={b}")
    return self.copy_(_uniform(self, generator) * float(b - a) + float(a))


def normal_(self, mean=0.0, std=1.0, *, generator=None):
    """Fill with samples of N(mean, std**2), in place; returns self."""
    _float_only(self, "normal_kernel_cpu")
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    return self.copy_(_normal(self, generator) * float(std) + float(mean))


def _probability(p, where):
    if isinstance(p, Tensor):
        return p
    if not 0 <= p <= 1:
        raise RuntimeError(f"{where} expects p to be in [0, 1], but got p={p}")
    return float(p)


def bernoulli_(self, p=0.5, *, generator=None):
    """Fill with 1 where U(0, 1) < p and 0 elsewhere, in place; p a number or a tensor of
    probabilities that broadcasts to self; returns self (any dtype, as PyTorch's)."""
    p = _probability(p, "bernoulli_")
    if isinstance(p, Tensor):
        _check_probabilities(p)
        p = p.to(device=self.device)
    return self.copy_(_uniform(self, generator) < p)


def _check_probabilities(p):
    if p.numel() and not bool(((p >= 0) & (p <= 1)).all()):
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")


def bernoulli(input, p=None, *, generator=None, out=None):
    """A 0/1 tensor of input's shape and dtype: 1 with probability input (each element), or
    with probability p when p is given (torch.bernoulli(input, p))."""
    if p is None:
        if not input.dtype.is_floating_point:
            raise NotImplementedError(f'"bernoulli_tensor_cpu_p_" not implemented for '
                                      f"'{_type_word(input.dtype)}'")
        _check_probabilities(input)
        u = _uniform(input, generator, _work_dtype(input))
        result = (u < input.detach()).to(input.dtype)
    else:
        result = _tensor_create.empty(*input.shape, dtype=input.dtype, device=input.device)
        bernoulli_(result, p, generator=generator)
    return result if out is None else out.copy_(result)


def random_(self, *args, generator=None, **kwargs):
    """random_(), random_(to), random_(from, to): integers uniform over [from, to) (from 0;
    with no `to`, up to the dtype's largest exactly representable integer, as PyTorch's)."""
    lo, hi = _random_range(self, args, kwargs)
    span = hi - lo
    if span <= 2 ** 53:  # one float64 draw per element gives every value exactly
        u = _uniform(self, generator, _dtype.float64)
        ints = (u * float(span)).floor().to(_dtype.int64)
    else:  # 64 random bits from two draws (exact 32-bit halves), then the remainder
        hi32 = (_uniform(self, generator, _dtype.float64) * 2.0 ** 31).floor().to(_dtype.int64)
        lo32 = (_uniform(self, generator, _dtype.float64) * 2.0 ** 32).floor().to(_dtype.int64)
        ints = hi32 * (2 ** 32) + lo32  # uniform over [0, 2**63)
        ints = ints if span == 2 ** 63 else ints.remainder(span)
    return self.copy_(ints + lo if lo else ints)


def _random_range(t, args, kwargs):
    lo, hi = 0, None
    if "from" in kwargs:
        lo = kwargs.pop("from")
    if "to" in kwargs:
        hi = kwargs.pop("to")
    _no_more(kwargs, "random_")
    if len(args) == 1:
        hi = args[0]
    elif len(args) == 2:
        lo, hi = args
    elif args:
        raise TypeError(f"random_() takes at most 2 positional arguments ({len(args)} given)")
    if hi is None:
        hi = {"bool": 2, "float16": 2 ** 11 + 1, "bfloat16": 2 ** 8 + 1, "float32": 2 ** 24 + 1,
              "float64": 2 ** 53 + 1}.get(t.dtype.name, 2 ** 63)
        if lo >= hi:
            raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got "
                               f"from={lo} >= to={hi}")
    elif not lo < hi:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={lo} "
                           f">= to={hi}")
    return int(lo), int(hi)


def exponential_(self, lambd=1.0, *, generator=None):
    """Fill with samples of Exp(lambd): -log(1 - U) / lambd."""
    _continuous_only(self, "Exponential")
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    u = _uniform(self, generator)
    return self.copy_((-u).log1p() * (-1.0 / float(lambd)))


def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    """Fill with samples of Cauchy(median, sigma): median + sigma * tan(pi * (U - 1/2))."""
    _continuous_only(self, "Cauchy")
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    u = _uniform(self, generator)
    return self.copy_(((u - 0.5) * math.pi).tan() * float(sigma) + float(median))


def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    """Fill with exp(N(mean, std**2)) samples."""
    _continuous_only(self, "LogNormal")
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    return self.copy_((_normal(self, generator) * float(std) + float(mean)).exp())


def geometric_(self, p, *, generator=None):
    """Fill with the number of Bernoulli(p) trials up to the first success (1, 2, ...):
    ceil(log(1 - U) / log(1 - p)), any dtype."""
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    u = _uniform(self, generator, _dtype.float64)
    trials = ((-u).log1p() / math.log1p(-p)).ceil().clamp(min=1.0)
    return self.copy_(trials)


def normal(mean, std=1.0, size=None, *, generator=None, out=None, dtype=None, device=None,
           requires_grad=False, layout=None, pin_memory=False):
    """torch.normal: normal(mean_tensor, std_tensor), normal(mean_tensor, std=1.0),
    normal(mean, std_tensor), or normal(mean, std, size) of numbers. Tensor arguments
    broadcast; the draws are made on their device."""
    m_t, s_t = isinstance(mean, Tensor), isinstance(std, Tensor)
    if not (m_t or s_t):
        if size is None:
            raise TypeError("normal() received an invalid combination of arguments: with a "
                            "number mean and std, give size")
        if std < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
        result = _tensor_create.empty(*_tensor_create.shape_args("normal", (size,)),
                                      dtype=dtype, device=device)
        result = normal_(result, mean, std, generator=generator)
        return _finish(result, out, requires_grad)
    like = mean if m_t else std
    if s_t and std.numel() and bool((std < 0).any()):
        raise RuntimeError("normal expects all elements of std >= 0.0")
    m = mean.detach() if m_t else mean
    s = std.detach() if s_t else std
    shape = _broadcast_shape(tuple(getattr(m, "shape", ())), tuple(getattr(s, "shape", ())))
    z = _tensor_create.randn(*shape, dtype=_work_dtype(like), device=like.device,
                             generator=generator)
    result = (z * s + m).to(like.dtype)
    return _finish(result, out, requires_grad)


def _broadcast_shape(a, b):
    """The shape two operands broadcast to, or PyTorch's RuntimeError."""
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    out = []
    for k, (x, y) in enumerate(zip(a, b)):
        if x != y and 1 not in (x, y):
            raise RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b "
                               f"({y}) at non-singleton dimension {k}")
        out.append(y if x == 1 else x)
    return tuple(out)


def _finish(result, out, requires_grad):
    if out is not None:
        return out.copy_(result)
    return result.requires_grad_(True) if requires_grad else result


def multinomial(self, num_samples, replacement=False, *, generator=None):
    from .distributions.discrete import multinomial as draw
    return draw(self, num_samples, replacement, generator=generator)


def _no_more(kwargs, fn):
    if kwargs:
        raise TypeError(f"{fn}() got an unexpected keyword argument {next(iter(kwargs))!r}")


def _bernoulli_method(self, p=None, *, generator=None):
    return bernoulli(self, p, generator=generator)


_bernoulli_method.__name__ = "bernoulli"
METHODS = {"uniform_": uniform_, "normal_": normal_, "bernoulli_": bernoulli_,
           "bernoulli": _bernoulli_method, "random_": random_, "exponential_": exponential_, "cauchy_": cauchy_,
           "log_normal_": log_normal_, "geometric_": geometric_, "multinomial": multinomial}

FUNCTIONS = {"bernoulli": bernoulli, "normal": normal}
