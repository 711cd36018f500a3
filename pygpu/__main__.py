"""python -m pygpu: the classic experiment, measured on this machine.

A 200x200 float32 matmul three ways: with NumPy; on a device with the data
already there (resident); and on the device with a round trip every time
(copy in, multiply, copy out). Next to each time, pygpu's transfer counters
show what crossed the link. The device is cuda:0 when present, else sim:0
(with the sim link model set to a PCIe-like 16 GB/s and 10 us per transfer,
so that the cost of a round trip shows on a machine without a GPU)."""
import argparse
import time

import numpy as np

import pygpu


def best_of(fn, repeats, number):
    # NumPy and pygpu each load an OpenBLAS, whose idle threads spin for a while
    # after a call: let the other library's threads go to sleep before timing.
    time.sleep(0.3)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t0) / number)
    return best


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m pygpu", description=__doc__.splitlines()[0])
    p.add_argument("-n", type=int, default=200, help="matrix size (default 200)")
    p.add_argument("--device", default=None, help="device to use (default: cuda:0, else sim:0)")
    p.add_argument("--number", type=int, default=50, help="calls per timing (default 50)")
    args = p.parse_args(argv)
    dev = args.device or ("cuda:0" if pygpu.cuda.is_available() else "sim:0")
    if dev.startswith("sim") and not args.device:
        pygpu.sim.configure(latency_us=10, h2d_gbps=16, d2h_gbps=16)
        link = "sim link model: 10 us + 16 GB/s each way (a simulation of PCIe)"
    else:
        link = "real link" if dev.startswith("cuda") else "sim link model off"
    n = args.n
    rng = np.random.default_rng(0)
    a_np = rng.standard_normal((n, n), dtype=np.float32)
    b_np = rng.standard_normal((n, n), dtype=np.float32)
    a_cpu, b_cpu = pygpu.from_numpy(a_np), pygpu.from_numpy(b_np)
    a_dev, b_dev = a_cpu.to(dev), b_cpu.to(dev)

    def numpy_matmul():
        return a_np @ b_np

    def pygpu_cpu():
        return a_cpu @ b_cpu

    def resident():
        (a_dev @ b_dev).wait()

    def round_trip():
        (a_cpu.to(dev) @ b_cpu.to(dev)).to("cpu")

    print(f"pygpu {pygpu.__version__}: {n}x{n} float32 matmul, device {dev} ({link})")
    print(f"{'':<28}{'time/call':>12}{'vs NumPy':>10}   transfers per call")
    t_np = best_of(numpy_matmul, 5, args.number)
    rows = [("NumPy", t_np, None)]
    for label, fn in (("pygpu cpu", pygpu_cpu), (f"{dev}, data resident", resident),
                      (f"{dev}, round trip", round_trip)):
        fn()
        pygpu.synchronize()
        with pygpu.track() as tr:
            fn()
            pygpu.synchronize()
        rows.append((label, best_of(fn, 5, args.number), tr))
    for label, t, tr in rows:
        xfer = "-" if tr is None else (
            f"h2d {tr.h2d_count} ({tr.h2d_bytes / 1024:.0f} KiB), d2h {tr.d2h_count} "
            f"({tr.d2h_bytes / 1024:.0f} KiB)")
        print(f"{label:<28}{t * 1e6:>10.1f}us{t_np / t:>9.2f}x   {xfer}")
    print("\nThe device only pays off when the data stays there: move weights once, "
          "batches each step.")
    print(pygpu.stats())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
