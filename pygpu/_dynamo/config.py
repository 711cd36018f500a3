"""pygpu._dynamo.config: the torch._dynamo.config settings PyTorch programs set and read.

Of these, `verbose` makes pygpu print, once per compiled function, whether it captures or runs
eagerly (and why a capturing one went eager), and `cache_size_limit` bounds the captures of a
replaying compiled function (pygpu/_dynamo/replay.py) before it runs eagerly. The rest are kept with PyTorch's defaults so that programs which set
them (`torch._dynamo.config.suppress_errors = True`, `cache_size_limit = 64`) run unchanged.
As in PyTorch, a name that is not a setting is an AttributeError, read or written."""
import sys
import types

verbose = False                     # print what each compiled function does, and why eager
suppress_errors = False             # PyTorch: fall back to eager when compilation raises
cache_size_limit = 8                # captures per compiled function before eager
recompile_limit = 8
accumulated_cache_size_limit = 256
accumulated_recompile_limit = 256
automatic_dynamic_shapes = True
assume_static_by_default = True
force_parameter_static_shapes = True
specialize_int = False
specialize_float = False
capture_scalar_outputs = False
capture_dynamic_output_shape_ops = False
inline_inbuilt_nn_modules = True
guard_nn_modules = True
optimize_ddp = True
error_on_recompile = False
compiled_autograd = False
disable = False                     # PyTorch: every torch.compile runs eagerly
dynamic_shapes = True


class _ConfigModule(types.ModuleType):
    """A module whose settings are the names above and no others (torch's config module
    raises AttributeError on an unknown name; a typo should not pass silently)."""

    def __setattr__(self, name, value):
        if not name.startswith("_") and name not in self.__dict__:
            raise AttributeError(f"{self.__name__}.{name} does not exist")
        super().__setattr__(name, value)

    def __getattr__(self, name):
        raise AttributeError(f"{self.__name__}.{name} does not exist")


sys.modules[__name__].__class__ = _ConfigModule
