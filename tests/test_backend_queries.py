# test_backend_queries.py - the names of PyTorch's other backends with torch's CPU build's
# answers (pygpu/_tensor/backend_queries.py, pygpu/amp/_switches.py): is_vulkan_available,
# Tensor.xpu/ipu/mtia's refusals, the ipu/xla autocast switches (state, deprecated
# spellings with torch's warning), and torch.to_dlpack's capsule read back by numpy and torch.
import warnings

import numpy as np
import pytest
import torch

import pygpu


def _name(dtype):
    return str(dtype).split(".")[-1]


def test_vulkan_and_other_backends_moves():
    assert pygpu.is_vulkan_available() is torch.is_vulkan_available() is False
    x, t = pygpu.ones(2), torch.ones(2)
    for name in ("xpu", "ipu", "mtia"):
        with pytest.raises(Exception) as want:
            getattr(t, name)()
        with pytest.raises(type(want.value)) as got:
            getattr(x, name)()
        assert str(got.value).split(".")[0] == str(want.value).split(".")[0]


@pytest.mark.parametrize("kind", ["ipu", "xla"])
def test_autocast_switches_of_other_backends(kind):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        was = (getattr(torch, f"is_autocast_{kind}_enabled")(),
               getattr(torch, f"get_autocast_{kind}_dtype")())
        try:
            assert _name(getattr(pygpu, f"get_autocast_{kind}_dtype")()) == _name(was[1])
            assert getattr(pygpu, f"is_autocast_{kind}_enabled")() is was[0] is False
            for lib in (pygpu, torch):
                getattr(lib, f"set_autocast_{kind}_enabled")(True)
                getattr(lib, f"set_autocast_{kind}_dtype")(lib.float16 if kind == "xla"
                                                           else lib.bfloat16)
            assert pygpu.is_autocast_enabled(kind) is torch.is_autocast_enabled(kind) is True
            assert _name(pygpu.get_autocast_dtype(kind)) == _name(torch.get_autocast_dtype(kind))
            assert not pygpu.is_autocast_enabled("cpu")  # nothing of pygpu's is autocast
        finally:
            for lib in (pygpu, torch):
                getattr(lib, f"set_autocast_{kind}_enabled")(False)
                getattr(lib, f"set_autocast_{kind}_dtype")(getattr(lib, _name(was[1])))
    with pytest.warns(DeprecationWarning, match=f"is_autocast_enabled\\('{kind}'\\)"):
        getattr(pygpu, f"is_autocast_{kind}_enabled")()


def test_to_dlpack_capsule(device):
    x = pygpu.arange(6, dtype=pygpu.float32, device=device).reshape(2, 3)
    if device.startswith("sim"):
        with pytest.raises(Exception):  # a sim tensor has no memory another library can read
            pygpu.to_dlpack(x)
        return
    cap = pygpu.to_dlpack(x)
    assert "dltensor" in repr(cap)
    # torch (the CPU build here) reads a host capsule; a cuda one comes back through pygpu's
    back = torch.from_dlpack(cap) if device == "cpu" else pygpu.from_dlpack(cap).cpu()
    np.testing.assert_array_equal(back.numpy(), np.arange(6).reshape(2, 3))
    with pytest.raises(TypeError, match="must be Tensor"):
        pygpu.to_dlpack(np.ones(2))
