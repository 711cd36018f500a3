"""pygpu.nn.utils.prune: torch.nn.utils.prune's functions and pruning methods for pygpu
modules, plus compact(), which PyTorch lacks.

The reparametrization is PyTorch's (torch/nn/utils/prune.py, the oracle the tests check
against): pruning the parameter `name` moves it to the parameter `name + "_orig"` (the same
tensor object, so optimizers keep it), adds the buffer `name + "_mask"` (orig's dtype, 1 keeps
and 0 prunes), and registers the method object as a forward pre-hook that sets
`module.<name> = <name>_orig * <name>_mask` before every forward. Pruning the same parameter
again composes through a PruningContainer: the new method sees only the entries
(unstructured) or channels (structured) still unpruned. state_dict keys are PyTorch's, so
pruned checkpoints interoperate.

Masks are computed on the host in NumPy, once per prune call, with the choices torch makes
(its rounding of fractional amounts, k smallest |w| for l1, k largest channel norms kept for
ln_structured); a method's compute_mask therefore takes and returns NumPy arrays.

Per forward, the masked weight is NOT recomputed: the product is cached, keyed on the
(id, _write_stamp) stamps of <name>_orig and <name>_mask (pygpu changes _write_stamp on every write
through pygpu: ops, copies, optimizer steps, .to()), so inference pays for the multiply once
per change and training once per optimizer step, as PyTorch pays it on every forward. Each
forward gets a fresh alias of the cached product with its own graph node (_MaskedWeight),
whose backward is g * mask: the gradient reaching <name>_orig is zero under the mask.
Writes made behind pygpu's back (through a NumPy view of the memory) do not change _write_stamp:
call the module's pruning hook's `invalidate()` or re-prune after such writes.
A Linear's weight whose GEMM packs the weight itself (pygpu's own float32 kernel, or the
AVX512_BF16 kernel under autocast bfloat16: _ops._train.mask_fusion_pays) skips even that: the
hook computes nothing, the forward hands weight_orig and weight_mask to the GEMM, which
multiplies the mask in as it packs the weight (csrc/core/pg_gemm.h b_mask), and
module.weight is computed on access (docs/pruning.md)."""
import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable

import numpy as np

from ... import _C
from ..._tensor import create as _tensor_create
from ...autograd import Function, no_grad
from ..._ops._train import mask_fusion_pays as _mask_fusion_pays
from ..module import Module
from ._compact import compact

Tensor = _C.Tensor

__all__ = ["BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured",
           "L1Unstructured", "RandomStructured", "LnStructured", "CustomFromMask", "identity",
           "random_unstructured", "l1_unstructured", "random_structured", "ln_structured",
           "global_unstructured", "custom_from_mask", "remove", "is_pruned", "compact"]


class PruningDimError(IndexError, ValueError):
    """A `dim` outside the parameter's dimensions: an IndexError as in PyTorch, and a
    ValueError, as pygpu reports bad arguments."""


class MissingParameterError(AttributeError, ValueError):
    """No parameter of that name on the module: an AttributeError as getattr raises in
    PyTorch, and a ValueError, as pygpu reports bad arguments."""


# ---- host-side helpers (masks are small one-off computations: NumPy, float64) -------------

def _host(t):
    """A pygpu Tensor (any device, any float dtype), an array or array-like -> float64 ndarray."""
    if isinstance(t, Tensor):
        t = t.detach()
        if t.device.type != "cpu":
            t = t.to("cpu")  # an explicit, counted copy: masks are computed on the host
        return np.array(t.numpy(), dtype=np.float64)
    if hasattr(t, "detach") and hasattr(t, "cpu"):  # a torch tensor, or alike
        t = t.detach().cpu()
    return np.array(t, dtype=np.float64)


def _like(arr, ref):
    """The float64 ndarray arr as a tensor of ref's dtype on ref's device."""
    t = _tensor_create.tensor(np.ascontiguousarray(arr, dtype=np.float32))
    if t.dtype != ref.dtype:
        t = t.astype(ref.dtype)
    return t.to(ref.device) if ref.device.type != "cpu" else t


def _validate_pruning_amount_init(amount):
    if isinstance(amount, bool) or not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount!r}. Must be int (a count) or float "
                        "(a fraction in [0, 1]).")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
            not isinstance(amount, numbers.Integral) and not 0.0 <= float(amount) <= 1.0):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a "
                         "non-negative integer")


def _compute_nparams_toprune(amount, tensor_size):
    if isinstance(amount, numbers.Integral):
        return int(amount)
    return round(amount * tensor_size)  # Python's round, as torch (half to even)


def _validate_pruning_amount(amount, tensor_size):
    if isinstance(amount, numbers.Integral) and amount > tensor_size:
        raise ValueError(f"amount={amount} should be smaller than the number of parameters to "
                         f"prune={tensor_size}")


def _validate_structured_pruning(t):
    if t.ndim <= 1:
        raise ValueError("Structured pruning can only be applied to multidimensional tensors. "
                         f"Found tensor of shape {tuple(t.shape)} with {t.ndim} dims")


def _normalize_dim(dim, ndim):
    if isinstance(dim, bool) or not isinstance(dim, numbers.Integral):
        raise TypeError(f"dim must be an int, got {type(dim).__name__}")
    if not -ndim <= dim < ndim:
        raise PruningDimError(f"dim={dim} is out of range for a {ndim}-d parameter (valid: "
                              f"{-ndim} to {ndim - 1})")
    return int(dim) % ndim


def _compute_norm(t, n, dim):
    """The L_n norm of each channel along dim (torch.norm(t, p=n, dim=all others))."""
    a = np.abs(np.moveaxis(t, dim, 0).reshape(t.shape[dim], -1))  # (channels, rest)
    if n == "fro":
        n = 2
    if n == float("inf"):
        return a.max(axis=1) if a.shape[1] else np.zeros(a.shape[0])
    if n == float("-inf"):
        return a.min(axis=1) if a.shape[1] else np.zeros(a.shape[0])
    if n == 0:
        return np.count_nonzero(a, axis=1).astype(np.float64)
    if n == 1:
        return a.sum(axis=1)
    if n == 2:
        return np.sqrt((a * a).sum(axis=1))
    return (a ** n).sum(axis=1) ** (1.0 / n)


def _validate_norm(n):
    if n == "fro" or (isinstance(n, numbers.Real) and not isinstance(n, bool)):
        return
    raise ValueError(f"n={n!r}: ln_structured takes a real p (1, 2, float('inf'), "
                     "float('-inf'), 0, ...) or 'fro'; 'nuc' needs a pair of dims and is not "
                     "a per-channel norm")


# ---- the cached masked weight --------------------------------------------------------------

class _MaskedWeight(Function):
    """weight = orig * mask, with the product computed beforehand (cached): forward returns an
    alias of it, backward is PyTorch's MulBackward for orig, g * mask."""

    @staticmethod
    def forward(ctx, orig, mask, product):
        ctx.save(mask)
        return product.detach()

    @staticmethod
    def backward(ctx, g):
        (mask,) = ctx.saved
        return g * mask, None, None


# ---- the mask fused into the GEMM -----------------------------------------------------------

_FUSION = {"on": True}  # _set_mask_fusion(False): always the cached product (benchmarks, tests)


def _set_mask_fusion(on):
    """Let pruned Linear layers hand their mask to the GEMM where it packs the weight
    itself (True, the default), or always use the cached product (False); returns the
    previous setting."""
    old, _FUSION["on"] = _FUSION["on"], bool(on)
    return old


def _fuses(module, name, inputs):
    """Whether this forward of `module` hands <name>_orig and <name>_mask to the GEMM: a
    Linear's weight, whose GEMM packs the weight itself here (_ops._train.mask_fusion_pays)."""
    from ..layers import Linear
    if not _FUSION["on"] or name != "weight" or not isinstance(module, Linear) or not inputs:
        return False
    return _mask_fusion_pays(module._parameters["weight_orig"], module._buffers["weight_mask"],
                             inputs[0])


# ---- the methods ---------------------------------------------------------------------------

class BasePruningMethod(ABC):
    """Abstract base of pruning methods: subclasses define compute_mask(t, default_mask) on
    NumPy arrays (t: importance scores; default_mask: the mask so far, to respect) and
    PRUNING_TYPE ("unstructured", "structured" with a `dim`, or "global")."""

    _tensor_name = None
    _cache = None

    def __call__(self, module, inputs):
        """The forward pre-hook: module.<name> = <name>_orig * <name>_mask (cached); or, for a
        Linear's weight whose GEMM packs the weight itself, nothing to compute: the forward
        hands orig and mask to the GEMM (_fuses), and module.<name> is computed on access."""
        name = self._tensor_name
        d = module.__dict__
        if _fuses(module, name, inputs):
            d.pop(name, None)
            d.setdefault("_lazy_attrs", {})[name] = self.apply_mask
            d["_mask_fused"] = True
            # the forward needs no product: one cached earlier (apply, or a read of
            # module.<name>) would only hold a weight-sized tensor that the next optimizer
            # step makes stale; a read computes it again
            self._cache = None
            return
        d.pop("_mask_fused", None)
        d.get("_lazy_attrs", {}).pop(name, None)
        setattr(module, name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t, default_mask):
        """The new mask (an ndarray shaped like t) on top of default_mask."""

    def invalidate(self):
        """Forget the cached product (after writing <name>_orig or the mask through NumPy)."""
        self._cache = None

    def apply_mask(self, module):
        """<name>_orig * <name>_mask, differentiable with respect to <name>_orig."""
        if self._tensor_name is None:
            raise RuntimeError(f"Module {type(module).__name__} has to be pruned (this method "
                               "was never applied)")
        orig = getattr(module, self._tensor_name + "_orig")
        mask = getattr(module, self._tensor_name + "_mask")
        key = (id(orig), orig._write_stamp, id(mask), mask._write_stamp, str(orig.device), orig.dtype)
        c = self._cache
        if c is None or c[0] != key or c[1]._write_stamp != c[2]:
            with no_grad():
                prod = (mask if mask.dtype == orig.dtype else mask.astype(orig.dtype)) * orig
            self._cache = c = (key, prod, prod._write_stamp)
        return _MaskedWeight.apply(orig, mask, c[1])

    @classmethod
    def apply(cls, module, name, *args, importance_scores=None, **kwargs):
        """Prune module.<name> with cls(*args, **kwargs), composing with any pruning already
        applied to it; returns the method (or container) now registered as the hook."""
        method = cls(*args, **kwargs)  # validates the arguments before the module changes
        return _apply_method(method, module, name, importance_scores)

    def prune(self, t, default_mask=None, importance_scores=None):
        """t * compute_mask(importance_scores or t, default_mask or ones), as a pygpu Tensor."""
        scores = _host(t if importance_scores is None else importance_scores)
        if scores.shape != tuple(t.shape):
            raise ValueError(f"importance_scores should have the same shape as tensor t, got "
                             f"{scores.shape} vs {tuple(t.shape)}")
        dm = np.ones(scores.shape) if default_mask is None else _host(default_mask)
        return t * _like(np.asarray(self.compute_mask(scores, dm)), t)

    def remove(self, module):
        """Make the pruning permanent: <name> becomes a parameter again holding orig * mask
        (the same tensor object as <name>_orig); <name>_orig and <name>_mask go."""
        if self._tensor_name is None:
            raise RuntimeError(f"Module {type(module).__name__} has to be pruned before pruning "
                               "can be removed")
        name = self._tensor_name
        orig = module._parameters[name + "_orig"]
        mask = module._buffers[name + "_mask"]
        with no_grad():
            weight = (mask if mask.dtype == orig.dtype else mask.astype(orig.dtype)) * orig
        if name in module.__dict__:
            delattr(module, name)
        module.__dict__.pop("_mask_fused", None)
        module.__dict__.get("_lazy_attrs", {}).pop(name, None)
        orig.data = weight
        del module._parameters[name + "_orig"]
        del module._buffers[name + "_mask"]
        setattr(module, name, orig)
        self._cache = None


class PruningContainer(BasePruningMethod):
    """A sequence of pruning methods on one parameter (iterative pruning); the last one
    added acts on what the earlier ones left."""

    def __init__(self, *args):
        self._pruning_methods = ()
        if len(args) >= 1:
            self._tensor_name = args[0]._tensor_name \
                if isinstance(args[0], BasePruningMethod) else None
        for method in args:
            self.add_pruning_method(method)

    def add_pruning_method(self, method):
        if method is not None and not isinstance(method, BasePruningMethod):
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError("Can only add pruning methods acting on the parameter named "
                             f"'{self._tensor_name}' to PruningContainer {self}. Found "
                             f"'{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self):
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t, default_mask):
        """The last method's mask computed on the still-unpruned part of t, combined with
        default_mask (torch's _combine_masks)."""
        method = self._pruning_methods[-1]
        mask = np.asarray(default_mask, dtype=np.float64)
        new_mask = mask.copy()
        kind = method.PRUNING_TYPE
        if kind == "unstructured":
            slc = mask == 1
        elif kind == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError('Pruning methods of PRUNING_TYPE "structured" need to have '
                                     "the attribute `dim` defined.")
            dim = _normalize_dim(method.dim, t.ndim)
            keep = mask.sum(axis=tuple(d for d in range(t.ndim) if d != dim)) != 0
            slc = tuple(keep if d == dim else slice(None) for d in range(t.ndim))
        elif kind == "global":
            slc = (slice(None),) * t.ndim
        else:
            raise ValueError(f"Unrecognized PRUNING_TYPE {kind}")
        new_mask[slc] = method.compute_mask(t[slc], default_mask=mask[slc])
        return new_mask


class Identity(BasePruningMethod):
    """Adds the reparametrization with a mask of ones."""
    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        return default_mask

    @classmethod
    def apply(cls, module, name):
        return super().apply(module, name)


class RandomUnstructured(BasePruningMethod):
    """Prunes `amount` (a count, or a fraction) of the still-unpruned entries at random
    (pygpu's generator: pygpu.manual_seed makes it repeatable)."""
    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _validate_pruning_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        k = _compute_nparams_toprune(self.amount, t.size)
        _validate_pruning_amount(k, t.size)
        mask = np.array(default_mask, dtype=np.float64)
        if k:
            prob = _host(_tensor_create.rand(t.size)) if t.size else np.zeros(0)
            mask.reshape(-1)[np.argsort(-prob, kind="stable")[:k]] = 0
        return mask

    @classmethod
    def apply(cls, module, name, amount):
        return super().apply(module, name, amount=amount)


class L1Unstructured(BasePruningMethod):
    """Prunes `amount` (a count, or a fraction) of the still-unpruned entries with the
    smallest absolute value."""
    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _validate_pruning_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        k = _compute_nparams_toprune(self.amount, t.size)
        _validate_pruning_amount(k, t.size)
        mask = np.array(default_mask, dtype=np.float64)
        if k:
            mask.reshape(-1)[np.argsort(np.abs(t).reshape(-1), kind="stable")[:k]] = 0
        return mask

    @classmethod
    def apply(cls, module, name, amount, importance_scores=None):
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class RandomStructured(BasePruningMethod):
    """Prunes `amount` of the still-unpruned channels along `dim` at random."""
    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim=-1):
        _validate_pruning_amount_init(amount)
        self.amount, self.dim = amount, dim

    def compute_mask(self, t, default_mask):
        _validate_structured_pruning(t)
        dim = _normalize_dim(self.dim, t.ndim)
        size = t.shape[dim]
        k = _compute_nparams_toprune(self.amount, size)
        _validate_pruning_amount(k, size)
        if k == 0:
            return default_mask
        prob = _host(_tensor_create.rand(size))
        channel = prob > np.sort(prob)[k - 1]  # torch: prob > kthvalue(prob, k)
        mask = np.zeros(t.shape)
        mask[tuple(channel if d == dim else slice(None) for d in range(t.ndim))] = 1
        return mask * default_mask

    @classmethod
    def apply(cls, module, name, amount, dim=-1):
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prunes `amount` of the still-unpruned channels along `dim` with the smallest L_n norm
    (n: a real p, inf, -inf or 'fro')."""
    PRUNING_TYPE = "structured"

    def __init__(self, amount, n, dim=-1):
        _validate_pruning_amount_init(amount)
        _validate_norm(n)
        self.amount, self.n, self.dim = amount, n, dim

    def compute_mask(self, t, default_mask):
        _validate_structured_pruning(t)
        dim = _normalize_dim(self.dim, t.ndim)
        size = t.shape[dim]
        k = _compute_nparams_toprune(self.amount, size)
        _validate_pruning_amount(k, size)
        if k == 0:
            return default_mask
        norm = _compute_norm(t, self.n, dim)
        keep = np.argsort(-norm, kind="stable")[:size - k]  # torch.topk(norm, size - k)
        mask = np.zeros(t.shape)
        mask[tuple(keep if d == dim else slice(None) for d in range(t.ndim))] = 1
        return mask * default_mask

    @classmethod
    def apply(cls, module, name, amount, n, dim, importance_scores=None):
        return super().apply(module, name, amount=amount, n=n, dim=dim,
                             importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Applies a given mask (any array-like or Tensor shaped like the parameter)."""
    PRUNING_TYPE = "global"

    def __init__(self, mask):
        self.mask = _host(mask)

    def compute_mask(self, t, default_mask):
        if default_mask.shape != self.mask.shape:
            raise ValueError(f"custom_from_mask: the mask has shape {self.mask.shape} but the "
                             f"parameter has {default_mask.shape}")
        return default_mask * self.mask

    @classmethod
    def apply(cls, module, name, mask):
        return super().apply(module, name, mask=mask)


# ---- applying a method to a module ---------------------------------------------------------

def _check_target(module, name):
    if not isinstance(module, Module):
        raise TypeError(f"prune: module must be a pygpu.nn.Module, got {type(module).__name__}")
    if not isinstance(name, str):
        raise TypeError(f"prune: name must be a str (a parameter's name), got "
                        f"{type(name).__name__}")
    if name in module._parameters and module._parameters[name] is not None:
        return
    if name + "_orig" in module._parameters and _find_hook(module, name)[1] is not None:
        return
    have = [n for n, p in module._parameters.items() if p is not None]
    raise MissingParameterError(f"prune: {type(module).__name__} has no parameter {name!r} "
                                f"(its parameters: {have})")


def _hooks(module):
    """The module's forward pre-hooks ({} for a module built before pygpu had them)."""
    return module.__dict__.get("_forward_pre_hooks", {})


def _find_hook(module, name):
    found = [(k, h) for k, h in _hooks(module).items()
             if isinstance(h, BasePruningMethod) and h._tensor_name == name]
    if len(found) > 1:
        raise RuntimeError(f"several pruning hooks on {name!r} of {type(module).__name__}; "
                           "use one PruningContainer")
    return found[0] if found else (None, None)


def _apply_method(method, module, name, importance_scores):
    _check_target(module, name)
    method._tensor_name = name
    orig = getattr(module, name)
    if importance_scores is not None and tuple(importance_scores.shape) != tuple(orig.shape):
        raise ValueError(f"importance_scores should have the same shape as parameter {name} of "
                         f"{type(module).__name__}, got {tuple(importance_scores.shape)} vs "
                         f"{tuple(orig.shape)}")
    scores = _host(orig if importance_scores is None else importance_scores)
    key, old = _find_hook(module, name)
    if old is None:
        composite = method
        default_mask = np.ones(scores.shape)
    else:
        composite = old if isinstance(old, PruningContainer) else PruningContainer(old)
        before = composite._pruning_methods
        composite.add_pruning_method(method)
        default_mask = _host(getattr(module, name + "_mask"))
    try:
        mask = np.asarray(composite.compute_mask(scores, default_mask), dtype=np.float64)
        if mask.shape != scores.shape:
            raise ValueError(f"{type(method).__name__}.compute_mask returned shape {mask.shape} "
                             f"for a parameter of shape {scores.shape}")
    except Exception:
        if old is not None:
            composite._pruning_methods = before
        raise
    if old is None:
        module.register_parameter(name + "_orig", orig)
        del module._parameters[name]
    else:
        del module._forward_pre_hooks[key]
    ref = module._parameters[name + "_orig"]
    module.register_buffer(name + "_mask", _like(mask, ref))
    composite._cache = None
    setattr(module, name, composite.apply_mask(module))
    module.register_forward_pre_hook(composite)
    return composite


# ---- the functions -------------------------------------------------------------------------

def identity(module, name):
    """The pruning reparametrization with a mask of ones; returns module."""
    Identity.apply(module, name)
    return module


def random_unstructured(module, name, amount):
    """Prune `amount` (int: a count; float: a fraction) of module.<name>'s still-unpruned
    entries, chosen at random; returns module."""
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name, amount, importance_scores=None):
    """Prune `amount` of module.<name>'s still-unpruned entries with the smallest |value|
    (or smallest importance_scores); returns module."""
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module, name, amount, dim):
    """Prune `amount` of module.<name>'s channels along dim, chosen at random; returns module."""
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    """Prune `amount` of module.<name>'s channels along dim with the smallest L_n norm
    (dim=0 on a Linear weight: whole output neurons); returns module."""
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def custom_from_mask(module, name, mask):
    """Prune module.<name> where `mask` is 0; returns module."""
    CustomFromMask.apply(module, name, mask)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs):
    """Prune across several (module, name) pairs at once, as if their entries were one
    vector: e.g. global_unstructured(pairs, pruning_method=L1Unstructured, amount=0.2)."""
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable of "
                        "(module, name) pairs")
    parameters = list(parameters)
    if not parameters:
        raise ValueError("global_unstructured(): parameters is empty")
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    for pair in parameters:
        if not (isinstance(pair, tuple) and len(pair) == 2):
            raise TypeError(f"global_unstructured(): expected (module, name) pairs, got {pair!r}")
        _check_target(*pair)
    method = pruning_method(**kwargs)
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError('Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. '
                        f"Found method {pruning_method} of type {method.PRUNING_TYPE}")
    scores, masks = [], []
    for module, name in parameters:
        p = getattr(module, name)
        scores.append(_host(importance_scores.get((module, name), p)).reshape(-1))
        m = module._buffers.get(name + "_mask")
        masks.append(_host(m).reshape(-1) if m is not None else np.ones(scores[-1].size))
    container = PruningContainer()
    container._tensor_name = method._tensor_name = "temp"
    container.add_pruning_method(method)
    final = container.compute_mask(np.concatenate(scores), np.concatenate(masks))
    pointer = 0
    for module, name in parameters:
        shape = tuple(getattr(module, name).shape)
        n = int(np.prod(shape))
        custom_from_mask(module, name, mask=final[pointer:pointer + n].reshape(shape))
        pointer += n


def remove(module, name):
    """Make module.<name>'s pruning permanent and drop the reparametrization; returns module."""
    for k, hook in list(_hooks(module).items()):
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"Parameter '{name}' of module {type(module).__name__} has to be pruned "
                     "before pruning can be removed")


def is_pruned(module):
    """True when module or any submodule has a pruning hook."""
    return any(isinstance(h, BasePruningMethod)
               for m in module.modules() for h in _hooks(m).values())
