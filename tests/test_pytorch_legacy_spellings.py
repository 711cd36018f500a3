# test_pytorch_legacy_spellings.py - the deprecated spellings real programs still use
# (issue 43, item 7), against torch: legacy tensor types as dtypes and constructors
# (x.type(torch.FloatTensor), Tensor = torch.FloatTensor; Tensor(np_array),
# torch.cuda.FloatTensor, x.type() strings), torch.cuda.amp / torch.cpu.amp (GradScaler,
# autocast, custom_fwd/custom_bwd) with PyTorch's FutureWarnings, and the reproducer
# nn.utils.rnn.pad_sequence(seqs).view(-1).
import numpy as np
import pytest

import pygpu
from pygpu import nn

torch = pytest.importorskip("torch")

LEGACY = ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor",
          "BoolTensor"]


@pytest.mark.parametrize("name", LEGACY)
def test_legacy_types_convert_construct_and_test_like_torchs(name):
    ours_t, theirs_t = getattr(pygpu, name), getattr(torch, name)
    x, tx = pygpu.tensor([[1.5, -2.0], [0.0, 3.0]]), torch.tensor([[1.5, -2.0], [0.0, 3.0]])
    a, b = x.type(ours_t), tx.type(theirs_t)
    assert a.type() == b.type() == f"torch.{name}" and isinstance(a, ours_t)
    np.testing.assert_array_equal(a.float().numpy(), b.float().numpy())
    assert x.type(f"torch.{name}").type() == f"torch.{name}"
    for arr in (np.arange(6, dtype=np.float64).reshape(2, 3), np.arange(4, dtype=np.int32),
                np.array([0, 1, 1], dtype=np.uint8)):
        made, ref = ours_t(arr), theirs_t(arr)
        assert made.type() == ref.type() and tuple(made.shape) == tuple(ref.shape)
        np.testing.assert_array_equal(made.float().numpy(), ref.float().numpy())
    assert tuple(ours_t(2, 3).shape) == tuple(theirs_t(2, 3).shape)
    assert ours_t([1, 0]).type() == theirs_t([1, 0]).type()
    assert not isinstance(x.to("sim").type(ours_t).to("sim"), ours_t)  # a cpu type


def test_a_legacy_type_moves_a_tensor_as_torchs_does():
    Tensor = pygpu.FloatTensor
    x = Tensor(np.ones((2, 2)))
    s = x.type(pygpu.sim.DoubleTensor)
    assert s.device == "sim:0" and s.type() == "torch.sim.DoubleTensor"
    assert isinstance(s, pygpu.sim.DoubleTensor) and not isinstance(s, pygpu.DoubleTensor)
    back = s.type(pygpu.FloatTensor)  # a cpu type brings it back to the cpu
    assert back.device == "cpu" and back.type() == "torch.FloatTensor"
    assert x.type("torch.sim.LongTensor").device == "sim:0"
    made = pygpu.sim.LongTensor([1, 2])
    assert made.device == "sim:0" and made.dtype is pygpu.int64
    assert repr(pygpu.sim.FloatTensor) == "<class 'torch.sim.FloatTensor'>"
    assert repr(pygpu.FloatTensor) == repr(torch.FloatTensor).replace("torch.", "torch.", 1)
    assert pygpu.LongTensor.dtype is pygpu.int64 and torch.LongTensor.dtype is torch.int64
    assert x.type(pygpu.float64).dtype is pygpu.float64  # a dtype too
    with pytest.raises(ValueError, match="invalid type"):
        x.type("numpy.FloatTensor")


@pytest.mark.parametrize("name,dtype", [("IntTensor", "int32"), ("ShortTensor", "int16"),
                                        ("CharTensor", "int8"), ("ByteTensor", "uint8")])
def test_the_small_integer_types_follow_pygpus_dtypes(name, dtype):
    cls = getattr(pygpu, name)
    if getattr(pygpu, dtype, None) is None:  # until the dtype exists: refused, saying why
        with pytest.raises(TypeError, match=f"pygpu has no {dtype} dtype yet"):
            cls([1, 2])
        with pytest.raises(TypeError, match=f"no {dtype} dtype"):
            pygpu.ones(2).type(cls)
    else:  # the hook: the same table gives the new dtype
        made = cls([1, 2])
        assert made.dtype is getattr(pygpu, dtype) and made.type() == f"torch.{name}"
        assert pygpu.ones(2).type(cls).type() == torch.ones(2).type(getattr(torch, name)).type()


def _train_steps(amp, scaler_cls, autocast_cls, device):
    pygpu.manual_seed(0)
    model = nn.Linear(4, 2).to(device)
    opt = pygpu.optim.SGD(model.parameters(), lr=0.1)
    scaler = scaler_cls(enabled=amp)
    x, y = pygpu.randn(8, 4, device=device), pygpu.randn(8, 2, device=device)
    losses = []
    for _ in range(3):
        opt.zero_grad()
        with autocast_cls(enabled=amp):
            loss = ((model(x) - y) ** 2).mean()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        losses.append(loss.item())
    return losses


def test_cuda_amp_spellings_run_a_training_loop_and_warn_as_torch():
    for m in (pygpu, torch):
        with pytest.warns(FutureWarning, match=r"`torch.cuda.amp.GradScaler\(args...\)` is "
                                               r"deprecated. Please use `torch.amp.GradScaler"
                                               r"\('cuda', args...\)` instead."):
            m.cuda.amp.GradScaler(enabled=False)
        with pytest.warns(FutureWarning, match=r"`torch.cuda.amp.autocast\(args...\)` is "
                                               r"deprecated"):
            m.cuda.amp.autocast(enabled=False)
        with pytest.warns(FutureWarning, match=r"`torch.cpu.amp.autocast\(args...\)` is "
                                               r"deprecated"):
            m.cpu.amp.autocast(enabled=False)
    with pytest.warns(FutureWarning):
        losses = _train_steps(False, pygpu.cuda.amp.GradScaler, pygpu.cuda.amp.autocast, "cpu")
    assert losses[2] < losses[0]
    with pytest.warns(FutureWarning):  # sim's own spelling, enabled: float16 on sim
        losses = _train_steps(True, pygpu.sim.amp.GradScaler, pygpu.sim.amp.autocast, "sim")
    assert losses[2] < losses[0]
    import importlib
    mod = importlib.import_module("pygpu.cuda.amp")  # `import torch.cuda.amp` works
    assert mod is pygpu.cuda.amp and pygpu.cuda.amp.autocast.__name__ == "autocast"
    with pytest.warns(FutureWarning):
        assert pygpu.cuda.amp.autocast().fast_dtype is pygpu.float16  # PyTorch's default there


def _custom_function(m):
    class Scale(m.autograd.Function):
        @staticmethod
        @m.amp.custom_fwd(device_type="cpu", cast_inputs=m.float32)
        def forward(ctx, x, w):
            ctx.save_for_backward(x, w)
            return x * w

        @staticmethod
        @m.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            x, w = ctx.saved_tensors
            return g * w, (g * x).sum().reshape(w.shape)
    return Scale


def test_custom_fwd_and_bwd_match_torch():
    for m in (pygpu, torch):
        Scale = _custom_function(m)
        x = m.ones(3, dtype=m.bfloat16, requires_grad=True)
        w = m.full((1,), 2.0, requires_grad=True)
        with m.autocast("cpu"):
            y = Scale.apply(x, w)
        assert y.dtype is m.float32  # the inputs were cast, autocast off inside
        y.sum().backward()
        assert x.grad.tolist() == [2.0, 2.0, 2.0] and w.grad.tolist() == [3.0]
    assert pygpu.amp.is_autocast_available("cpu") and torch.amp.is_autocast_available("cpu")
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        pygpu.amp.custom_fwd(device_type=None)


def test_pad_sequence_gives_a_contiguous_batch(device):
    from pygpu.nn.utils.rnn import pad_sequence
    seqs = [pygpu.arange(6.0, device=device).reshape(3, 2), pygpu.ones(2, 2, device=device)]
    tseqs = [torch.arange(6.0).reshape(3, 2), torch.ones(2, 2)]
    for batch_first in (False, True):
        ours = pad_sequence(seqs, batch_first=batch_first, padding_value=-1.0)
        ref = torch.nn.utils.rnn.pad_sequence(tseqs, batch_first=batch_first, padding_value=-1.0)
        assert ours.is_contiguous() and ours.stride() == ref.stride()
        np.testing.assert_array_equal(ours.view(-1).numpy(), ref.view(-1).numpy())
