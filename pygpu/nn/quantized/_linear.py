"""What the int8 Linear layers share: the weight's quantization (per output channel,
symmetric, int8 in [-127, 127]), its packing (once, into a QTensor), the state the layers
keep and the call into the int8 kernel (pygpu._C._qlinear, csrc/core/pg_ops_quantized.c).

state_dict keys of an int8 Linear: weight (int8, out x in), weight_scale (float32, out),
weight_zero_point (int64, out: zeros, symmetric; kept on the host), bias (float32, out); a static layer adds
input_scale, input_zero_point, scale and zero_point (its output's)."""
import numpy as np

from ... import _C
from ...quantization._qtensor import QTensor, QZeroPoints
from ..module import Module

Tensor = _C.Tensor
# activation name -> the int8 epilogue's code: the op table's PG_ACT rows (_C._act_table())
ACT_CODES = {None: 0, **{name: code for name, code, _ in _C._act_table()}}
A_MAX = 127  # 7-bit activations on every ISA (csrc/core/pg_gemm.h says why)


def quantize_weight(w):
    """w (N, K) float -> (int8 (N, K), float32 scales (N,)): per output channel, symmetric,
    scale = max|w_n| / 127 (1 for an all-zero row)."""
    w = np.asarray(w, dtype=np.float64)
    amax = np.abs(w).max(axis=1) if w.size else np.zeros(w.shape[0])
    scale = np.where(amax > 0, amax / 127.0, 1.0).astype(np.float32)
    q = np.clip(np.rint(w / scale.astype(np.float64)[:, None]), -127, 127).astype(np.int8)
    return q, scale


def host_array(t):
    """A pygpu Tensor's values as NumPy (a counted copy from a device)."""
    t = t.detach()
    return (t if str(t.device) == "cpu" else t.cpu()).numpy()


def act_code(activation, who):
    if activation not in ACT_CODES:
        raise ValueError(f"{who}: activation must be one of None, 'relu', 'tanh', 'sigmoid', "
                         f"got {activation!r}")
    return ACT_CODES[activation]


class QLinearBase(Module):
    """int8 weight + per-channel scales + float32 bias; subclasses add the forward."""
    _kind = "int8"

    def __init__(self, in_features, out_features, bias=True, activation=None, device=None):
        super().__init__()
        self.in_features, self.out_features = int(in_features), int(out_features)
        if self.in_features < 1 or self.out_features < 1:
            raise ValueError(f"{type(self).__name__}: in_features and out_features must be >= 1")
        act_code(activation, type(self).__name__)
        self.activation = activation
        dev = None if device is None else str(device)
        self._buffers["weight"] = QTensor.from_int8(
            np.zeros((self.out_features, self.in_features), np.int8), dev)
        self._buffers["weight_scale"] = self._tensor(np.ones(self.out_features, np.float32), dev)
        self._buffers["weight_zero_point"] = QZeroPoints(self.out_features)  # host: all 0
        self._buffers["bias"] = (self._tensor(np.zeros(self.out_features, np.float32), dev)
                                 if bias else None)

    @staticmethod
    def _tensor(arr, device):
        t = _C.from_numpy(np.ascontiguousarray(arr))
        return t if device is None or device == "cpu" else t.to(device)

    def set_weight(self, w_float, bias=None):
        """Quantize and pack a float weight (N, K) (and take a float bias), once."""
        q, scale = quantize_weight(w_float)
        dev = str(self._buffers["weight_scale"].device)
        self._buffers["weight"] = QTensor.from_int8(q, dev)
        self._buffers["weight_scale"] = self._tensor(scale, dev)
        if bias is not None:
            self._buffers["bias"] = self._tensor(np.asarray(bias, np.float32), dev)

    @classmethod
    def _from_linear(cls, mod, activation=None, **kw):
        w = mod.weight
        q = cls(mod.in_features, mod.out_features, bias=mod.bias is not None,
                activation=activation, **kw)
        q.set_weight(host_array(w), None if mod.bias is None else host_array(mod.bias))
        dev = str(w.device)
        return q if dev == "cpu" else q.to(dev)

    def weight_float(self):
        """The dequantized weight (N, K) float32, as NumPy: what the int8 layer multiplies by."""
        return self.weight.int_repr().astype(np.float32) * host_array(self.weight_scale)[:, None]

    def _check_input(self, x):
        if not isinstance(x, Tensor):
            raise TypeError(f"{type(self).__name__}: expected a pygpu.Tensor, got "
                            f"{type(x).__name__}")
        if x.dtype != "float32":
            raise TypeError(f"{type(self).__name__}: int8 layers take float32 input, got "
                            f"{x.dtype}; convert it with x.astype(pygpu.float32)")
        if x.ndim < 1 or x.shape[-1] != self.in_features:
            raise ValueError(f"{type(self).__name__}: input of shape {tuple(x.shape)} does not "
                             f"end in in_features={self.in_features}")

    def _call(self, x2d, act, a_dynamic, a_scale, a_zp, out_u8, c_scale, c_zp):
        b = self.__dict__["_buffers"]  # straight from the dict: Module.__getattr__ costs ~1 us
        return _C._qlinear(x2d, b["weight"].data, b["weight_scale"], b["bias"], act, a_dynamic,
                           a_scale, a_zp, A_MAX, out_u8, c_scale, c_zp, A_MAX)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}, activation={self.activation!r}, "
                f"dtype=qint8, kernel={_C._qgemm_kernel()!r}")


def as_2d(x, in_features):
    """x (..., K) -> (x2d (M, K), the output's leading shape)."""
    if x.ndim == 2:
        return x, None
    lead = tuple(x.shape[:-1])
    return x.reshape(-1, in_features), lead


def from_2d(y, lead, out_features):
    return y if lead is None else y.reshape(*lead, out_features)


class Identity(Module):
    """Passes its input through: what an activation becomes once it is fused into the
    int8 layer before it (as PyTorch's fused modules leave nn.Identity)."""

    def forward(self, x):
        return x
