"""torch.overrides: the __torch_function__ protocol (NEP-18 style), as PyTorch has it.

A class that defines `__torch_function__(cls, func, types, args=(), kwargs=None)`, a Tensor
subclass or any other class, is handed every pygpu function or Tensor method called with one
of its objects among the arguments; a TorchFunctionMode (`with MyMode():`) is handed every
call made while it is on the stack. pygpu.Tensor's own __torch_function__ (the default that
subclasses inherit) runs the function with subclass dispatch off and turns its tensor
results into the subclass (PyTorch's _convert).

How the calls get here: _install() wraps each public function (pygpu, nn.functional, linalg,
fft, special) and each Tensor method once at import in a C dispatcher
(csrc/bindings/torch_function.c). On plain tensors and Python scalars the dispatcher costs a
pointer comparison per argument and calls the function; otherwise it calls _dispatch below.
Functions in get_ignored_functions() (factories, global switches, ...) are not wrapped, as
PyTorch does not dispatch them.

A subclass's operators go through the wrapped dunder methods (its C slots are Python's
generic ones); a plain tensor's operators stay C slots, which check one flag for a mode. A
subclass's property reads (t.grad, t.shape) are dispatched as Tensor.<name>.__get__.

Limits: the switches and the mode stack are process-wide (PyTorch's are per thread); a
property read on a plain tensor is not seen by a mode; property writes are not dispatched."""
import contextlib as _contextlib
import functools as _functools
import sys as _sys
import types as _types

from .. import _C

_Tensor = _C.Tensor
_disabled_torch_function_impl = _C._disabled_torch_function_impl
has_torch_function = _C._has_torch_function
has_torch_function_unary = _C._has_torch_function_unary
has_torch_function_variadic = _C._has_torch_function_variadic

__all__ = ["get_ignored_functions", "get_overridable_functions", "get_testing_overrides",
           "handle_torch_function", "has_torch_function", "has_torch_function_unary",
           "has_torch_function_variadic", "is_tensor_like", "is_tensor_method_or_property",
           "resolve_name", "wrap_torch_function", "enable_reentrant_dispatch",
           "TorchFunctionMode", "BaseTorchFunctionMode"]

# ---- the switches ------------------------------------------------------------------------

_SUBCLASSES_OFF, _ALL_OFF = 1, 2
_mode_stack = []


def _state():
    return _C._torch_function_state()[0]


def _set(disabled):
    _C._set_torch_function_state(disabled, len(_mode_stack))


class DisableTorchFunctionSubclass:
    """Within it, Tensor subclasses' and other classes' __torch_function__ are not called
    (modes still are): what Tensor.__torch_function__ runs the function under."""

    def __enter__(self):
        self._prev = _state()
        _set(max(self._prev, _SUBCLASSES_OFF))
        return self

    def __exit__(self, *exc):
        _set(self._prev)

    def __call__(self, fn):
        @_functools.wraps(fn)
        def inner(*args, **kwargs):
            with self.__class__():
                return fn(*args, **kwargs)
        return inner


class DisableTorchFunction(DisableTorchFunctionSubclass):
    """Within it, no __torch_function__ is called, modes' included."""

    def __enter__(self):
        self._prev = _state()
        _set(_ALL_OFF)
        return self


def _is_torch_function_enabled():
    return _state() == 0


def _is_torch_function_mode_enabled():
    return bool(_mode_stack) and _state() < _ALL_OFF


# ---- modes -------------------------------------------------------------------------------

def _push_on_torch_function_stack(mode):
    _mode_stack.append(mode)
    _set(_state())


def _pop_torch_function_stack():
    if not _mode_stack:
        raise RuntimeError("Trying to pop from an empty mode stack")
    mode = _mode_stack.pop()
    _set(_state())
    return mode


def _len_torch_function_stack():
    return len(_mode_stack)


def _get_function_stack_at(i):
    return _mode_stack[i]


def _get_current_function_mode():
    return _mode_stack[-1] if _mode_stack else None


def _get_current_function_mode_stack():
    return list(_mode_stack)


@_contextlib.contextmanager
def _pop_mode_temporarily():
    mode = _pop_torch_function_stack()
    try:
        yield mode
    finally:
        _push_on_torch_function_stack(mode)


class TorchFunctionMode:
    """A context manager that sees every pygpu function and Tensor method called inside
    it: subclass it, define __torch_function__(self, func, types, args=(), kwargs=None),
    and enter it with `with MyMode():`. While its __torch_function__ runs, the mode is off
    the stack, so calling func there runs the function (or the next mode)."""

    def __init__(self):
        pass

    def __torch_function__(self, func, types, args=(), kwargs=None):
        raise NotImplementedError

    def __enter__(self):
        _push_on_torch_function_stack(self)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        _pop_torch_function_stack()

    @classmethod
    def push(cls, *args, **kwargs):
        return cls(*args, **kwargs)


class BaseTorchFunctionMode(TorchFunctionMode):
    """A mode that runs every function as is: subclass it and override what you need."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


@_contextlib.contextmanager
def enable_reentrant_dispatch():
    """PyTorch's switch for re-entering the dispatcher from a subclass; pygpu has no
    dispatcher below Python, so it is a no-op context."""
    yield


# ---- dispatch ----------------------------------------------------------------------------

def _foreign_tensor(arg_type):
    """A real PyTorch tensor handed to pygpu (from_dlpack, as_tensor): its class's
    __torch_function__ is PyTorch's, which would call the pygpu function straight back."""
    torch = _sys.modules.get("torch")
    base = getattr(torch, "Tensor", None)
    return isinstance(base, type) and base is not _Tensor and issubclass(arg_type, base)


def _get_overloaded_args(relevant_args, get_type_fn=None):
    """The arguments whose class overrides, one per class: a subclass before its base
    classes, else in the order given (PyTorch's rule)."""
    get_type_fn = get_type_fn or type
    if _state():
        return []
    overloaded_types, overloaded_args = set(), []
    for arg in relevant_args:
        arg_type = get_type_fn(arg)
        if (arg_type not in overloaded_types and hasattr(arg_type, "__torch_function__")
                and arg_type.__torch_function__ is not _disabled_torch_function_impl
                and not _foreign_tensor(arg_type)):
            overloaded_types.add(arg_type)
            index = len(overloaded_args)
            for i, old in enumerate(overloaded_args):
                if issubclass(arg_type, get_type_fn(old)):
                    index = i
                    break
            overloaded_args.insert(index, arg)
    return overloaded_args


def _call(obj, func, types_, args, kwargs):
    """obj's __torch_function__, bound: a classmethod (the protocol) binds to the class,
    a plain method of a non-tensor class (which PyTorch accepts too) to the object."""
    return obj.__torch_function__(func, types_, args, kwargs)


def _handle(public_api, overloaded_args, args, kwargs):
    if _is_torch_function_mode_enabled():
        with _pop_mode_temporarily() as mode:
            result = mode.__torch_function__(public_api, tuple(type(a) for a in overloaded_args),
                                             args, kwargs)
        if result is not NotImplemented:
            return result
    types_ = tuple(type(a) for a in overloaded_args)
    for arg in overloaded_args:
        result = _call(arg, public_api, types_, args, kwargs)
        if result is not NotImplemented:
            return result
    name = resolve_name(public_api) or getattr(public_api, "__name__", repr(public_api))
    raise TypeError(f"no implementation found for '{name}' on types that implement "
                    f"__torch_function__: {[type(a) for a in overloaded_args]}")


def handle_torch_function(public_api, relevant_args, *args, **kwargs):
    """Hand a call of public_api to the active mode and to the __torch_function__ of the
    overriding arguments among relevant_args, until one does not return NotImplemented;
    TypeError when none takes it."""
    return _handle(public_api, _get_overloaded_args(relevant_args), args, kwargs)


def _dispatch(api, overloaded, args, kwargs):
    """The C dispatcher's slow path: overloaded is None or the overriding arguments."""
    overloaded = _get_overloaded_args(overloaded or ())
    if not overloaded and not _is_torch_function_mode_enabled():
        return api.__wrapped__(*args, **kwargs)  # only PyTorch's own tensors were there
    return _handle(api, overloaded, args, kwargs)


_C._set_torch_function_dispatch(_dispatch)


def wrap_torch_function(dispatcher):
    """A decorator: the function honours __torch_function__ for the arguments that
    dispatcher(*args, **kwargs) returns."""
    def inner(func):
        @_functools.wraps(func)
        def wrapped(*args, **kwargs):
            relevant_args = dispatcher(*args, **kwargs)
            if has_torch_function(relevant_args):
                return handle_torch_function(wrapped, relevant_args, *args, **kwargs)
            return func(*args, **kwargs)
        return wrapped
    return inner


def is_tensor_like(inp):
    """A Tensor (or subclass), or an object whose class defines __torch_function__."""
    return type(inp) is _Tensor or hasattr(inp, "__torch_function__")


# ---- Tensor's default __torch_function__ -----------------------------------------------

def _convert(ret, cls):
    if cls is _Tensor:
        return ret
    if isinstance(ret, _Tensor) and not isinstance(ret, cls):
        ret = ret.as_subclass(cls)
    if isinstance(ret, (tuple, list)):
        items = [_convert(r, cls) for r in ret]
        ret = type(ret)(*items) if hasattr(ret, "_fields") else type(ret)(items)
    return ret


def get_default_nowrap_functions():
    """The functions whose results the default __torch_function__ leaves as they are: the
    getters of .grad and ._base (a subclass's gradient is what backward made)."""
    return {f for name, f in _GETTERS.items() if name in ("grad", "_base")}


# ---- property reads on a subclass ------------------------------------------------------

_GETTERS = {}   # Tensor property name -> its getter, the func a __torch_function__ is handed


class _DispatchedProperty:
    """A Tensor property as a Tensor subclass sees it: its read goes through
    __torch_function__ with func = Tensor.<name>.__get__, as PyTorch's do. Installed on each
    subclass when it is made (Tensor.__init_subclass__), so a plain tensor's reads stay the
    C type's own."""

    def __init__(self, name, descriptor):
        self.name, self.descriptor = name, descriptor
        self.getter = _GETTERS.setdefault(name, descriptor.__get__)
        self.__doc__ = getattr(descriptor, "__doc__", None)

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self.descriptor
        if has_torch_function_unary(obj):
            return handle_torch_function(self.getter, (obj,), obj)
        return self.getter(obj)

    def __set__(self, obj, value):
        self.descriptor.__set__(obj, value)

    def __delete__(self, obj):
        self.descriptor.__delete__(obj)


def _tensor_init_subclass(cls, **kwargs):
    """Tensor.__init_subclass__: give the new subclass the dispatched property reads (those
    it or a base between it and Tensor does not define itself)."""
    for name, v in vars(_Tensor).items():
        if name.startswith("__") or not isinstance(v, (property, _types.GetSetDescriptorType)):
            continue
        if any(name in vars(k) for k in cls.__mro__[:cls.__mro__.index(_Tensor)]):
            continue
        setattr(cls, name, _DispatchedProperty(name, v))
    super(_Tensor, cls).__init_subclass__(**kwargs)  # a mixin's after Tensor in the MRO


def _tensor_torch_function(cls, func, types, args=(), kwargs=None):
    """Tensor.__torch_function__: run func with subclass dispatch off, then give its tensor
    results the subclass (NotImplemented when another argument's class is not cls's base)."""
    if kwargs is None:
        kwargs = {}
    if not all(issubclass(cls, t) for t in types):
        return NotImplemented
    with DisableTorchFunctionSubclass():
        ret = func(*args, **kwargs)
        if func in get_default_nowrap_functions():
            return ret
        return _convert(ret, cls)


# ---- which functions dispatch ----------------------------------------------------------

# PyTorch's get_ignored_functions() that pygpu has: factories, switches, queries of global
# state and the like, which never see a tensor subclass (torch/overrides.py).
_IGNORED = """arange are_deterministic_algorithms_enabled as_strided as_tensor asarray
autocast_decrement_nesting autocast_increment_nesting bartlett_window blackman_window
broadcast_shapes can_cast clear_autocast_cache compile cond cudnn_affine_grid_generator
cudnn_batch_norm cudnn_convolution cudnn_convolution_add_relu cudnn_convolution_relu
cudnn_convolution_transpose cudnn_grid_sampler cudnn_is_acceptable device dtype empty
empty_permuted empty_quantized empty_strided enable_grad eye fill finfo fork from_file
from_numpy frombuffer full get_autocast_cpu_dtype get_autocast_dtype get_autocast_gpu_dtype
get_autocast_ipu_dtype get_autocast_xla_dtype get_default_device get_default_dtype
get_deterministic_debug_mode get_device_module get_float32_matmul_precision
get_num_interop_threads get_num_threads get_rng_state hamming_window hann_window iinfo
inference_mode init_num_threads initial_seed is_anomaly_check_nan_enabled is_anomaly_enabled
is_autocast_cache_enabled is_autocast_cpu_enabled is_autocast_enabled is_autocast_ipu_enabled
is_autocast_xla_enabled is_deterministic_algorithms_warn_only_enabled is_grad_enabled
is_inference_mode_enabled is_storage is_tensor is_vulkan_available is_warn_always_enabled
kaiser_window layout linspace load logspace manual_seed memory_format mkldnn_adaptive_avg_pool2d
mkldnn_convolution mkldnn_max_pool2d mkldnn_max_pool3d no_grad normal ones promote_types qscheme
rand rand_like randint randint_like randn randn_like randperm range result_type save
scalar_tensor seed set_anomaly_enabled set_autocast_cache_enabled set_autocast_cpu_dtype
set_autocast_cpu_enabled set_autocast_dtype set_autocast_enabled set_autocast_gpu_dtype
set_autocast_ipu_dtype set_autocast_ipu_enabled set_autocast_xla_dtype set_autocast_xla_enabled
set_default_device set_default_tensor_type set_deterministic_debug_mode
set_float32_matmul_precision set_flush_denormal set_grad_enabled set_num_interop_threads
set_num_threads set_printoptions set_rng_state set_warn_always sparse_bsc_tensor
sparse_bsr_tensor sparse_compressed_tensor sparse_coo_tensor sparse_csc_tensor
sparse_csr_tensor sym_constrain_range sym_constrain_range_for_size sym_fresh_size tensor
tril_indices triu_indices typename use_deterministic_algorithms vander vmap wait zeros
zeros_like ones_like empty_like full_like
install_as_torch get_default_dtype""".split()
_IGNORED_F = """grouped_mm handle_torch_function has_torch_function has_torch_function_unary
has_torch_function_variadic hardsigmoid hardswish sigmoid tanh upsample upsample_bilinear
upsample_nearest""".split()
# Tensor's: the object protocol, the constructors of new tensors, and what PyTorch ignores
_IGNORED_TENSOR = """__delattr__ __delitem__ __dir__ __getattribute__ __hash__ __init__
__init_subclass__ __iter__ __new__ __setattr__ __subclasshook__ __repr__ __format__
__reduce__ __reduce_ex__ __setstate__ __getstate__ __copy__ __deepcopy__ __dlpack__
__dlpack_device__ __array__ __array_wrap__ __array_priority__ __sizeof__ __class_getitem__
__torch_function__ __complex__ __contains__ __reversed__
__buffer__ __release_buffer__ __getbuffer__
as_subclass _make_subclass new new_empty new_empty_strided new_full new_ones new_tensor
new_zeros stride unflatten to_sparse_coo to_sparse_csr to_sparse_csc to_sparse_bsr
to_sparse_bsc""".split()
# Tensor's slot wrappers that do dispatch (operators, indexing, conversions), each with the
# name PyTorch hands to __torch_function__ (x + 1 is "add", x += 1 "add_", 1 - x "__rsub__")
_TENSOR_DUNDERS = {
    "__add__": "add", "__radd__": "add", "__iadd__": "add_", "__sub__": "sub",
    "__rsub__": "__rsub__", "__isub__": "sub_", "__mul__": "mul", "__rmul__": "mul",
    "__imul__": "mul_", "__truediv__": "div", "__rtruediv__": "__rdiv__", "__itruediv__": "div_",
    "__floordiv__": "__floordiv__", "__rfloordiv__": "__rfloordiv__",
    "__ifloordiv__": "floor_divide_", "__mod__": "remainder", "__rmod__": "__rmod__",
    "__imod__": "remainder_", "__pow__": "pow", "__rpow__": "__rpow__", "__ipow__": "pow_",
    "__matmul__": "matmul", "__rmatmul__": "__rmatmul__", "__and__": "__and__",
    "__rand__": "bitwise_and", "__iand__": "__iand__", "__or__": "__or__",
    "__ror__": "bitwise_or", "__ior__": "__ior__", "__xor__": "__xor__",
    "__rxor__": "bitwise_xor", "__ixor__": "__ixor__", "__lshift__": "__lshift__",
    "__rlshift__": "__rlshift__", "__ilshift__": "__ilshift__", "__rshift__": "__rshift__",
    "__rrshift__": "__rrshift__", "__irshift__": "__irshift__", "__lt__": "lt", "__le__": "le",
    "__gt__": "gt", "__ge__": "ge", "__eq__": "__eq__", "__ne__": "ne", "__neg__": "neg",
    "__pos__": "positive", "__abs__": "abs", "__invert__": "__invert__",
    "__getitem__": "__getitem__", "__setitem__": "__setitem__", "__len__": "__len__",
    "__bool__": "__bool__", "__float__": "__float__", "__int__": "__int__",
    "__index__": "__index__"}

_FUNCTION_TYPES = (_types.FunctionType, _types.BuiltinFunctionType)
_METHOD_TYPES = (_types.FunctionType, _types.MethodDescriptorType)
_overridable = {}   # namespace object -> [dispatchers]
_names = {}         # dispatcher -> PyTorch's name ("torch.add", "torch.Tensor.add")
_paths = {}         # dispatcher -> (module, attribute path): how it pickles
_made = {}          # (namespace, id(function)) -> its dispatcher, which holds the function
_ignored = set()
_dispatchers = set()


def _also_at_home(fn, d):
    """A Python function is replaced in the module that defines it too, so that a pickle
    naming it there (pygpu._tensor.stack.stack) loads the function that dispatches."""
    import sys
    home = sys.modules.get(getattr(fn, "__module__", None) or "")
    if isinstance(fn, _types.FunctionType) and home is not None and \
            getattr(home, fn.__name__, None) is fn:
        setattr(home, fn.__name__, d)


def _wrap_namespace(mod, torch_name, names, ignored):
    installed = []
    for name in names:
        fn = getattr(mod, name, None)
        if isinstance(fn, (_C._TorchFunctionDispatch, _C._TorchFunctionMethod)):
            installed.append(fn)
            continue
        if not isinstance(fn, _FUNCTION_TYPES) or name.startswith("_"):
            continue
        if name in ignored:
            _ignored.add(fn)
            continue
        # an alias in one namespace (pygpu.mul is pygpu.multiply) shares its dispatcher; one
        # function in two (pygpu.relu, nn.functional.relu) has two, as PyTorch's are two
        d = _made.get((torch_name, id(fn)))
        if d is None:
            d = _made[torch_name, id(fn)] = _C._TorchFunctionDispatch(fn)
            _names[d] = f"{torch_name}.{name}"
            _paths[d] = (mod.__name__, name)
            _also_at_home(fn, d)
        setattr(mod, name, d)
        installed.append(d)
    _overridable[mod] = installed
    _dispatchers.update(installed)


def _wrap_tensor():
    new, installed = {}, []
    for name, v in list(vars(_Tensor).items()):
        if name in _IGNORED_TENSOR:
            if isinstance(v, _METHOD_TYPES + (_types.WrapperDescriptorType,)):
                _ignored.add(v)
            continue
        if isinstance(v, _C._TorchFunctionMethod):
            installed.append(v)
            continue
        dunder = name.startswith("__")
        if (dunder and name in _TENSOR_DUNDERS and isinstance(v, _types.WrapperDescriptorType)) or (
                not name.startswith("_") and isinstance(v, _METHOD_TYPES)):
            d = None if dunder else _made.get(("torch.Tensor", id(v)))  # mul is multiply
            if d is None:
                d = _C._TorchFunctionMethod(v, _TENSOR_DUNDERS[name]) if dunder else \
                    _C._TorchFunctionMethod(v)
                _made["torch.Tensor", id(v)] = d
                _names[d] = f"torch.Tensor.{name}"
                _paths[d] = ("pygpu", f"Tensor.{name}")
            new[name] = d
            installed.append(d)
    new["__torch_function__"] = classmethod(_tensor_torch_function)
    new["__init_subclass__"] = classmethod(_tensor_init_subclass)
    new["_make_subclass"] = staticmethod(_C._make_subclass)
    _C._add_tensor_methods(new)
    _overridable[_Tensor] = installed
    _dispatchers.update(installed)


def _install(namespaces):
    """Wrap Tensor's methods and the public functions of namespaces ([(module, PyTorch's
    name for it)]: pygpu, nn.functional, linalg, ...) in the C dispatcher, once, at the end
    of pygpu's import."""
    if _overridable:
        return
    _wrap_tensor()
    for mod, torch_name in namespaces:
        ignored = {"torch": _IGNORED, "torch.nn.functional": _IGNORED_F}.get(torch_name, ())
        _wrap_namespace(mod, torch_name, list(getattr(mod, "__all__", dir(mod))), set(ignored))


def _resolve(module, path):
    import importlib
    obj = importlib.import_module(module)
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _reduce(d):
    """A dispatcher pickles by reference, as the function it wraps did."""
    return (_resolve, _paths[d])


def get_ignored_functions():
    """The public functions (and Tensor methods) that do not dispatch through
    __torch_function__: factories, global switches and the object protocol."""
    return set(_ignored)


def get_overridable_functions():
    """{namespace: [function, ...]}: every function that dispatches, by the namespace
    (pygpu, pygpu.Tensor, pygpu.nn.functional, pygpu.linalg, ...) it is found in."""
    return {ns: list(fns) for ns, fns in _overridable.items()}


def get_testing_overrides():
    """{function: a lambda of the same signature returning -1}, for every overridable
    function (PyTorch's hand-written table; here made from each function's signature)."""
    import inspect
    out = {}
    for fns in _overridable.values():
        for f in fns:
            try:
                sig = inspect.signature(f.__wrapped__)
            except (TypeError, ValueError):
                sig = None

            def dummy(*args, **kwargs):
                return -1
            if sig is not None:
                dummy.__signature__ = sig
            dummy.__name__ = getattr(f, "__name__", "dummy")
            out[f] = dummy
    return out


@_functools.lru_cache(None)
def _get_tensor_methods():
    return set(_overridable.get(_Tensor, ()))


def is_tensor_method_or_property(func):
    """Whether func is a Tensor method or a property's getter, whose first argument is the
    tensor (so that __torch_function__ implementations can tell them from functions)."""
    return func in _get_tensor_methods() or getattr(func, "__name__", None) == "__get__"


def resolve_name(f):
    """PyTorch's name of an overridable function ("torch.add", "torch.Tensor.add",
    "torch.nn.functional.relu"), or None."""
    if any(f is g for g in _GETTERS.values()):
        return f"torch.Tensor.{f.__self__.__name__}.__get__"
    return _names.get(f)


_C_NAMES = {"DisableTorchFunction": DisableTorchFunction,
         "DisableTorchFunctionSubclass": DisableTorchFunctionSubclass,
         "_is_torch_function_enabled": _is_torch_function_enabled,
         "_is_torch_function_mode_enabled": _is_torch_function_mode_enabled,
         "_len_torch_function_stack": _len_torch_function_stack,
         "_push_on_torch_function_stack": _push_on_torch_function_stack,
         "_pop_torch_function_stack": _pop_torch_function_stack,
         "_get_function_stack_at": _get_function_stack_at}
for _k, _v in _C_NAMES.items():   # torch._C's spellings
    setattr(_C, _k, _v)
