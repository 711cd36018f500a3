"""calibrate(device): measure the link and the device, once, and cache the result.

Transfers: for sizes 4 B .. 256 MiB (powers of 4), each direction, from pageable
and from pinned host memory, the median of a few copies (more for small sizes,
where noise is relative; three for the largest) once outliers are rejected. The
link time is the copy's own time as the C counters record it (the link-busy time:
the backend times the copy itself); the wall time of the call minus that is the
host-side overhead of a transfer call. A least-squares fit of latency + bytes /
bandwidth, weighted by 1/time so that 4 B and 256 MiB count alike, gives each Link
and its largest relative residual; a size whose residual stands far out from the
others' (a copy descheduled on a loaded machine) is dropped and the fit redone.
Then: the launch overhead (a tiny op, waited for), the enqueue overhead (tiny ops
queued without waiting), matmul throughput for n = 32 .. 1024 on the device and
with NumPy on the host, and elementwise bandwidth.

Profiles are cached per device (and, on sim, per link-model setting) under
$XDG_CACHE_HOME/pygpu or ~/.cache/pygpu; recalibrate() measures again."""
import json
import os
import time

import numpy as np

from .. import cuda, sim
from .._tensor.create import empty, ones, tensor
from .._device import device as _device
from .._dtype import float32
from .._stats import stats
from .._sync import synchronize
from .._version import __version__
from .profile import LINK_KINDS, DeviceProfile, Link

MAX_BYTES = 256 << 20
MATMUL_NS = (32, 64, 128, 256, 512, 1024)  # larger n: the 1024 figure is used


def cache_dir():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "pygpu")


def _cache_path(device):
    key = str(device).replace(":", "")
    if device.type == "sim":
        ln = sim.link()
        key += f"-link{ln['latency_us']:g}us-{ln['h2d_gbps']:g}-{ln['d2h_gbps']:g}GBps"
    threads = _blas_threads()
    if threads:
        key += f"-blas{threads}"
    return os.path.join(cache_dir(), f"profile-{key}-v{__version__}.json")


def _blas_threads():
    """Threads of the BLAS pools in use (they set sim's matmul speed), if threadpoolctl is here."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return None
    return "-".join(str(p.get("num_threads")) for p in threadpool_info()
                    if p.get("user_api") == "blas") or None


def cached_profile(device):
    """The cached profile of a device, or None if it was never calibrated (or the cache is stale)."""
    path = _cache_path(_device(device))
    if not os.path.exists(path):
        return None
    try:
        with open(path) as f:
            return DeviceProfile.from_dict(json.load(f))
    except (OSError, ValueError, TypeError):
        return None  # a damaged cache file is measured again, not trusted


def calibrate(device="sim:0", max_bytes=MAX_BYTES, cache=True, refresh=False, progress=None,
              matmul_ns=None):
    """The DeviceProfile of `device`: from the cache if it was measured before (with the
    same max_bytes), else measured now (a few seconds) and cached. max_bytes caps the
    largest transfer; refresh=True measures again; progress: a tqdm-like class;
    matmul_ns: the matmul sizes to time (default MATMUL_NS)."""
    dev = _device(device)
    if dev.type == "cpu":
        raise ValueError("calibrate: the cpu has no link to measure; give an accelerator, "
                         "e.g. calibrate('sim:0') or calibrate('cuda:0')")
    if cache and not refresh:
        prof = cached_profile(dev)
        if (prof is not None and prof.meta.get("max_bytes") == int(max_bytes)
                and prof.meta.get("matmul_ns") == list(matmul_ns or MATMUL_NS)):
            return prof
    prof = _measure(dev, int(max_bytes), progress, tuple(matmul_ns or MATMUL_NS))
    if cache:
        os.makedirs(cache_dir(), exist_ok=True)
        tmp = _cache_path(dev) + f".{os.getpid()}.tmp"
        prof.save(tmp)
        os.replace(tmp, _cache_path(dev))  # atomic: a concurrent reader sees old or new
    return prof


def recalibrate(device="sim:0", max_bytes=MAX_BYTES, progress=None, matmul_ns=None):
    """Measure again, replacing the cached profile."""
    return calibrate(device, max_bytes=max_bytes, refresh=True, progress=progress,
                     matmul_ns=matmul_ns)


# ---- measurements ---------------------------------------------------------------------
def _sizes(max_bytes):
    sizes, s = [], 4
    while s <= max_bytes:
        sizes.append(s)
        s *= 4
    return sizes


def _repeats(nbytes):
    return 15 if nbytes <= 1 << 16 else 7 if nbytes <= 1 << 22 else 3


def robust_median(samples, k=3.0):
    """The median of `samples` after dropping those more than k median absolute
    deviations from their median (at least half are kept): one copy that waited for a
    busy core moves a best-of or a mean, not this."""
    x = np.asarray(samples, dtype=np.float64)
    med = float(np.median(x))
    mad = float(np.median(np.abs(x - med)))
    if mad == 0:
        return med
    kept = x[np.abs(x - med) <= k * 1.4826 * mad]  # 1.4826 MAD ~ one standard deviation
    return float(np.median(kept)) if len(kept) * 2 >= len(x) else med


def _time_copies(dev, direction, pinned, sizes, tick):
    """[(nbytes, link seconds, wall seconds)] for one direction and memory kind: each the
    robust median of its repeats."""
    out = []
    for nb in sizes:
        n = nb // 4
        host = empty(n, dtype=float32)
        if pinned:
            host = host.pin_memory()
        devbuf = empty(n, dtype=float32, device=dev)
        dst, src = (devbuf, host) if direction == "h2d" else (host, devbuf)
        dst.copy_(src)  # first touch of the pages, outside the timing
        synchronize(dev)
        links, walls = [], []
        for _ in range(_repeats(nb)):
            s0 = stats()
            t0 = time.perf_counter()
            dst.copy_(src)
            walls.append(time.perf_counter() - t0)
            d = stats() - s0
            links.append(d.h2d_seconds if direction == "h2d" else d.d2h_seconds)
        out.append((nb, robust_median(links), robust_median(walls)))
        del host, devbuf, dst, src
        tick()
    return out


def _fit_once(b, t):
    a = np.stack([1.0 / t, b / t], axis=1)
    (lat, inv_bw), *_ = np.linalg.lstsq(a, np.ones_like(t), rcond=None)
    lat = max(float(lat), 0.0)
    inv_bw = max(float(inv_bw), 1e-15)
    return lat, inv_bw, np.abs(lat + b * inv_bw - t) / t


def fit_link(points, outlier=3.0, floor=0.05):
    """Least-squares latency + bytes/bandwidth through [(bytes, seconds)], each point
    weighted by 1/seconds (relative error); returns a Link with the largest relative
    residual. A point whose residual is over `outlier` times the median residual (and
    over `floor`) is rejected and the line fitted again, at most a quarter of them: a
    size measured while the machine was busy does not bend the line through the rest."""
    b = np.array([p[0] for p in points], dtype=np.float64)
    t = np.maximum(np.array([p[1] for p in points], dtype=np.float64), 1e-9)
    keep = np.ones(len(b), dtype=bool)
    lat, inv_bw, res = _fit_once(b, t)
    for _ in range(len(b) // 4):
        if keep.sum() <= 3:
            break
        limit = max(outlier * float(np.median(res[keep])), floor)
        worst = int(np.argmax(np.where(keep, res, -1.0)))
        if res[worst] <= limit:
            break
        keep[worst] = False
        lat, inv_bw, _ = _fit_once(b[keep], t[keep])
        res = np.abs(lat + b * inv_bw - t) / t
    return Link(lat, 1.0 / inv_bw, float(np.max(res[keep])))


def _best(fn, repeats, budget_s=0.3):
    best, t_start = float("inf"), time.perf_counter()
    for i in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
        if i >= 1 and time.perf_counter() - t_start > budget_s:
            break
    return best


def _measure(dev, max_bytes, progress, matmul_ns):
    sizes = _sizes(max_bytes)
    steps = 4 * len(sizes) + 3 + 2 * len(matmul_ns)
    bar = progress(total=steps, desc=f"calibrating {dev}", leave=False) if progress else None

    def tick():
        if bar is not None:
            bar.update(1)

    t_begin = time.perf_counter()
    links, overheads = {}, []
    for kind in LINK_KINDS:
        direction, mem = kind.split("_")
        pts = _time_copies(dev, direction, mem == "pinned", sizes, tick)
        links[kind] = fit_link([(nb, lk) for nb, lk, _ in pts])
        overheads += [w - lk for nb, lk, w in pts if nb <= 4096]
    overhead = max(float(np.median(overheads)), 0.0)

    x = ones(16, device=dev)
    (x + 1).wait()
    launch = _best(lambda: (x + 1).wait(), 50)
    tick()

    def enqueue_many():
        for _ in range(64):
            x + 1
        synchronize(dev)
    enqueue_many()
    # enqueue: the caller's time per op when it does not wait (the wait is excluded by
    # timing only the loop; the queue may still be draining when the loop ends)
    best_enq = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(64):
            x + 1
        best_enq = min(best_enq, (time.perf_counter() - t0) / 64)
        synchronize(dev)
    tick()

    n_el = 1 << 21  # 8 MiB float32 per operand
    ea, eb = ones(n_el, device=dev), ones(n_el, device=dev)
    (ea + eb).wait()
    t_el = _best(lambda: (ea + eb).wait(), 10)
    elementwise_gbps = 3 * 4 * n_el / max(t_el - launch, 1e-9) / 1e9
    tick()

    rng = np.random.default_rng(0)
    mats = {n: rng.standard_normal((n, n), dtype=np.float32) for n in matmul_ns}
    mm, host_mm = [], []
    for n in matmul_ns:
        da = tensor(mats[n], device=dev)
        (da @ da).wait()
        t = _best(lambda: (da @ da).wait(), 10)
        # where the launch is most of the call, t - launch is noise: use the whole call (a
        # lower bound on throughput, safe to carry to larger n by the rule below)
        compute = t - launch if t - launch >= 0.5 * t else t
        mm.append([n, 2.0 * n ** 3 / compute / 1e9])
        tick()
    # Throughput is taken as non-decreasing in n (a bigger matmul never uses the device
    # worse): on a loaded machine a BLAS thread descheduled mid-call can make one size
    # look 100x slower, and one such outlier would otherwise wreck every prediction.
    for i in range(1, len(mm)):
        mm[i][1] = max(mm[i][1], mm[i - 1][1])
    # pygpu and NumPy each load an OpenBLAS whose idle threads spin for a while after
    # a call: let pygpu's park before timing NumPy's (as the main job does)
    time.sleep(0.3)
    for n in matmul_ns:
        a = mats[n]
        a @ a
        t = _best(lambda: a @ a, 10)
        host_mm.append([n, 2.0 * n ** 3 / t / 1e9])
        tick()
    for i in range(1, len(host_mm)):
        host_mm[i][1] = max(host_mm[i][1], host_mm[i - 1][1])
    if bar is not None:
        bar.close()
    name = cuda.get_device_name(dev.index) if dev.type == "cuda" else f"{dev} (simulated)"
    meta = {"max_bytes": max_bytes, "matmul_ns": list(matmul_ns), "sizes": sizes, "seconds": time.perf_counter() - t_begin,
            "pygpu": __version__, "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if dev.type == "sim":
        meta["sim_link"] = sim.link()
    return DeviceProfile(name=name, device=str(dev), measured=True, source="pygpu.cost.calibrate",
                         links=links, transfer_overhead_s=overhead, launch_overhead_s=launch,
                         enqueue_overhead_s=best_enq, matmul_gflops=mm,
                         elementwise_gbps=elementwise_gbps, host_matmul_gflops=host_mm, meta=meta)
