"""pygpu.transfer_budget: a context manager that fails a test that moves too much.

    with pygpu.transfer_budget(h2d_count=1, d2h_bytes=4, implicit=0):
        train_step()

On exit, the block's transfers are checked against each limit given (None = no
limit); exceeding any raises TransferBudgetError, whose message lists the limits
broken and then the explain() report of the offending transfers (those in the
directions, or the implicit ones, whose limit was broken), with call sites."""
from .._stats import track
from .explain import explain
from .record import Record, _device_of


class TransferBudgetError(AssertionError):
    """A transfer_budget block moved more than its budget (an AssertionError, so
    test runners report it as a failed check). .report is the explain() Report."""

    def __init__(self, message, report=None):
        super().__init__(message)
        self.report = report


class transfer_budget:
    def __init__(self, h2d_bytes=None, d2h_bytes=None, h2d_count=None, d2h_count=None, implicit=0,
                 profile=None):
        limits = {"h2d_bytes": h2d_bytes, "d2h_bytes": d2h_bytes, "h2d_count": h2d_count,
                  "d2h_count": d2h_count, "implicit": implicit}
        for k, v in limits.items():
            if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
                raise ValueError(f"transfer_budget: {k} must be a non-negative int or None, got {v!r}")
        self.limits = limits
        self.profile = profile

    def __enter__(self):
        self._track = track(call_sites=True)
        self._track.__enter__()
        return self._track

    def __exit__(self, exc_type, exc, tb):
        self._track.__exit__(exc_type, exc, tb)
        if exc_type is not None:
            return False  # the block's own error comes first
        t = self._track
        used = {"h2d_bytes": t.h2d_bytes, "d2h_bytes": t.d2h_bytes, "h2d_count": t.h2d_count,
                "d2h_count": t.d2h_count, "implicit": t.implicit_count}
        broken = [k for k, lim in self.limits.items() if lim is not None and used[k] > lim]
        if not broken:
            return False
        dirs = {k.split("_")[0] for k in broken if k != "implicit"}
        log = t.transfers_log
        offending = [x for x in log if x.direction in dirs or ("implicit" in broken and x.implicit)]
        rec = Record(t.stats, t.wall_seconds, offending, _device_of(t.stats, offending))
        rep = explain(rec, self.profile, quiet=True)
        lines = ["transfer budget exceeded: " + ", ".join(
            f"{k} {used[k]} > {self.limits[k]}" for k in broken)]
        lines.append(rep.text)
        raise TransferBudgetError("\n".join(lines), rep)
