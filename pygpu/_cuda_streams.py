"""pygpu.cuda's streams, events, graphs, device properties and profiling switches.

The Python side of csrc/backends/cuda/cuda_stream_api.c, cuda_graph.c and
cuda_profile.c, reached through ctypes as set_allow_tf32 reaches the plugin
(the plugin is dlopened once by pygpu._C; ctypes.CDLL on the same path gets
the same copy). Every plugin call returns a pg_status; `_check` turns a
non-zero one into the exception the core would raise, with the plugin's
message. Everything refuses a non-cuda device with a ValueError that says so
(sim orders its own work; it has no user streams), and a cuda device that
is not there with DeviceUnavailableError, before any CUDA call.

The API follows torch.cuda: Stream, Event, stream(s), current_stream(),
default_stream(), CUDAGraph, graph(g), get_device_properties(i)."""
import ctypes
import threading

from . import _C
from ._device import device as _parse_device

# pygpu.cuda imports this module to export its classes; it binds itself here (_bind) rather
# than being imported back, so the imports run one way.
_cuda = None


def _bind(cuda_module):
    global _cuda
    _cuda = cuda_module

# pg_status codes (csrc/core/pg_status.h)
_ERRORS = {1: ValueError, 2: TypeError, 3: IndexError, 4: ValueError, 5: TypeError,
           6: _C.DeviceMismatchError, 7: MemoryError, 8: _C.DeviceUnavailableError,
           10: _C.AsyncOpError, 11: RuntimeError}

_lib = None
_lib_lock = threading.Lock()
_tls = threading.local()


def _plugin():
    """The loaded CUDA plugin (ctypes), or DeviceUnavailableError saying why not."""
    global _lib
    if _lib is not None:
        return _lib
    cuda = _cuda
    cuda._acc._load()
    if not _C._load_cuda(None):
        raise _C.DeviceUnavailableError(f"cuda is not available: {cuda.unavailable_reason()}")
    with _lib_lock:
        if _lib is None:
            lib = ctypes.CDLL(cuda.PLUGIN)
            lib.pg_plugin_last_error.restype = ctypes.c_char_p
            vp, i, pp = ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_void_p)
            sigs = {
                "stream_create": (i, i, pp), "stream_destroy": (vp,),
                "stream_handle": (i, vp, ctypes.POINTER(ctypes.c_size_t)),
                "stream_enter": (i, vp, pp), "stream_exit": (i, vp, vp),
                "stream_synchronize": (i, vp), "stream_query": (i, vp, ctypes.POINTER(i)),
                "stream_wait_event": (i, vp, vp),
                "stream_wait_for_current": (i, ctypes.c_size_t), "stream_gather": (i,),
                "storage_imported": (i, vp),
                "event_create": (i, i, pp), "event_destroy": (vp,),
                "event_record": (vp, i, vp), "event_query": (vp, ctypes.POINTER(i)),
                "event_synchronize": (vp,),
                "event_elapsed_time": (vp, vp, ctypes.POINTER(ctypes.c_float)),
                "graph_create": (pp,), "graph_destroy": (vp,),
                "graph_capture_begin": (vp, i, vp), "graph_capture_end": (vp, i),
                "graph_replay": (vp,), "graph_reset": (vp,),
                "device_properties": (i, ctypes.POINTER(_Props)),
                "set_option": (ctypes.c_char_p, i), "get_option": (ctypes.c_char_p, ctypes.POINTER(i)),
            }
            for name, args in sigs.items():
                fn = getattr(lib, "pg_plugin_" + name)
                fn.argtypes = list(args)
                fn.restype = ctypes.c_int
            lib.pg_plugin_graph_ops.argtypes = [vp]
            lib.pg_plugin_graph_ops.restype = ctypes.c_int
            lib.pg_plugin_nvtx_push.argtypes = [ctypes.c_char_p]
            lib.pg_plugin_nvtx_push.restype = None
            lib.pg_plugin_nvtx_pop.restype = None
            _lib = lib
    return _lib


def _check(status):
    if status != 0:
        msg = (_lib.pg_plugin_last_error() or b"").decode(errors="replace")
        raise _ERRORS.get(status, RuntimeError)(msg or f"the CUDA plugin returned status {status}")


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
        h = ctypes.c_void_p()
        _check(_plugin().pg_plugin_stream_create(self.device_index, int(priority), ctypes.byref(h)))
        self._h = h.value
        self._owned = True

    @property
    def device(self):
        return _parse_device(f"cuda:{self.device_index}")

    @property
    def cuda_stream(self):
        """The cudaStream_t as an int (for CuPy, Numba, __cuda_array_interface__)."""
        out = ctypes.c_size_t()
        _check(_plugin().pg_plugin_stream_handle(self.device_index, self._h, ctypes.byref(out)))
        return out.value

    def query(self):
        """True when all work queued on the stream has finished."""
        done = ctypes.c_int()
        _check(_plugin().pg_plugin_stream_query(self.device_index, self._h, ctypes.byref(done)))
        return bool(done.value)

    def synchronize(self):
        """Wait on the host for the stream's work; raises AsyncOpError on a device fault."""
        _check(_plugin().pg_plugin_stream_synchronize(self.device_index, self._h))

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
        _check(_plugin().pg_plugin_stream_wait_event(self.device_index, self._h, event._h))

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
        if getattr(self, "_h", None) and getattr(self, "_owned", False) and _lib is not None:
            _lib.pg_plugin_stream_destroy(self._h)  # refused (kept) if still current
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
        prev = ctypes.c_void_p()
        _check(_plugin().pg_plugin_stream_enter(self.s.device_index, self.s._h, ctypes.byref(prev)))
        _stack(self.s.device_index).append((self.s, prev.value))
        return self.s

    def __exit__(self, *exc):
        if self.s is None:
            return False
        st = _stack(self.s.device_index)
        _, prev = st.pop()
        _check(_plugin().pg_plugin_stream_exit(self.s.device_index, self.s._h, prev))
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
        if self._h is None:
            h = ctypes.c_void_p()
            _check(_plugin().pg_plugin_event_create(stream.device_index, int(self.enable_timing),
                                                    ctypes.byref(h)))
            self._h, self.device_index = h.value, stream.device_index
        _check(_plugin().pg_plugin_event_record(self._h, stream.device_index, stream._h))

    def wait(self, stream=None):
        (current_stream() if stream is None else stream).wait_event(self)

    def query(self):
        """True when the work before the event has finished (or it was never recorded)."""
        if self._h is None:
            return True
        done = ctypes.c_int()
        _check(_plugin().pg_plugin_event_query(self._h, ctypes.byref(done)))
        return bool(done.value)

    def synchronize(self):
        if self._h is not None:
            _check(_plugin().pg_plugin_event_synchronize(self._h))

    def elapsed_time(self, end):
        """Milliseconds between this event and `end` (both recorded, enable_timing=True)."""
        if not isinstance(end, Event):
            raise TypeError(f"elapsed_time expects a pygpu.cuda.Event, got {type(end).__name__}")
        if not (self.enable_timing and end.enable_timing):
            raise ValueError("elapsed_time needs both events created with Event(enable_timing=True)")
        if self._h is None or end._h is None:
            raise ValueError("elapsed_time: record both events first")
        ms = ctypes.c_float()
        _check(_plugin().pg_plugin_event_elapsed_time(self._h, end._h, ctypes.byref(ms)))
        return ms.value

    def __repr__(self):
        where = "unrecorded" if self._h is None else f"cuda:{self.device_index}"
        return f"<pygpu.cuda.Event {where}{' timing' if self.enable_timing else ''}>"

    def __del__(self):
        if getattr(self, "_h", None) and _lib is not None:
            _lib.pg_plugin_event_destroy(self._h)
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
        h = ctypes.c_void_p()
        _check(_plugin().pg_plugin_graph_create(ctypes.byref(h)))
        self._h = h.value
        self.device_index = None

    def capture_begin(self, stream):
        _check(_plugin().pg_plugin_graph_capture_begin(self._h, stream.device_index, stream._h))
        self.device_index = stream.device_index

    def capture_end(self, keep=True):
        _check(_plugin().pg_plugin_graph_capture_end(self._h, int(bool(keep))))

    def replay(self):
        _check(_plugin().pg_plugin_graph_replay(self._h))

    def reset(self):
        _check(_plugin().pg_plugin_graph_reset(self._h))

    @property
    def num_ops(self):
        """How many pygpu ops the capture holds (each one or more kernels)."""
        return _plugin().pg_plugin_graph_ops(self._h)

    def __del__(self):
        if getattr(self, "_h", None) and _lib is not None:
            _lib.pg_plugin_graph_destroy(self._h)
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

class _Props(ctypes.Structure):
    # mirrors pg_cuda_properties in csrc/backends/cuda/cuda_profile.c
    _fields_ = [("name", ctypes.c_char * 256), ("major", ctypes.c_int), ("minor", ctypes.c_int),
                ("total_memory", ctypes.c_ulonglong), ("multi_processor_count", ctypes.c_int),
                ("max_threads_per_multi_processor", ctypes.c_int), ("warp_size", ctypes.c_int),
                ("l2_cache_size", ctypes.c_int),
                ("shared_memory_per_block_optin", ctypes.c_ulonglong),
                ("pci_bus_id", ctypes.c_int), ("pci_device_id", ctypes.c_int),
                ("pci_domain_id", ctypes.c_int), ("uuid", ctypes.c_ubyte * 16)]


class DeviceProperties:
    """What cudaGetDeviceProperties says of one GPU (as torch's _CudaDeviceProperties)."""

    def __init__(self, p):
        self.name = p.name.decode(errors="replace")
        self.major, self.minor = p.major, p.minor
        self.total_memory = p.total_memory
        self.multi_processor_count = p.multi_processor_count
        self.max_threads_per_multi_processor = p.max_threads_per_multi_processor
        self.warp_size = p.warp_size
        self.l2_cache_size = p.l2_cache_size
        self.shared_memory_per_block_optin = p.shared_memory_per_block_optin
        self.pci_bus_id = (f"{p.pci_domain_id:08x}:{p.pci_bus_id:02x}:"
                           f"{p.pci_device_id:02x}.0")
        u = bytes(p.uuid).hex()
        self.uuid = f"GPU-{u[:8]}-{u[8:12]}-{u[12:16]}-{u[16:20]}-{u[20:]}"

    def __repr__(self):
        return (f"DeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
                f"total_memory={self.total_memory >> 20}MB, "
                f"multi_processor_count={self.multi_processor_count})")


def get_device_properties(device=None):
    index = _cuda_index(device, "pygpu.cuda.get_device_properties")
    p = _Props()
    _check(_plugin().pg_plugin_device_properties(index, ctypes.byref(p)))
    return DeviceProperties(p)


def get_device_capability(device=None):
    p = get_device_properties(device)
    return (p.major, p.minor)


def _set_option(name, value):
    _check(_plugin().pg_plugin_set_option(name.encode(), int(bool(value))))


def _get_option(name):
    v = ctypes.c_int()
    _check(_plugin().pg_plugin_get_option(name.encode(), ctypes.byref(v)))
    return bool(v.value)


def nvtx_range_push(name):
    _plugin().pg_plugin_nvtx_push(str(name).encode())


def nvtx_range_pop():
    _plugin().pg_plugin_nvtx_pop()


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


# -- interop --------------------------------------------------------------------------------

_TYPESTR = {"float32": "<f4", "float64": "<f8", "float16": "<f2", "int64": "<i8", "bool": "|b1"}


def _cuda_array_interface(t):
    """__cuda_array_interface__ (version 3) of a cuda tensor: the consumer orders its
    reads after pygpu's work by waiting on `stream` (the stream this thread queues on)."""
    name = str(t.dtype)
    if name not in _TYPESTR:
        raise AttributeError(f"a {name} tensor has no __cuda_array_interface__ (the protocol "
                             f"has no {name} type); convert with .astype(pygpu.float32)")
    index = t.device.index
    item = t.itemsize
    strides = None if t.is_contiguous() else tuple(s * item for s in t.strides)
    # the stream named below also waits for the copy and comm streams (a prefetch
    # still filling t), so waiting for it alone is enough
    _check(_plugin().pg_plugin_stream_gather(index))
    return {
        "shape": tuple(t.shape),
        "typestr": _TYPESTR[name],
        "data": (_C._data_ptr(t) if t.numel() else 0, False),
        "version": 3,
        "strides": strides,
        "descr": [("", _TYPESTR[name])],
        "stream": current_stream(index).cuda_stream,
    }


def _consumer_stream(index):
    """The stream a DLPack import onto cuda:index will use: handed to the producer's
    __dlpack__(stream=...) so it makes that stream wait (an event, no host sync)."""
    return current_stream(_cuda_index(index, "from_dlpack")).cuda_stream


def _import_mark(index, storage):
    """from_dlpack of CUDA memory, once wrapped: the storage (a pg_storage pointer)
    counts as written by work queued now on cuda:index, after the producer's event
    wait, so pygpu's copy stream and host waits order after the producer too."""
    _check(_plugin().pg_plugin_storage_imported(index, ctypes.c_void_p(storage)))


def _export_wait(index, consumer):
    """__dlpack__(stream=consumer) on a cuda tensor: the consumer's stream waits on the
    device for the work pygpu queued so far (1: legacy default stream, 2: per-thread)."""
    _check(_plugin().pg_plugin_stream_wait_for_current(index, consumer))
