# bench_compile.py - what pygpu.compile costs and gains per call (issue 45). Two parts:
# - the wrapper: a compiled call in the default mode runs the original eagerly, so its cost is
#   the wrapper (pygpu/_dynamo/compiled_function.py), and Module.__call__'s check for a
#   Module.compile()d call costs every module call;
# - the replay: mode="reduce-overhead" captures a call as a node graph and replays it from C
#   (pygpu/_dynamo/replay.py), measured on the MLP 784-512-512-10 at batch 64: inference
#   under no_grad and a whole SGD training step compiled as a function, eager against compiled.
# Process CPU time (best of --reps blocks), which a loaded machine disturbs least; the load
# average is printed.
#
#   PYTHONPATH=. python benchmarks/bench_compile.py [--calls 100000] [--reps 7] [--steps 200]
import argparse
import os
import time

import pygpu


def per_call_ns(fn, arg, calls):
    t0 = time.process_time()
    for _ in range(calls):
        fn(arg)
    return (time.process_time() - t0) / calls * 1e9


def best(fn, arg, calls, reps):
    return min(per_call_ns(fn, arg, calls) for _ in range(reps))


class Identity(pygpu.nn.Module):
    def forward(self, t):
        return t


def mlp_rows(device, steps, reps, batch=64):
    """The MLP's inference and training step, eager against mode="reduce-overhead", each on a
    model and optimizer of its own (an eager step between replays would give the parameters
    new .grad tensors, and the compiled step would capture again)."""
    nn = pygpu.nn
    x = pygpu.randn(batch, 784, device=device)
    y = pygpu.randint(0, 10, (batch,), device=device)

    def make():
        pygpu.manual_seed(0)
        model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                              nn.Linear(512, 10)).to(device)
        opt = pygpu.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

        def infer(t):
            with pygpu.no_grad():
                return model(t)

        def train(t):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(t), y)
            loss.backward()
            opt.step()
            return loss
        return infer, train

    rows = []
    plain, compiled = make(), [pygpu.compile(f, mode="reduce-overhead") for f in make()]
    names = (f"MLP inference, batch {batch}", f"MLP training step (SGD), batch {batch}")
    for what, fn, comp in zip(names, plain, compiled):
        for _ in range(3):  # warm-up, probe, capture
            comp(x)
        eager = best(lambda t: fn(t).sum().item(), x, steps, reps)
        replayed = best(lambda t: comp(t).sum().item(), x, steps, reps)
        if comp._replayer.captures != 1:
            raise RuntimeError(f"{what}: not replayed ({comp._replayer.eager_reason})")
        rows.append((f"{what}: mode='reduce-overhead' ({device})", eager, replayed))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--calls", type=int, default=100000)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--steps", type=int, default=200, help="calls per block of the MLP rows")
    ap.add_argument("--device", default="cpu", help="cpu or sim: where the MLP rows run")
    args = ap.parse_args(argv)
    pygpu.set_num_threads(1)
    x = pygpu.ones(4)
    rows = []

    def add_one(t):
        return t + 1

    plain, compiled = best(add_one, x, args.calls, args.reps), \
        best(pygpu.compile(add_one), x, args.calls, args.reps)
    rows.append(("x + 1: pygpu.compile(fn)", plain, compiled))
    m = Identity()
    om = pygpu.compile(Identity())
    mc = Identity()
    mc.compile()
    plain = best(m, x, args.calls, args.reps)
    rows.append(("identity module: pygpu.compile(module)", plain,
                 best(om, x, args.calls, args.reps)))
    rows.append(("identity module: Module.compile()", plain, best(mc, x, args.calls, args.reps)))
    Module = pygpu.nn.Module
    checked = Module.__call__
    Module.__call__ = Module._call_impl  # hooks and forward without the check
    try:
        unchecked = best(m, x, args.calls, args.reps)
    finally:
        Module.__call__ = checked
    rows.append(("identity module: Module.__call__'s check", unchecked, plain))
    rows += mlp_rows(args.device, min(args.steps, args.calls), args.reps)
    print(f"load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs, 1 thread, "
          f"CPU ns per call (best of {args.reps} x {args.calls})\n")
    print("| call | without | with | added |")
    print("|---|---|---|---|")
    for name, a, b in rows:
        print(f"| {name} | {a:.0f} | {b:.0f} | {b - a:+.0f} |")


if __name__ == "__main__":
    main()
