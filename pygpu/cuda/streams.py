"""pygpu.cuda's streams, events, graphs, device properties and profiling switches.

The Python side of csrc/backends/cuda/cuda_stream_api.c, cuda_graph.c and
cuda_profile.c, reached through the plugin's extras table as pygpu._C's
_cuda_* methods (csrc/bindings/cuda_extras.c): the table was fetched and its
version checked once when the plugin was loaded, and a failing call raises
the exception csrc/bindings/errors.c maps its status to, with the plugin's
message. Everything refuses a non-cuda device with a ValueError that says so
(sim orders its own work; it has no user streams), and a cuda device that
is not there with DeviceUnavailableError, before any CUDA call.

The API follows torch.cuda: Stream, Event, stream(s), current_stream(),
default_stream(), CUDAGraph, graph(g), get_device_properties(i)."""
import threading

from .. import _C
from .._device import device as _parse_device

# pygpu.cuda imports this module to export its classes; it binds itself here (_bind) rather
# than being imported back, so the imports run one way.
_cuda = None


def _bind(cuda_module):
    global _cuda
    _cuda = cuda_module


_tls = threading.local()


def _plugin():
    """Load the CUDA plugin, or raise DeviceUnavailableError saying why not."""
    _cuda._load(True)


def _loaded():
    """Whether the plugin is loaded (a finalizer must not try to load it)."""
    return _C._load_cuda(None)


def _cuda_index(device, what):
    """The cuda device index `device` names (None: pygpu.cuda.current_device()),
    checked to exist; a clear error for other device types."""
    cuda = _cuda
    if device is None:
        index = cuda.current_device()
    elif isinstance(device, int):
        index = device
    else:
        d = _parse_device(device)
        if d.type != "cuda":
            raise ValueError(
                f"{what} needs a cuda device, got {d}: streams, events and graphs are CUDA "
                f"objects (sim and cpu order their work themselves; nothing to do there)")
        index = d.index
    cuda._check_index(index)
    _plugin()
    return index


# -- streams --------------------------------------------------------------------------------

class Stream:
    """A CUDA stream of one device, as torch.cuda.Stream: Stream(device=None, priority=0).
    priority -1 asks for a high-priority stream. Work goes to it inside
    `with pygpu.cuda.stream(s):`. pygpu orders it with the device's own stream where
    they meet (see docs/cuda.md), so results stay right without wait_stream."""

    def __init__(self, device=None, priority=0, *, _handle=None, _index=None):
        if _index is not None:  # the device's own stream (default_stream())
            self.device_index, self._h = _index, None
            return
        self.device_index = _cuda_index(device, "pygpu.cuda.Stream")
        self._h = None
        self._h = _C._cuda_stream_create(self.device_index, int(priority))
        self._owned = True

    @property
    def device(self):
        return _parse_device(f"cuda:{self.device_index}")

    @property
    def cuda_stream(self):
        """The cudaStream_t as an int (for CuPy, Numba, __cuda_array_interface__)."""
        _plugin()
        return _C._cuda_stream_handle(self.device_index, self._h)

    def query(self):
        """True when all work queued on the stream has finished."""
        _plugin()
        return _C._cuda_stream_query(self.device_index, self._h)

    def synchronize(self):
        """Wait on the host for the stream's work; raises AsyncOpError on a device fault."""
        _plugin()
        _C._cuda_stream_synchronize(self.device_index, self._h)

    def wait_event(self, event):
        """Later work on this stream waits (on the device) for the work before `event`."""
        if not isinstance(event, Event):
            raise TypeError(f"wait_event expects a pygpu.cuda.Event, got {type(event).__name__}")
        if event._h is None:
            return
        if event.device_index != self.device_index:
            raise _C.DeviceMismatchError(
                f"the event was recorded on cuda:{event.device_index}, this stream is on "
                f"cuda:{self.device_index}")
        _plugin()
        _C._cuda_stream_wait_event(self.device_index, self._h, event._h)

    def wait_stream(self, stream):
        """Later work on this stream waits for the work queued on `stream` so far."""
        if not isinstance(stream, Stream):
            raise TypeError(f"wait_stream expects a pygpu.cuda.Stream, got {type(stream).__name__}")
        self.wait_event(stream.record_event())

    def record_event(self, event=None):
        event = Event() if event is None else event
        event.record(self)
        return event

    def __eq__(self, other):
        return (isinstance(other, Stream) and other.device_index == self.device_index
                and other._h == self._h)

    def __hash__(self):
        return hash((self.device_index, self._h))

    def __repr__(self):
        kind = "default" if self._h is None else f"0x{self._h:x}"
        return f"<pygpu.cuda.Stream cuda:{self.device_index} {kind}>"

    def __del__(self):
        if getattr(self, "_h", None) and getattr(self, "_owned", False) and _loaded():
            try:
                _C._cuda_stream_destroy(self._h)
            except Exception:  # refused (kept) while still current somewhere
                pass
            self._h = None


def _stack(index):
    stacks = getattr(_tls, "stacks", None)
    if stacks is None:
        stacks = _tls.stacks = {}
    return stacks.setdefault(index, [])


def default_stream(device=None):
    """The device's own stream: where pygpu queues work when no stream() block is open."""
    return Stream(_index=_cuda_index(device, "pygpu.cuda.default_stream"))


def current_stream(device=None):
    """The stream this thread's work on the device goes to now."""
    index = _cuda_index(device, "pygpu.cuda.current_stream")
    st = _stack(index)
    return st[-1][0] if st else Stream(_index=index)


class stream:
    """`with pygpu.cuda.stream(s):` queues this thread's work on s's device to s.
    stream(None) does nothing (as in PyTorch)."""

    def __init__(self, s):
        if s is not None and not isinstance(s, Stream):
            raise TypeError(f"pygpu.cuda.stream expects a pygpu.cuda.Stream or None, got "
                            f"{type(s).__name__}")
        self.s = s

    def __enter__(self):
        if self.s is None:
            return None
        _plugin()
        prev = _C._cuda_stream_enter(self.s.device_index, self.s._h)
        _stack(self.s.device_index).append((self.s, prev))
        return self.s

    def __exit__(self, *exc):
        if self.s is None:
            return False
        st = _stack(self.s.device_index)
        _, prev = st.pop()
        _C._cuda_stream_exit(self.s.device_index, self.s._h, prev)
        return False


# -- events ---------------------------------------------------------------------------------

class Event:
    """A CUDA event, as torch.cuda.Event(enable_timing=False). Created on the device of
    the stream it is first recorded on."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        if interprocess:
            raise ValueError("interprocess events are not supported by pygpu")
        self.enable_timing = bool(enable_timing)
        self.device_index = None
        self._h = None

    def record(self, stream=None):
        """Record on `stream` (default: the current stream of the current cuda device)."""
        stream = current_stream() if stream is None else stream
        if not isinstance(stream, Stream):
            raise TypeError(f"Event.record expects a pygpu.cuda.Stream, got {type(stream).__name__}")
        _plugin()
        if self._h is None:
            h = _C._cuda_event_create(stream.device_index, self.enable_timing)
            self._h, self.device_index = h, stream.device_index
        _C._cuda_event_record(self._h, stream.device_index, stream._h)

    def wait(self, stream=None):
        (current_stream() if stream is None else stream).wait_event(self)

    def query(self):
        """True when the work before the event has finished (or it was never recorded)."""
        if self._h is None:
            return True
        return _C._cuda_event_query(self._h)

    def synchronize(self):
        if self._h is not None:
            _C._cuda_event_synchronize(self._h)

    def elapsed_time(self, end):
        """Milliseconds between this event and `end` (both recorded, enable_timing=True)."""
        if not isinstance(end, Event):
            raise TypeError(f"elapsed_time expects a pygpu.cuda.Event, got {type(end).__name__}")
        if not (self.enable_timing and end.enable_timing):
            raise ValueError("elapsed_time needs both events created with Event(enable_timing=True)")
        if self._h is None or end._h is None:
            raise ValueError("elapsed_time: record both events first")
        return _C._cuda_event_elapsed_time(self._h, end._h)

    def __repr__(self):
        where = "unrecorded" if self._h is None else f"cuda:{self.device_index}"
        return f"<pygpu.cuda.Event {where}{' timing' if self.enable_timing else ''}>"

    def __del__(self):
        if getattr(self, "_h", None) and _loaded():
            try:
                _C._cuda_event_destroy(self._h)
            except Exception:
                pass
            self._h = None


# -- graphs ---------------------------------------------------------------------------------

class CUDAGraph:
    """A captured sequence of ops, replayed with one launch (torch.cuda.CUDAGraph).

    Capture with `with pygpu.cuda.graph(g):`. The graph keeps every tensor's memory a
    captured op touched alive until reset(), so replay() may rewrite them: fill the
    input tensors you captured with (static_x.copy_(x)), replay, read the outputs.
    Scalars (learning rate, random seeds) are those of the capture."""

    def __init__(self):
        self._h = None
        _plugin()
        self._h = _C._cuda_graph_create()
        self.device_index = None

    def capture_begin(self, stream):
        _C._cuda_graph_capture_begin(self._h, stream.device_index, stream._h)
        self.device_index = stream.device_index

    def capture_end(self, keep=True):
        _C._cuda_graph_capture_end(self._h, bool(keep))

    def replay(self):
        _C._cuda_graph_replay(self._h)

    def reset(self):
        _C._cuda_graph_reset(self._h)

    @property
    def num_ops(self):
        """How many pygpu ops the capture holds (each one or more kernels)."""
        return _C._cuda_graph_ops(self._h)

    def __del__(self):
        if getattr(self, "_h", None) and _loaded():
            try:
                _C._cuda_graph_destroy(self._h)
            except Exception:
                pass
            self._h = None


class graph:
    """`with pygpu.cuda.graph(g):` captures this thread's ops on the device into g
    instead of running them (as torch.cuda.graph). Waits for the device first. Anything
    that would wait on the host inside (.cpu(), .item(), print, synchronize) or copy
    between host and device raises RuntimeError and the capture is dropped. Run the
    step once before capturing (warm-up), as with PyTorch."""

    def __init__(self, cuda_graph, stream=None, device=None):
        if not isinstance(cuda_graph, CUDAGraph):
            raise TypeError(f"pygpu.cuda.graph expects a pygpu.cuda.CUDAGraph, got "
                            f"{type(cuda_graph).__name__}")
        self.g = cuda_graph
        self.device = device
        self.stream = stream

    def __enter__(self):
        cuda = _cuda
        index = (self.stream.device_index if self.stream is not None
                 else _cuda_index(self.device, "pygpu.cuda.graph"))
        cuda.synchronize(index)
        self._s = self.stream if self.stream is not None else Stream(index)
        self._ctx = stream(self._s)
        self._ctx.__enter__()
        try:
            self.g.capture_begin(self._s)
        except BaseException:
            self._ctx.__exit__(None, None, None)
            raise
        return self.g

    def __exit__(self, exc_type, exc, tb):
        try:
            self.g.capture_end(keep=exc_type is None)
        finally:
            self._ctx.__exit__(None, None, None)
        return False


# -- device properties, TF32, profiling -----------------------------------------------------

class DeviceProperties:
    """What cudaGetDeviceProperties says of one GPU (as torch's _CudaDeviceProperties)."""

    def __init__(self, p):
        # p: the dict _C._cuda_device_properties returns (pg_cuda_properties' fields)
        self.name = p["name"]
        self.major, self.minor = p["major"], p["minor"]
        self.total_memory = p["total_memory"]
        self.multi_processor_count = p["multi_processor_count"]
        self.max_threads_per_multi_processor = p["max_threads_per_multi_processor"]
        self.warp_size = p["warp_size"]
        self.l2_cache_size = p["l2_cache_size"]
        self.shared_memory_per_block_optin = p["shared_memory_per_block_optin"]
        self.pci_bus_id = (f"{p['pci_domain_id']:08x}:{p['pci_bus_id']:02x}:"
                           f"{p['pci_device_id']:02x}.0")
        u = p["uuid"].hex()
        self.uuid = f"GPU-{u[:8]}-{u[8:12]}-{u[12:16]}-{u[16:20]}-{u[20:]}"

    def __repr__(self):
        return (f"DeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
                f"total_memory={self.total_memory >> 20}MB, "
                f"multi_processor_count={self.multi_processor_count})")


def get_device_properties(device=None):
    index = _cuda_index(device, "pygpu.cuda.get_device_properties")
    return DeviceProperties(_C._cuda_device_properties(index))


def get_device_capability(device=None):
    p = get_device_properties(device)
    return (p.major, p.minor)


def _set_option(name, value):
    _plugin()
    _C._cuda_set_option(name, int(bool(value)))


def _get_option(name):
    _plugin()
    return bool(_C._cuda_get_option(name))


def nvtx_range_push(name):
    _plugin()
    _C._cuda_nvtx_push(str(name))


def nvtx_range_pop():
    _plugin()
    _C._cuda_nvtx_pop()


class nvtx_range:
    """`with pygpu.cuda.nvtx_range("epoch 3"):` a named range in Nsight Systems."""

    def __init__(self, name):
        self.name = name

    def __enter__(self):
        nvtx_range_push(self.name)

    def __exit__(self, *exc):
        nvtx_range_pop()
        return False


class profiling:
    """`with pygpu.cuda.profiling():` an NVTX range around every op (seen by Nsight
    Systems when it runs the program; free otherwise) and, with kernel_timing=True,
    each op's GPU time in pygpu.stats() (kernel_ops, kernel_seconds). Restores the
    previous settings on exit."""

    def __init__(self, nvtx=True, kernel_timing=True):
        self.want = {"nvtx": nvtx, "kernel_timing": kernel_timing}

    def __enter__(self):
        self.old = {k: _get_option(k) for k in self.want}
        for k, v in self.want.items():
            _set_option(k, v)
        return self

    def __exit__(self, *exc):
        for k, v in self.old.items():
            _set_option(k, v)
        return False
