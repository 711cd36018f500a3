"""torch.distributed.fsdp.wrap: which submodules FullyShardedDataParallel(auto_wrap_policy=...)
makes units of their own. A policy is called as policy(module=, recurse=, nonwrapped_numel=)
and says whether to wrap `module` (recurse=False: pygpu asks bottom up, once per module)."""
__all__ = ["size_based_auto_wrap_policy", "ModuleWrapPolicy", "transformer_auto_wrap_policy",
           "lambda_auto_wrap_policy", "always_wrap_policy"]


def size_based_auto_wrap_policy(module, recurse, nonwrapped_numel, min_num_params=int(1e8),
                                force_leaf_modules=None, exclude_wrap_modules=None):
    """Wrap a module holding at least min_num_params parameters not yet in a unit."""
    if recurse:
        return True
    return nonwrapped_numel >= min_num_params


def always_wrap_policy(module, recurse, nonwrapped_numel):
    return True


def lambda_auto_wrap_policy(module, recurse, nonwrapped_numel, lambda_fn):
    return True if recurse else bool(lambda_fn(module))


def transformer_auto_wrap_policy(module, recurse, nonwrapped_numel, transformer_layer_cls):
    """Wrap every module of one of the classes in transformer_layer_cls."""
    return True if recurse else isinstance(module, tuple(transformer_layer_cls))


class ModuleWrapPolicy:
    """Wrap every module of one of the given classes."""

    def __init__(self, module_classes):
        self._module_classes = tuple(module_classes)

    def __call__(self, module, recurse, nonwrapped_numel):
        return True if recurse else isinstance(module, self._module_classes)
