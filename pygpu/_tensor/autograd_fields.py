"""A tensor's autograd fields that PyTorch keeps beside grad and grad_fn, and the removed
spellings old programs still touch.

  output_nr      which output of its grad_fn the tensor is: 0 for a leaf and for a
                 single-output op; for split/chunk/unbind/var_mean/std_mean/aminmax the
                 output's index (PyTorch makes one node with n outputs, pygpu one node per
                 output, which carries the index: autograd/engine.py's number_outputs).
  module_load    how Module.load_state_dict turns a state-dict value into what replaces
                 a parameter or buffer when pygpu.__future__.get_swap_module_params_on_conversion()
                 is on: `self.copy_(other).detach()`, or `other.detach()` with assign=True
                 (torch/_tensor.py's; a subclass overrides it).
  grad_dtype     the dtype .grad may have (PyTorch 2.13): the tensor's own by default,
                 another dtype, or None for any; leaves only. Assigning .grad checks it (C:
                 autograd.c's grad setter, whose error words grad_dtype_error gives) and
                 backward casts what it accumulates into a leaf to it (autograd/engine.py).
                 The field lives in the C tensor (tensor_object.h), raw as _grad_dtype_code.
  is_inference   whether the tensor was made under inference_mode (or views one that was):
                 a flag of its memory, set when a tensor made there first holds it
                 (tensor_object.c); also torch.is_inference.
  volatile       Variable.volatile, removed in PyTorch 0.4: reads False and setting it does
                 nothing, each with PyTorch's UserWarning.
  reinforce      removed with stochastic functions: raises PyTorch's RuntimeError, which
                 shows the torch.distributions form to write instead."""
import warnings

from .. import _C, _dtype

Tensor = _C.Tensor


def _output_nr(self):
    fn = self.grad_fn
    return getattr(fn, "output_nr", 0) if fn is not None else 0


def module_load(self, other, assign=False):
    """What load_state_dict swaps into `self` (a parameter or buffer) for the state-dict
    value `other`: a new tensor, never `self` or `other` (PyTorch's rule for overrides)."""
    if assign:
        return other.detach()
    return self.copy_(other).detach()


# c10's two spellings of a dtype in grad_dtype's errors: ScalarType's and the C++ type's
_SCALAR_WORD = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
                "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char",
                "uint8": "Byte", "bool": "Bool", "complex64": "ComplexFloat",
                "complex128": "ComplexDouble"}
_CPP_WORD = {"float32": "float", "float64": "double", "float16": "c10::Half",
             "bfloat16": "c10::BFloat16", "int64": "long int", "int32": "int",
             "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
             "bool": "bool", "complex64": "c10::complex<float>",
             "complex128": "c10::complex<double>"}


def grad_dtype_of(t):
    """The dtype t's .grad must have, or None for any (no leaf check: the engine's)."""
    code = t._grad_dtype_code
    return t.dtype if code == 0 else None if code == 1 else _dtype.ALL[code - 2]


def _get_grad_dtype(self):
    if not self.is_leaf:
        raise RuntimeError("grad_dtype can only be accessed on leaf tensors.")
    return grad_dtype_of(self)


def _set_grad_dtype(self, value):
    if not self.is_leaf:
        raise RuntimeError("grad_dtype can only be set on leaf tensors.")
    if value is not None and not isinstance(value, _dtype.DType):
        raise RuntimeError(f"grad_dtype must be a torch.dtype or None, but got "
                           f"{type(value).__name__}")
    g = self.grad
    if value is not None and g is not None and g.dtype is not value:
        raise RuntimeError(
            f"Cannot set grad_dtype to '{_SCALAR_WORD.get(value.name, value.name)}' because "
            f"there is already a gradient with dtype '{_CPP_WORD.get(g.dtype.name, g.dtype.name)}'"
            f". Please clear the gradient (.grad = None) before changing grad_dtype, or ensure "
            f"the new grad_dtype matches the existing gradient's dtype.")
    self._grad_dtype_code = 1 if value is None else 2 + value._code


def grad_dtype_error(self, grad):
    """The C grad setter's hook: PyTorch's error for a gradient of another dtype."""
    want = grad_dtype_of(self)
    raise RuntimeError(
        f"attempting to assign a gradient with dtype "
        f"'{_CPP_WORD.get(grad.dtype.name, grad.dtype.name)}' to a tensor with grad_dtype "
        f"'{_SCALAR_WORD.get(want.name, want.name)}'. The gradient must match the tensor's "
        f"grad_dtype (defaults to the tensor's dtype). You can set the tensor's grad_dtype "
        f"attribute with a specific dtype, or None to allow any dtype. Set grad_dtype with "
        f"caution. Diverging the dtypes of a tensor and its gradient may break downstream "
        f"systems that assume they match.")


def is_inference(input):
    """torch.is_inference / Tensor.is_inference(): made under inference_mode."""
    return _C._is_inference(input)


def _get_volatile(self):
    warnings.warn("volatile was removed (Variable.volatile is always False)", UserWarning,
                  stacklevel=2)
    return False


def _set_volatile(self, value):
    warnings.warn("volatile was removed and now has no effect. Use `with torch.no_grad():` "
                  "instead.", UserWarning, stacklevel=2)


_REINFORCE_REMOVED = """reinforce() was removed.
Use torch.distributions instead.
See https://pytorch.org/docs/main/distributions.html

Instead of:

probs = policy_network(state)
action = probs.multinomial()
next_state, reward = env.step(action)
action.reinforce(reward)
action.backward()

Use:

probs = policy_network(state)
# NOTE: categorical is equivalent to what used to be called multinomial
m = torch.distributions.Categorical(probs)
action = m.sample()
next_state, reward = env.step(action)
loss = -m.log_prob(action) * reward
loss.backward()
"""


def reinforce(self, reward):
    """Removed from PyTorch (stochastic functions); always raises, as PyTorch's does."""
    raise RuntimeError(_REINFORCE_REMOVED)


FUNCTIONS = {"is_inference": is_inference}

METHODS = {
    "output_nr": property(_output_nr, doc="which output of its grad_fn this tensor is"),
    "module_load": module_load,
    "is_inference": is_inference,
    "grad_dtype": property(_get_grad_dtype, _set_grad_dtype,
                           doc="the dtype .grad may have (None: any); leaves only"),
    "volatile": property(_get_volatile, _set_volatile,
                         doc="removed: always False (PyTorch's UserWarning)"),
    "reinforce": reinforce,
}
