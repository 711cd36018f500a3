"""The random samplers, as PyTorch's Tensor methods and torch functions: uniform_, normal_,
bernoulli_, random_, exponential_, cauchy_, log_normal_, geometric_, bernoulli, normal,
poisson, binomial, multinomial (the method; the function is pygpu.distributions.discrete's).
poisson and binomial are PyTorch's algorithms (inversion for small means; PTRS and BTRS
rejection otherwise), run on whole tensors: each rejection round draws for every element
and reads back one flag.

Each draws uniform or normal numbers on the tensor's own device from Philox (the device's
generator, or generator=: pygpu/_random.py), transforms them there with tensor ops (the
inverse CDF of the distribution) and writes them with copy_, so a sampler moves no data
between host and device. The draws are in float32 (float64 for a float64 tensor) and round
once into self's dtype. PyTorch's checks and messages, with its exception types."""
import math

from .. import _C, _dtype
from . import create as _tensor_create

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
    from ..distributions.discrete import multinomial as draw
    return draw(self, num_samples, replacement, generator=generator)


def _rounds(pending, draw):
    """Rejection sampling on whole tensors: draw(mask) -> (accepted, value) for every
    element; rounds go on while any element is pending (one flag read back a round)."""
    result = None
    while bool(pending.any()):
        accepted, value = draw(pending)
        take = pending & accepted
        result = value if result is None else _C.where(take, value, result)
        pending = pending & ~accepted
    return result


def _draws(shape, like, generator):
    return _tensor_create.rand(*shape, dtype=_dtype.float64, device=like.device,
                               generator=generator)


def _poisson_small(lam, generator):
    """Inversion by sequential search, for rates below 10 (a few rounds)."""
    u = _draws(lam.shape, lam, generator)
    k = lam * 0.0
    p = (-lam).exp()
    cdf = p
    active = u > cdf
    while bool(active.any()):
        k = k + active.astype(_dtype.float64)
        p = _C.where(active, p * lam / _C.maximum(k, _tensor_create.ones(
            (), dtype=_dtype.float64, device=lam.device)), p)
        cdf = cdf + p * active.astype(_dtype.float64)
        active = active & (u > cdf) & (k < 10000)
    return k


def _poisson_ptrs(lam, generator):
    """Hormann's transformed rejection with squeeze (PTRS), for rates of 10 and more."""
    slam, loglam = lam.sqrt(), lam.log()
    b = slam * 2.53 + 0.931
    a = b * 0.02483 - 0.059
    invalpha = 1.1328 / (b - 3.4) + 1.1239
    vr = 0.9277 - 3.6224 / (b - 2)

    def draw(pending):
        u = _draws(lam.shape, lam, generator) - 0.5
        v = _draws(lam.shape, lam, generator)
        us = 0.5 - u.abs()
        k = ((a * 2.0 / us + b) * u + lam + 0.43).floor()
        quick = (us >= 0.07) & (v <= vr)
        bad = (k < 0) | ((us < 0.013) & (v > us))
        lhs = v.log() + invalpha.log() - (a / (us * us) + b).log()
        rhs = -lam + k * loglam - (k + 1).clamp(min=1.0).lgamma()
        return quick | (~bad & (lhs <= rhs)), k
    return _rounds(lam >= 10, draw)


def poisson(input, generator=None):
    """A Poisson(rate) draw per element of the rates `input` (inversion below 10, PTRS from
    10), in input's dtype, on its device."""
    lam = input.detach().astype(_dtype.float64)
    if lam.numel() and bool((lam < 0).any()):
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    if lam.numel() == 0:
        return input.detach().clone()
    small = _poisson_small(_C.where(lam < 10, lam, lam * 0.0), generator)
    out = small
    if bool((lam >= 10).any()):
        big = _poisson_ptrs(_C.where(lam >= 10, lam, lam * 0.0 + 10.0), generator)
        out = _C.where(lam >= 10, big, small)
    return out.astype(input.dtype)


def _binomial_inversion(n, p, generator):
    """Counting geometric waiting times, for n * min(p, 1-p) below 10."""
    logq = (-p).log1p()
    total = n * 0.0
    count = n * 0.0
    active = (n > 0) & (p > 0)
    while bool(active.any()):
        u = _draws(n.shape, n, generator)
        geom = (u.log() / logq).ceil()
        total = total + _C.where(active, geom, total * 0.0)
        done = total > n
        count = count + (active & ~done).astype(_dtype.float64)
        active = active & ~done
    return count


def _binomial_btrs(n, p, generator):
    """Kachitvichyanukul and Schmeiser's BTRS, for n * min(p, 1-p) of 10 and more."""
    q = 1.0 - p
    spq = (n * p * q).sqrt()
    b = spq * 2.53 + 1.15
    a = b * 0.0248 + p * 0.01 - 0.0873
    c = n * p + 0.5
    vr = 0.92 - 4.2 / b
    alpha = (5.1 / b + 2.83) * spq
    lpq = (p / q).log()
    m = ((n + 1) * p).floor()
    h = (m + 1).lgamma() + (n - m + 1).lgamma()

    def draw(pending):
        u = _draws(n.shape, n, generator) - 0.5
        v = _draws(n.shape, n, generator)
        us = 0.5 - u.abs()
        k = ((a * 2.0 / us + b) * u + c).floor()
        out_of_range = (k < 0) | (k > n)
        quick = (us >= 0.07) & (v <= vr)
        lv = (v * alpha / (a / (us * us) + b)).log()
        kk = k.clamp(min=0.0)
        rest = lv <= h - (kk + 1).lgamma() - (n - kk + 1).clamp(min=1.0).lgamma() + \
            (kk - m) * lpq
        return ~out_of_range & (quick | rest), k
    return _rounds(n * _C.minimum(p, q) >= 10, draw)


def binomial(count, prob, generator=None):
    """A Binomial(count, prob) draw per element (inversion, or BTRS where count * min(prob,
    1 - prob) >= 10), in count's dtype, on its device."""
    n = count.detach().astype(_dtype.float64)
    pr = prob.detach().astype(_dtype.float64)
    n, pr = n + pr * 0.0, pr + n * 0.0  # broadcast
    if pr.numel() and bool(((pr < 0) | (pr > 1)).any()):
        raise RuntimeError("binomial: the probabilities must be in [0, 1]")
    flip = pr > 0.5
    ps = _C.where(flip, 1.0 - pr, pr)
    big = n * ps >= 10
    out = _binomial_inversion(_C.where(big, n * 0.0, n), ps, generator)
    if bool(big.any()):
        safe_n = _C.where(big, n, n * 0.0 + 100.0)
        safe_p = _C.where(big, ps, ps * 0.0 + 0.5)
        out = _C.where(big, _binomial_btrs(safe_n, safe_p, generator), out)
    out = _C.where(flip, n - out, out)
    return out.astype(count.dtype)


def _no_more(kwargs, fn):
    if kwargs:
        raise TypeError(f"{fn}() got an unexpected keyword argument {next(iter(kwargs))!r}")


def _bernoulli_method(self, p=None, *, generator=None):
    return bernoulli(self, p, generator=generator)


_bernoulli_method.__name__ = "bernoulli"
METHODS = {"uniform_": uniform_, "normal_": normal_, "bernoulli_": bernoulli_,
           "bernoulli": _bernoulli_method, "random_": random_, "exponential_": exponential_, "cauchy_": cauchy_,
           "log_normal_": log_normal_, "geometric_": geometric_, "multinomial": multinomial}

FUNCTIONS = {"bernoulli": bernoulli, "normal": normal, "poisson": poisson,
             "binomial": binomial}
