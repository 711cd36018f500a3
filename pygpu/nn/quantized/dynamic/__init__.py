"""pygpu.nn.quantized.dynamic: Linear with int8 weights and activations quantized per call.

As torch.ao.nn.quantized.dynamic.Linear: the weight is int8 (here per output channel,
symmetric), packed once; each call quantizes its float32 input to u8 (here per ROW: each
row's own [min, max] over 128 levels, inside the int8 kernel while it packs the rows, so no
separate pass), multiplies u8 x s8 -> int32 and dequantizes in the GEMM's epilogue, with the
bias and a fused activation; the result is float32. Made by pygpu.quantization.quantize_dynamic."""
from .._linear import ACT_CODES, QLinearBase, act_code, as_2d, from_2d

__all__ = ["Linear"]


class Linear(QLinearBase):
    """Linear(in_features, out_features, bias=True, activation=None): y = act(x @ W^T + b)
    with int8 W and per-call u8 activations; float32 in, float32 out."""

    @classmethod
    def from_float(cls, mod, activation=None):
        """The int8 layer of a float nn.Linear (its weight quantized and packed once)."""
        return cls._from_linear(mod, activation=activation)

    def forward(self, x, activation=None):
        act = self.activation if activation is None else activation
        code = act_code(act, "quantized dynamic Linear") if act is not None else ACT_CODES[None]
        self._check_input(x)
        x2d, lead = as_2d(x, self.in_features)
        y = self._call(x2d, code, True, 1.0, 0, False, 1.0, 0)
        return from_2d(y, lead, self.out_features)
