# test_cpu_switches.py - torch.set_flush_denormal, init_num_threads, get_device_module and
# get_file_path against torch: flushing denormals reaches every thread pygpu computes on (the
# caller's, the cpu pool's workers, a sim device's own threads, a new Python thread), and
# switching it off brings the denormals back (csrc/core/pg_pool.c: pg_set_flush_denormal).
import os
import threading

import numpy as np
import pytest
import torch

import pygpu

TINY = np.float32(1e-20)  # TINY * TINY = 1e-40: below float32's smallest normal (1.2e-38)
BIG = 1 << 20  # elements: enough for the cpu pool to split the product among its workers


@pytest.fixture
def flush_off_after():
    yield
    assert pygpu.set_flush_denormal(False) is True
    torch.set_flush_denormal(False)


def _product(mod, device, n):
    a = mod.full((n,), float(TINY), dtype=mod.float32, device=device)
    return (a * a).cpu().numpy()


@pytest.mark.parametrize("where", ["cpu", "sim"])  # the host's threads: a GPU's mode is its own
def test_a_denormal_product_becomes_zero_and_back(where, flush_off_after):
    for n in (4, BIG):
        assert np.all(_product(pygpu, where, n) > 0)  # denormal, not flushed by default
    assert pygpu.set_flush_denormal(True) is True
    assert torch.set_flush_denormal(True) is True
    for n in (4, BIG):  # the caller's thread; the pool's workers (BIG); sim's own threads
        got = _product(pygpu, where, n)
        np.testing.assert_array_equal(got, _product(torch, "cpu", n))
        assert np.all(got == 0)
    # DAZ: a denormal input reads as zero
    d = pygpu.tensor(np.full(BIG, 1e-40, np.float32), device=where)
    assert np.all((d * 1.0).cpu().numpy() == 0)
    assert pygpu.set_flush_denormal(False) is True
    for n in (4, BIG):  # every thread back to IEEE's denormals (numpy's product; torch 2.13's
        # own switch-off reaches only its calling thread, its OpenMP workers keep flushing)
        np.testing.assert_array_equal(_product(pygpu, where, n), np.full(n, TINY * TINY))


def test_a_new_thread_gets_the_mode_through_init_num_threads(flush_off_after):
    pygpu.set_flush_denormal(True)
    out = {}

    def run():
        pygpu.init_num_threads()  # torch's call for a new thread; pygpu's ops sync anyway
        out["v"] = _product(pygpu, "cpu", 4)
    t = threading.Thread(target=run)
    t.start()
    t.join()
    assert np.all(out["v"] == 0)
    assert pygpu.init_num_threads() is None and torch.init_num_threads() is None


def test_set_flush_denormal_wants_a_bool():
    for bad in (1, "x", None):
        with pytest.raises(RuntimeError) as want:
            torch.set_flush_denormal(bad)
        with pytest.raises(RuntimeError) as got:
            pygpu.set_flush_denormal(bad)
        assert str(got.value) == str(want.value)


def test_get_device_module():
    assert pygpu.get_device_module("cpu") is pygpu.cpu
    assert pygpu.get_device_module(pygpu.device("cpu")) is pygpu.cpu
    assert pygpu.get_device_module("sim:1") is pygpu.sim
    assert pygpu.get_device_module("cuda") is pygpu.cuda  # as torch's, with or without a GPU
    acc = pygpu.accelerator.current_accelerator()
    assert pygpu.get_device_module() is (pygpu.get_device_module(acc) if acc else pygpu.cpu)
    assert torch.get_device_module("cpu") is torch.cpu
    for bad, kind in ((3, RuntimeError), ("nodevice", RuntimeError)):
        with pytest.raises(kind):
            torch.get_device_module(bad)
        with pytest.raises(kind):
            pygpu.get_device_module(bad)


def test_get_file_path_joins_onto_the_package_parent():
    parent = os.path.dirname(os.path.dirname(os.path.abspath(pygpu.__file__)))
    assert pygpu.get_file_path("a", "b") == os.path.join(parent, "a", "b")
    assert torch.get_file_path("a") == os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(torch.__file__))), "a")
