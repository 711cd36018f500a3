# bench_dp_timeline.py - where DataParallel over two sim devices loses against one device.
#
# issue 39's row: the MLP 784-512-512-10 at batch 512 (SGD momentum 0.9), sim:0 alone against
# nn.DataParallel over sim:0 and sim:1, one compute thread per device (PYGPU_SIM_THREADS=1),
# as benchmarks/bench_parallel.py runs it, but in one process and in alternating rounds:
#   - the speedup per round (wall clock), and by CPU time (twice one device's CPU-seconds per
#     epoch over two devices': the speedup with a core per thread and no waiting);
#   - the CPU milliseconds per epoch of each thread (/proc/self/task/*/schedstat): who runs
#     each device's queue (a thread waiting for sim:0 runs its tasks itself);
#   - six steps under pygpu.sim.timeline on both devices: the time both computed, only one,
#     or neither, and which ops sim:0 ran while sim:1 had nothing to do;
#   - twelve steps of each, six rounds, replayed with each task's CPU time (Span.cpu) on an ideal host,
#     every queue a core of its own: the speedup the step's structure (its serial part, the
#     waits between the devices) allows, which the load moves only through the tasks' own
#     CPU time, so a change to the structure shows on a loaded machine too.
#
#     PYTHONPATH=. python benchmarks/bench_dp_timeline.py [--rounds 4]
import argparse
import collections
import os
import time

os.environ.setdefault("PYGPU_SIM_DEVICES", "2")
os.environ.setdefault("PYGPU_SIM_THREADS", "1")

import numpy as np  # noqa: E402
import pygpu  # noqa: E402
from pygpu import nn  # noqa: E402

N, BATCH, SIZES = 15360, 512, [784, 512, 512, 10]


def setup(ndev, x, y):
    pygpu.manual_seed(0)
    model = nn.MLP(SIZES).to("sim:0")
    net = model if ndev == 1 else nn.DataParallel(model, device_ids=list(range(ndev)))
    opt = pygpu.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    xs = [pygpu.tensor(x[i:i + BATCH], device="sim:0") for i in range(0, N, BATCH)]
    ys = [pygpu.tensor(y[i:i + BATCH], device="sim:0") for i in range(0, N, BATCH)]

    def epoch(steps=None):
        for k, (xb, yb) in enumerate(zip(xs, ys)):
            if steps is not None and k >= steps:
                break
            opt.zero_grad()
            loss_fn(net(xb), yb).backward()
            opt.step()
        pygpu.synchronize()
    return epoch


def thread_ms():
    out = collections.Counter()
    for t in os.listdir("/proc/self/task"):
        try:
            name = open(f"/proc/self/task/{t}/comm").read().strip()
            out[(name, t)] = int(open(f"/proc/self/task/{t}/schedstat").read().split()[0]) / 1e6
        except OSError:
            pass
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--replay-steps", type=int, default=12)
    ap.add_argument("--replay-rounds", type=int, default=6)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, 784)).astype(np.float32)
    y = rng.integers(0, 10, N)
    ep = {1: setup(1, x, y), 2: setup(2, x, y)}
    for k in ep:
        ep[k]()
    wall, cpu = {1: [], 2: []}, {1: [], 2: []}
    for r in range(args.rounds):
        for k in (1, 2) if r % 2 == 0 else (2, 1):
            time.sleep(0.2)
            c0, t0 = time.process_time(), time.perf_counter()
            ep[k]()
            wall[k].append(time.perf_counter() - t0)
            cpu[k].append(time.process_time() - c0)
    speedups = [a / b for a, b in zip(wall[1], wall[2])]
    print(f"loadavg {' '.join(f'{v:.2f}' for v in os.getloadavg())}; 1 device "
          f"{N / min(wall[1]):,.0f} samples/s, 2 devices {N / min(wall[2]):,.0f}; speedup per "
          f"round {', '.join(f'{s:.2f}' for s in speedups)}; by CPU time "
          f"{2 * min(cpu[1]) / min(cpu[2]):.2f} (CPU-s per epoch {min(cpu[1]):.3f} / "
          f"{min(cpu[2]):.3f})")
    for k in (1, 2):
        a = thread_ms()
        ep[k]()
        b = thread_ms()
        per = collections.Counter()
        for key, v in b.items():
            per[key[0]] += v - a.get(key, 0.0)
        print(f"{k} device(s), CPU ms per epoch by thread: "
              + ", ".join(f"{name} {v:.0f}" for name, v in per.most_common() if v >= 1))
    with pygpu.sim.timeline(0) as t0, pygpu.sim.timeline(1) as t1:
        ep[2](6)
    comp = [(0, s) for s in t0.spans if s.queue == "compute"] + \
           [(1, s) for s in t1.spans if s.queue == "compute"]
    state_time, total = busy_states(comp)
    alone = collections.Counter()
    for d, s in comp:
        if d == 0:
            overlap = sum(max(0.0, min(s.end, o.end) - max(s.start, o.start))
                          for dd, o in comp if dd == 1)
            alone[s.name] += (s.end - s.start) - overlap
    print(f"6 steps, {total * 1e3:.1f} ms: " + ", ".join(
        f"{k} {v * 1e3:.1f} ms ({v / total:.0%})" for k, v in state_time.most_common()))
    print("sim:0 computing while sim:1 is not, by op (ms): " + ", ".join(
        f"{k} {v * 1e3:.1f}" for k, v in alone.most_common(6)))
    print("sim:0's ops run by: " + ", ".join(
        f"{k} {v}" for k, v in collections.Counter(s.thread for d, s in comp if d == 0).items()))
    # the same steps replayed with each task's CPU time: the step time the step's structure
    # allows when every queue has a core and nothing is preempted (a figure the load moves
    # only through the tasks' own CPU time)
    steps, rows = args.replay_steps, []
    for r in range(args.replay_rounds):  # alternating, as the rounds above: the load drifts
        for k in (1, 2) if r % 2 == 0 else (2, 1):
            with pygpu.sim.timeline(0) as t0, pygpu.sim.timeline(1) as t1:
                ep[k](steps)
            if k == 1:
                step1 = replay({0: t0.spans}, steps)[0]
            else:
                step2, busy, states = replay({0: t0.spans, 1: t1.spans}, steps)
        rows.append((step1, step2, busy, states))
    rows.sort(key=lambda row: row[0] / row[1])
    step1, step2, busy, states = rows[len(rows) // 2]
    print(f"replayed by CPU time ({steps} steps, {len(rows)} rounds: "
          f"{', '.join(f'{a / b:.2f}' for a, b, _, _ in rows)}): median round 1 device "
          f"{step1 * 1e3:.2f} ms per step, 2 devices {step2 * 1e3:.2f} ({step1 / step2:.2f}x); busy "
          + ", ".join(f"{q} {v:.0%}" for q, v in sorted(busy.items())) + "; " + ", ".join(
              f"{k} {v:.0%}" for k, v in states.most_common()))

def busy_states(comp):
    """comp: [(device 0 or 1, span)] of the compute queues -> (seconds with both devices
    computing, only one, neither: a Counter), total seconds."""
    start = min(s.start for _, s in comp)
    end = max(s.end for _, s in comp)
    events = sorted([(s.start, d, 1) for d, s in comp] + [(s.end, d, -1) for d, s in comp])
    busy, last, state_time = [0, 0], start, collections.Counter()
    for t, d, delta in events:
        state = ("both" if busy[0] and busy[1] else "sim:0 only" if busy[0] else
                 "sim:1 only" if busy[1] else "neither")
        state_time[state] += t - last
        last = t
        busy[d] += delta
    return state_time, end - start


class _Replayed:
    __slots__ = ("start", "end")

    def __init__(self, start, end):
        self.start, self.end = start, end


def replay(spans, steps):
    """Replay recorded timelines ({device: spans}) on an ideal host: each queue runs its
    tasks in order on a core of its own, each task takes its recorded CPU time (`Span.cpu`),
    and starts once the task before it on its queue and the other queues' tasks it was
    ordered after (`Span.after`, those recorded) have ended. The host is taken to be ahead of
    the devices, as it is in this benchmark. Returns (seconds per step, {queue: busy
    fraction}, the compute queues' both/one/neither fractions)."""
    tasks = [(f"sim:{d} {s.queue}", s) for d, ss in spans.items() for s in ss]
    end, last, busy = {}, collections.Counter(), collections.Counter()
    comp = []
    for q, s in sorted(tasks, key=lambda t: t[1].start):  # a recorded start: deps came first
        t0 = max([last[q]] + [end[a] for a in s.after if a in end])
        end[(q, s.seq)] = last[q] = t0 + s.cpu
        busy[q] += s.cpu
        if s.queue == "compute":
            comp.append((int(q[4]), _Replayed(t0, t0 + s.cpu)))
    total = max(end.values())
    states, span = busy_states(comp) if len(spans) > 1 else (collections.Counter(), total)
    return total / steps, {q: v / total for q, v in busy.items()}, \
        collections.Counter({k: v / span for k, v in states.items()})


if __name__ == "__main__":
    main()
