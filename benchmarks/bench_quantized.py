"""bench_quantized.py - int8 inference of the MLP 784-512-512-10, pygpu against PyTorch.

Issue 28's run: one process, the same thread count for both libraries (2 by default), the
same weights, five implementations timed in ALTERNATING blocks (one block of each in turn,
a short pause between, ROUNDS rounds; the median block per implementation is reported), at
batch 512 (throughput) and batch 1 (latency):
    pygpu-fp32      pygpu.nn.MLP, float32 (fused linear+bias+ReLU)
    pygpu-dynamic   pygpu.quantization.quantize_dynamic (int8 weights, per-row u8 per call)
    pygpu-static    prepare + 8 calibration batches + convert (u8 between the layers)
    torch-fp32      the same model in PyTorch
    torch-dynamic   torch.ao.quantization.quantize_dynamic (fbgemm)
Targets (issue 28, on a CPU with AVX512_VNNI): at batch 512 pygpu-dynamic >= torch-dynamic and
pygpu-static >= 1.2x torch-dynamic; at batch 1 pygpu's int8 latency <= torch-dynamic's.

    python benchmarks/bench_quantized.py [--threads 2] [--rounds 7]
"""
import argparse
import os
import statistics
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import pygpu  # noqa: E402
from pygpu import nn, quantization as Q  # noqa: E402

SIZES = (784, 512, 512, 10)


def build(torch, threads):
    pygpu.set_num_threads(threads)
    torch.set_num_threads(threads)
    pygpu.manual_seed(0)
    fp32 = nn.MLP(list(SIZES))
    dyn = Q.quantize_dynamic(fp32)
    prepared = Q.prepare(fp32)
    rng = np.random.default_rng(1)
    for _ in range(8):
        prepared(pygpu.tensor(rng.random((256, SIZES[0]), dtype=np.float32)))
    static = Q.convert(prepared)
    from _torch_mlp import torch_mlp
    tm = torch_mlp(torch, SIZES).eval()
    with torch.no_grad():
        for i, layer in enumerate(fp32.layers):
            tm[2 * i].weight.copy_(torch.from_numpy(layer.weight.detach().numpy()))
            tm[2 * i].bias.copy_(torch.from_numpy(layer.bias.detach().numpy()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tq = torch.ao.quantization.quantize_dynamic(tm, {torch.nn.Linear}, dtype=torch.qint8)
    return {"pygpu-fp32": fp32, "pygpu-dynamic": dyn, "pygpu-static": static,
            "torch-fp32": tm, "torch-dynamic": tq}


def runner(name, model, torch, batch):
    x = np.random.default_rng(2).random((batch, SIZES[0]), dtype=np.float32)
    if name.startswith("torch"):
        xt = torch.from_numpy(x)

        def run():
            with torch.inference_mode():
                return model(xt)
    else:
        xp = pygpu.tensor(x)

        def run():
            with pygpu.no_grad():
                return model(xp)
    return run


def time_block(run, seconds):
    """Median seconds per call over one block of about `seconds`."""
    run()
    t0 = time.perf_counter()
    run()
    one = max(time.perf_counter() - t0, 1e-6)
    reps = max(3, int(seconds / one))
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        run()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--block", type=float, default=0.25, help="seconds per block")
    args = ap.parse_args()
    import torch
    models = build(torch, args.threads)
    print(f"MLP {'-'.join(map(str, SIZES))} inference, {args.threads} threads, pygpu int8 kernel "
          f"{pygpu._C._qgemm_kernel()!r}, torch {torch.__version__} "
          f"({torch.backends.quantized.engine}); {args.rounds} rounds of alternating blocks")
    for batch in (512, 1):
        runs = {n: runner(n, m, torch, batch) for n, m in models.items()}
        samples = {n: [] for n in runs}
        for _ in range(args.rounds):
            for n, run in runs.items():
                samples[n].append(time_block(run, args.block))
                time.sleep(0.05)
        med = {n: statistics.median(s) for n, s in samples.items()}
        ref = med["torch-dynamic"]
        print(f"\nbatch {batch}:")
        print(f"  {'implementation':16s} {'per call':>12s} {'samples/s':>12s} {'vs torch-dynamic':>17s}")
        for n, t in med.items():
            print(f"  {n:16s} {t * 1e3:10.3f}ms {batch / t:12.0f} {ref / t:16.2f}x")


if __name__ == "__main__":
    main()
