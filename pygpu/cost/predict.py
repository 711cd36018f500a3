"""predict(record_or_fn, profile): transfer and compute time of a run on a profile.

The link model is linear (latency + bytes / bandwidth), so the exact counters
suffice: per direction, count x latency + bytes / bandwidth, pinned transfers on
the pinned link. With call sites recorded, each transfer is priced on its own
(same total, but the pinned/pageable split is exact). Compute is priced as the
ops launched x the launch overhead, plus flops / matmul throughput when the
caller says how many flops the run did (the counters do not count flops).
crossover_n(): the n above which a round-trip matmul on the device beats NumPy."""
from dataclasses import asdict, dataclass

from .profile import _interp, load_profile
from .record import as_record


@dataclass
class Prediction:
    profile: str
    h2d_seconds: float
    d2h_seconds: float
    d2d_seconds: float
    transfer_seconds: float
    compute_seconds: float
    total_seconds: float
    measured_transfer_seconds: float  # the link time the counters recorded
    measured_wall_seconds: float

    def as_dict(self):
        return asdict(self)

    def __str__(self):
        return (f"predicted on {self.profile}: transfers {self.transfer_seconds * 1e3:.3f} ms "
                f"(h2d {self.h2d_seconds * 1e3:.3f}, d2h {self.d2h_seconds * 1e3:.3f}), compute "
                f"{self.compute_seconds * 1e3:.3f} ms; measured here: transfers "
                f"{self.measured_transfer_seconds * 1e3:.3f} ms of {self.measured_wall_seconds * 1e3:.3f} ms")


def transfer_seconds(rec, profile):
    """{'h2d': s, 'd2h': s, 'd2d': s} modelled for a Record."""
    out = {"h2d": 0.0, "d2h": 0.0, "d2d": 0.0}
    if rec.transfers is not None:
        for x in rec.transfers:
            out[x.direction] += profile.transfer_seconds(x.direction, x.nbytes, x.pinned)
        return out
    for x in rec.stats.transfers:
        direction = ("h2d" if x["src"] == "cpu" else "d2h" if x["dst"] == "cpu" else "d2d")
        pinned_share = x["pinned"] / x["count"]
        for pinned, share in ((True, pinned_share), (False, 1 - pinned_share)):
            if share:
                out[direction] += share * profile.transfer_seconds(direction, x["bytes"], pinned,
                                                                   count=x["count"])
    return out


def predict(record_or_fn, profile, flops=0.0, matmul_n=None):
    """Prediction for a track() record (or a function, run once and recorded) on a
    DeviceProfile (or a profile name/file). flops: the run's floating-point work, priced
    at the profile's matmul throughput for size matmul_n (its largest size if None)."""
    profile = load_profile(profile)
    rec = as_record(record_or_fn)
    t = transfer_seconds(rec, profile)
    transfer = sum(t.values())
    ops = sum(v.get("ops", 0) for k, v in rec.stats.per_device.items() if k != "cpu")
    compute = ops * profile.launch_overhead_s
    if flops:
        n = matmul_n or max(n for n, _ in profile.matmul_gflops)
        compute += flops / (_interp(profile.matmul_gflops, n) * 1e9)
    measured = rec.stats.h2d_seconds + rec.stats.d2h_seconds + sum(
        x["seconds"] for x in rec.stats.transfers if x["src"] != "cpu" and x["dst"] != "cpu")
    return Prediction(profile.name, t["h2d"], t["d2h"], t["d2d"], transfer, compute,
                      transfer + compute, measured, rec.wall_seconds)


def crossover_n(profile, host=None, lo=8, hi=16384):
    """The smallest n at which a round trip (upload two n x n float32, matmul, download)
    on `profile`'s device beats NumPy on the host; None if it never does up to `hi`.
    host: a profile with host_matmul_gflops (default: `profile` itself, when calibrated
    here; a datasheet profile needs host=calibrate(...) of this machine)."""
    profile = load_profile(profile)
    host = load_profile(host) if host is not None else profile
    n = lo
    while n <= hi:
        if profile.round_trip_matmul_seconds(n) < host.host_matmul_seconds(n):
            return n
        n = max(n + 1, int(n * 1.05))
    return None
