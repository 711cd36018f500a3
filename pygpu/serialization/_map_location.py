"""Where a loaded tensor goes: map_location's rules, shared by the two file formats that
pygpu.load reads (pygpu/serialization/: PyTorch's formats, safetensors).

map_location is None (the device it was saved from), a device, a dict {saved: target} or a
callable saved -> target; a target that does not exist on this machine is a
DeviceUnavailableError naming it and saying what to pass instead."""
from .. import _C
from .._device import Device, device as _device


def resolve(saved, map_location):
    """The device a tensor saved from `saved` goes to."""
    if map_location is None:
        return saved
    if isinstance(map_location, dict):
        target = map_location.get(saved, saved)
        return str(_device(target)) if not isinstance(target, str) else target
    if callable(map_location) and not isinstance(map_location, (str, Device)):
        return str(_device(map_location(saved)))
    return str(_device(map_location))


def check_present(name, dev, map_location):
    try:
        d = _device(dev)
        if d.type == "cpu":
            return d
        from .. import cuda, sim
        acc = sim if d.type == "sim" else cuda
        present = acc.is_available() and d.index < acc.device_count()
    except (ValueError, TypeError, RuntimeError):
        present = False
    if not present:
        how = ("pass map_location='cpu' (or another device, or a dict like {'cuda:0': 'sim:0'}) "
               "to put the tensors somewhere that exists")
        what = "it was saved from" if map_location is None else "map_location sends it to"
        raise _C.DeviceUnavailableError(
            f"pygpu.load: tensor {name!r} {what} {dev}, which is not available on this machine; {how}")
    return d
