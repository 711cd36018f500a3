"""The process-wide defaults PyTorch programs set on their first lines:
torch.set_default_dtype (the dtype of float factories and Python floats) and
torch.set_default_device (where factories make tensors when no device is given).

The creation functions (_tensor/create.py, _legacy.py) read them through dtype() and
device(); the defaults stay float32 and cpu unless a program changes them."""
from . import _device, _dtype

_state = {"dtype": _dtype.float32}


def dtype():
    return _state["dtype"]


def device():
    return _device._default[0]


def set_default_dtype(d):
    """Set the dtype that float factories (zeros, rand, tensor of Python floats, ...) give:
    float32 or float64 (PyTorch allows only floating-point types here, as pygpu does)."""
    d = _dtype.to_dtype(d)
    if not d.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type, got "
                        f"{d}")
    _state["dtype"] = d


def get_default_dtype():
    return _state["dtype"]


def set_default_device(device):
    """Make factories create tensors on `device` when they are given none
    (torch.set_default_device("cuda")); None restores cpu."""
    if device is not None:
        _device.parse_device(device)  # it exists (an index past the last one is refused here)
        device = _device.device(device)
        if device.type == "cpu":
            device = None
    _device._default[0] = device


def get_default_device():
    d = _device._default[0]
    return d if d is not None else _device.device("cpu")
