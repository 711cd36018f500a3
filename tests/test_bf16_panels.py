"""The weights' pre-packed bfloat16 panels (csrc/backends/cpu/cpu_bf16_panels.h).

With them on (PYGPU_BF16_PANELS=1 or pygpu._C._bf16_panels(True); off by default) under
bf16 autocast on the cpu device, the optimizer's fused step writes each trained
weight's panels in both orientations (forward x @ W^T, backward dz @ W) and the GEMMs read
them instead of rounding and packing W each time. These tests hold the two promises: the
same bits as packing (the same rounding, slices and tiles), and panels never used after
any other write to the weight (its storage's write stamp, the tensor's `_version`)."""
import numpy as np
import pytest

import pygpu

RUNS = pygpu._C._half_gemm_kernel(pygpu.bfloat16).startswith("avx512_bf16")
needs_kernel = pytest.mark.skipif(
    not RUNS, reason="the panels are the AVX512_BF16 kernel's layout; this build and CPU "
    "run the convert kernel (build with PYGPU_BF16_SIMDE=1 to emulate it)")


@pytest.fixture
def panels_on():
    was = pygpu._C._bf16_panels()[0]
    pygpu._C._bf16_panels(True)
    threads = pygpu.get_num_threads()
    yield
    pygpu._C._bf16_panels(was)
    pygpu.set_num_threads(threads)


def test_off_by_default_and_on_with_the_environment():
    """Off unless PYGPU_BF16_PANELS=1 (cpu_bf16_panels.h: no gain measured on Zen 4)."""
    import os
    import subprocess
    import sys
    code = "import pygpu; print(pygpu._C._bf16_panels()[0])"
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for value, want in ((None, "False"), ("1", "True"), ("0", "False")):
        env = dict(os.environ, PYTHONPATH=root)
        env.pop("PYGPU_BF16_PANELS", None)
        if value is not None:
            env["PYGPU_BF16_PANELS"] = value
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=env, timeout=120)
        assert out.stdout.strip() == want, out.stderr[-2000:]


def _stats():
    on, fwd, dx, packs, slots, nbytes = pygpu._C._bf16_panels()
    return dict(on=on, fwd=fwd, dx=dx, packs=packs, slots=slots, bytes=nbytes)


def _train(on, sizes, batch, opt_name, steps=4, threads=2):
    pygpu._C._bf16_panels(on)
    pygpu.set_num_threads(threads)
    pygpu.manual_seed(0)
    model = pygpu.nn.MLP(list(sizes), activation="relu")
    params = list(model.parameters())
    opt = (pygpu.optim.SGD(params, lr=0.05, momentum=0.9) if opt_name == "sgd"
           else pygpu.optim.Adam(params, lr=1e-3))
    rng = np.random.default_rng(1)
    X = rng.standard_normal((batch * steps, sizes[0])).astype(np.float32)
    y = rng.integers(0, sizes[-1], batch * steps)
    losses = []
    for s in range(steps):
        xb = pygpu.tensor(X[s * batch:(s + 1) * batch])
        yb = pygpu.tensor(y[s * batch:(s + 1) * batch])
        opt.zero_grad()
        with pygpu.autocast("cpu", dtype=pygpu.bfloat16):
            loss = pygpu.nn.functional.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return model, [p.detach().numpy().copy() for p in params], losses


# shapes that cut K into several even slices (600: three of 200; 300 odd halves), rows
# that are no multiple of 16 or 48, a column cut that starts inside a 48-column panel
@needs_kernel
@pytest.mark.parametrize("sizes,batch", [((600, 100, 37, 10), 64), ((301, 96, 10), 37),
                                         ((784, 512, 512, 10), 64)])
@pytest.mark.parametrize("opt_name", ["sgd", "adam"])
@pytest.mark.parametrize("threads", [1, 2])
def test_training_reads_the_panels_and_gives_the_packing_bits(panels_on, sizes, batch,
                                                              opt_name, threads):
    if sizes[0] == 784 and opt_name == "adam":
        pytest.skip("one optimizer is enough at the benchmark's size")
    _, off, loss_off = _train(False, sizes, batch, opt_name, threads=threads)
    before = _stats()
    _, on, loss_on = _train(True, sizes, batch, opt_name, threads=threads)
    after = _stats()
    # every layer's forward and every layer but the first's dX read panels after step 1
    layers = len(sizes) - 1
    assert after["fwd"] - before["fwd"] == 3 * layers
    assert after["dx"] - before["dx"] == 3 * (layers - 1)
    assert after["packs"] - before["packs"] >= 3 * layers
    assert loss_on == loss_off
    for a, b in zip(on, off):
        np.testing.assert_array_equal(a, b)


@needs_kernel
def test_a_write_outside_the_optimizer_is_never_served_stale_panels(panels_on):
    model, _, _ = _train(True, (200, 64, 10), 32, "sgd", steps=3)
    x = pygpu.tensor(np.random.default_rng(3).standard_normal((32, 200)).astype(np.float32))
    w = model.layers[0].weight if hasattr(model, "layers") else list(model.parameters())[0]
    with pygpu.autocast("cpu", dtype=pygpu.bfloat16):
        fresh = model(x).astype(pygpu.float32).detach().numpy()
    s0 = _stats()
    assert s0["slots"] >= 2
    v = w._version
    with pygpu.no_grad():
        w.mul_(0.5)  # through pygpu: a new write stamp
    assert w._version != v
    with pygpu.autocast("cpu", dtype=pygpu.bfloat16):
        out = model(x).astype(pygpu.float32).detach().numpy()
    s1 = _stats()
    assert s1["fwd"] - s0["fwd"] == 1  # the other layer's panels still serve
    pygpu._C._bf16_panels(False)  # the reference: packed from W by the product itself
    with pygpu.autocast("cpu", dtype=pygpu.bfloat16):
        ref = model(x).astype(pygpu.float32).detach().numpy()
    np.testing.assert_array_equal(out, ref)
    assert not np.array_equal(out, fresh)  # the stale panels would have given `fresh`


@needs_kernel
def test_panels_are_per_weight_and_off_frees_them(panels_on):
    _train(True, (120, 48, 10), 16, "sgd", steps=2)
    s = _stats()
    assert s["on"] and s["slots"] >= 2 and s["bytes"] > 0
    pygpu._C._bf16_panels(False)
    s = _stats()
    assert not s["on"] and s["slots"] == 0 and s["bytes"] == 0


def test_inference_and_float32_training_make_no_panels(panels_on):
    pygpu._C._bf16_panels(False)
    pygpu._C._bf16_panels(True)
    pygpu.manual_seed(0)
    model = pygpu.nn.MLP([50, 32, 10], activation="relu")
    x = pygpu.tensor(np.ones((8, 50), np.float32))
    with pygpu.no_grad(), pygpu.autocast("cpu", dtype=pygpu.bfloat16):
        model(x)
    opt = pygpu.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for _ in range(2):  # float32: the bf16 kernel never runs
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
    assert _stats()["slots"] == 0
