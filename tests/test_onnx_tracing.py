# test_onnx_tracing.py - the tracing ONNX exporter (issue 46, item 6): a model of each family
# of the corpus (tests/corpus/manifest.py: two-layer nets, regression, feed-forward and
# convolutional nets, residual networks, LSTM/GRU classifiers, GAN, VAE, word embeddings,
# forward-forward, graph convolution, LSTMCell sequence prediction; the second corpus's
# minGPT) and the attention and Transformer layers export through pygpu's own dispatch,
# written as their programs write them (functional ops, residual adds, view(x.size(0), -1),
# indexing, cat/split), and ONNX Runtime's outputs on inputs of other sizes (dynamic axes)
# match pygpu's. What a trace cannot express is refused, never exported wrong.
import numpy as np
import pytest

import pygpu
from pygpu import nn
import pygpu.nn.functional as F

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def _flat(x):
    if isinstance(x, (tuple, list)):
        return [t for v in x for t in _flat(v)]
    return [x]


def _export_and_compare(model, example, other, dynamic_axes, tmp_path, tol=1e-4):
    model.eval()
    names = [f"in{i}" for i in range(len(example))]
    path = tmp_path / "m.onnx"
    pygpu.onnx.export(model, example, str(path), input_names=names,
                      dynamic_axes={names[i]: axes for i, axes in dynamic_axes.items()})
    onnx.checker.check_model(onnx.load(str(path)))
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    got = sess.run(None, {n: t.numpy() for n, t in zip(names, other)})
    with pygpu.no_grad():
        want = _flat(model(*other))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == tuple(w.shape)
        np.testing.assert_allclose(g, w.numpy(), rtol=tol, atol=tol)
    return onnx.load(str(path))


# ---- the corpus's model families, as their programs write them --------------------------

class TwoLayerNet(nn.Module):  # jcjohnson's two_layer_net_module / _nn / _tensor
    def __init__(self):
        super().__init__()
        self.linear1, self.linear2 = nn.Linear(10, 16), nn.Linear(16, 4)
        self.w = nn.Parameter(pygpu.randn(4, 4))

    def forward(self, x):
        h_relu = self.linear1(x).clamp(min=0)
        return self.linear2(h_relu).mm(self.w)


class DynamicNet(nn.Module):  # jcjohnson's dynamic_net: a layer reused, the count fixed here
    def __init__(self, repeats=2):
        super().__init__()
        self.input_linear, self.middle_linear = nn.Linear(10, 16), nn.Linear(16, 16)
        self.output_linear, self.repeats = nn.Linear(16, 3), repeats

    def forward(self, x):
        h_relu = self.input_linear(x).clamp(min=0)
        for _ in range(self.repeats):
            h_relu = self.middle_linear(h_relu).clamp(min=0)
        return self.output_linear(h_relu)


class ConvNet(nn.Module):  # yunjey's convolutional_neural_network
    def __init__(self):
        super().__init__()
        self.layer1 = nn.Sequential(nn.Conv2d(1, 4, 5, 1, 2), nn.BatchNorm2d(4), nn.ReLU(),
                                    nn.MaxPool2d(2, 2))
        self.layer2 = nn.Sequential(nn.Conv2d(4, 8, 5, 1, 2), nn.BatchNorm2d(8), nn.ReLU(),
                                    nn.MaxPool2d(2, 2))
        self.fc = nn.Linear(4 * 4 * 8, 10)

    def forward(self, x):
        out = self.layer2(self.layer1(x))
        return self.fc(out.reshape(out.size(0), -1))


class MnistNet(nn.Module):  # pytorch/examples' mnist
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(1, 4, 3, 1), nn.Conv2d(4, 8, 3, 1)
        self.dropout1, self.fc1, self.fc2 = nn.Dropout(0.25), nn.Linear(8 * 5 * 5, 16), \
            nn.Linear(16, 10)

    def forward(self, x):
        x = F.relu(self.conv2(F.relu(self.conv1(x))))
        x = self.dropout1(F.max_pool2d(x, 2))
        x = F.relu(self.fc1(pygpu.flatten(x, 1)))
        return F.log_softmax(self.fc2(x), dim=1)


class ResidualBlock(nn.Module):  # yunjey's deep_residual_network
    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1, self.relu = nn.BatchNorm2d(cout), nn.ReLU(inplace=True)
        self.conv2, self.bn2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout)
        self.downsample = None if stride == 1 and cin == cout else nn.Sequential(
            nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        residual = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample:
            residual = self.downsample(x)
        out += residual
        return self.relu(out)


class ResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(ResidualBlock(3, 4), ResidualBlock(4, 8, 2))
        self.avg_pool, self.fc = nn.AvgPool2d(4), nn.Linear(8, 5)

    def forward(self, x):
        out = self.avg_pool(self.layers(x))
        return self.fc(out.view(out.size(0), -1))


class RNNClassifier(nn.Module):  # yunjey's (bidirectional_)recurrent_neural_network, mnist_rnn
    def __init__(self, cell, bidirectional):
        super().__init__()
        self.lstm = cell(6, 8, 2, batch_first=True, bidirectional=bidirectional)
        self.fc = nn.Linear(8 * (2 if bidirectional else 1), 3)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.fc(out[:, -1, :])


class VAEParts(nn.Module):  # pytorch/examples' vae, its encoder and decoder (no sampling)
    def __init__(self):
        super().__init__()
        self.fc1, self.fc21, self.fc22 = nn.Linear(16, 8), nn.Linear(8, 2), nn.Linear(8, 2)
        self.fc3, self.fc4 = nn.Linear(2, 8), nn.Linear(8, 16)

    def forward(self, x):
        h1 = F.relu(self.fc1(x.view(-1, 16)))
        mu, logvar = self.fc21(h1), self.fc22(h1)
        std = pygpu.exp(0.5 * logvar)
        return pygpu.sigmoid(self.fc4(F.relu(self.fc3(mu)))), mu, std


class NGram(nn.Module):  # the word embeddings tutorial's N-gram model
    def __init__(self):
        super().__init__()
        self.embeddings, self.linear1 = nn.Embedding(20, 5), nn.Linear(2 * 5, 16)
        self.linear2 = nn.Linear(16, 20)

    def forward(self, inputs):
        embeds = self.embeddings(inputs).view((1, -1))
        return F.log_softmax(self.linear2(F.relu(self.linear1(embeds))), dim=1)


class FFLayer(nn.Linear):  # pytorch/examples' mnist_forward_forward layer
    def forward(self, x):
        x_direction = x / (x.norm(2, 1, keepdim=True) + 1e-4)
        return pygpu.relu(pygpu.mm(x_direction, self.weight.T) + self.bias.unsqueeze(0))


class GCN(nn.Module):  # pytorch/examples' gcn, its adjacency dense here
    def __init__(self):
        super().__init__()
        self.k1, self.k2 = nn.Parameter(pygpu.randn(6, 8) * 0.3), nn.Parameter(pygpu.randn(8, 3))
        self.b1 = nn.Parameter(pygpu.zeros(8))
        self.dropout = nn.Dropout(0.5)

    def forward(self, x, adj):
        h = self.dropout(F.relu(pygpu.mm(adj, pygpu.mm(x, self.k1)) + self.b1))
        return F.log_softmax(pygpu.mm(adj, pygpu.mm(h, self.k2)), dim=1)


class GATLayer(nn.Module):  # pytorch/examples' gat: masked attention over an adjacency input
    def __init__(self, n_heads=2, n_hidden=4):
        super().__init__()
        self.n_heads, self.n_hidden = n_heads, n_hidden
        self.W = nn.Parameter(pygpu.randn(6, n_hidden * n_heads) * 0.3)
        self.a = nn.Parameter(pygpu.randn(n_heads, 2 * n_hidden, 1) * 0.3)
        self.leakyrelu = nn.LeakyReLU(0.2)

    def forward(self, h, adj_mat):
        n_nodes = h.shape[0]
        h_transformed = pygpu.mm(h, self.W)
        h_transformed = h_transformed.view(n_nodes, self.n_heads, self.n_hidden).permute(1, 0, 2)
        source_scores = pygpu.matmul(h_transformed, self.a[:, :self.n_hidden, :])
        target_scores = pygpu.matmul(h_transformed, self.a[:, self.n_hidden:, :])
        e = self.leakyrelu(source_scores + target_scores.mT)
        connectivity_mask = -9e16 * pygpu.ones_like(e)
        e = pygpu.where(adj_mat > 0, e, connectivity_mask)  # a comparison: traced too
        attention = F.softmax(e, dim=-1)
        return pygpu.matmul(attention, h_transformed).mean(dim=0)


class Sequence(nn.Module):  # pytorch/examples' time_sequence_prediction (float64 there;
    # float32 here: ONNX Runtime's LSTM kernel has no double)
    def __init__(self):
        super().__init__()
        self.lstm1, self.lstm2, self.linear = nn.LSTMCell(1, 8), nn.LSTMCell(8, 8), \
            nn.Linear(8, 1)

    def forward(self, input):
        outputs = []
        h_t = pygpu.zeros(input.size(0), 8, dtype=pygpu.float32)
        c_t = pygpu.zeros(input.size(0), 8, dtype=pygpu.float32)
        h_t2 = pygpu.zeros(input.size(0), 8, dtype=pygpu.float32)
        c_t2 = pygpu.zeros(input.size(0), 8, dtype=pygpu.float32)
        for input_t in input.split(1, dim=1):
            h_t, c_t = self.lstm1(input_t, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            outputs += [self.linear(h_t2)]
        return pygpu.cat(outputs, dim=1)


class MiniGPT(nn.Module):  # the second corpus's minGPT (karpathy/minGPT): token and
    # position embeddings (wpe of an arange made in the forward), causal self-attention as
    # written there (split, view/transpose, masked_fill of a sliced tril buffer); the sequence
    # length is fixed in the graph: the positions and the mask are sliced by it
    def __init__(self, vocab=20, block=8, n_embd=16, n_head=2):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, n_embd), nn.Embedding(block, n_embd)
        self.ln, self.c_attn = nn.LayerNorm(n_embd), nn.Linear(n_embd, 3 * n_embd)
        self.c_proj, self.head = nn.Linear(n_embd, n_embd), nn.Linear(n_embd, vocab, bias=False)
        self.register_buffer("bias", pygpu.tril(pygpu.ones(block, block)).view(1, 1, block, block))
        self.n_embd, self.n_head = n_embd, n_head

    def forward(self, idx):
        b, t = idx.size()
        pos = pygpu.arange(0, t, dtype=pygpu.long).unsqueeze(0)
        x = self.wte(idx) + self.wpe(pos)
        B, T, C = x.size()
        q, k, v = self.c_attn(self.ln(x)).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / (k.size(-1) ** 0.5))
        att = F.softmax(att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf")), dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.head(x + self.c_proj(y))


def _bn_trained(model, x):
    model.train()
    model(x)  # running statistics that are not the initial ones
    return model


def _r(*shape):
    return pygpu.randn(*shape)


FAMILIES = {
    # name: (model builder, example inputs, other-size inputs, dynamic axes per input)
    "two_layer_net": (TwoLayerNet, (_r(3, 10),), (_r(5, 10),), {0: {0: "N"}}),
    "dynamic_net": (DynamicNet, (_r(3, 10),), (_r(6, 10),), {0: {0: "N"}}),
    "regression": (lambda: nn.Linear(4, 1), (_r(8, 4),), (_r(3, 4),), {0: {0: "N"}}),
    "feedforward": (lambda: nn.Sequential(nn.Flatten(), nn.Linear(12, 16), nn.ReLU(),
                                          nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 4)),
                    (_r(2, 3, 4),), (_r(5, 3, 4),), {0: {0: "N"}}),
    "convnet": (lambda: _bn_trained(ConvNet(), _r(8, 1, 16, 16)), (_r(2, 1, 16, 16),),
                (_r(3, 1, 16, 16),), {0: {0: "N"}}),
    "mnist_cnn": (MnistNet, (_r(2, 1, 14, 14),), (_r(4, 1, 14, 14),), {0: {0: "N"}}),
    "resnet": (lambda: _bn_trained(ResNet(), _r(8, 3, 8, 8)), (_r(2, 3, 8, 8),),
               (_r(3, 3, 8, 8),), {0: {0: "N"}}),
    "lstm": (lambda: RNNClassifier(nn.LSTM, False), (_r(2, 5, 6),), (_r(3, 9, 6),),
             {0: {0: "N", 1: "T"}}),
    "bidirectional_lstm": (lambda: RNNClassifier(nn.LSTM, True), (_r(2, 5, 6),),
                           (_r(3, 9, 6),), {0: {0: "N", 1: "T"}}),
    "gru": (lambda: RNNClassifier(nn.GRU, True), (_r(2, 5, 6),), (_r(4, 3, 6),),
            {0: {0: "N", 1: "T"}}),
    "gan": (lambda: _bn_trained(nn.Sequential(
        nn.Linear(4, 16), nn.LeakyReLU(0.2), nn.BatchNorm1d(16), nn.Linear(16, 8), nn.Tanh(),
        nn.Linear(8, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1), nn.Sigmoid()), _r(16, 4)),
        (_r(3, 4),), (_r(6, 4),), {0: {0: "N"}}),
    "vae": (VAEParts, (_r(3, 4, 4),), (_r(5, 4, 4),), {0: {0: "N"}}),
    "word_embeddings": (NGram, (pygpu.tensor([3, 7]),), (pygpu.tensor([1, 19]),), {}),
    "forward_forward": (lambda: FFLayer(6, 5), (_r(3, 6),), (_r(7, 6),), {0: {0: "N"}}),
    "gcn": (GCN, (_r(5, 6), pygpu.rand(5, 5)), (_r(7, 6), pygpu.rand(7, 7)),
            {0: {0: "nodes"}, 1: {0: "nodes", 1: "nodes"}}),
    "gat": (GATLayer, (_r(5, 6), (pygpu.rand(5, 5) > 0.5).float()),
            (_r(5, 6), (pygpu.rand(5, 5) > 0.3).float()), {}),
    "time_sequence": (Sequence, (_r(2, 4),), (_r(2, 4),), {}),
    "mingpt": (MiniGPT, (pygpu.randint(0, 20, (2, 6)),), (pygpu.randint(0, 20, (3, 6)),),
               {0: {0: "N"}}),
    "multihead_attention": (lambda: _MHA(), (_r(2, 5, 16), _r(2, 6, 16)),
                            (_r(3, 4, 16), _r(3, 8, 16)),
                            {0: {0: "N", 1: "L"}, 1: {0: "N", 1: "S"}}),
    "transformer_encoder": (lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(
        16, 2, 32, dropout=0.0, batch_first=True), 2), (_r(2, 5, 16),), (_r(3, 7, 16),),
        {0: {0: "N", 1: "T"}}),
    "transformer_norm_first_gelu": (lambda: nn.TransformerEncoderLayer(
        16, 2, 32, dropout=0.0, norm_first=True, activation="gelu"), (_r(5, 2, 16),),
        (_r(7, 3, 16),), {0: {0: "T", 1: "N"}}),
    "transformer": (lambda: nn.Transformer(16, 2, 1, 1, 32, dropout=0.0, batch_first=True),
                    (_r(2, 5, 16), _r(2, 4, 16)), (_r(3, 6, 16), _r(3, 2, 16)),
                    {0: {0: "N", 1: "S"}, 1: {0: "N", 1: "T"}}),
}


class _MHA(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(16, 4, batch_first=True)

    def forward(self, q, kv):
        out, weights = self.attn(q, kv, kv)
        return out, weights


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_each_model_family_exports_and_matches_onnx_runtime(family, tmp_path):
    pygpu.manual_seed(0)
    build, example, other, dyn = FAMILIES[family]
    _export_and_compare(build(), example, other, dyn, tmp_path)


def test_functional_ops_cat_split_and_indexing(tmp_path):
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b, self.c = nn.Linear(8, 8), nn.Linear(8, 8), nn.Linear(16, 3)

        def forward(self, x):
            h = F.relu(self.a(x)) * 2 + x  # a residual add and a scalar
            h2 = pygpu.cat([h, self.b(h).tanh()], dim=1)
            p, q = h2.split(8, dim=1)
            out = self.c(pygpu.cat([q, p], 1))
            return (out[:, 1:3], out[..., -1], h2.view(h2.size(0), -1).mean(1, keepdim=True)
                    .exp(), h2.unsqueeze(1).transpose(0, 1).squeeze(0).amax(1))
    pygpu.manual_seed(1)
    model = _export_and_compare(Net(), (_r(4, 8),), (_r(6, 8),), {0: {0: "N"}}, tmp_path)
    kinds = {n.op_type for n in model.graph.node}
    assert {"Concat", "Slice", "Gather", "Add", "Mul"} <= kinds


def test_functional_gelu_both_forms_are_traced(tmp_path):
    """F.gelu is the op table's gelu / gelu_tanh row: each exports as its formula in Erf or
    Tanh, matching onnxruntime."""
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(8, 8)

        def forward(self, x):
            h = self.a(x)
            return F.gelu(h) + F.gelu(h * 2, approximate="tanh")
    pygpu.manual_seed(2)
    model = _export_and_compare(Net(), (_r(4, 8),), (_r(6, 8),), {0: {0: "N"}}, tmp_path)
    kinds = {n.op_type for n in model.graph.node}
    assert {"Erf", "Tanh"} <= kinds


def test_a_mask_computed_from_integer_inputs_is_traced(tmp_path):
    class Masked(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(10, 4)

        def forward(self, ids):
            pad = ids == 0  # a comparison on an integer input: reported by the trace hook
            return self.emb(ids).masked_fill(pad.unsqueeze(-1), 0.0)
    pygpu.manual_seed(2)
    _export_and_compare(Masked(), (pygpu.tensor([[0, 3, 4]]),),
                        (pygpu.tensor([[5, 0, 0, 9], [1, 2, 0, 3]]),), {0: {0: "N", 1: "T"}},
                        tmp_path)


def test_a_graph_that_depends_on_input_values_is_refused(tmp_path):
    class Noisy(nn.Module):
        def forward(self, x):
            return x + pygpu.randn(*x.shape)  # drawn in the forward: a constant of one run
    with pytest.raises(NotImplementedError, match="input values"):
        pygpu.onnx.export(Noisy(), (_r(2, 3),), str(tmp_path / "m.onnx"))


def test_a_constant_made_with_the_inputs_size_is_refused_on_a_dynamic_axis(tmp_path):
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 3)

        def forward(self, x):
            return self.fc(x) + pygpu.ones(x.shape[0], 1)
    net = Net()
    path = str(tmp_path / "m.onnx")
    pygpu.onnx.export(net, (_r(4, 3),), path)  # a fixed batch: fine
    with pytest.raises(NotImplementedError, match="dynamic_axes"):
        pygpu.onnx.export(net, (_r(4, 3),), path, input_names=["x"],
                          dynamic_axes={"x": {0: "N"}})


def test_an_op_without_a_converter_is_named(tmp_path):
    class MyReLU(pygpu.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clamp(min=0)

        @staticmethod
        def backward(ctx, g):
            return g

    class Net(nn.Module):
        def forward(self, x):
            return MyReLU.apply(x)
    with pytest.raises(NotImplementedError, match="MyReLU"):
        pygpu.onnx.export(Net(), (_r(2, 3),), str(tmp_path / "m.onnx"))
