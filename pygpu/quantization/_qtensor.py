"""The quantized dtypes and the objects that hold quantized state in a module.

The int8 layers keep their weights in the int8 GEMM's packed layout, not as int8 tensors
(pygpu/_dtype.py has int8 and uint8 tensors too: a plain int8 tensor is not a packed
weight): the packed bytes live in bool-typed tensors used as plain byte storage (the C core
never computes on them except through the int8 kernels), inside the objects below, so
nothing else can mistake them for booleans:
  QTensor   a layer's int8 weight (N, K), held in the int8 GEMM's packed layout of its
            device (packed once, _pack.py: the CPU kernels' panels on cpu/sim, cuBLASLt's
            rows on cuda, the same size); state_dict() and pygpu.save see an int8 (N, K)
            array, and Module.to moves only the packed bytes: a quarter of the float
            weight's.
  QParam    a scalar quantization parameter (an activation's scale or zero point), kept
            on the host (the layers pass it to the kernel on every call).
  QZeroPoints  a weight's per-channel zero points: all 0 (symmetric), kept on the host.
  QuantizedActivation   the u8 output of a static int8 layer, with its scale and zero
            point: what one int8 layer hands the next (int8 between layers)."""
import numbers

import numpy as np

from .. import _C
from ._pack import layout_of, pack_for, packed_bytes, unpack_from
from .._dtype import QDType, qint8, quint8  # noqa: F401 - their home before issue 43




def _carrier(u8, device=None):
    """A bool-typed pygpu Tensor holding the bytes of u8 (1-D uint8), on `device`."""
    t = _C.from_numpy(np.ascontiguousarray(u8, dtype=np.uint8).view(np.bool_))
    return t if device is None or str(device) == "cpu" else t.to(device)


def _device_of(args, kwargs):
    """The device among Tensor.to's arguments (None if only a dtype is given)."""
    from .._device import Device
    from .._dtype import DType
    dev = kwargs.get("device")
    for a in args:
        if isinstance(a, (str, Device)):
            dev = a
        elif not isinstance(a, (DType, QDType)) and a is not None and not isinstance(a, type):
            dev = a
    return dev


class QTensor:
    """An int8 weight (N, K) with the int8 GEMM's packing; `data` is the packed bytes
    (a bool-typed pygpu Tensor on the layer's device)."""
    is_quantized = True
    _qstate = True  # saved by pygpu.save as its numpy(), loaded by Module.load_state_dict's copy_
    dtype = qint8

    def __init__(self, data, shape):
        self.data = data
        self.shape = tuple(int(s) for s in shape)

    @classmethod
    def from_int8(cls, w, device=None):
        w = np.asarray(w)
        if w.dtype != np.int8 or w.ndim != 2:
            raise TypeError(f"an int8 weight must be a 2-D int8 array, got {w.dtype} "
                            f"with shape {w.shape}")
        return cls(_carrier(pack_for(w, device or "cpu"), device), w.shape)

    @property
    def device(self):
        return self.data.device

    @property
    def nbytes(self):
        return packed_bytes(*self.shape)

    def int_repr(self):
        """The (N, K) int8 values as a NumPy array (a counted copy from a device)."""
        host = self.data if str(self.data.device) == "cpu" else self.data.cpu()
        return unpack_from(host.numpy().view(np.uint8), *self.shape, self.data.device)

    numpy = int_repr

    def to(self, *args, **kwargs):
        dev = _device_of(args, kwargs)
        if dev is None:
            return self  # a dtype change (model.half()) leaves int8 weights as they are
        if layout_of(dev) != layout_of(self.data.device):
            # to or from cuda: repacked for the kernels there (once, as the move itself);
            # the bytes that cross the link are the packed weight's, as for any move
            return QTensor.from_int8(self.int_repr(), None if str(dev) == "cpu" else dev)
        moved = self.data.to(dev)
        return self if moved is self.data else QTensor(moved, self.shape)

    def cpu(self):
        return self.to("cpu")

    def detach(self):
        return self

    def copy_(self, src):
        """Take src's values (a QTensor, an int8 tensor on any device as PyTorch's checkpoint
        format loads one, or an int8 array of this shape), repacked once."""
        if isinstance(src, QTensor):
            w = src.int_repr()
        elif isinstance(src, _C.Tensor):
            w = (src if str(src.device) == "cpu" else src.cpu()).numpy()
        else:
            w = np.asarray(src)
        if w.shape != self.shape:
            raise ValueError(f"copy_: an int8 weight of shape {w.shape} into one of {self.shape}")
        self.data = QTensor.from_int8(w.astype(np.int8, copy=False), self.data.device).data
        return self

    def __repr__(self):
        return f"QTensor(shape={self.shape}, dtype=qint8, device={self.device}, packed)"


class QParam:
    """A scalar quantization parameter on the host: float (a scale) or int (a zero point)."""
    _kinds = {"float": (float, np.float32), "int": (int, np.int64)}
    _qstate = True

    def __init__(self, value, kind="float"):
        self.kind = kind
        self.value = self._kinds[kind][0](value)

    shape = ()
    device = "cpu"

    def numpy(self):
        return np.array(self.value, dtype=self._kinds[self.kind][1])

    def item(self):
        return self.value

    def to(self, *args, **kwargs):
        return self  # kept on the host: the kernel takes it as an argument

    def cpu(self):
        return self

    def detach(self):
        return self

    def copy_(self, src):
        v = src.item() if hasattr(src, "item") else src
        if not isinstance(v, numbers.Real):
            raise TypeError(f"copy_: a quantization parameter takes a number, got {type(v).__name__}")
        self.value = self._kinds[self.kind][0](v)
        return self

    def __repr__(self):
        return f"QParam({self.value!r})"


class QZeroPoints:
    """A weight's per-channel zero points, kept on the host: pygpu's int8 weights are
    symmetric, so they are all 0 and no kernel reads them; they are state (PyTorch's
    quantized Linear saves them), never moved to a device. Loading non-zero ones is refused."""
    _qstate = True
    device = "cpu"

    def __init__(self, n):
        self.value = np.zeros(int(n), np.int64)

    @property
    def shape(self):
        return self.value.shape

    def numpy(self):
        return self.value.copy()

    def to(self, *args, **kwargs):
        return self

    def cpu(self):
        return self

    def detach(self):
        return self

    def copy_(self, src):
        v = src.detach().numpy() if hasattr(src, "numpy") else np.asarray(src)
        if hasattr(src, "device") and str(src.device) != "cpu" and not isinstance(src, QZeroPoints):
            v = src.detach().cpu().numpy()
        v = np.asarray(v)
        if v.shape != self.value.shape:
            raise ValueError(f"copy_: {v.shape} zero points into {self.value.shape}")
        if np.any(v != 0):
            raise ValueError("copy_: pygpu's int8 weights are symmetric (zero point 0); this "
                             "state_dict has non-zero weight zero points (an asymmetric "
                             "quantization pygpu's kernels do not run)")
        return self

    def __repr__(self):
        return f"QZeroPoints({self.value.shape[0]} zeros)"


class QuantizedActivation:
    """u8 activations (M, N) on a device (bool-typed storage), scale and zero point: the
    output of a static int8 layer for the next int8 layer."""

    def __init__(self, data, scale, zero_point):
        self.data, self.scale, self.zero_point = data, float(scale), int(zero_point)

    @property
    def shape(self):
        return self.data.shape

    @property
    def device(self):
        return self.data.device

    def int_repr(self):
        host = self.data if str(self.data.device) == "cpu" else self.data.cpu()
        return host.numpy().view(np.uint8)

    def dequantize(self):
        """The float32 values (a pygpu Tensor on the host)."""
        q = self.int_repr().astype(np.float32)
        return _C.from_numpy((q - self.zero_point) * np.float32(self.scale))

    def __repr__(self):
        return (f"QuantizedActivation(shape={self.shape}, scale={self.scale:g}, "
                f"zero_point={self.zero_point}, device={self.device})")
