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


# ---- torch.Stream and torch.Event: the device-generic spellings ---------------------------

def _stream_device(device):
    """The device a torch.Stream/Event(device=None) is for: the current accelerator's, or
    cpu when there is none (as PyTorch with no accelerator built)."""
    if device is None:
        acc = current_accelerator()
        return acc if acc is not None else _device("cpu")
    d = _device(device)
    if d.type in ("cuda", "sim") and d.index is None:
        d = _device(d.type, _KINDS[d.type].current_device())
    return d


_DEVICE_TYPE_NUMBER = {"cpu": 0, "cuda": 1, "meta": 14, "sim": 20}  # c10::DeviceType


def _index_of(device):
    """PyTorch's device_index of a stream or event: -1 on cpu (one device, no index)."""
    return -1 if device.type == "cpu" or device.index is None else device.index


class Stream:
    """torch.Stream(device=None, *, priority=0): an in-order queue of one device.

    On cuda it is a pygpu.cuda.Stream (work goes to it inside `with s:`); sim and cpu have
    one queue per device, which every Stream of that device names (stream_id 0): with-blocks
    change nothing there, and synchronize() waits for that queue."""

    def __init__(self, device=None, *, priority=0):
        self._device = _stream_device(device)
        if not isinstance(priority, int) or priority > 0:
            raise RuntimeError(f"Stream priority must be 0 or a negative number, got {priority}")
        self._cuda = None
        if self._device.type == "cuda":
            from .cuda.streams import Stream as _CudaStream
            self._cuda = _CudaStream(self._device, priority)

    @property
    def device(self):
        return self._device

    @property
    def device_type(self):
        """PyTorch's DeviceType number (cpu 0, cuda 1; sim is an accelerator from outside
        PyTorch, which PyTorch numbers PrivateUse1, 20)."""
        return _DEVICE_TYPE_NUMBER[self._device.type]

    @property
    def device_index(self):
        return _index_of(self._device)

    @property
    def stream_id(self):
        return (self._cuda._h or 0) if self._cuda is not None else 0

    @property
    def native_handle(self):
        return self._cuda.cuda_stream if self._cuda is not None else 0

    def query(self):
        """True when the work queued on the stream has finished."""
        if self._cuda is not None:
            return self._cuda.query()
        from ._sync import synchronize as _sync
        _sync(self._device)  # sim's one queue: finished once waited for
        return True

    def synchronize(self):
        if self._cuda is not None:
            self._cuda.synchronize()
        else:
            from ._sync import synchronize as _sync
            _sync(self._device)

    def wait_event(self, event):
        """Later work on this stream waits for the work before `event`."""
        if not isinstance(event, Event):
            raise TypeError(f"wait_event expects a torch.Event, got {type(event).__name__}")
        event.wait(self)

    def wait_stream(self, stream):
        """Later work on this stream waits for the work queued on `stream` so far."""
        if not isinstance(stream, Stream):
            raise TypeError(f"wait_stream expects a torch.Stream, got {type(stream).__name__}")
        if self._cuda is not None and stream._cuda is not None:
            self._cuda.wait_stream(stream._cuda)
        elif stream._device != self._device:
            stream.synchronize()

    def record_event(self, event=None):
        event = Event(self._device) if event is None else event
        event.record(self)
        return event

    def is_capturing(self):
        return False

    def __enter__(self):
        if self._cuda is not None:
            from .cuda.streams import stream as _stream_ctx
            self._ctx = _stream_ctx(self._cuda)
            self._ctx.__enter__()
        return self

    def __exit__(self, *exc):
        ctx = self.__dict__.pop("_ctx", None)
        if ctx is not None:
            ctx.__exit__(*exc)
        return False

    def __eq__(self, other):
        return (isinstance(other, Stream) and other._device == self._device
                and other.stream_id == self.stream_id)

    def __hash__(self):
        return hash((str(self._device), self.stream_id))

    def __repr__(self):
        return (f"torch.Stream device_type={self._device.type}, "
                f"device_index={self.device_index}, stream_id={self.stream_id}")


class Event:
    """torch.Event(device=None, *, enable_timing=False, blocking=False, interprocess=False):
    a point in a stream's work, to wait for or to time from.

    On cuda it is a pygpu.cuda.Event. On sim, whose one queue runs in order, record() waits
    for the queue and notes the time, so wait() has nothing left to order and
    elapsed_time() gives the host time between two records. cpu has no events (PyTorch's
    RuntimeError)."""

    def __init__(self, device=None, *, enable_timing=False, blocking=False, interprocess=False):
        self._device = _stream_device(device)
        self.enable_timing = bool(enable_timing)
        self._cuda, self._stamp = None, None
        if self._device.type == "cuda":
            from .cuda.streams import Event as _CudaEvent
            self._cuda = _CudaEvent(enable_timing=enable_timing, blocking=blocking,
                                    interprocess=interprocess)

    @property
    def device(self):
        return self._device

    @property
    def event_id(self):
        return (self._cuda._h or 0) if self._cuda is not None else 0

    def _no_events(self):
        if self._device.type not in ("sim", "cuda"):
            raise RuntimeError(f"{self._device.type} backend doesn't support events.")

    def record(self, stream=None):
        self._no_events()
        stream = Stream(self._device) if stream is None else stream
        if not isinstance(stream, Stream):
            raise TypeError(f"Event.record expects a torch.Stream, got {type(stream).__name__}")
        if stream.device != self._device:
            raise RuntimeError(f"Event device {self._device} does not match recording stream's "
                               f"device {stream.device}.")
        if self._cuda is not None:
            self._cuda.record(stream._cuda)
        else:
            import time
            stream.synchronize()
            self._stamp = time.perf_counter()

    def wait(self, stream=None):
        self._no_events()
        if self._cuda is not None:
            self._cuda.wait(None if stream is None else stream._cuda)

    def query(self):
        return self._cuda.query() if self._cuda is not None else True

    def synchronize(self):
        self._no_events()
        if self._cuda is not None:
            self._cuda.synchronize()

    def elapsed_time(self, end_event):
        """Milliseconds between this event's record and end_event's."""
        self._no_events()
        if not isinstance(end_event, Event):
            raise TypeError(f"elapsed_time expects a torch.Event, got {type(end_event).__name__}")
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        if self._cuda is not None:
            return self._cuda.elapsed_time(end_event._cuda)
        if self._stamp is None or end_event._stamp is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        return (end_event._stamp - self._stamp) * 1000.0

    def __repr__(self):
        index = _index_of(self._device)
        return (f"torch.Event device_type={self._device.type}, device_index={index}, "
                f"event_flag={int(self.enable_timing)}, event_id={self.event_id}")
