"""Creating tensors, with PyTorch's names and defaults: tensor(), zeros(), ones(), empty(),
full(), arange(), rand(), randn(), manual_seed(), zeros_like(), ones_like(), eye,
linspace, logspace, randint, randperm, full_like, empty_like, rand_like, randn_like, and
the Tensor methods new_zeros, new_ones, new_full, new_empty, new_tensor: the tensor
surface's creation family, in one file at the bottom of the Python layers (autograd's rules
make their zeros here, so this file imports nothing above _C, _defaults and _dtype).

Default dtypes follow PyTorch where NumPy and PyTorch disagree: float32 for
zeros/ones/empty/rand/randn and for Python floats in tensor(); Python ints
give int64, bools give bool; a NumPy array keeps its dtype. Tensors made on
a device are made there (no host buffer, no transfer), except tensor(data,
device=...), whose data starts on the host: that is one counted h2d copy. The composite
ones (eye, linspace, randint, randperm, ...) call these C ops (fill, arange, random,
argsort, the strided view); none loops over elements in Python."""
import functools
import math
import numbers

import numpy as np

from .. import _C, _defaults, _dtype, _random
from . import memory_format as _formats
from .._dtype import bool_, float32, int64, to_dtype

_CPU = "cpu"


_INT64_MAX = 2**63 - 1


def _shape(args, fn, example=None):
    """zeros(2, 3) / zeros((2, 3)) / zeros([2, 3]) -> (2, 3), checking each size is an
    integer that fits in int64 (a negative one is refused by the C core, which names it)."""
    if len(args) == 1 and not isinstance(args[0], numbers.Integral):
        try:
            dims = tuple(args[0])
        except TypeError:
            example = example or f"{fn}(3) or {fn}((2, 3))"
            raise TypeError(f"{fn}(): sizes must be integers, got {args[0]!r} "
                            f"({type(args[0]).__name__}); write e.g. {example}") from None
    else:
        dims = tuple(args)
    for d in dims:
        if not isinstance(d, numbers.Integral):
            raise TypeError(f"{fn}(): sizes must be integers, got {d!r} ({type(d).__name__}) "
                            f"in the shape {dims!r}")
        if d > _INT64_MAX:
            raise ValueError(f"{fn}(): the size {d} is too large: a size must fit in int64 "
                             f"(at most 2**63 - 1)")
    return dims


def _dt(dtype, default):
    """The dtype asked for, else the factory's own default; float32 stands for the default
    dtype, which set_default_dtype may have changed (_defaults.py)."""
    if dtype is not None:
        return to_dtype(dtype)
    return _defaults.dtype() if default is float32 else default


def _dev(device):
    if device is not None:
        return device
    d = _defaults.device()
    return d if d is not None else _CPU


def _size_kw(shape, size):
    """zeros(size=(2, 3)): PyTorch's keyword spelling of the shape."""
    if size is not None:
        if shape:
            raise TypeError("give the shape either as arguments or as size=, not both")
        return (size,)
    return shape


def factory(fn):
    """PyTorch's factory keyword on a creation function: requires_grad=True makes the new
    tensor a leaf that requires grad (torch.randn(5, 3, requires_grad=True))."""
    @functools.wraps(fn)
    def make(*args, requires_grad=False, **kwargs):
        out = fn(*args, **kwargs)
        return out.requires_grad_(True) if requires_grad else out
    return make


@factory
def empty(*shape, size=None, dtype=None, device=None, memory_format=None):
    """An uninitialised tensor (laid out in memory_format: contiguous by default)."""
    dims, dt, dev = _shape(_size_kw(shape, size), "empty"), _dt(dtype, float32), _dev(device)
    if memory_format is None:
        return _C._full(dims, None, dt, dev)
    return _formats.empty_format(dims, memory_format, lambda s: _C._full(s, None, dt, dev))


@factory
def zeros(*shape, size=None, dtype=None, device=None):
    return _C._full(_shape(_size_kw(shape, size), "zeros"), 0, _dt(dtype, float32), _dev(device))


@factory
def ones(*shape, size=None, dtype=None, device=None):
    return _C._full(_shape(_size_kw(shape, size), "ones"), 1, _dt(dtype, float32), _dev(device))


@factory
def full(shape, fill_value, dtype=None, device=None):
    """A tensor filled with fill_value; its dtype follows the value when not given."""
    if dtype is None:
        if isinstance(fill_value, (bool, np.bool_)):
            dtype = bool_
        elif isinstance(fill_value, numbers.Integral):
            dtype = int64
        elif isinstance(fill_value, numbers.Complex) and not isinstance(fill_value, numbers.Real):
            dtype = _defaults.dtype().to_complex()
        else:
            dtype = _defaults.dtype()
    if isinstance(fill_value, np.generic):
        fill_value = fill_value.item()
    dtype = to_dtype(dtype)
    if (dtype is int64 and isinstance(fill_value, numbers.Integral)
            and not -_INT64_MAX - 1 <= fill_value <= _INT64_MAX):
        raise OverflowError(f"full(): the fill value {fill_value} is out of range for int64 "
                            f"(-2**63 to 2**63 - 1); pass dtype=pygpu.float64 to store it as "
                            f"a float")
    if (dtype is _dtype.uint64 and isinstance(fill_value, numbers.Integral)
            and _INT64_MAX < fill_value < 2**64):
        fill_value -= 2**64  # the same bits as int64, which the C core's fill takes
    dims = _shape((shape,), "full", "full((2, 3), value)")
    if dtype.is_complex:  # the pairs filled through the real views
        out = _C._full(dims, None, dtype, _dev(device))
        _C._fill_complex(out, complex(fill_value).real, complex(fill_value).imag)
        return out
    return _C._full(dims, fill_value, dtype, _dev(device))


@factory
def zeros_like(t, dtype=None, device=None, *, memory_format=None):
    dt, dev = dtype or t.dtype, device or t.device
    return _formats.like(t, memory_format, lambda s: zeros(s, dtype=dt, device=dev))


@factory
def ones_like(t, dtype=None, device=None, *, memory_format=None):
    dt, dev = dtype or t.dtype, device or t.device
    return _formats.like(t, memory_format, lambda s: ones(s, dtype=dt, device=dev))


@factory
def arange(start, stop=None, step=1, dtype=None, device=None):
    """Evenly spaced values in [start, stop): int64 for ints, float32 otherwise."""
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise _C.InvalidValueError("step must be nonzero (arange)")
    all_ints = all(isinstance(v, numbers.Integral) for v in (start, stop, step))
    n = max(0, math.ceil((stop - start) / step))
    dt = _dt(dtype, int64 if all_ints else float32)
    if n > _INT64_MAX:
        raise ValueError(f"arange(): {n} elements is too many: a size must fit in int64 "
                         f"(at most 2**63 - 1)")
    if dt._kind in ("sint", "uint") and n:
        # the C core steps in float64, exact for integers up to 2**53 only (a narrower
        # integer dtype is counted in int64 and wraps, as PyTorch's arange does)
        for v in (start, start + (n - 1) * step):
            if not -_INT64_MAX - 1 <= v <= _INT64_MAX:
                raise OverflowError(f"arange(): the value {v} is out of range for int64 "
                                    f"(-2**63 to 2**63 - 1); pass dtype=pygpu.float64")
            if abs(v) > 2**53:
                raise ValueError(f"arange(): the value {v} is past 2**53, where arange's int64 "
                                 f"values would not be exact; make it with NumPy instead: "
                                 f"pygpu.tensor(np.arange(start, stop, step))")
    return _C._arange(float(start), float(step), n, dt, _dev(device))


def _draw(kind, shape, dtype, device, generator):
    """kind a RANDOM row's ID ("UNIFORM", "NORMAL"): at the generator's state (pygpu/_random.py) or, with none,
    the device's."""
    dev = _dev(device)
    at = _random.draw_at(generator, dev, math.prod(shape)) if generator is not None else ()
    if dtype in (_dtype.float16, _dtype.bfloat16):  # drawn in float32, rounded once
        return _C._random(kind, shape, float32, dev, *at).astype(dtype)
    return _C._random(kind, shape, dtype, dev, *at)


@factory
def rand(*shape, size=None, generator=None, dtype=None, device=None):
    """Uniform samples in [0, 1), from the device's Philox generator (or generator=)."""
    return _draw("UNIFORM", _shape(_size_kw(shape, size), "rand"), _dt(dtype, float32), device, generator)


@factory
def randn(*shape, size=None, generator=None, dtype=None, device=None):
    """Standard normal samples, from the device's Philox generator (or generator=)."""
    return _draw("NORMAL", _shape(_size_kw(shape, size), "randn"), _dt(dtype, float32), device,
                 generator)


manual_seed = _random.manual_seed


def _scan_numbers(data):
    """(the first int in nested data that int64 cannot hold or None, whether a float is there)."""
    big, has_float = None, False
    stack = [data]
    while stack:
        x = stack.pop()
        if isinstance(x, (list, tuple)):
            stack.extend(reversed(x))
        elif isinstance(x, (bool, np.bool_)):
            continue
        elif isinstance(x, numbers.Integral):
            if big is None and not -_INT64_MAX - 1 <= x <= _INT64_MAX:
                big = x
        elif isinstance(x, numbers.Real):
            has_float = True
    return big, has_float


def _python_ints_checked(data, arr, dtype):
    """NumPy turns Python ints too large for int64 into object, uint64 or float64
    arrays; pygpu would then refuse an 'object' dtype, wrap uint64 to negatives, or
    make floats of integers. Name the integer instead; where the data also holds
    floats, or a floating dtype was asked for, make floats of it, as NumPy does."""
    suspect = (arr.dtype == object
               or (arr.dtype.kind == "u" and arr.size and arr.max() > _INT64_MAX)
               or (arr.dtype.kind == "f" and arr.size and np.abs(arr).max() >= 2.0**63))
    if not suspect:
        return arr
    big, has_float = _scan_numbers(data)
    if big is None:
        return arr
    if not has_float and 0 <= big < 2**64 and dtype is not None and to_dtype(dtype) is _dtype.uint64:
        try:  # 2**63 .. 2**64 - 1 as uint64, as torch.tensor([...], dtype=torch.uint64)
            return np.asarray(data, dtype=np.uint64)
        except OverflowError:
            raise OverflowError("can't convert negative int to unsigned") from None
    if has_float or (dtype is not None and to_dtype(dtype).is_floating_point):
        return np.asarray(data, dtype=np.float64)
    raise OverflowError(f"tensor(): the integer {big} is too large for int64, which holds "
                        f"-2**63 to 2**63 - 1; pass dtype=pygpu.float64 to store the data as "
                        f"floats, or use smaller numbers")


def _check_fits(arr, dt):
    """Python numbers given with an integer dtype must fit it (a float: its integer part),
    as torch.tensor([300], dtype=torch.int8) refuses; an ndarray is cast (wrapping)."""
    if not arr.size or arr.dtype.kind == "b":
        return
    from .._dtype_info import iinfo
    info = iinfo(dt)
    with np.errstate(invalid="ignore"):
        lo, hi = (np.trunc(arr.min()), np.trunc(arr.max())) if arr.dtype.kind == "f" else (
            arr.min(), arr.max())
    if not (info.min <= lo and hi <= info.max):  # NaN fails here too
        bad = lo if not info.min <= lo else hi
        raise OverflowError(f"tensor(): the value {bad} cannot be converted to {dt.name} without "
                            f"overflow ({dt.name} holds {info.min} to {info.max})")


@factory
def tensor(data, dtype=None, device=None):
    """A new tensor holding a copy of data (a nested list, a number, an ndarray,
    anything with __array__ or __dlpack__, or another Tensor)."""
    if isinstance(data, _C.Tensor):
        out = data.to(device=device, dtype=dtype)
        return out.clone() if out is data else out
    is_array = isinstance(data, np.ndarray)
    arr = np.asarray(data)
    if not arr.dtype.isnative:
        raise TypeError(f"tensor(): the array's byte order is big-endian (dtype "
                        f"{arr.dtype.str!r}), and pygpu holds numbers in this machine's native "
                        f"byte order; convert it first: a.astype(a.dtype.newbyteorder('='))")
    if not is_array:
        arr = _python_ints_checked(data, arr, dtype)
    if dtype is not None:
        dt = to_dtype(dtype)
    elif not is_array and arr.dtype == np.float64:
        dt = _defaults.dtype()  # Python floats: PyTorch's default dtype (float32)
    elif not is_array and arr.dtype.kind in "iu":
        dt = int64
    elif not is_array and arr.dtype == np.complex128:
        dt = _defaults.dtype().to_complex()  # Python complex numbers: complex64 by default
    else:
        dt = to_dtype(arr.dtype)
    if arr.dtype.kind == "V" and str(arr.dtype) in _dtype._BY_NAME:  # ml_dtypes': the bits
        host = _C.from_numpy(np.asarray(arr, order="C")).clone()  # (ascontiguousarray: >= 1-d)
        return host.astype(dt).to(device) if device is not None else host.astype(dt)
    if arr.dtype.kind not in "biufc":
        raise TypeError(f"tensor(): cannot make a tensor from data of type {arr.dtype} "
                        "(expected numbers or bools)")
    if not is_array and dt._kind in ("sint", "uint"):
        _check_fits(arr, dt)
    host = _C._from_array_copy(arr, dt._code)
    if device is None:
        device = _defaults.device()
        if device is None:
            return host
    return host.to(device)


# ---- the shapes PyTorch's methods take -----------------------------------------------------

def shape_args(op, args):
    """(2, 3), [2, 3], a Size or 2, 3 -> a tuple of ints."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    for s in args:
        if not isinstance(s, int) or isinstance(s, bool):
            raise TypeError(f"{op}: sizes must be ints, got {type(s).__name__} in {args!r}")
    return tuple(args)


# ---- eye, linspace, randint, randperm, *_like ------------------------------------------------

Tensor = _C.Tensor


def _like_kw(t, dtype, device):
    return (t.dtype if dtype is None else dtype), (t.device if device is None else device)


@factory
def eye(n, m=None, *, dtype=None, device=None):
    m = n if m is None else m
    if n < 0 or m < 0:
        raise RuntimeError(f"eye: n and m must be >= 0, got n={n}, m={m}")
    out = zeros((n, m), dtype=dtype, device=device)
    k = min(n, m)
    if k:
        diag = _C._as_strided(out, (k,), (m + 1,), 0)
        diag[...] = 1
    return out


@factory
def linspace(start, end, steps, *, dtype=None, device=None):
    """steps points from start to end, both included; computed from both ends as PyTorch's
    (the first half counts up from start, the second down from end)."""
    if steps < 0:
        raise RuntimeError(f"linspace: number of steps must be non-negative, got {steps}")
    dt = _dtype.float32 if dtype is None else _dtype.to_dtype(dtype)
    if steps <= 1:
        return full((steps,), float(start), dtype=dt, device=device)
    step = (float(end) - float(start)) / (steps - 1)
    i = arange(steps, dtype=_dtype.float64, device=device)
    half = steps // 2
    lo = (i < half).astype(_dtype.float64)
    vals = (i * step + float(start)) * lo + ((i - (steps - 1)) * step + float(end)) * (1.0 - lo)
    return vals.astype(dt) if dt is not _dtype.float64 else vals


@factory
def logspace(start, end, steps, base=10.0, *, dtype=None, device=None):
    import math
    dt = _dtype.float32 if dtype is None else _dtype.to_dtype(dtype)
    e = linspace(start, end, steps, dtype=_dtype.float64, device=device)
    out = (e * math.log(base)).exp()
    return out.astype(dt) if dt is not _dtype.float64 else out


@factory
def randint(low, high=None, size=None, *, generator=None, dtype=None, device=None):
    """randint(high, size) or randint(low, high, size): uniform integers in [low, high)."""
    if size is None and isinstance(high, (tuple, list)):
        low, high, size = 0, low, high
    elif high is None and size is not None:  # randint(high, size=...), as PyTorch
        low, high = 0, low
    if high is None:
        raise TypeError("randint() needs high and size: randint(high, size) or "
                        "randint(low, high, size)")
    if size is None:
        raise TypeError("randint() missing 1 required argument: 'size'")
    if high <= low:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= "
                           f"to={high}")
    u = rand(*shape_args("randint", (size,)), dtype=_dtype.float64, device=device,
             generator=generator)
    out = (u * float(high - low)).astype(_dtype.int64) + int(low)  # u < 1: never high
    dt = _dtype.int64 if dtype is None else _dtype.to_dtype(dtype)
    return out if dt is _dtype.int64 else out.astype(dt)


@factory
def randperm(n, *, generator=None, dtype=None, device=None):
    """A random permutation of 0..n-1: the stable order of n uniform keys."""
    if n < 0:
        raise RuntimeError(f"randperm: n must be non-negative, got {n}")
    keys = rand(n, dtype=_dtype.float64, device=device, generator=generator)
    out = _C._argsort(keys, 0, False)
    return out if dtype is None or _dtype.to_dtype(dtype) is _dtype.int64 else out.astype(dtype)


@factory
def full_like(t, fill_value, *, dtype=None, device=None, memory_format=None):
    dt, dev = _like_kw(t, dtype, device)
    return _formats.like(t, memory_format, lambda s: full(s, fill_value, dtype=dt, device=dev))


@factory
def empty_like(t, *, dtype=None, device=None, memory_format=None):
    dt, dev = _like_kw(t, dtype, device)
    return _formats.like(t, memory_format, lambda s: empty(s, dtype=dt, device=dev))


@factory
def rand_like(t, *, generator=None, dtype=None, device=None, memory_format=None):
    dt, dev = _like_kw(t, dtype, device)
    return _formats.like(t, memory_format,
                         lambda s: rand(*s, dtype=dt, device=dev, generator=generator))


@factory
def randn_like(t, *, generator=None, dtype=None, device=None, memory_format=None):
    dt, dev = _like_kw(t, dtype, device)
    return _formats.like(t, memory_format,
                         lambda s: randn(*s, dtype=dt, device=dev, generator=generator))


@factory
def randint_like(t, low=0, high=None, *, generator=None, dtype=None, device=None,
                 memory_format=None):
    """randint_like(t, high) or randint_like(t, low, high): t's shape, dtype and device."""
    if high is None:
        low, high = 0, low
    dt, dev = _like_kw(t, dtype, device)
    return _formats.like(t, memory_format,
                         lambda s: randint(low, high, s, dtype=dt, device=dev, generator=generator))


# ---- Tensor.new_* -------------------------------------------------------------------------

def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
    dt, dev = _like_kw(self, dtype, device)
    return zeros(shape_args("new_zeros", size), dtype=dt, device=dev) \
        .requires_grad_(requires_grad)


def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
    dt, dev = _like_kw(self, dtype, device)
    return ones(shape_args("new_ones", size), dtype=dt, device=dev) \
        .requires_grad_(requires_grad)


def new_empty(self, *size, dtype=None, device=None, requires_grad=False):
    dt, dev = _like_kw(self, dtype, device)
    return empty(shape_args("new_empty", size), dtype=dt, device=dev) \
        .requires_grad_(requires_grad)


def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
    dt, dev = _like_kw(self, dtype, device)
    return full(shape_args("new_full", (size,)), fill_value, dtype=dt, device=dev) \
        .requires_grad_(requires_grad)


def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False):
    dt, dev = _like_kw(self, dtype, device)
    if isinstance(data, Tensor):
        data = data.detach().clone()
        return data.to(device=dev, dtype=dt).requires_grad_(requires_grad)
    return tensor(data, dtype=dt, device=dev).requires_grad_(requires_grad)


def from_file(filename, shared=None, size=0, *, dtype=None, layout=None, device=None,
              pin_memory=False):
    """torch.from_file: a 1-d tensor of `size` elements read from a file. shared=True maps
    the file (created or extended if needed): the tensor's writes go to the file; otherwise
    the file must hold size elements, copied in."""
    import os
    dt = _defaults.get_default_dtype() if dtype is None else to_dtype(dtype)
    npt = _dtype.numpy_of(dt)
    need = int(size) * np.dtype(npt).itemsize
    if shared:
        if not os.path.exists(filename) or os.path.getsize(filename) < need:
            with open(filename, "ab") as f:
                f.truncate(need)
        data = np.memmap(filename, dtype=npt, mode="r+", shape=(int(size),)) if size else \
            np.zeros(0, dtype=npt)
        out = _C.from_numpy(data)  # the tensor is the mapping: its writes reach the file
    else:
        have = os.path.getsize(filename)
        if have < need:
            raise RuntimeError(f"file <{filename}> size <{have}> is smaller than the required "
                               f"mapping size <{need}>")
        out = _C.from_numpy(np.fromfile(filename, dtype=npt, count=int(size)))
    return out if device is None else out.to(device)


METHODS = {
    "new_zeros": new_zeros, "new_ones": new_ones, "new_empty": new_empty,
    "new_full": new_full, "new_tensor": new_tensor,
}

FUNCTIONS = {
    "eye": eye, "linspace": linspace, "logspace": logspace, "randint": randint,
    "randperm": randperm, "full_like": full_like, "empty_like": empty_like,
    "rand_like": rand_like, "randn_like": randn_like, "randint_like": randint_like,
    "from_file": from_file,
}
