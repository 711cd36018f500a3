# test_pytorch_program_spellings.py - what real PyTorch programs write on their first lines
# and in their loops (issue 36), each checked against torch: torch.accelerator, torch.backends,
# the legacy constructors, Variable, the nn.modules/utils.data import paths, safe globals,
# default dtype/device, empty(size=), F.elu; autograd.Function's PyTorch context and
# autograd.functional; indexing with range/arrays/nested lists; the reshape of permuted
# size-1 axes over every stride pattern; format() of a 0-d tensor; a 0-d scatter index;
# the default generator's shuffle.
import itertools
import pickle

import numpy as np
import pytest
import torch

import pygpu


def test_accelerator_and_backends(monkeypatch):
    assert pygpu.accelerator.is_available()
    dev = pygpu.accelerator.current_accelerator()
    assert dev.type in ("sim", "cuda") and pygpu.accelerator.device_count() >= 1
    assert pygpu.ones(2, device=dev).device.type == dev.type
    monkeypatch.setenv("PYGPU_ACCELERATOR", "cpu")
    assert not pygpu.accelerator.is_available() and pygpu.accelerator.current_accelerator() is None
    from pygpu.backends import cudnn  # noqa: F401 - torch.backends.cudnn's import line
    pygpu.backends.cudnn.benchmark = True
    assert pygpu.backends.cudnn.enabled and not pygpu.backends.mps.is_available()
    assert pygpu.backends.cuda.matmul.allow_tf32 is torch.backends.cuda.matmul.allow_tf32 is False
    assert pygpu.backends.cpu.get_cpu_capability() in ("DEFAULT", "AVX2", "AVX512")


@pytest.mark.parametrize("args", [(3, 4), ([1.0, 2.0],), ([[1, 2], [3, 4]],), (), ((2, 3),)],
                         ids=str)
def test_legacy_constructors(args):
    t, r = pygpu.Tensor(*args), torch.Tensor(*args)
    assert tuple(t.shape) == tuple(r.shape) and t.dtype.name == "float32"
    if args and not isinstance(args[0], int):
        np.testing.assert_array_equal(t.numpy(), r.numpy())
    assert pygpu.LongTensor([1, 2]).dtype is pygpu.int64
    assert pygpu.FloatTensor(np.arange(3, dtype=np.int32)).tolist() == [0.0, 1.0, 2.0]
    assert isinstance(pygpu.LongTensor([1]), pygpu.LongTensor)
    assert not isinstance(pygpu.ones(1), pygpu.LongTensor)
    with pytest.raises(TypeError, match="int32"):
        pygpu.IntTensor([1])


def test_size_prints_and_pickles_as_torchs():
    s = pygpu.zeros(2, 3).shape
    assert repr(s) == repr(torch.zeros(2, 3).shape) == "torch.Size([2, 3])"
    assert s == (2, 3) and isinstance(s, tuple) and s.numel() == 6
    assert repr(s[1:]) == "torch.Size([3])" and pickle.loads(pickle.dumps(s)) == s
    assert str(pygpu.float32) == str(torch.float32) == "torch.float32"


def test_variable_import_paths_and_safe_globals(tmp_path):
    from pygpu.autograd import Variable
    x = Variable(pygpu.ones(2), requires_grad=True)
    assert x.requires_grad and isinstance(x, Variable)
    from pygpu.nn.modules.linear import Linear
    from pygpu.nn.modules.loss import _Loss
    from pygpu.nn.modules.module import Module
    from pygpu.utils.data.dataloader import DataLoader
    from pygpu.utils.data.sampler import RandomSampler
    assert Linear is pygpu.nn.Linear and Module is pygpu.nn.Module and _Loss is not None
    assert DataLoader is pygpu.utils.data.DataLoader and RandomSampler is not None
    with pytest.raises(AttributeError, match="torch.nn.modules.linear"):
        __import__("pygpu.nn.modules.linear", fromlist=["Nope"]).Nope
    path = str(tmp_path / "cfg.pt")
    pygpu.save(_Config(3), path)
    with pytest.raises(Exception, match="weights_only"):
        pygpu.load(path)
    with pygpu.serialization.safe_globals([_Config]):
        assert pygpu.load(path).n == 3
    with pytest.raises(Exception, match="weights_only"):
        pygpu.load(path)


class _Config:
    def __init__(self, n):
        self.n = n


def test_default_dtype_device_and_size_keyword():
    try:
        pygpu.set_default_dtype(pygpu.float64)
        assert pygpu.zeros(2).dtype is pygpu.float64 and pygpu.tensor([1.5]).dtype is pygpu.float64
        assert pygpu.get_default_dtype() is pygpu.float64
        with pytest.raises(TypeError, match="floating-point"):
            pygpu.set_default_dtype(pygpu.int64)
    finally:
        pygpu.set_default_dtype(pygpu.float32)
    try:
        pygpu.set_default_device("sim")
        assert pygpu.ones(2).device.type == "sim" and pygpu.tensor([1.0]).device.type == "sim"
    finally:
        pygpu.set_default_device(None)
    with pygpu.device("sim:0"):
        assert pygpu.randn(2).device.type == "sim"
    assert pygpu.zeros(1).device.type == "cpu"
    assert pygpu.empty(size=(2, 3)).shape == (2, 3) == tuple(torch.empty(size=(2, 3)).shape)


def test_elu_matches_torch():
    a = np.linspace(-3, 3, 13).astype(np.float64)
    x, r = pygpu.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    y, yr = pygpu.nn.functional.elu(x, 0.7), torch.nn.functional.elu(r, 0.7)
    np.testing.assert_allclose(y.detach().numpy(), yr.detach().numpy(), rtol=1e-12)
    y.sum().backward()
    yr.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), r.grad.numpy(), rtol=1e-12)
    assert repr(pygpu.nn.ELU(0.5)) == repr(torch.nn.ELU(0.5))


def _function_classes(lib):
    class Cube(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.save_for_backward(x)
            ctx.seen = ctx.needs_input_grad
            return x ** 3 * k

        @staticmethod
        @lib.autograd.function.once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x ** 2 * 2.0, None  # k = 2 in the test

    class Double(lib.autograd.Function):  # PyTorch 2's split form, one tensor back
        @staticmethod
        def forward(x):
            return x * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.set_materialize_grads(False)

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class ArgMax(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            out = x.argmax()
            ctx.mark_non_differentiable(out)
            return out

        @staticmethod
        def backward(ctx, g):
            return None
    return Cube, Double, ArgMax


def test_autograd_function_pytorch_context():
    grads = []
    for lib in (pygpu, torch):
        Cube, Double, ArgMax = _function_classes(lib)
        x = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)
        y = Double.apply(Cube.apply(x, 2.0)).sum()
        y.backward()
        grads.append(x.grad.numpy().copy())
        assert not ArgMax.apply(x).requires_grad
    np.testing.assert_allclose(grads[0], grads[1])


def test_autograd_functional():
    from pygpu.autograd.functional import jacobian, jvp, vjp
    import torch.autograd.functional as TF

    def f(lib):
        return lambda a, b: (a * b + a ** 2).sum(0) if lib is torch else (a * b + a ** 2).sum(0)
    a = np.arange(6.0).reshape(2, 3)
    b = np.ones((2, 3)) * 0.5
    pa, pb = pygpu.tensor(a), pygpu.tensor(b)
    ta, tb = torch.tensor(a), torch.tensor(b)
    for got, want in zip(jacobian(f(pygpu), (pa, pb)), TF.jacobian(f(torch), (ta, tb))):
        np.testing.assert_allclose(got.numpy(), want.numpy())
    v = np.array([1.0, -1.0, 2.0])
    np.testing.assert_allclose(vjp(f(pygpu), (pa, pb), pygpu.tensor(v))[1][0].numpy(),
                               TF.vjp(f(torch), (ta, tb), torch.tensor(v))[1][0].numpy())
    np.testing.assert_allclose(jvp(f(pygpu), (pa, pb), (pb, pa))[1].numpy(),
                               TF.jvp(f(torch), (ta, tb), (tb, ta))[1].numpy())
    # higher order (issue 43): against torch in tests/test_autograd_functional.py
    np.testing.assert_allclose(pygpu.autograd.functional.hessian(lambda a: (a ** 3).sum(), pa)
                               .numpy(), TF.hessian(lambda a: (a ** 3).sum(), ta).numpy())


KEYS = [range(2), np.array([0, 2]), np.array([[0, 1], [2, 2]]), [-1, 0], ([0, 1], [-1, -2]),
        [[0, 1], [2, 0]], (range(3), [0, 1, 2]), (slice(None), [-1]), (np.int64(1), [0, 2])]


@pytest.mark.filterwarnings("ignore:Using a non-tuple sequence")  # torch's, for [[0, 1], [2, 0]]
@pytest.mark.parametrize("key", KEYS, ids=[repr(k).replace(" ", "") for k in KEYS])
def test_indexing_keys_as_torch(device, key):
    a = np.arange(12.0).reshape(3, 4)
    x, r = pygpu.tensor(a, device=device), torch.tensor(a)
    np.testing.assert_array_equal(x[key].numpy(), r[key].numpy())
    x[key] = -1.0
    r[key] = -1.0
    np.testing.assert_array_equal(x.numpy(), r.numpy())


def test_reshape_of_every_stride_pattern_with_size_one_axes(device):
    """Every permutation of every shape of up to 4 axes drawn from {1, 2, 3}, reshaped to
    its flat form, to its size-1-free form and to a form with a 1 inserted, as torch does
    (the defect: zeros(1, 6, 3).permute(1, 0, 2).reshape(6, 3) raised 'unknown error')."""
    base = pygpu.arange(216.0, device=device)
    ref = torch.arange(216.0)
    for nd in range(1, 5):
        for shape in itertools.product((1, 2, 3), repeat=nd):
            n = int(np.prod(shape))
            x, r = base[:n].reshape(shape), ref[:n].reshape(shape)
            for perm in itertools.permutations(range(nd)):
                xp, rp = x.permute(*perm), r.permute(*perm)
                squeezed = [s for s in rp.shape if s != 1] or [1]
                for target in ((n,), tuple(squeezed), (1,) + tuple(squeezed), tuple(rp.shape)):
                    got = xp.reshape(target)
                    assert tuple(got.shape) == target
                    np.testing.assert_array_equal(got.numpy(), rp.reshape(target).numpy())
    assert pygpu.zeros(1, 6, 3, device=device).permute(1, 0, 2).reshape(6, 3).shape == (6, 3)


def test_format_and_scatter_of_zero_d_tensors(device):
    t = pygpu.tensor(1.23456, device=device)
    assert "{:+.2f}".format(t) == "{:+.2f}".format(torch.tensor(1.23456)) == "+1.23"
    assert f"{pygpu.tensor(7)}" == "7"
    with pytest.raises(TypeError):
        "{:.2f}".format(pygpu.ones(2, device=device))
    y = 3
    got = pygpu.zeros(10, device=device).scatter_(0, pygpu.tensor(y, device=device), value=1)
    want = torch.zeros(10).scatter_(0, torch.tensor(y), value=1)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_shuffle_follows_manual_seed():
    from pygpu.utils.data import DataLoader, TensorDataset
    ds = TensorDataset(pygpu.arange(20))

    def orders():
        pygpu.manual_seed(7)
        loader = DataLoader(ds, batch_size=20, shuffle=True)
        return [b[0].tolist() for _ in range(2) for b in loader]
    first, second = orders(), orders()
    assert first == second and first[0] != first[1] and sorted(first[0]) == list(range(20))
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        DataLoader(TensorDataset(pygpu.zeros(0)), shuffle=True)


def test_printing_as_torch():
    cases = [lambda m: m.tensor([1.0, 2.0], requires_grad=True) * 2,
             lambda m: m.tensor([1.0, 2.0], requires_grad=True),
             lambda m: m.tensor(np.linspace(-1, 1, 2000, dtype=np.float32).reshape(40, 50)),
             lambda m: m.tensor([1e-6, 1.0]), lambda m: m.zeros(0, 3),
             lambda m: m.tensor([1, 2], dtype=m.float64)]
    for make in cases:
        assert repr(make(pygpu)) == repr(make(torch))
    try:
        pygpu.set_printoptions(precision=2)
        torch.set_printoptions(precision=2)
        assert repr(pygpu.tensor([1.23456])) == repr(torch.tensor([1.23456]))
    finally:
        pygpu.set_printoptions(profile="default")
        torch.set_printoptions(profile="default")


def test_meta_device_shapes_without_data():
    for lib in (pygpu, torch):
        t = lib.rand(2, 3, 10, device="meta")
        lin = lib.nn.Linear(10, 4, device="meta")
        out = lin(t).relu().sum(1)
        assert tuple(out.shape) == (2, 4) and str(out.device) == "meta"
    assert repr(pygpu.rand(2, 3, device="meta", dtype=pygpu.float64, requires_grad=True)) == \
        repr(torch.rand(2, 3, device="meta", dtype=torch.float64, requires_grad=True))
    x = pygpu.ones(3).to("meta")
    assert x.device == pygpu.device("meta") and (x * 2).shape == (3,)
    with pytest.raises(RuntimeError, match="Cannot copy out of meta tensor; no data"):
        x.numpy()
    with pytest.raises(RuntimeError, match="no data"):
        x.sum().item()


def test_load_state_dict_assign_and_to_empty():
    src = pygpu.nn.Sequential(pygpu.nn.Linear(4, 8), pygpu.nn.BatchNorm1d(8), pygpu.nn.Linear(8, 2))
    src.train()
    src(pygpu.randn(16, 4))  # running statistics that are not the initial ones
    with pygpu.device("meta"):
        model = pygpu.nn.Sequential(pygpu.nn.Linear(4, 8), pygpu.nn.BatchNorm1d(8),
                                    pygpu.nn.Linear(8, 2))
    assert model[0].weight.device.type == "meta"
    with pytest.warns(UserWarning, match="assign=True"):
        model.load_state_dict(src.state_dict())  # a copy into 'meta' does nothing
    model.load_state_dict(src.state_dict(), assign=True)
    assert all(t.device.type == "cpu" for t in model.state_dict().values())
    assert model[0].weight.requires_grad and isinstance(model[0].weight, pygpu.nn.Parameter)
    model.eval()
    src.eval()
    x = pygpu.randn(5, 4)
    np.testing.assert_array_equal(model(x).detach().numpy(), src(x).detach().numpy())
    empty = pygpu.nn.Linear(3, 2, device="meta").to_empty(device="sim")
    assert empty.weight.device.type == "sim" and empty.weight.shape == (2, 3)


def test_device_queries_and_inference_mode(device):
    x = pygpu.ones(2, device=device)
    assert x.is_cpu == (x.device.type == "cpu") and x.is_cuda == (x.device.type == "cuda")
    assert not x.is_meta and isinstance(x.data_ptr(), int) and not x.is_inference()
    with pygpu.inference_mode():
        assert pygpu.is_inference_mode_enabled()
        assert not (pygpu.ones(2, requires_grad=True) * 2).requires_grad
    assert not pygpu.is_inference_mode_enabled()
    with pygpu.inference_mode(False):
        assert (pygpu.ones(2, requires_grad=True) * 2).requires_grad


def test_inplace_views_resize_and_dtype_info():
    for lib in (pygpu, torch):
        x = lib.zeros(1, 3)
        x.squeeze_(0).unsqueeze_(1)
        y = lib.arange(6.0)
        y.resize_(2, 2)
        z = lib.ones(2, 3)
        z.t_()
        assert tuple(x.shape) == (3, 1) and tuple(z.shape) == (3, 2)
        assert y.tolist() == [[0.0, 1.0], [2.0, 3.0]]
    with pytest.raises(RuntimeError, match="requires grad"):
        pygpu.ones(1, 2, requires_grad=True).squeeze_(0)
    for name in ("float32", "float64", "float16", "bfloat16"):
        f, g = pygpu.finfo(getattr(pygpu, name)), torch.finfo(getattr(torch, name))
        assert (f.eps, f.max, f.tiny, f.bits) == (g.eps, g.max, g.tiny, g.bits), name
    assert pygpu.iinfo(pygpu.int64).max == torch.iinfo(torch.int64).max
    for a, b in [([1, 2], 1.0), ([1, 2], 1), ([1.0], [1])]:
        assert str(pygpu.result_type(pygpu.tensor(a), pygpu.tensor(b) if isinstance(b, list)
                                     else b)) == \
            str(torch.result_type(torch.tensor(a), torch.tensor(b) if isinstance(b, list) else b))
    assert pygpu.promote_types(pygpu.int64, pygpu.float32) is pygpu.float32
    assert pygpu.can_cast(pygpu.float32, pygpu.int64) is torch.can_cast(torch.float32, torch.int64)
    np.testing.assert_array_equal(pygpu.argwhere(pygpu.tensor([0, 1, 1])).numpy(),
                                  torch.argwhere(torch.tensor([0, 1, 1])).numpy())
