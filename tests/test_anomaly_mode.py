# test_anomaly_mode.py - autograd's anomaly mode (pygpu/autograd/anomaly_mode.py) as
# PyTorch's: detect_anomaly as a context and a decorator (its warning on entry), the NaN
# check naming the node and its output in PyTorch's words, the forward call's stack in the
# warning that precedes the error, check_nan=False, set_detect_anomaly as a call and a
# context, and torch's is_anomaly_enabled / is_anomaly_check_nan_enabled /
# set_anomaly_enabled, each compared with torch doing the same.
import warnings

import pytest

import pygpu

torch = pytest.importorskip("torch")


def _nan_backward(lib, device=None):
    kw = {} if device is None else {"device": device}
    x = lib.tensor([0.0, 1.0], requires_grad=True, **kw)
    (lib.sqrt(x) * 0).sum().backward()  # sqrt's gradient at 0 is inf; times 0: NaN


@pytest.mark.parametrize("lib", ["torch", "pygpu"])
def test_detect_anomaly_raises_on_nan(device, lib):
    mod = torch if lib == "torch" else pygpu
    dev = None if lib == "torch" else device
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with mod.autograd.detect_anomaly():
            assert mod.is_anomaly_enabled() and mod.is_anomaly_check_nan_enabled()
            with pytest.raises(RuntimeError,
                               match="Function 'SqrtBackward0' returned nan values in its 0th "
                                     "output."):
                _nan_backward(mod, dev)
    said = [str(w.message) for w in seen]
    assert said[0].startswith("Anomaly Detection has been enabled.")
    assert any(m.startswith("Error detected in SqrtBackward0. Traceback of forward call that "
                            "caused the error:") and "_nan_backward" in m for m in said)
    assert not mod.is_anomaly_enabled()
    _nan_backward(mod, dev)  # off again: no error


def test_decorator_and_switches(device):
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        @pygpu.autograd.detect_anomaly()
        def run():
            assert pygpu.is_anomaly_enabled()
            _nan_backward(pygpu, device)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match="returned nan values"):
            run()
    assert not pygpu.is_anomaly_enabled()
    pygpu.autograd.set_detect_anomaly(True)
    assert pygpu.is_anomaly_enabled()
    pygpu.autograd.set_detect_anomaly(False)
    assert not pygpu.is_anomaly_enabled()
    with pygpu.autograd.set_detect_anomaly(True, check_nan=False):
        assert pygpu.is_anomaly_enabled() and not pygpu.is_anomaly_check_nan_enabled()
        _nan_backward(pygpu, device)  # NaN gradients pass without the check
    assert not pygpu.is_anomaly_enabled() and pygpu.is_anomaly_check_nan_enabled()
    pygpu.set_anomaly_enabled(True, False)
    assert (pygpu.is_anomaly_enabled(), pygpu.is_anomaly_check_nan_enabled()) == (True, False)
    pygpu.set_anomaly_enabled(False)
    assert (pygpu.is_anomaly_enabled(), pygpu.is_anomaly_check_nan_enabled()) == (False, True)


def test_a_failing_backward_is_named_with_its_forward_stack(device):
    class Boom(pygpu.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            raise ValueError("boom")

    x = pygpu.tensor([1.0], device=device, requires_grad=True)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with pygpu.autograd.detect_anomaly():
            y = Boom.apply(x)  # the line the warning must show
            with pytest.raises(ValueError, match="boom"):
                y.sum().backward()
    said = [str(w.message) for w in seen if "Error detected" in str(w.message)]
    assert said and "y = Boom.apply(x)" in said[0]
