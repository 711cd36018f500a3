"""devices() and synchronize(): the whole machine's devices, and waiting for their queues.

A module of its own (pygpu re-exports both) so that the layers above the tensor API
(pygpu.cost, pygpu.distributed, ...) can wait for devices without importing the pygpu
package they are part of."""
from . import _C, cuda, sim
from . import _device as _device_mod
from ._device import device as _device


def devices():
    """Every device present: cpu, then sim:0.., then cuda:0.. (loads the CUDA plugin)."""
    out = [_device("cpu")]
    out += [_device("sim", i) for i in range(sim.device_count())]
    out += [_device("cuda", i) for i in range(cuda.device_count())]
    return out


def synchronize(device=None):
    """Wait for queued work: on one device, or on every device when None.
    Raises pygpu.AsyncOpError if an asynchronous op failed."""
    if device is not None:
        d = _device(device)
        if d.type == "meta":
            return  # nothing ever runs there
        if d.type != "cpu":
            _device_mod.accelerator(d.type)._check_index(d.index)  # names the device and how many exist
            _C._synchronize(*d._code)
        return
    for i in range(sim.device_count()):
        _C._synchronize(sim._acc.code, i)
    if cuda._acc._tried and _C._load_cuda(None):
        for i in range(cuda.device_count()):
            _C._synchronize(cuda._acc.code, i)
