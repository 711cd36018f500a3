"""PyTorch's quantized tensors: torch.quantize_per_tensor / quantize_per_channel and the
tensor they return (q_scale, q_zero_point, int_repr, dequantize, qscheme, ...).

A QuantizedTensor is an ordinary pygpu tensor of the dtype's storage dtype (uint8 for
quint8, int8, int32; uint8 for quint4x2 and quint2x4, one level per element), `ints`, plus
the quantization parameters: a Python float scale and int zero point (per tensor), or
float64 scales and int64 zero points (C,) along `axis` (per channel). It is not a
pygpu.Tensor, as pygpu.sparse's SparseTensor is not: the C core and its hot paths know
nothing of it, and every op PyTorch runs on a quantized tensor is written here on the
ints (views, indexing, clone, to, cat, comparisons). Every other Tensor method raises
PyTorch's NotImplementedError ("Could not run 'aten::add.Tensor' with arguments from the
'QuantizedCPU' backend"), as torch's dispatcher does.

The numerics are PyTorch's CPU kernels': level = clamp(nearbyint(x * (1.0f / (float)scale))
with the zero point added before or after rounding as each dtype's kernel does (the
rounding column of pygpu/_dtype.py), qmin, qmax), rounding half to even; a real is
(level - zero_point) * (float)scale in float32 per tensor and (level - zero_point) * scale
in float64 per channel (float32 with float zero points), as ATen's dequantize loops. They run
as pygpu ops on the ints' device, so cpu, sim and cuda all work (torch's CPU wheel has
quantized tensors on the CPU only)."""
import warnings

import numpy as np

from .. import _C
from .._dtype import DType
from .._tensor.join import cat as _cat
from .._tensor.compare import equal as _equal
from .._dtype import (QDType, QDTYPES, per_channel_affine, per_channel_affine_float_qparams,
                      per_tensor_affine, qdtype_of, qscheme)

Tensor = _C.Tensor

_TORCH_SCALAR = {"float32": "Float", "float64": "Double", "float16": "Half",
                 "bfloat16": "BFloat16", "int64": "Long", "int32": "Int", "int16": "Short",
                 "int8": "Char", "uint8": "Byte", "bool": "Bool"}


def _backend(device, quantized=True):
    """The dispatch key PyTorch would name for a tensor on `device`."""
    kind = {"cpu": "CPU", "cuda": "CUDA"}.get(device.type, "PrivateUse1")
    return ("Quantized" if quantized else "") + kind


def not_implemented(op, device, quantized=True):
    """PyTorch's dispatcher error for an op with no kernel for the tensor's backend."""
    key = _backend(device, quantized)
    return NotImplementedError(
        f"Could not run 'aten::{op}' with arguments from the '{key}' backend. This could be "
        f"because the operator doesn't exist for this backend, or was omitted during the "
        f"selective/custom build process (if using custom build). pygpu runs the ops PyTorch "
        f"runs on quantized tensors; dequantize() gives a float tensor for the rest.")


def _float_input(x, who="Quantize"):
    if not isinstance(x, Tensor):
        raise TypeError(f"quantize_per_tensor(): argument 'input' must be Tensor, not "
                        f"{type(x).__name__}")
    if x.dtype.name != "float32":
        raise RuntimeError(f"{who} only works on Float Tensor, got "
                           f"{_TORCH_SCALAR.get(x.dtype.name, x.dtype.name)}")
    return x


def _check_zero_point(zp, qd, who):
    if zp < qd.qmin:
        raise RuntimeError(f"{who} zero_point {zp} is below lower bound.")
    if zp > qd.qmax:
        raise RuntimeError(f"{who} zero_point {zp} is above upper bound.")


def _levels(x, inv_scale, zero_point, qd, rounding=None):
    """The levels of x (float32) as qd's storage dtype: x * inv_scale (a float32 number or a
    float32 tensor broadcast against x) rounded half to even with the zero point (an int
    or an int64 tensor broadcast likewise) added as qd's rounding rule says
    (pygpu/_dtype.py; `rounding` names another), clamped to [qmin, qmax]. float64 holds
    each step exactly where the rule says float32 rounds (the product of two float32
    numbers, a small integer added to it)."""
    rounding = rounding or qd.rounding
    if rounding == "fma":  # one rounding of the exact x * inv + zp to float32
        r = (x.double() * inv_scale + zero_point).float().round()
    elif rounding == "add_f32":  # the float32 product, plus the float32 zero point
        zp = zero_point.float() if isinstance(zero_point, Tensor) else \
            float(np.float32(zero_point))
        r = (x * inv_scale + zp).round()
    else:  # "round_add"
        r = (x * inv_scale).round().double() + zero_point
    return r.double().clamp(qd.qmin, qd.qmax).to(qd.storage)


def _channel_shape(x, axis):
    return [x.shape[d] if d == axis else 1 for d in range(x.ndim)]


class QuantizedTensor:
    """A quantized tensor (torch's QuantizedCPU tensors): levels in `ints` (a pygpu tensor of
    the dtype's storage dtype) and the scheme's parameters. Build one with
    pygpu.quantize_per_tensor / quantize_per_channel / quantize_per_tensor_dynamic."""
    is_quantized = True
    is_sparse = False
    is_leaf = True
    requires_grad = False
    grad = None
    grad_fn = None

    def __init__(self, ints, dtype, scheme, scale, zero_point, axis=None):
        self.ints = ints
        self._dtype, self._scheme = dtype, scheme
        self._scale, self._zero_point, self._axis = scale, zero_point, axis

    # ---- what it is ---------------------------------------------------------------------
    dtype = property(lambda self: self._dtype)
    shape = property(lambda self: self.ints.shape)
    device = property(lambda self: self.ints.device)
    ndim = property(lambda self: self.ints.ndim)
    is_cuda = property(lambda self: self.ints.device.type == "cuda")
    is_cpu = property(lambda self: self.ints.device.type == "cpu")
    data = property(lambda self: self)
    layout = property(lambda self: self.ints.layout)

    def size(self, dim=None):
        return self.ints.size() if dim is None else self.ints.size(dim)

    def dim(self):
        return self.ints.ndim

    def numel(self):
        return self.ints.numel()

    nelement = numel

    def __len__(self):
        return len(self.ints)

    def element_size(self):
        return self._dtype.itemsize

    def stride(self, dim=None):
        return self.ints.stride() if dim is None else self.ints.stride(dim)

    def storage_offset(self):
        return self.ints.storage_offset()

    def is_contiguous(self, memory_format=None):
        return self.ints.is_contiguous()

    def get_device(self):
        return self.ints.get_device()

    def type(self, dtype=None):
        if dtype is not None:
            raise RuntimeError("Creation of quantized tensor requires quantized dtype like "
                               "torch.quint8")
        return f"torch.{self._dtype.storage_class.replace('Storage', 'Tensor')}"

    def qscheme(self):
        return self._scheme

    def storage(self):
        """The levels' storage as a TypedStorage of the quantized dtype (torch's
        QUInt8Storage, ...), sharing memory; sub-byte dtypes hold one level per byte."""
        from .. import _storage
        _storage._warn_typed()
        return _storage.TypedStorage(_base=_C._storage_base(self.ints), _qdtype=self._dtype)

    def untyped_storage(self):
        return self.ints.untyped_storage()

    def storage_type(self):
        from .. import _storage
        return _storage.legacy_storage_class(self._dtype)

    def q_scale(self):
        if self._scheme.per_channel:
            raise RuntimeError("Expected quantizer->qscheme() == kPerTensorAffine to be true, "
                               "but got false.  (q_scale of a per-channel quantized tensor: "
                               "use q_per_channel_scales())")
        return self._scale

    def q_zero_point(self):
        if self._scheme.per_channel:
            raise RuntimeError("Expected quantizer->qscheme() == kPerTensorAffine to be true, "
                               "but got false.  (q_zero_point of a per-channel quantized "
                               "tensor: use q_per_channel_zero_points())")
        return self._zero_point

    def _per_channel(self):
        if not self._scheme.per_channel:
            raise RuntimeError("Expected quantizer->qscheme() == kPerChannelAffine || "
                               "quantizer->qscheme() == kPerChannelAffineFloatQParams to be "
                               "true, but got false.  (a per-tensor quantized tensor: use "
                               "q_scale() and q_zero_point())")

    def q_per_channel_scales(self):
        self._per_channel()
        return self._scale.clone()

    def q_per_channel_zero_points(self):
        self._per_channel()
        return self._zero_point.clone()

    def q_per_channel_axis(self):
        self._per_channel()
        return self._axis

    # ---- values -------------------------------------------------------------------------
    def int_repr(self):
        """The levels as the storage dtype; quint4x2 / quint2x4 packed as PyTorch stores
        them: the elements in row-major order, the first in the low bits of each byte."""
        qd = self._dtype
        if qd.per_byte == 1:
            return self.ints.clone()
        flat = self.ints.reshape(-1).to("int32")
        n = flat.shape[0]
        rows = -(-n // qd.per_byte)
        pad = rows * qd.per_byte - n
        if pad:
            flat = _cat([flat, flat.new_zeros((pad,))], 0)
        bits = 8 // qd.per_byte
        weights = _C.from_numpy(np.array([1 << (bits * i) for i in range(qd.per_byte)],
                                         np.int32)).to(flat.device)
        return (flat.reshape(rows, qd.per_byte) * weights).sum(1).to("uint8")

    def dequantize(self):
        """The float32 reals the levels stand for."""
        if not self._scheme.per_channel:
            d = self.ints.double() - self._zero_point
            if self._dtype.name == "qint32":  # ATen subtracts in int32: it wraps, as here
                d = d - 2.0 ** 32 * ((d + 2.0 ** 31) / 2.0 ** 32).floor()
            return d.float() * float(np.float32(self._scale))
        shape = _channel_shape(self.ints, self._axis)
        scales = self._scale.reshape(*shape)
        if self._scheme is per_channel_affine_float_qparams:  # float32 throughout
            return (self.ints.float() - self._zero_point.reshape(*shape)) * scales
        return ((self.ints.double() - self._zero_point.reshape(*shape)) * scales).float()

    def _cat(self, tensors, dim):
        """pygpu.cat's hook for a list that starts with a quantized tensor."""
        return cat_quantized(tensors, dim)

    def _with(self, ints):
        """A quantized tensor of the same parameters over other levels (a view or a copy)."""
        return QuantizedTensor(ints, self._dtype, self._scheme, self._scale, self._zero_point,
                               self._axis)

    def _uniform(self, what):
        if self._scheme.per_channel:
            raise RuntimeError(f"Setting strides is possible only on uniformly quantized "
                               f"tensor ({what} of a per-channel quantized tensor)")

    # ---- views and copies, as torch allows them ----------------------------------------
    def view(self, *shape):
        out = self.ints.view(*shape)
        if self._scheme.per_channel and (out.ndim <= self._axis or
                                         out.shape[self._axis] != self.ints.shape[self._axis]):
            raise RuntimeError(f"length of scales must equal to channel, expected "
                               f"{out.shape[self._axis] if out.ndim > self._axis else 0} got, "
                               f"{self.ints.shape[self._axis]}")
        return self._with(out)

    def reshape(self, *shape):
        return self.view(*shape) if self.ints.is_contiguous() else \
            self.contiguous().view(*shape)

    def view_as(self, other):
        return self.view(*other.shape)

    def __getitem__(self, index):
        if not self._scheme.per_channel:
            return self._with(self.ints[index])
        if self._axis == 0 and isinstance(index, int):  # one channel: a per-tensor tensor
            c = index % self.ints.shape[0]
            return QuantizedTensor(self.ints[index], self._dtype, per_tensor_affine,
                                   float(self._scale[c].item()),
                                   int(self._zero_point[c].item()))
        self._uniform("indexing")

    def __setitem__(self, index, value):
        raise not_implemented("index_put_", self.device)

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def contiguous(self, memory_format=None):
        return self if self.ints.is_contiguous() else self._with(self.ints.contiguous())

    def clone(self, memory_format=None):
        if not self._scheme.per_channel:
            return self._with(self.ints.clone())
        return QuantizedTensor(self.ints.clone(), self._dtype, self._scheme, self._scale.clone(),
                               self._zero_point.clone(), self._axis)

    def detach(self):
        return self

    def requires_grad_(self, requires_grad=True):
        if requires_grad:
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        return self

    def to(self, *args, **kwargs):
        """to(device): the levels (and per-channel parameters) moved; to(a non-quantized
        dtype) is refused as PyTorch refuses it (dequantize() gives floats)."""
        device = kwargs.get("device")
        for a in list(args) + [kwargs.get("dtype")]:
            if isinstance(a, QDType):
                if a is not self._dtype:
                    raise RuntimeError("Creation of quantized tensor requires quantized dtype "
                                       "like torch.quint8")
            elif isinstance(a, (DType, type)) or (isinstance(a, str) and _is_dtype_name(a)):
                raise RuntimeError("Creation of quantized tensor requires quantized dtype like "
                                   "torch.quint8")
            elif isinstance(a, (QuantizedTensor, Tensor)):
                device = a.device
            elif a is not None and not isinstance(a, bool):
                device = a
        if device is None:
            return self
        ints = self.ints.to(device)
        if ints is self.ints:
            return self
        if not self._scheme.per_channel:
            return self._with(ints)
        return QuantizedTensor(ints, self._dtype, self._scheme, self._scale.to(device),
                               self._zero_point.to(device), self._axis)

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None):
        return self.to("cuda" if device is None else device)

    T = property(lambda self: self.t())

    def split(self, split_size, dim=0):
        self._uniform("split")
        return tuple(self._with(t) for t in self.ints.split(split_size, dim))

    def chunk(self, chunks, dim=0):
        self._uniform("chunk")
        return tuple(self._with(t) for t in self.ints.chunk(chunks, dim))

    def unbind(self, dim=0):
        self._uniform("unbind")
        return tuple(self._with(t) for t in self.ints.unbind(dim))

    def _compare(self, other, op):
        a = self.dequantize()
        b = other.dequantize() if isinstance(other, QuantizedTensor) else other
        return getattr(a, op)(b)

    def __eq__(self, other):
        return self._compare(other, "__eq__")

    def __ne__(self, other):
        return self._compare(other, "__ne__")

    __hash__ = object.__hash__

    def equal(self, other):
        """torch.equal on quantized tensors: the same qscheme, parameters and levels."""
        if not isinstance(other, QuantizedTensor) or other._scheme is not self._scheme or \
                other._dtype is not self._dtype or tuple(other.shape) != tuple(self.shape):
            return False
        if self._scheme.per_channel:
            same = (self._axis == other._axis and
                    bool(_equal(self._scale, other._scale.to(self._scale.device))) and
                    bool(_equal(self._zero_point,
                                  other._zero_point.to(self._zero_point.device))))
        else:
            same = (self._scale == other._scale and self._zero_point == other._zero_point)
        return same and bool(_equal(self.ints, other.ints.to(self.ints.device)))

    def numpy(self, *, force=False):
        raise TypeError(f"Got unsupported ScalarType {_torch_qname(self._dtype)}")

    def tolist(self):
        raise RuntimeError("load_scalar: invalid type")

    def item(self):
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to "
                               f"Scalar")
        return self.dequantize().item()

    def __reduce_ex__(self, protocol):
        params = (self._scale, self._zero_point, self._axis)
        return (_rebuild, (self.ints, self._dtype.name, self._scheme.name, params))

    def __repr__(self):
        from .. import _printing
        return _printing.quantized_repr(self)

    def __getattr__(self, name):
        if not name.startswith("_") and hasattr(Tensor, name):
            raise not_implemented(name, self.ints.device)
        raise AttributeError(f"'QuantizedTensor' object has no attribute '{name}'")


def _view_op(name):
    def op(self, *args, **kwargs):
        self._uniform(name)
        return self._with(getattr(self.ints, name)(*args, **kwargs))
    op.__name__ = name
    op.__doc__ = f"Tensor.{name} on the levels, the parameters kept (per tensor only)."
    return op


# the views torch allows on a per-tensor quantized tensor: the levels' view, same parameters
for _name in ("transpose", "permute", "t", "unsqueeze", "squeeze", "flatten", "narrow",
              "select", "expand", "movedim", "unflatten", "flip", "swapaxes"):
    setattr(QuantizedTensor, _name, _view_op(_name))
del _name


def _refused_dunder(op):
    def refuse(self, *args, **kwargs):
        raise not_implemented(op, self.ints.device)
    return refuse


# operators torch's quantized backend has no kernel for (the aten op each reaches)
for _dunder, _op in {"add": "add.Tensor", "radd": "add.Tensor", "iadd": "add_.Tensor",
                     "sub": "sub.Tensor", "rsub": "rsub.Scalar", "isub": "sub_.Tensor",
                     "mul": "mul.Tensor", "rmul": "mul.Tensor", "imul": "mul_.Tensor",
                     "truediv": "div.Tensor", "rtruediv": "div.Tensor",
                     "itruediv": "div_.Tensor", "floordiv": "floor_divide",
                     "mod": "remainder.Tensor", "pow": "pow.Tensor_Tensor",
                     "matmul": "matmul", "rmatmul": "matmul", "neg": "neg", "abs": "abs",
                     "lt": "lt.Tensor", "le": "le.Tensor", "gt": "gt.Tensor",
                     "ge": "ge.Tensor", "and": "bitwise_and.Tensor",
                     "or": "bitwise_or.Tensor", "xor": "bitwise_xor.Tensor",
                     "invert": "bitwise_not", "float": "_local_scalar_dense",
                     "int": "_local_scalar_dense", "bool": "is_nonzero"}.items():
    setattr(QuantizedTensor, f"__{_dunder}__", _refused_dunder(_op))
del _dunder, _op


def _torch_qname(qd):
    return {"quint8": "QUInt8", "qint8": "QInt8", "qint32": "QInt32", "quint4x2": "QUInt4x2",
            "quint2x4": "QUInt2x4"}[qd.name]


def _is_dtype_name(s):
    from .._dtype import to_dtype
    try:
        to_dtype(s)
        return True
    except (TypeError, ValueError):
        return False


def _rebuild(ints, dtype, scheme, params):
    from .._dtype import QSCHEMES
    return QuantizedTensor(ints, QDTYPES[dtype], QSCHEMES[scheme], *params)


# ---- creation ----------------------------------------------------------------------------
def _scalar(v, kind):
    return kind(v.item()) if isinstance(v, Tensor) else kind(v)


def quantize_per_tensor(input, scale, zero_point, dtype):
    """torch.quantize_per_tensor: levels clamp(zero_point + nearbyint(x / scale)) of dtype.
    A list of tensors with (N,) scales and zero points gives a tuple, as torch's."""
    qd = qdtype_of(dtype, "new_qtensor")
    if isinstance(input, (list, tuple)):
        scales = scale.tolist() if isinstance(scale, Tensor) else list(scale)
        zps = zero_point.tolist() if isinstance(zero_point, Tensor) else list(zero_point)
        if isinstance(scale, Tensor):  # torch reads a scale tensor as float32
            scales = [float(np.float32(s)) for s in scales]
        return tuple(quantize_per_tensor(x, s, int(z), qd) for x, s, z in
                     zip(input, scales, zps))
    x = _float_input(input)
    s = _scalar(scale, float)
    if isinstance(scale, Tensor):
        s = float(np.float32(s))
    zp = _scalar(zero_point, int)
    _check_zero_point(zp, qd, "quantize_tensor_per_tensor_affine")
    inv = float(np.float32(1.0) / np.float32(s))
    return QuantizedTensor(_levels(x, inv, zp, qd), qd, per_tensor_affine, s, zp)


def quantize_per_channel(input, scales, zero_points, axis, dtype):
    """torch.quantize_per_channel: each slice along `axis` with its own scale and zero point
    (int zero points: per_channel_affine; float ones: per_channel_affine_float_qparams)."""
    qd = qdtype_of(dtype, "new_qtensor")
    x = _float_input(input)
    if not isinstance(scales, Tensor) or not isinstance(zero_points, Tensor):
        raise TypeError("quantize_per_channel(): scales and zero_points must be Tensors")
    axis = int(axis)
    if not 0 <= axis < x.ndim:
        raise RuntimeError(f"Channel axis out of range in per channel affine quantization. "
                           f"Got: {axis} Expected: < {x.ndim}")
    c = x.shape[axis]
    if scales.numel() != c:
        raise RuntimeError(f"length of scales must equal to channel, expected {c} got, "
                           f"{scales.numel()}")
    if zero_points.numel() != c:
        raise RuntimeError(f"length of zero_points must equal to channel expected {c} got, "
                           f"{zero_points.numel()}")
    dev = x.device
    scales64 = scales.reshape(-1).to(dev).double()
    shape = _channel_shape(x, axis)
    inv = (1.0 / scales64.float()).reshape(*shape)  # 1.0f / (float)scale, per channel
    if zero_points.dtype.is_floating_point:
        zpf = zero_points.reshape(-1).to(dev).float()
        # ATen's quantize_val_float_qparams: lrintf(x * inv + zero_point), float32 scales
        lev = (x * inv + zpf.reshape(*shape)).round().double()
        ints = lev.clamp(qd.qmin, qd.qmax).to(qd.storage)
        return QuantizedTensor(ints, qd, per_channel_affine_float_qparams, scales64.float(),
                               zpf, axis)
    zps = zero_points.reshape(-1).to(dev).to("int64")
    lo, hi = int(zps.min().item()), int(zps.max().item())
    _check_zero_point(lo, qd, "quantize_tensor_per_channel_affine")
    _check_zero_point(hi, qd, "quantize_tensor_per_channel_affine")
    ints = _levels(x, inv, zps.reshape(*shape), qd)
    return QuantizedTensor(ints, qd, per_channel_affine, scales64, zps, axis)


def choose_qparams(lo, hi, qmin, qmax, reduce_range=False, preserve_sparsity=False,
                   float_scale=False):
    """ATen's ChooseQuantizationParams (quantized/QuantUtils.h; fbgemm's is the same with a
    float scale, float_scale=True): the scale and zero point that map [min(lo, 0),
    max(hi, 0)] (float32 bounds) onto [qmin, qmax], zero exactly representable."""
    f32 = np.float32
    lo, hi = f32(lo), f32(hi)
    if reduce_range:
        qmin, qmax = qmin // 2, qmax // 2
    if lo < 0 < hi and preserve_sparsity:
        sym_min, sym_max = -((qmax - qmin) // 2 + 1), (qmax - qmin) // 2
        max_scale = max(abs(float(lo) / sym_min), abs(float(hi) / sym_max))
        lo, hi = f32(max_scale * sym_min), f32(max_scale * sym_max)
    lo, hi = min(lo, f32(0)), max(hi, f32(0))
    scale = (float(hi) - float(lo)) / (qmax - qmin)
    with np.errstate(divide="ignore", over="ignore"):
        if f32(scale) == 0 or np.isinf(f32(1) / f32(scale)):
            scale = 0.1
    if float_scale:
        scale = float(f32(scale))
    small = float(f32(6.1e-5))  # ATen's SMALL_SCALE_THRESHOLD
    if scale < small:
        org = scale
        scale = small
        if lo == 0:
            hi = f32(small * (qmax - qmin))
        elif hi == 0:
            lo = f32(-small * (qmax - qmin))
        else:
            amp = f32(small / f32(org))
            lo, hi = lo * amp, hi * amp
    lo, hi = float(lo), float(hi)
    zp_from_min = qmin - lo / scale
    zp_from_max = qmax - hi / scale
    err_min = abs(qmin) - abs(lo / scale)
    err_max = abs(qmax) - abs(hi / scale)
    initial = zp_from_min if err_min < err_max else zp_from_max
    if lo < 0 < hi and preserve_sparsity:
        initial = (qmin + qmax) / 2
    if initial < qmin:
        zp = qmin
    elif initial > qmax:
        zp = qmax
    else:
        zp = int(np.rint(initial))
    return scale, int(zp)


def quantize_per_tensor_dynamic(input, dtype, reduce_range):
    """torch.quantize_per_tensor_dynamic: the scale and zero point from input's min and max
    (ATen's choose_qparams), then quantize_per_tensor."""
    qd = qdtype_of(dtype, "quantize_per_tensor_dynamic")
    if qd.name not in ("quint8", "qint8"):
        raise RuntimeError(f"dtype {qd} is not supported by quantize_per_tensor_dynamic: "
                           f"torch.quint8 and torch.qint8 are")
    x = _float_input(input)
    lo = float(x.min().item()) if x.numel() else 0.0
    hi = float(x.max().item()) if x.numel() else 0.0
    scale, zp = choose_qparams(lo, hi, qd.qmin, qd.qmax, reduce_range)
    return quantize_per_tensor(x, scale, zp, qd)


def dequantize(input):
    """torch.dequantize: a quantized tensor's reals (float32); a list of them gives a
    tuple; a float tensor comes back as it is."""
    if isinstance(input, (list, tuple)):
        return tuple(dequantize(t) for t in input)
    if isinstance(input, QuantizedTensor):
        return input.dequantize()
    if isinstance(input, Tensor):
        return input
    raise TypeError(f"dequantize(): argument 'tensor' must be Tensor, not "
                    f"{type(input).__name__}")


def empty_quantized(size, qtensor, *, dtype=None, layout=None, device=None, pin_memory=None,
                    memory_format=None):
    """torch.empty_quantized: an uninitialized quantized tensor of `size` with qtensor's
    quantization parameters (its levels here are zeros: an empty pygpu tensor is zeroed)."""
    if not isinstance(qtensor, QuantizedTensor):
        raise RuntimeError("empty_quantized: qtensor must be a quantized tensor")
    qd = qtensor.dtype if dtype is None else qdtype_of(dtype, "empty_quantized")
    dev = qtensor.device if device is None else device
    from .._tensor.create import zeros
    ints = zeros(tuple(size), dtype=qd.storage, device=dev)
    return QuantizedTensor(ints, qd, qtensor._scheme, qtensor._scale, qtensor._zero_point,
                           qtensor._axis)


def cat_quantized(tensors, dim=0):
    """torch.cat of quantized tensors: the result has the first one's parameters; the others
    are requantized to them where theirs differ (ATen's quantized_cat)."""
    first = tensors[0]
    if any(t._scheme.per_channel for t in tensors):
        raise RuntimeError("Only per-tensor quantization is supported in 'cat'!")
    if not all(isinstance(t, QuantizedTensor) for t in tensors):
        raise RuntimeError("cat: quantized and non-quantized tensors cannot be concatenated")
    if any(t._scale != first._scale or t._zero_point != first._zero_point for t in tensors):
        warnings.warn("All inputs of this cat operator must share the same quantization "
                      "parameters. Otherwise large numerical inaccuracies may occur.",
                      UserWarning, stacklevel=3)
    parts = []
    for t in tensors:
        if t._dtype is not first._dtype:
            raise RuntimeError("All dtypes must be the same. (quantized cat)")
        same = t._scale == first._scale and t._zero_point == first._zero_point
        parts.append(t.ints if same else quantize_per_tensor(
            t.dequantize(), first._scale, first._zero_point, first._dtype).ints)
    return first._with(_cat(parts, dim))


# ---- the Tensor methods and torch functions of the quantized names ----------------------
def _plain_method(name):
    def refuse(self, *args, **kwargs):
        raise not_implemented(name, self.device, quantized=False)
    refuse.__name__ = name
    refuse.__doc__ = (f"Tensor.{name}: a quantized tensor's; on a plain tensor PyTorch's "
                      f"NotImplementedError (no kernel for a non-quantized backend).")
    return refuse


def _tensor_dequantize(self):
    """Tensor.dequantize on a non-quantized tensor: the tensor itself (PyTorch's)."""
    return self


TENSOR_METHODS = {name: _plain_method(name) for name in (
    "int_repr", "q_scale", "q_zero_point", "q_per_channel_scales", "q_per_channel_zero_points",
    "q_per_channel_axis", "qscheme")}
TENSOR_METHODS["dequantize"] = _tensor_dequantize


def _function(name):
    def fn(input, *args, **kwargs):
        if isinstance(input, QuantizedTensor):
            return getattr(input, name)(*args, **kwargs)
        return getattr(Tensor, name)(input, *args, **kwargs)
    fn.__name__ = name
    fn.__doc__ = f"torch.{name}(input): input.{name}()."
    return fn


FUNCTIONS = {name: _function(name) for name in (
    "int_repr", "q_scale", "q_zero_point", "q_per_channel_scales", "q_per_channel_zero_points",
    "q_per_channel_axis")}
FUNCTIONS.update(quantize_per_tensor=quantize_per_tensor,
                 quantize_per_channel=quantize_per_channel,
                 quantize_per_tensor_dynamic=quantize_per_tensor_dynamic,
                 dequantize=dequantize, empty_quantized=empty_quantized, qscheme=qscheme)
