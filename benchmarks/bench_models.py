# bench_models.py - issue 45's real models, pygpu against PyTorch's CPU path in one process:
# ResNet-18 and MobileNetV2 at CIFAR shapes, a GPT of 6 x 384 at block 256 (AdamW, gradient
# clipping), a ViT-tiny and an LSTM language model (benchmarks/_models.py holds them, written once
# against both libraries' API; pygpu's weights are copied into torch's, and the first step's
# losses are checked to agree before anything is timed).
#
#   PYTHONPATH=. python benchmarks/bench_models.py                 # every row, 1 and 2 threads
#   PYTHONPATH=. python benchmarks/bench_models.py --tiny --rounds 1 --steps 1   # smoke (CI)
#   ... --rows gpt@8,resnet18@32 --threads 1 --clock cpu --no-memory --no-infer
#   ... --rows resnet18@128,mobilenetv2@128 --threads 1 --memory-only   (the memory table alone)
#   ... --profile gpt@8 [--threads 1]    # pygpu.profiler's table of one pygpu step, by op,
#                                          # with the GEMM/convolution ops' GFLOP/s
#   ... --only gpt@8:pygpu --steps 20    # one side alone (for `perf record`)
#   ... --overhead --threads 1 --rounds 7 --steps 10   # per-step cost outside the kernels:
#                                          # full depth, tiny tensors; ops per step each side
#
# What it reports, as markdown tables:
#   training   ms per step of each row at each thread count: each side timed in blocks of
#              --steps steps, alternating pygpu and torch after a pause (so the other side's
#              threads have gone to sleep), --rounds rounds; torch/pygpu per round (> 1: pygpu
#              faster), median and range, and each side's process CPU time per step
#              (time.process_time: every thread), the figure a loaded machine disturbs least
#   inference  batch-1 latency (ms per call, eval, no_grad; blocks of 16 calls, so that the
#              first call after a pause, which woke sleeping threads and cold caches, is one
#              in 16: 17-28 ms against 7 ms for the ViT's next ones, load 2.5) and batch-64
#              throughput (samples/s), same alternation
#   memory     peak resident memory of a training step, measured: each side in a subprocess of
#              its own that imports only its library and builds the model and its data, then
#              resets the kernel's high-water mark (/proc/self/clear_refs) and runs three
#              steps: VmHWM of the whole process, and the steps' rise above the resident size
#              before them (gradients, optimizer state, activations, the allocator's caches)
#   compile    pygpu eager against the training step compiled as a function with
#              pygpu.compile(step, mode="reduce-overhead") (captured after a warm-up and a probe
#              call and replayed from C; AdamW's rows run eagerly, its step count would be
#              frozen), per row at the last thread count: eager's time over compile's (> 1:
#              compile faster)
# --clock picks which clock the ratio column uses (cpu by default: at 1 thread on a shared
# machine the process CPU time is the steady figure; wall for a near-idle machine). The load
# average is printed with every table.
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _models as M  # noqa: E402

DEFAULT_ROWS = ("resnet18@32", "resnet18@128", "mobilenetv2@32", "mobilenetv2@128", "gpt@8",
                "vit@32", "lstm@32")
PAUSE_S = 0.25


def parse_row(row):
    name, _, batch = row.partition("@")
    if name not in M.BUILDERS or not batch.isdigit():
        raise SystemExit(f"bad row {row!r}: want MODEL@BATCH, MODEL one of {sorted(M.BUILDERS)}")
    return name, int(batch)


def load_libs(sides):
    libs = {}
    if "pygpu" in sides:
        import pygpu
        libs["pygpu"] = pygpu
    if "torch" in sides:
        import torch
        libs["torch"] = torch
    return libs


def set_threads(libs, n):
    for lib in libs.values():
        lib.set_num_threads(n)


def build(lib, name, size, state=None):
    lib.manual_seed(0)
    model = M.BUILDERS[name](lib, **size)
    if state is not None:
        model.load_state_dict({k: lib.tensor(v) for k, v in state.items()})
    return model


def state_of(model):
    return {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}


def train_block(lib, name, size, batch, state, compiled=False):
    """A closure running n training steps of the row, and the first step's loss."""
    model = build(lib, name, size, state)
    opt = M.optimizer(lib, name, model)
    rng = np.random.default_rng(0)
    data = [tuple(lib.tensor(a) for a in M.example_batch(rng, name, size, batch))
            for _ in range(2)]
    clip = M.CLIP.get(name)

    def one(x, y):
        opt.zero_grad()
        loss = M.loss_of(lib, name, model(x), y)
        loss.backward()
        if clip is not None:
            lib.nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        return loss

    # compiled: the whole step, captured and replayed (mode="reduce-overhead"; AdamW's rows
    # run eagerly: its step count would be frozen in a replay)
    run = lib.compile(one, mode="reduce-overhead") if compiled else one

    def step(i):
        x, y = data[i % 2]
        return run(x, y)

    def block(n):
        for i in range(n):
            loss = step(i)
        return float(loss.item())  # waits for the last step
    return block


def infer_block(lib, name, size, batch, state):
    model = build(lib, name, size, state)
    model.eval()
    x = lib.tensor(M.example_batch(np.random.default_rng(1), name, size, batch)[0])

    def block(n):
        with lib.no_grad():
            for _ in range(n):
                out = model(x)
        return float(out.sum().item())
    return block


def first_losses(libs, name, size, batch, state):
    """The first step's loss on each side, from the same weights and batch."""
    out = {}
    for side, lib in libs.items():
        model = build(lib, name, size, state)
        x, y = (lib.tensor(a) for a in M.example_batch(np.random.default_rng(0), name, size,
                                                        batch))
        out[side] = float(M.loss_of(lib, name, model(x), y).item())
    return out


def alternate(blocks, rounds, steps):
    """Times each block of `blocks` (key -> fn(n)) in rotating order; per key, lists of
    (wall s, cpu s) per step."""
    for b in blocks.values():
        b(1)  # warm up: first-call allocations, optimizer state
    keys = list(blocks)
    wall = {k: [] for k in keys}
    cpu = {k: [] for k in keys}
    for r in range(rounds):
        for k in keys[r % len(keys):] + keys[:r % len(keys)]:
            time.sleep(PAUSE_S)
            c0, t0 = time.process_time(), time.perf_counter()
            blocks[k](steps)
            wall[k].append((time.perf_counter() - t0) / steps)
            cpu[k].append((time.process_time() - c0) / steps)
    return wall, cpu


def ratio_cell(p, t):
    r = [b / a for a, b in zip(p, t)]
    return f"{statistics.median(r):.2f}x ({min(r):.2f}-{max(r):.2f})"


def load_line(libs):
    versions = ", ".join(f"{k} {v.__version__}" for k, v in libs.items())
    isa = libs["pygpu"].cpu_isa() if "pygpu" in libs else "-"
    return (f"load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs, pygpu ISA {isa}, "
            f"{versions}")


def run_training(args, libs, sizes, rows, states):
    print(f"\n### Training step, ms per step ({load_line(libs)})\n")
    print(f"rounds {args.rounds}, {args.steps} steps a block, ratio by {args.clock} clock")
    print("\n| row | threads | pygpu ms | torch ms | torch/pygpu | CPU ms pygpu / torch |")
    print("|---|---|---|---|---|---|")
    summary = {}
    for threads in args.threads:
        set_threads(libs, threads)
        for row in rows:
            name, batch = parse_row(row)
            blocks = {side: train_block(lib, name, sizes[name], batch, states[name])
                      for side, lib in libs.items() if side in args.sides}
            wall, cpu = alternate(blocks, args.rounds, args.steps)
            clock = cpu if args.clock == "cpu" else wall
            cells = [f"{statistics.median(clock[s]) * 1e3:.1f}" if s in clock else "-"
                     for s in ("pygpu", "torch")]
            ratio = ratio_cell(clock["pygpu"], clock["torch"]) if len(clock) == 2 else "-"
            cpus = " / ".join(f"{statistics.median(cpu[s]) * 1e3:.1f}" if s in cpu else "-"
                              for s in ("pygpu", "torch"))
            summary[(row, threads)] = ratio.split(" ")[0]
            print(f"| {row} | {threads} | {cells[0]} | {cells[1]} | {ratio} | {cpus} |",
                  flush=True)
    return summary


def run_inference(args, libs, sizes, states):
    threads = args.threads[-1]
    set_threads(libs, threads)
    print(f"\n### Inference, {threads} thread(s) ({load_line(libs)})\n")
    print("| model | batch-1 ms pygpu / torch | torch/pygpu | batch-64 samples/s pygpu / torch"
          " | pygpu/torch |")
    print("|---|---|---|---|---|")
    summary = {}
    b64 = 4 if args.tiny else 64
    for name in dict.fromkeys(parse_row(r)[0] for r in args.rows):
        cells = []
        for batch in (1, b64):
            blocks = {side: infer_block(lib, name, sizes[name], batch, states[name])
                      for side, lib in libs.items() if side in args.sides}
            n = args.steps * (16 if batch == 1 else 1)
            wall, cpu = alternate(blocks, args.rounds, n)
            clock = cpu if args.clock == "cpu" else wall
            if len(clock) < 2:
                cells += ["-", "-"]
                continue
            p, t = statistics.median(clock["pygpu"]), statistics.median(clock["torch"])
            if batch == 1:
                cells += [f"{p * 1e3:.2f} / {t * 1e3:.2f}", ratio_cell(clock["pygpu"],
                                                                        clock["torch"])]
            else:
                cells += [f"{batch / p:,.0f} / {batch / t:,.0f}",
                          ratio_cell(clock["pygpu"], clock["torch"])]
        summary[name] = (cells[1].split(" ")[0], cells[3].split(" ")[0])
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)
    return summary


def memory_child(side, row, tiny, threads):
    """Runs in its own process: one library, one row; prints the figures as JSON."""
    libs = load_libs([side])
    lib = libs[side]
    set_threads(libs, threads)
    name, batch = parse_row(row)
    sizes = M.TINY if tiny else M.FULL

    def status(key):
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) / 1024.0  # MiB
        return float("nan")
    after_import = status("VmRSS")
    block = train_block(lib, name, sizes[name], batch, None)
    before = status("VmRSS")  # the model, its data and the library: no step has run
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets VmHWM to the current resident size
        reset = True
    except OSError:
        reset = False
    block(3)  # gradients, optimizer state, activations, each library's caches
    print(json.dumps({"import": after_import, "before": before, "peak": status("VmHWM"),
                      "reset": reset}))


def run_memory(args, rows):
    print(f"\n### Peak resident memory of a training step, MiB (load average "
          f"{os.getloadavg()[0]:.1f}; one subprocess per side, {args.threads[-1]} thread(s))\n")
    print("| row | process peak pygpu / torch | steps' rise pygpu / torch | after import pygpu /"
          " torch | pygpu/torch (peak) |")
    print("|---|---|---|---|---|")
    summary = {}
    for row in rows:
        res = {}
        for side in ("pygpu", "torch"):
            if side not in args.sides:
                continue
            cmd = [sys.executable, os.path.abspath(__file__), "--memory-child", side, "--rows",
                   row, "--threads", str(args.threads[-1])] + (["--tiny"] if args.tiny else [])
            env = dict(os.environ)  # the child imports this checkout's pygpu, as we do
            env["PYTHONPATH"] = os.pathsep.join(
                [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))] +
                ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
            out = subprocess.run(cmd, capture_output=True, text=True, env=env)
            if out.returncode != 0:
                raise SystemExit(f"the {side} memory child of {row} failed:\n{out.stderr}")
            res[side] = json.loads(out.stdout.strip().splitlines()[-1])
        if len(res) < 2:
            continue
        p, t = res["pygpu"], res["torch"]
        rise = ("n/a" if not (p["reset"] and t["reset"]) else
                f"{p['peak'] - p['before']:.0f} / {t['peak'] - t['before']:.0f}")
        summary[row] = f"{p['peak'] / t['peak']:.2f}"
        if p["reset"] and t["reset"]:
            summary[row] += f" (rise {(p['peak'] - p['before']) / (t['peak'] - t['before']):.2f})"
        print(f"| {row} | {p['peak']:.0f} / {t['peak']:.0f} | {rise} | {p['import']:.0f} / "
              f"{t['import']:.0f} | {p['peak'] / t['peak']:.2f} |", flush=True)
    return summary


def run_compile(args, libs, sizes, rows, states):
    """pygpu eager against the training step compiled with mode="reduce-overhead" (the last
    thread count): the replay of the captured step against its eager run
    (docs/performance.md, "pygpu.compile")."""
    pygpu = libs.get("pygpu")
    if pygpu is None or args.no_compile:
        return {}
    set_threads(libs, args.threads[-1])
    print(f"\n### pygpu eager against pygpu.compile, ms per training step, "
          f"{args.threads[-1]} thread(s) ({load_line(libs)})\n")
    print(f"rounds {args.rounds}, {args.steps} steps a block, ratio by {args.clock} clock")
    print("\n| row | eager ms | compile ms | eager/compile | CPU ms eager / compile |")
    print("|---|---|---|---|---|")
    summary = {}
    for row in rows:
        name, batch = parse_row(row)
        blocks = {"compile": train_block(pygpu, name, sizes[name], batch, states[name],
                                         compiled=True),
                  "eager": train_block(pygpu, name, sizes[name], batch, states[name])}
        wall, cpu = alternate(blocks, args.rounds, args.steps)
        clock = cpu if args.clock == "cpu" else wall
        ratio = ratio_cell(clock["compile"], clock["eager"])  # eager over compile
        summary[row] = ratio.split(" ")[0]
        print(f"| {row} | {statistics.median(clock['eager']) * 1e3:.1f} | "
              f"{statistics.median(clock['compile']) * 1e3:.1f} | {ratio} | "
              f"{statistics.median(cpu['eager']) * 1e3:.1f} / "
              f"{statistics.median(cpu['compile']) * 1e3:.1f} |", flush=True)
    return summary


def print_summary(rows, threads, train, infer, memory, comp):
    print("\n### Summary: torch/pygpu (> 1: pygpu faster; memory: pygpu/torch, the process "
          "peak and the steps' rise, < 1: pygpu smaller; eager/compile: > 1, compile faster)\n")
    cols = [f"train {t} thr" for t in threads]
    print("| row | " + " | ".join(cols) + " | batch-1 latency | batch-64 throughput | peak memory"
          " | eager/compile |")
    print("|---|" + "---|" * (len(cols) + 4))
    for row in rows:
        name, _ = parse_row(row)
        lat, thr = infer.get(name, ("-", "-"))
        cells = [train.get((row, t), "-") for t in threads]
        print(f"| {row} | " + " | ".join(cells) + f" | {lat} | {thr} | {memory.get(row, '-')} |"
              f" {comp.get(row, '-')} |")


def profile_row(args, libs, sizes):
    """pygpu.profiler's view of one pygpu training step: time by op, the time outside ops,
    and the products' GFLOP/s."""
    from pygpu.profiler import ProfilerActivity, profile
    pygpu = libs["pygpu"]
    set_threads(libs, args.threads[-1])
    row = args.profile
    name, batch = parse_row(row)
    block = train_block(pygpu, name, sizes[name], batch, None)
    block(2)
    t0 = time.perf_counter()
    block(args.steps)
    wall = (time.perf_counter() - t0) / args.steps
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        block(args.steps)
    events = prof.events()
    by_op, flops = {}, {}
    for e in events:
        by_op.setdefault(e.name, [0.0, 0])
        by_op[e.name][0] += e.cpu_time_total / args.steps
        by_op[e.name][1] += 1
        f = op_flops(e.name, e.input_shapes)
        if f:
            flops[e.name] = flops.get(e.name, 0.0) + f / args.steps
    total = sum(v[0] for v in by_op.values())
    print(f"\n### Profile of one pygpu step, {row}, {args.threads[-1]} thread(s) "
          f"({load_line(libs)})\n")
    print(f"step {wall * 1e3:.1f} ms wall; ops {total / 1e3:.1f} ms; outside ops (Python, "
          f"autograd, allocation) {max(wall * 1e6 - total, 0) / 1e3:.1f} ms "
          f"({max(wall * 1e6 - total, 0) / (wall * 1e6) * 100:.0f}%)\n")
    print("| op | ms per step | share | calls per step | GFLOP/s |")
    print("|---|---|---|---|---|")
    for op, (us, n) in sorted(by_op.items(), key=lambda kv: -kv[1][0])[:args.profile_rows]:
        gf = f"{flops[op] / us / 1e3:.1f}" if op in flops and us > 0 else ""
        print(f"| {op} | {us / 1e3:.2f} | {us / total * 100:.1f}% | {n // args.steps} | {gf} |")


def op_counts(libs, name, size, batch, state):
    """Ops per training step: pygpu's (pygpu.profiler's events: one per op that ran nodes,
    forward, backward and optimizer) and torch's (the ATen ops that reach its kernels, counted
    by a TorchDispatchMode)."""
    counts = {}
    if "pygpu" in libs:
        from pygpu.profiler import ProfilerActivity, profile
        block = train_block(libs["pygpu"], name, size, batch, state)
        block(1)
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            block(1)
        counts["pygpu"] = len(prof.events())
    if "torch" in libs:
        from torch.utils._python_dispatch import TorchDispatchMode

        class Count(TorchDispatchMode):
            n = 0

            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                Count.n += 1
                return func(*args, **(kwargs or {}))
        block = train_block(libs["torch"], name, size, batch, state)
        block(1)
        with Count():
            block(1)
        counts["torch"] = Count.n
    return counts


def run_overhead(args, libs, rows):
    """The cost of a step outside the kernels: each model at full depth with tiny tensors
    (_models.OVERHEAD), process CPU time per step at the first --threads count, both sides
    alternating, and the op calls a step makes on each side."""
    set_threads(libs, args.threads[0])
    print(f"\n### Per-step cost outside the kernels: full depth, tiny tensors, "
          f"{args.threads[0]} thread(s) ({load_line(libs)})\n")
    print(f"rounds {args.rounds}, {args.steps} steps a block; process CPU time per step, "
          f"median (least); torch/pygpu by the medians")
    print("\n| model | pygpu CPU ms | torch CPU ms | torch/pygpu | ops per step pygpu / torch "
          "| CPU us per op pygpu / torch |")
    print("|---|---|---|---|---|---|")
    names = []
    for row in rows:
        name = parse_row(row)[0]
        if name not in names:
            names.append(name)
    for name in names:
        size, batch = M.OVERHEAD[name], M.OVERHEAD_BATCH
        state = state_of(build(libs["pygpu"], name, size)) if "pygpu" in libs else None
        if len(libs) == 2:
            losses = first_losses(libs, name, size, batch, state)
            if abs(losses["pygpu"] - losses["torch"]) > 1e-3 * max(1.0, abs(losses["torch"])):
                raise SystemExit(f"{name}: the first losses differ: {losses}")
        blocks = {side: train_block(lib, name, size, batch, state) for side, lib in libs.items()}
        _, cpu = alternate(blocks, args.rounds, args.steps)
        med = {s: statistics.median(v) * 1e3 for s, v in cpu.items()}
        cells = [f"{med[s]:.2f} ({min(cpu[s]) * 1e3:.2f})" if s in med else "-"
                 for s in ("pygpu", "torch")]
        ratio = f"{med['torch'] / med['pygpu']:.2f}x" if len(med) == 2 else "-"
        ops = op_counts(libs, name, size, batch, state)
        per_op = " / ".join(f"{med[s] * 1e3 / ops[s]:.0f}" if s in ops else "-"
                            for s in ("pygpu", "torch"))
        n_ops = " / ".join(str(ops.get(s, "-")) for s in ("pygpu", "torch"))
        print(f"| {name} | {cells[0]} | {cells[1]} | {ratio} | {n_ops} | {per_op} |", flush=True)


def op_flops(name, shapes):
    """FLOPs of one recorded product or convolution from its operands' shapes (else None)."""
    try:
        if name in ("conv2d", "conv2d_input_backward", "conv2d_weight_backward"):
            x, w = shapes[0], shapes[1]
            out = shapes[-1]
            if name == "conv2d":
                n, co = out[0], out[1]
                spatial = int(np.prod(out[2:]))
            else:  # the backward ops' last operand is the gradient they write
                go = shapes[0] if name == "conv2d_input_backward" else shapes[1]
                n, co, spatial = go[0], go[1], int(np.prod(go[2:]))
            w = shapes[1] if name != "conv2d_weight_backward" else shapes[-1]
            return 2.0 * n * co * spatial * int(np.prod(w[1:]))
        if name in ("linear", "matmul", "linear_backward", "bmm", "mm"):
            # linear_backward's operands are (grad_out (M, N), x (M, K), weight (N, K), ...)
            a, b = (shapes[1], shapes[2]) if name == "linear_backward" else (shapes[0], shapes[1])
            m = int(np.prod(a[:-1]))
            k = a[-1]
            nn_ = b[0] if name.startswith("linear") else b[-1]
            mult = 2.0 if name == "linear_backward" else 1.0  # dX and dW
            return mult * 2.0 * m * k * nn_
    except (IndexError, TypeError):
        return None
    return None


def checked_states(libs, rows, sizes):
    """Each model's weights (pygpu's initialization, copied into torch's), after checking that
    both sides' first losses agree on them."""
    states = {}
    for row in rows:
        name, batch = parse_row(row)
        if name in states:
            continue
        if "pygpu" in libs:
            states[name] = state_of(build(libs["pygpu"], name, sizes[name]))
        else:
            states[name] = None
        if len(libs) == 2:
            losses = first_losses(libs, name, sizes[name], batch, states[name])
            if abs(losses["pygpu"] - losses["torch"]) > 1e-3 * max(1.0, abs(losses["torch"])):
                raise SystemExit(f"{name}: the first losses differ: {losses}")
    return states


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tiny", action="store_true", help="tiny shapes (the CI smoke test)")
    ap.add_argument("--rows", default=",".join(DEFAULT_ROWS))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    ap.add_argument("--no-memory", action="store_true")
    ap.add_argument("--memory-only", action="store_true",
                    help="only the peak-memory table (one subprocess per side and row)")
    ap.add_argument("--no-infer", action="store_true")
    ap.add_argument("--no-train", action="store_true")
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--only", help="ROW:SIDE: time one side of one row alone (for perf)")
    ap.add_argument("--profile", metavar="ROW", help="pygpu.profiler table of one pygpu step")
    ap.add_argument("--profile-rows", type=int, default=25)
    ap.add_argument("--overhead", action="store_true",
                    help="the per-step cost outside the kernels: full depth, tiny tensors")
    ap.add_argument("--memory-child", metavar="SIDE", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.threads = [int(t) for t in args.threads.split(",")]
    args.rows = args.rows.split(",")
    sizes = M.TINY if args.tiny else M.FULL
    if args.memory_child:
        return memory_child(args.memory_child, args.rows[0], args.tiny, args.threads[-1])
    args.sides = ("pygpu", "torch")
    if args.memory_only:  # no model is built in this process: the children measure
        memory = run_memory(args, args.rows)
        print_summary(args.rows, args.threads, {}, {}, memory, {})
        return
    if args.only:
        row, _, side = args.only.partition(":")
        args.rows, args.sides = [row], (side,) if side else args.sides
    libs = load_libs(("pygpu",) if args.profile else args.sides)
    if args.profile:
        return profile_row(args, libs, sizes)
    if args.overhead:
        return run_overhead(args, libs, args.rows)
    states = checked_states(libs, args.rows, sizes)
    train = {} if args.no_train else run_training(args, libs, sizes, args.rows, states)
    infer = {} if args.no_infer or args.only else run_inference(args, libs, sizes, states)
    memory = {} if args.no_memory or args.only else run_memory(args, args.rows)
    comp = run_compile(args, libs, sizes, args.rows, states) if not args.only else {}
    if not args.only:
        print_summary(args.rows, args.threads, train, infer, memory, comp)


if __name__ == "__main__":
    main()
