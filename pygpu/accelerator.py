"""torch.accelerator: the device-agnostic spelling programs open with.

    device = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"

PyTorch answers with the one accelerator type it was built for. pygpu has two: a CUDA
device when the CUDA backend is built and finds a GPU, and otherwise its simulated
accelerator `sim`, which is always present (so a program written for an accelerator runs
its device path, with every transfer counted). Set PYGPU_ACCELERATOR=cpu to make
is_available() False (the program then takes its cpu branch), or =sim / =cuda to pick."""
import os

from . import cuda as _cuda, sim as _sim
from ._device import device as _device

_KINDS = {"sim": _sim, "cuda": _cuda}


def _module():
    choice = os.environ.get("PYGPU_ACCELERATOR", "").strip().lower()
    if choice in ("cpu", "none"):
        return None
    if choice:
        if choice not in _KINDS:
            raise ValueError(f"PYGPU_ACCELERATOR={choice!r}: use one of cuda, sim, cpu")
        return _KINDS[choice]
    return _cuda if _cuda.is_available() else _sim


def current_accelerator(check_available=False):
    """The accelerator's device type as a device (device('sim:0') or device('cuda:0')), or
    None when there is none (PYGPU_ACCELERATOR=cpu)."""
    mod = _module()
    if mod is None or (check_available and not mod.is_available()):
        return None
    return _device(f"{mod._acc.name}:{mod.current_device()}")


def is_available():
    mod = _module()
    return mod is not None and mod.is_available()


def device_count():
    mod = _module()
    return mod.device_count() if mod is not None and mod.is_available() else 0


def current_device_index():
    mod = _module()
    return mod.current_device() if mod is not None else -1


current_device_idx = current_device_index  # PyTorch 2.6's name


def set_device_index(device):
    mod = _module()
    if mod is None:
        raise RuntimeError("torch.accelerator: no accelerator is available")
    mod.set_device(device)


set_device_idx = set_device_index


def synchronize(device=None):
    mod = _module()
    if mod is not None:
        mod.synchronize(device)


class device_index:
    """`with torch.accelerator.device_index(i):` run with device i current, then restore."""

    def __init__(self, device):
        self.idx, self.prev = device, None

    def __enter__(self):
        if self.idx is not None:
            self.prev = current_device_index()
            set_device_index(self.idx)

    def __exit__(self, *exc):
        if self.prev is not None:
            set_device_index(self.prev)
