"""NVML (the NVIDIA driver's management library) through ctypes, for pygpu.smi.

libnvidia-ml.so.1 ships with the driver, so this needs no Python package:
where the driver is absent, every call answers None and smi says n/a. NVML
numbers GPUs by physical index and ignores CUDA_VISIBLE_DEVICES; devices are
matched by PCI bus id when the runtime gives one, else by index."""
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


def query(index):
    """{'utilization_pct', 'memory_used', 'memory_total', 'power_w'} or None."""
    lib = _load()
    if lib is None:
        return None
    handle = ctypes.c_void_p()
    if lib.nvmlDeviceGetHandleByIndex_v2(ctypes.c_uint(index), ctypes.byref(handle)) != 0:
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
