"""explain(record, profile=None): the REST-API view of a run, printed and returned.

A device is a remote server: a few heavy requests (weights, a dataset) and many
light ones (a batch, a loss value) cross the link. From a track(call_sites=True)
record this lists: the heavy requests (consecutive transfers from one call site
and direction, together >= heavy_bytes) and a summary of the light ones; bytes
each way; the modelled transfer time against the measured one; the transfer
share of wall time and the time stalled in synchronizations; implicit transfers
by trigger and call site (top N); round trips (bytes sent, brought back unchanged
and sent again) and re-uploads of unchanged bytes; and a one-line verdict.
Without call sites (plain track()), the per-transfer parts are left out and the
report says how to get them."""
import statistics
import sys
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field

from .. import sim
from .calibrate import cached_profile
from .predict import transfer_seconds
from .profile import link_model_profile, load_profile
from .record import as_record

HEAVY_BYTES = 1 << 20


@dataclass
class Request:
    direction: str
    call_site: str
    transfers: int
    nbytes: int
    trigger: str

    def as_dict(self):
        return asdict(self)


@dataclass
class Report:
    device: str | None
    profile: str | None
    wall_seconds: float
    bytes: dict                     # {'h2d': n, 'd2h': n, 'd2d': n}
    counts: dict
    modelled_transfer_seconds: float | None
    measured_transfer_seconds: float
    transfer_share: float           # measured transfer time / wall time
    sync_seconds: float
    heavy: list = field(default_factory=list)       # [Request]
    light: dict = field(default_factory=dict)       # {'requests', 'transfers', 'typical_bytes', 'bytes'}
    implicit: list = field(default_factory=list)    # [{'trigger', 'call_site', 'count', 'bytes'}]
    round_trips: list = field(default_factory=list)  # [{'call_site', 'count', 'bytes', 'seconds'}]
    resends: list = field(default_factory=list)
    saving_seconds: float = 0.0
    verdict: str = ""
    text: str = ""

    def as_dict(self):
        d = asdict(self)
        d.pop("text")
        return d

    def __str__(self):
        return self.text


def _fmt_bytes(n):
    for unit, k in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= k:
            return f"{n / k:.1f} {unit}"
    return f"{n} B"


def _ms(s):
    return f"{s * 1e3:.3f} ms"


def _requests(transfers):
    """Consecutive transfers from one call site, in one direction, for one trigger, with no
    device op launched between them, form one request (model.to(dev): all the weights;
    a step's batch: x and y; the next step's batch comes after that step's ops)."""
    out, prev = [], None
    for x in transfers:
        last = out[-1] if out else None
        if (last and (last.direction, last.call_site, last.trigger) == (x.direction, x.call_site, x.trigger)
                and prev.ops_before == x.ops_before):
            last.transfers += 1
            last.nbytes += x.nbytes
        else:
            out.append(Request(x.direction, x.call_site, 1, x.nbytes, x.trigger))
        prev = x
    return out


def _default_profile(device):
    """A cached calibration of the device, else the sim link model when one is set."""
    if device is None:
        return None
    prof = cached_profile(device)
    if prof is None and device.startswith("sim"):
        ln = sim.link()
        if ln["latency_us"] or ln["h2d_gbps"] or ln["d2h_gbps"]:
            prof = link_model_profile(ln, device)
    return prof


def explain(record, profile=None, top=5, steps=None, heavy_bytes=HEAVY_BYTES, file=None,
            quiet=False):
    """Print (unless quiet) and return a Report of a track() record (or of a function,
    run once). profile: a DeviceProfile, a datasheet name or a JSON file; default: the
    cached calibration of the record's device, else the sim link model if set. steps:
    how many steps the record spans, to state the verdict per step."""
    rec = as_record(record)
    st = rec.stats
    prof = load_profile(profile) if profile is not None else _default_profile(rec.device)
    modelled = sum(transfer_seconds(rec, prof).values()) if prof is not None else None
    measured = st.h2d_seconds + st.d2h_seconds + sum(
        x["seconds"] for x in st.transfers if x["src"] != "cpu" and x["dst"] != "cpu")
    wall = max(rec.wall_seconds, 1e-12)
    rep = Report(rec.device, prof.name if prof else None, rec.wall_seconds,
                 {"h2d": st.h2d_bytes, "d2h": st.d2h_bytes, "d2d": st.d2d_bytes},
                 {"h2d": st.h2d_count, "d2h": st.d2h_count, "d2d": st.d2d_count},
                 modelled, measured, measured / wall, st.sync_seconds)

    def price(x):
        if prof is not None:
            return prof.transfer_seconds(x.direction, x.nbytes, x.pinned)
        return x.seconds

    if rec.transfers is not None:
        reqs = _requests(rec.transfers)
        rep.heavy = [r for r in reqs if r.nbytes >= heavy_bytes]
        light = [r for r in reqs if r.nbytes < heavy_bytes]
        sizes = [r.nbytes for r in light]
        rep.light = {"requests": len(light), "transfers": sum(r.transfers for r in light),
                     "typical_bytes": int(statistics.median(sizes)) if sizes else 0,
                     "bytes": sum(sizes),
                     "by_kind": dict(Counter(f"{r.direction} {r.trigger}" for r in light)),
                     "call_sites": [{"direction": k[0], "call_site": k[1], "requests": v}
                                    for k, v in Counter((r.direction, r.call_site)
                                                        for r in light).most_common()]}
        imp = defaultdict(lambda: [0, 0])
        for x in rec.transfers:
            if x.implicit:
                imp[(x.trigger, x.call_site)][0] += 1
                imp[(x.trigger, x.call_site)][1] += x.nbytes
        rep.implicit = [{"trigger": k[0], "call_site": k[1], "count": v[0], "bytes": v[1]}
                        for k, v in sorted(imp.items(), key=lambda kv: -kv[1][0])]
        for attr, flag in (("round_trips", "round_trip"), ("resends", "resend")):
            groups = defaultdict(lambda: [0, 0, 0.0])
            for x in rec.transfers:
                if getattr(x, flag):
                    g = groups[x.call_site]
                    g[0] += 1
                    g[1] += x.nbytes
                    g[2] += price(x)
            setattr(rep, attr, [{"call_site": k, "count": v[0], "bytes": v[1], "seconds": v[2]}
                                for k, v in sorted(groups.items(), key=lambda kv: -kv[1][2])])
    rep.verdict, rep.saving_seconds = _verdict(rep, steps)
    rep.text = _render(rep, rec, prof, top, steps, heavy_bytes)
    if not quiet:
        print(rep.text, file=file if file is not None else sys.stdout)
    return rep


def _verdict(rep, steps):
    per = f"/step" if steps else ""
    div = steps or 1
    wall = max(rep.wall_seconds, 1e-12)
    if rep.resends:
        worst = rep.resends[0]
        save = sum(r["seconds"] for r in rep.resends if r["call_site"] == worst["call_site"])
        what = "round trips" if rep.round_trips else "re-uploads of unchanged data"
        return (f"keeping the data sent at {worst['call_site']} resident would save "
                f"{save / div * 1e3:.3g} ms{per} ({save / wall:.0%} of wall time): "
                f"{worst['count']} {what} of {_fmt_bytes(worst['bytes'] // max(worst['count'], 1))}"), save
    n_implicit = sum(i["count"] for i in rep.implicit)
    if rep.implicit and n_implicit >= (steps or 3):  # about one per step: a stall in the loop
        worst = rep.implicit[0]
        return (f"{n_implicit} implicit transfers, most from "
                f"{worst['trigger']} at {worst['call_site']}: each is a synchronizing round trip "
                f"to the device; batch them or keep the value on the device"), 0.0
    if rep.transfer_share >= 0.3:
        return (f"transfers take {rep.transfer_share:.0%} of wall time: move less, move it once, "
                f"or overlap it (pinned memory, non_blocking=True)"), 0.0
    return (f"transfers take {rep.transfer_share:.0%} of wall time: the link is not the "
            f"bottleneck here"), 0.0


def _render(rep, rec, prof, top, steps, heavy_bytes):
    L = []
    L.append(f"pygpu.cost.explain: {rep.device or 'no device'}, wall {_ms(rep.wall_seconds)}"
             + (f" over {steps} steps" if steps else "")
             + (f"; model: {prof.name} ({'measured' if prof.measured else 'not measured'})" if prof
                else "; no profile (pygpu.cost.calibrate(device) models the times)"))
    L.append(f"  bytes: h2d {_fmt_bytes(rep.bytes['h2d'])} in {rep.counts['h2d']}, d2h "
             f"{_fmt_bytes(rep.bytes['d2h'])} in {rep.counts['d2h']}"
             + (f", d2d {_fmt_bytes(rep.bytes['d2d'])} in {rep.counts['d2d']}" if rep.counts['d2d'] else ""))
    model = _ms(rep.modelled_transfer_seconds) if rep.modelled_transfer_seconds is not None else "n/a"
    L.append(f"  transfer time: modelled {model}, measured {_ms(rep.measured_transfer_seconds)} "
             f"({rep.transfer_share:.0%} of wall); stalled in synchronizations {_ms(rep.sync_seconds)}")
    if rec.transfers is None:
        L.append("  (per-transfer detail needs pygpu.track(call_sites=True))")
    else:
        L.append(f"  heavy requests (>= {_fmt_bytes(heavy_bytes)}): {len(rep.heavy)}")
        for r in rep.heavy[:top]:
            L.append(f"    {r.direction} {_fmt_bytes(r.nbytes):>10} in {r.transfers} transfer"
                     f"{'s' if r.transfers != 1 else ''}  at {r.call_site}")
        if len(rep.heavy) > top:
            L.append(f"    ... {len(rep.heavy) - top} more")
        lt = rep.light
        if lt["requests"]:
            kinds = ", ".join(f"{k} x{v}" for k, v in lt["by_kind"].items())
            L.append(f"  light requests: {lt['requests']} ({lt['transfers']} transfers, typical "
                     f"{_fmt_bytes(lt['typical_bytes'])}, {_fmt_bytes(lt['bytes'])} in all: {kinds})")
            for c in lt["call_sites"][:top]:
                L.append(f"    {c['requests']:>6} x {c['direction']} at {c['call_site']}")
        if rep.implicit:
            L.append(f"  implicit transfers (top {top}):")
            for i in rep.implicit[:top]:
                L.append(f"    {i['count']:>6} x {i['trigger']:<7} {_fmt_bytes(i['bytes']):>10}  at {i['call_site']}")
        for name, rows in (("round trips (sent, brought back unchanged, sent again)", rep.round_trips),
                           ("re-uploads of bytes already sent", rep.resends)):
            if rows:
                L.append(f"  {name}:")
                for r in rows[:top]:
                    L.append(f"    {r['count']:>6} x {_fmt_bytes(r['bytes'] // max(r['count'], 1)):>10}"
                             f"  ({_ms(r['seconds'])})  at {r['call_site']}")
    L.append(f"  verdict: {rep.verdict}")
    return "\n".join(L)
