"""Random state as PyTorch has it: torch.Generator, the default generators, manual_seed,
seed, initial_seed, get_rng_state/set_rng_state.

Every random tensor pygpu makes comes from Philox4x32-10 (csrc/core/pg_philox.h) at a state
(seed, offset): element i of a draw of n elements is counter offset + i, and the offset then
moves on by n. Each device has such a state in the C core: the device's default generator,
which manual_seed seeds. A Generator holds a state of its own, for one device type; a draw
given generator=g runs at g's state (_C._random with g's seed and offset) and moves g's offset
on, leaving the device's state alone. So one seed gives the same numbers on a Generator as
manual_seed gives on its device, and the same on every device.

A state as a tensor (get_state, get_rng_state) is 16 bytes, the seed then the offset, each a
little-endian uint64: PyTorch's CUDA (Philox) generator keeps the same two numbers in the
same 16 bytes. Until pygpu has uint8 it is an int64 tensor of the two words (_state_tensor,
the one place that knows); set_state takes either form."""
import random as _pyrandom
import struct
import threading

import numpy as np

from . import _C, _device

DEFAULT_SEED = 0x5eed  # the C core's (csrc/core/pg_ops_create.c), until manual_seed
_MASK = (1 << 64) - 1


def _seed_value(seed):
    """PyTorch's range check (ValueError, as its), then the uint64 two's complement of a
    negative seed."""
    seed = int(seed)
    if not -(1 << 63) <= seed <= _MASK:
        raise ValueError(f"Overflow when unpacking long long: a seed is within "
                         f"[-0x8000_0000_0000_0000, 0xffff_ffff_ffff_ffff], got {seed}")
    return seed & _MASK


def _fresh_seed():
    """A non-deterministic seed, as torch.seed() and Generator.seed() draw one."""
    return _pyrandom.SystemRandom().getrandbits(64)


def _state_tensor(seed, offset):
    """The 16-byte state (seed, offset) as a tensor: uint8 once pygpu has it, else the two
    words as int64 (the bits of the uint64s)."""
    from . import _dtype
    raw = struct.pack("<QQ", seed, offset)
    if getattr(_dtype, "uint8", None) is not None:
        return _C.from_numpy(np.frombuffer(raw, np.uint8).copy())
    return _C.from_numpy(np.frombuffer(raw, "<i8").copy())


def _state_words(state):
    """(seed, offset) from a state tensor of either form; RuntimeError for anything else."""
    if not isinstance(state, _C.Tensor):
        raise TypeError(f"expected a torch.ByteTensor, but got {type(state).__name__}")
    arr = np.ascontiguousarray(state.detach().cpu().numpy())
    raw = arr.tobytes()
    if arr.dtype not in (np.uint8, np.int64) or len(raw) != 16:
        raise RuntimeError(f"Expected either a ByteTensor of 16 bytes (the seed and the offset "
                           f"of pygpu's Philox generator, as get_state() gives), got a "
                           f"{state.dtype} tensor of {len(raw)} bytes")
    return struct.unpack("<QQ", raw)


def _device_of(spec):
    if spec is None:
        return _device.device("cpu")
    d = _device.device(spec)
    return d


class Generator:
    """torch.Generator(device='cpu'): a random state of its own, for one device type.

    manual_seed(s) (returns the generator), seed(), initial_seed(), get_state()/set_state(),
    clone_state(), device. Pass it as generator= to rand, randn, randint, randperm, normal,
    bernoulli, multinomial, the in-place samplers (uniform_, normal_, ...), nn.init and the
    samplers, DataLoader and random_split; its draws follow each other as one stream and
    leave every other generator alone."""

    def __init__(self, device="cpu"):
        self._device = _device_of(device)
        self._lock = threading.Lock()
        self._seed, self._offset = 67280421310721, 0  # PyTorch's default seed

    @property
    def device(self):
        return self._device

    def manual_seed(self, seed):
        with self._lock:
            self._seed, self._offset = _seed_value(seed), 0
        return self

    def seed(self):
        s = _fresh_seed()
        self.manual_seed(s)
        return s

    def initial_seed(self):
        return self._seed

    def get_state(self):
        with self._lock:
            return _state_tensor(self._seed, self._offset)

    def set_state(self, new_state):
        seed, offset = _state_words(new_state)
        with self._lock:
            self._seed, self._offset = seed, offset
        return self

    def clone_state(self):
        g = Generator(self._device)
        g._seed, g._offset = self._state()
        return g

    def graphsafe_get_state(self):
        return self.clone_state()

    def graphsafe_set_state(self, state):
        self._seed, self._offset = state._state()
        return self

    def _state(self):
        with self._lock:
            return self._seed, self._offset

    def _reserve(self, n):
        """(seed, first offset) for a draw of n counters; the state moves on by n."""
        with self._lock:
            at = self._seed, self._offset
            self._offset = (self._offset + int(n)) & _MASK
            return at

    def __reduce__(self):  # a DataLoader's spawned workers get a copy, as PyTorch's
        return (_rebuild_generator, (str(self._device), *self._state()))

    def __repr__(self):
        return f"<torch._C.Generator object at {id(self):#x}>"


def _rebuild_generator(device, seed, offset):
    g = Generator(device)
    g._seed, g._offset = seed, offset
    return g


class _DeviceGenerator(Generator):
    """A device's default generator (torch.default_generator, torch.cuda.default_generators):
    its state is the C core's, the one draws without generator= use and manual_seed seeds."""

    def __init__(self, device):
        self._device = _device_of(device)
        self._lock = threading.Lock()

    def _where(self):
        code, index = self._device._code
        return code, index

    def manual_seed(self, seed):
        _C._seed(_seed_value(seed), *self._where())
        return self

    def initial_seed(self):
        return _C._rng_state(*self._where())[0]

    def get_state(self):
        return _state_tensor(*_C._rng_state(*self._where()))

    def set_state(self, new_state):
        _C._rng_set_state(*self._where(), *_state_words(new_state))
        return self

    def _state(self):
        return tuple(_C._rng_state(*self._where()))

    def graphsafe_set_state(self, state):
        _C._rng_set_state(*self._where(), *state._state())
        return self

    def _reserve(self, n):
        return None  # draw at the device's own state: the C core moves it on

    def __reduce__(self):  # a copy elsewhere is a plain Generator with this state
        return (_rebuild_generator, (str(self._device), *self._state()))


_defaults = {}


def default_for(dev):
    """The default generator of a device (a pygpu.device)."""
    g = _defaults.get(dev)
    if g is None:
        g = _defaults[dev] = _DeviceGenerator(dev)
    return g


default_generator = default_for(_device.device("cpu"))


def draw_at(generator, device, n):
    """The (seed, offset) a draw of n elements on `device` runs at: () for the device's own
    generator (generator None or the device's default), else the Generator's, moved on by n.
    A generator of another device type is refused, as PyTorch refuses it."""
    if generator is None:
        return ()
    if not isinstance(generator, Generator):
        raise TypeError(f"generator must be a torch.Generator, not {type(generator).__name__}")
    dev = _device.device(device) if device is not None else _device.device("cpu")
    if generator.device.type != dev.type:
        raise RuntimeError(f"Expected a '{dev.type}' device type for generator but found "
                           f"'{generator.device.type}'")
    at = generator._reserve(n)
    return () if at is None else at


def manual_seed(seed):
    """Seed every device's generator: draws without generator= are then reproducible, and the
    same on every device for the same sequence of calls. Returns torch.default_generator."""
    _C._seed(_seed_value(seed))
    return default_generator


def seed():
    """Seed every device's generator from fresh entropy; returns the seed (torch.seed)."""
    s = _fresh_seed()
    manual_seed(s)
    return s


def initial_seed():
    """The seed of the cpu's default generator (torch.initial_seed)."""
    return default_generator.initial_seed()


def get_rng_state():
    """The cpu default generator's state as a tensor (torch.get_rng_state)."""
    return default_generator.get_state()


def set_rng_state(new_state):
    """Set the cpu default generator's state from get_rng_state()'s tensor."""
    default_generator.set_state(new_state)
