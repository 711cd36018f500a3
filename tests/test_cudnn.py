# test_cudnn.py - cuDNN for cuda convolutions (csrc/backends/cuda/cuda_cudnn.c): loaded lazily
# (never by `import pygpu`), torch.backends.cudnn's switches, the CONV node on cuDNN where it
# loads (forward, input and weight gradients, bias, the timed search and deterministic
# choices) and the composition where it does not or cannot (asymmetric 'same' padding,
# enabled=False, no library). On the emulated device (tests/cuda_emu, PYGPU_CUDNN_LIBRARY
# naming the emulated plugin) these run the plugin's real cuDNN calls against a stand-in
# that checks cuDNN's arguments; on a GPU, against cuDNN.
import numpy as np
import pytest

import pygpu
from pygpu import _C
from pygpu.backends import cudnn
from pygpu.nn import functional as F

from _helpers import run_child

torch = pytest.importorskip("torch")
needs_cuda = pytest.mark.skipif(not pygpu.cuda.is_available(), reason="needs a CUDA GPU (or "
                                "the emulated device of tests/cuda_emu)")
rng = np.random.default_rng(36)


def test_import_never_loads_cudnn_and_the_switches_are_torchs():
    rc, out, err = run_child("""
        import pygpu
        from pygpu.backends import cudnn
        x = pygpu.randn(1, 2, 5, 5)
        pygpu.nn.functional.conv2d(x, pygpu.randn(3, 2, 3, 3))  # on cpu: no cuDNN
        print(cudnn._state["loaded"], cudnn.enabled, cudnn.benchmark, cudnn.deterministic)
    """)
    assert rc == 0, err
    assert out.split() == ["None", "True", "False", "False"]
    saved = (cudnn.enabled, cudnn.benchmark, cudnn.deterministic)
    try:
        cudnn.benchmark, cudnn.deterministic = True, 1
        assert cudnn.benchmark is True and cudnn.deterministic is True
    finally:
        cudnn.enabled, cudnn.benchmark, cudnn.deterministic = saved
    with pytest.raises(AttributeError):
        cudnn.no_such_switch


def _conv_pair(**kw):
    x, w, b = rng.standard_normal((2, 4, 9, 8)), rng.standard_normal((6, 2, 3, 2)), \
        rng.standard_normal(6)
    ps = [pygpu.tensor(a, device="cuda").requires_grad_() for a in (x, w, b)]
    ts = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    y = F.conv2d(*ps, **kw)
    ty = torch.nn.functional.conv2d(*ts, **kw)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-9, atol=1e-10)
    g = rng.standard_normal(tuple(ty.shape))
    (y * pygpu.tensor(g, device="cuda")).sum().backward()
    (ty * torch.tensor(g)).sum().backward()
    for p, t in zip(ps, ts):
        np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-10)
    return y


@needs_cuda
@pytest.mark.parametrize("search,deterministic", [(False, False), (True, False),
                                                     (False, True)])
def test_cuda_convolutions_run_on_cudnn(search, deterministic):
    if not cudnn.is_available():
        pytest.skip(f"cuDNN cannot be loaded here: {cudnn.unavailable_reason()}")
    saved = (cudnn.benchmark, cudnn.deterministic)
    try:
        cudnn.benchmark, cudnn.deterministic = search, deterministic
        assert pygpu.cuda._cuda_streams._get_option("cudnn_benchmark") == search
        y = _conv_pair(stride=(2, 1), padding=1, dilation=(1, 2), groups=2)
        assert y.grad_fn.name == "_Convolution"  # the CONV node, not a composition
        x = pygpu.randn(2, 6, 4, 4, device="cuda", dtype=pygpu.float64)
        w = pygpu.randn(6, 2, 3, 3, device="cuda", dtype=pygpu.float64)
        before = pygpu.stats()
        F.conv_transpose2d(x, w, stride=2, output_padding=1)
        assert (pygpu.stats() - before).ops == 1  # one node: cuDNN's backward data
    finally:
        cudnn.benchmark, cudnn.deterministic = saved
    assert cudnn.version() >= 8000


@needs_cuda
def test_what_cudnn_cannot_take_is_composed_on_cuda():
    y = _conv_pair(padding="same", groups=2)  # kernel (3, 2): pads (1, 1) and (0, 1), uneven
    assert y.grad_fn.name != "_Convolution"
    saved = cudnn.enabled
    try:
        cudnn.enabled = False
        assert _conv_pair(padding=1, groups=2).grad_fn.name != "_Convolution"
    finally:
        cudnn.enabled = saved


@needs_cuda
def test_a_library_that_is_not_cudnn_is_refused_by_name_and_cuda_still_convolves():
    rc, out, err = run_child("""
        import numpy as np
        import pygpu
        from pygpu.backends import cudnn
        cudnn.library_candidates = lambda: ["/nonexistent/libcudnn.so.9", "libm.so.6"]
        print(cudnn.is_available())
        print(cudnn.unavailable_reason())
        x = pygpu.tensor(np.ones((1, 1, 3, 3)), device="cuda")
        print(pygpu.nn.functional.conv2d(x, x).item())
    """)
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[0] == "False"
    assert "cannot load /nonexistent/libcudnn.so.9" in lines[1] or "libm.so.6" in lines[1]
    assert "nvidia-cudnn-cu13" in lines[1]
    assert float(lines[2]) == 9.0
