# bench_compile.py - what pygpu.compile's wrapper costs per call (issue 45). pygpu.compile
# captures nothing today: a compiled call runs the original eagerly, so its cost is the wrapper
# (pygpu/_dynamo/compiled_function.py), and Module.__call__'s check for a Module.compile()d
# call costs every module call. Process CPU time (best of --reps blocks), which a loaded
# machine disturbs least; the load average is printed.
#
#   PYTHONPATH=. python benchmarks/bench_compile.py [--calls 100000] [--reps 7]
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


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--calls", type=int, default=100000)
    ap.add_argument("--reps", type=int, default=7)
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
    print(f"load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs, 1 thread, "
          f"CPU ns per call (best of {args.reps} x {args.calls})\n")
    print("| call | without | with | added |")
    print("|---|---|---|---|")
    for name, a, b in rows:
        print(f"| {name} | {a:.0f} | {b:.0f} | {b - a:+.0f} |")


if __name__ == "__main__":
    main()
