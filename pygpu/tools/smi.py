"""python -m pygpu.smi (or pygpu.tools.smi): an nvidia-smi-like table of every device pygpu sees.

For each device: its name, memory in use / reserved / total (from pygpu's
caching allocator), ops launched and transfers in and out of it, from
pygpu's counters (they cover this process only). On cuda devices, NVML's
utilization, memory and power are shown too when the driver provides them
(pygpu/cuda/_nvml.py); without it they say n/a."""
import sys

from .. import _C, cuda, devices, stats
from ..cuda import _nvml

MIB = 1 << 20


def _nvml_row(index):
    # NVML counts physical GPUs; cuda:index counts the visible ones (CUDA_VISIBLE_DEVICES):
    # the PCI bus id is what both agree on
    q = _nvml.query(index, bus_id=cuda.pci_bus_id(index))
    if not q:
        return f"n/a ({_nvml.unavailable_reason() or 'no NVML data'})"
    parts = []
    if "utilization_pct" in q:
        parts.append(f"{q['utilization_pct']}% busy")
    if "memory_used" in q:
        parts.append(f"{q['memory_used'] / MIB:.0f}/{q['memory_total'] / MIB:.0f} MiB used (all processes)")
    if "power_w" in q:
        parts.append(f"{q['power_w']:.1f} W")
    return ", ".join(parts)


def table():
    s = stats()
    lines = [f"{'device':<8} {'name':<34} {'in use MiB':>11} {'reserved':>9} {'total MiB':>10} "
             f"{'ops':>8} {'h2d':>6} {'d2h':>6}"]
    for d in devices():
        name = str(d)
        per = s.per_device.get(name, {})
        h2d = sum(x["count"] for x in s.transfers if x["dst"] == name and x["src"] == "cpu")
        d2h = sum(x["count"] for x in s.transfers if x["src"] == name and x["dst"] == "cpu")
        if d.type == "cpu":
            dev_name, total = "host CPU", 0
        else:
            code = 1 if d.type == "sim" else 2
            dev_name = _C._device_name(code, d.index)
            total = _C._total_memory(code, d.index)
        lines.append(f"{name:<8} {dev_name[:34]:<34} {per.get('mem_current', 0) / MIB:>11.1f} "
                     f"{per.get('mem_reserved', 0) / MIB:>9.1f} {total / MIB:>10.0f} "
                     f"{per.get('ops', 0):>8} {h2d:>6} {d2h:>6}")
        if d.type == "cuda":
            lines.append(f"{'':<8} NVML: {_nvml_row(d.index)}")
    if not cuda.is_available():
        lines.append(f"cuda: not available: {cuda.unavailable_reason()}")
    return "\n".join(lines)


def main():
    print(table())
    return 0


if __name__ == "__main__":
    sys.exit(main())
