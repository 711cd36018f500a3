# test_guard.py - pygpu.transfer_guard: allow / log / disallow implicit transfers.
#
# "allow" (the default) is silent; "log" emits one pygpu.TransferWarning (a
# UserWarning) per implicit transfer; "disallow" raises
# pygpu.TransferGuardError instead of copying. Explicit transfers (.to(),
# .cpu(), tensor(..., device=)) are always allowed, and so is everything that
# moves no data (cpu tensors, ops with Python scalars on a device). Used as a
# context manager the guard restores the previous level, also on exceptions.
import warnings

import numpy as np
import pytest

import pygpu

pytestmark = pytest.mark.usefixtures("guard_restored")

IMPLICIT = [
    ("repr", repr), ("str", str), ("item", lambda t: t[0].item()), ("float", lambda t: float(t[0])),
    ("int", lambda t: int(t[0])), ("bool", lambda t: bool(t[0])), ("tolist", lambda t: t.tolist()),
    ("asarray", np.asarray),
]
EXPLICIT = [
    ("to_cpu", lambda t: t.to("cpu")), ("cpu", lambda t: t.cpu()),
    ("to_cpu_numpy", lambda t: t.to("cpu").numpy()), ("to_sim1", lambda t: t.to("sim:1").wait()),
    ("upload", lambda t: pygpu.tensor(np.ones(3), device="sim:0")),
    ("scalar_op", lambda t: (t * 2.0 + 1).wait()), ("view", lambda t: t[1:].T),
]


def _transfer_warnings(action, *args):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        action(*args)
    return [w for w in caught if issubclass(w.category, pygpu.TransferWarning)]


def _sim_tensor():
    x = pygpu.tensor([1.0, 2.0, 3.0], device="sim:0")
    x.wait()
    return x


@pytest.mark.parametrize("name,action", IMPLICIT, ids=[i[0] for i in IMPLICIT])
def test_allow_is_silent(name, action):
    pygpu.transfer_guard("allow")
    assert _transfer_warnings(action, _sim_tensor()) == []


@pytest.mark.parametrize("name,action", IMPLICIT, ids=[i[0] for i in IMPLICIT])
def test_log_warns_once_per_implicit_transfer(name, action):
    x = _sim_tensor()
    pygpu.transfer_guard("log")
    caught = _transfer_warnings(action, x)
    assert len(caught) == 1, [str(w.message) for w in caught]
    assert issubclass(caught[0].category, UserWarning)


@pytest.mark.parametrize("name,action", IMPLICIT, ids=[i[0] for i in IMPLICIT])
def test_disallow_raises_instead_of_copying(name, action, fresh_stats):
    x = _sim_tensor()
    pygpu.transfer_guard("disallow")
    with pytest.raises(pygpu.TransferGuardError):
        action(x)
    pygpu.transfer_guard("allow")
    assert pygpu.stats().d2h_count == 0, "the refused transfer happened anyway"


@pytest.mark.parametrize("level", ["log", "disallow"])
@pytest.mark.parametrize("name,action", EXPLICIT, ids=[e[0] for e in EXPLICIT])
def test_explicit_transfers_always_allowed(name, action, level):
    x = _sim_tensor()
    pygpu.transfer_guard(level)
    assert _transfer_warnings(action, x) == []


@pytest.mark.parametrize("level", ["log", "disallow"])
def test_cpu_tensors_are_never_guarded(level):
    t = pygpu.tensor([1.0, 2.0])
    pygpu.transfer_guard(level)
    caught = _transfer_warnings(lambda: (repr(t), t.tolist(), t[0].item(), np.asarray(t), float(t[1])))
    assert caught == []


def test_context_manager_restores_previous_level():
    x = _sim_tensor()
    pygpu.transfer_guard("log")
    with pygpu.transfer_guard("disallow"):
        with pytest.raises(pygpu.TransferGuardError):
            repr(x)
        with pygpu.transfer_guard("allow"):
            assert _transfer_warnings(repr, x) == []
        with pytest.raises(pygpu.TransferGuardError):
            x.tolist()
    assert len(_transfer_warnings(repr, x)) == 1  # back to "log"


def test_context_manager_restores_after_an_exception():
    x = _sim_tensor()
    with pytest.raises(pygpu.TransferGuardError):
        with pygpu.transfer_guard("disallow"):
            x.tolist()
    np.testing.assert_array_equal(np.asarray(x), [1.0, 2.0, 3.0])  # "allow" again


def test_guard_message_names_the_trigger():
    x = _sim_tensor()
    with pygpu.transfer_guard("disallow"):
        with pytest.raises(pygpu.TransferGuardError) as info:
            x.tolist()
    assert "tolist" in str(info.value)
    pygpu.transfer_guard("log")
    (w,) = _transfer_warnings(repr, x)
    assert "repr" in str(w.message)


def test_guard_level_is_process_wide_across_threads():
    import threading

    x = _sim_tensor()
    outcome = []
    pygpu.transfer_guard("disallow")

    def other_thread():
        try:
            x.tolist()
            outcome.append("copied")
        except pygpu.TransferGuardError:
            outcome.append("refused")

    th = threading.Thread(target=other_thread)
    th.start()
    th.join()
    assert outcome == ["refused"]
