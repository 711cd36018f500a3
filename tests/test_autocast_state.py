# test_autocast_state.py - PyTorch's lower-level autocast switches at torch's level
# (pygpu/amp/_switches.py) beside torch's: set_autocast_enabled / is_autocast_enabled per
# device type (ops on that device's tensors autocast outside any region, a region's own
# setting winning), set/get_autocast_dtype (and the dtype a new region takes), the cache
# switch and clear_autocast_cache, the nesting count, the deprecated spellings' warnings.
import warnings

import numpy as np
import pytest

import pygpu

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def restored():
    yield
    for lib in (torch, pygpu):
        lib.set_autocast_enabled("cpu", False)
        lib.set_autocast_dtype("cpu", lib.bfloat16)
        lib.set_autocast_dtype("cuda", lib.float16 if lib is torch else lib.bfloat16)
        lib.set_autocast_cache_enabled(True)
    for dev in ("sim", "cuda"):  # pygpu's defaults: off, bfloat16
        pygpu.set_autocast_enabled(dev, False)
        pygpu.set_autocast_dtype(dev, pygpu.bfloat16)


def test_switching_autocast_on_outside_a_region(device):
    dev = device.split(":")[0]
    a = pygpu.tensor(np.ones((4, 4), np.float32), device=device)
    assert (a @ a).dtype == pygpu.float32 and not pygpu.is_autocast_enabled(dev)
    pygpu.set_autocast_enabled(dev, True)
    assert pygpu.is_autocast_enabled(dev)
    assert (a @ a).dtype == pygpu.bfloat16
    with pygpu.autocast(dev, enabled=False):  # the region's own setting wins
        assert (a @ a).dtype == pygpu.float32
    pygpu.set_autocast_dtype(dev, pygpu.float16)
    assert (a @ a).dtype == pygpu.float16 and pygpu.get_autocast_dtype(dev) == pygpu.float16
    with pygpu.autocast(dev) as region:  # a new region's default
        assert region.fast_dtype == pygpu.float16
    pygpu.set_autocast_enabled(dev, False)
    assert (a @ a).dtype == pygpu.float32 and not pygpu.is_autocast_enabled(dev)


def test_the_switches_match_torch():
    for lib in (torch, pygpu):
        assert lib.is_autocast_enabled("cpu") is False
        assert lib.get_autocast_dtype("cpu") == lib.bfloat16
        with lib.autocast("cpu"):
            assert lib.is_autocast_enabled("cpu") is True
            assert lib.autocast_increment_nesting() == 2
            assert lib.autocast_decrement_nesting() == 1
        lib.set_autocast_enabled("cpu", True)
        assert lib.is_autocast_enabled("cpu") is True
        lib.set_autocast_enabled("cpu", False)
        lib.set_autocast_dtype("cpu", lib.float16)
        assert lib.get_autocast_dtype("cpu") == lib.float16
        assert lib.is_autocast_cache_enabled() is True
        lib.set_autocast_cache_enabled(False)
        assert lib.is_autocast_cache_enabled() is False
        lib.clear_autocast_cache()
        assert lib.is_autocast_enabled() == lib.is_autocast_enabled("cuda")  # the default


@pytest.mark.parametrize("call,new", [
    ("get_autocast_cpu_dtype()", "get_autocast_dtype('cpu')"),
    ("get_autocast_gpu_dtype()", "get_autocast_dtype('cuda')"),
    ("is_autocast_cpu_enabled()", "is_autocast_enabled('cpu')"),
    ("set_autocast_cpu_enabled(False)", "set_autocast_enabled('cpu', enabled)"),
    ("set_autocast_cpu_dtype(lib.bfloat16)", "set_autocast_dtype('cpu', dtype)"),
    ("set_autocast_gpu_dtype(lib.float16)", "set_autocast_dtype('cuda', dtype)")])
def test_deprecated_spellings(call, new):
    for lib in (torch, pygpu):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            eval("lib." + call, {"lib": lib})
        said = [str(w.message) for w in seen if w.category is DeprecationWarning]
        assert said and f"Please use torch.{new} instead" in said[0]


def test_bad_device_type():
    with pytest.raises(RuntimeError):
        torch.get_autocast_dtype("foo")
    with pytest.raises(RuntimeError):
        pygpu.get_autocast_dtype("foo")
