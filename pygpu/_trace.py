"""Per-transfer records for track(call_sites=True): who moved what, from where.

The C counters (pygpu.stats()) are always on and say how much crossed the link.
When a track(call_sites=True) block is open, the C core also calls on_transfer()
once per transfer (csrc/bindings/transfer_trace.c), with a content hash of the
host-side bytes; this file turns that into Transfer records carrying the call
site (file:line of the first frame outside pygpu) and flags round trips: the
same bytes sent host->device, brought back unchanged, and sent again. With no
such block open, no callback is installed and transfers pay nothing for it."""
import os
import sys
import threading
from dataclasses import dataclass

from . import _C

_PKG_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
# pygpu's own demos are user code: their lines are the call sites worth showing
_USER_FILES = {os.path.join(_PKG_DIR, "tools", f) for f in ("main_job.py", "mlp_demo.py")}
_lock = threading.Lock()
_active = []  # the open recorders (lists of Transfer), innermost last


@dataclass
class Transfer:
    """One host<->device (or device<->device) transfer, as recorded by track(call_sites=True)."""
    index: int
    src: str
    dst: str
    nbytes: int
    seconds: float   # wall time of the copy call (enqueue time only when async)
    link_seconds: float  # the copy's own time, as the counters record it (0 when async)
    pinned: bool
    async_: bool
    trigger: str     # "explicit", or what caused an implicit transfer: "repr", "item", ...
    call_site: str   # "file.py:123 in function" of the first frame outside pygpu
    content_hash: int | None  # of the host-side bytes; None when they were not available
    ops_before: int = 0       # accelerator ops launched before it (a request ends at an op)
    round_trip: bool = False  # h2d of bytes that already went h2d and came back unchanged
    resend: bool = False      # h2d of bytes already sent h2d before (a round trip or a re-upload)

    @property
    def direction(self):
        if self.src == "cpu" and self.dst != "cpu":
            return "h2d"
        if self.dst == "cpu" and self.src != "cpu":
            return "d2h"
        return "d2d"

    @property
    def implicit(self):
        return self.trigger != "explicit"

    def as_dict(self):
        return {"index": self.index, "direction": self.direction, "src": self.src, "dst": self.dst,
                "nbytes": self.nbytes, "seconds": self.seconds,
                "link_seconds": self.link_seconds, "pinned": self.pinned,
                "async": self.async_, "trigger": self.trigger, "call_site": self.call_site,
                "round_trip": self.round_trip, "resend": self.resend}


def _call_site():
    f = sys._getframe(2)
    while (f is not None and f.f_code.co_filename.startswith(_PKG_DIR)
           and f.f_code.co_filename not in _USER_FILES):
        f = f.f_back
    if f is None:
        return "<pygpu internal>"
    name = f.f_code.co_filename
    if os.sep + "ipykernel_" in name:  # a notebook cell: its file name is a hash
        return f"cell line {f.f_lineno}"
    return f"{os.path.basename(name)}:{f.f_lineno} in {f.f_code.co_name}"


def _on_transfer(src, dst, nbytes, seconds, link_seconds, pinned, async_, trigger, content_hash,
                 ops):
    site = _call_site()
    with _lock:
        for rec in _active:
            rec.add(src, dst, nbytes, seconds, link_seconds, pinned, async_, trigger, site,
                    content_hash, ops)


class Recorder:
    """The transfers seen while it was open, in order, with round trips flagged."""

    def __init__(self):
        self.transfers = []
        self._sent = set()       # hashes sent h2d
        self._returned = set()   # hashes sent h2d and later brought back d2h unchanged

    def add(self, src, dst, nbytes, seconds, link_seconds, pinned, async_, trigger, site, h, ops):
        t = Transfer(len(self.transfers), src, dst, nbytes, seconds, link_seconds, pinned, async_,
                     trigger, site, h, ops)
        if h is not None and nbytes:
            key = (h, nbytes)
            if t.direction == "h2d":
                t.resend = key in self._sent
                t.round_trip = key in self._returned
                self._sent.add(key)
            elif t.direction == "d2h" and key in self._sent:
                self._returned.add(key)
        self.transfers.append(t)


def start():
    rec = Recorder()
    with _lock:
        _active.append(rec)
        if len(_active) == 1:
            _C._set_transfer_callback(_on_transfer)
    return rec


def stop(rec):
    with _lock:
        if rec in _active:
            _active.remove(rec)
        if not _active:
            _C._set_transfer_callback(None)
