"""The quantized forms of the pools and recurrent cells at torch's top level.

  quantized_max_pool1d/2d/3d(q, kernel_size, stride=[], padding=0, dilation=1,
      ceil_mode=False): max pooling of a per-tensor quantized tensor (1d and 2d batched
      or not, 3d batched, as torch's). A level's order is its
      real's (dequantization is increasing), so the pool runs on the levels (pygpu's POOL
      node, on float32 copies of them: exact for 8-bit levels) and keeps the input's scale
      and zero point, as ATen's quantized max pool does.
  quantized_lstm_cell / quantized_gru_cell / quantized_rnn_tanh_cell / quantized_rnn_relu_cell
      (input, hx, w_ih, w_hh, b_ih, b_hh, packed_ih, packed_hh, col_offsets_ih,
      col_offsets_hh, scale_ih, scale_hh, zero_point_ih, zero_point_hh): ATen's cells over
      QuantizedCellParams, whose two linear maps are fbgemm_linear_int8_weight_fp32_activation
      (_fbgemm.py: pygpu's int8 kernel) on the packed weights; the gates' arithmetic is the
      float cells' (RNN.cpp's LSTMCell, GRUCell, SimpleCell), in the same order."""
from .. import _C
from ._fbgemm import fbgemm_linear_int8_weight_fp32_activation as _int8_linear
from ._quantized import QuantizedTensor, not_implemented

Tensor = _C.Tensor


def _as_list(v, n, who, name):
    if isinstance(v, int):
        return [v] * n
    v = list(v)
    if len(v) == 1:
        return v * n
    if len(v) != n:
        raise RuntimeError(f"{who}: {name} must either be a single int, or a tuple of {n} ints")
    return v


# the ranks each quantized pool takes (3d: batched only), and torch's words otherwise
_RANKS = {1: (2, 3), 2: (3, 4), 3: (5,)}
_RANK_ERRORS = {1: "max_pool1d() Expected 2D or 3D input tensor, but got {shape}",
                2: "Expecting the input tensor of rank 3 or 4.",
                3: "Expecting the input tensor of rank 5."}


def _quantized_max_pool(n, name):
    def pool(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
        if not isinstance(input, QuantizedTensor):
            raise not_implemented(name, input.device, quantized=False)
        if input.qscheme().per_channel:
            raise RuntimeError(f"{name}: a per-tensor quantized input is expected")
        if input.dim() not in _RANKS[n]:  # torch's words for each
            raise RuntimeError(_RANK_ERRORS[n].format(shape=list(input.shape)))
        k = _as_list(kernel_size, n, name, "kernel_size")
        s = _as_list(stride, n, name, "stride") if (isinstance(stride, int) or
                                                    len(list(stride))) else k
        p = _as_list(padding, n, name, "padding")
        d = _as_list(dilation, n, name, "dilation")
        from ..nn import functional as F
        fn = getattr(F, f"max_pool{n}d")
        levels = input.ints.float()
        batched = input.dim() == n + 2  # (N, C, ...) or unbatched (C, ...)
        out = fn(levels if batched else levels.unsqueeze(0), k, s, p, d, ceil_mode)
        out = out if batched else out.squeeze(0)
        return input._with(out.to(input.dtype.storage))
    pool.__name__ = name
    pool.__doc__ = (f"torch.{name}: max pooling of a quantized tensor's levels (ranks "
                    f"{_RANKS[n]}), its scale and zero point kept.")
    return pool


quantized_max_pool1d = _quantized_max_pool(1, "quantized_max_pool1d")
quantized_max_pool2d = _quantized_max_pool(2, "quantized_max_pool2d")
quantized_max_pool3d = _quantized_max_pool(3, "quantized_max_pool3d")


class _CellParams:
    """ATen's QuantizedCellParams: the two int8 linear maps of a cell."""

    def __init__(self, w_ih, w_hh, b_ih, b_hh, packed_ih, packed_hh, col_offsets_ih,
                 col_offsets_hh, scale_ih, scale_hh, zero_point_ih, zero_point_hh):
        self.ih = (w_ih, packed_ih, col_offsets_ih, float(scale_ih), int(zero_point_ih), b_ih)
        self.hh = (w_hh, packed_hh, col_offsets_hh, float(scale_hh), int(zero_point_hh), b_hh)

    def linear_ih(self, x):
        w, packed, offsets, scale, zp, b = self.ih
        return _int8_linear(x, w, packed, offsets, scale, zp, b)

    def linear_hh(self, h):
        w, packed, offsets, scale, zp, b = self.hh
        return _int8_linear(h, w, packed, offsets, scale, zp, b)


def quantized_lstm_cell(input, hx, *params):
    """(hy, cy) of ATen's LSTMCell with int8 linear maps: gates = W_hh h + W_ih x."""
    p = _CellParams(*params)
    h, c = hx
    gates = p.linear_hh(h) + p.linear_ih(input)
    i, f, g, o = gates.chunk(4, 1)
    cy = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * cy.tanh(), cy


def quantized_gru_cell(input, hx, *params):
    """hy of ATen's GRUCell with int8 linear maps."""
    p = _CellParams(*params)
    ir, iz, in_ = p.linear_ih(input).chunk(3, 1)
    hr, hz, hn = p.linear_hh(hx).chunk(3, 1)
    reset = (hr + ir).sigmoid()
    update = (hz + iz).sigmoid()
    new = (in_ + hn * reset).tanh()
    return (hx - new) * update + new


def quantized_rnn_tanh_cell(input, hx, *params):
    """tanh(W_hh h + W_ih x) with int8 linear maps."""
    p = _CellParams(*params)
    return (p.linear_hh(hx) + p.linear_ih(input)).tanh()


def quantized_rnn_relu_cell(input, hx, *params):
    """relu(W_hh h + W_ih x) with int8 linear maps."""
    p = _CellParams(*params)
    return (p.linear_hh(hx) + p.linear_ih(input)).relu()


FUNCTIONS = {f.__name__: f for f in (
    quantized_max_pool1d, quantized_max_pool2d, quantized_max_pool3d, quantized_lstm_cell,
    quantized_gru_cell, quantized_rnn_tanh_cell, quantized_rnn_relu_cell)}
