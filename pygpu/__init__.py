"""pygpu: device tensors that count every byte crossing between host and device.

A GPU is like a remote server: computing there is fast, but every request
ships data over a link. pygpu gives you tensors on "cpu", on a simulated
accelerator "sim:N" (any machine) and on "cuda:N", moved explicitly with
.to(device), and keeps exact counters of every host<->device transfer:
pygpu.stats(), pygpu.track(), pygpu.transfer_guard().
"""
import atexit as _atexit
import builtins as _builtins  # pygpu.range is torch.range: the module's own loops use Python's
import importlib as _importlib
import pkgutil as _pkgutil
import sys as _sys

from . import _numpy_blas  # first: NumPy's OpenBLAS threads sleep soon after a call (issue 45)

_NUMPY_BLAS_LOADED = _numpy_blas.before_numpy()
from . import _extension  # noqa: E402

_C = _extension.load()  # pygpu._C; OpenBLAS preloaded; an ImportError saying what to run if unbuilt
from ._C import (AcceleratorError, AsyncIndexError, AsyncOpError, AxisError,
                 DeviceMismatchError, DeviceUnavailableError, DTypeError, IndexOutOfRangeError,
                 InvalidValueError, OutOfMemoryError, ShapeError, Tensor, TransferGuardError,
                 TransferWarning, from_dlpack, from_numpy, get_num_threads, init_num_threads,
                 reset_stats, set_flush_denormal, set_num_threads)


def _table_exports():
    """The op table's module functions (csrc/core/pg_ops.def, read as _C._op_table()):
    every `pygpu.<name>` a row lists that _C generates (add, exp, sum, matmul, ...).
    The rest of the table's pygpu names are Python functions imported below.
    A row's other pygpu names are PyTorch's spellings of the same function (pygpu.mul is
    pygpu.multiply): they export the row's own function."""
    names = {}
    for row in _C._op_table():
        own = getattr(_C, row[0], None)
        for q in row[3]:
            name = q[len("pygpu."):]
            if not q.startswith("pygpu.") or "." in name:
                continue
            fn = getattr(_C, name, None)
            if callable(fn):
                names[name] = fn
            elif callable(own):
                names[name] = own
    return names


_OPS = _table_exports()
globals().update(_OPS)
from . import _device as _device_mod, _dtype, _hooks
from ._tensor.create import (arange, empty, full, manual_seed, ones, ones_like, rand, randn, tensor,
                             zeros, zeros_like)
from ._device import Device, device, make_device as _make_device, parse_device as _parse_device
from ._dtype import (DType, bfloat16, bool_, complex64, complex128, float16, float32, float64, int8, int16,
                     int32, int64, uint8, uint16, uint32, uint64, float8_e4m3fn, float8_e5m2,
                     float8_e4m3fnuz, float8_e5m2fnuz, float8_e8m0fnu, complex32, uint1, uint2, uint3,
                     uint4, uint5, uint6, uint7, int1, int2, int3, int4, int5, int6, int7, bits1x8,
                     bits2x4, bits4x2, bits8, bits16, float4_e2m1fn_x2)
from ._guard import get_transfer_guard, transfer_guard
from ._stats import Stats, role, stats, track
from . import cpu, cuda, sim
from . import autograd as _autograd
from .autograd import inplace as _autograd_inplace  # noqa: E402
from .autograd import writes as _autograd_writes  # noqa: E402
from .autograd import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .autograd.anomaly_mode import (is_anomaly_check_nan_enabled,  # noqa: E402,F401
                                    is_anomaly_enabled, set_anomaly_enabled)
from ._tensor.join import cat
from ._ops._train import cross_entropy
from ._ops import clamp, clip, log_softmax, mse_loss, softmax
from . import nn, optim
from . import special  # noqa: E402 - torch.special, from the op table's rows
from . import linalg  # noqa: E402 - torch.linalg: LAPACK on the cpu, norms on the device
from . import fft  # noqa: E402 - torch.fft: pocketfft in the CPU backend (FFT nodes)
from . import distributions  # noqa: E402 - torch.distributions, on the tensor API
from .distributions.discrete import multinomial  # noqa: E402
from . import sparse  # noqa: E402 - COO sparse tensors over index_select / index_add_
from . import data  # noqa: E402 - the training layers sit on the tensor API above
from . import utils  # noqa: E402 - pygpu.utils.data is pygpu.data (torch.utils.data's place)
from . import testing  # noqa: E402 - torch.testing (assert_close, make_tensor), as after import torch
from .serialization import load, save  # noqa: E402
from . import _einops_backend  # noqa: E402 - einops finds pygpu's backend on its own
_einops_backend.install()
from ._torch_alias import install_as_torch  # noqa: E402 - `import torch` gives pygpu
from . import amp  # noqa: E402
from .amp import autocast  # noqa: E402
from .amp import autocast_mode as _amp_autocast  # noqa: E402
from .amp import _switches as _amp_switches  # noqa: E402 - torch.set_autocast_enabled, ...
globals().update(_amp_switches.FUNCTIONS)
from .trainer import Trainer  # noqa: E402
from ._sync import devices, synchronize  # noqa: E402
from . import cost  # noqa: E402
from .cost import TransferBudgetError, transfer_budget  # noqa: E402

bool = bool_  # noqa: A001 - pygpu.bool, as torch.bool

from ._version import __version__  # noqa: E402

# ---- the spellings PyTorch programs open with (issue 36) ---------------------------------
from . import _legacy  # noqa: E402 - torch.Tensor(3, 4), FloatTensor([...]), LongTensor(...)
from ._C import Size  # noqa: E402 - Tensor.shape's type, printed as torch.Size([...])
from ._defaults import (get_default_device, get_default_dtype, set_default_device,  # noqa: E402
                        set_default_dtype)
from . import accelerator, backends, hub, multiprocessing, onnx, random, serialization  # noqa: E402
from .accelerator import Event, Stream  # noqa: E402,F401 - torch.Stream/Event, device-generic
from ._printing import get_printoptions, set_printoptions  # noqa: E402 - PyTorch's printing
globals().update(_legacy.TYPED)
from ._tensor import compat as _tensor_compat  # noqa: E402 - torch.greater, torch.pi, Generator..
_COMPAT = {k: v for k, v in _tensor_compat.functions().items() if k not in globals()}
globals().update(_COMPAT)


def is_tensor(obj):
    return isinstance(obj, Tensor)


def numel(input):
    return input.numel()


__all__ = ["Size", "set_printoptions", "get_printoptions", "accelerator", "onnx", "backends", "serialization", "is_tensor", "numel",
           "get_default_dtype", "set_default_dtype", "get_default_device", "set_default_device",
           *_legacy.TYPED, *_COMPAT]
# ---- end spellings ---------------------------------------------------------------------------

# ---- surface (issue 27): Tensor methods written in Python and their module functions ----
from ._tensor import surface as _tensor_surface  # noqa: E402
_tensor_surface.install()
globals().update(_tensor_surface.functions())
_SURFACE_ALL = sorted(_tensor_surface.functions())
# ---- end surface ---------------------------------------------------------------------------

from ._tensor import complex as _complex  # noqa: E402
globals().update(_complex.FUNCTIONS)  # view_as_real, view_as_complex, real, imag, complex, polar
__all__ += sorted(_complex.FUNCTIONS)
from ._tensor.memory_format import HOOKS as _memory_format_hooks  # noqa: E402 - C's to()
from ._tensor import autograd_fields as _tensor_autograd_fields  # noqa: E402 - .grad's check
_C._setup(_dtype.ALL, {
    "repr": _hooks.tensor_repr,
    "parse_to": _hooks.parse_to,
    **_memory_format_hooks,
    "dtype_code": _dtype.dtype_code,
    "parse_device": _parse_device,
    "make_device": _make_device,
    "record": _autograd.record,
    "backward": _autograd.engine._tensor_backward,
    "inplace_begin": _autograd_inplace.begin,
    "inplace_end": _autograd_inplace.end,
    "setitem_grad": _autograd_writes.setitem_grad,
    "copy_grad": _autograd_writes.copy_grad,
    "autocast": _amp_autocast._hook,
    "numpy_extra": _dtype.numpy_extra,
    "legacy_new": _legacy.legacy_new,
    "trace": onnx._trace.trace_hook,
    "complex": _complex.hook,
    "grad_dtype_error": _tensor_autograd_fields.grad_dtype_error,
})


def cpu_isa(detected=False):
    """The vector instruction set the CPU kernels run: "baseline", "avx2", "avx512" or
    "avx512_bf16". With detected=True, the highest level this CPU supports instead.

    The environment variable PYGPU_ISA (read once, at import) caps the level, so every
    variant can be run on one machine: PYGPU_ISA=baseline python ... A level above what
    the CPU supports is never used; a value that names no level refuses the import."""
    return _C._cpu_isa(detected)


@_atexit.register
def _shutdown():
    try:
        for i in _builtins.range(sim.device_count()):
            _C._synchronize(sim._acc.code, i)
    except AsyncOpError:
        pass  # an unobserved failure at exit has nobody left to report to
    _C._shutdown()


__all__ += [
    "Tensor", "DType", "Device", "Stats", "bool", "bool_", "int64", "int32", "int16", "int8",
    "uint8", "float16", "bfloat16", "complex64", "complex128", "uint16", "uint32", "uint64",
    "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu",
    "complex32", "uint1", "uint2", "uint3", "uint4", "uint5", "uint6", "uint7", "int1", "int2",
    "int3", "int4", "int5", "int6", "int7", "bits1x8", "bits2x4", "bits4x2", "bits8", "bits16",
    "float4_e2m1fn_x2",
    "float32", "float64", "tensor", "from_numpy", "from_dlpack", "zeros", "ones", "empty", "full",
    "zeros_like", "ones_like", "arange", "rand", "randn", "manual_seed", *_OPS,
    "device", "devices", "synchronize", "stats", "reset_stats", "track", "role", "transfer_guard",
    "get_transfer_guard", "set_num_threads", "get_num_threads", "sim", "cuda",
    "DeviceMismatchError", "DeviceUnavailableError", "TransferGuardError", "TransferWarning",
    "AsyncOpError", "AxisError", "ShapeError", "DTypeError", "InvalidValueError",
    "IndexOutOfRangeError", "AsyncIndexError", "AcceleratorError", "OutOfMemoryError",
    "no_grad", "enable_grad", "is_anomaly_enabled", "is_anomaly_check_nan_enabled",
    "set_anomaly_enabled", "is_grad_enabled", "set_grad_enabled", "cat", "softmax", "log_softmax", "cross_entropy",
    "mse_loss", "nn", "optim", "special", "linalg", "fft", "distributions", "multinomial", "sparse",
    "data", "save", "load", "install_as_torch", "Trainer", "cost", "transfer_budget", "TransferBudgetError",
    "cpu_isa",
]
__all__ += _SURFACE_ALL  # surface (issue 27)

# int8 quantization (issue 28): pygpu.quantization, its layers in pygpu.nn.quantized, and
# the quantized dtypes as pygpu.qint8 / pygpu.quint8 (not tensor dtypes: docs/inference.md)
from . import quantization  # noqa: E402
from .quantization import qint8, qint32, quint2x4, quint4x2, quint8  # noqa: E402
__all__ += ["quantization", "qint8", "quint8", "qint32", "quint4x2", "quint2x4"]
# issue 43: PyTorch's quantized tensors (quantize_per_tensor, q_scale, ...) and the
# quantization schemes (pygpu.per_tensor_affine, ...): pygpu/quantization/_quantized.py
from .quantization import (_quantized as _q_tensor, _fake_quantize as _q_fake,  # noqa: E402
                           _fbgemm as _q_fbgemm, _quantized_ops as _q_ops)
_C._add_tensor_methods(_q_tensor.TENSOR_METHODS)
for _q_names in (_q_tensor.FUNCTIONS, _q_fake.FUNCTIONS, _q_fbgemm.FUNCTIONS,
                 _q_ops.FUNCTIONS, quantization.QSCHEMES):
    globals().update(_q_names)
    __all__ += sorted(_q_names)
del _q_names

# issue 38: pygpu.profiler (torch.profiler's API) and torch.backends' float32 GEMM switches
from . import backends, profiler  # noqa: E402
from .backends.cuda import get_float32_matmul_precision, set_float32_matmul_precision  # noqa: E402
__all__ += ["backends", "profiler", "get_float32_matmul_precision", "set_float32_matmul_precision"]

# torch.compile, torch.compiler and torch._dynamo (issue 45): PyTorch's arguments and checks;
# every call runs eagerly (pygpu/_dynamo/compiled_function.py says what is not captured)
from . import _dynamo, compiler  # noqa: E402
from ._ops._control_flow import cond, while_loop  # noqa: E402 - torch.cond, torch.while_loop
from .nn._scaled_mm import _scaled_grouped_mm, _scaled_mm  # noqa: E402,F401 - float8 products
from ._ops import _sym_numbers  # noqa: E402 - torch.sym_int, sym_max, ... on concrete numbers
globals().update(_sym_numbers.FUNCTIONS)
__all__ += ["cond", "while_loop", *_sym_numbers.FUNCTIONS, *_amp_switches.FUNCTIONS]
from ._dynamo.eval_frame import compile  # noqa: E402
__all__ += ["compile", "compiler"]

# issue 43: torch's eager spellings of its asynchronous calls, vmap and the CPU switches:
# torch.futures, torch.jit.fork/wait (the function runs at fork time, as eager PyTorch's),
# torch.vmap (pygpu/func), set_flush_denormal and init_num_threads (the C core's threads)
from . import func, futures, jit  # noqa: E402
from .futures import Future  # noqa: E402 - torch.Future, the type fork returns
from .jit import _fork as fork, _wait as wait  # noqa: E402 - torch.fork: no warning
from .func import vmap  # noqa: E402
__all__ += ["func", "futures", "jit", "Future", "fork", "wait", "vmap", "set_flush_denormal",
            "init_num_threads", "get_device_module", "get_file_path"]
# torch.jit.trace's IR objects and the classes a trace returns, at torch's top level
# (pygpu/jit, docs/jit.md), and torch.FileCheck (pygpu/testing/_filecheck.py)
from .jit import (Block, CompilationUnit, Graph, Node, ScriptFunction, ScriptMethod,  # noqa: E402
                  ScriptModule, Use, Value, parse_ir)
from .testing import FileCheck  # noqa: E402
__all__ += ["Block", "CompilationUnit", "Graph", "Node", "ScriptFunction", "ScriptMethod",
            "ScriptModule", "Use", "Value", "parse_ir", "FileCheck"]

# issue 43: TorchScript's types (torch.IntType.get(), torch.ListType(t), ...) and operator
# schemas (torch.parse_schema, FunctionSchema, Argument, Tag), from pygpu/jit/_types.py and
# pygpu/jit/_schema.py (docs/jit.md, "Types and schemas")
from .jit import _types as _jit_types, _schema as _jit_schema  # noqa: E402
from .jit._types import *  # noqa: E402,F401,F403
from .jit._schema import *  # noqa: E402,F401,F403
__all__ += _jit_types.__all__ + _jit_schema.__all__

# issue 43 (names43b): PyTorch's checkpoint archive classes, which pygpu.save/load use
# (pygpu/serialization/_file_archive.py)
from .serialization._file_archive import PyTorchFileReader, PyTorchFileWriter  # noqa: E402
__all__ += ["PyTorchFileReader", "PyTorchFileWriter"]
# the symbolic number classes (pygpu/_ops/_sym_types.py), TorchScript's exception classes and
# the helpers torch re-exports from torch._utils and torch.random (not in __all__: functions
# there get __torch_function__ dispatch, which PyTorch's do not have)
from ._ops._sym_types import SymBool, SymFloat, SymInt  # noqa: E402
from ._ops._torch_internals import FatalError, JITException  # noqa: E402
from ._ops._torch_internals import classproperty  # noqa: E402
from .data.worker import thread_safe_generator  # noqa: E402
__all__ += ["SymBool", "SymFloat", "SymInt", "FatalError", "JITException"]


def get_file_path(*path_components):
    """A path under the directory that holds the pygpu package (torch.get_file_path joins
    onto torch's parent directory: site-packages, or the checkout)."""
    import os
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        *path_components)


def get_device_module(device=None):
    """The module of a device type: get_device_module("cuda") is pygpu.cuda, "sim" pygpu.sim,
    "cpu" pygpu.cpu; None: the current accelerator's (pygpu.accelerator), else pygpu.cpu."""
    if isinstance(device, Device):
        kind = device.type
    elif isinstance(device, str):
        try:
            kind = _device_mod.device(device).type
        except ValueError as e:  # an unknown device type: PyTorch's RuntimeError
            raise RuntimeError(str(e)) from None
    elif device is None:
        acc = accelerator.current_accelerator()
        kind = acc.type if acc is not None else "cpu"
    else:
        raise RuntimeError(f"Invalid value of device '{device}', expect torch.device, str, or "
                           f"None")
    module = _sys.modules.get(f"{__name__}.{kind}")
    if module is None:
        raise RuntimeError(f"Device '{kind}' does not have a corresponding module registered as "
                           f"'torch.{kind}'.")
    return module

# PyTorch's other dtype spellings, the dtype table's alias column (torch.float is float32,
# torch.double float64, torch.half float16, torch.long int64, torch.int int32, torch.short
# int16). Last in the file: the functions above read the builtins float/int/bool, never these.
globals().update(_dtype.ALIASES)
__all__ += sorted(_dtype.ALIASES)
dtype = DType  # torch.dtype: the class of the dtypes, for isinstance(x, torch.dtype)
__all__ += ["dtype"]

# The module paths before issue 44 moved the files into packages. A pickle names the module
# its functions and classes were defined in (a tensor's _rebuild_tensor, nn.CrossEntropyLoss's
# ignore_index, a function pickled by reference): each old path stays an alias of the new
# module, so what was pickled before the move still loads (tests/test_public_names.py).
_MOVED = {f"_tensor_{m.name}": f"_tensor.{m.name}" for m in _pkgutil.iter_modules(_tensor.__path__)}
_MOVED.update({"_conv_ops": "_ops._conv", "_attention_ops": "_ops._attention",
               "_rnn_ops": "_ops._rnn", "_train_ops": "_ops._train",
               "nn._losses": "_ops._nn_losses", "_cuda_streams": "cuda.streams",
               "_nvml": "cuda._nvml", "_linalg_legacy": "linalg._legacy",
               "_map_location": "serialization._map_location",
               "_control_flow": "_ops._control_flow", "_sym_numbers": "_ops._sym_numbers",
               "__future__": "utils._future"})  # torch.__future__ (a root module of its own)
for _old, _new in _MOVED.items():
    _sys.modules[f"{__name__}.{_old}"] = _importlib.import_module(f"{__name__}.{_new}")
del _old, _new
globals()["__future__"] = _sys.modules[f"{__name__}.__future__"]  # torch.__future__.get_...

if _NUMPY_BLAS_LOADED:  # NumPy came first: its running OpenBLAS gets the timeout instead
    _numpy_blas.apply_live()

# The __torch_function__ protocol (issue 43): last, so that every public function is here to
# be wrapped in its C dispatcher (pygpu/overrides.py, csrc/bindings/torch_function.c).
from . import overrides  # noqa: E402
overrides._install([(_sys.modules[__name__], "torch"), (nn.functional, "torch.nn.functional"),
                    (linalg, "torch.linalg"), (fft, "torch.fft"), (special, "torch.special")])
DisableTorchFunction = overrides.DisableTorchFunction
DisableTorchFunctionSubclass = overrides.DisableTorchFunctionSubclass
__all__ += ["overrides", "DisableTorchFunction", "DisableTorchFunctionSubclass"]
