"""pygpu.nn.utils: helpers over modules and their parameters, as torch.nn.utils
(clip_grad: gradient clipping; convert_parameters: parameters <-> one vector; fusion: batch
norm folded into the layer before it; prune: weight pruning; rnn: packed sequences;
weight_norm and spectral_norm: the hook forms of both reparametrizations; parametrize and
parametrizations: their module-property forms)."""
import inspect as _inspect
import warnings as _warnings

from . import clip_grad, convert_parameters, fusion, prune, rnn
from .clip_grad import clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm
from .convert_parameters import parameters_to_vector, vector_to_parameters
from .fusion import (fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval,
                     fuse_linear_bn_weights)
from .spectral_norm import remove_spectral_norm, spectral_norm
from .weight_norm import remove_weight_norm, weight_norm
from . import parametrizations, parametrize  # noqa: E402  (they use weight_norm's helper)

__all__ = ["clip_grad", "convert_parameters", "fusion", "parametrizations", "parametrize",
           "prune", "rnn", "clip_grad_norm", "clip_grad_norm_", "clip_grad_value_",
           "clip_grads_with_norm_", "get_total_norm", "parameters_to_vector",
           "vector_to_parameters", "fuse_conv_bn_eval", "fuse_conv_bn_weights",
           "fuse_linear_bn_eval", "fuse_linear_bn_weights", "remove_spectral_norm",
           "spectral_norm", "remove_weight_norm", "weight_norm", "skip_init"]


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                   foreach=None):
    """The deprecated name of clip_grad_norm_ (PyTorch warns the same way)."""
    _warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                   "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def skip_init(module_cls, *args, **kwargs):
    """An instance of module_cls whose parameters and buffers are left uninitialized: built
    on the meta device, then given empty memory on `device` (torch.nn.utils.skip_init)."""
    from ..module import Module
    if not issubclass(module_cls, Module):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in _inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    kwargs["device"] = "meta"
    return module_cls(*args, **kwargs).to_empty(device=final_device)
