"""torch.fbgemm_*: PyTorch's (deprecated) int8 and fp16 linear functions, on pygpu's kernels.

  fbgemm_linear_quantize_weight(w)  -> (int8 weight, col_offsets int32, scale, zero_point):
      fbgemm's per-tensor weight quantization, bit for bit (ChooseQuantizationParams with a
      float scale over [min(w), max(w)], levels [-128, 127], x * inv + zero point rounded
      once, fbgemm's fused multiply-add).
  fbgemm_pack_quantized_matrix(w_int8[, K, N]) -> the packed weight: pygpu's int8 GEMM
      layout for the device (csrc/core/pg_gemm.h; bool-typed byte storage, as QTensor's),
      where torch returns fbgemm's opaque PackBMatrix bytes.
  fbgemm_linear_int8_weight(_fp32_activation)(x, w, packed, col_offsets, w_scale, w_zp, b):
      x quantized to u8 per tensor from its min and max (fbgemm's parameters), multiplied by
      the packed int8 weight in pygpu's int8 kernel (_C._qlinear: exact int32 sums, 8-bit
      activations: the VNNI kernel on this CPU, the portable one where AVX2 would saturate,
      cuBLASLt's IMMA on cuda), the weight's zero point corrected as fbgemm's
      ReQuantizeForFloat does, plus the bias.
  fbgemm_pack_gemm_matrix_fp16(w) -> w as float16 (N, K), where torch returns fbgemm's
      opaque bytes; fbgemm_linear_fp16_weight(_fp32_activation)(x, packed, b): x @ w16^T + b,
      float32 activations and accumulation (what fbgemm's FP16 GEMM computes).
The results differ from torch's by float32 rounding only (the order of the epilogue's
terms, the accumulation order); tests/test_fbgemm.py states the bound."""
import numpy as np

from .. import _C
from ._pack import pack_for, packed_bytes
from .._dtype import qint8, quint8
from ._quantized import _levels, choose_qparams

Tensor = _C.Tensor
f32 = np.float32


def _host(t):
    return (t if t.device.type == "cpu" else t.cpu()).detach().numpy()


def _float_weight(w, who):
    if not isinstance(w, Tensor) or w.dtype.name != "float32" or w.ndim != 2:
        raise RuntimeError(f"{who}: expected a 2-D float32 weight, got "
                           f"{getattr(w, 'dtype', type(w).__name__)} "
                           f"{tuple(getattr(w, 'shape', ()))}")
    return w


def fbgemm_linear_quantize_weight(input):
    """(int8 weight (N, K), col_offsets (N,) int32 = row sums - zero_point * K, scale,
    zero_point): fbgemm's per-tensor int8 quantization of a float weight (N, K)."""
    w = _float_weight(input, "fbgemm_linear_quantize_weight")
    lo, hi = float(w.min().item()), float(w.max().item())
    scale, zp = choose_qparams(lo, hi, qint8.qmin, qint8.qmax, float_scale=True)
    q = _levels(w.contiguous(), float(f32(1) / f32(scale)), zp, qint8)  # fbgemm: fma
    col_offsets = (q.to("int64").sum(1) - zp * w.shape[1]).to("int32")
    return q, col_offsets, scale, zp


def fbgemm_pack_quantized_matrix(input, K=None, N=None):
    """The int8 weight (N, K) packed once for pygpu's int8 GEMM on its device."""
    if not isinstance(input, Tensor) or input.dtype.name != "int8" or input.ndim != 2:
        raise RuntimeError("fbgemm_pack_quantized_matrix: expected a 2-D int8 weight")
    n, k = input.shape
    if (K is not None and int(K) != k) or (N is not None and int(N) != n):
        raise RuntimeError(f"fbgemm_pack_quantized_matrix: K={K}, N={N} do not match the "
                           f"weight's shape {tuple(input.shape)} (N, K)")
    dev = input.device
    packed = pack_for(_host(input), dev)
    t = _C.from_numpy(np.ascontiguousarray(packed, np.uint8).view(np.bool_))
    return t if dev.type == "cpu" else t.to(dev)


def fbgemm_linear_int8_weight_fp32_activation(input, weight, packed, col_offsets,
                                              weight_scale, weight_zero_point, bias):
    """y = x @ dequant(W)^T + bias with x quantized to u8 per tensor (fbgemm's dynamic
    parameters) and the int8 GEMM in pygpu's kernel (see the module's docstring)."""
    x = input
    if not isinstance(x, Tensor) or x.dtype.name != "float32":
        raise RuntimeError("fbgemm_linear_int8_weight: the input must be a float32 tensor")
    if not isinstance(bias, Tensor):
        raise RuntimeError("fbgemm_linear_int8_weight: bias is required (a float32 tensor)")
    k = x.shape[-1]
    n = col_offsets.numel()
    if packed.dtype.name != "bool" or packed.numel() != packed_bytes(n, k):
        raise RuntimeError(f"fbgemm_linear_int8_weight: packed is not a weight packed by "
                           f"fbgemm_pack_quantized_matrix for N={n}, K={k}")
    lead = tuple(x.shape[:-1])
    x2 = x.reshape(-1, k).contiguous()
    lo = min(float(x2.min().item()), 0.0) if x2.numel() else 0.0
    hi = max(float(x2.max().item()), 0.0) if x2.numel() else 0.0
    a_scale, a_zp = choose_qparams(lo, hi, quint8.qmin, quint8.qmax, float_scale=True)
    w_scale, w_zp = float(f32(weight_scale)), int(weight_zero_point)
    dev = x.device
    scales = _C.from_numpy(np.full(n, w_scale, f32))
    scales = scales if dev.type == "cpu" else scales.to(dev)
    # sa * sw * (sum_k Aq Wq - za * sum_k Wq) + bias, exact int32 sums in the kernel
    y = _C._qlinear(x2, packed, scales, bias.contiguous(), 0, False, a_scale, a_zp, 255,
                    False, 1.0, 0, 255)
    if w_zp:  # the weight's zero point: - sa * sw * zw * (sum_k Aq - za * K), per row
        aq = _levels(x2, float(f32(1) / f32(a_scale)), a_zp, quint8)
        rows = aq.double().sum(1, keepdim=True) - float(a_zp) * k
        y = y - (rows * (float(f32(a_scale)) * w_scale * w_zp)).float()
    return y.reshape(*lead, n)


fbgemm_linear_int8_weight = fbgemm_linear_int8_weight_fp32_activation


def fbgemm_pack_gemm_matrix_fp16(input):
    """The float weight (N, K) rounded to float16 once (fbgemm packs it to fp16 panels)."""
    w = _float_weight(input, "fbgemm_pack_gemm_matrix_fp16")
    return w.contiguous().to("float16")


def fbgemm_linear_fp16_weight_fp32_activation(input, packed_weight, bias):
    """y = x @ w16^T + bias: float32 activations times the float16 weight, in float32."""
    if not isinstance(packed_weight, Tensor) or packed_weight.dtype.name != "float16" or \
            packed_weight.ndim != 2:
        raise RuntimeError("fbgemm_linear_fp16_weight: packed_weight must be the result of "
                           "fbgemm_pack_gemm_matrix_fp16")
    x = input
    if x.dtype.name != "float32":
        raise RuntimeError("fbgemm_linear_fp16_weight: the input must be a float32 tensor")
    from ..nn import functional as F
    return F.linear(x, packed_weight.float(), bias)


fbgemm_linear_fp16_weight = fbgemm_linear_fp16_weight_fp32_activation

FUNCTIONS = {"fbgemm_linear_quantize_weight": fbgemm_linear_quantize_weight,
             "fbgemm_pack_quantized_matrix": fbgemm_pack_quantized_matrix,
             "fbgemm_linear_int8_weight": fbgemm_linear_int8_weight,
             "fbgemm_linear_int8_weight_fp32_activation":
                 fbgemm_linear_int8_weight_fp32_activation,
             "fbgemm_pack_gemm_matrix_fp16": fbgemm_pack_gemm_matrix_fp16,
             "fbgemm_linear_fp16_weight": fbgemm_linear_fp16_weight,
             "fbgemm_linear_fp16_weight_fp32_activation":
                 fbgemm_linear_fp16_weight_fp32_activation}
