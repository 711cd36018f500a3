"""_events.py - pygpu.profiler's events and their summaries, as torch.profiler's
(torch.autograd.profiler_util): FunctionEvent, EventList with key_averages() and table(),
and the Chrome trace (the JSON `traceEvents` format Perfetto and chrome://tracing open).

The core's recorder (csrc/core/pg_profile.h) hands over one tuple per op or transfer;
`from_records` turns them into FunctionEvents with their kernels as children
(KernelEvent: on cuda, one per launch or library call, a GEMM with its cuBLAS types).
Times are kept in nanoseconds on the recorder's clock and shown in microseconds, as
PyTorch shows them."""
import json
import os
from collections import OrderedDict

from .. import _C

# cudaDataType_t and cublasComputeType_t values (library_types.h, cublas_api.h) a GEMM
# note carries, by name
_DATA_TYPES = {0: "f32", 1: "f64", 2: "f16", 3: "s8", 10: "s32", 14: "bf16"}
_COMPUTE_TYPES = {64: "f16", 68: "f32", 70: "f64", 72: "s32", 74: "tf32", 75: "f32_fast_f16",
                  77: "f32_fast_tf32", 65: "f16_pedantic", 69: "f32_pedantic", 71: "f64_pedantic",
                  73: "s32_pedantic", 78: "f32_fast_bf16"}
# cublasLtEpilogue_t values (cublasLt.h) a cublasLtMatmul's note carries, by name
_EPILOGUES = {1: "default", 2: "relu", 4: "bias", 6: "relu_bias", 32: "gelu", 36: "gelu_bias"}


def _dtype_names():
    return {row[1]: row[0] for row in _C._dtype_table()[0]}


class KernelEvent:
    """One kernel launch (or library call) of an op on the device: `name` (the kernel, or
    the cuBLAS call), and for a GEMM `in_type`, `out_type` and `compute_type` (None else), and
    for a cublasLtMatmul its `epilogue` ('bias', 'relu_bias', 'relu', 'default'; None else);
    `device_time` in microseconds (None where unknown)."""

    def __init__(self, name, in_type, out_type, compute_type, start_ns, dur_ns, epilogue=-1):
        self.name = name
        self.in_type = _DATA_TYPES.get(in_type, str(in_type)) if in_type >= 0 else None
        self.out_type = _DATA_TYPES.get(out_type, str(out_type)) if out_type >= 0 else None
        self.compute_type = (_COMPUTE_TYPES.get(compute_type, str(compute_type))
                             if compute_type >= 0 else None)
        self.epilogue = _EPILOGUES.get(epilogue, str(epilogue)) if epilogue >= 0 else None
        self.start_ns, self.dur_ns = start_ns, dur_ns

    @property
    def is_gemm(self):
        return self.compute_type is not None

    @property
    def key(self):
        """The name a summary groups by: a GEMM's call with its types, as a kernel name says
        them (`cublasGemmEx bf16 x bf16 -> f32 (compute f32)`), and a cublasLtMatmul's epilogue
        (`cublasLtMatmul bf16 x bf16 -> bf16 (compute f32, epilogue relu_bias)`)."""
        if not self.is_gemm:
            return self.name
        epilogue = f", epilogue {self.epilogue}" if self.epilogue is not None else ""
        return (f"{self.name} {self.in_type} x {self.in_type} -> {self.out_type} "
                f"(compute {self.compute_type}{epilogue})")

    @property
    def device_time(self):
        return self.dur_ns / 1e3 if self.dur_ns is not None and self.dur_ns >= 0 else None

    def __repr__(self):
        return f"<KernelEvent {self.key} device_time={self.device_time}>"


class FunctionEvent:
    """One op (or transfer, or record_function range), as torch.profiler's FunctionEvent:
    name, device ('cpu', 'sim:0', 'cuda:0'), input_shapes and input_dtypes (the output's
    last), cpu_time_total (host time of the call, us), device_time_total (us; None where
    unknown), h2d_bytes and d2h_bytes, and kernels (its KernelEvents on cuda)."""

    def __init__(self, name, device, kind, input_shapes, input_dtypes, host_start_ns, host_end_ns,
                 device_start_ns, device_ns, h2d_bytes=0, d2h_bytes=0, thread=0, kernels=(),
                 kernels_launched=0):
        self.name, self.device, self.kind = name, device, kind
        self.input_shapes, self.input_dtypes = input_shapes, input_dtypes
        self.host_start_ns, self.host_end_ns = host_start_ns, host_end_ns
        self.device_start_ns, self.device_ns = device_start_ns, device_ns
        self.h2d_bytes, self.d2h_bytes, self.thread = h2d_bytes, d2h_bytes, thread
        self.kernels = list(kernels)
        self.kernels_launched = max(kernels_launched, len(self.kernels))
        self.count = 1

    @property
    def key(self):
        return self.name

    @property
    def device_type(self):
        return self.device.split(":")[0]

    @property
    def cpu_time_total(self):
        return (self.host_end_ns - self.host_start_ns) / 1e3

    self_cpu_time_total = cpu_time_total

    @property
    def device_time_total(self):
        return self.device_ns / 1e3 if self.device_ns is not None and self.device_ns >= 0 else None

    cuda_time_total = device_time_total

    def __repr__(self):
        return (f"<FunctionEvent {self.name} on {self.device} shapes={self.input_shapes} "
                f"cpu={self.cpu_time_total:.1f}us device={self.device_time_total} "
                f"kernels={[k.key for k in self.kernels]}>")


def from_records(records):
    """FunctionEvents from the core recorder's tuples (csrc/bindings/profile.c)."""
    dtypes, devtypes = _dtype_names(), _C._device_types()
    out = []
    for (_id, kind, name, dtype, dindex, ops, h0, h1, d0, dns, h2d, d2h, thread, seen,
         kernels) in records:
        device = "cpu" if devtypes[dtype] == "cpu" else f"{devtypes[dtype]}:{dindex}"
        shapes = [list(o[1]) if o is not None else [] for o in ops]
        types = [dtypes.get(o[0], "?") if o is not None else "" for o in ops]
        ks = [KernelEvent(*k) for k in kernels]
        out.append(FunctionEvent(name, device, "copy" if kind == 1 else "op", shapes, types,
                                 h0, h1 if h1 >= h0 else h0, d0, dns, h2d, d2h, thread, ks,
                                 seen))
    return out


class FunctionEventAvg:
    """A key_averages() row: the events of one key (and shapes, when grouped by them)."""

    def __init__(self, key, input_shapes=None, is_kernel=False, device=""):
        self.key, self.input_shapes, self.is_kernel, self.device = key, input_shapes, is_kernel, device
        self.count = 0
        self.cpu_time_total = self.self_cpu_time_total = 0.0
        self.device_time_total = self.self_device_time_total = 0.0
        self.h2d_bytes = self.d2h_bytes = 0

    @property
    def cpu_time(self):
        return self.cpu_time_total / self.count if self.count else 0.0

    @property
    def device_time(self):
        return self.device_time_total / self.count if self.count else 0.0

    # torch.profiler's CUDA spellings
    cuda_time_total = property(lambda self: self.device_time_total)
    self_cuda_time_total = property(lambda self: self.self_device_time_total)
    cuda_time = property(lambda self: self.device_time)

    def __repr__(self):
        return (f"<FunctionEventAvg {self.key} count={self.count} cpu_total={self.cpu_time_total:.1f}us "
                f"device_total={self.device_time_total:.1f}us>")


_SORT_KEYS = {"cpu_time_total", "self_cpu_time_total", "device_time_total", "self_device_time_total",
              "cuda_time_total", "self_cuda_time_total", "cpu_time", "device_time", "cuda_time",
              "count", "h2d_bytes", "d2h_bytes"}


def _us(v):
    if v >= 1e6:
        return f"{v / 1e6:.3f}s"
    if v >= 1e3:
        return f"{v / 1e3:.3f}ms"
    return f"{v:.3f}us"


class EventList(list):
    """A list of events (FunctionEvent, or FunctionEventAvg after key_averages) with
    torch.profiler's summaries."""

    def key_averages(self, group_by_input_shape=False):
        """One row per op name (and input shapes), plus one per kernel name on the device
        (cuda: each kernel and GEMM call, with its types), as torch.profiler lists them."""
        rows = OrderedDict()
        for e in self:
            if isinstance(e, FunctionEventAvg):
                raise TypeError("key_averages() of averages: call it on prof.events()")
            shapes = str(e.input_shapes) if group_by_input_shape else None
            r = rows.get((e.key, shapes, False))
            if r is None:
                r = rows[(e.key, shapes, False)] = FunctionEventAvg(
                    e.key, e.input_shapes if group_by_input_shape else None, device=e.device)
            r.count += 1
            r.cpu_time_total += e.cpu_time_total
            r.self_cpu_time_total += e.cpu_time_total
            dt = e.device_time_total or 0.0
            r.device_time_total += dt
            if not e.kernels:  # the op is its own device work (cpu, sim, or kernels unnamed)
                r.self_device_time_total += dt
            r.h2d_bytes += e.h2d_bytes
            r.d2h_bytes += e.d2h_bytes
            for k in e.kernels:
                kr = rows.get((k.key, None, True))
                if kr is None:
                    kr = rows[(k.key, None, True)] = FunctionEventAvg(k.key, None, True, e.device)
                kr.count += 1
                kr.device_time_total += k.device_time or 0.0
                kr.self_device_time_total += k.device_time or 0.0
        return EventList(rows.values())

    def table(self, sort_by=None, row_limit=100, max_name_column_width=55, header=None,
              top_level_events_only=False):
        """A text table of key_averages() as torch.profiler prints it; sort_by one of
        cpu_time_total, self_cpu_time_total, device_time_total (or cuda_time_total),
        self_device_time_total (self_cuda_time_total), count, h2d_bytes, d2h_bytes."""
        rows = self if all(isinstance(e, FunctionEventAvg) for e in self) else self.key_averages()
        if sort_by is not None:
            if sort_by not in _SORT_KEYS:
                raise ValueError(f"table(sort_by={sort_by!r}): use one of {sorted(_SORT_KEYS)}")
            rows = sorted(rows, key=lambda r: getattr(r, sort_by), reverse=True)
        if top_level_events_only:
            rows = [r for r in rows if not r.is_kernel]
        rows = list(rows)[:row_limit] if row_limit and row_limit > 0 else list(rows)
        dev = "CUDA" if any(r.device.startswith("cuda") for r in rows) else "Device"
        shapes = any(r.input_shapes is not None for r in rows)
        total_cpu = sum(r.self_cpu_time_total for r in rows) or 1.0
        total_dev = sum(r.self_device_time_total for r in rows) or 1.0
        names = ["Name", "Self CPU %", "Self CPU", "CPU total", "CPU time avg", f"Self {dev}",
                 f"Self {dev} %", f"{dev} total", f"{dev} time avg", "# of Calls", "H2D bytes",
                 "D2H bytes"] + (["Input Shapes"] if shapes else [])
        lines = []
        for r in rows:
            name = r.key if len(r.key) <= max_name_column_width else \
                r.key[:max_name_column_width - 3] + "..."
            cells = [name, f"{100 * r.self_cpu_time_total / total_cpu:.2f}%", _us(r.self_cpu_time_total),
                     _us(r.cpu_time_total), _us(r.cpu_time), _us(r.self_device_time_total),
                     f"{100 * r.self_device_time_total / total_dev:.2f}%", _us(r.device_time_total),
                     _us(r.device_time), str(r.count), str(r.h2d_bytes), str(r.d2h_bytes)]
            if shapes:
                cells.append(str(r.input_shapes) if r.input_shapes is not None else "")
            lines.append(cells)
        widths = [max([len(names[i])] + [len(c[i]) for c in lines]) for i in range(len(names))]
        rule = "  ".join("-" * w for w in widths)
        fmt = lambda cells: "  ".join(c.rjust(w) if i else c.ljust(w)  # noqa: E731
                                      for i, (c, w) in enumerate(zip(cells, widths)))
        out = ([header] if header else []) + [rule, fmt(names), rule] + [fmt(c) for c in lines]
        out += [rule, f"Self CPU time total: {_us(sum(r.self_cpu_time_total for r in rows))}",
                f"Self {dev} time total: {_us(sum(r.self_device_time_total for r in rows))}", ""]
        return "\n".join(out)

    def total_average(self):
        t = FunctionEventAvg("Total")
        for r in self.key_averages() if not all(isinstance(e, FunctionEventAvg) for e in self) else self:
            t.count += r.count
            t.cpu_time_total += r.cpu_time_total
            t.self_cpu_time_total += r.self_cpu_time_total
            t.device_time_total += r.device_time_total
            t.self_device_time_total += r.self_device_time_total
        return t

    @property
    def self_cpu_time_total(self):
        return sum(e.cpu_time_total for e in self if isinstance(e, FunctionEvent))


def device_timeline(events):
    """Where each op's device work sits on the recorder's clock: sim and cpu report it;
    cuda reports durations only, so an op starts at its launch or when the device's
    previous op ended, whichever is later (one stream per device, in launch order)."""
    free = {}
    spans = []
    for e in sorted(events, key=lambda e: e.host_start_ns):
        if e.device_ns is None or e.device_ns < 0:
            continue
        start = e.device_start_ns
        if start is None or start < 0:
            start = max(e.host_start_ns, free.get(e.device, 0))
        free[e.device] = start + e.device_ns
        spans.append((e, start))
    return spans


def chrome_trace(events, user_ranges, path):
    """Write the Chrome trace event format: each op and range on its host thread, each
    op's device work (and on cuda each kernel) on the device's own lane; `ph: "X"`
    complete events with `ts` and `dur` in microseconds from the first event."""
    t0 = min([e.host_start_ns for e in events] + [r[1] for r in user_ranges] or [0])
    us = lambda ns: (ns - t0) / 1e3  # noqa: E731
    pid = os.getpid()
    trace = []
    for e in events:
        if e.kind == "user_annotation":
            continue
        trace.append({"name": e.name, "cat": "cpu_op" if e.kind == "op" else "memcpy", "ph": "X",
                      "ts": us(e.host_start_ns), "dur": max(e.cpu_time_total, 0.001),
                      "pid": pid, "tid": e.thread,
                      "args": {"device": e.device, "Input Dims": e.input_shapes,
                               "Input type": e.input_dtypes, "h2d bytes": e.h2d_bytes,
                               "d2h bytes": e.d2h_bytes, "kernels": e.kernels_launched}})
    for name, start, end, thread in user_ranges:  # (also events, as user_annotation: skipped above)
        trace.append({"name": name, "cat": "user_annotation", "ph": "X", "ts": us(start),
                      "dur": max((end - start) / 1e3, 0.001), "pid": pid, "tid": thread})
    for e, start in device_timeline(events):
        lane = {"pid": f"{e.device} (device)", "tid": "stream"}
        if not e.kernels:
            trace.append({"name": e.name, "cat": "kernel" if e.kind == "op" else "gpu_memcpy",
                          "ph": "X", "ts": us(start), "dur": max(e.device_ns / 1e3, 0.001),
                          **lane, "args": {"op": e.name}})
        for k in e.kernels:
            ks = start + (k.start_ns if k.start_ns is not None and k.start_ns >= 0 else 0)
            args = {"op": e.name}
            if k.is_gemm:
                args.update({"in type": k.in_type, "out type": k.out_type,
                             "compute type": k.compute_type})
                if k.epilogue is not None:
                    args["epilogue"] = k.epilogue
            trace.append({"name": k.key, "cat": "kernel", "ph": "X", "ts": us(ks),
                          "dur": max(k.device_time or 0.0, 0.001), **lane, "args": args})
    with open(path, "w") as f:
        json.dump({"traceEvents": trace, "displayTimeUnit": "ms"}, f)
