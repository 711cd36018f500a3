"""The torch.cuda-style utilities, written once for every accelerator type.

pygpu.sim and pygpu.cuda are each an Accelerator bound to their device type:
is_available(), device_count(), current_device(), memory_allocated(), ...
All figures come from the C core's counters and caching allocator. Each
Accelerator registers itself with pygpu/_device.py, which parses device
spellings; this module sits above that one and never below it."""
from . import _C, _device


class DeviceIndexError(_C.DeviceUnavailableError, IndexError):
    """A device index past the last device (sim:7 with two sim devices). A
    DeviceUnavailableError, as an absent device is, and an IndexError, as an index
    out of range is, so either `except` catches it."""


class Accelerator:
    def __init__(self, name, code=None):
        self.name = name
        self.code = _device._TYPES[name]  # the C core's code for the type
        if code is not None and code != self.code:
            raise ValueError(f"device type {name!r} has code {self.code} in the C core, not {code}")
        self._current = 0
        _device.register_accelerator(self)

    # -- identity ---------------------------------------------------------------------
    def _load(self):
        """Hook for backends loaded on first use (cuda); sim is built in."""

    def is_available(self):
        self._load()
        return self.device_count() > 0

    def device_count(self):
        self._load()
        return _C._device_count(self.code)

    def _check_index(self, index):
        self._load()
        n = _C._device_count(self.code)
        if not 0 <= index < n:
            why = self._why_unavailable() if n == 0 else None
            if why:
                raise _C.DeviceUnavailableError(f"{self.name}:{index} is not available: {why}")
            present = (f"there is one {self.name} device, {self.name}:0" if n == 1 else
                       f"there are {n} {self.name} devices, {self.name}:0 to {self.name}:{n - 1}")
            raise DeviceIndexError(f"{self.name}:{index} does not exist: {present}")

    def _why_unavailable(self):
        return None

    def _index(self, device):
        if device is None:
            index = self._current
        elif isinstance(device, int):
            index = device
        else:
            d = _device.device(device)
            if d.type != self.name:
                raise ValueError(f"expected a {self.name} device, got {d}")
            index = d.index
        self._check_index(index)
        return index

    def get_device_name(self, device=None):
        return _C._device_name(self.code, self._index(device))

    def current_device(self):
        return self._current

    def set_device(self, device):
        self._current = self._index(device)

    # -- execution ----------------------------------------------------------------------
    def synchronize(self, device=None):
        """Wait for all queued work on the device; raises the first asynchronous failure.
        With no device given and none present, there is nothing to wait for."""
        if device is None and self.device_count() == 0:
            return
        _C._synchronize(self.code, self._index(device))

    def manual_seed(self, seed):
        """Seed the random generator of the current device."""
        _C._seed(int(seed) & (2**64 - 1), self.code, self._current)

    def manual_seed_all(self, seed):
        for i in range(self.device_count()):
            _C._seed(int(seed) & (2**64 - 1), self.code, i)

    # -- random state (pygpu/_random.py: each device's default generator) ----------------
    def _generator(self, device):
        from . import _random
        index = self._index(device)
        self._check_index(index)
        return _random.default_for(_device.device(self.name, index))

    @property
    def default_generators(self):
        """The default generator of each device, as torch.cuda.default_generators."""
        return tuple(self._generator(i) for i in range(self.device_count()))

    def get_rng_state(self, device=None):
        """The device generator's state: 16 bytes, its seed and offset (PyTorch's CUDA form)."""
        return self._generator(device).get_state()

    def set_rng_state(self, new_state, device=None):
        self._generator(device).set_state(new_state)

    def get_rng_state_all(self):
        return [self.get_rng_state(i) for i in range(self.device_count())]

    def set_rng_state_all(self, new_states):
        for i, state in enumerate(new_states):
            self.set_rng_state(state, i)

    def seed(self):
        """Seed the current device's generator from fresh entropy."""
        from . import _random
        self.manual_seed(_random._fresh_seed())

    def seed_all(self):
        from . import _random
        self.manual_seed_all(_random._fresh_seed())

    def initial_seed(self):
        return self._generator(None).initial_seed()

    # -- memory ----------------------------------------------------------------------------
    def memory_allocated(self, device=None):
        """Bytes held by live tensors (rounded up to the allocator's block sizes)."""
        return _C._memory_stats(self.code, self._index(device))["allocated"]

    def max_memory_allocated(self, device=None):
        return _C._memory_stats(self.code, self._index(device))["peak"]

    def memory_reserved(self, device=None):
        """Bytes taken from the device, in use or cached."""
        return _C._memory_stats(self.code, self._index(device))["reserved"]

    def reset_peak_memory_stats(self, device=None):
        _C._reset_peak(self.code, self._index(device))

    def empty_cache(self, device=None):
        """Give cached (free) blocks back to the device; all devices when None."""
        indices = range(self.device_count()) if device is None else [self._index(device)]
        for i in indices:
            _C._empty_cache(self.code, i)

    def mem_get_info(self, device=None):
        """(free, total) bytes of the device, as torch.cuda.mem_get_info: on cuda the
        driver's figure (other processes count too); on sim its memory less what
        pygpu's caching allocator has reserved."""
        return _C._mem_get_info(self.code, self._index(device))

    def memory_stats(self, device=None):
        return dict(_C._memory_stats(self.code, self._index(device)))

    def memory_summary(self, device=None):
        i = self._index(device)
        s = _C._memory_stats(self.code, i)
        total = _C._total_memory(self.code, i)
        mib = 1 << 20
        lines = [
            f"{self.name}:{i} ({_C._device_name(self.code, i)}) memory summary",
            f"  allocated now   {s['allocated'] / mib:12.2f} MiB",
            f"  allocated peak  {s['peak'] / mib:12.2f} MiB",
            f"  reserved        {s['reserved'] / mib:12.2f} MiB  (cached, free: {s['cached'] / mib:.2f} MiB)",
            f"  device total    {total / mib:12.2f} MiB",
            f"  allocations     {s['allocs']:12d}  (served from cache: {s['cache_hits']})",
            f"  frees           {s['frees']:12d}",
        ]
        return "\n".join(lines)


def module_for(type_name):
    """The Accelerator of a device type (its pygpu.sim / pygpu.cuda functions)."""
    return _device.accelerator(type_name)


def export(acc, namespace):
    """Put an Accelerator's methods into a module's namespace (pygpu.sim.synchronize, ...)."""
    for name in ("is_available", "device_count", "get_device_name", "current_device",
                 "set_device", "synchronize", "manual_seed", "manual_seed_all", "get_rng_state",
                 "set_rng_state", "get_rng_state_all", "set_rng_state_all", "seed", "seed_all",
                 "initial_seed",
                 "memory_allocated", "max_memory_allocated", "memory_reserved",
                 "reset_peak_memory_stats", "empty_cache", "mem_get_info", "memory_stats",
                 "memory_summary"):
        namespace[name] = getattr(acc, name)

    def module_getattr(name):  # default_generators: the devices are counted when asked
        if name == "default_generators":
            return acc.default_generators
        raise AttributeError(f"module {namespace.get('__name__')!r} has no attribute {name!r}")
    namespace.setdefault("__getattr__", module_getattr)
