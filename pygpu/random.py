"""torch.random: the random state's functions (pygpu/_random.py) and fork_rng, which runs a
block and then puts every generator it forked back as it was."""
import contextlib
import warnings

from . import _device
from ._random import (Generator, default_generator, get_rng_state, initial_seed,  # noqa: F401
                      manual_seed, seed, set_rng_state)

__all__ = ["Generator", "default_generator", "fork_rng", "get_rng_state", "initial_seed",
           "manual_seed", "seed", "set_rng_state"]

_fork_rng_warned_already = False


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices",
             device_type="cuda"):
    """Within the block, draw as you like; after it, the cpu generator and those of the
    `devices` of `device_type` ('cuda' or 'sim'; all of them when devices is None) are as
    they were before it."""
    if not enabled:
        yield
        return
    acc = _device.accelerator(device_type)
    if devices is None:
        count = acc.device_count()
        if count > 1 and not _fork_rng_warned_already:
            _warn_many(count, _caller, _devices_kw, device_type)
        devices = list(range(count))
    else:
        devices = list(devices)
    cpu_state = get_rng_state()
    states = [acc.get_rng_state(d) for d in devices]
    try:
        yield
    finally:
        set_rng_state(cpu_state)
        for d, st in zip(devices, states):
            acc.set_rng_state(st, d)


def _warn_many(count, caller, devices_kw, device_type):
    global _fork_rng_warned_already
    warnings.warn(f"{device_type} reports that you have {count} available devices, and you "
                  f"have used {caller} without explicitly specifying which devices are being "
                  f"used. For safety, we initialize *every* {device_type} device by default, "
                  f"which can be quite slow if you have a lot of {device_type}s. If you know "
                  f"that you are only making use of a few {device_type} devices, set the "
                  f"environment variable CUDA_VISIBLE_DEVICES or the '{devices_kw}' keyword "
                  f"argument of {caller} with the set of devices you are actually using.")
    _fork_rng_warned_already = True
