# bench_bf16_panels.py - bf16-mixed training with and without the weights' pre-packed
# panels (csrc/backends/cpu/cpu_bf16_panels.h), against fp32, by CPU time.
#
# MLP 784-512-512-10, SGD momentum, batch B (64), pygpu's Trainer on the cpu device, T
# threads (2). The three configurations (fp32, bf16, bf16 with the panels) are interleaved,
# R rounds (5) of one 7,680-sample epoch each after a 0.1 s pause, and every ratio is taken
# within a round (paired), from each epoch's CPU-seconds (all threads of the process) and
# from the wall clock. On a shared, loaded machine read the CPU-time ratios; at T=1 they
# carry no pool spin-waits.
#   T=1 R=9 PYTHONPATH=. python benchmarks/bench_bf16_panels.py
import os
import statistics
import time

import numpy as np

import pygpu

T, B, R, N = (int(os.environ.get(k, d)) for k, d in (("T", 2), ("B", 64), ("R", 5), ("N", 7680)))


def config(precision, panels):
    pygpu.manual_seed(0)
    model = pygpu.nn.MLP([784, 512, 512, 10], activation="relu")
    opt = pygpu.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    trainer = pygpu.Trainer(model, opt, pygpu.nn.CrossEntropyLoss(), device="cpu",
                            precision=precision)

    def run():
        pygpu._C._bf16_panels(panels)  # off frees the panels: each epoch's first step packs
        try:
            trainer.fit(X, y, epochs=1, batch_size=B, progress=False, shuffle=False)
        finally:
            pygpu._C._bf16_panels(False)  # the default
    return run


def paired(res, a, b, i):
    r = [x / y for x, y in zip(res[a][i], res[b][i])]
    return f"{statistics.median(r):.2f}x ({min(r):.2f}-{max(r):.2f})"


if __name__ == "__main__":
    pygpu.set_num_threads(T)
    rng = np.random.default_rng(0)
    X = rng.random((N, 784), dtype=np.float32)
    y = rng.integers(0, 10, N).astype(np.int64)
    runs = {"fp32": config("32", False), "bf16": config("bf16-mixed", False),
            "bf16-panels": config("bf16-mixed", True)}
    for run in runs.values():
        run()  # warm-up
    res = {k: ([], []) for k in runs}  # samples/s, CPU-s per epoch
    for _ in range(R):
        for k, run in runs.items():
            time.sleep(0.1)
            c0, t0 = time.process_time(), time.perf_counter()
            run()
            res[k][0].append(N / (time.perf_counter() - t0))
            res[k][1].append(time.process_time() - c0)
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {T} threads, batch {B}, "
          f"ISA {pygpu.cpu_isa()}, bf16 kernel {pygpu._C._half_gemm_kernel(pygpu.bfloat16)}, "
          f"{R} rounds, load average {os.getloadavg()[0]:.1f}")
    for k, (w, c) in res.items():
        print(f"  {k:12} {statistics.median(w):8,.0f} samples/s   {statistics.median(c):.3f} CPU-s/epoch")
    print("CPU time: fp32/bf16", paired(res, "fp32", "bf16", 1), "  fp32/bf16-panels",
          paired(res, "fp32", "bf16-panels", 1), "  panels on/off",
          paired(res, "bf16", "bf16-panels", 1))
    print("wall:     bf16/fp32", paired(res, "bf16", "fp32", 0), "  bf16-panels/fp32",
          paired(res, "bf16-panels", "fp32", 0), "  panels on/off",
          paired(res, "bf16-panels", "bf16", 0))
