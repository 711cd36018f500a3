"""Record: what predict() and explain() read, from a track() block or a function.

A track() block gives the exact counters (pygpu.Stats delta) and its wall time;
track(call_sites=True) also gives each transfer with its call site. A function
given instead of a record is run once under track(call_sites=True), then every
device is synchronized so that queued work is inside the measurement."""
from dataclasses import dataclass

from .._stats import track
from .._sync import synchronize


@dataclass
class Record:
    stats: object          # pygpu.Stats: the counters' delta over the block
    wall_seconds: float
    transfers: list | None  # [pygpu._trace.Transfer] or None without call sites
    device: str | None     # the accelerator the transfers went to/from (first seen)

    @property
    def has_call_sites(self):
        return self.transfers is not None


def _device_of(stats, transfers):
    for x in (transfers or []):
        for d in (x.src, x.dst):
            if d != "cpu":
                return d
    for x in stats.transfers:
        for d in (x["src"], x["dst"]):
            if d != "cpu":
                return d
    for name, v in stats.per_device.items():
        if name != "cpu" and v.get("ops"):
            return name
    return None


def as_record(record_or_fn):
    """A Record from a pygpu.track object, a Record, or a function to run and record."""
    if isinstance(record_or_fn, Record):
        return record_or_fn
    if isinstance(record_or_fn, track):
        tr = record_or_fn
    elif callable(record_or_fn):
        with track(call_sites=True) as tr:
            record_or_fn()
            synchronize()
    else:
        raise TypeError(f"expected a pygpu.track() record or a function to run, got "
                        f"{type(record_or_fn).__name__}")
    log = tr.transfers_log
    st = tr.stats
    return Record(st, tr.wall_seconds, log, _device_of(st, log))
