"""torch.__future__ (importable as pygpu.__future__: pygpu/__init__.py's _MOVED): the switches
for behaviour PyTorch will make the default.

  set/get_swap_module_params_on_conversion: when on, Module.load_state_dict puts each loaded
      value in place by Tensor.module_load and then torch.utils.swap_tensors (the parameter
      object optimizers hold takes the new contents), instead of copying into it.
  set/get_overwrite_module_params_on_conversion: kept and reported, as PyTorch keeps it
      (it concerns Module._apply's conversions; pygpu's to()/cuda() keep the parameter
      objects either way)."""

_overwrite_module_params_on_conversion = False
_swap_module_params_on_conversion = False


def set_overwrite_module_params_on_conversion(value):
    global _overwrite_module_params_on_conversion
    _overwrite_module_params_on_conversion = value


def get_overwrite_module_params_on_conversion():
    return _overwrite_module_params_on_conversion


def set_swap_module_params_on_conversion(value):
    global _swap_module_params_on_conversion
    _swap_module_params_on_conversion = value


def get_swap_module_params_on_conversion():
    return _swap_module_params_on_conversion
