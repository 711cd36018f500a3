# test_onnx_export.py - pygpu.onnx.export (torch.onnx.export) writes a real ONNX model:
# ONNX's checker accepts it and ONNX Runtime's outputs match pygpu's forward, for networks
# of every layer the exporter converts, with a dynamic batch axis; a tensor op between
# layers is traced (tests/test_onnx_tracing.py has the rest of the tracing exporter).
import numpy as np
import pytest

import pygpu
from pygpu import nn

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def _run(model, x, tmp_path, batch=7):
    path = tmp_path / "model.onnx"
    pygpu.onnx.export(model, (x,), str(path), input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    onnx.checker.check_model(onnx.load(str(path)))
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    model.eval()
    return sess, path


NETS = {
    "mlp": lambda: nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16), nn.Tanh(),
                                 nn.Linear(16, 16), nn.Sigmoid(), nn.Linear(16, 4, bias=False),
                                 nn.LogSoftmax(dim=1)),
    "activations": lambda: nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 16),
                                         nn.GELU(approximate="tanh"), nn.SiLU(), nn.ELU(0.7),
                                         nn.LeakyReLU(0.2), nn.Dropout(0.5), nn.Identity(),
                                         nn.Linear(16, 3), nn.Softmax(dim=-1)),
    "norms": lambda: nn.Sequential(nn.Flatten(), nn.Linear(8, 16), nn.BatchNorm1d(16),
                                   nn.LayerNorm(16), nn.Linear(16, 2)),
}


@pytest.mark.parametrize("name", list(NETS))
def test_outputs_match_onnx_runtime(name, tmp_path):
    pygpu.manual_seed(0)
    model = NETS[name]()
    if name == "norms":  # running statistics that are not the initial ones
        model.train()
        model(pygpu.randn(32, 2, 4) * 3 + 1)
    x = pygpu.randn(5, 2, 4) if name == "norms" else pygpu.randn(5, 8)
    sess, _ = _run(model, x, tmp_path)
    xb = np.random.default_rng(1).standard_normal((7,) + tuple(x.shape[1:])).astype(np.float32)
    (got,) = sess.run(None, {"x": xb})
    with pygpu.no_grad():
        want = model(pygpu.tensor(xb)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


class _Words(nn.Module):
    """A module whose forward() only chains modules: an embedding, then layers."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, 8)
        self.body = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 5))

    def forward(self, ids):
        return self.body(self.emb(ids))


def test_embedding_and_a_custom_module(tmp_path):
    model = _Words()
    ids = pygpu.tensor([[1, 2, 3], [4, 5, 49]])
    sess, _ = _run(model, ids, tmp_path)
    idb = np.array([[7, 0, 3], [9, 9, 1], [2, 4, 6]], np.int64)
    (got,) = sess.run(None, {"x": idb})
    np.testing.assert_allclose(got, model(pygpu.tensor(idb)).detach().numpy(), rtol=1e-5,
                               atol=1e-6)


def test_a_tensor_op_between_layers_is_traced(tmp_path):
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(4, 4), nn.Linear(4, 2)

        def forward(self, x):
            return self.b(self.a(x) * 2)  # `* 2` is no module: traced on pygpu's dispatch

    net = Net()
    sess, _ = _run(net, pygpu.randn(3, 4), tmp_path)
    xb = np.random.default_rng(3).standard_normal((5, 4)).astype(np.float32)
    (got,) = sess.run(None, {"x": xb})
    np.testing.assert_allclose(got, net(pygpu.tensor(xb)).detach().numpy(), rtol=1e-5,
                               atol=1e-6)


def test_the_torch_spelling():
    assert pygpu.onnx.export is __import__("pygpu.onnx", fromlist=["export"]).export
    assert nn.Linear in pygpu.onnx.CONVERTERS and not pygpu.onnx.is_in_onnx_export()


def test_a_convolutional_network(tmp_path):
    if not hasattr(nn, "Conv2d"):
        pytest.skip("pygpu.nn has no Conv2d in this build")
    pygpu.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Conv2d(8, 8, 3, stride=2, padding="valid", groups=2),
                          nn.AvgPool2d(2), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 3))
    model.train()
    model(pygpu.randn(16, 3, 16, 16))  # running statistics that are not the initial ones
    sess, _ = _run(model, pygpu.randn(2, 3, 16, 16), tmp_path)
    xb = np.random.default_rng(2).standard_normal((3, 3, 16, 16)).astype(np.float32)
    (got,) = sess.run(None, {"x": xb})
    with pygpu.no_grad():
        want = model(pygpu.tensor(xb)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
