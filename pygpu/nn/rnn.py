"""The recurrent layers: RNN (tanh, relu), LSTM (with proj_size), GRU, and RNNCell,
LSTMCell, GRUCell, with PyTorch's parameters, state_dict keys, options and errors.

Parameters are PyTorch's (weight_ih_l0, weight_hh_l0, bias_ih_l0, bias_hh_l0,
weight_hr_l0 for a projection, `_reverse` for the second direction), initialised as
PyTorch's, U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), from pygpu's generator. The
work is pygpu/_ops/_rnn.py's one autograd Function: per layer and direction one GEMM for
every timestep's input projection, then one fused cell kernel per step. A cell is the
same Function over one step. Inputs may be padded (T, B, I) (batch_first: (B, T, I)),
unbatched (T, I), or a PackedSequence (nn.utils.rnn)."""
import math
import numbers
import warnings

from .. import _C
from .._tensor.create import rand
from .._ops._rnn import RNNConfig, rnn_stack, rnn_zeros
from ..autograd import no_grad
from .module import Module
from .parameter import Parameter
from .utils.rnn import PackedSequence

Tensor = _C.Tensor


def _uniform(shape, bound, device, dtype):
    with no_grad():
        return rand(*shape, device=device, dtype=dtype) * (2.0 * bound) - bound


def _shape_list(t):
    return list(t.shape)


class RNNBase(Module):
    """The stack of recurrent layers that RNN, LSTM and GRU are."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, proj_size=0,
                 device=None, dtype=None):
        super().__init__()
        if (not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1
                or isinstance(dropout, bool)):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                          "non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}")
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable "
                             "projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        self.mode = mode
        self.input_size, self.hidden_size = input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional = float(dropout), bidirectional
        self.proj_size = proj_size
        gates = {"LSTM": 4, "GRU": 3}.get(mode, 1)
        dirs = 2 if bidirectional else 1
        real_hidden = proj_size if proj_size > 0 else hidden_size
        bound = 1.0 / math.sqrt(hidden_size)
        self._flat_weights_names = []
        for layer in range(num_layers):
            for d in range(dirs):
                in_size = input_size if layer == 0 else real_hidden * dirs
                sfx = f"_l{layer}" + ("_reverse" if d == 1 else "")
                shapes = [("weight_ih", (gates * hidden_size, in_size)),
                          ("weight_hh", (gates * hidden_size, real_hidden))]
                if bias:
                    shapes += [("bias_ih", (gates * hidden_size,)),
                               ("bias_hh", (gates * hidden_size,))]
                if proj_size > 0:
                    shapes.append(("weight_hr", (proj_size, hidden_size)))
                for name, shape in shapes:
                    setattr(self, name + sfx, Parameter(_uniform(shape, bound, device, dtype)))
                    self._flat_weights_names.append(name + sfx)

    @property
    def _flat_weights(self):
        return [getattr(self, n) for n in self._flat_weights_names]

    @property
    def all_weights(self):
        per = len(self._flat_weights_names) // (self.num_layers * (2 if self.bidirectional else 1))
        w = self._flat_weights
        return [w[i:i + per] for i in range(0, len(w), per)]

    def flatten_parameters(self):
        """Accepted for PyTorch programs (cuDNN's one weight buffer): the weights are used
        where they are, so there is nothing to do."""

    def reset_parameters(self):
        bound = 1.0 / math.sqrt(self.hidden_size)
        with no_grad():
            for w in self._flat_weights:
                w.copy_(_uniform(w.shape, bound, w.device, w.dtype))

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    def _hidden_shape(self, batch):
        dirs = 2 if self.bidirectional else 1
        return (self.num_layers * dirs, batch, self.proj_size or self.hidden_size)

    def _check_hidden(self, hx, expected, what="hidden"):
        if tuple(hx.shape) != tuple(expected):
            raise RuntimeError(f"Expected {what} size {tuple(expected)}, got {_shape_list(hx)}")

    def forward(self, input, hx=None):
        lstm = self.mode == "LSTM"
        name = type(self).__name__
        packed = isinstance(input, PackedSequence)
        unbatched = False
        if packed:
            data, batch_sizes, sorted_idx, unsorted_idx = input
            bs = [int(b) for b in batch_sizes.tolist()]
            B = bs[0] if bs else 0
            x = data
            if x.ndim != 2:
                raise ValueError(f"{name}: packed input data must be 2-D, got {x.ndim}-D")
        else:
            if not isinstance(input, Tensor):
                raise TypeError(f"{name}: input must be a pygpu.Tensor or a PackedSequence, got "
                                f"{type(input).__name__}")
            if input.ndim not in (2, 3):
                raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.ndim}D "
                                 "instead")
            unbatched = input.ndim == 2
            x3 = input.unsqueeze(1) if unbatched else input
            if self.batch_first and not unbatched:
                x3 = x3.transpose(0, 1)
            T, B = x3.shape[0], x3.shape[1]
            bs = [B] * T
            sorted_idx = unsorted_idx = None
            x = x3.reshape(T * B, x3.shape[2])
        if x.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {x.shape[-1]}")
        if x.dtype != self.weight_ih_l0.dtype:
            raise RuntimeError(f"input must have the type {self.weight_ih_l0.dtype}, got type "
                               f"{x.dtype}")
        h0 = c0 = None
        if hx is not None:
            if lstm:
                if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                    raise RuntimeError("LSTM: hx must be a tuple (h_0, c_0)")
                h0, c0 = hx
            else:
                h0 = hx
            want_dims = 2 if unbatched else 3
            for t, what in ((h0, "hx"), (c0, "cx")):
                if t is not None and t.ndim != want_dims:
                    kind = "unbatched 2-D" if unbatched else "batched 3-D"
                    raise RuntimeError(f"For {kind} input, {what} should also be "
                                       f"{want_dims}-D but got {t.ndim}-D tensor")
            if unbatched:
                h0 = h0.unsqueeze(1)
                c0 = c0.unsqueeze(1) if c0 is not None else None
            if sorted_idx is not None:
                h0 = h0.index_select(1, sorted_idx)
                c0 = c0.index_select(1, sorted_idx) if c0 is not None else None
            self._check_hidden(h0, self._hidden_shape(B))
            if c0 is not None:
                dirs = 2 if self.bidirectional else 1
                self._check_hidden(c0, (self.num_layers * dirs, B, self.hidden_size), "cell")
        cfg = RNNConfig(self.mode, self.num_layers, 2 if self.bidirectional else 1,
                        self.hidden_size, self.proj_size, self.bias, self.dropout,
                        self.training, bs)
        if not bs:  # an empty sequence: zeros of the right shapes
            out = rnn_zeros((0, cfg.dirs * cfg.out_size), x)
            hn = h0 if h0 is not None else rnn_zeros(self._hidden_shape(B), x)
            cn = c0 if c0 is not None else (
                rnn_zeros((hn.shape[0], B, self.hidden_size), x) if lstm else None)
        else:
            out, hn, cn = rnn_stack(x, h0, c0, cfg, self._flat_weights)
        if packed:
            if unsorted_idx is not None:
                hn = hn.index_select(1, unsorted_idx)
                cn = cn.index_select(1, unsorted_idx) if cn is not None else None
            output = PackedSequence(out, batch_sizes, sorted_idx, unsorted_idx)
        else:
            output = out.reshape(len(bs), B, out.shape[1])
            if self.batch_first and not unbatched:
                output = output.transpose(0, 1)
            if unbatched:
                output = output.squeeze(1)
                hn = hn.squeeze(1)
                cn = cn.squeeze(1) if cn is not None else None
        return output, ((hn, cn) if lstm else hn)


class RNN(RNNBase):
    """Elman RNN: h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh), act tanh or relu."""

    def __init__(self, *args, nonlinearity="tanh", **kwargs):
        if len(args) > 3:  # PyTorch's positional order: input, hidden, layers, nonlinearity
            args = list(args)
            nonlinearity = args.pop(3)
        if "nonlinearity" in kwargs:
            nonlinearity = kwargs.pop("nonlinearity")
        if nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or "
                             "'relu'.")
        super().__init__(mode, *args, **kwargs)
        self.nonlinearity = nonlinearity

    def extra_repr(self):
        s = super().extra_repr()
        return s + (f", nonlinearity={self.nonlinearity}" if self.nonlinearity != "tanh" else "")


class LSTM(RNNBase):
    """Long short-term memory, gates i f g o (PyTorch's order), optional projection."""

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)


class GRU(RNNBase):
    """Gated recurrent unit, gates r z n (PyTorch's order and formula)."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)


class RNNCellBase(Module):
    """One step of a recurrent layer: the same Function as the layers, over one step."""

    def __init__(self, mode, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__()
        gates = {"LSTM": 4, "GRU": 3}.get(mode, 1)
        self.mode, self.input_size, self.hidden_size, self.bias = (mode, input_size,
                                                                   hidden_size, bias)
        bound = 1.0 / math.sqrt(hidden_size)
        self.weight_ih = Parameter(_uniform((gates * hidden_size, input_size), bound, device,
                                            dtype))
        self.weight_hh = Parameter(_uniform((gates * hidden_size, hidden_size), bound, device,
                                            dtype))
        if bias:
            self.bias_ih = Parameter(_uniform((gates * hidden_size,), bound, device, dtype))
            self.bias_hh = Parameter(_uniform((gates * hidden_size,), bound, device, dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        return s

    def reset_parameters(self):
        bound = 1.0 / math.sqrt(self.hidden_size)
        with no_grad():
            for w in self.parameters():
                w.copy_(_uniform(w.shape, bound, w.device, w.dtype))

    def _step(self, input, hx, cx):
        name = type(self).__name__
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}: input must be a pygpu.Tensor, got {type(input).__name__}")
        if input.ndim not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.ndim}D instead")
        unbatched = input.ndim == 1
        x = input.unsqueeze(0) if unbatched else input
        if x.shape[1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {x.shape[1]} expected "
                               f"{self.input_size}")
        B = x.shape[0]
        states = []
        for t, what in ((hx, "hidden"), (cx, "cell")):
            if t is None:
                states.append(None)
                continue
            if unbatched:
                t = t.unsqueeze(0)
            if tuple(t.shape) != (B, self.hidden_size):
                if t.ndim != 2 or t.shape[0] != B:
                    raise RuntimeError(f"Input batch size {B} doesn't match {what} batch size "
                                       f"{t.shape[0] if t.ndim else 0}")
                raise RuntimeError(f"{what} has inconsistent hidden_size: got {t.shape[1]}, "
                                   f"expected {self.hidden_size}")
            states.append(t.unsqueeze(0))
        w = [self.weight_ih, self.weight_hh] + ([self.bias_ih, self.bias_hh] if self.bias else [])
        cfg = RNNConfig(self.mode, 1, 1, self.hidden_size, 0, self.bias, 0.0, False, [B])
        _, hn, cn = rnn_stack(x, states[0], states[1], cfg, w)
        hn, cn = hn[0], (cn[0] if cn is not None else None)
        if unbatched:
            hn = hn.squeeze(0)
            cn = cn.squeeze(0) if cn is not None else None
        return hn, cn


class RNNCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None,
                 dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size,
                         hidden_size, bias, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        return self._step(input, hx, None)[0]


class LSTMCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, bias, device, dtype)

    def forward(self, input, hx=None):
        h, c = hx if hx is not None else (None, None)
        return self._step(input, h, c)


class GRUCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__("GRU", input_size, hidden_size, bias, device, dtype)

    def forward(self, input, hx=None):
        return self._step(input, hx, None)[0]
