# test_quantization.py - pygpu.quantization and pygpu.nn.quantized on cpu, sim and cuda.
#
#   - quantize_dynamic / prepare + convert replace the chosen Linear layers (spec by type or
#     name: the last layer can stay float), fuse Linear + activation of a Sequential, and
#     chain static int8 layers with u8 between them;
#   - accuracy on scikit-learn's digits: an MLP 64-128-10 trained with pygpu, quantized:
#     argmax agreement >= 98% with its float self, accuracy drop <= 1 point (dynamic) and
#     <= 1.5 points (static, with each observer);
#   - the output error is within 2x of torch.ao.quantization.quantize_dynamic's on the same
#     weights;
#   - state_dict (int8 weights, scales, zero points) through pygpu.save/load and safetensors;
#     .to("sim:0") moves about a quarter of the float model's bytes, as the counters show,
#     and pygpu.cost.predict prices it;
#   - bad input raises TypeError/ValueError naming the problem.
import numpy as np
import pytest

import pygpu
from pygpu import nn
from pygpu import quantization as Q
from pygpu.nn import quantized as nnq


def _host(t):
    return (t if str(t.device) == "cpu" else t.cpu()).detach().numpy()


@pytest.fixture(scope="module")
def digits():
    """(float model trained on cpu, X_train, X_test, y_test)"""
    datasets = pytest.importorskip("sklearn.datasets")
    X, y = datasets.load_digits(return_X_y=True)
    X = (X / 16.0).astype(np.float32)
    idx = np.random.default_rng(0).permutation(len(X))
    tr, te = idx[:1400], idx[1400:]
    pygpu.manual_seed(0)
    model = nn.MLP([64, 128, 10])
    opt = pygpu.optim.Adam(model.parameters(), lr=1e-2)
    xt, yt = pygpu.tensor(X[tr]), pygpu.tensor(y[tr].astype(np.int64))
    for _ in range(60):
        for i in range(0, 1400, 100):
            opt.zero_grad()
            pygpu.cross_entropy(model(xt[i:i + 100]), yt[i:i + 100]).backward()
            opt.step()
    return model, X[tr], X[te], y[te]


def _on(model, device):
    return model if device == "cpu" else Q.quantize.__dict__["_copy_module"](model).to(device)


def _scores(model, qmodel, X, y, device):
    x = pygpu.tensor(X, device=device)
    f, q = _host(model(x)).argmax(1), _host(qmodel(x)).argmax(1)
    return (f == y).mean(), (q == y).mean(), (f == q).mean()


def test_dynamic_keeps_digits_accuracy(digits, device):
    model, _, X, y = digits
    m = _on(model, device)
    q = Q.quantize_dynamic(m, {nn.Linear}, dtype=pygpu.qint8)
    assert all(isinstance(l, nnq.dynamic.Linear) for l in q.layers)
    assert isinstance(m.layers[0], nn.Linear)  # inplace=False: the float model is untouched
    acc_f, acc_q, agree = _scores(m, q, X, y, device)
    assert acc_f > 0.95 and agree >= 0.98 and acc_f - acc_q <= 0.01, (acc_f, acc_q, agree)


OBSERVERS = {
    "minmax": Q.MinMaxObserver,
    "moving_average": Q.MovingAverageMinMaxObserver,
    "entropy": Q.HistogramObserver,
    "percentile": lambda: Q.HistogramObserver(method="percentile", percentile=99.99),
}


@pytest.mark.parametrize("observer", list(OBSERVERS))
def test_static_keeps_digits_accuracy(digits, device, observer):
    model, Xtr, X, y = digits
    m = _on(model, device)
    prepared = Q.prepare(m, observer=OBSERVERS[observer])
    for i in range(0, 1400, 200):
        prepared(pygpu.tensor(Xtr[i:i + 200], device=device))
    q = Q.convert(prepared)
    assert all(isinstance(l, nnq.Linear) for l in q.layers)
    assert q.layers[0].emit_int8 and not q.layers[1].emit_int8  # u8 between the two layers
    acc_f, acc_q, agree = _scores(m, q, X, y, device)
    assert agree >= 0.98 and acc_f - acc_q <= 0.015, (acc_f, acc_q, agree)


def test_int8_between_layers_is_the_requantized_output(device):
    pygpu.manual_seed(1)
    seq = nn.Sequential(nn.Linear(20, 30), nn.ReLU(), nn.Linear(30, 30), nn.ReLU(),
                        nn.Linear(30, 5)).to(device)
    x = pygpu.randn(40, 20, device=device)
    p = Q.prepare(seq)
    p(x)
    q = Q.convert(p)
    assert isinstance(q[1], nnq.Identity) and q[0].activation == "relu" and q[0].emit_int8
    h = q[0](x)
    assert isinstance(h, Q.QuantizedActivation) and h.zero_point == 0  # post-ReLU: zp 0
    assert (h.scale, h.zero_point) == (q[2].input_scale.value, q[2].input_zero_point.value)
    u8 = h.int_repr()
    assert u8.dtype == np.uint8 and u8.max() <= 127
    # the u8 activations are the float layer's output, quantized: off by the rounding (half a
    # level) plus what the int8 input and weights add, a level or two at most
    err = np.abs(u8 * h.scale - np.maximum(_host(seq[0](x)), 0))
    assert err.max() <= 3 * h.scale and err.mean() <= 0.6 * h.scale
    out, want = _host(q(x)), _host(seq(x))
    assert np.abs(out - want).max() <= 0.05 * np.abs(want).max() + 0.02


def test_spec_by_name_keeps_the_last_layer_float(device):
    m = nn.MLP([16, 32, 8]).to(device)
    q = Q.quantize_dynamic(m, {nn.Linear: pygpu.qint8, "layers.1": None})
    assert isinstance(q.layers[0], nnq.dynamic.Linear) and type(q.layers[1]) is nn.Linear
    p = Q.prepare(m, qconfig_spec={"layers.0": pygpu.qint8})
    p(pygpu.randn(8, 16, device=device))
    s = Q.convert(p)
    assert isinstance(s.layers[0], nnq.Linear) and not s.layers[0].emit_int8
    assert type(s.layers[1]) is nn.Linear
    x = pygpu.randn(8, 16, device=device)
    assert np.abs(_host(s(x)) - _host(m(x))).max() < 0.05


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning")
def test_error_within_2x_of_torch_quantize_dynamic():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    w1 = (rng.standard_normal((256, 128)) * 0.1).astype(np.float32)
    b1 = (rng.standard_normal(256) * 0.1).astype(np.float32)
    w2 = (rng.standard_normal((10, 256)) * 0.1).astype(np.float32)
    b2 = (rng.standard_normal(10) * 0.1).astype(np.float32)
    x = rng.standard_normal((200, 128)).astype(np.float32)
    tm = torch.nn.Sequential(torch.nn.Linear(128, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    pm = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 10))
    with torch.no_grad():
        for tl, pl, w, b in ((tm[0], pm[0], w1, b1), (tm[2], pm[2], w2, b2)):
            tl.weight.copy_(torch.from_numpy(w))
            tl.bias.copy_(torch.from_numpy(b))
            with pygpu.no_grad():
                pl.weight.copy_(pygpu.tensor(w))
                pl.bias.copy_(pygpu.tensor(b))
        ref = tm(torch.from_numpy(x)).numpy()
        tq = torch.ao.quantization.quantize_dynamic(tm, {torch.nn.Linear}, dtype=torch.qint8)
        err_torch = np.abs(tq(torch.from_numpy(x)).numpy() - ref).mean()
    err_ours = np.abs(Q.quantize_dynamic(pm)(pygpu.tensor(x)).numpy() - ref).mean()
    assert np.abs(pm(pygpu.tensor(x)).detach().numpy() - ref).max() < 1e-4
    assert err_ours <= 2 * err_torch, (err_ours, err_torch)


def test_state_dict_save_load_and_safetensors(tmp_path, device):
    safetensors_numpy = pytest.importorskip("safetensors.numpy")
    pygpu.manual_seed(2)
    m = nn.MLP([32, 64, 10]).to(device)
    x = pygpu.randn(16, 32, device=device)
    p = Q.prepare(m)
    p(x)
    q = Q.convert(p)
    sd = q.state_dict()
    assert sd["layers.0.weight"].dtype is pygpu.qint8
    assert sd["layers.0.weight"].int_repr().dtype == np.int8
    for key in ("weight_scale", "weight_zero_point", "bias", "input_scale", "input_zero_point",
                "scale", "zero_point"):
        assert f"layers.1.{key}" in sd
    path = tmp_path / "q.safetensors"
    pygpu.save(sd, path)
    raw = safetensors_numpy.load_file(str(path))
    assert raw["layers.0.weight"].dtype == np.int8 and raw["layers.0.weight"].shape == (64, 32)
    assert np.array_equal(raw["layers.0.weight"], sd["layers.0.weight"].int_repr())
    assert raw["layers.0.zero_point"].dtype == np.int64
    assert raw["layers.0.weight_zero_point"].dtype == np.int64
    assert not raw["layers.0.weight_zero_point"].any()
    # a model calibrated differently takes the saved state and then computes the same
    other = Q.prepare(nn.MLP([32, 64, 10]).to(device))
    other(pygpu.randn(16, 32, device=device) * 3)
    other = Q.convert(other)
    assert not np.array_equal(_host(other(x)), _host(q(x)))
    other.load_state_dict(pygpu.load(path))
    assert np.array_equal(_host(other(x)), _host(q(x)))
    # dynamic too
    d = Q.quantize_dynamic(m)
    pygpu.save(d.state_dict(), path)
    d2 = Q.quantize_dynamic(nn.MLP([32, 64, 10]).to(device))
    d2.load_state_dict(pygpu.load(path))
    assert np.array_equal(_host(d2(x)), _host(d(x)))


def test_to_sim_moves_a_quarter_of_the_float_bytes_and_predict_prices_it():
    from pygpu.cost import predict
    pygpu.manual_seed(4)
    m = nn.MLP([784, 512, 512, 10])
    q = Q.quantize_dynamic(m)
    with pygpu.track() as tf:
        nn.MLP([784, 512, 512, 10]).to("sim:0")
    with pygpu.track() as tq:
        q.to("sim:0")
    fb, qb = tf.stats.h2d_bytes, tq.stats.h2d_bytes
    assert fb == 4 * sum(int(np.prod(p.shape)) for p in m.parameters())
    assert 0.24 <= qb / fb <= 0.30, (qb, fb)
    x = pygpu.randn(4, 784, device="sim:0")
    assert np.abs(q(x).cpu().numpy() - m.to("sim:0")(x).detach().cpu().numpy()).max() < 0.05
    big = lambda: Q.quantize_dynamic(nn.MLP([4096, 4096])).to("sim:0")  # noqa: E731
    float_big = lambda: nn.MLP([4096, 4096]).to("sim:0")  # noqa: E731
    pq, pf = predict(big, "h100_pcie"), predict(float_big, "h100_pcie")
    assert pq.h2d_seconds < 0.4 * pf.h2d_seconds, (pq.h2d_seconds, pf.h2d_seconds)


def test_bad_input_names_the_problem():
    m = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    with pytest.raises(TypeError, match="ReLU in the spec is not a Linear"):
        Q.quantize_dynamic(m, {nn.ReLU})
    with pytest.raises(TypeError, match="'1' in the spec is a ReLU"):
        Q.quantize_dynamic(m, {"1": pygpu.qint8})
    with pytest.raises(ValueError, match="names 'nope'"):
        Q.quantize_dynamic(m, {"nope": pygpu.qint8})
    with pytest.raises(ValueError, match="dtype must be pygpu.qint8.*float64"):
        Q.quantize_dynamic(m, {nn.Linear}, dtype=pygpu.float64)
    with pytest.raises(ValueError, match="float64"):
        Q.quantize_dynamic(m, {nn.Linear: pygpu.float64})
    with pytest.raises(TypeError, match="expected a pygpu.nn.Module"):
        Q.quantize_dynamic("model")
    with pytest.raises(ValueError, match="no calibration batch"):
        Q.convert(Q.prepare(nn.MLP([4, 4])))
    with pytest.raises(ValueError, match="no observed layers"):
        Q.convert(nn.MLP([4, 4]))
    q = Q.quantize_dynamic(nn.MLP([4, 6, 3]))
    bad = q.state_dict()
    bad["layers.0.weight_zero_point"] = pygpu.ones(6, dtype=pygpu.int64)
    with pytest.raises(ValueError, match="symmetric"):
        Q.quantize_dynamic(nn.MLP([4, 6, 3])).load_state_dict(bad)
    with pytest.raises(ValueError, match="holds int8 weights.*quantize the model first"):
        nn.MLP([4, 6, 3]).load_state_dict(q.state_dict(), strict=False)
    with pytest.raises(TypeError, match="float32 input, got torch.float64"):
        q(pygpu.zeros(2, 4, dtype=pygpu.float64))
    with pytest.raises(ValueError, match="in_features=4"):
        q(pygpu.zeros(2, 5))
    with pytest.raises(ValueError, match="entropy"):
        Q.HistogramObserver(method="kl")
    with pytest.raises(ValueError, match="not finite"):
        o = Q.MinMaxObserver()
        o(np.array([1.0, np.inf], np.float32))
        o.calculate_qparams()


def test_core_checks_the_qlinear_operands():
    from pygpu import _C
    lin = nnq.dynamic.Linear(8, 4)
    x = pygpu.zeros(2, 8)
    with pytest.raises(ValueError, match="packed weight must be"):
        _C._qlinear(x, lin.weight.data[:-1], lin.weight_scale, None, 0, True, 1.0, 0, 127, False,
                    1.0, 0, 255)
    with pytest.raises(ValueError, match="scale must be > 0"):
        _C._qlinear(x, lin.weight.data, lin.weight_scale, None, 0, False, 0.0, 0, 127, False,
                    1.0, 0, 255)
    with pytest.raises(ValueError, match="7-bit"):
        _C._qlinear(x, lin.weight.data, lin.weight_scale, None, 0, True, 1.0, 0, 100, False,
                    1.0, 0, 255)
    with pytest.raises(pygpu.DeviceMismatchError, match="same device"):
        _C._qlinear(x.to("sim:0"), lin.weight.data, lin.weight_scale, None, 0, True, 1.0, 0, 127,
                    False, 1.0, 0, 255)


def test_nd_input_and_activation_kwarg(device):
    lin = nn.Linear(6, 5).to(device)
    q = nnq.dynamic.Linear.from_float(lin)
    x = pygpu.randn(2, 3, 6, device=device)
    y = q(x, activation="relu")
    assert tuple(y.shape) == (2, 3, 5) and _host(y).min() >= 0
    ref = np.maximum(_host(lin(x.reshape(6, 6))).reshape(2, 3, 5), 0)
    assert np.abs(_host(y) - ref).max() < 0.02
