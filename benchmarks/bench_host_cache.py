# bench_host_cache.py - what the cpu device's caching allocator saves in a training step.
#
# Three training steps, pygpu with the host cache on (the default), pygpu with it off
# (pygpu.cpu.set_cache_limit(0): every large block goes back to the C library at once, as
# plain malloc did before, each step a fresh mmap and its page faults), and PyTorch, in
# alternating blocks in one process, THREADS threads each:
#   mlp@64     784-512-512-10 MLP, SGD momentum 0.9, batch 64 (Trainer.fit on the cpu)
#   cifar@64   bench_conv.py's CIFAR CNN (conv-BN-ReLU-pool x2, conv-BN-ReLU, pool, Linear)
#   block@32   a pre-norm Transformer encoder block (d=256, 4 heads, MLP 1024, T=128,
#              batch 32) written with tensor ops on both sides, AdamW
# A figure is the median over ROUNDS blocks of STEPS steps of the CPU time per step
# (time.process_time: the whole process, page faults' kernel time included; steadier than the
# wall clock on a shared machine), of the wall time, and of the minor page faults per step
# (getrusage: the process's, torch's included in its own rows); then PyTorch over pygpu (> 1:
# pygpu faster). With a build that has no host cache (no pygpu.cpu) the script runs "pygpu"
# and "torch" only: run it on the old build and this one, in alternation, for before/after.
# "cache off" in the same process is not quite the old build: glibc's malloc adapts its mmap
# threshold to what was freed, and torch's frees move it too.
#   PYTHONPATH=. python benchmarks/bench_host_cache.py   # PYGPU_BENCH_ROUNDS, _STEPS, _ONLY
import os
import resource
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
THREADS = int(os.environ.get("PYGPU_BENCH_THREADS", "2"))
ROUNDS = int(os.environ.get("PYGPU_BENCH_ROUNDS", "7"))
STEPS = int(os.environ.get("PYGPU_BENCH_STEPS", "10"))
PAUSE_S = 0.2

import numpy as np  # noqa: E402
import torch  # noqa: E402

import pygpu  # noqa: E402
import bench_conv  # noqa: E402
import speed_table  # noqa: E402


def mlp_sides():
    rng = np.random.default_rng(0)
    n = 64 * STEPS
    X = rng.random((n, 784), dtype=np.float32)
    y = rng.integers(0, 10, n).astype(np.int64)
    pg = speed_table.pygpu_epoch(X, y, 64)
    tt = speed_table.torch_epoch(X, y, 64)
    return (lambda: pg(n)), (lambda: tt(n))


def cifar_sides():
    model, pg = bench_conv.make_side(pygpu, "cifar@64")
    _, tt = bench_conv.make_side(torch, "cifar@64", model)
    return (lambda: pg(STEPS)), (lambda: tt(STEPS))


D, HEADS, HIDDEN, T, BATCH = 256, 4, 1024, 128, 32


def block_side(lib, weights):
    nn = lib.nn
    ln1, ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
    qkv, proj = nn.Linear(D, 3 * D), nn.Linear(D, D)
    fc1, fc2 = nn.Linear(D, HIDDEN), nn.Linear(HIDDEN, D)
    mods = [ln1, ln2, qkv, proj, fc1, fc2]
    params = [p for m in mods for p in m.parameters()]
    with lib.no_grad():
        for p, w in zip(params, weights):
            p.copy_(lib.tensor(w) if lib is pygpu else torch.tensor(w))
    opt = lib.optim.AdamW(params, lr=1e-4)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((BATCH, T, D)).astype(np.float32)
    x = pygpu.tensor(x) if lib is pygpu else torch.tensor(x)
    hd = D // HEADS

    def step():
        h = ln1(x)
        q, k, v = (t.reshape(BATCH * HEADS, T, hd) for t in  # (B*H, T, hd) each
                   qkv(h).reshape(BATCH, T, 3, HEADS, hd).permute(2, 0, 3, 1, 4).unbind(0))
        att = (q @ k.transpose(-2, -1)) * (hd ** -0.5)  # (B*H, T, T)
        att = lib.softmax(att, dim=-1)
        o = (att @ v).reshape(BATCH, HEADS, T, hd).transpose(1, 2).reshape(BATCH, T, D)
        r = x + proj(o)
        out = r + fc2(fc1(ln2(r)).relu())
        loss = (out * out).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    def run():
        for _ in range(STEPS):
            loss = step()
        return float(loss.item())

    return run


def block_sides():
    rng = np.random.default_rng(0)
    shapes = [(D,), (D,), (D,), (D,), (3 * D, D), (3 * D,), (D, D), (D,), (HIDDEN, D), (HIDDEN,),
              (D, HIDDEN), (D,)]
    weights = [(rng.standard_normal(s) * (0.02 if len(s) > 1 else 0.0) +
                (1.0 if len(s) == 1 and i < 4 and i % 2 == 0 else 0.0)).astype(np.float32)
               for i, s in enumerate(shapes)]
    return block_side(pygpu, weights), block_side(torch, weights)


ROWS = {"mlp@64": mlp_sides, "cifar@64": cifar_sides, "block@32": block_sides}


def main():
    torch.set_num_threads(THREADS)
    pygpu.set_num_threads(THREADS)
    only = os.environ.get("PYGPU_BENCH_ONLY")
    has_cache = hasattr(pygpu, "cpu")  # an older build (no host cache): pygpu and torch only
    limit = pygpu.cpu.cache_limit() if has_cache else None
    print(f"host cache limit {limit} bytes; {THREADS} threads; {ROUNDS} rounds of {STEPS} steps; "
          f"ISA {pygpu._C._cpu_isa(False)}; "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"{'row':<10}{'side':<11}{'cpu ms/step':>12}{'wall ms/step':>13}{'faults/step':>12}")
    for row, make in ROWS.items():
        if only and only != row:
            continue
        pg, tt = make()

        def cache_on():
            pygpu.cpu.set_cache_limit(limit)
            return pg()

        def cache_off():
            pygpu.cpu.set_cache_limit(0)
            try:
                return pg()
            finally:
                pygpu.cpu.set_cache_limit(limit)

        sides = {"cache on": cache_on, "cache off": cache_off, "torch": tt}
        if not has_cache:
            sides = {"pygpu": pg, "torch": tt}
        for f in sides.values():
            f()  # warm-up
        cpu = {k: [] for k in sides}
        wall = {k: [] for k in sides}
        faults = {k: [] for k in sides}
        keys = list(sides)
        for r in range(ROUNDS):
            for k in keys[r % len(keys):] + keys[:r % len(keys)]:
                time.sleep(PAUSE_S)
                f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
                c0, t0 = time.process_time(), time.perf_counter()
                sides[k]()
                cpu[k].append((time.process_time() - c0) / STEPS * 1e3)
                wall[k].append((time.perf_counter() - t0) / STEPS * 1e3)
                faults[k].append((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / STEPS)
        med = {k: (statistics.median(cpu[k]), statistics.median(wall[k]),
                   statistics.median(faults[k])) for k in keys}
        for k in keys:
            print(f"{row:<10}{k:<11}{med[k][0]:>12.2f}{med[k][1]:>13.2f}{med[k][2]:>12.0f}")
        t = med["torch"]
        for k in keys[:-1]:
            print(f"{row:<10}torch/pygpu({k}) cpu {t[0] / med[k][0]:.2f}x wall "
                  f"{t[1] / med[k][1]:.2f}x", flush=True)


if __name__ == "__main__":
    main()
