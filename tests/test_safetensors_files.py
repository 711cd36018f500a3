# test_safetensors_files.py - safetensors through the safetensors library (issue 46, item 2):
# every dtype the library and pygpu share, bfloat16 included, both ways; every header the
# library rejects is a ValueError from pygpu.load too (the library validates, pygpu does not
# parse tensors itself); corrupt pygpu metadata of any kind is a ValueError.
import json
import struct

import numpy as np
import pytest
import safetensors

import pygpu
from pygpu.serialization import _dtypes

ROWS = [r for r in _dtypes.TABLE if r.pygpu is not None and r.safetensors]


def _file(header, data=b""):
    body = json.dumps(header).encode()
    return struct.pack("<Q", len(body)) + body + data


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_every_dtype_round_trips_through_the_library(tmp_path, row):
    t = pygpu.tensor([[1, 0, 3], [2, 5, 0]]).to(row.pygpu)
    pygpu.save({"t": t, "s": t[0, 0]}, tmp_path / "x.safetensors")
    parsed = dict(safetensors.deserialize((tmp_path / "x.safetensors").read_bytes()))
    assert parsed["t"]["dtype"] == row.safetensors and parsed["t"]["shape"] == [2, 3]
    back = pygpu.load(tmp_path / "x.safetensors")
    assert back["t"].dtype is row.pygpu and back["s"].shape == ()
    np.testing.assert_array_equal(back["t"].float().numpy(), t.float().numpy())


def test_bfloat16_against_safetensors_torch(tmp_path):
    torch = pytest.importorskip("torch")
    from safetensors.torch import load_file, save_file
    t = pygpu.tensor([1.5, -2.25, 3e38]).to(pygpu.bfloat16)
    pygpu.save({"t": t}, tmp_path / "b.safetensors")
    got = load_file(str(tmp_path / "b.safetensors"))["t"]
    assert got.dtype is torch.bfloat16
    np.testing.assert_array_equal(got.float().numpy(), t.float().numpy())
    save_file({"u": got * 2}, str(tmp_path / "c.safetensors"))
    np.testing.assert_array_equal(pygpu.load(tmp_path / "c.safetensors")["u"].float().numpy(),
                                  (got * 2).float().numpy())


def test_a_dtype_pygpu_lacks_is_a_value_error_naming_it(tmp_path):
    """A code no row reads (F4: safetensors counts float4's 4-bit halves, which
    float4_e2m1fn_x2's one-byte elements do not map to) is a ValueError naming it."""
    assert "F4" not in _dtypes.BY_SAFETENSORS
    data = np.zeros(2, np.uint8).tobytes()
    (tmp_path / "m.safetensors").write_bytes(
        _file({"t": {"dtype": "F4", "shape": [4], "data_offsets": [0, len(data)]}}, data))
    with pytest.raises(ValueError, match="F4"):
        pygpu.load(tmp_path / "m.safetensors")


# headers the library rejects, with a bfloat16 tensor (the dtype NumPy lacks) in each
BAD_HEADERS = {
    "negative shape": ({"t": {"dtype": "BF16", "shape": [-2], "data_offsets": [0, 4]}}, 4),
    "negative offset": ({"t": {"dtype": "BF16", "shape": [2], "data_offsets": [-4, 0]}}, 4),
    "offsets past the data": ({"t": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 8]}}, 4),
    "reversed offsets": ({"t": {"dtype": "BF16", "shape": [2], "data_offsets": [4, 0]}}, 4),
    "shape and offsets disagree": (
        {"t": {"dtype": "BF16", "shape": [3], "data_offsets": [0, 4]}}, 4),
    "overlapping tensors": ({"a": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]},
                             "b": {"dtype": "BF16", "shape": [2], "data_offsets": [2, 6]}}, 6),
    "a gap between tensors": ({"a": {"dtype": "BF16", "shape": [1], "data_offsets": [0, 2]},
                               "b": {"dtype": "BF16", "shape": [1], "data_offsets": [4, 6]}}, 6),
    "data not fully covered": ({"t": {"dtype": "BF16", "shape": [1], "data_offsets": [0, 2]}}, 6),
    "unknown dtype": ({"t": {"dtype": "BF17", "shape": [2], "data_offsets": [0, 4]}}, 4),
    "missing offsets": ({"t": {"dtype": "BF16", "shape": [2]}}, 4),
    "shape not a list": ({"t": {"dtype": "BF16", "shape": 2, "data_offsets": [0, 4]}}, 4),
    "metadata not strings": ({"__metadata__": {"a": 1},
                              "t": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]}}, 4),
    "huge shape": ({"t": {"dtype": "BF16", "shape": [2 ** 62, 2 ** 62],
                          "data_offsets": [0, 4]}}, 4),
}


@pytest.mark.parametrize("case", sorted(BAD_HEADERS))
def test_headers_the_library_rejects_are_value_errors(tmp_path, case):
    header, n = BAD_HEADERS[case]
    raw = _file(header, b"\x00" * n)
    with pytest.raises(Exception):
        safetensors.deserialize(raw)  # the library itself rejects it
    (tmp_path / "bad.safetensors").write_bytes(raw)
    with pytest.raises(ValueError, match="not a valid safetensors"):
        pygpu.load(tmp_path / "bad.safetensors")


def _with_metadata(tmp_path, **meta):
    data = np.ones(2, np.float32).tobytes()
    header = {"__metadata__": meta, "t": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}
    (tmp_path / "m.safetensors").write_bytes(_file(header, data))
    return tmp_path / "m.safetensors"


@pytest.mark.parametrize("meta", [
    {"pygpu.devices": "{not json"},
    {"pygpu.devices": "[1, 2]"},
    {"pygpu.devices": '{"t": 5}'},
    {"pygpu.devices": '{"t": "nowhere:0"}'},
    {"pygpu.tree": '{"__tensor__": "absent"}'},
    {"pygpu.tree": '{"__what__": 1}'},
    {"pygpu.tree": '{"__dict__": [[1]]}'},
    {"pygpu.tree": '{"__dict__": 5}'},
    {"pygpu.tree": '{"__list__": {"a": 1}}'},
    {"pygpu.tree": '{"__value__": {"x": 1}}'},
    {"pygpu.tree": "[" * 100000 + "]" * 100000},
    {"pygpu.tree": '{"__list__": ' * 300 + "[]" + "}" * 300},
    {"pygpu.tree": '"a string"'},
    {"pygpu.order": '{"a": 1}'},
], ids=lambda m: next(iter(m.values()))[:24])
def test_corrupt_pygpu_metadata_is_a_value_error(tmp_path, meta):
    with pytest.raises(ValueError, match="corrupt pygpu metadata"):
        pygpu.load(_with_metadata(tmp_path, **meta))


def test_an_order_that_does_not_match_falls_back_to_the_names(tmp_path):
    back = pygpu.load(_with_metadata(tmp_path, **{"pygpu.order": '["x", "y"]'}))
    assert list(back) == ["t"]
