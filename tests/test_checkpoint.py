# test_checkpoint.py - pygpu.save / pygpu.load: safetensors checkpoints.
#
# Round trips on every device, interop with the safetensors package both ways,
# the device metadata and map_location (string, Device, dict, callable), the
# error for a device that is absent, atomic writes, and clear errors with
# nothing loaded for truncated or corrupt files.
import json
import os
import struct

import numpy as np
import pytest

import pygpu
import safetensors.numpy as stnp

from _helpers import to_device


def _state(device):
    rng = np.random.default_rng(0)
    return {
        "0.weight": to_device(rng.standard_normal((4, 3)).astype(np.float32), device),
        "0.bias": to_device(rng.standard_normal(4).astype(np.float32), device),
        "steps": to_device(np.array([3, 1], np.int64), device),
        "f64": to_device(rng.standard_normal((2, 2)), device),
        "mask": to_device(np.array([True, False]), device),
    }


def _assert_same(a, b):
    assert set(a) == set(b)
    for k in a:
        assert a[k].dtype == b[k].dtype and a[k].shape == b[k].shape
        np.testing.assert_array_equal(a[k].numpy(), b[k].numpy())


def test_round_trip_returns_each_tensor_to_its_device(device, tmp_path):
    sd = _state(device)
    sd["on_cpu"] = pygpu.ones(2)
    pygpu.save(sd, tmp_path / "m.safetensors")
    back = pygpu.load(tmp_path / "m.safetensors")
    _assert_same(sd, back)
    for k in sd:
        assert str(back[k].device) == str(sd[k].device)


@pytest.mark.parametrize("where", ["cpu", "sim:1", pygpu.device("sim:0")])
def test_map_location_puts_every_tensor_on_one_device(device, where, tmp_path):
    sd = _state(device)
    pygpu.save(sd, tmp_path / "m.safetensors")
    back = pygpu.load(tmp_path / "m.safetensors", map_location=where)
    _assert_same(sd, back)
    assert {str(t.device) for t in back.values()} == {str(pygpu.device(where))}


def test_map_location_dict_and_callable(tmp_path):
    sd = {"a": pygpu.ones(2, device="sim:0"), "b": pygpu.ones(2, device="sim:1"), "c": pygpu.ones(2)}
    pygpu.save(sd, tmp_path / "m.safetensors")
    back = pygpu.load(tmp_path / "m.safetensors", map_location={"sim:0": "cpu", "cpu": "sim:1"})
    assert [str(back[k].device) for k in "abc"] == ["cpu", "sim:1", "sim:1"]
    back = pygpu.load(tmp_path / "m.safetensors", map_location=lambda saved: "sim:0")
    assert {str(t.device) for t in back.values()} == {"sim:0"}


def test_safetensors_reads_what_pygpu_writes(tmp_path):
    sd = _state("sim")
    pygpu.save(sd, tmp_path / "m.safetensors")
    arrays = stnp.load_file(str(tmp_path / "m.safetensors"))
    assert set(arrays) == set(sd)
    for k, v in sd.items():
        np.testing.assert_array_equal(arrays[k], v.numpy())
    n = struct.unpack("<Q", (tmp_path / "m.safetensors").read_bytes()[:8])[0]
    header = json.loads((tmp_path / "m.safetensors").read_bytes()[8:8 + n])
    assert json.loads(header["__metadata__"]["pygpu.devices"])["0.weight"] == "sim:0"


def test_pygpu_reads_what_safetensors_writes(tmp_path):
    arrays = {"w": np.arange(6, dtype=np.float32).reshape(2, 3), "i": np.arange(3, dtype=np.int64)}
    stnp.save_file(arrays, str(tmp_path / "plain.safetensors"))
    back = pygpu.load(tmp_path / "plain.safetensors")  # no pygpu metadata: everything on the cpu
    for k, v in arrays.items():
        assert str(back[k].device) == "cpu"
        np.testing.assert_array_equal(back[k].numpy(), v)
    back = pygpu.load(tmp_path / "plain.safetensors", map_location="sim")
    assert str(back["w"].device) == "sim:0"


def test_torch_reads_what_pygpu_writes(tmp_path):
    pytest.importorskip("torch")
    from safetensors.torch import load_file

    sd = _state("cpu")
    pygpu.save(sd, tmp_path / "m.safetensors")
    t = load_file(str(tmp_path / "m.safetensors"))
    np.testing.assert_array_equal(t["0.weight"].numpy(), sd["0.weight"].numpy())


def test_nested_state_like_an_optimizers_round_trips(tmp_path):
    state = {
        "state": {0: {"momentum_buffer": pygpu.ones(3, device="sim")}, 1: {"step": 4}},
        "param_groups": [{"lr": 0.01, "momentum": 0.9, "nesterov": False, "params": [0, 1],
                          "betas": (0.9, 0.999), "name": None}],
    }
    pygpu.save(state, tmp_path / "opt.safetensors")
    back = pygpu.load(tmp_path / "opt.safetensors")
    assert back["param_groups"] == state["param_groups"]
    assert back["state"][1] == {"step": 4}
    buf = back["state"][0]["momentum_buffer"]
    assert str(buf.device) == "sim:0" and buf.tolist() == [1.0, 1.0, 1.0]


def test_a_checkpoint_from_an_absent_device_names_it_and_says_map_location(tmp_path, fresh_stats):
    sd = {"a": pygpu.ones(2), "w": pygpu.ones(2)}
    pygpu.save(sd, tmp_path / "m.safetensors")
    path = tmp_path / "m.safetensors"
    raw = path.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    header["__metadata__"]["pygpu.devices"] = json.dumps({"a": "sim:0", "w": "cuda:7"})
    new = json.dumps(header).encode()
    new += b" " * (-len(new) % 8)
    path.write_bytes(struct.pack("<Q", len(new)) + new + raw[8 + n:])
    if pygpu.cuda.is_available() and pygpu.cuda.device_count() > 7:
        pytest.skip("this machine has a cuda:7")
    with pytest.raises(pygpu.DeviceUnavailableError, match=r"cuda:7.*map_location='cpu'"):
        pygpu.load(path)
    assert pygpu.stats().per_device["sim:0"]["allocs"] == 0  # all or nothing: "a" was not loaded
    assert pygpu.load(path, map_location="cpu")["w"].tolist() == [1.0, 1.0]


def _write_then_damage(tmp_path, damage):
    path = tmp_path / "m.safetensors"
    pygpu.save(_state("cpu"), path)
    raw = path.read_bytes()
    path.write_bytes(damage(raw))
    return path


@pytest.mark.parametrize("damage, words", [
    (lambda raw: raw[:len(raw) - 10], "truncated"),
    (lambda raw: raw[:5], "truncated"),
    (lambda raw: raw[:8] + b"{not json" + raw[17:], "invalid JSON"),
    (lambda raw: struct.pack("<Q", 10 ** 9) + raw[8:], "truncated"),
    (lambda raw: b"", "truncated"),
], ids=["tail_cut", "header_cut", "bad_json", "header_length_too_big", "empty"])
def test_a_damaged_file_is_a_clear_error(tmp_path, damage, words, fresh_stats):
    path = _write_then_damage(tmp_path, damage)
    with pytest.raises(ValueError, match=words):
        pygpu.load(path)
    assert pygpu.stats().per_device["sim:0"]["allocs"] == 0  # nothing was loaded


def test_save_is_atomic_and_leaves_no_temporary_file(tmp_path, monkeypatch):
    path = tmp_path / "m.safetensors"
    pygpu.save({"w": pygpu.ones(2)}, path)
    old = path.read_bytes()

    def crash(*args):
        raise OSError("disk full (simulated)")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="simulated"):
        pygpu.save({"w": pygpu.zeros(1000)}, path)
    assert path.read_bytes() == old  # the old checkpoint is intact
    assert os.listdir(tmp_path) == ["m.safetensors"]  # and no temporary file is left


@pytest.mark.parametrize("state, refused", [
    ([1, 2], None),
    ({(1, 2): pygpu.ones(1)}, None),
    ({"w": object()}, "builtins.object"),
])
def test_states_safetensors_cannot_hold_are_pickled_and_weights_only_guards_them(
        tmp_path, state, refused):
    # PyTorch's save takes any object: what safetensors cannot hold is pickled, and
    # load(weights_only=True) (the default) reads it only when it is containers and values
    pygpu.save(state, tmp_path / "x.pt")
    if refused:
        with pytest.raises(Exception, match=f"weights_only=True.*{refused}.*weights_only=False"):
            pygpu.load(tmp_path / "x.pt")
        assert type(pygpu.load(tmp_path / "x.pt", weights_only=False)["w"]) is object
    else:
        back = pygpu.load(tmp_path / "x.pt")
        assert type(back) is type(state) and len(back) == len(state)
    assert os.listdir(tmp_path) == ["x.pt"]


def test_an_optimizers_state_dict_round_trips(tmp_path):
    pygpu.manual_seed(0)
    model = pygpu.nn.MLP([4, 3, 2]).to("sim")
    opt = pygpu.optim.Adam(model.parameters(), lr=0.01)
    x, y = pygpu.randn(5, 4, device="sim"), pygpu.tensor([0, 1, 0, 1, 1], device="sim")
    pygpu.nn.CrossEntropyLoss()(model(x), y).backward()
    opt.step()
    pygpu.save(opt.state_dict(), tmp_path / "adam.safetensors")
    back = pygpu.load(tmp_path / "adam.safetensors")
    again = pygpu.optim.Adam(model.parameters(), lr=0.5)
    again.load_state_dict(back)
    assert again.param_groups[0]["lr"] == 0.01 and again.param_groups[0]["betas"] == (0.9, 0.999)
    for i, st in opt.state_dict()["state"].items():
        assert back["state"][i]["step"] == st["step"]
        assert str(back["state"][i]["exp_avg"].device) == "sim:0"
        np.testing.assert_array_equal(back["state"][i]["exp_avg_sq"].numpy(), st["exp_avg_sq"].numpy())


def test_a_safetensors_header_whose_length_looks_like_a_pickle_or_zip_loads(tmp_path):
    # the header's length is the file's first 8 bytes: 0x80 (pickle's first byte) or "PK"
    # (a zip's) there must not be taken for a torch.save file
    for low in (0x80, 0x4B50):
        arr = np.arange(3, dtype=np.float32)
        header = {"x": {"dtype": "F32", "shape": [3], "data_offsets": [0, 12]}}
        text = json.dumps(header).encode()
        pad = low - len(text)
        assert pad >= 0
        text += b" " * pad  # safetensors pads its header with spaces
        path = tmp_path / f"h{low}.safetensors"
        path.write_bytes(struct.pack("<Q", len(text)) + text + arr.tobytes())
        got = pygpu.load(path)
        np.testing.assert_array_equal(got["x"].numpy(), arr)
