"""The queries and moves of PyTorch's other backends, with the answers torch's CPU build
gives (pygpu has none of these backends, and neither has that build): is_vulkan_available()
is False; Tensor.xpu(), ipu() and mtia() raise what that build raises. Beside them
torch.to_dlpack, the function spelling of Tensor.__dlpack__ (the DLPack capsule pygpu's
C layer makes: csrc/bindings/interop.c)."""
from .. import _C

Tensor = _C.Tensor


def is_vulkan_available():
    """False: pygpu has no Vulkan backend (nor has torch's CPU build)."""
    return False


def to_dlpack(tensor):
    """torch.to_dlpack(tensor): a DLPack capsule ("dltensor") sharing tensor's memory, for
    another library's from_dlpack."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"to_dlpack(): argument 'data' (position 1) must be Tensor, not "
                        f"{type(tensor).__name__}")
    return tensor.__dlpack__()


def xpu(self, device=None, non_blocking=False, memory_format=None):
    """Tensor.xpu(): refused as torch's CPU build refuses it (no XPU backend)."""
    raise AssertionError("Torch not compiled with XPU enabled")


def mtia(self, device=None, non_blocking=False, memory_format=None):
    """Tensor.mtia(): refused as torch's CPU build refuses it (no MTIA backend)."""
    raise AssertionError("Torch not compiled with MTIA enabled")


def ipu(self, device=None, non_blocking=False, memory_format=None):
    """Tensor.ipu(): refused as torch's CPU build refuses it (no IPU backend)."""
    raise RuntimeError("PyTorch is not linked with support for ipu devices")


METHODS = {"xpu": xpu, "mtia": mtia, "ipu": ipu}
FUNCTIONS = {"is_vulkan_available": is_vulkan_available, "to_dlpack": to_dlpack}
