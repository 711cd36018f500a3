"""torch.autograd's (and torch.overrides') small public names that are not the engine:
is_tensor_like, has_torch_function, handle_torch_function (the __torch_function__
protocol: a class that defines it is handed the call, as PyTorch's dispatch does), the
multithreading switch (kept and reported: pygpu's backward runs on the calling thread),
is_view_replay_enabled, kineto_available, DeviceType and ProfilerActivity (pygpu.profiler's)."""
import enum

from .. import _C

Tensor = _C.Tensor


from ..overrides import (handle_torch_function, has_torch_function,  # noqa: E402,F401
                         has_torch_function_unary, has_torch_function_variadic, is_tensor_like)


_switches = {"multithreading": True}


class set_multithreading_enabled:
    """set_multithreading_enabled(mode): a context manager (and a function) that records
    whether backward may run on several threads; pygpu's runs on the calling thread."""

    def __init__(self, mode):
        self.prev = _switches["multithreading"]
        _switches["multithreading"] = bool(mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _switches["multithreading"] = self.prev

    def clone(self):
        return self.__class__(_switches["multithreading"])


def is_multithreading_enabled():
    return _switches["multithreading"]


def is_view_replay_enabled():
    """False: pygpu does not replay views during backward (PyTorch's default too)."""
    return False


def kineto_available():
    """False: pygpu's profiler is its own (pygpu.profiler), not Kineto."""
    return False


class DeviceType(enum.IntEnum):
    """The device types PyTorch's profiler names (torch.autograd.DeviceType)."""
    CPU = 0
    CUDA = 1
    MKLDNN = 2
    OPENGL = 3
    OPENCL = 4
    IDEEP = 5
    HIP = 6
    FPGA = 7
    MAIA = 8
    XLA = 9
    Vulkan = 10
    Metal = 11
    XPU = 12
    MPS = 13
    Meta = 14
    HPU = 15
    VE = 16
    Lazy = 17
    IPU = 18
    MTIA = 19
    PrivateUse1 = 20


def variable(*args, **kwargs):
    """Removed from PyTorch: raises as torch.autograd.variable does."""
    raise RuntimeError("torch.autograd.variable(...) is deprecated, use torch.tensor(...) "
                       "instead")


NAMES = {"variable": variable, "is_tensor_like": is_tensor_like, "has_torch_function": has_torch_function,
         "handle_torch_function": handle_torch_function,
         "set_multithreading_enabled": set_multithreading_enabled,
         "is_multithreading_enabled": is_multithreading_enabled,
         "is_view_replay_enabled": is_view_replay_enabled,
         "kineto_available": kineto_available, "DeviceType": DeviceType}
