# test_futures.py - torch.futures.Future, collect_all, wait_all and torch.jit.fork/wait
# (top-level torch.fork/torch.wait too) against torch's eager behaviour: fork runs the
# function at once, a Future is set once, then() chains with torch's error wrapping, done
# callbacks run once, from any thread (pygpu/futures, pygpu/jit).
import threading
import warnings

import numpy as np
import pytest
import torch

import pygpu

pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.*` is deprecated:DeprecationWarning")


def _both(fn):
    """fn(module) on torch and on pygpu: (what torch did, what pygpu did), an exception as
    (type name, first line of its message)."""
    out = []
    for mod in (torch, pygpu):
        try:
            out.append(fn(mod))
        except Exception as e:  # noqa: BLE001 - compared between the two
            out.append((type(e).__name__, str(e).splitlines()[0]))
    return tuple(out)


def test_fork_runs_at_once_and_wait_returns_its_value(device):
    calls = []

    def work(mod, x, scale=1.0):
        calls.append(mod.__name__)
        return x * scale
    for mod, jit in ((torch, torch.jit), (pygpu, pygpu.jit)):
        x = mod.ones(3, device="cpu" if mod is torch else device)
        fut = jit.fork(work, mod, x, scale=2.0)
        assert fut.done() and calls[-1] == mod.__name__  # ran at fork time
        assert isinstance(fut, mod.Future)
        got = jit.wait(fut)
        np.testing.assert_array_equal(got.cpu().numpy() if mod is pygpu else got.numpy(),
                                      np.full(3, 2.0))
        assert mod.wait(mod.fork(work, mod, x)) is not None  # the top-level spellings


def test_jit_fork_and_wait_warn_as_deprecated_and_the_top_level_ones_do_not():
    for mod in (torch, pygpu):
        with pytest.warns(DeprecationWarning, match="`torch.jit.fork` is deprecated"):
            fut = mod.jit.fork(lambda: 1)
        with pytest.warns(DeprecationWarning, match="`torch.jit.wait` is deprecated"):
            assert mod.jit.wait(fut) == 1
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert mod.wait(mod.fork(lambda: 2)) == 2


def test_fork_raises_the_function_error_and_wait_wants_a_future():
    def bad(_):
        raise ValueError("in fork")
    assert _both(lambda m: m.jit.fork(bad, m)) == (("ValueError", "in fork"),) * 2
    t, p = _both(lambda m: m.jit.wait(3))
    assert t[0] == p[0] == "TypeError"


def test_future_is_set_once_and_value_raises_before():
    def run(m):
        f = m.futures.Future()
        log = [f.done()]
        try:
            f.value()
        except RuntimeError:
            log.append("value-before")
        f.set_result(3)
        log += [f.done(), f.wait(), f.value()]
        try:
            f.set_result(4)
        except RuntimeError as e:
            log.append(str(e))
        return log
    t, p = _both(run)
    assert t == p == [False, "value-before", True, 3, 3,
                      "Attempting to mark a completed Future as complete again. Note that a "
                      "Future can only be marked completed once."]


def test_set_exception_then_and_callbacks_match_torch():
    def run(m):
        log = []
        f = m.futures.Future()
        f.add_done_callback(lambda fut: log.append(("cb", fut.value())))
        chained = f.then(lambda fut: fut.value() + 1)
        failing = f.then(lambda fut: 1 / 0)
        f.set_result(10)
        f.add_done_callback(lambda fut: log.append("at-once"))
        log.append(chained.wait())
        try:
            failing.wait()
        except RuntimeError as e:
            log.append(str(e).splitlines()[0])
        e = m.futures.Future()
        e.set_exception(ValueError("boom"))
        try:
            e.wait()
        except ValueError as err:
            log.append(("raised", str(err), e.done()))
        try:
            m.futures.Future().set_exception(3)
        except AssertionError as err:
            log.append(str(err))
        return log
    t, p = _both(run)
    assert t == p
    assert "Got the following error when running the callback: ZeroDivisionError: division by " \
           "zero" in p


def test_a_done_callback_error_is_logged_not_raised(caplog):
    f = pygpu.futures.Future()
    f.add_done_callback(lambda fut: 1 / 0)
    seen = []
    f.add_done_callback(lambda fut: seen.append(fut.value()))
    f.set_result(1)  # torch logs the first callback's error and runs the next
    assert seen == [1]
    assert "ZeroDivisionError" in caplog.text


def test_collect_all_and_wait_all_match_torch():
    def run(m):
        a, b = m.futures.Future(), m.futures.Future()
        both = m.futures.collect_all([a, b])
        log = [both.done()]
        a.set_result(1)
        log.append(both.done())
        b.set_result(2)
        log += [both.done(), [f.value() for f in both.wait()], m.futures.wait_all([a, b])]
        bad = a.then(lambda fut: 1 / 0)
        try:
            m.futures.wait_all([a, bad])
        except RuntimeError as e:
            log.append(str(e).splitlines()[0])
        log.append(m.futures.collect_all([]).wait())
        return log
    t, p = _both(run)
    assert t == p


def test_wait_blocks_until_another_thread_sets_the_result():
    f = pygpu.futures.Future()
    chained = f.then(lambda fut: fut.value() * 2)
    threading.Timer(0.05, f.set_result, (21,)).start()
    assert f.wait() == 21 and chained.wait() == 42


def test_future_devices_need_indices():
    assert pygpu.futures.Future(devices=["sim:0"]).done() is False
    with pytest.raises(ValueError, match="Expected devices to have indices"):
        pygpu.futures.Future(devices=["cpu"])
    assert pygpu.futures.Future[int] is not None  # generic, as torch's
