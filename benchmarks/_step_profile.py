# _step_profile.py - where a step's CPU time goes, pygpu against torch, in the same categories
# (issue 45: "every target missed is shown with its profile"), and the fraction of the
# machine's measured peak that the convolution and GEMM work reaches. Used by targets45.py.
#
#   pygpu  per node kind, the node's CPU time from PYGPU_NODE_BUSY (csrc/backends/cpu/
#          cpu_busy.c: its pool tasks' thread CPU time plus the caller's serial time, plus the
#          process's other threads' CPU while it calls a library with threads of its own, such
#          as oneDNN's OpenMP team at batch 1; pygpu's spinning not counted). The instrument
#          prints once, at exit, so a child process builds the step, warms up, drops the counts
#          so far (_C._node_busy_reset), runs the measured steps and exits: its table is the
#          steps' alone (see pygpu_child). The process CPU
#          time of the measured steps minus the nodes' is the time outside nodes (Python
#          dispatch, autograd, allocation, a pool thread's spinning).
#   torch  per ATen op that reaches its kernels (a TorchDispatchMode: the ops below autograd,
#          each once), the process CPU time (every thread) around each call. Not
#          torch.profiler's self CPU: that is the calling thread's wall clock, which a loaded
#          machine inflates by the load. The op's phase (forward, backward, optimizer and
#          clipping) is known from where the step is, so torch's mm/addmm are split into
#          forward and backward GEMMs, and the optimizer's elementwise ops go to the optimizer.
#          The step's process CPU time without the mode minus the ops' is the time outside ops.
# FLOPs come from torch's operand shapes (the same model on both sides): a convolution,
# 2 x N x C_out x H_out x W_out x C_in/groups x kh x kw for each of the forward, the input
# gradient and the weight gradient (convolution_backward's output mask says which ran); a GEMM
# 2 x M x N x K; attention 4 x B x H x Tq x Tk x D forward (half of it causal) and 2.5 x that
# backward. pygpu's Winograd or torch's own algorithms may do fewer multiplies; the count is the
# direct one, so the fraction is "effective" FLOP/s.
import json
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _models as M  # noqa: E402
import bench_models as B  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# category -> (pygpu node names, torch ATen op names). The GEMM, optimizer and conv-backward
# rows of torch are decided by phase and shape (torch_category), not only by name.
CATEGORIES = {
    "conv forward": (("conv2d",), ("convolution", "mkldnn_convolution")),
    "conv backward (input + weight grads)": (("conv2d_input_backward", "conv2d_weight_backward"),
                                             ("convolution_backward",)),
    "linear GEMMs forward": (("linear", "matmul", "bmm", "mm", "addmm"), ()),
    "linear GEMMs backward": (("linear_backward",), ()),
    "attention (SDPA)": (("scaled_dot_product_attention", "scaled_dot_product_attention_backward"),
                         ("_scaled_dot_product_flash_attention_for_cpu",
                          "_scaled_dot_product_flash_attention_for_cpu_backward",
                          "_scaled_dot_product_attention_math")),
    "LSTM layers (cell + its GEMMs)": (("rnn_cell", "rnn_cell_backward", "lstm_cell",
                                        "lstm_cell_backward"),
                                       ("mkldnn_rnn_layer", "mkldnn_rnn_layer_backward")),
    "normalization": (("batch_norm", "batch_norm_backward", "layer_norm", "layer_norm_backward"),
                      ("native_batch_norm", "native_batch_norm_backward", "native_layer_norm",
                       "native_layer_norm_backward", "_native_batch_norm_legit",
                       "_native_batch_norm_legit_no_training")),
    "activations, elementwise, pooling, reductions": (
        ("relu", "relu_backward", "gelu", "gelu_backward", "add", "subtract", "multiply",
         "divide", "sqrt", "minimum", "maximum", "sum", "mean", "all", "pool2d",
         "pool2d_backward", "where", "exp", "tanh", "sigmoid"),
        ("relu", "threshold_backward", "gelu", "gelu_backward", "add", "add_", "sub", "mul",
         "mul_", "div", "div_", "sqrt", "clamp", "minimum", "maximum", "sum", "mean",
         "reciprocal", "max_pool2d_with_indices", "max_pool2d_with_indices_backward",
         "avg_pool2d", "avg_pool2d_backward", "_adaptive_avg_pool2d",
         "_adaptive_avg_pool2d_backward", "sigmoid", "tanh", "linalg_vector_norm")),
    "optimizer step and clipping": (("sgd", "adam", "adamw", "_foreach_norm"), ()),
    "embedding and loss": (("index_select", "index_add_", "embedding", "embedding_backward",
                            "cross_entropy", "cross_entropy_backward"),
                           ("embedding", "embedding_dense_backward", "_log_softmax",
                            "_log_softmax_backward_data", "nll_loss_forward",
                            "nll_loss_backward")),
    "copies, reshapes, creation": (("copy", "fill", "arange", "rand", "randn", "cat", "stack",
                                    "contiguous", "zeros", "ones"),
                                   ("view", "_unsafe_view", "t", "transpose", "cat", "stack",
                                    "split", "slice", "select", "select_backward", "expand",
                                    "detach", "clone", "copy_", "empty", "zeros", "ones_like",
                                    "zeros_like", "arange", "_local_scalar_dense", "permute",
                                    "unsqueeze", "squeeze", "fill_", "zero_", "_to_copy",
                                    "new_empty_strided", "slice_backward", "as_strided")),
}
OTHER, OUTSIDE = "other (unmapped)", "outside nodes / ops (Python dispatch, autograd, allocation)"
ORDER = list(CATEGORIES) + [OTHER, OUTSIDE]
_PG = {n: c for c, (pg, _) in CATEGORIES.items() for n in pg}
_TORCH = {n: c for c, (_, tt) in CATEGORIES.items() for n in tt}
# torch.optim's record_function markers reach the dispatcher as ops: bookkeeping, not kernels
_TORCH.update({"_record_function_enter_new": OUTSIDE, "_record_function_exit": OUTSIDE})
GEMM_OPS = ("mm", "addmm", "bmm", "baddbmm", "matmul", "linear")

# the next step for a category where pygpu spends more CPU than torch, in one line each
NEXT_STEP = {
    "conv forward": "3x3 convolution at the peak fraction torch reaches: a blocked-layout "
                    "direct or brgemm kernel in place of im2col + GEMM (oneDNN's path)",
    "conv backward (input + weight grads)": "the gradients as implicit GEMMs over the blocked "
                                            "layout (no unrolled buffer), dW with fewer partials",
    "linear GEMMs forward": "the GEMM micro-kernel and packing at these M x K x N (bench_model_"
                            "shapes.py rows), epilogues fused",
    "linear GEMMs backward": "dX and dW of the linear layers in one pass over dY, packed once",
    "attention (SDPA)": "a flash-style SDPA (no T x T scores written; causal tiles skipped) "
                        "forward and backward",
    "LSTM layers (cell + its GEMMs)": "one GEMM for all timesteps' input projections, the gate "
                                      "cell fused per step (as aten's RNN.cpp)",
    "normalization": "fused LayerNorm / BatchNorm passes (one read, one write per row)",
    "activations, elementwise, pooling, reductions": "fewer elementwise nodes: fuse the "
                                                     "activation into the producer's epilogue",
    "optimizer step and clipping": "one pass over a flat parameter buffer, clipping's norm fused",
    "embedding and loss": "a fused cross-entropy over the vocabulary; embedding as a gather",
    "copies, reshapes, creation": "fewer copies: views where torch keeps views, no contiguous() "
                                  "before a kernel that takes strides",
    OTHER: "map the unmapped nodes, then profile them",
    OUTSIDE: "less per-op cost outside nodes: the node queue off the calling thread, fewer "
             "nodes per step (bench_models.py --overhead)",
}


def pygpu_category(name):
    return _PG.get(name, OTHER)


def torch_category(name, phase):
    if phase == "optimizer":
        return "optimizer step and clipping"
    if name in GEMM_OPS:
        return "linear GEMMs backward" if phase == "backward" else "linear GEMMs forward"
    return _TORCH.get(name, OTHER)


# ---- the steps, built on bench_models' and _models' pieces (one set of models) ----

def step_of(lib, kind, name, size, batch, phases=None):
    """fn(n) running n steps of `kind` ("train", "infer", "mlp"); `phases`, when given, is set
    to the running phase ("forward", "backward", "optimizer") before each part."""
    ph = phases if phases is not None else {}
    if kind == "mlp" and lib.__name__ == "pygpu":  # the path the MLP rows time: Trainer.fit
        import speed_table as st
        rng = np.random.default_rng(0)
        X = rng.random((batch * 64, 784), dtype=np.float32)  # (samples, 784)
        Y = rng.integers(0, 10, batch * 64).astype(np.int64)
        epoch = st.pygpu_epoch(X, Y, batch)  # warms itself up

        def fit(n):
            if n > 64:
                raise ValueError("at most 64 MLP steps a call")
            return epoch(n * batch) if n else 0.0
        return fit
    if kind == "mlp":
        from _torch_mlp import torch_mlp
        sizes = (784, 512, 512, 10)
        lib.manual_seed(0)
        model = lib.nn.MLP(list(sizes), activation="relu") if lib.__name__ == "pygpu" else \
            torch_mlp(lib, sizes)
        opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        rng = np.random.default_rng(0)
        x = lib.tensor(rng.random((batch, 784), dtype=np.float32))
        y = lib.tensor(rng.integers(0, 10, batch))
        clip = None
    else:
        model = B.build(lib, name, size)
        rng = np.random.default_rng(0)
        x, y = (lib.tensor(a) for a in M.example_batch(rng, name, size, batch))
        if kind == "infer":
            model.eval()

            def infer(n):
                ph["phase"] = "forward"
                with lib.no_grad():
                    for _ in range(n):
                        out = model(x)
                return float(out.sum().item())
            return infer
        opt = M.optimizer(lib, name, model)
        clip = M.CLIP.get(name)

    def train(n):
        for _ in range(n):
            ph["phase"] = "forward"
            opt.zero_grad()
            out = model(x)
            loss = (lib.nn.functional.cross_entropy(out, y) if kind == "mlp" else
                    M.loss_of(lib, name, out, y))
            ph["phase"] = "backward"
            loss.backward()
            ph["phase"] = "optimizer"
            if clip is not None:
                lib.nn.utils.clip_grad_norm_(model.parameters(), clip)
            opt.step()
        return float(loss.item())
    return train


# ---- pygpu: PYGPU_NODE_BUSY in a child process ----


def pygpu_child(kind, row, threads, tiny, warmup, steps):
    """Runs in the child: build the step, warm up, drop the instrument's counts so far
    (_C._node_busy_reset), run `steps` steps, print their process CPU as JSON and exit:
    PYGPU_NODE_BUSY prints its table at exit, the steps' alone.

    No fork, no difference of two tables. Until 2026-11-29 the child forked before anything
    ran (a fork after a oneDNN convolution hung the forked process): the fork warmed up and ran
    the steps, the child then warmed up alone after the fork had exited, and the steps' table
    was the fork's less the child's. The fork's first writes to pages it shared with the child
    (the parameters, the allocator's cached blocks) were copy-on-write faults, which the
    child's warm-up, its pages no longer shared, did not take: at 3 steps they put 2-9x the
    optimizer's and the loss's CPU on each step (lstm@32 at 2 threads: 13.5 and 89.0 ms a
    step against 5.2 and 9.7 timed this way; docs/performance.md, "Node kinds at 1 and 2
    threads"). And two warm-ups' first-touch faults never cancel exactly on a loaded machine."""
    import pygpu
    pygpu.set_num_threads(threads)
    name, batch = B.parse_row(row) if kind != "mlp" else ("mlp", int(row.split("@")[1]))
    size = (M.TINY if tiny else M.FULL).get(name)
    fn = step_of(pygpu, kind, name, size, batch)
    fn(warmup)
    pygpu._C._node_busy_reset()
    c0 = time.process_time()  # the process's CPU over the steps, every thread's
    fn(steps)
    print(json.dumps({"cpu_s": time.process_time() - c0}), flush=True)
    # a normal exit: the instrument's table goes to stderr


def _busy_table(stderr):
    """{node kind: cpu ms} from PYGPU_NODE_BUSY's table (name, then 8 numbers)."""
    rows, on = {}, False
    for line in stderr.splitlines():
        if line.startswith("pygpu busy cores per node kind"):
            on = True
            continue
        parts = line.split()
        if not on or len(parts) < 9 or parts[0] == "node":
            continue
        try:
            nums = [float(p) for p in parts[-8:]]
        except ValueError:
            continue
        name = " ".join(parts[:-8])
        if name != "all nodes":
            rows[name] = {"cpu_ms": nums[2], "crit_ms": nums[3]}
    return rows


def pygpu_profile(kind, row, threads, tiny, steps, tool):
    """pygpu's CPU ms per step by category (and by node kind), and busy cores of the nodes."""
    env = dict(os.environ, PYGPU_NODE_BUSY="1")
    env["PYTHONPATH"] = os.pathsep.join([ROOT] + ([env["PYTHONPATH"]] if
                                                  env.get("PYTHONPATH") else []))
    cmd = [sys.executable, tool, "--profile-child", kind, row, str(threads),
           str(steps)] + (["--tiny"] if tiny else [])
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode != 0 or "pygpu busy cores per node kind" not in out.stderr:
        raise SystemExit(f"pygpu profile child of {kind} {row} failed:\n{out.stderr[-3000:]}")
    cpu = json.loads(out.stdout.strip().splitlines()[-1])
    nodes = {k: {f: v[f] / steps for f in ("cpu_ms", "crit_ms")}
             for k, v in _busy_table(out.stderr).items()}
    cats = {c: 0.0 for c in ORDER}
    crit = {c: 0.0 for c in ORDER}
    for k, v in nodes.items():
        cats[pygpu_category(k)] += v["cpu_ms"]
        crit[pygpu_category(k)] += v["crit_ms"]
    step_ms = cpu["cpu_s"] * 1e3 / steps
    cats[OUTSIDE] = step_ms - sum(cats.values())
    return {"step_ms": step_ms, "cats": cats, "crit": crit, "nodes": nodes,
            "unmapped": sorted(k for k in nodes if pygpu_category(k) == OTHER)}


# ---- torch: a dispatch mode, process CPU around each ATen op ----

def conv_flops(x_shape, w_shape, out_shape):
    """2 x N x C_out x spatial_out x (C_in / groups) x kernel: w is (C_out, C_in/g, k...)."""
    return 2.0 * out_shape[0] * float(np.prod(w_shape)) * float(np.prod(out_shape[2:]))


def op_flops(name, args, out):
    """{flop category: FLOPs} of one ATen call (empty when it is not a product)."""
    def shape(t):
        return tuple(t.shape)
    try:
        if name in ("convolution", "mkldnn_convolution"):
            return {"conv forward": conv_flops(shape(args[0]), shape(args[1]), shape(out))}
        if name == "convolution_backward":  # (grad_out, input, weight, ..., output_mask)
            g, x, w, mask = args[0], args[1], args[2], args[-1]
            f = conv_flops(shape(x), shape(w), shape(g))
            return {"conv input grad": f * bool(mask[0]), "conv weight grad": f * bool(mask[1])}
        if name in ("mm", "addmm", "bmm", "baddbmm"):
            a, b = (args[1], args[2]) if name in ("addmm", "baddbmm") else (args[0], args[1])
            sa, sb = shape(a), shape(b)
            batch = sa[0] if len(sa) == 3 else 1
            return {"gemm": 2.0 * batch * sa[-2] * sa[-1] * sb[-1]}
        if name.startswith("_scaled_dot_product") and not name.endswith("_backward"):
            q, k = shape(args[0]), shape(args[1])
            causal = any(a is True for a in args[3:6])
            f = 4.0 * float(np.prod(q[:-1])) * k[-2] * q[-1] * (0.5 if causal else 1.0)
            return {"attention": f}
        if name.startswith("_scaled_dot_product") and name.endswith("_backward"):
            q, k = shape(args[1]), shape(args[2])  # (grad_out, q, k, v, ...)
            causal = any(a is True for a in args[5:10])
            f = 4.0 * float(np.prod(q[:-1])) * k[-2] * q[-1] * (0.5 if causal else 1.0)
            return {"attention": 2.5 * f}
    except (AttributeError, IndexError, TypeError):
        return {}
    return {}


def torch_profile(torch, kind, row, threads, tiny, steps):
    """torch's CPU ms per step by category, and the FLOPs per step by product kind."""
    from torch.utils._python_dispatch import TorchDispatchMode
    torch.set_num_threads(threads)
    name, batch = B.parse_row(row) if kind != "mlp" else ("mlp", int(row.split("@")[1]))
    size = (M.TINY if tiny else M.FULL).get(name)
    phases = {"phase": "forward"}
    fn = step_of(torch, kind, name, size, batch, phases)
    fn(1)
    c0 = time.process_time()
    fn(steps)
    step_ms = (time.process_time() - c0) * 1e3 / steps
    cats = {c: 0.0 for c in ORDER}  # torch's outside-op markers land in OUTSIDE, then replaced
    flops, ops, unmapped = {}, {}, set()

    class Timed(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            op = func.overloadpacket.__name__
            t0 = time.process_time()
            out = func(*args, **(kwargs or {}))
            dt = (time.process_time() - t0) * 1e3
            phase = phases["phase"]
            cat = torch_category(op, phase)
            cats[cat] += dt
            if cat == OTHER:
                unmapped.add(op)
            ops[op] = ops.get(op, 0.0) + dt
            for k, f in op_flops(op, args, out).items():
                if k == "gemm":
                    k = "linear GEMMs backward" if phase == "backward" else "linear GEMMs forward"
                flops[k] = flops.get(k, 0.0) + f
            return out
    with Timed():
        fn(steps)
    for d in (cats, ops, flops):
        for k in d:
            d[k] /= steps
    cats[OUTSIDE] = 0.0
    cats[OUTSIDE] = step_ms - sum(cats.values())  # negative: the difference's noise
    return {"step_ms": step_ms, "cats": cats, "flops": flops, "ops": ops,
            "unmapped": sorted(unmapped)}


# ---- the tables ----

# product kinds whose FLOP fraction is reported: (flop key, pygpu node kinds, torch category)
PRODUCTS = (
    ("conv forward", ("conv2d",), "conv forward"),
    ("conv input grad", ("conv2d_input_backward",), None),
    ("conv weight grad", ("conv2d_weight_backward",), None),
    ("conv input + weight grads", ("conv2d_input_backward", "conv2d_weight_backward"),
     "conv backward (input + weight grads)"),
    ("linear GEMMs forward", ("linear", "matmul", "bmm", "mm", "addmm"), "linear GEMMs forward"),
    ("linear GEMMs backward", ("linear_backward",), "linear GEMMs backward"),
    ("attention", ("scaled_dot_product_attention", "scaled_dot_product_attention_backward"),
     "attention (SDPA)"),
)


def print_profile(title, pg, th, threads, peak_gflops, want=None):
    """Two tables: CPU ms per step by category, and the products' fraction of peak; then the
    next step (next_step). want: the row's target, torch/pygpu (None: parity)."""
    print(f"\n#### {title}: CPU ms per step by category, {threads} thread(s)\n")
    print("| category | pygpu CPU ms | torch CPU ms | pygpu - torch | pygpu busy cores |")
    print("|---|---|---|---|---|")
    for c in ORDER:
        p, t = pg["cats"].get(c, 0.0), th["cats"].get(c, 0.0)
        if p < 0.05 and t < 0.05:
            continue
        cores = (f"{p / pg['crit'][c]:.2f}" if c in pg["crit"] and pg["crit"][c] > 0 else "")
        print(f"| {c} | {p:.1f} | {t:.1f} | {p - t:+.1f} | {cores} |")
    print(f"| **step (process CPU)** | **{pg['step_ms']:.1f}** | **{th['step_ms']:.1f}** | "
          f"{pg['step_ms'] - th['step_ms']:+.1f} | |")
    print("\n(pygpu: PYGPU_NODE_BUSY's node CPU time; torch: the process CPU time around each ATen"
          " op; outside = the step's process CPU less those, with torch's step timed in a run of"
          " its own, so that row carries the run-to-run noise)")
    if pg["unmapped"] or th["unmapped"]:
        print(f"\nunmapped: pygpu {', '.join(pg['unmapped']) or '-'}; torch "
              f"{', '.join(th['unmapped']) or '-'}")
    per_core = peak_gflops / threads
    rows = []
    for key, nodes, tcat in PRODUCTS:
        if key == "conv input + weight grads":
            f = th["flops"].get("conv input grad", 0.0) + th["flops"].get("conv weight grad", 0.0)
        else:
            f = th["flops"].get(key, 0.0)
        if f <= 0:
            continue
        p_ms = sum(pg["nodes"].get(n, {}).get("cpu_ms", 0.0) for n in nodes)
        t_ms = th["cats"].get(tcat, 0.0) if tcat else None
        frac = [f / (ms * 1e-3) / 1e9 / per_core if ms else None for ms in (p_ms, t_ms)]
        rows.append((key, f, p_ms, t_ms, frac))
    if rows:
        print(f"\nFraction of peak: GFLOP per step / CPU seconds / the measured FMA peak per core "
              f"at {threads} thread(s) ({per_core:.1f} GFLOP/s per CPU-second)\n")
        print("| product | GFLOP per step | pygpu CPU ms | pygpu % of peak | torch CPU ms | "
              "torch % of peak |")
        print("|---|---|---|---|---|---|")
        for key, f, p_ms, t_ms, frac in rows:
            cells = [f"{frac[0] * 100:.0f}%" if frac[0] else "-",
                     f"{t_ms:.1f}" if t_ms is not None else "(in one op)",
                     f"{frac[1] * 100:.0f}%" if frac[1] else "-"]
            print(f"| {key} | {f / 1e9:.2f} | {p_ms:.1f} | {cells[0]} | {cells[1]} | {cells[2]} |")
    line = next_step(pg, th, {k: (p_ms, frac[0]) for k, _, p_ms, _, frac in rows}, want)
    print(f"\n**Next step:** {line}")
    return line


# a node category's product in the fraction-of-peak table
_PRODUCT_OF = {"conv forward": "conv forward",
               "conv backward (input + weight grads)": "conv input + weight grads",
               "linear GEMMs forward": "linear GEMMs forward",
               "linear GEMMs backward": "linear GEMMs backward",
               "attention (SDPA)": "attention"}


def next_step(pg, th, products, want=None):
    """What the profile says to do next, in one line. CPU first: to reach the target pygpu's
    step may take torch's CPU / want; if it already takes no more, the miss is wall time
    (cores left idle) or load. Else the categories where pygpu spends more than torch, largest
    first, the time outside nodes among them (a difference of totals: perf_outside_nodes.py
    confirms it); and where those do not cover the cut, the largest category with its
    fraction of peak, which has to get faster than torch's. products: {product: (pygpu CPU
    ms, pygpu fraction of peak)}."""
    want = want or 1.0
    allowed = th["step_ms"] / want
    cut = pg["step_ms"] - allowed
    if cut <= 0:
        return (f"pygpu's step takes {pg['step_ms']:.0f} CPU ms, within the {allowed:.0f} ms "
                f"the target allows ({want:g}x torch's {th['step_ms']:.0f}): the miss is wall "
                f"time, cores left idle between or inside nodes (the busy-cores column), or "
                f"the machine's load")
    gaps = sorted(((pg["cats"].get(c, 0.0) - th["cats"].get(c, 0.0), c) for c in ORDER),
                  reverse=True)
    over = [(d, c) for d, c in gaps if d >= 1.0]
    parts = []
    for d, c in over[:2]:
        note = " (a difference of totals)" if c == OUTSIDE else ""
        parts.append(f"{c} ({d:+.0f} ms{note}): {NEXT_STEP[c]}")
    line = f"cut {cut:.0f} CPU ms a step to reach {want:g}x"
    if parts:
        line += "; " + "; then ".join(parts)
    if sum(d for d, _ in over) < cut:  # beyond torch's cost: the biggest category faster
        big = max((c for c in ORDER if c not in (OTHER, OUTSIDE)),
                  key=lambda c: pg["cats"].get(c, 0.0))
        ms, frac = products.get(_PRODUCT_OF.get(big), (None, None))
        peak = f" at {frac * 100:.0f}% of the FMA peak" if frac else ""
        lead = ("beyond torch's costs, the largest category faster" if parts else
                "no category costs more than torch's: the largest, faster than torch's")
        line += f"; {lead}: {big} ({pg['cats'].get(big, 0.0):.0f} ms{peak}): {NEXT_STEP[big]}"
    return line
