"""DeviceProfile: what a device and its link cost, measured or from a datasheet.

A profile is plain data (JSON on disk): per link direction and host-memory kind
(pageable, pinned) a latency and a bandwidth, fitted as
    seconds = latency + bytes / bandwidth,
with the fit's error; the host-side overhead of one transfer call; the launch
and enqueue overhead of an op; matmul throughput as a function of n; and
elementwise bandwidth. calibrate() measures one (pygpu/cost/calibrate.py);
profiles/*.json are datasheet figures for real GPUs, marked measured=false,
so that a laptop can ask what a run would cost on an H100."""
import json
import math
import os
from dataclasses import asdict, dataclass, field

_PROFILE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "profiles")
LINK_KINDS = ("h2d_pageable", "h2d_pinned", "d2h_pageable", "d2h_pinned")


@dataclass
class Link:
    """One direction of the host<->device link: seconds = latency_s + bytes / bandwidth."""
    latency_s: float
    bandwidth_bps: float       # bytes per second
    fit_error: float = 0.0     # largest relative residual of the fit over the measured sizes

    def seconds(self, nbytes):
        return self.latency_s + nbytes / self.bandwidth_bps

    def __str__(self):
        err = f", fit error {self.fit_error:.1%}" if self.fit_error else ""
        return f"{self.latency_s * 1e6:.1f} us + bytes / {self.bandwidth_bps / 1e9:.2f} GB/s{err}"


@dataclass
class DeviceProfile:
    name: str
    device: str
    measured: bool
    source: str
    links: dict                      # LINK_KINDS -> Link
    transfer_overhead_s: float = 0.0  # host-side cost of one transfer call, beyond the link
    launch_overhead_s: float = 5e-6  # one op, launched and waited for, doing nothing
    enqueue_overhead_s: float = 2e-6  # one op, enqueued without waiting
    matmul_gflops: list = field(default_factory=list)  # [[n, GFLOP/s], ...] of the compute alone
    elementwise_gbps: float = 0.0    # bytes read + written per second by an elementwise op
    host_matmul_gflops: list = field(default_factory=list)  # NumPy on this host, [[n, GFLOP/s]]
    notes: str = ""
    meta: dict = field(default_factory=dict)

    # ---- the model ----------------------------------------------------------------------
    def link(self, direction, pinned=False):
        """The Link for 'h2d' or 'd2h' (pageable unless pinned)."""
        return self.links[f"{direction}_{'pinned' if pinned else 'pageable'}"]

    def transfer_seconds(self, direction, nbytes, pinned=False, count=1):
        """Link time of `count` transfers moving `nbytes` in all (the model is linear)."""
        if direction == "d2d":
            return count * self.launch_overhead_s + (2 * nbytes / (self.elementwise_gbps * 1e9)
                                                     if self.elementwise_gbps else 0.0)
        ln = self.link(direction, pinned)
        return count * ln.latency_s + nbytes / ln.bandwidth_bps

    def transfer_call_seconds(self, direction, nbytes, pinned=False):
        """Wall time of one transfer call: the link plus the host-side overhead."""
        return self.transfer_seconds(direction, nbytes, pinned) + self.transfer_overhead_s

    def matmul_seconds(self, n):
        """Time of one n x n x n float32 matmul, launched and waited for."""
        return self.launch_overhead_s + 2.0 * n ** 3 / (_interp(self.matmul_gflops, n) * 1e9)

    def host_matmul_seconds(self, n):
        """NumPy's time for the same matmul on the host the profile was measured on."""
        if not self.host_matmul_gflops:
            raise ValueError(f"profile {self.name!r} has no host (NumPy) matmul figures: "
                             "calibrate() on this machine records them")
        return 2.0 * n ** 3 / (_interp(self.host_matmul_gflops, n) * 1e9)

    def round_trip_matmul_seconds(self, n, pinned=False):
        """Upload two n x n float32 inputs, multiply, download the result."""
        nb = 4 * n * n
        return (2 * self.transfer_call_seconds("h2d", nb, pinned) + self.matmul_seconds(n)
                + self.transfer_call_seconds("d2h", nb, pinned))

    # ---- files --------------------------------------------------------------------------
    def as_dict(self):
        d = asdict(self)
        d["links"] = {k: asdict(v) for k, v in self.links.items()}
        return d

    @classmethod
    def from_dict(cls, d):
        d = dict(d)
        missing = [k for k in LINK_KINDS if k not in d.get("links", {})]
        if missing:
            raise ValueError(f"profile {d.get('name', '?')!r}: links {missing} are missing; "
                             f"a profile needs all of {list(LINK_KINDS)}")
        d["links"] = {k: Link(**v) for k, v in d["links"].items()}
        return cls(**d)

    def save(self, path):
        with open(path, "w") as f:
            json.dump(self.as_dict(), f, indent=1)

    def __str__(self):
        kind = "measured" if self.measured else "datasheet, not measured"
        lines = [f"DeviceProfile {self.name} ({self.device}; {kind}; {self.source})"]
        lines += [f"  {k:<13} {v}" for k, v in self.links.items()]
        lines.append(f"  transfer call overhead {self.transfer_overhead_s * 1e6:.1f} us, op launch "
                     f"{self.launch_overhead_s * 1e6:.1f} us, enqueue {self.enqueue_overhead_s * 1e6:.1f} us")
        if self.matmul_gflops:
            lines.append("  matmul GFLOP/s: " + ", ".join(f"n={n}: {g:.0f}" for n, g in self.matmul_gflops))
        if self.elementwise_gbps:
            lines.append(f"  elementwise {self.elementwise_gbps:.1f} GB/s")
        return "\n".join(lines)


def _interp(points, n):
    """Throughput at n, interpolated in log n between measured points, flat outside them."""
    if not points:
        raise ValueError("the profile has no matmul figures")
    pts = sorted(points)
    if n <= pts[0][0]:
        return pts[0][1]
    if n >= pts[-1][0]:
        return pts[-1][1]
    for (n0, g0), (n1, g1) in zip(pts, pts[1:]):
        if n0 <= n <= n1:
            w = (math.log(n) - math.log(n0)) / (math.log(n1) - math.log(n0))
            return g0 + w * (g1 - g0)
    return pts[-1][1]


def datasheet_names():
    """The datasheet profiles shipped with pygpu (names for load_profile)."""
    return sorted(f[:-5] for f in os.listdir(_PROFILE_DIR) if f.endswith(".json"))


def load_profile(name_or_path):
    """A DeviceProfile from a JSON file, or a shipped datasheet profile by name
    ("h100_pcie", "a100_pcie", "h100_sxm")."""
    if isinstance(name_or_path, DeviceProfile):
        return name_or_path
    path = str(name_or_path)
    if not os.path.exists(path):
        candidate = os.path.join(_PROFILE_DIR, path.lower().replace("-", "_") + ".json")
        if not os.path.exists(candidate):
            raise ValueError(f"no profile {path!r}: give a JSON file or one of the datasheet "
                             f"profiles {datasheet_names()}")
        path = candidate
    try:
        with open(path) as f:
            return DeviceProfile.from_dict(json.load(f))
    except (json.JSONDecodeError, TypeError) as e:
        raise ValueError(f"{path}: not a DeviceProfile JSON file ({e})") from None


def link_model_profile(link, device="sim:0"):
    """The sim link model (pygpu.sim.link()) as a profile of the link alone: what the
    model is set to, not measured; compute figures are left empty."""
    links = {}
    for d in ("h2d", "d2h"):
        gbps = link[f"{d}_gbps"]
        bw = gbps * 1e9 if gbps else float("inf")
        for kind in ("pageable", "pinned"):
            links[f"{d}_{kind}"] = Link(link["latency_us"] * 1e-6, bw)
    return DeviceProfile("sim link model", device, False, "pygpu.sim.configure()", links,
                         launch_overhead_s=0.0, enqueue_overhead_s=0.0)
