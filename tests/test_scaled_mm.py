# test_scaled_mm.py - float8 products with scales (issue 43): torch._scaled_mm,
# nn.functional.scaled_mm with ScalingType/SwizzleType, scaled_grouped_mm, against torch
# 2.13's CPU build, the oracle, on every device:
#   - the recipes its CPU runs (TensorWise, RowWise) with every output dtype it takes, bias
#     and the two float8 formats it reads: torch's values (float32 output to a few ulps of
#     float32, since the GEMMs sum in different orders; a rounded output equal but where the
#     float32 sum sits on a rounding boundary);
#   - the configurations it refuses (the other recipes, wrong scale shapes or dtypes, non-float8
#     operands, unreadable formats, shapes that do not multiply): its exception type and words.
import numpy as np
import pytest

import pygpu
import pygpu.nn.functional as PF

torch = pytest.importorskip("torch")
import torch.nn.functional as TF  # noqa: E402

M, K, N = 16, 32, 24


def _fp8(lib, seed, shape, fmt, device=None):
    g = np.random.default_rng(seed)
    x = g.standard_normal(shape).astype(np.float32)
    if lib is torch:
        return torch.from_numpy(x).to(getattr(torch, fmt))
    return pygpu.tensor(x, device=device).to(getattr(pygpu, fmt))


def _t(lib, x, device=None, dtype="float32"):
    x = np.asarray(x, dtype=np.float32)
    if lib is torch:
        return torch.from_numpy(x).to(getattr(torch, dtype))
    return pygpu.tensor(x, device=device).to(getattr(pygpu, dtype))


def _operands(lib, fmt_a, fmt_b, device=None):
    a = _fp8(lib, 1, (M, K), fmt_a, device)
    b = _fp8(lib, 2, (N, K), fmt_b, device).t()  # column-major, as CUDA wants it
    return a, b


def _close(got, want, out_dtype):
    g = got.to(pygpu.float32).cpu().numpy()
    w = want.to(torch.float32).numpy()
    if out_dtype == "float32":
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    else:  # rounded once: equal but where the float32 sums differ across a rounding boundary
        assert (g != w).mean() <= 0.02, (g, w)
        np.testing.assert_allclose(g, w, rtol=0.13, atol=1e-2)


RECIPES = {
    "tensorwise": (lambda lib, d: _t(lib, 1.5, d), lambda lib, d: _t(lib, 0.25, d)),
    "rowwise": (lambda lib, d: _t(lib, np.linspace(0.5, 2, M).reshape(M, 1), d),
                lambda lib, d: _t(lib, np.linspace(1, 0.25, N).reshape(1, N), d)),
}


def _refused_on_cuda(device):
    """float8 tensors are refused on cuda (docs/tensors.md): the operands cannot be made."""
    if not str(device).startswith("cuda"):
        return False
    with pytest.raises(pygpu.DTypeError, match="not supported on cuda"):
        _operands(pygpu, "float8_e4m3fn", "float8_e4m3fn", device)
    return True


@pytest.mark.parametrize("recipe", list(RECIPES))
@pytest.mark.parametrize("out_dtype", [None, "float32", "bfloat16", "float16", "float8_e4m3fn"])
@pytest.mark.parametrize("fmts", [("float8_e4m3fn", "float8_e4m3fn"), ("float8_e5m2", "float8_e4m3fn")])
def test_scaled_mm_values_are_torchs(device, recipe, out_dtype, fmts):
    if _refused_on_cuda(device):
        return
    sa, sb = RECIPES[recipe]
    a_t, b_t = _operands(torch, *fmts)
    a_p, b_p = _operands(pygpu, *fmts, device=device)
    kw_t = {} if out_dtype is None else {"out_dtype": getattr(torch, out_dtype)}
    kw_p = {} if out_dtype is None else {"out_dtype": getattr(pygpu, out_dtype)}
    want = torch._scaled_mm(a_t, b_t, sa(torch, None), sb(torch, None), **kw_t)
    got = pygpu._scaled_mm(a_p, b_p, sa(pygpu, device), sb(pygpu, device), **kw_p)
    assert str(got.dtype) == str(want.dtype) and tuple(got.shape) == tuple(want.shape)
    _close(got, want, out_dtype or fmts[0])
    # nn.functional.scaled_mm: the same recipes named, bfloat16 by default, a bias
    rt, rp = (TF.ScalingType.TensorWise, PF.ScalingType.TensorWise) if recipe == "tensorwise" \
        else (TF.ScalingType.RowWise, PF.ScalingType.RowWise)
    bias_t, bias_p = _t(torch, np.arange(N) / 8, None, "bfloat16"), _t(pygpu, np.arange(N) / 8,
                                                                       device, "bfloat16")
    want = TF.scaled_mm(a_t, b_t, sa(torch, None), rt, sb(torch, None), rt, bias=bias_t)
    got = PF.scaled_mm(a_p, b_p, sa(pygpu, device), rp, sb(pygpu, device), rp, bias=bias_p,
                       swizzle_a=PF.SwizzleType.NO_SWIZZLE)
    assert got.dtype is pygpu.bfloat16 and want.dtype is torch.bfloat16
    _close(got, want, "bfloat16")


def _outcome(f):
    """(the result, None) or (None, the exception)."""
    try:
        return f(), None
    except Exception as e:  # noqa: BLE001 - compared with torch's
        return None, e


# refused by oneDNN, PyTorch's path on a CPU with AMX; computed by its emulated kernel elsewhere
# (pygpu/nn/_scaled_mm.py, _takes_onednn): on this CPU, pygpu does what torch does
ONEDNN_ONLY = {"e4m3fnuz": "float8_e4m3fnuz", "int_out": "int32"}


REFUSED = {
    "float32_operand": lambda lib, ST, F, a, b, s: lib._scaled_mm(a.to(lib.float32), b, s(1), s(1)),
    "scale_shape": lambda lib, ST, F, a, b, s: lib._scaled_mm(a, b, s(np.ones(2)), s(1)),
    "rowwise_1d": lambda lib, ST, F, a, b, s: lib._scaled_mm(a, b, s(np.ones(M)), s(np.ones(N))),
    "e4m3fnuz": lambda lib, ST, F, a, b, s: lib._scaled_mm(a.to(lib.float32).to(lib.float8_e4m3fnuz),
                                                          b.to(lib.float32).to(lib.float8_e4m3fnuz), s(1), s(1)),
    "int_out": lambda lib, ST, F, a, b, s: lib._scaled_mm(a, b, s(1), s(1), out_dtype=lib.int32),
    "shapes": lambda lib, ST, F, a, b, s: lib._scaled_mm(a, b[:16], s(1), s(1)),
    "three_d": lambda lib, ST, F, a, b, s: lib._scaled_mm(a.unsqueeze(0), b, s(1), s(1)),
    "v2_mixed": lambda lib, ST, F, a, b, s: F.scaled_mm(a, b, s(1), ST.TensorWise, s(np.ones((1, N))), ST.RowWise),
    "v2_blockwise": lambda lib, ST, F, a, b, s: F.scaled_mm(a, b, s(np.ones((M, 1))), ST.BlockWise1x32,
                                                            s(np.ones((1, N))), ST.BlockWise1x32),
    "v2_tensorwise_shape": lambda lib, ST, F, a, b, s: F.scaled_mm(a, b, s(np.ones(2)), ST.TensorWise, s(1), ST.TensorWise),
    "v2_rowwise_1d": lambda lib, ST, F, a, b, s: F.scaled_mm(a, b, s(np.ones(M)), ST.RowWise, s(np.ones(N)), ST.RowWise),
    "grouped": lambda lib, ST, F, a, b, s: F.scaled_grouped_mm(a, b, s(1), ST.TensorWise, s(1), ST.TensorWise,
                                                               offs=lib.tensor([8, 16], dtype=lib.int32)),
    "grouped_private": lambda lib, ST, F, a, b, s: lib._scaled_grouped_mm(a, b, s(1), s(1)),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_scaled_mm_refuses_as_torch(device, case):
    if _refused_on_cuda(device):
        return
    a_t, b_t = _operands(torch, "float8_e4m3fn", "float8_e4m3fn")
    a_p, b_p = _operands(pygpu, "float8_e4m3fn", "float8_e4m3fn", device)
    want_out, want = _outcome(lambda: REFUSED[case](torch, TF.ScalingType, TF, a_t, b_t,
                                                    lambda v: _t(torch, v)))
    got_out, got = _outcome(lambda: REFUSED[case](pygpu, PF.ScalingType, PF, a_p, b_p,
                                                  lambda v: _t(pygpu, v, device)))
    if want is None and case in ONEDNN_ONLY:  # torch's emulated kernel computed it: so must pygpu
        assert got is None, got
        assert str(got_out.dtype).split(".")[-1] == ONEDNN_ONLY[case] == \
            str(want_out.dtype).split(".")[-1]
        g, w = got_out.to(pygpu.float32).cpu().numpy(), want_out.to(torch.float32).numpy()
        np.testing.assert_allclose(g, w, rtol=0.13, atol=1.0)
        return
    assert want is not None and got is not None, (want, got)
    assert isinstance(got, type(want)), (got, want)
    if case.startswith("grouped"):  # the dispatcher's message goes on to list its backends
        assert str(want).startswith(str(got)), (got, want)
    else:
        assert str(got) == str(want)


def test_the_enums_are_torchs():
    for ours, theirs in ((PF.ScalingType, TF.ScalingType), (PF.SwizzleType, TF.SwizzleType)):
        assert {m.name: int(m) for m in ours} == {k: int(v) for k, v in theirs.__members__.items()}


@pytest.mark.parametrize("flags, onednn", [(frozenset(), False), (frozenset({"amx_int8"}), True)])
def test_the_cpu_decides_which_checks_run(monkeypatch, flags, onednn):
    """PyTorch's CPU refuses float8_e4m3fnuz and an int32 output on oneDNN's path (a CPU with
    AMX-INT8) and computes them elsewhere; pygpu follows the CPU it runs on. Both branches are
    checked here whatever this CPU is, the flags faked."""
    from pygpu.nn import _scaled_mm as S
    monkeypatch.setattr(S, "_cpu_flags", lambda: flags)
    a, b = _operands(pygpu, "float8_e4m3fn", "float8_e4m3fn")
    one = _t(pygpu, 1)
    fnuz = lambda: pygpu._scaled_mm(a.to(pygpu.float32).to(pygpu.float8_e4m3fnuz),  # noqa: E731
                                    b.to(pygpu.float32).to(pygpu.float8_e4m3fnuz), one, one)
    _, err = _outcome(fnuz)
    _, shapes = _outcome(lambda: pygpu._scaled_mm(a, b[:16], one, one))
    if onednn:
        assert isinstance(err, RuntimeError) and "itensor_view_from_dense" in str(err)
        assert str(shapes).startswith("mat1 and mat2 shapes cannot be multiplied")
    else:
        assert err is None
        assert str(shapes).startswith("mat_a and mat_b shapes cannot be multiplied")
