"""pygpu.profiler - which op ran where, for how long, and which kernels it launched:
torch.profiler's API over pygpu's own recorder (csrc/core/pg_profile.h).

    from pygpu.profiler import profile, ProfilerActivity, schedule, record_function
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                 record_shapes=True) as prof:
        with record_function("step"):
            loss = model(x).sum(); loss.backward()
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=10))
    prof.export_chrome_trace("trace.json")     # Perfetto, chrome://tracing

Each op leaves one event: its name, device, operands' shapes and dtypes, its host time,
its device time (cpu: the call itself; sim: the worker's run of it; cuda: a pair of CUDA
events around it) and the bytes it moved between host and device; a transfer is an
event too ("Memcpy HtoD"). On cuda, each op's kernels are events of their own: the
kernel's name, and for a matrix product the cuBLAS call with its input, output and
compute types, so a test can assert that a bf16 layer's products are 16-bit GEMMs. It
works the same on cpu, sim and cuda, the emulated device included.

ProfilerActivity.CPU keeps the host-side op events, CUDA the device time and kernels
(any device's: sim's too); both by default. record_shapes=False drops the shapes (they
are recorded anyway). profile_memory, with_stack, with_flops and with_modules are
accepted and ignored (said once as a warning). One profile records at a time."""
import enum
import functools
import threading
import warnings

from .. import _C
from ._events import EventList, FunctionEvent, KernelEvent, chrome_trace, from_records

__all__ = ["profile", "ProfilerActivity", "ProfilerAction", "schedule", "record_function",
           "tensorboard_trace_handler", "EventList", "FunctionEvent", "KernelEvent",
           "supported_activities"]


class ProfilerActivity(enum.Enum):
    CPU = 0
    CUDA = 1


def supported_activities():
    return {ProfilerActivity.CPU, ProfilerActivity.CUDA}


class ProfilerAction(enum.Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def schedule(*, wait, warmup, active, repeat=0, skip_first=0):
    """torch.profiler.schedule: skip `skip_first` steps, then cycles of `wait` idle steps,
    `warmup` steps recorded and thrown away, and `active` steps recorded, the last of which
    ends the cycle (on_trace_ready is called); `repeat` cycles (0: for ever)."""
    for name, v in (("wait", wait), ("warmup", warmup), ("active", active), ("repeat", repeat),
                    ("skip_first", skip_first)):
        if not isinstance(v, int) or v < 0:
            raise ValueError(f"schedule: {name} must be an int >= 0, got {v!r}")
    if active < 1:
        raise ValueError("schedule: active must be at least 1 (steps recorded per cycle)")

    def action(step):
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        cycle = wait + warmup + active
        if repeat > 0 and step // cycle >= repeat:
            return ProfilerAction.NONE
        pos = step % cycle
        if pos < wait:
            return ProfilerAction.NONE
        if pos < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if pos < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    return action


def _always_record(step):
    return ProfilerAction.RECORD


_RECORDING = (ProfilerAction.WARMUP, ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)
_KEEPING = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)
_active = None  # the profile recording now (the recorder is one per process)
_active_lock = threading.Lock()


class profile:
    """torch.profiler.profile: a context manager (or start()/stop()) that records ops,
    transfers and kernels; step() advances the schedule in a training loop."""

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_stack=False, with_flops=False, with_modules=False,
                 acc_events=False, use_cuda=None):
        acts = set(activities) if activities is not None else supported_activities()
        if use_cuda:
            acts.add(ProfilerActivity.CUDA)
        bad = [a for a in acts if not isinstance(a, ProfilerActivity)]
        if bad:
            raise TypeError(f"profile(activities=...): expected ProfilerActivity values, got {bad}")
        self.activities = acts
        self.schedule = schedule if schedule is not None else _always_record
        self.on_trace_ready = on_trace_ready
        self.record_shapes = bool(record_shapes)
        self.acc_events = bool(acc_events)
        ignored = [n for n, v in (("profile_memory", profile_memory), ("with_stack", with_stack),
                                  ("with_flops", with_flops), ("with_modules", with_modules)) if v]
        if ignored:
            warnings.warn(f"pygpu.profiler: {', '.join(ignored)} not recorded (ignored)",
                          stacklevel=2)
        self.step_num = 0
        self.current_action = ProfilerAction.NONE
        self._recording = False
        self._events = EventList()
        self._ranges = []  # (name, start ns, end ns, thread) of record_function, this window
        self._kept_ranges = []
        self._dropped = 0

    # -- the recorder ----------------------------------------------------------------------
    def _start_recorder(self):
        global _active
        with _active_lock:
            if _active is not None and _active is not self:
                raise RuntimeError("pygpu.profiler: another profile is recording; stop it first "
                                   "(one profile records at a time)")
            _active = self
        self._ranges = []
        _C._profile_start()
        self._recording = True

    def _stop_recorder(self, keep):
        """Stop recording; keep=True: wait for every device the events used (so their device
        times and kernels have arrived) and add them to this profile's events."""
        global _active
        if not self._recording:
            return
        events = []
        if keep:
            records, dropped = _C._profile_events()
            self._dropped += dropped
            for dev in sorted({(r[3], r[4]) for r in records if _C._device_types()[r[3]] != "cpu"}):
                _C._synchronize(*dev)
        _C._profile_stop()
        if keep:
            records, _ = _C._profile_events()
            events = from_records(records)
            if not self.record_shapes:
                for e in events:
                    e.input_shapes = []
            if ProfilerActivity.CUDA not in self.activities:
                for e in events:
                    e.device_ns, e.kernels = None, []
            if ProfilerActivity.CPU not in self.activities:
                events = [e for e in events if e.device_ns is not None and e.device_ns >= 0]
            else:
                events += [FunctionEvent(name, "cpu", "user_annotation", [], [], start, end, -1,
                                         None, thread=thread)
                           for name, start, end, thread in self._ranges]
                events.sort(key=lambda e: e.host_start_ns)
        self._recording = False
        with _active_lock:
            _active = None
        if keep:
            if not self.acc_events:
                self._events, self._kept_ranges = EventList(), []
            self._events.extend(events)
            self._kept_ranges.extend(self._ranges)
        self._ranges = []

    def _enter_action(self, prev, cur):
        if prev == ProfilerAction.RECORD_AND_SAVE:
            self._stop_recorder(keep=True)
            if self.on_trace_ready is not None:
                self.on_trace_ready(self)
        if cur in _RECORDING:
            if self._recording and prev == ProfilerAction.WARMUP and cur in _KEEPING:
                self._stop_recorder(keep=False)  # the warm-up's events are thrown away
            if not self._recording:
                self._start_recorder()
        elif self._recording:
            self._stop_recorder(keep=prev in _KEEPING)

    # -- torch.profiler's methods ------------------------------------------------------------
    def start(self):
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        self._enter_action(ProfilerAction.NONE, self.current_action)
        return self

    def stop(self):
        if self._recording:
            keep = self.current_action in _KEEPING
            self._stop_recorder(keep=keep)
            if keep and self.on_trace_ready is not None:
                self.on_trace_ready(self)
        self.current_action = ProfilerAction.NONE

    def step(self):
        """Mark the end of a training step: the schedule decides what the next one does."""
        prev = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._enter_action(prev, self.current_action)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False

    def events(self):
        """The recorded events (FunctionEvent), in the order they were launched."""
        return self._events

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0):
        return self._events.key_averages(group_by_input_shape=group_by_input_shape)

    def export_chrome_trace(self, path):
        """Write the Chrome trace JSON (`traceEvents`, ph "X") that Perfetto and
        chrome://tracing open: ops on their host threads, device work on a lane per device."""
        chrome_trace(self._events, self._kept_ranges, path)
        return path

    @property
    def dropped_events(self):
        """Events past the recorder's cap (65,536 per recording), counted but not kept."""
        return self._dropped


class record_function:
    """A named range of your own (torch.profiler.record_function): a context manager or a
    decorator; shown in the table and as a `user_annotation` in the Chrome trace."""

    def __init__(self, name, args=None):
        self.name = str(name)
        self._start = None

    def __enter__(self):
        self._start = _C._profile_now() if _active is not None else None
        return self

    def __exit__(self, *exc):
        prof = _active
        if self._start is not None and prof is not None and prof._recording:
            end = _C._profile_now()
            prof._ranges.append((self.name, self._start, end, threading.get_native_id()))
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*a, **k):
            with record_function(self.name):
                return fn(*a, **k)
        return wrapper


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False):
    """An on_trace_ready that writes each window's Chrome trace into dir_name
    (<worker>.<step>.pt.trace.json), as torch.profiler's does."""
    import os
    import socket

    def handler(prof):
        os.makedirs(dir_name, exist_ok=True)
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        prof.export_chrome_trace(os.path.join(dir_name, f"{worker}.{prof.step_num}.pt.trace.json"))

    return handler
