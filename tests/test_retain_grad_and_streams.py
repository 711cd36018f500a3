# test_retain_grad_and_streams.py - names that real programs use around the tensor, against
# torch as the oracle: Tensor.retain_grad/retains_grad (a non-leaf's gradient kept after its
# hooks, accumulated across backward calls), register_post_accumulate_grad_hook as a method,
# resize/resize_as (autograd's Resize), torch.OutOfMemoryError and torch.AcceleratorError
# (the classes pygpu's memory and device faults raise), and torch.Stream/torch.Event, the
# device-generic streams, on cpu and sim.
import warnings

import numpy as np
import pytest

import pygpu

torch = pytest.importorskip("torch")


def _pair(device, values, requires_grad=True):
    return (pygpu.tensor(values, device=device, requires_grad=requires_grad),
            torch.tensor(values, requires_grad=requires_grad))


def test_retain_grad_keeps_a_non_leafs_gradient_after_its_hooks(device):
    for lib, x in zip(("pygpu", "torch"), _pair(device, [1.0, 2.0, 3.0])):
        assert not x.retains_grad
        x.retain_grad()  # a leaf: a no-op
        assert not x.retains_grad
        y = x * 2
        assert not y.retains_grad
        y.retain_grad()
        assert y.retains_grad
        y.register_hook(lambda g: g * 10)  # registered after, still seen first
        z = (y * y).sum()
        z.backward(retain_graph=True)
        np.testing.assert_allclose(y.grad.numpy(), [40.0, 80.0, 120.0], err_msg=lib)
        z.backward()  # accumulated, as a leaf's
        np.testing.assert_allclose(y.grad.numpy(), [80.0, 160.0, 240.0], err_msg=lib)
        np.testing.assert_allclose(x.grad.numpy(), [160.0, 320.0, 480.0], err_msg=lib)
        assert not y.detach().retains_grad


def test_retain_grad_on_a_view_and_errors(device):
    for x in _pair(device, [1.0, 2.0, 3.0, 4.0]):
        a = x * 1
        v = a[1:3]
        v.retain_grad()
        (v * 3).sum().backward()
        np.testing.assert_allclose(v.grad.numpy(), [3.0, 3.0])
    for w in _pair(device, [1.0], requires_grad=False):
        with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has "
                                               "requires_grad=False"):
            w.retain_grad()
    for x in _pair(device, [1.0]):
        with pytest.raises(AttributeError):
            (x * 2).retains_grad = True


def test_register_post_accumulate_grad_hook_method(device):
    for x in _pair(device, [1.0, 2.0]):
        seen = []
        handle = x.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.tolist()))
        (x * 3).sum().backward()
        (x * 3).sum().backward()
        assert seen == [[3.0, 3.0], [6.0, 6.0]]
        handle.remove()
        (x * 3).sum().backward()
        assert len(seen) == 2
        with pytest.raises(RuntimeError, match="post accumulate grad hooks cannot be "
                                               "registered on non-leaf tensors"):
            (x * 2).register_post_accumulate_grad_hook(lambda t: None)
    for w in _pair(device, [1.0], requires_grad=False):
        with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that "
                                               "doesn't require gradient"):
            w.register_post_accumulate_grad_hook(lambda t: None)


def test_resize_and_resize_as_are_autograds_resize(device):
    for x in _pair(device, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            y = x.resize_as(torch.zeros(3, 2) if isinstance(x, torch.Tensor)
                            else pygpu.zeros(3, 2))
            r = x.t().resize(6)
        assert any("non-inplace resize_as is deprecated" in str(w.message) for w in caught)
        assert any("non-inplace resize is deprecated" in str(w.message) for w in caught)
        np.testing.assert_allclose(y.detach().numpy(), [[1, 2], [3, 4], [5, 6]])
        np.testing.assert_allclose(r.detach().numpy(), [1, 4, 2, 5, 3, 6])
        (y * torch.arange(6.0).reshape(3, 2) if isinstance(x, torch.Tensor) else
         y * pygpu.arange(6.0, device=device).reshape(3, 2)).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), [[0, 1, 2], [3, 4, 5]])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(RuntimeError, match="requested resize to 4 \\(4 elements in "
                                                   "total\\), but the given tensor has a size "
                                                   "of 2x3 \\(6 elements\\)"):
                x.resize(4)


def test_out_of_memory_and_accelerator_errors_are_torchs_classes():
    assert issubclass(pygpu.OutOfMemoryError, RuntimeError)
    assert issubclass(pygpu.OutOfMemoryError, MemoryError)  # what pygpu raised before
    assert pygpu.cuda.OutOfMemoryError is pygpu.OutOfMemoryError
    assert issubclass(torch.OutOfMemoryError, RuntimeError)
    assert issubclass(pygpu.AcceleratorError, RuntimeError)
    assert issubclass(torch.AcceleratorError, RuntimeError)
    assert issubclass(pygpu.AsyncOpError, pygpu.AcceleratorError)
    with pytest.raises(pygpu.OutOfMemoryError):
        pygpu.empty(1 << 62, dtype=pygpu.uint8)


def test_stream_and_event_on_cpu_as_torch():
    ours, theirs = pygpu.Stream(device="cpu"), torch.Stream(device="cpu")
    assert repr(ours) == repr(theirs)
    assert ours.query() is theirs.query() is True
    assert (ours.device_type, ours.device_index, ours.stream_id) == \
        (theirs.device_type, theirs.device_index, theirs.stream_id)
    ours.synchronize()
    with ours:
        pass
    assert ours == pygpu.Stream(device="cpu")
    e, te = pygpu.Event(device="cpu"), torch.Event(device="cpu")
    assert repr(e) == repr(te) and e.query() is te.query() is True
    for ev in (e, te):
        with pytest.raises(RuntimeError, match="cpu backend doesn't support events."):
            ev.record()
    for s in (ours, theirs):
        with pytest.raises(RuntimeError, match="cpu backend doesn't support events."):
            s.record_event()


def test_stream_and_event_on_sim_order_and_time_its_work():
    s = pygpu.Stream(device="sim")
    assert s.device == pygpu.device("sim:0") and s.device_type == 20  # PrivateUse1
    x = pygpu.ones(256, 256, device="sim")
    start, end = pygpu.Event("sim", enable_timing=True), pygpu.Event("sim", enable_timing=True)
    start.record(s)
    with s:
        y = x @ x
    end.record(s)
    end.synchronize()
    assert end.query() and s.query()
    assert end.elapsed_time(end) == 0.0
    assert start.elapsed_time(end) >= 0.0
    s.wait_event(start)
    s.wait_stream(pygpu.Stream("sim"))
    assert float(y[0, 0].item()) == 256.0
    assert isinstance(s.record_event(), pygpu.Event)
    with pytest.raises(RuntimeError, match="enable_timing=True"):
        pygpu.Event("sim").elapsed_time(end)
    with pytest.raises(RuntimeError, match="Both events must be recorded"):
        pygpu.Event("sim", enable_timing=True).elapsed_time(end)
    with pytest.raises(RuntimeError, match="priority"):
        pygpu.Stream("sim", priority=1)
    with pytest.raises(TypeError):
        s.wait_event(object())
