# test_conv_dnnl.py - the CPU convolutions' two paths (csrc/backends/cpu/cpu_conv_dnnl.c):
# oneDNN's primitives and pygpu's own kernels, each forced (pygpu.backends.mkldnn.set_conv_path)
# on odd shapes (one sample, odd channels, groups, depthwise, padding 0 and 1, stride 2,
# dilation, a stride that leaves inputs unread, 'same' with an even kernel) against torch,
# forward, input gradient, weight gradient and bias gradient in float32, on cpu and sim; the
# choice table's answers (pygpu.backends.mkldnn.conv_path) and that a node really ran where it
# says (mkldnn.calls()); PYGPU_CONV, oneDNN absent (PYGPU_DNNL_LIBRARY=none), and every ISA
# level this CPU has (PYGPU_ISA caps oneDNN too), each in its own process.
#
# oneDNN is a test extra (pyproject's [test] has onednn-cpu-gomp): its absence fails here.
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pygpu
from pygpu.backends import mkldnn
from pygpu.nn import functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional
LEVELS = ("baseline", "avx2", "avx512", "avx512_bf16")

# (name, x shape, w shape, bias, kwargs)
CASES = [
    ("batch-1", (1, 8, 9, 9), (16, 8, 3, 3), True, dict(padding=1)),
    ("odd-channels", (3, 7, 11, 10), (5, 7, 3, 3), True, dict(padding=1)),
    ("padding-0", (2, 16, 10, 12), (24, 16, 3, 3), False, dict(padding=0)),
    ("stride-2", (2, 16, 15, 15), (32, 16, 3, 3), True, dict(stride=2, padding=1)),
    ("stride-2-1x1", (2, 16, 9, 9), (32, 16, 1, 1), False, dict(stride=2)),
    ("stride-unread", (2, 8, 10, 10), (8, 8, 3, 3), True, dict(stride=3, padding=0)),
    ("dilation", (2, 8, 13, 12), (8, 8, 3, 3), True, dict(padding=2, dilation=2)),
    ("groups", (2, 12, 9, 9), (18, 4, 3, 3), True, dict(groups=3, padding=1)),
    ("depthwise", (2, 24, 16, 16), (24, 1, 3, 3), True, dict(groups=24, padding=1)),
    ("depthwise-s2", (3, 24, 15, 15), (48, 1, 3, 3), False, dict(groups=24, stride=2, padding=1)),
    ("stem-7x7", (2, 3, 32, 32), (16, 3, 7, 7), False, dict(stride=2, padding=3)),
    ("same-even", (2, 8, 9, 9), (8, 8, 4, 4), True, dict(padding="same")),
    ("asymmetric", (2, 8, 9, 14), (12, 8, 3, 5), True, dict(stride=(1, 2), padding=(1, 2))),
]


def _run(device, x, w, b, kw):
    """Forward and the three gradients on pygpu, under the current path."""
    g = np.random.default_rng(2)
    px = pygpu.tensor(x, device=device).requires_grad_(True)
    pw = pygpu.tensor(w, device=device).requires_grad_(True)
    pb = None if b is None else pygpu.tensor(b, device=device).requires_grad_(True)
    y = F.conv2d(px, pw, pb, **kw)
    gy = g.standard_normal(tuple(y.shape)).astype(np.float32)
    (y * pygpu.tensor(gy, device=device)).sum().backward()
    out = [y.detach().numpy(), px.grad.numpy(), pw.grad.numpy()]
    return out + ([pb.grad.numpy()] if pb is not None else []), gy


def _reference(x, w, b, kw, gy):
    tx = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    tw = torch.tensor(w, dtype=torch.float64, requires_grad=True)
    tb = None if b is None else torch.tensor(b, dtype=torch.float64, requires_grad=True)
    y = TF.conv2d(tx, tw, tb, **kw)
    (y * torch.tensor(gy, dtype=torch.float64)).sum().backward()
    out = [y.detach().numpy(), tx.grad.numpy(), tw.grad.numpy()]
    return out + ([tb.grad.numpy()] if tb is not None else [])


def _data(xs, ws, bias, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(xs).astype(np.float32)
    w = (rng.standard_normal(ws) / np.sqrt(np.prod(ws[1:]))).astype(np.float32)
    b = rng.standard_normal(ws[0]).astype(np.float32) if bias else None
    return x, w, b


@pytest.fixture
def conv_path():
    before = mkldnn.get_conv_path()
    yield mkldnn.set_conv_path
    mkldnn.set_conv_path(before)


def test_onednn_is_installed():
    # the [test] extra installs it: a missing wheel is a failure, not a skip
    assert mkldnn.is_available(), mkldnn.unavailable_reason()
    assert mkldnn.version().startswith("3.")
    assert mkldnn.unavailable_reason() is None


@pytest.mark.filterwarnings("ignore:Using padding='same'")  # torch's own note on its path
@pytest.mark.parametrize("path", ["own", "dnnl"])
@pytest.mark.parametrize("name,xs,ws,bias,kw", CASES, ids=[c[0] for c in CASES])
def test_each_path_matches_torch(device, conv_path, path, name, xs, ws, bias, kw):
    x, w, b = _data(xs, ws, bias)
    conv_path(path)
    before = mkldnn.calls()
    ours, gy = _run(device, x, w, b, kw)
    ran = mkldnn.calls() - before
    # forward, input gradient, weight gradient: each one CONV node on oneDNN when forced
    assert ran == (3 if path == "dnnl" else 0), ran
    for o, r in zip(ours, _reference(x, w, b, kw, gy)):
        np.testing.assert_allclose(o, r, rtol=1e-4, atol=2e-5 * max(1.0, np.abs(r).max()))


def test_auto_follows_the_table(conv_path):
    conv_path("auto")
    # a ResNet's 3x3 at 16x16 and 8x8: oneDNN on an Intel CPU and on AMD's AVX-512, pygpu's
    # own forward on AMD's AVX2; MobileNet's 1x1 at 32x32: pygpu's own on every table
    table = mkldnn.conv_path((32, 128, 16, 16), (128, 128, 3, 3), 1, 1)[1].split("(")[-1]
    table = table.removesuffix(" table)")
    assert table in ("Intel AVX-512", "AMD AVX-512", "AMD AVX2"), table
    for which in ("forward", "input", "weight"):
        path, why = mkldnn.conv_path((32, 128, 16, 16), (128, 128, 3, 3), 1, 1, which=which)
        want = "own" if table == "AMD AVX2" and which != "weight" else "dnnl"
        assert path == want, why
        assert why == (f"3x3 stride 1 at 16x16: {'oneDNN' if want == 'dnnl' else 'pygpu' + chr(39) + 's own'}"
                       f" measured faster ({table} table)"), why
        path, why = mkldnn.conv_path((32, 16, 32, 32), (96, 16, 1, 1), which=which)
        assert path == "own" and why.startswith("1x1 stride 1 at 32x32+"), why
    # 512 channels at 4x4: oneDNN forward; the weight gradient pygpu's own but on AMD AVX-512
    assert mkldnn.conv_path((32, 512, 4, 4), (512, 512, 3, 3), 1, 1)[0] == "dnnl"
    assert mkldnn.conv_path((32, 512, 4, 4), (512, 512, 3, 3), 1, 1, which="weight")[0] == \
        ("dnnl" if table == "AMD AVX-512" else "own")
    # what the table says is what runs: a 1x1 at 32x32 never reaches oneDNN, a 3x3 at 4x4
    # does (on every table)
    x, w, _ = _data((2, 16, 32, 32), (24, 16, 1, 1), False)
    before = mkldnn.calls()
    F.conv2d(pygpu.tensor(x), pygpu.tensor(w))
    assert mkldnn.calls() == before
    x, w, _ = _data((2, 16, 4, 4), (16, 16, 3, 3), False)
    F.conv2d(pygpu.tensor(x), pygpu.tensor(w), padding=1)
    assert mkldnn.calls() == before + 1


def test_paths_that_stay_on_pygpus_kernels(conv_path):
    conv_path("dnnl")
    path, why = mkldnn.conv_path((2, 8, 9, 9), (8, 8, 3, 3), dtype="float64")
    assert path == "own" and "float32" in why
    path, why = mkldnn.conv_path((2, 8, 9, 9), (8, 8, 3, 3), which="input", bias=True)
    assert path == "own" and "ConvTranspose" in why
    assert mkldnn.conv_path((2, 8, 9, 9), (8, 8, 3, 3))[0] == "dnnl"
    # float64 and ConvTranspose with a bias are right on the dnnl setting (pygpu's kernels)
    x = np.random.default_rng(0).standard_normal((2, 4, 7, 7))
    w = np.random.default_rng(1).standard_normal((4, 6, 3, 3))
    b = np.random.default_rng(2).standard_normal(6)
    before = mkldnn.calls()
    y = F.conv_transpose2d(pygpu.tensor(x).float(), pygpu.tensor(w).float(),
                           pygpu.tensor(b).float(), stride=2)
    ref = TF.conv_transpose2d(torch.tensor(x).float(), torch.tensor(w).float(),
                              torch.tensor(b).float(), stride=2)
    np.testing.assert_allclose(y.numpy(), ref.numpy(), rtol=1e-4, atol=1e-4)
    y64 = F.conv2d(pygpu.tensor(x), pygpu.tensor(w).transpose(0, 1).contiguous())
    ref64 = TF.conv2d(torch.tensor(x), torch.tensor(w).transpose(0, 1))
    np.testing.assert_allclose(y64.numpy(), ref64.numpy(), rtol=1e-12)
    assert mkldnn.calls() == before


def test_torchs_thread_count_is_left_alone(conv_path):
    # torch's libgomp is global in a process that imported torch, and oneDNN's regions run on
    # it: the OpenMP count pygpu sets for a call is put back (it once left torch at 1 thread)
    conv_path("dnnl")
    threads = pygpu.get_num_threads()
    before = torch.get_num_threads()
    try:
        pygpu.set_num_threads(1 if before != 1 else 2)
        x, w, _ = _data((2, 8, 9, 9), (8, 8, 3, 3), False)
        F.conv2d(pygpu.tensor(x), pygpu.tensor(w), padding=1)
    finally:
        pygpu.set_num_threads(threads)
    assert torch.get_num_threads() == before


def test_mode_switches(conv_path):
    conv_path("auto")
    assert mkldnn.enabled is True
    mkldnn.enabled = False
    assert mkldnn.get_conv_path() == "own"
    assert mkldnn.conv_path((32, 128, 16, 16), (128, 128, 3, 3), 1, 1) == ("own", "PYGPU_CONV=own")
    mkldnn.enabled = True
    assert mkldnn.get_conv_path() == "auto"
    with pytest.raises(ValueError, match="'auto', 'own' or 'dnnl'"):
        mkldnn.set_conv_path("fast")
    with pytest.raises(ValueError, match="which must be"):
        mkldnn.conv_path((1, 1, 3, 3), (1, 1, 3, 3), which="backward")


def _in_process(code, **env):
    e = dict(os.environ, **env)
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                       text=True, env=e, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


_CHECK = """
    import numpy as np, torch, pygpu
    from pygpu.backends import mkldnn
    from pygpu.nn import functional as F
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 16, 12, 12)).astype(np.float32)
    w = (rng.standard_normal((32, 16, 3, 3)) / 12).astype(np.float32)
    px = pygpu.tensor(x).requires_grad_(True); pw = pygpu.tensor(w).requires_grad_(True)
    y = F.conv2d(px, pw, stride=2, padding=1); y.sum().backward()
    tx = torch.tensor(x, requires_grad=True); tw = torch.tensor(w, requires_grad=True)
    ty = torch.nn.functional.conv2d(tx, tw, stride=2, padding=1); ty.sum().backward()
    for a, b in ((y.detach(), ty.detach()), (px.grad, tx.grad), (pw.grad, tw.grad)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-4)
    print(mkldnn.get_conv_path(), mkldnn.calls(), mkldnn.unavailable_reason())
"""


# auto: 3x3 stride 2 at 12x12 (the 8x8 row): oneDNN's forward, pygpu's own gradients
@pytest.mark.parametrize("env,path,calls", [("own", "own", 0), ("dnnl", "dnnl", 3),
                                           ("auto", "auto", 1)])
def test_pygpu_conv_environment_variable(env, path, calls):
    out = _in_process(_CHECK, PYGPU_CONV=env, PYGPU_CONV_TABLE="intel").split()
    assert out[:3] == [path, str(calls), "None"], out


def test_without_onednn_every_path_is_pygpus_own():
    out = _in_process(_CHECK, PYGPU_CONV="dnnl", PYGPU_DNNL_LIBRARY="none")
    assert out.startswith("dnnl 0 "), out
    assert "pip install pygpu[cpu-fast]" in out, out
    out = _in_process("""
        from pygpu.backends import mkldnn
        print(mkldnn.conv_path((2, 8, 9, 9), (8, 8, 3, 3)))
    """, PYGPU_DNNL_LIBRARY="none")
    assert "oneDNN is not loaded" in out and "'own'" in out, out


@pytest.mark.parametrize("level", LEVELS)
def test_every_isa_level_is_right(level):
    if LEVELS.index(level) > LEVELS.index(pygpu.cpu_isa(detected=True)):
        pytest.skip(f"this CPU has no {level}")
    out = _in_process(_CHECK, PYGPU_CONV="dnnl", PYGPU_ISA=level)
    assert out.startswith("dnnl 3 "), out


def test_a_process_forked_after_onednn_ran_keeps_pygpus_kernels():
    # a fork after a convolution had run on oneDNN hung the forked process's next one (its
    # OpenMP threads do not survive a fork): the child runs pygpu's own kernels, and says why
    out = _in_process("""
        import os
        import numpy as np
        import pygpu
        from pygpu.backends import mkldnn
        from pygpu.nn import functional as F
        x = pygpu.tensor(np.random.default_rng(0).standard_normal((2, 8, 16, 16)).astype("float32"))
        w = pygpu.tensor(np.random.default_rng(1).standard_normal((8, 8, 3, 3)).astype("float32"))
        want = F.conv2d(x, w, padding=1).numpy()
        assert mkldnn.calls() == 1, mkldnn.calls()
        pid = os.fork()
        if pid == 0:
            got = F.conv2d(x, w, padding=1).numpy()
            ok = np.allclose(got, want, rtol=1e-4, atol=1e-4) and mkldnn.calls() == 1
            why = mkldnn.conv_path((2, 8, 16, 16), (8, 8, 3, 3))
            os.write(1, f"child {ok} {why}\\n".encode())
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        print("parent", status, mkldnn.conv_path((2, 8, 16, 16), (8, 8, 3, 3)))
    """, PYGPU_CONV="auto", PYGPU_CONV_TABLE="intel")  # Intel's: oneDNN at 16x16 at any ISA
    assert "child True" in out and "forked after oneDNN was loaded" in out, out
    assert "parent 0" in out and "'dnnl'" in out.split("parent", 1)[1], out


# ---- threads: oneDNN's OpenMP team against pygpu's pool, and what the instrument counts ----
_THREADS = """
    import os, sys, time
    import numpy as np, pygpu
    from pygpu.nn import functional as F
    def thread_ms():  # {thread id: CPU ms} of this process
        out = {}
        for t in os.listdir("/proc/self/task"):
            f = open(f"/proc/self/task/{t}/stat").read().rsplit(")", 1)[1].split()
            out[t] = (int(f[11]) + int(f[12])) * 10
        return out
    rng = np.random.default_rng(0)
    x = pygpu.tensor(rng.standard_normal((8, 64, 32, 32)).astype(np.float32))
    w = pygpu.tensor(rng.standard_normal((64, 64, 3, 3)).astype(np.float32))
    pygpu.set_num_threads(2)
    F.conv2d(x, w, padding=1)  # a primitive made at 2 threads
    pygpu.set_num_threads(int(sys.argv[1]))
    F.conv2d(x, w, padding=1)
    a, c0 = thread_ms(), time.process_time()
    for _ in range(100):
        F.conv2d(x, w, padding=1)
    b, cpu = thread_ms(), (time.process_time() - c0) * 1e3
    me = str(__import__("threading").get_native_id())
    others = sum(b[t] - a.get(t, 0) for t in b if t != me)
    print(round(cpu), others)
"""


def _threads_run(threads, **env):
    e = dict(os.environ, PYGPU_CONV="dnnl", **env)
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(_THREADS), str(threads)],
                       capture_output=True, text=True, env=e, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    cpu, others = (int(v) for v in p.stdout.split())
    return cpu, others, p.stderr


@pytest.mark.parametrize("split", ["1", "0"])
def test_one_thread_means_one_thread(split):
    # oneDNN fixes a primitive's OpenMP team when it makes it: the count was set after the
    # primitive was made, and cached primitives were not keyed by it, so at
    # pygpu.set_num_threads(1) a convolution ran on two OpenMP threads (torch not imported)
    cpu, others, _ = _threads_run(1, PYGPU_DNNL_SPLIT=split)
    assert others <= 0.1 * cpu + 20, (cpu, others)


def _busy_rows(stderr):
    rows = {}
    for line in stderr.splitlines():
        parts = line.split()
        if len(parts) == 9 and parts[0] != "node":
            try:
                rows[parts[0]] = [float(v) for v in parts[1:]]
            except ValueError:
                pass
    return rows


@pytest.mark.parametrize("split", ["1", "0"])
def test_the_instrument_counts_onednns_threads(split):
    # PYGPU_NODE_BUSY counted a oneDNN node's calling thread alone: its OpenMP team's CPU
    # read as "outside nodes" and a convolution as 150% of the FMA peak. Now the node's CPU
    # is the process's while it ran (split=0: the team; split=1: pygpu's pool, a slice each)
    # On a loaded machine the caller may run both slices before the pool's worker wakes (the
    # pool's rule, not a fault: CI under -n auto, 70 of 296 ms on the other thread; under
    # ASan 40 of 268 in each of three runs), so how much the other threads did is not
    # asserted; up to three runs are taken for one where they did a quarter, which is where
    # the old instrument's undercount shows
    for _ in range(3):
        cpu, others, err = _threads_run(2, PYGPU_DNNL_SPLIT=split, PYGPU_NODE_BUSY="1")
        if others > 0.25 * cpu:
            break
    conv = _busy_rows(err)["conv2d"]  # calls, serial, cpu, crit, cores, idle, serial, wall
    assert conv[0] == 102
    # the node's CPU against the process's over the 100 timed calls (+ 2 untimed ones): the
    # old instrument counted the caller's half, about 0.5; 0.77 seen under ASan and -n 2
    assert conv[2] >= 0.7 * cpu, (conv, cpu)


# The choice table is the CPU's: its vendor's, at its ISA class (PYGPU_CONV_TABLE forces the
# vendor). 3x3 stride 2 at 8x8 (ResNet's 256->512): the weight gradient was pygpu's own on the
# Intel Xeon, oneDNN's on AMD's Zen 5 at AVX-512, pygpu's own again at AVX2; 3x3 stride 1 at
# 32x32: oneDNN's forward but on AMD at AVX2
@pytest.mark.parametrize("vendor,isa,table,weight,forward", [
    ("intel", None, "Intel AVX-512", "own", "dnnl"),
    ("amd", "avx512", "AMD AVX-512", "dnnl", "dnnl"),
    ("amd", "avx2", "AMD AVX2", "own", "own"),
])
def test_the_table_is_the_cpus(vendor, isa, table, weight, forward):
    if isa == "avx512" and LEVELS.index(pygpu.cpu_isa(detected=True)) < LEVELS.index("avx512"):
        pytest.skip("this CPU has no AVX-512")
    env = dict(PYGPU_CONV_TABLE=vendor, **({"PYGPU_ISA": isa} if isa else {}))
    out = _in_process("""
        from pygpu.backends import mkldnn
        print(*mkldnn.conv_path((32, 256, 8, 8), (512, 256, 3, 3), 2, 1, which="weight"), sep="|")
        print(*mkldnn.conv_path((32, 64, 32, 32), (64, 64, 3, 3), 1, 1), sep="|")
    """, **env).splitlines()
    assert out[0].startswith(f"{weight}|3x3 stride 2 at 8x8") and f"({table} table)" in out[0], out
    assert out[1].startswith(f"{forward}|3x3 stride 1 at 32x32+"), out
