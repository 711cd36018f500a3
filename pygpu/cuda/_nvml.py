"""NVML (the NVIDIA driver's management library) through ctypes, for pygpu.smi.

libnvidia-ml.so.1 ships with the driver, so this needs no Python package:
where the driver is absent, every call answers None and smi says n/a. NVML
numbers GPUs by physical index and ignores CUDA_VISIBLE_DEVICES, so devices are
matched by PCI bus id (pygpu.cuda asks the runtime for it without creating a
context); by index only where no bus id is known. NVML answers free memory
without a CUDA context, which cudaMemGetInfo cannot: pygpu.cuda.mem_get_info
asks here first, so walking the GPUs to pick the freest one leaves no context
(and its few hundred MiB) on each."""
import ctypes


class _Utilization(ctypes.Structure):
    _fields_ = [("gpu", ctypes.c_uint), ("memory", ctypes.c_uint)]


class _Memory(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong),
                ("used", ctypes.c_ulonglong)]


_lib = None
_error = None


def _load():
    global _lib, _error
    if _lib is None and _error is None:
        try:
            lib = ctypes.CDLL("libnvidia-ml.so.1")
            if lib.nvmlInit_v2() != 0:
                raise OSError("nvmlInit_v2 failed")
            _lib = lib
        except OSError as e:
            _error = str(e)
    return _lib


def unavailable_reason():
    _load()
    return _error


def _handle(lib, index, bus_id):
    handle = ctypes.c_void_p()
    if bus_id:
        rc = lib.nvmlDeviceGetHandleByPciBusId_v2(bus_id.encode(), ctypes.byref(handle))
    else:
        rc = lib.nvmlDeviceGetHandleByIndex_v2(ctypes.c_uint(index), ctypes.byref(handle))
    return handle if rc == 0 else None


def memory_info(bus_id):
    """(free, total) bytes of the GPU at PCI bus id `bus_id`, or None."""
    lib = _load()
    handle = _handle(lib, None, bus_id) if lib is not None and bus_id else None
    if handle is None:
        return None
    mem = _Memory()
    if lib.nvmlDeviceGetMemoryInfo(handle, ctypes.byref(mem)) != 0:
        return None
    return mem.free, mem.total


def query(index, bus_id=None):
    """{'utilization_pct', 'memory_used', 'memory_total', 'power_w'} or None.
    `bus_id` (the runtime's PCI bus id of the device) picks the GPU; without it,
    `index` is taken as NVML's own (physical) index."""
    lib = _load()
    if lib is None:
        return None
    handle = _handle(lib, index, bus_id)
    if handle is None:
        return None
    out = {}
    util = _Utilization()
    if lib.nvmlDeviceGetUtilizationRates(handle, ctypes.byref(util)) == 0:
        out["utilization_pct"] = util.gpu
    mem = _Memory()
    if lib.nvmlDeviceGetMemoryInfo(handle, ctypes.byref(mem)) == 0:
        out["memory_used"], out["memory_total"] = mem.used, mem.total
    milliwatts = ctypes.c_uint()
    if lib.nvmlDeviceGetPowerUsage(handle, ctypes.byref(milliwatts)) == 0:
        out["power_w"] = milliwatts.value / 1000.0
    return out


class _Process(ctypes.Structure):  # nvmlProcessInfo_v1_t
    _fields_ = [("pid", ctypes.c_uint), ("usedGpuMemory", ctypes.c_ulonglong)]


def compute_pids(bus_id):
    """Process ids with a CUDA context on the GPU at `bus_id`, or None where NVML
    cannot say (no driver, or processes of other containers hidden)."""
    lib = _load()
    handle = _handle(lib, None, bus_id) if lib is not None and bus_id else None
    if handle is None:
        return None
    procs = (_Process * 256)()
    count = ctypes.c_uint(len(procs))
    if lib.nvmlDeviceGetComputeRunningProcesses(handle, ctypes.byref(count), procs) != 0:
        return None
    return {procs[i].pid for i in range(count.value)}
