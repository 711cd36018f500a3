# test_pytorch_spellings.py - the small PyTorch spellings a tutorial hits on its first lines:
# requires_grad= on every factory, the dtype names torch.float/long/..., the short module
# functions (mul, sub, div, neg), Tensor.matmul, operator.index of a label tensor,
# randint(high, size=...), and the in-place fills zero_/fill_/uniform_/normal_/bernoulli_
# (made on the tensor's device: no transfer), on every device.
import operator

import numpy as np
import pytest

import pygpu

FACTORIES = [
    ("zeros", lambda d: pygpu.zeros(2, 3, device=d, requires_grad=True)),
    ("ones", lambda d: pygpu.ones((2,), device=d, requires_grad=True)),
    ("empty", lambda d: pygpu.empty(4, device=d, requires_grad=True)),
    ("full", lambda d: pygpu.full((2,), 1.5, device=d, requires_grad=True)),
    ("rand", lambda d: pygpu.rand(3, device=d, requires_grad=True)),
    ("randn", lambda d: pygpu.randn(5, 3, device=d, requires_grad=True)),
    ("arange", lambda d: pygpu.arange(3.0, device=d, requires_grad=True)),
    ("tensor", lambda d: pygpu.tensor([1.0, 2.0], device=d, requires_grad=True)),
    ("eye", lambda d: pygpu.eye(2, device=d, requires_grad=True)),
    ("linspace", lambda d: pygpu.linspace(0, 1, 5, device=d, requires_grad=True)),
    ("zeros_like", lambda d: pygpu.zeros_like(pygpu.ones(2, device=d), requires_grad=True)),
    ("randn_like", lambda d: pygpu.randn_like(pygpu.ones(2, device=d), requires_grad=True)),
]


@pytest.mark.parametrize("name,make", FACTORIES, ids=[f[0] for f in FACTORIES])
def test_factories_take_requires_grad(device, name, make):
    t = make(device)
    assert t.requires_grad and t.is_leaf and t.grad_fn is None
    (t * 2).sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), np.full(t.shape, 2.0, np.float32))
    assert not pygpu.zeros(2, device=device).requires_grad  # the default stays False


def test_an_integer_factory_cannot_require_grad():
    with pytest.raises(RuntimeError, match="only Tensors of floating point and complex dtype "
                                           "can require gradients"):  # PyTorch's words
        pygpu.zeros(2, dtype=pygpu.int64, requires_grad=True)


def test_pytorch_dtype_names():
    assert pygpu.float is pygpu.float32 and pygpu.double is pygpu.float64
    assert pygpu.half is pygpu.float16 and pygpu.long is pygpu.int64
    assert pygpu.ones(2, dtype=pygpu.float).dtype is pygpu.float32
    assert pygpu.int is pygpu.int32 and pygpu.short is pygpu.int16  # torch's aliases


@pytest.mark.parametrize("short,full", [("mul", "multiply"), ("sub", "subtract"),
                                        ("div", "divide"), ("true_divide", "divide"),
                                        ("neg", "negative")])
def test_short_module_names_are_the_table_functions(short, full):
    assert getattr(pygpu, short) is getattr(pygpu, full)
    assert short in pygpu.__all__


def test_matmul_method(device):
    a = pygpu.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), device=device)
    b = pygpu.tensor(np.ones((3, 2), np.float32), device=device)
    np.testing.assert_array_equal(a.matmul(b).numpy(), a.numpy() @ b.numpy())


def test_index_of_a_label_tensor(device):
    classes = ["a", "b", "c"]
    y = pygpu.tensor(2, device=device)
    assert classes[y] == "c" and operator.index(y) == 2
    assert list(range(pygpu.tensor(3))) == [0, 1, 2]
    with pytest.raises(TypeError, match="only integer tensors of a single element"):
        operator.index(pygpu.tensor(1.0, device=device))
    with pytest.raises(TypeError, match="only integer tensors of a single element"):
        operator.index(pygpu.tensor([1, 2], device=device))


def test_randint_high_and_size_keyword(device):
    r = pygpu.randint(5, size=(1000,), device=device)
    assert r.shape == (1000,) and r.dtype is pygpu.int64
    v = r.numpy()
    assert v.min() >= 0 and v.max() <= 4 and len(set(v.tolist())) == 5


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "int64"])
def test_zero_and_fill(device, dtype):
    dt = getattr(pygpu, dtype)
    t = pygpu.ones(2, 3, dtype=dt, device=device)
    pygpu.reset_stats()
    assert t.zero_() is t
    assert t.fill_(3) is t
    assert pygpu.stats().h2d_count == 0
    np.testing.assert_array_equal(t.astype(pygpu.float64).numpy(), np.full((2, 3), 3.0))
    t.fill_(pygpu.tensor(7, device=device))  # a one-element tensor, as PyTorch allows
    assert t.astype(pygpu.float64).numpy().max() == 7
    with pytest.raises(RuntimeError, match="0-dimension"):
        t.fill_(pygpu.ones(2, device=device))


def test_fill_writes_through_a_view(device):
    t = pygpu.zeros(3, 4, device=device)
    t[:, 1].fill_(5)
    ref = np.zeros((3, 4), np.float32)
    ref[:, 1] = 5
    np.testing.assert_array_equal(t.numpy(), ref)


def test_random_fills_on_the_device(device):
    pygpu.manual_seed(0)
    u = pygpu.empty(20000, device=device)
    n = pygpu.empty(20000, device=device, dtype=pygpu.float64)
    b = pygpu.empty(20000, device=device)
    pygpu.reset_stats()
    u.uniform_(-2, 3)
    n.normal_(1.0, 0.5)
    b.bernoulli_(0.25)
    assert pygpu.stats().h2d_count == 0  # drawn where the tensor lives
    uv, nv, bv = u.numpy(), n.numpy(), b.numpy()
    assert uv.min() >= -2 and uv.max() < 3 and abs(uv.mean() - 0.5) < 0.05
    assert n.dtype is pygpu.float64 and abs(nv.mean() - 1) < 0.02 and abs(nv.std() - 0.5) < 0.02
    assert set(np.unique(bv).tolist()) == {0.0, 1.0} and abs(bv.mean() - 0.25) < 0.02
    h = pygpu.zeros(8, dtype=pygpu.bfloat16, device=device).normal_()
    assert h.dtype is pygpu.bfloat16 and h.numpy().astype(np.float32).std() > 0


def test_fill_errors(device):
    # PyTorch's exception types and words (torch 2.13)
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        pygpu.zeros(3, dtype=pygpu.int64, device=device).normal_()
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0, but found std -1"):
        pygpu.zeros(3, device=device).normal_(0, -1)
    with pytest.raises(RuntimeError, match=r"bernoulli_ expects p to be in \[0, 1\], but got "
                                           r"p=1.5"):
        pygpu.zeros(3, device=device).bernoulli_(1.5)
    w = pygpu.ones(3, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="requires grad"):
        w.zero_()
    with pygpu.no_grad():  # nn.init's way: allowed without grad mode
        w.zero_()
    assert w.detach().numpy().sum() == 0


def test_out_keyword_of_elementwise_ops_and_matmul(device):
    a = pygpu.tensor(np.arange(4, dtype=np.float32).reshape(2, 2), device=device)
    out = pygpu.empty(2, 2, device=device)
    assert pygpu.matmul(a, a, out=out) is out
    np.testing.assert_array_equal(out.numpy(), a.numpy() @ a.numpy())
    assert pygpu.mul(a, a, out=out) is out
    np.testing.assert_array_equal(out.numpy(), a.numpy() * a.numpy())
    assert pygpu.exp(a, out=out) is out
    with pytest.raises(RuntimeError, match="out has shape"):
        pygpu.add(a, a, out=pygpu.empty(3, device=device))
    with pytest.raises(TypeError, match="out must be a pygpu.Tensor"):
        pygpu.add(a, a, out=np.zeros((2, 2)))
