# bench_conv.py - issue 35's convolution speed rows, pygpu beside PyTorch's CPU path (oneDNN),
# each side timed in alternating blocks in one process, THREADS threads for both.
#
# Rows (each a training step or an inference call, the same model and weights on both sides):
#   cifar@64, cifar@256  a CIFAR-sized CNN: (conv3x3-BN-ReLU-maxpool) x2, conv3x3-BN-ReLU,
#                        global average pool, Linear; SGD momentum, one training step of a
#                        batch of 3x32x32 (target pygpu >= 1.0x torch)
#   lenet@64             LeNet-5 (conv5x5-ReLU-maxpool x2, three Linear), 1x28x28 (>= 1.2x)
#   dwsep@64             a depthwise-separable block: depthwise 3x3 (64 channels) - BN - ReLU -
#                        pointwise 1x1 (64 -> 128) - BN - ReLU on 64x32x32 (>= 1.0x)
#   infer1               batch-1 inference latency of the CIFAR CNN in eval (<= torch's)
#   compact@64           the CIFAR CNN with half of each conv's output channels pruned
#                        (prune.ln_structured, dim=0), inference at batch 64: the pruned
#                        model (masks) on the "torch" side of the table, prune.compact's
#                        smaller model on the pygpu side (the ratio is compacted's speedup)
# Each configuration is warmed up, then ROUNDS rounds: in each, every configuration runs a
# block of STEPS steps after a short pause (the other side's threads go to sleep), the order
# rotating; a row's ratio (torch time / pygpu time: > 1 means pygpu is faster) is taken within
# a round, and the table gives the median and range over the rounds, and CPU-seconds.
#   PYTHONPATH=. python benchmarks/bench_conv.py          # PYGPU_BENCH_ROUNDS, _STEPS, _ONLY
# PYGPU_BENCH_ONLY=cifar@64:pygpu (a row and a side) runs that alone, for a profile.
import os
import statistics
import sys
import time

THREADS = int(os.environ.get("PYGPU_BENCH_THREADS", "2"))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import pygpu  # noqa: E402

ROUNDS = int(os.environ.get("PYGPU_BENCH_ROUNDS", "7"))
STEPS = int(os.environ.get("PYGPU_BENCH_STEPS", "10"))
PAUSE_S = 0.25


def cifar_cnn(lib, classes=10):
    nn = lib.nn
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(64, 128, 3, padding=1), nn.BatchNorm2d(128), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, classes))


def lenet(lib):
    nn = lib.nn
    return nn.Sequential(
        nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(16 * 5 * 5, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))


def dwsep(lib):
    nn = lib.nn
    return nn.Sequential(
        nn.Conv2d(64, 64, 3, padding=1, groups=64, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
        nn.Conv2d(64, 128, 1, bias=False), nn.BatchNorm2d(128), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 10))


ROWS = {  # name: (model, input shape without batch, batch, training)
    "cifar@64": (cifar_cnn, (3, 32, 32), 64, True),
    "cifar@256": (cifar_cnn, (3, 32, 32), 256, True),
    "lenet@64": (lenet, (1, 28, 28), 64, True),
    "dwsep@64": (dwsep, (64, 32, 32), 64, True),
    "infer1": (cifar_cnn, (3, 32, 32), 1, False),
}


def same_weights(pg_model, t_model):
    sd = {k: torch.tensor(v.detach().numpy()) for k, v in pg_model.state_dict().items()}
    t_model.load_state_dict(sd)


def compact_sides():
    """compact@64: (pruned block, compacted block), both pygpu, inference in eval."""
    from pygpu.nn.utils import prune
    pygpu.manual_seed(0)
    model = cifar_cnn(pygpu)
    x = pygpu.tensor(np.random.default_rng(0).standard_normal((64, 3, 32, 32)).astype(
        np.float32))
    model(x)  # running statistics
    for m in model:
        if isinstance(m, pygpu.nn.Conv2d):
            prune.ln_structured(m, "weight", 0.5, 2, dim=0)
    model.eval()
    small = prune.compact(model)

    def block_of(net):
        def block(n=STEPS):
            with pygpu.no_grad():
                for _ in range(n):
                    out = net(x)
            return float(out.sum().item())
        return block
    return block_of(model), block_of(small)


def make_side(lib, row, pg_model=None):
    make, shape, batch, training = ROWS[row]
    if lib is pygpu:
        pygpu.manual_seed(0)
        model = make(pygpu)
    else:
        model = make(torch)
        same_weights(pg_model, model)
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal((batch,) + shape).astype(np.float32) for _ in range(2)]
    ys = [rng.integers(0, 10, batch) for _ in range(2)]
    if lib is pygpu:
        X = [pygpu.tensor(x) for x in xs]
        Y = [pygpu.tensor(y) for y in ys]
    else:
        X = [torch.tensor(x) for x in xs]
        Y = [torch.tensor(y) for y in ys]
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = lib.nn.CrossEntropyLoss()
    if not training:
        model.eval()

    def step(i):
        x, y = X[i % 2], Y[i % 2]
        if training:
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            return loss
        with lib.no_grad():
            return model(x)

    def block(n=STEPS):
        for i in range(n):
            out = step(i)
        return float(out.sum().item())  # waits for the last step

    return model, block


def main():
    torch.set_num_threads(THREADS)
    pygpu.set_num_threads(THREADS)
    only = os.environ.get("PYGPU_BENCH_ONLY")
    rows = [r for r in ROWS if not only or only.split(":")[0] == r]
    sides = {}
    for row in rows:
        pg_model, pg_block = make_side(pygpu, row)
        _, t_block = make_side(torch, row, pg_model)
        sides[(row, "pygpu")] = pg_block
        sides[(row, "torch")] = t_block
    if not only or only.split(":")[0] == "compact@64":
        rows.append("compact@64")
        sides[("compact@64", "torch")], sides[("compact@64", "pygpu")] = compact_sides()
    if only and ":" in only:
        sides = {k: v for k, v in sides.items() if k[1] == only.split(":")[1]}
    for b in sides.values():
        b(2)  # warm up
    keys = list(sides)
    times = {k: [] for k in keys}
    cpu = {k: [] for k in keys}
    for r in range(ROUNDS):
        order = keys[r % len(keys):] + keys[:r % len(keys)]
        for k in order:
            time.sleep(PAUSE_S)
            c0, t0 = time.process_time(), time.perf_counter()
            sides[k]()
            times[k].append((time.perf_counter() - t0) / STEPS)
            cpu[k].append((time.process_time() - c0) / STEPS)
    print(f"threads {THREADS}, rounds {ROUNDS}, {STEPS} steps a block, pygpu {pygpu.__version__},"
          f" torch {torch.__version__}, load average {os.getloadavg()[0]:.1f}")
    print("| row | pygpu ms/step | torch ms/step | torch/pygpu median (range) | CPU-s pygpu / torch |")
    print("|---|---|---|---|---|")
    for row in rows:
        p, t = times.get((row, "pygpu")), times.get((row, "torch"))
        if not p or not t:
            print(f"| {row} | {statistics.median(p or t) * 1e3:.2f} | | | |")
            continue
        ratios = [b / a for a, b in zip(p, t)]
        print(f"| {row} | {statistics.median(p) * 1e3:.2f} | {statistics.median(t) * 1e3:.2f} | "
              f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f}) | "
              f"{statistics.median(cpu[(row, 'pygpu')]) * 1e3:.1f} / "
              f"{statistics.median(cpu[(row, 'torch')]) * 1e3:.1f} ms |")


if __name__ == "__main__":
    main()
