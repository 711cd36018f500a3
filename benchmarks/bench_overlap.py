# bench_overlap.py - does the DataLoader hide a batch's copy behind the previous batch's compute?
#
# Issue 39's measurement (seed 003's headline: computing and copying run in parallel). sim:0
# with the link model on (10 us latency, 1 GB/s each way); 24 batches of 2048x512 float32
# (4 MiB each, with int64 labels) from DataLoader(X, y, 2048, device="sim:0"); each batch gets
# as many `xb = xb * 1.0001` as balance its transfer time, then synchronize(). Per round, in
# this order, each timed alone:
#   transfer  the epoch with no compute (the loader's copies only);
#   compute   the same multiplies on batches already resident on sim:0 (no copies);
#   epoch     the loader and the multiplies together (prefetch=2, the default);
# and the ratio epoch / max(transfer, compute): 1.0 is full overlap, 2.0 none.
# The sources are the arrays (X, y) and a TensorDataset of the same arrays, alternately.
# Then one more epoch per source under pygpu.sim.timeline says where the prefetch waited:
# how long the copy queue stood idle between transfers, how many copies were ordered after
# compute (their memory still in use), and which threads ran the copies (the copy engine's
# worker only: a host thread that ran one is issue 39's lost overlap).
# --host-ms N adds N ms of Python busy work per batch (a slower host, as on the reporter's
# Zen 1, where the gather and the loop cost more than here).
#
#     PYTHONPATH=. python benchmarks/bench_overlap.py [--rounds 6] [--source arrays tensors]
#                                                     [--muls N] [--host-ms N]
#
# A script, not a pytest-benchmark file: the figure is a ratio of three timings taken together.
import argparse
import collections
import os
import time

import numpy as np

import pygpu
from pygpu.data import DataLoader, TensorDataset

D = 512


def loader_for(source, X, y, B, prefetch=2):
    if source == "tensors":
        return DataLoader(TensorDataset(X, y), batch_size=B, device="sim:0", prefetch=prefetch)
    return DataLoader(X, y, B, device="sim:0", prefetch=prefetch)


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--source", nargs="+", default=["arrays", "tensors"])
    ap.add_argument("--muls", type=int, default=0, help="multiplies per batch (0: balance)")
    ap.add_argument("--host-ms", type=float, default=0.0, help="Python busy work per batch")
    ap.add_argument("--batch", type=int, default=2048, help="rows of 512 float32 per batch")
    ap.add_argument("--batches", type=int, default=24)
    args = ap.parse_args()
    B, NB = args.batch, args.batches

    rng = np.random.default_rng(0)
    X = rng.standard_normal((B * NB, D)).astype(np.float32)
    y = rng.integers(0, 10, B * NB).astype(np.int64)
    resident = [pygpu.tensor(X[i * B:(i + 1) * B], device="sim:0") for i in range(NB)]
    pygpu.sim.configure(latency_us=10, h2d_gbps=1, d2h_gbps=1)

    def transfer(source):
        def run():
            for _ in loader_for(source, X, y, B):
                pass
            pygpu.synchronize()
        return run

    def compute(muls):
        def run():
            for xb in resident:
                for _ in range(muls):
                    xb = xb * 1.0001
            pygpu.synchronize()
        return run

    def epoch(source, muls):
        def run():
            for xb, _ in loader_for(source, X, y, B):
                for _ in range(muls):
                    xb = xb * 1.0001
                t = time.perf_counter()
                while time.perf_counter() - t < args.host_ms / 1e3:
                    pass
            pygpu.synchronize()
        return run

    transfer("arrays")()
    muls = args.muls
    if not muls:  # as many multiplies as balance one batch's transfer
        one = min(timed(compute(8)) for _ in range(3)) / 8
        muls = max(1, round(min(timed(transfer("arrays")) for _ in range(2)) / one))
    print(f"sim:0, link 10 us + 1 GB/s; {NB} batches of {B}x{D} float32; {muls} multiplies a batch;"
          f" sim threads per device {pygpu.sim.num_threads(0)}; loadavg "
          f"{' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    print(f"{'source':8} {'round':>5} {'transfer ms':>12} {'compute ms':>11} {'epoch ms':>9} "
          f"{'ratio':>6}")
    ratios = {s: [] for s in args.source}
    for r in range(args.rounds):
        for source in args.source:
            tr = timed(transfer(source))
            co = timed(compute(muls))
            ep = timed(epoch(source, muls))
            ratio = ep / max(tr, co)
            ratios[source].append(ratio)
            print(f"{source:8} {r:5d} {tr * 1e3:12.1f} {co * 1e3:11.1f} {ep * 1e3:9.1f} "
                  f"{ratio:6.2f}")
            time.sleep(0.2)
    for source, rs in ratios.items():
        rs = sorted(rs)
        print(f"{source}: ratio median {rs[len(rs) // 2]:.2f}, best {rs[0]:.2f}, worst {rs[-1]:.2f}, "
              f"within 1.25x in {sum(x <= 1.25 for x in rs)} of {len(rs)}")
    for source in args.source if hasattr(pygpu.sim, "timeline") else ():  # (older builds)
        with pygpu.sim.timeline("sim:0") as tl:
            ep = timed(epoch(source, muls))
        copies = sorted((s for s in tl.spans if s.queue == "copy"), key=lambda s: s.start)
        ops = [s for s in tl.spans if s.queue == "compute"]
        idle = sum(max(0.0, b.start - a.end) for a, b in zip(copies, copies[1:]))
        behind = sum(any(q == "sim:0 compute" for q, _ in s.after) for s in copies)
        print(f"timeline, {source}: epoch {ep * 1e3:.1f} ms; copy queue busy "
              f"{sum(s.end - s.start for s in copies) * 1e3:.1f} ms, idle between copies "
              f"{idle * 1e3:.1f} ms; compute busy {sum(s.end - s.start for s in ops) * 1e3:.1f} "
              f"ms; {behind} of {len(copies)} copies ordered after compute; copies run by "
              f"{dict(collections.Counter(s.thread for s in copies))}")
    pygpu.sim.configure()


if __name__ == "__main__":
    main()
