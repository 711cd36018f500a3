"""The main job, run by `python -m pygpu` (pygpu/__main__.py forwards here): the REST-API cost of a device, measured and predicted on this machine.

An n x n float32 matmul for n in 64..2048, three ways: with NumPy; on a device
with the data already there (resident); and on the device with a round trip
every call (upload both inputs, multiply, download the result). For each n it
prints the time per call (each figure timed in three blocks of repeats within a fixed
time budget: the median of the blocks' medians, with their run-to-run spread), the speedup
against NumPy, the transfers per call as counted, and the cost model's prediction (pygpu.cost) beside the measurement;
then the crossover n above which the round trip beats NumPy; then a short MLP
training whose transfers, as counted, are two heavy requests (weights up, weights
down) and many light ones (a batch up, a loss back, per step).

A row whose blocks disagree by more than UNSTABLE_SPREAD (a neighbour's burst, BLAS pools
spinning against each other), or, on sim, whose NumPy and device times are further apart than
the same CPU allows (once NumPy at n = 128 sat at 16 ms and the table printed a 145x
speedup), is measured again, up to MAX_ATTEMPTS times; if it never settles, the table
prints it as unstable instead of as figures, and the crossover leaves it out.

The device is cuda:0 when present, else sim:0 with the sim link model on
(10 us + 16 GB/s each way, a PCIe-like link), so that the cost of a round trip
shows on a machine without a GPU. --profile h100_pcie predicts for a GPU you do
not have; --json prints machine-readable output; --plot out.png draws it."""
import argparse
import json
import sys
import time

import numpy as np

import pygpu
from pygpu import cost

SIZES = (64, 128, 200, 512, 1024, 2048)
LINK = dict(latency_us=10.0, h2d_gbps=16.0, d2h_gbps=16.0)
CAL_MAX_BYTES = 16 << 20  # the largest transfer this job makes (2048 x 2048 float32)
CAL_MATMUL_NS = None      # calibrate's default sizes


def _progress(total, desc, quiet):
    try:
        from tqdm import tqdm
    except ImportError:
        tqdm = None
    if tqdm is None or quiet:
        class _NoBar:
            def update(self, n=1):
                pass

            def close(self):
                pass
        return _NoBar()
    return tqdm(total=total, desc=desc, leave=False, file=sys.stderr)


BUDGET_S = 0.25    # per figure, three figures per n: the job's total time stays what it was
MIN_CALLS = 3      # a median needs at least three (fewer only when --number says so)
BLOCKS = 3           # each figure is timed in this many blocks, one after the other
UNSTABLE_SPREAD = 0.25  # blocks' medians further apart than this (max - min over median): re-measure
MAX_ATTEMPTS = 3     # measurements of a row before it is printed as unstable
SIM_RATIO_LIMIT = 3.0  # on sim, NumPy and the resident device further apart than this: re-measure
FIGURES = ("numpy", "resident", "round_trip")


def time_per_call(fn, max_calls, budget_s=BUDGET_S, min_calls=MIN_CALLS, warm=True):
    """(median, spread, calls) of one call's time: calls repeated until max_calls, or until
    budget_s is spent and min_calls made (at least 2). spread is the interquartile range
    over the median: a median moves little when one call of a loaded machine is slow (the
    best-of it replaced did, run to run), and the spread says how much to trust it."""
    if warm:
        fn()  # warm: allocations, first-touch pages, BLAS thread start
    least = max(2, min(min_calls, max_calls))
    times, spent = [], 0.0
    while len(times) < max(least, max_calls) and (len(times) < least or spent < budget_s):
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        times.append(dt)
        spent += dt
    q25, med, q75 = np.percentile(times, [25, 50, 75])
    return float(med), float((q75 - q25) / med) if med > 0 else 0.0, len(times)


def time_figure(fn, max_calls, budget_s=BUDGET_S, blocks=BLOCKS):
    """{"s", "spread", "calls", "blocks"}: fn timed in `blocks` blocks one after the other
    (time_per_call each, budget_s shared out, max_calls too, at least 2 calls a block); the
    figure is the median of the blocks' medians and its spread the run-to-run one, (max -
    min) over that median: what a second run of the job might print instead. A block's
    own median already shrugs off one slow call, so the blocks disagree only when the
    machine changed under the figure for longer than a call."""
    nblocks = max(1, min(blocks, max_calls))
    medians, calls = [], 0
    for i in range(nblocks):
        med, _, k = time_per_call(fn, max(1, max_calls // nblocks), budget_s / nblocks,
                                  min_calls=2, warm=(i == 0))
        medians.append(med)
        calls += k
    mid = float(np.median(medians))
    spread = (max(medians) - min(medians)) / mid if mid > 0 else 0.0
    return {"s": mid, "spread": float(spread), "calls": calls, "blocks": medians}


def measure_size_once(n, dev, number, rng):
    a_np = rng.standard_normal((n, n), dtype=np.float32)  # (n, n)
    b_np = rng.standard_normal((n, n), dtype=np.float32)  # (n, n)
    a_dev, b_dev = pygpu.tensor(a_np, device=dev), pygpu.tensor(b_np, device=dev)
    a_cpu, b_cpu = pygpu.from_numpy(a_np), pygpu.from_numpy(b_np)

    def resident():
        (a_dev @ b_dev).wait()

    def round_trip():
        (a_cpu.to(dev) @ b_cpu.to(dev)).to("cpu")

    row = {"n": n}

    def record(name, fig):
        row[f"{name}_s"], row[f"{name}_spread"] = fig["s"], fig["spread"]
        row[f"{name}_calls"], row[f"{name}_blocks"] = fig["calls"], fig["blocks"]

    for name, fn in (("resident", resident), ("round_trip", round_trip)):
        fn()
        pygpu.synchronize()
        with pygpu.track() as tr:
            fn()
            pygpu.synchronize()
        record(name, time_figure(fn, number))
        row[f"{name}_transfers"] = {k: getattr(tr, k) for k in
                                    ("h2d_count", "h2d_bytes", "d2h_count", "d2h_bytes")}
    # pygpu's pool and NumPy's OpenBLAS keep their idle threads spinning for a while
    # after a call (NumPy's for ~0.1 s), on the cores the other side wants: each side is
    # timed in a block of its own, after the other's threads have gone to sleep
    # (benchmarks/bench_numpy_interleave.py measures what interleaving costs)
    time.sleep(0.2)
    record("numpy", time_figure(lambda: a_np @ b_np, number))
    time.sleep(0.2)  # before the next row's pygpu timings
    return row


def row_spread(row):
    """The widest run-to-run spread of a row's three figures."""
    return max(row[f"{name}_spread"] for name in FIGURES)


def row_doubt(row, dev):
    """Why a row's figures cannot be trusted, or None. Its blocks disagree by more than
    UNSTABLE_SPREAD; or, on sim, NumPy and the resident device are more than SIM_RATIO_LIMIT
    apart: both multiply on this CPU (sim with one thread a device, NumPy with its pool), so
    such a gap says one side was starved of CPU for the whole row (issue 46: NumPy at
    n = 128 held at 16 ms in every repeat, a 145x "speedup" that the spread alone misses)."""
    if row_spread(row) > UNSTABLE_SPREAD:
        return f"its blocks disagree by more than {UNSTABLE_SPREAD:.0%}"
    if str(dev).startswith("sim") and row.get("numpy_s") and row.get("resident_s"):
        ratio = max(row["numpy_s"] / row["resident_s"], row["resident_s"] / row["numpy_s"])
        if ratio > SIM_RATIO_LIMIT:
            return (f"NumPy and sim, on the same CPU, are {ratio:.0f}x apart: one side was "
                    "starved of CPU (--blas-threads 1 helps on a busy machine)")
    return None


def measure_size(n, dev, number, rng, measure=measure_size_once):
    """A row, measured again (up to MAX_ATTEMPTS times in all) while row_doubt finds a
    reason not to trust it; the best attempt is kept (one without doubt, else the narrowest),
    and marked unstable, with the reason, if even that one is doubtful."""
    attempts = []
    for _ in range(MAX_ATTEMPTS):
        attempts.append(measure(n, dev, number, rng))
        if row_doubt(attempts[-1], dev) is None:
            break
    row = min(attempts, key=lambda r: (row_doubt(r, dev) is not None, row_spread(r)))
    row["attempts"] = len(attempts)
    row["doubt"] = row_doubt(row, dev)
    row["unstable"] = row["doubt"] is not None
    return row


def measured_crossover(rows):
    """(n, previous n) of the first size where the round trip beats NumPy, or (None, None)."""
    prev = None
    for r in rows:
        if r.get("unstable"):
            continue  # not a figure: neither a crossover nor the size before one
        if r["round_trip_s"] < r["numpy_s"]:
            return r["n"], prev
        prev = r["n"]
    return None, None


def train_report(dev, steps, prof, quiet, precision="32"):
    from . import mlp_demo
    if not quiet:
        print(f"training an MLP for {steps} steps ({precision}) ...", file=sys.stderr)
    with pygpu.track(call_sites=True) as tr:
        record = mlp_demo.train(dev, steps=steps, progress="always" if not quiet else False,
                                precision=precision)
        pygpu.synchronize()
    rep = cost.explain(tr, prof, steps=steps, quiet=True)
    return {"steps": steps, "loss": record["loss"], "accuracy": record.get("accuracy"),
            "heavy": [r.as_dict() for r in rep.heavy], "light": rep.light,
            "h2d_count": tr.h2d_count, "d2h_count": tr.d2h_count, "implicit": dict(tr.implicit),
            "wall_s": tr.wall_seconds, "verdict": rep.verdict}, rep


def choose_device(arg):
    if arg:
        dev = str(pygpu.device(arg))
    else:
        dev = "cuda:0" if pygpu.cuda.is_available() else "sim:0"
    if dev.startswith("sim"):
        pygpu.sim.configure(**LINK)
        why = "" if arg else "no GPU here: "
        return dev, (f"{why}simulated, with the sim link model on: {LINK['latency_us']:g} us + "
                     f"{LINK['h2d_gbps']:g} GB/s each way (a PCIe-like link)")
    return dev, "real link" if dev.startswith("cuda") else "host memory, no link"


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m pygpu", description=__doc__.splitlines()[0])
    p.add_argument("-n", type=lambda s: [int(x) for x in s.split(",")], default=list(SIZES),
                   help=f"matrix size(s), comma-separated (default {','.join(map(str, SIZES))})")
    p.add_argument("--number", type=int, default=10, help="most timed calls per measurement (default 10)")
    p.add_argument("--device", default=None, help="device (default: cuda:0, else sim:0 with the link model)")
    p.add_argument("--profile", default=None,
                   help=f"predict for this profile: a JSON file or one of {cost.datasheet_names()} "
                        "(default: calibrate the device, cached)")
    p.add_argument("--steps", type=int, default=30, help="MLP training steps (default 30; 0 skips it)")
    p.add_argument("--precision", choices=["32", "bf16-mixed", "16-mixed"], default="32",
                   help="the MLP's training precision (default 32; the mixed ones send "
                        "16-bit batches: half the bytes)")
    p.add_argument("--blas-threads", type=int, default=None, metavar="N",
                   help="limit NumPy's and pygpu's BLAS to N threads (through threadpoolctl); on a "
                        "loaded machine, 1 keeps the two BLAS pools from spinning against each other")
    p.add_argument("--json", action="store_true", help="print machine-readable JSON only")
    p.add_argument("--plot", metavar="OUT.png", help="write a log-log plot of time per call vs n")
    args = p.parse_args(argv)
    if args.plot:  # fail before measuring, not after
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            p.error("--plot needs matplotlib: pip install matplotlib (or pip install 'pygpu[examples]')")
    if any(n < 1 for n in args.n) or args.number < 1 or args.steps < 0:
        p.error("-n sizes and --number must be positive, --steps non-negative")
    if args.blas_threads is not None:
        if args.blas_threads < 1:
            p.error("--blas-threads must be positive")
        try:  # a dependency of pygpu (setup.py), so a plain install has it
            from threadpoolctl import threadpool_limits
        except ImportError:
            p.error("--blas-threads needs threadpoolctl, which pygpu's install brings: "
                    "pip install threadpoolctl")
        pygpu.ones((2, 2)) @ pygpu.ones((2, 2))  # load pygpu's BLAS so that the limit reaches it
        with threadpool_limits(args.blas_threads):
            return run(p, args)
    return run(p, args)


def run(p, args):
    t_start = time.perf_counter()
    dev, link = choose_device(args.device)
    if dev == "cpu":
        p.error("--device cpu: the experiment compares a device with NumPy; give sim:0 or cuda:0")
    out = sys.stderr if args.json else sys.stdout
    if args.profile:
        try:
            prof = cost.load_profile(args.profile)
        except ValueError as e:
            p.error(f"--profile: {e}")
    else:
        print(f"calibrating {dev} (once; cached in {cost.cache_dir()}) ...", file=sys.stderr)
        try:
            from tqdm import tqdm as bar_cls
        except ImportError:
            bar_cls = None
        prof = cost.calibrate(dev, max_bytes=CAL_MAX_BYTES, matmul_ns=CAL_MATMUL_NS,
                              progress=None if args.json else bar_cls)

    rng = np.random.default_rng(0)
    rows = []
    bar = _progress(len(args.n), "measuring", args.json)
    for n in args.n:
        row = measure_size(n, dev, args.number, rng)
        row["predicted_resident_s"] = prof.matmul_seconds(n)
        row["predicted_round_trip_s"] = prof.round_trip_matmul_seconds(n)
        row["speedup_resident"] = row["numpy_s"] / row["resident_s"]
        row["speedup_round_trip"] = row["numpy_s"] / row["round_trip_s"]
        rows.append(row)
        bar.update(1)
    bar.close()
    cross, cross_prev = measured_crossover(rows)
    host = cost.DeviceProfile("host", "cpu", True, "this run's NumPy timings", prof.links,
                              host_matmul_gflops=[[r["n"], 2.0 * r["n"] ** 3 / r["numpy_s"] / 1e9]
                                                  for r in rows if not r["unstable"]] or
                              [[r["n"], 2.0 * r["n"] ** 3 / r["numpy_s"] / 1e9] for r in rows])
    predicted_cross = cost.crossover_n(prof, host=host, lo=min(args.n), hi=max(args.n))
    result = {
        "pygpu": pygpu.__version__, "device": dev, "link": link,
        "sim_link_model": pygpu.sim.link() if dev.startswith("sim") else None,
        "profile": {"name": prof.name, "measured": prof.measured, "source": prof.source},
        "blas_threads": args.blas_threads, "rows": rows,
        "crossover": {"measured_n": cross, "measured_after": cross_prev, "predicted_n": predicted_cross},
    }
    if not args.json:
        print_table(result, prof)
    if args.steps:
        result["training"], rep = train_report(dev, args.steps, prof, args.json,
                                               getattr(args, "precision", "32"))
        if not args.json:
            print_training(result["training"], rep)
    result["seconds"] = time.perf_counter() - t_start
    if args.plot:
        from ._plots import plot_main_job
        plot_main_job(result, args.plot)
        print(f"plot written to {args.plot}", file=out)
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        threads = f", BLAS threads limited to {args.blas_threads}" if args.blas_threads else ""
        print(f"({result['seconds']:.1f} s{threads}; python -m pygpu --help for options)")
    return 0


def _fmt_t(s):
    return f"{s * 1e3:9.3f}" if s < 10 else f"{s:8.1f}s"


def _fmt_m(r, name):
    """A measured figure and its run-to-run spread, e.g. '    1.234 ±3%'."""
    spread = f"±{r[name + '_spread'] * 100:.0f}%"
    return f"{_fmt_t(r[name + '_s'])} {spread:>5}"


def _fmt_unstable(r):
    """What the table prints for a row that never settled: no figure, the spreads."""
    names = {"numpy": "NumPy", "resident": "resident", "round_trip": "round trip"}
    spreads = ", ".join(f"{names[k]} ±{r[k + '_spread'] * 100:.0f}%" for k in FIGURES)
    why = r.get("doubt") or f"its blocks disagree by more than {UNSTABLE_SPREAD:.0%}"
    return (f"unstable, not a figure: {why}, after {r.get('attempts', 1)} measurements "
            f"({spreads})")


def print_table(res, prof):
    kind = "measured here" if prof.measured else "datasheet, not measured"
    print(f"pygpu {res['pygpu']}: n x n float32 matmul on {res['device']} ({res['link']})")
    print(f"prediction: {prof.name} ({kind})")
    print(f"  {'n':>6} {'NumPy ms':>14} | {'resident ms':>15} {'pred':>8} {'vs NumPy':>8} | "
          f"{'round trip ms':>15} {'pred':>8} {'vs NumPy':>8} | transfers per round trip")
    for r in res["rows"]:
        if r.get("unstable"):
            print(f"! {r['n']:>6} {_fmt_unstable(r)}")
            continue
        t = r["round_trip_transfers"]
        print(f"  {r['n']:>6} {_fmt_m(r, 'numpy'):>14} | {_fmt_m(r, 'resident'):>15} "
              f"{_fmt_t(r['predicted_resident_s']):>8} {r['speedup_resident']:>7.2f}x | "
              f"{_fmt_m(r, 'round_trip'):>15} {_fmt_t(r['predicted_round_trip_s']):>8} "
              f"{r['speedup_round_trip']:>7.2f}x | h2d {t['h2d_count']} ({t['h2d_bytes'] / 1024:.0f} KiB), "
              f"d2h {t['d2h_count']} ({t['d2h_bytes'] / 1024:.0f} KiB)")
    unstable = sum(1 for r in res["rows"] if r.get("unstable"))
    retried = sum(1 for r in res["rows"] if r.get("attempts", 1) > 1 and not r.get("unstable"))
    print(f"  (each figure: the median of {BLOCKS} blocks of repeats, ± how far the blocks "
          f"disagree; {retried} row(s) measured again until within {UNSTABLE_SPREAD:.0%}"
          + (f"; {unstable} row(s) marked ! never settled: the machine was busy, re-run "
             "before trusting them)" if unstable else ")"))
    c = res["crossover"]
    meas = (f"n = {c['measured_n']}" + (f" (between {c['measured_after']} and {c['measured_n']})"
                                        if c["measured_after"] else "")
            if c["measured_n"] else "none in this range")
    pred = f"n = {c['predicted_n']}" if c["predicted_n"] else "none in this range"
    print(f"crossover (round trip beats NumPy): measured {meas}; predicted {pred}")
    if res["device"].startswith("sim"):
        print("  (sim computes on this CPU, as NumPy does: the round trip only adds the link's cost;"
              " --profile h100_pcie predicts a real GPU)")


def print_training(tr, rep):
    print(f"\nMLP training with pygpu.Trainer, {tr['steps']} steps (784-512-10, batch 64, one "
          f"epoch), loss {tr['loss']:.3f}; its transfers, as counted:")
    for r in rep.heavy:
        print(f"  heavy request: {r.direction} {r.nbytes / 2**20:.2f} MiB in {r.transfers} "
              f"transfers at {r.call_site}")
    lt = rep.light
    print(f"  light requests: {lt['requests']} ({lt['transfers']} transfers, typical "
          f"{lt['typical_bytes']} B): " + ", ".join(f"{k} x{v}" for k, v in lt["by_kind"].items()))
    print(f"  verdict: {rep.verdict}")


if __name__ == "__main__":
    raise SystemExit(main())
