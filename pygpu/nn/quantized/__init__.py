"""pygpu.nn.quantized: int8 layers for inference (made by pygpu.quantization).

  Linear            static int8 Linear (pygpu.quantization.convert): the input's scale and
                    zero point were fixed by calibration; the output is float32, or u8 for
                    the next int8 layer (requantized in the GEMM's epilogue: int8 between
                    layers, TensorRT's vertical fusion of Linear + bias + activation).
  dynamic.Linear    int8 weights, activations quantized per call (quantize_dynamic).
  Identity          what a fused activation module becomes.
The kernels: csrc/backends/cpu/cpu_gemm_int8*.c on cpu and sim; on cuda csrc/backends/cuda/kernels/quant.cu
around cuBLASLt's integer GEMM (csrc/backends/cuda/cuda_quant.c), with the same bits
(docs/inference.md)."""
from ...quantization._qtensor import QParam, QuantizedActivation
from . import dynamic
from ._linear import ACT_CODES, Identity, QLinearBase, act_code, as_2d, from_2d

__all__ = ["Linear", "Identity", "dynamic"]


class Linear(QLinearBase):
    """Static int8 Linear: fixed input (scale, zero_point) from calibration; output float32,
    or (emit_int8) u8 with the output's (scale, zero_point) for the next int8 layer."""

    def __init__(self, in_features, out_features, bias=True, activation=None, device=None,
                 input_scale=1.0, input_zero_point=0, scale=1.0, zero_point=0, emit_int8=False):
        super().__init__(in_features, out_features, bias, activation, device)
        self._buffers["input_scale"] = QParam(input_scale, "float")
        self._buffers["input_zero_point"] = QParam(input_zero_point, "int")
        self._buffers["scale"] = QParam(scale, "float")
        self._buffers["zero_point"] = QParam(zero_point, "int")
        self.emit_int8 = bool(emit_int8)

    @classmethod
    def from_observed(cls, mod, in_qparams, out_qparams, activation=None, emit_int8=False):
        """The int8 layer of a float nn.Linear with calibrated input and output qparams."""
        (si, zi), (so, zo) = in_qparams, out_qparams
        return cls._from_linear(mod, activation=activation, input_scale=si, input_zero_point=zi,
                                scale=so, zero_point=zo, emit_int8=emit_int8)

    def forward(self, x, activation=None):
        act = self.activation if activation is None else activation
        code = act_code(act, "quantized Linear") if act is not None else ACT_CODES[None]
        b = self.__dict__["_buffers"]
        si, zi = b["input_scale"].value, b["input_zero_point"].value
        so, zo = b["scale"].value, b["zero_point"].value
        if isinstance(x, QuantizedActivation):  # u8 from the int8 layer before: no float pass
            if x.data.ndim != 2 or x.data.shape[1] != self.in_features:
                raise ValueError(f"quantized Linear: u8 input of shape {tuple(x.shape)} does "
                                 f"not match in_features={self.in_features}")
            if (x.scale, x.zero_point) != (si, zi):
                raise ValueError(f"quantized Linear: the u8 input has scale {x.scale:g} and zero "
                                 f"point {x.zero_point}, this layer was calibrated for {si:g} "
                                 f"and {zi} (convert() links the layers it chains)")
            x2d, lead = x.data, None
        else:
            self._check_input(x)
            x2d, lead = as_2d(x, self.in_features)
        y = self._call(x2d, code, False, si, zi, self.emit_int8, so, zo)
        if self.emit_int8:
            return QuantizedActivation(y, so, zo)
        return from_2d(y, lead, self.out_features)

    def extra_repr(self):
        return (super().extra_repr() + f", input=(scale={self.input_scale.value:g}, "
                f"zero_point={self.input_zero_point.value}), output=" +
                ("u8" if self.emit_int8 else "float32") +
                f"(scale={self.scale.value:g}, zero_point={self.zero_point.value})")
