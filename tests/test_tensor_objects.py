# test_tensor_objects.py - tensors as Python objects (issue 43, item 5): pickle,
# copy.copy and copy.deepcopy on every device with PyTorch's semantics (device, dtype,
# strides, requires_grad, Parameter, .grad, view sharing under deepcopy, the non-leaf
# refusal), share_memory_/is_shared/Module.share_memory, `repeat` that always copies, and
# 0-d tensors (a BatchNorm's num_batches_tracked) through save/load. torch is the oracle.
import copy
import pickle

import numpy as np
import pytest

import pygpu
from pygpu import nn

torch = pytest.importorskip("torch")

DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "bool"]


def _pair(make):
    """The same tensor in both libraries, from one NumPy array."""
    arr = np.random.default_rng(0).standard_normal((3, 4)) * 4
    return make(pygpu, arr), make(torch, arr)


def _np(t):
    return t.detach().float().cpu().numpy() if t.dtype in (pygpu.bfloat16, torch.bfloat16) \
        else t.detach().cpu().numpy()


VIEWS = {  # of a (3, 4) tensor
    "contiguous": lambda t: t,
    "transposed": lambda t: t.t(),
    "sliced": lambda t: t[1:, ::2],
    "expanded": lambda t: t[:1].expand(5, 4),
    "0-d": lambda t: t[1, 2],
    "empty": lambda t: t[:0],
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("view", list(VIEWS))
def test_pickle_round_trips_like_torch(device, dtype, view):
    ours, theirs = _pair(lambda m, a: m.tensor(a).to(getattr(m, dtype)))
    ours, theirs = VIEWS[view](ours.to(device)), VIEWS[view](theirs)
    back = pickle.loads(pickle.dumps(ours))
    ref = pickle.loads(pickle.dumps(theirs))
    assert back.device == ours.device and back.dtype is ours.dtype
    assert tuple(back.shape) == tuple(ref.shape) and back.stride() == ref.stride()
    np.testing.assert_array_equal(_np(back), _np(ref))
    back_copy = copy.copy(ours)  # shallow: the same memory, as PyTorch's
    deep = copy.deepcopy(ours)
    assert deep.stride() == copy.deepcopy(theirs).stride() and deep.device == ours.device
    np.testing.assert_array_equal(_np(deep), _np(ref))
    if ours.numel() and dtype == "float32" and view == "contiguous":
        back_copy.add_(1)
        np.testing.assert_array_equal(_np(ours), _np(theirs) + 1)


def test_autograd_state_and_parameters_as_torch_keeps_them(device):
    for m in (pygpu, torch):
        x = m.ones(3, requires_grad=True, device=device if m is pygpu else "cpu")
        y = x * 2
        z = pickle.loads(pickle.dumps(y))  # a non-leaf pickles as a leaf that requires grad
        assert z.requires_grad and z.is_leaf and z.grad_fn is None
        with pytest.raises(RuntimeError, match="Only Tensors created explicitly by the user "
                                               r"\(graph leaves\) support the deepcopy"):
            copy.deepcopy(y)
        y.sum().backward()
        assert copy.deepcopy(x).grad.tolist() == [2.0, 2.0, 2.0]  # deepcopy keeps .grad
        assert pickle.loads(pickle.dumps(x)).grad is None  # pickle does not
        p = m.nn.Parameter(m.ones(2))
        p.grad = m.ones(2)
        for q in (pickle.loads(pickle.dumps(p)), copy.deepcopy(p), copy.copy(p)):
            assert isinstance(q, m.nn.Parameter) and q.requires_grad
        assert copy.deepcopy(p).grad is None  # Parameter.__deepcopy__ leaves it


def test_deepcopy_keeps_views_of_one_storage_views_of_one_copy(device):
    for m in (pygpu, torch):
        a = m.arange(6.0, device=device if m is pygpu else "cpu")
        b = a[2:4]
        a2, b2 = copy.deepcopy((a, b))
        b2 += 10
        assert a2.tolist() == [0, 1, 12, 13, 4, 5] and a.tolist() == [0, 1, 2, 3, 4, 5]
        a3, b3 = pickle.loads(pickle.dumps((a, b)))  # torch 2's pickle: separate copies
        b3 += 10
        assert a3.tolist() == [0, 1, 2, 3, 4, 5]


def test_modules_deepcopy_and_pickle_on_their_device(device):
    model = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3), nn.ReLU()).to(device)
    model(pygpu.randn(5, 4, device=device)).sum().backward()
    twin = copy.deepcopy(model)
    again = pickle.loads(pickle.dumps(model))
    x = pygpu.randn(2, 4, device=device)
    model.eval(), twin.eval(), again.eval()
    for m in (twin, again):
        assert m[0].weight.device == model[0].weight.device
        assert m[0].weight.data_ptr() != model[0].weight.data_ptr()
        np.testing.assert_array_equal(m(x).numpy(), model(x).numpy())
        assert tuple(m[1].num_batches_tracked.shape) == () and \
            m[1].num_batches_tracked.dtype is pygpu.int64
    assert twin[0].weight.grad is None  # Parameters' grads stay behind, as PyTorch's


def test_share_memory_moves_the_storage_in_place():
    t = pygpu.arange(10.0)
    v = t[2:5]
    assert not t.is_shared()
    assert v.share_memory_() is v and t.is_shared() and v.is_shared()  # one storage
    v += 1
    assert t.tolist() == [0, 1, 3, 4, 5, 5, 6, 7, 8, 9]
    assert pygpu.ones(2, device="sim").share_memory_().is_shared() is False  # a no-op there
    model = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    assert model.share_memory() is model
    assert all(p.is_shared() for p in model.parameters())
    assert all(b.is_shared() for b in model.buffers())
    arr = pygpu.ones(3).numpy()  # memory handed out before the move stays valid
    before = pygpu.from_numpy(arr)
    before.share_memory_()
    assert arr.tolist() == [1.0, 1.0, 1.0]


def test_repeat_always_copies(device):
    for m in (pygpu, torch):
        x = m.ones(1, 3, 2, 2, device=device if m is pygpu else "cpu")
        y = x.repeat(4, 1, 1, 1).div_(2)  # the reproducer
        assert y.sum().item() == 24 and x.sum().item() == 12
        z = x.repeat(1, 1, 1, 1)
        z += 1
        assert x.sum().item() == 12 and z.sum().item() == 24
    assert pygpu.ones(1, 3).repeat(4, 1).stride() == torch.ones(1, 3).repeat(4, 1).stride()


def test_zero_dim_tensors_and_batchnorm_resume_through_save_load(device, tmp_path):
    m = nn.BatchNorm2d(3).to(device)
    m(pygpu.randn(2, 3, 4, 4, device=device))
    path = tmp_path / "bn.pt"
    pygpu.save(m.state_dict(), path)
    sd = pygpu.load(path)
    assert tuple(sd["num_batches_tracked"].shape) == () and sd["num_batches_tracked"].item() == 1
    fresh = nn.BatchNorm2d(3).to(device)
    fresh.load_state_dict(sd)  # its own checkpoint: the shapes agree
    assert fresh.num_batches_tracked.item() == 1
    assert tuple(torch.nn.BatchNorm2d(3).num_batches_tracked.shape) == \
        tuple(fresh.num_batches_tracked.shape)
    values = {name: pygpu.tensor(v, dtype=getattr(pygpu, name), device=device)
              for name, v in [("float32", 3.5), ("float64", -1.25), ("float16", 0.5),
                              ("bfloat16", 2.0), ("int64", 7), ("bool", True)]}
    pygpu.save(values, tmp_path / "zero_d.pt")
    back = pygpu.load(tmp_path / "zero_d.pt")
    for name, v in values.items():
        assert tuple(back[name].shape) == () and back[name].dtype is v.dtype
        assert back[name].item() == v.item()


def _use_in_child(q, device):
    try:
        q.put(("ok", float((pygpu.ones(2, device=device) + 1).sum().item())))
    except Exception as e:  # noqa: BLE001 - the child reports what it raised
        q.put((type(e).__name__, str(e)))
    q.put(("cpu", float((pygpu.ones(3) * 2).sum().item())))


def test_a_forked_child_uses_a_device_or_refuses_it_as_torch_does(device):
    """A process forked after the device's runtime was used: cpu and sim work there (sim
    runs its work on the calling thread); cuda refuses in PyTorch's words (a CUDA context
    does not survive fork); a cuda tensor crosses a queue by value."""
    import pygpu.multiprocessing as mp
    pygpu.ones(1, device=device).sum().item()  # the runtime is up before the fork
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_use_in_child, args=(q, device))
    p.start()
    first, second = q.get(timeout=120), q.get(timeout=120)
    p.join(60)
    assert p.exitcode == 0 and second == ("cpu", 6.0)
    if pygpu.device(device).type == "cuda":
        assert first[0] == "DeviceUnavailableError"
        assert "Cannot re-initialize cuda in forked subprocess" in first[1]
        assert "'spawn' start method" in first[1]
    else:
        assert first == ("ok", 4.0)
    sq = ctx.SimpleQueue()
    t = pygpu.arange(3.0, device=device)
    sq.put(t)
    assert sq.get().tolist() == [0.0, 1.0, 2.0]
