"""torch.autograd's legacy profiler types: ProfilerState (which profiler records),
ProfilerConfig (what it records) and ProfilerEvent (one push, pop or mark of its event
stream), as torch.autograd._enable_profiler_legacy(config) and _disable_profiler_legacy()
hand them over (torch/csrc/profiler/standalone/... legacy recorder).

pygpu's recorder (csrc/core/pg_profile.h) keeps one span per op or transfer; the legacy
stream is made from them: a "mark" __start_profile first, then per thread a "push" at each
span's start and a "pop" at its end, in time order. The other profiler (pygpu.profiler.profile,
_events.py) reads the same recorder, so one records at a time."""
import builtins
import enum
import threading

from .. import _C


class ProfilerState(enum.Enum):
    """Which profiler records (torch._C._profiler.ProfilerState's members and values)."""
    Disabled = 0
    CPU = 1
    CUDA = 2
    NVTX = 3
    ITT = 4
    PRIVATEUSE1 = 5
    KINETO = 6
    KINETO_GPU_FALLBACK = 7
    KINETO_PRIVATEUSE1_FALLBACK = 8
    KINETO_PRIVATEUSE1 = 9

    def __int__(self):
        return self.value

    __index__ = __int__


ProfilerState.__module__ = "torch._C._profiler"


class ProfilerConfig:
    """ProfilerConfig(state, report_input_shapes, profile_memory, with_stack, with_flops,
    with_modules, experimental_config, trace_id=''). Arguments of the wrong type are
    PyTorch's TypeError. experimental_config is kept as given, None included (pygpu's
    recorder has no experimental options; PyTorch's wants its _ExperimentalConfig)."""

    def __init__(self, state, report_input_shapes, profile_memory, with_stack, with_flops,
                 with_modules, experimental_config, trace_id=""):
        flags = (report_input_shapes, profile_memory, with_stack, with_flops, with_modules)
        # a flag is any object with a truth value of its own (pybind11's bool: True, 1, 0.0,
        # None), not a str or a list
        if not isinstance(state, ProfilerState) or not isinstance(trace_id, str) or \
                not all(hasattr(type(f), "__bool__") for f in flags):
            raise TypeError(
                "__init__(): incompatible constructor arguments. The following argument types "
                "are supported:\n    1. torch._C._profiler.ProfilerConfig(state: "
                "torch._C._profiler.ProfilerState, report_input_shapes: bool, profile_memory: "
                "bool, with_stack: bool, with_flops: bool, with_modules: bool, "
                "experimental_config: torch._C._profiler._ExperimentalConfig, trace_id: str = "
                "'')\n")
        flags = tuple(builtins.bool(f) for f in flags)
        self.state, self.report_input_shapes, self.profile_memory = state, *flags[:2]
        self.with_stack, self.with_flops, self.with_modules = flags[2:]
        self.experimental_config, self.trace_id = experimental_config, trace_id


class ProfilerEvent:
    """One event of the legacy profiler's stream: kind() "push", "pop" or "mark"."""

    def __init__(self, kind, name, thread_id, start_ns, shapes=(), device=-1, handle=0,
                 sequence_nr=-1):
        self._kind, self._name, self._thread = kind, name, thread_id
        self._start_ns, self._shapes, self._device = start_ns, [list(s) for s in shapes], device
        self._handle, self._seq = handle, sequence_nr

    def kind(self):
        return self._kind

    def name(self):
        return self._name

    def thread_id(self):
        return self._thread

    def fwd_thread_id(self):
        return 0

    def start_us(self):
        return self._start_ns / 1000.0

    def cpu_elapsed_us(self, other):
        """Microseconds from this event to `other` on the host clock."""
        return (other._start_ns - self._start_ns) / 1000.0

    def cuda_elapsed_us(self, other):
        if not (self.has_cuda() and other.has_cuda()):
            raise RuntimeError("Events were not recorded for CUDA")
        return (other._start_ns - self._start_ns) / 1000.0

    def has_cuda(self):
        return False  # the legacy stream's events are host events (device times: _events.py)

    def shapes(self):
        return [list(s) for s in self._shapes]

    def device(self):
        return self._device

    def cpu_memory_usage(self):
        return 0

    def cuda_memory_usage(self):
        return 0

    def sequence_nr(self):
        return self._seq

    def handle(self):
        return self._handle

    def node_id(self):
        return -1

    def is_remote(self):
        return False

    def is_async(self):
        return False

    def scope(self):
        return 0

    def correlation_id(self):
        return 0

    def flops(self):
        return 0

    def stack(self):
        return []

    def __repr__(self):
        return f"<ProfilerEvent {self._kind} {self._name!r} at {self.start_us():.3f}us>"


ProfilerEvent.__module__ = ProfilerConfig.__module__ = "torch._C._autograd"

_legacy = {"config": None, "start": 0}
_lock = threading.Lock()


def enable_legacy(config):
    """torch.autograd._enable_profiler_legacy(config): start recording."""
    if not isinstance(config, ProfilerConfig):
        raise TypeError("_enable_profiler_legacy(): expected a ProfilerConfig")
    if config.state is ProfilerState.Disabled:
        raise RuntimeError("Can't set profiler state to Disabled")
    with _lock:
        if _legacy["config"] is not None:
            raise RuntimeError("Profiler is already enabled on this thread")
        _legacy["config"] = config
        _legacy["start"] = _C._profile_now()
        _C._profile_start()


def disable_legacy():
    """torch.autograd._disable_profiler_legacy(): stop, and the event stream as one list of
    ProfilerEvents per thread."""
    with _lock:
        config = _legacy["config"]
        if config is None:
            raise RuntimeError("Can't disable profiler when it's not running")
        _legacy["config"] = None
        records, _ = _C._profile_events()
        _C._profile_stop()
    stamps = []  # (time, order, event): pushes in record order, pops innermost first
    for i, r in enumerate(records):
        name, h0, h1, thread = r[2], r[6], max(r[7], r[6]), r[12]
        shapes = [list(o[1]) if o is not None else [] for o in r[5]] \
            if config.report_input_shapes else []
        device = -1 if _C._device_types()[r[3]] == "cpu" else r[4]
        stamps.append((h0, 1, i, ProfilerEvent("push", name, thread, h0, shapes, device,
                                               sequence_nr=i)))
        stamps.append((h1, 0, -i, ProfilerEvent("pop", "", thread, h1, (), device,
                                                sequence_nr=i)))
    stamps.sort(key=lambda s: s[:3])
    threads = {}
    for *_, ev in stamps:
        threads.setdefault(ev.thread_id(), []).append(ev)
    first = min(threads) if threads else threading.get_ident()
    start = ProfilerEvent("mark", "__start_profile", first, _legacy["start"])
    threads.setdefault(first, []).insert(0, start)
    return [threads[t] for t in sorted(threads)]
