# test_torch_checkpoints.py - PyTorch's checkpoint format both ways (issue 46, item 1):
# pygpu.save writes what torch.load(weights_only=True) reads, pygpu.load reads what torch.save
# writes (zip and legacy formats), with shared storages, 0-d tensors, every dtype, models and
# optimizer states of both; hostile or corrupt files raise PyTorch's exception types and run
# nothing.
import collections
import io
import os
import pickle
import zipfile

import numpy as np
import pytest

import pygpu
from pygpu import nn
from pygpu.serialization import _dtypes, _host

torch = pytest.importorskip("torch")


def _pygpu_dtypes():
    """The rows pygpu holds and casts to (the shell dtypes, which nothing casts to, are
    tests/test_shell_dtypes.py's, saved and loaded there as their bytes)."""
    return [r for r in _dtypes.TABLE if r.pygpu is not None and not r.pygpu._is_shell]


def _trained_pygpu(device="cpu"):
    pygpu.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)).to(device)
    opt = pygpu.optim.Adam(m.parameters(), lr=1e-2)
    for _ in range(2):
        opt.zero_grad()
        m(pygpu.randn(5, 4, device=device)).sum().backward()
        opt.step()
    return m, opt


def _torch_twin():
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))


def test_torch_reads_a_pygpu_model_optimizer_and_training_checkpoint(tmp_path):
    m, opt = _trained_pygpu()
    ck = {"epoch": 7, "model_state_dict": m.state_dict(), "optimizer_state_dict": opt.state_dict(),
          "loss": 0.25, "name": "run-1", "dtype": pygpu.bfloat16, "shape": pygpu.Size([2, 3]),
          "history": [1.0, 0.5], "pair": (1, "a"), "none": None}
    pygpu.save(ck, tmp_path / "ck.pt")
    t = torch.load(tmp_path / "ck.pt", weights_only=True)
    assert t["epoch"] == 7 and t["name"] == "run-1" and t["dtype"] is torch.bfloat16
    assert t["shape"] == torch.Size([2, 3]) and t["pair"] == (1, "a") and t["none"] is None
    twin = _torch_twin()
    twin.load_state_dict(t["model_state_dict"])
    x = np.random.default_rng(0).standard_normal((6, 4)).astype(np.float32)
    np.testing.assert_allclose(twin(torch.from_numpy(x)).detach().numpy(),
                               m(pygpu.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)
    topt = torch.optim.Adam(twin.parameters(), lr=1e-2)
    topt.load_state_dict(t["optimizer_state_dict"])  # torch's own checks of the layout
    state = t["optimizer_state_dict"]["state"][0]
    np.testing.assert_array_equal(state["exp_avg"].numpy(),
                                  opt.state_dict()["state"][0]["exp_avg"].numpy())
    assert t["optimizer_state_dict"]["param_groups"][0]["betas"] == (0.9, 0.999)


def test_pygpu_reads_a_torch_model_and_optimizer(tmp_path):
    torch.manual_seed(0)
    twin = _torch_twin()
    topt = torch.optim.SGD(twin.parameters(), lr=0.1, momentum=0.9)
    twin(torch.randn(5, 4)).sum().backward()
    topt.step()
    torch.save({"model": twin.state_dict(), "opt": topt.state_dict(), "epoch": 2},
               tmp_path / "torch.pth")
    ck = pygpu.load(tmp_path / "torch.pth")
    m = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    m.load_state_dict(ck["model"])
    x = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_allclose(m(pygpu.tensor(x)).detach().numpy(),
                               twin(torch.from_numpy(x)).detach().numpy(), rtol=1e-5, atol=1e-6)
    opt = pygpu.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    opt.load_state_dict(ck["opt"])
    np.testing.assert_array_equal(ck["opt"]["state"][0]["momentum_buffer"].numpy(),
                                  topt.state_dict()["state"][0]["momentum_buffer"].numpy())
    assert ck["epoch"] == 2 and isinstance(ck["model"], collections.OrderedDict)


@pytest.mark.parametrize("row", _pygpu_dtypes(), ids=lambda r: r.name)
def test_every_dtype_both_ways(tmp_path, row):
    vals = np.array([[0, 1, 2], [3, 4, 5]]) % (2 if row.name == "bool" else 7)
    # (made in int64 and cast: float8 has no arithmetic, as PyTorch's)
    src = (pygpu.tensor(vals.tolist()) - (0 if row.name == "bool" else 2)).to(row.pygpu)
    pygpu.save({"t": src, "zero_d": src[1, 2]}, tmp_path / "p.pt")
    t = torch.load(tmp_path / "p.pt", weights_only=True)
    assert t["t"].dtype is getattr(torch, row.name) and t["zero_d"].shape == ()
    np.testing.assert_array_equal(t["t"].float().numpy(), src.float().numpy())
    assert t["zero_d"].item() == src[1, 2].item()
    torch.save({"t": t["t"], "zero_d": t["zero_d"]}, tmp_path / "t.pt")
    back = pygpu.load(tmp_path / "t.pt")
    assert back["t"].dtype is row.pygpu and back["zero_d"].shape == ()
    np.testing.assert_array_equal(back["t"].float().numpy(), src.float().numpy())


@pytest.mark.parametrize("name", ["complex64", "complex128"])
def test_complex_values_keep_their_imaginary_parts(tmp_path, name):
    a = (np.arange(6).reshape(2, 3) - 1j * np.arange(6, 12).reshape(2, 3)).astype(name)
    src = pygpu.tensor(a)
    pygpu.save({"t": src, "t_t": src.t(), "zero_d": src[1, 2]}, tmp_path / "c.pt")
    t = torch.load(tmp_path / "c.pt", weights_only=True)
    assert t["t"].dtype is getattr(torch, name) and t["zero_d"].item() == complex(a[1, 2])
    np.testing.assert_array_equal(t["t"].numpy(), a)
    np.testing.assert_array_equal(t["t_t"].numpy(), a.T)
    torch.save({"t": t["t"] * 1j, "t_t": t["t"].t()}, tmp_path / "t.pt")
    back = pygpu.load(tmp_path / "t.pt")
    assert back["t"].dtype is getattr(pygpu, name)
    np.testing.assert_array_equal(back["t"].numpy(), a * 1j)
    np.testing.assert_array_equal(back["t_t"].numpy(), a.T)


def test_batchnorm_num_batches_tracked_is_a_0d_int64_both_ways(tmp_path):
    pygpu.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3))
    for _ in range(2):
        m(pygpu.randn(6, 4))  # training mode: running stats and the counter move
    pygpu.save(m.state_dict(), tmp_path / "bn.pt")
    t = torch.load(tmp_path / "bn.pt", weights_only=True)
    nbt = t["1.num_batches_tracked"]
    assert nbt.dtype is torch.int64 and nbt.shape == () and nbt.item() == 2
    twin = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3))
    twin.load_state_dict(t)
    twin(torch.randn(6, 4))
    torch.save(twin.state_dict(), tmp_path / "tbn.pt")
    back = pygpu.load(tmp_path / "tbn.pt")
    nbt = back["1.num_batches_tracked"]
    assert nbt.dtype is pygpu.int64 and nbt.shape == () and nbt.item() == 3
    m.load_state_dict(back)
    m.eval(), twin.eval()
    x = np.random.default_rng(5).standard_normal((2, 4)).astype(np.float32)
    np.testing.assert_allclose(m(pygpu.tensor(x)).detach().numpy(),
                               twin(torch.from_numpy(x)).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_torch_adams_step_tensors_resume_in_pygpu(tmp_path):
    """torch.optim.Adam keeps each parameter's `step` as a 0-d float32 tensor: pygpu's Adam
    resumes from it and takes the same steps as torch's."""
    torch.manual_seed(0)
    twin = torch.nn.Linear(3, 2)
    topt = torch.optim.Adam(twin.parameters(), lr=1e-2)
    xs = np.random.default_rng(6).standard_normal((5, 4, 3)).astype(np.float32)

    def steps(lib, model, opt, batches):
        for xb in batches:
            opt.zero_grad()
            model(lib.tensor(xb)).square().sum().backward()
            opt.step()
    steps(torch, twin, topt, xs[:3])
    torch.save({"model": twin.state_dict(), "opt": topt.state_dict()}, tmp_path / "adam.pt")
    ck = pygpu.load(tmp_path / "adam.pt")
    step = ck["opt"]["state"][0]["step"]
    assert isinstance(step, pygpu.Tensor) and step.shape == () and step.item() == 3
    m = nn.Linear(3, 2)
    m.load_state_dict(ck["model"])
    opt = pygpu.optim.Adam(m.parameters(), lr=1e-2)
    opt.load_state_dict(ck["opt"])
    steps(pygpu, m, opt, xs[3:])
    steps(torch, twin, topt, xs[3:])
    np.testing.assert_allclose(m.weight.detach().numpy(), twin.weight.detach().numpy(),
                               rtol=1e-5, atol=1e-6)


def test_a_dtype_pygpu_lacks_is_named(tmp_path):
    """Every dtype of the table that torch has is a pygpu dtype now (complex32 and the shell
    dtypes included); a row pygpu lacks is still refused by name when a file holds it."""
    assert not [r.name for r in _dtypes.TABLE
                if r.pygpu is None and not r.levels and hasattr(torch, r.name)]
    row = _dtypes.Row("complex16", None, "<u2", None, 2)  # a dtype no one has
    with pytest.raises(TypeError, match="complex16"):
        _host.from_buffer(row, b"\0" * 4, 2)


def test_shared_storages_stay_shared_both_ways(tmp_path):
    base = pygpu.arange(12.0).reshape(3, 4)
    pygpu.save({"base": base, "row": base[1], "cols": base[:, 1:3], "t": base.t()},
               tmp_path / "v.pt")
    t = torch.load(tmp_path / "v.pt", weights_only=True)
    ptr = t["base"].untyped_storage().data_ptr()
    assert all(t[k].untyped_storage().data_ptr() == ptr for k in ("row", "cols", "t"))
    assert t["row"].tolist() == [4.0, 5.0, 6.0, 7.0] and t["t"].shape == (4, 3)
    with zipfile.ZipFile(tmp_path / "v.pt") as z:
        assert sum(n.split("/")[1] == "data" for n in z.namelist()) == 1  # one storage record
    big = torch.arange(10.0)
    torch.save({"a": big[2:6], "b": big[4:9], "w": big}, tmp_path / "t.pt")
    back = pygpu.load(tmp_path / "t.pt")
    back["w"].add_(100)  # one storage: the views see the write
    assert back["a"].tolist() == [102.0, 103.0, 104.0, 105.0]
    assert back["b"].tolist() == [104.0, 105.0, 106.0, 107.0, 108.0]


def test_a_slice_writes_only_what_it_reaches(tmp_path):
    big = pygpu.zeros(100000)
    pygpu.save({"head": big[:4]}, tmp_path / "s.pt")
    assert os.path.getsize(tmp_path / "s.pt") < 4000  # PyTorch would write all 400 kB
    assert torch.load(tmp_path / "s.pt")["head"].tolist() == [0.0] * 4


def test_parameters_keep_their_kind_and_requires_grad(tmp_path):
    m, _ = _trained_pygpu()
    pygpu.save({"w": m[0].weight, "frozen": m[0].bias.detach().requires_grad_(True)},
               tmp_path / "p.pt")
    t = torch.load(tmp_path / "p.pt", weights_only=True)
    assert isinstance(t["w"], torch.nn.Parameter) and t["frozen"].requires_grad
    torch.save({"p": torch.nn.Parameter(torch.ones(2))}, tmp_path / "tp.pt")
    p = pygpu.load(tmp_path / "tp.pt")["p"]
    assert isinstance(p, nn.Parameter) and p.requires_grad and p.tolist() == [1.0, 1.0]


def test_the_legacy_format(tmp_path):
    big = torch.arange(6.0)
    torch.save({"a": torch.ones(2, 2), "v": big[1:4], "big": big, "h": torch.ones(3).half()},
               tmp_path / "old.pt", _use_new_zipfile_serialization=False)
    back = pygpu.load(tmp_path / "old.pt")
    assert back["v"].tolist() == [1.0, 2.0, 3.0] and back["h"].dtype is pygpu.float16
    back["big"].add_(1)
    assert back["v"].tolist() == [2.0, 3.0, 4.0]


def test_map_location_in_every_form(tmp_path):
    pygpu.save({"w": pygpu.ones(2, device="sim:1"), "c": pygpu.ones(1)}, tmp_path / "m.pt")
    assert str(pygpu.load(tmp_path / "m.pt")["w"].device) == "sim:1"
    assert str(pygpu.load(tmp_path / "m.pt", map_location="cpu")["w"].device) == "cpu"
    assert str(pygpu.load(tmp_path / "m.pt", map_location={"sim:1": "sim:0"})["w"].device) == "sim:0"
    back = pygpu.load(tmp_path / "m.pt", map_location=lambda storage, loc: storage)
    assert str(back["w"].device) == "sim:1"
    back = pygpu.load(tmp_path / "m.pt", map_location=lambda storage, loc: storage.cpu())
    assert {str(t.device) for t in back.values()} == {"cpu"}
    t = torch.load(tmp_path / "m.pt", map_location="cpu", weights_only=True)  # torch: no sim
    assert t["w"].tolist() == [1.0, 1.0]
    torch.save({"w": torch.ones(2)}, tmp_path / "t.pt")
    assert str(pygpu.load(tmp_path / "t.pt", map_location="sim:0")["w"].device) == "sim:0"


def test_whole_modules_both_ways_need_weights_only_false(tmp_path):
    twin = _torch_twin()
    torch.save(twin, tmp_path / "whole.pt")
    with pytest.raises(pickle.UnpicklingError, match="weights_only=True.*Sequential"):
        pygpu.load(tmp_path / "whole.pt")
    mine = pygpu.load(tmp_path / "whole.pt", weights_only=False)  # torch's classes as pygpu's
    assert type(mine) is nn.Sequential and type(mine[0]) is nn.Linear
    xs = np.random.default_rng(4).standard_normal((3, 4)).astype(np.float32)
    np.testing.assert_allclose(mine(pygpu.tensor(xs)).detach().numpy(),
                               twin(torch.from_numpy(xs)).detach().numpy(), rtol=1e-5, atol=1e-6)
    m, _ = _trained_pygpu()
    pygpu.save(m, tmp_path / "mine.pt")
    back = pygpu.load(tmp_path / "mine.pt", weights_only=False)
    x = pygpu.randn(2, 4)
    np.testing.assert_array_equal(back(x).detach().numpy(), m(x).detach().numpy())


def test_a_file_object_and_save_is_atomic(tmp_path, monkeypatch):
    buf = io.BytesIO()
    pygpu.save({"w": pygpu.ones(3)}, buf)
    buf.seek(0)
    assert torch.load(buf, weights_only=True)["w"].tolist() == [1.0] * 3
    path = tmp_path / "a.pt"
    pygpu.save({"w": pygpu.ones(2)}, path)
    old = path.read_bytes()
    monkeypatch.setattr(os, "replace", lambda *a: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError, match="disk full"):
        pygpu.save({"w": pygpu.zeros(1000)}, path)
    assert path.read_bytes() == old and os.listdir(tmp_path) == ["a.pt"]


# ---- hostile and corrupt files -----------------------------------------------------------------

def _zip_with_pickle(path, payload, records=None):
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("archive/data.pkl", payload)
        z.writestr("archive/byteorder", "little")
        z.writestr("archive/version", "3\n")
        for name, data in (records or {}).items():
            z.writestr(f"archive/data/{name}", data)


def test_code_in_a_checkpoint_never_runs(tmp_path):
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))
    _zip_with_pickle(tmp_path / "evil.pt", pickle.dumps({"w": Evil()}, protocol=2))
    with pytest.raises(pickle.UnpicklingError, match="os.system|posix.system"):
        pygpu.load(tmp_path / "evil.pt")
    with pytest.raises(pickle.UnpicklingError):  # torch refuses it too: same exception type
        torch.load(tmp_path / "evil.pt", weights_only=True)
    assert not marker.exists()


@pytest.mark.parametrize("payload, words", [
    (b"\x80\x02cbuiltins\neval\nX\x04\x00\x00\x001+1q\x00\x85R.", "builtins.eval"),
    (b"\x80\x02]}b.", "Can only build"),  # BUILD on a list
    (b"\x80\x02}(X\x01\x00\x00\x00aK\x01a.", "append to lists"),  # APPEND on a dict
    (b"\x80\x02X\x03\x00\x00\x00abc}s.", "corrupt"),
    (b"\x80\x02(X\x04\x00\x00\x00evilK\x00tQ.", "storage"),  # a persistent id not a storage
    (b"\x80\x02}(X", "truncated|corrupt"),
    (b"\x80\x02\x93.", "Unsupported operand"),  # STACK_GLOBAL: not a protocol-2 checkpoint's
])
def test_a_hostile_or_corrupt_pickle_is_an_unpickling_error(tmp_path, payload, words):
    _zip_with_pickle(tmp_path / "x.pt", payload)
    with pytest.raises(pickle.UnpicklingError, match=words):
        pygpu.load(tmp_path / "x.pt")


def _tensor_pickle(offset, size, stride, numel, key="0"):
    buf = io.BytesIO()
    pygpu.save({"t": pygpu.zeros(numel)}, buf)
    z = zipfile.ZipFile(io.BytesIO(buf.getvalue()))
    data = z.read("archive/data.pkl")
    return data.replace(b"K\x00K\x04\x85", b"K" + bytes([offset]) + b"K" + bytes([size]) + b"\x85"
                        ) if size else data


def test_a_view_outside_its_storage_is_refused(tmp_path):
    pygpu.save({"t": pygpu.zeros(4)}, tmp_path / "ok.pt")
    with zipfile.ZipFile(tmp_path / "ok.pt") as z:
        data = z.read("ok/data.pkl")  # the folder is named after the file, as torch.save names it
        raw = z.read("ok/data/0")
    assert b"K\x04\x85" in data  # the size (4,) as pickled
    _zip_with_pickle(tmp_path / "big.pt", data.replace(b"K\x04\x85", b"K\x09\x85", 1), {"0": raw})
    with pytest.raises(RuntimeError, match="out of bounds for storage"):
        pygpu.load(tmp_path / "big.pt")
    with pytest.raises(RuntimeError):
        torch.load(tmp_path / "big.pt", weights_only=True)
    _zip_with_pickle(tmp_path / "short.pt", data, {"0": raw[:8]})
    with pytest.raises(RuntimeError, match="corrupt|does not match"):
        pygpu.load(tmp_path / "short.pt")


@pytest.mark.parametrize("cut", [10, 100, -30])
def test_a_truncated_zip_is_a_runtime_error(tmp_path, cut):
    pygpu.save({"w": pygpu.ones(64)}, tmp_path / "w.pt")
    raw = (tmp_path / "w.pt").read_bytes()
    (tmp_path / "w.pt").write_bytes(raw[:cut])
    with pytest.raises(RuntimeError, match="zip|PytorchStreamReader"):
        pygpu.load(tmp_path / "w.pt")


def test_add_safe_globals_lets_a_class_through(tmp_path):
    import dataclasses

    pygpu.save({"cfg": collections.Counter(a=2)}, tmp_path / "c.pt")
    assert pygpu.load(tmp_path / "c.pt")["cfg"] == collections.Counter(a=2)
    pygpu.save({"cfg": _Config(3)}, tmp_path / "d.pt")
    with pytest.raises(pickle.UnpicklingError, match="_Config"):
        pygpu.load(tmp_path / "d.pt")
    with pygpu.serialization.safe_globals([_Config]):
        assert pygpu.load(tmp_path / "d.pt")["cfg"] == _Config(3)
    assert dataclasses.is_dataclass(_Config)


import dataclasses  # noqa: E402


@dataclasses.dataclass
class _Config:
    depth: int
