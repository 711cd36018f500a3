"""pygpu.quantization: int8 inference, with PyTorch's names.

  quantize_dynamic(model, {nn.Linear}, dtype=pygpu.qint8)   int8 weights, per-call activations
  prepare(model, observer=MinMaxObserver) -> calibrate -> convert(prepared)   static int8
  MinMaxObserver, MovingAverageMinMaxObserver, HistogramObserver(method="entropy"|"percentile")
  qint8, quint8   the quantized dtypes (also pygpu.qint8 / pygpu.quint8 where exported)
The layers are pygpu.nn.quantized's; the kernels and the flow are in docs/inference.md."""
from ._pack import pack_weight, packed_bytes, unpack_weight
from ._qtensor import QDType, QParam, QTensor, QuantizedActivation, qint8, quint8
from .observer import (HistogramObserver, MinMaxObserver, MovingAverageMinMaxObserver,
                       ObserverBase, qparams_of_range)
from .quantize import ObservedLinear, convert, prepare, quantize_dynamic

__all__ = ["quantize_dynamic", "prepare", "convert", "qint8", "quint8", "QTensor",
           "MinMaxObserver", "MovingAverageMinMaxObserver", "HistogramObserver",
           "ObservedLinear", "QuantizedActivation", "pack_weight", "unpack_weight"]
