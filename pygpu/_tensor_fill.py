"""In-place fills, as PyTorch's Tensor methods: zero_, fill_, uniform_, normal_, bernoulli_.

Each makes its values on the tensor's own device (a FILL node, or the device's Philox
generator) and writes them with copy_, so a fill moves no data between host and device
and the counters see no transfer; copy_ refuses a leaf that requires grad, as PyTorch
does. Random fills draw in float32 (float64 for a float64 tensor) and round once into
self's dtype, as the generator has no 16-bit output."""
from . import _C, _tensor_create, _dtype


def _same_place(self, value):
    return _tensor_create.full((), value, dtype=self.dtype, device=self.device)


def zero_(self):
    """Fill with zeros, in place; returns self."""
    return self.copy_(_same_place(self, 0))


def fill_(self, value):
    """Fill with one value (a number or a one-element tensor), in place; returns self."""
    if hasattr(value, "item"):  # a one-element tensor, as PyTorch allows
        if value.numel() != 1:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor "
                               f"with {value.ndim} dimensions")
        return self.copy_(value.to(device=self.device, dtype=self.dtype).reshape(()))
    return self.copy_(_same_place(self, value))


def _draw(self, op, kind):
    if not self.dtype.is_floating_point:
        raise TypeError(f"{op}: needs a floating-point tensor, this one is {self.dtype} "
                        "(convert it first, e.g. t = t.float())")
    dt = _dtype.float64 if self.dtype is _dtype.float64 else _dtype.float32
    make = _tensor_create.rand if kind == "uniform" else _tensor_create.randn
    return make(*self.shape, dtype=dt, device=self.device)


def uniform_(self, a=0.0, b=1.0):
    """Fill with samples of U(a, b), in place; returns self."""
    if not a <= b:
        raise _C.InvalidValueError(f"uniform_ expects to return a [from, to) range, but found "
                                   f"from={a} > to={b}")
    return self.copy_(_draw(self, "uniform_", "uniform") * float(b - a) + float(a))


def normal_(self, mean=0.0, std=1.0):
    """Fill with samples of N(mean, std**2), in place; returns self."""
    if std < 0:
        raise _C.InvalidValueError(f"normal expects std >= 0.0, but found std {std}")
    return self.copy_(_draw(self, "normal_", "normal") * float(std) + float(mean))


def bernoulli_(self, p=0.5):
    """Fill with 1 where U(0, 1) < p and 0 elsewhere, in place; returns self."""
    if not 0 <= p <= 1:
        raise _C.InvalidValueError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
    dt = _dtype.float64 if self.dtype is _dtype.float64 else _dtype.float32
    return self.copy_(_tensor_create.rand(*self.shape, dtype=dt, device=self.device) < p)


METHODS = {"zero_": zero_, "fill_": fill_, "uniform_": uniform_, "normal_": normal_,
           "bernoulli_": bernoulli_}
