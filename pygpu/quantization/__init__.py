"""pygpu.quantization: int8 inference, with PyTorch's names.

  quantize_dynamic(model, {nn.Linear}, dtype=pygpu.qint8)   int8 weights, per-call activations
  prepare(model, observer=MinMaxObserver) -> calibrate -> convert(prepared)   static int8
  MinMaxObserver, MovingAverageMinMaxObserver, HistogramObserver(method="entropy"|"percentile")
  qint8, quint8, qint32, quint4x2, quint2x4   the quantized dtypes (pygpu.qint8, ...)
  quantize_per_tensor / quantize_per_channel / dequantize ...   PyTorch's quantized tensors
      (_quantized.py), their fake quantization (_fake_quantize.py) and fbgemm's int8 and
      fp16 linear functions on pygpu's kernels (_fbgemm.py): exported as pygpu.<name>
The layers are pygpu.nn.quantized's; the kernels and the flow are in docs/inference.md."""
from ._pack import pack_weight, packed_bytes, unpack_weight
from ._qtensor import QParam, QTensor, QuantizedActivation
from .._dtype import (QDType, QSCHEMES, qint8, qint32, qscheme, quint2x4, quint4x2, quint8)
from ._quantized import QuantizedTensor
from .observer import (HistogramObserver, MinMaxObserver, MovingAverageMinMaxObserver,
                       ObserverBase, qparams_of_range)
from .quantize import ObservedLinear, convert, prepare, quantize_dynamic

__all__ = ["quantize_dynamic", "prepare", "convert", "qint8", "quint8", "qint32", "quint4x2",
           "quint2x4", "qscheme", "QuantizedTensor", "QTensor",
           "MinMaxObserver", "MovingAverageMinMaxObserver", "HistogramObserver",
           "ObservedLinear", "QuantizedActivation", "pack_weight", "unpack_weight"]
