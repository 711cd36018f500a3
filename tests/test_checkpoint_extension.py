# test_checkpoint_extension.py - pygpu.save decides the format by the path's extension.
#
# A `.safetensors` path gets safetensors or a TypeError naming the value that cannot be
# stored there (issue 39: it used to get a pygpu pickle, which every safetensors reader,
# and pygpu.load's default weights_only=True, then refused). Pickles go to other paths.
# A refusal leaves the file that was there before untouched, as a failed write does.
import io
import os

import numpy as np
import pytest
import safetensors.numpy as stnp

import pygpu


def _old_checkpoint(path):
    pygpu.save({"w": pygpu.arange(3.0)}, path)
    return path.read_bytes()


@pytest.mark.parametrize("state, key", [
    ({"w": pygpu.ones(2), "cfg": {"name": "run", "obj": object()}}, "cfg.obj"),
    ({"w": pygpu.ones(2), "note": b"bytes"}, "note"),
    ({"opt": {"state": [pygpu.ones(1), {1, 2}]}}, "opt.state.1"),
    ({"w": pygpu.ones(2), (1, 2): pygpu.ones(1)}, "(1, 2)"),
])
@pytest.mark.parametrize("name", ["ck.safetensors", "CK.SafeTensors"])
def test_a_safetensors_path_refuses_what_safetensors_cannot_hold(tmp_path, state, key, name):
    path = tmp_path / name
    old = _old_checkpoint(path)
    with pytest.raises(TypeError) as info:
        pygpu.save(state, path)
    msg = str(info.value)
    assert key in msg and ".safetensors" in msg and ".pt" in msg, msg
    assert path.read_bytes() == old  # the old checkpoint survives the refusal
    assert os.listdir(tmp_path) == [name]  # and no temporary file is left
    assert pygpu.load(path)["w"].tolist() == [0.0, 1.0, 2.0]


def test_a_safetensors_path_refuses_a_module(tmp_path):
    path = tmp_path / "model.safetensors"
    old = _old_checkpoint(path)
    with pytest.raises(TypeError, match=r"model\.safetensors is a \.safetensors path.*not a "
                                        r"Linear.*state_dict\(\).*\.pt path"):
        pygpu.save(pygpu.nn.Linear(2, 2), path)
    assert path.read_bytes() == old


def test_a_safetensors_path_holds_plain_values_as_safetensors(tmp_path):
    path = tmp_path / "ck.safetensors"
    state = {"model": {"w": pygpu.ones(2, 3, device="sim")}, "epoch": 3, "name": "run",
             "lrs": [0.1, 0.01]}
    pygpu.save(state, path)
    assert set(stnp.load_file(str(path))) == {"model.w"}  # any safetensors reader opens it
    back = pygpu.load(path)  # weights_only=True, the default
    assert back["epoch"] == 3 and back["name"] == "run" and back["lrs"] == [0.1, 0.01]
    assert str(back["model"]["w"].device) == "sim:0"
    np.testing.assert_array_equal(back["model"]["w"].numpy(), np.ones((2, 3), np.float32))


def test_a_file_opened_under_a_safetensors_name_is_refused_too(tmp_path):
    with open(tmp_path / "ck.safetensors", "wb") as f:
        with pytest.raises(TypeError, match="cfg"):
            pygpu.save({"cfg": object()}, f)
    assert (tmp_path / "ck.safetensors").read_bytes() == b""  # nothing written


@pytest.mark.parametrize("name", ["ck.pt", "ck.pth", "ck"])
def test_other_paths_take_a_pickle(tmp_path, name):
    path = tmp_path / name
    pygpu.save({"w": pygpu.ones(2), "obj": object()}, path)
    assert type(pygpu.load(path, weights_only=False)["obj"]) is object
    pygpu.save(pygpu.nn.Linear(2, 2), path)
    assert type(pygpu.load(path, weights_only=False)).__name__ == "Linear"
    buf = io.BytesIO()  # a buffer has no extension: pickled as before
    pygpu.save({"obj": object()}, buf)
    assert type(pygpu.load(io.BytesIO(buf.getvalue()), weights_only=False)["obj"]) is object


def test_a_failed_pickle_leaves_the_old_file(tmp_path):
    class Unpicklable:
        def __reduce__(self):
            raise RuntimeError("cannot pickle this (simulated)")

    path = tmp_path / "ck.pt"
    old = _old_checkpoint(path)
    with pytest.raises(RuntimeError, match="simulated"):
        pygpu.save({"obj": Unpicklable()}, path)
    assert path.read_bytes() == old
    assert os.listdir(tmp_path) == ["ck.pt"]
