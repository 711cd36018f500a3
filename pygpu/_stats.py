"""pygpu.stats(), reset_stats() and track(): the transfer counters made readable.

The C core keeps exact always-on totals (csrc/core/pg_stats.c): per device
pair, transfers' count, bytes, link time, pinned and async counts; implicit
transfers per trigger; per trigger, the time blocking transfers spent waiting
for the device; per device ops, syncs, time spent waiting, allocations and
memory.

Transfer seconds (h2d_seconds, d2h_seconds, each pair's "seconds") are the
time the link was busy: each copy is timed from when it starts moving bytes
to when it is done, as CUDA events around the copy on its stream time it.
Time a copy spent waiting (behind the compute that produces its source, or
for its caller to see it finished) is not link time: a blocking transfer's
waiting is in wait_seconds, by trigger ("explicit" for .to() and copy_); an
async transfer's waiting happens later, in a synchronization (sync_seconds). A Stats object is a snapshot; subtracting two gives the delta,
which is what track() reports for a block of code."""
import time

from . import _C, _trace

_DEVICE_EVENTS = ("ops", "syncs", "sync_ns", "kernel_ops", "kernel_ns", "allocs", "frees",
                  "cache_hits")


class Stats:
    """A snapshot of pygpu's counters (or the difference of two)."""

    def __init__(self, raw):
        self._raw = raw
        pairs = raw["pairs"]
        self.transfers = [
            {"src": s, "dst": d, "count": c, "bytes": b, "seconds": ns / 1e9, "pinned": p, "async": a}
            for (s, d, c, b, ns, p, a) in pairs if c]
        h2d = [x for x in self.transfers if x["src"] == "cpu" and x["dst"] != "cpu"]
        d2h = [x for x in self.transfers if x["src"] != "cpu" and x["dst"] == "cpu"]
        d2d = [x for x in self.transfers if x["src"] != "cpu" and x["dst"] != "cpu"]
        self.h2d_count = sum(x["count"] for x in h2d)
        self.h2d_bytes = sum(x["bytes"] for x in h2d)
        self.h2d_seconds = sum(x["seconds"] for x in h2d)
        self.d2h_count = sum(x["count"] for x in d2h)
        self.d2h_bytes = sum(x["bytes"] for x in d2h)
        self.d2h_seconds = sum(x["seconds"] for x in d2h)
        self.d2d_count = sum(x["count"] for x in d2d)
        self.d2d_bytes = sum(x["bytes"] for x in d2d)
        self.implicit = {k: v[0] for k, v in raw["implicit"].items() if v[0]}
        self.implicit_bytes = {k: v[1] for k, v in raw["implicit"].items() if v[1]}
        self.implicit_count = sum(v[0] for v in raw["implicit"].values())
        # {trigger: seconds} a blocking transfer waited for the device ("explicit": .to(), copy_)
        self.wait_seconds = {k: ns / 1e9 for k, ns in raw.get("wait", {}).items() if ns}
        self.transfer_wait_seconds = sum(self.wait_seconds.values())
        self.per_device = {k: dict(v) for k, v in raw["devices"].items()}
        self.ops = sum(v["ops"] for v in self.per_device.values())
        self.syncs = sum(v["syncs"] for v in self.per_device.values())
        self.sync_seconds = sum(v["sync_ns"] for v in self.per_device.values()) / 1e9
        # GPU time of the ops a backend measured (cuda with pygpu.cuda.set_kernel_timing(True))
        self.kernel_ops = sum(v.get("kernel_ops", 0) for v in self.per_device.values())
        self.kernel_seconds = sum(v.get("kernel_ns", 0) for v in self.per_device.values()) / 1e9
        # {role: {"count", "bytes", "pairs": [{"src", "dst", "count", "bytes"}]}} (see role())
        self.by_role = {}
        for name, rows in raw.get("roles", {}).items():
            pairs = [{"src": s, "dst": d, "count": c, "bytes": b} for (s, d, c, b) in rows if c]
            if pairs:
                self.by_role[name] = {"count": sum(p["count"] for p in pairs),
                                      "bytes": sum(p["bytes"] for p in pairs), "pairs": pairs}

    @property
    def transfer_count(self):
        return self.h2d_count + self.d2h_count + self.d2d_count

    @property
    def transfer_bytes(self):
        return self.h2d_bytes + self.d2h_bytes + self.d2d_bytes

    def __sub__(self, other):
        """Counters accumulated between `other` and `self` (memory figures are self's)."""
        before = {(s, d): (c, b, ns, p, a) for (s, d, c, b, ns, p, a) in other._raw["pairs"]}
        pairs = []
        for (s, d, c, b, ns, p, a) in self._raw["pairs"]:
            c0, b0, ns0, p0, a0 = before.get((s, d), (0, 0, 0, 0, 0))
            pairs.append((s, d, c - c0, b - b0, ns - ns0, p - p0, a - a0))
        implicit = {k: (v[0] - other._raw["implicit"].get(k, (0, 0))[0],
                        v[1] - other._raw["implicit"].get(k, (0, 0))[1])
                    for k, v in self._raw["implicit"].items()}
        wait = {k: ns - other._raw.get("wait", {}).get(k, 0) for k, ns in self._raw.get("wait", {}).items()}
        devices = {}
        for name, v in self._raw["devices"].items():
            o = other._raw["devices"].get(name, {})
            dv = dict(v)
            for key in _DEVICE_EVENTS:
                dv[key] = v[key] - o.get(key, 0)
            devices[name] = dv
        roles = {}
        for name, rows in self._raw.get("roles", {}).items():
            before_r = {(s, d): (c, b) for (s, d, c, b) in other._raw.get("roles", {}).get(name, [])}
            roles[name] = [(s, d, c - before_r.get((s, d), (0, 0))[0], b - before_r.get((s, d), (0, 0))[1])
                           for (s, d, c, b) in rows]
        return Stats({"pairs": pairs, "implicit": implicit, "devices": devices, "roles": roles,
                      "wait": wait})

    def as_dict(self):
        return {
            "h2d_count": self.h2d_count, "h2d_bytes": self.h2d_bytes,
            "d2h_count": self.d2h_count, "d2h_bytes": self.d2h_bytes,
            "d2d_count": self.d2d_count, "d2d_bytes": self.d2d_bytes,
            "implicit_count": self.implicit_count, "implicit": dict(self.implicit),
            "wait_seconds": dict(self.wait_seconds), "transfer_wait_seconds": self.transfer_wait_seconds,
            "syncs": self.syncs, "sync_seconds": self.sync_seconds, "ops": self.ops,
            "transfers": [dict(x) for x in self.transfers],
            "per_device": {k: dict(v) for k, v in self.per_device.items()},
            "by_role": {k: {"count": v["count"], "bytes": v["bytes"], "pairs": [dict(p) for p in v["pairs"]]}
                        for k, v in self.by_role.items()},
        }

    def __repr__(self):
        lines = ["pygpu.stats():"]
        for name in ("h2d", "d2h", "d2d"):
            n, b = getattr(self, f"{name}_count"), getattr(self, f"{name}_bytes")
            lines.append(f"  {name}: {n} transfer{'s' if n != 1 else ''}, {b} bytes")
        lines.append(f"  implicit: {self.implicit_count}   ops: {self.ops}   syncs: {self.syncs} "
                     f"({self.sync_seconds * 1e3:.3f} ms waiting)")
        lines += [f"  {'transfer':<14}{'count':>8}{'bytes':>14}{'link ms':>10}{'pinned':>8}{'async':>7}"]
        for x in self.transfers:
            lines.append(f"  {x['src'] + '->' + x['dst']:<14}{x['count']:>8}{x['bytes']:>14}"
                         f"{x['seconds'] * 1e3:>10.3f}{x['pinned']:>8}{x['async']:>7}")
        if not self.transfers:
            lines.append("  (no transfers)")
        if self.by_role:
            lines.append("  by role: " + ", ".join(f"{k}={v['count']} ({v['bytes']} bytes)"
                                                    for k, v in self.by_role.items()))
        if self.wait_seconds:
            lines.append("  transfers waiting for the device: " + ", ".join(
                f"{k}={v * 1e3:.3f} ms" for k, v in self.wait_seconds.items()))
        if self.implicit:
            lines.append("  implicit by trigger: " + ", ".join(f"{k}={v}" for k, v in self.implicit.items()))
        lines.append(f"  {'device':<10}{'ops':>9}{'syncs':>8}{'wait ms':>10}{'allocs':>9}"
                     f"{'mem MiB':>10}{'peak MiB':>10}")
        for name, v in self.per_device.items():
            lines.append(f"  {name:<10}{v['ops']:>9}{v['syncs']:>8}{v['sync_ns'] / 1e6:>10.3f}"
                         f"{v['allocs']:>9}{v['mem_current'] / 2**20:>10.2f}{v['mem_peak'] / 2**20:>10.2f}")
        return "\n".join(lines)


def stats():
    """A snapshot of every counter (see Stats)."""
    raw = _C._stats()
    raw["roles"] = _C._role_stats()
    return Stats(raw)


ROLES = _C._role_names()[1:]


class role:
    """`with pygpu.role("scatter"):` attributes every transfer this thread makes
    inside the block to that role (stats().by_role). DataParallel uses scatter,
    replicate, gather and grad_reduce; the collectives of pygpu.distributed use
    broadcast and collective. Roles nest; the innermost wins. Thread-local."""

    def __init__(self, name):
        if name not in ROLES:
            raise ValueError(f"unknown transfer role {name!r}; the roles are {', '.join(ROLES)}")
        self._index = ROLES.index(name) + 1

    def __enter__(self):
        self._prev = _C._role_set(self._index)
        return self

    def __exit__(self, *exc):
        _C._role_set(self._prev)
        return False


def reset_stats():
    """Zero the event counters (transfers, implicit, ops, syncs, allocations)."""
    _C.reset_stats()


class track:
    """`with pygpu.track() as t:` ... then t.h2d_count, t.d2h_bytes, ... count
    what happened inside the block (counters are process-wide: other threads'
    transfers during the block are included).

    track(call_sites=True) also records each transfer (t.transfers_log: size,
    direction, trigger, the file:line it came from, round trips flagged), which
    pygpu.cost.explain() reads; it costs a Python call per transfer, so it is off
    by default. t.wall_seconds is the block's wall time."""

    def __init__(self, call_sites=False):
        self.call_sites = bool(call_sites)
        self._recorder = None

    def __enter__(self):
        self._start = stats()
        self._delta = None
        self._recorder = _trace.start() if self.call_sites else None
        self._t0 = time.perf_counter()
        self._wall = None
        return self

    def __exit__(self, *exc):
        self._wall = time.perf_counter() - self._t0
        if self._recorder is not None:
            _trace.stop(self._recorder)
        self._delta = stats() - self._start
        return False

    @property
    def transfers_log(self):
        """The transfers one by one (track(call_sites=True) only; else None)."""
        return None if self._recorder is None else list(self._recorder.transfers)

    @property
    def wall_seconds(self):
        return self._wall if self._wall is not None else time.perf_counter() - self._t0

    @property
    def stats(self):
        return self._delta if self._delta is not None else stats() - self._start

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.stats, name)

    def __repr__(self):
        return repr(self.stats).replace("pygpu.stats():", "pygpu.track():", 1)
