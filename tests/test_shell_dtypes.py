# test_shell_dtypes.py - PyTorch's "shell" dtypes (issue 43): uint1..uint7, int1..int7,
# bits1x8, bits2x4, bits4x2, bits8, bits16 and float4_e2m1fn_x2 (csrc/core/pg_dtype.h's
# shell rows), and complex32 (torch.chalf), against torch 2.13's CPU build, the oracle:
#   - their attributes (itemsize, is_signed, is_floating_point, is_complex, to_real,
#     to_complex) and names (torch.bit, torch.chalf);
#   - an op table (OPS): each op on each shell dtype runs where torch's does, with its result's
#     dtype and bytes, and raises where torch's does, with its exception type and words, on
#     every device; the few places pygpu differs are DIFFERS, each with its reason;
#   - complex32's elementwise ops (those torch's CPU runs: + - * ==, abs, ...) with torch's
#     values, and its refusals (division, exp, sum, matmul ...) in torch's words;
#   - save/load round trips of the dtypes torch saves (bits, float4, complex32).
# Promotion and can_cast over every pair are tests/test_type_promotion.py's.
import io
import warnings

import numpy as np
import pytest

import pygpu

torch = pytest.importorskip("torch")

SHELL = [d.name for d in pygpu._dtype.SHELL]
SUB_BYTE = [f"uint{i}" for i in range(1, 8)] + [f"int{i}" for i in range(1, 8)]
BITS = ["bits1x8", "bits2x4", "bits4x2", "bits8", "bits16"]


def test_the_shell_dtypes_are_every_torch_one():
    assert SHELL == SUB_BYTE + BITS + ["float4_e2m1fn_x2"]
    assert pygpu.bit is pygpu.uint1 and str(torch.bit) == str(pygpu.bit)
    assert pygpu.chalf is pygpu.complex32 and str(torch.chalf) == str(pygpu.chalf)


@pytest.mark.parametrize("name", SHELL + ["complex32"])
def test_attributes_are_torchs(name):
    d, t = getattr(pygpu, name), getattr(torch, name)
    assert str(d) == str(t)
    for attr in ("itemsize", "is_floating_point", "is_complex", "is_signed"):
        try:
            want = ("ok", getattr(t, attr))
        except RuntimeError as e:
            want = ("raise", str(e))
        try:
            got = ("ok", getattr(d, attr))
        except RuntimeError as e:
            got = ("raise", str(e))
        assert got == want, (name, attr)
    assert str(d.to_real()) == str(t.to_real())
    try:
        want = ("ok", str(t.to_complex()))
    except RuntimeError as e:
        want = ("raise", str(e))
    try:
        got = ("ok", str(d.to_complex()))
    except RuntimeError as e:
        got = ("raise", str(e))
    assert got == want


def _source(lib, name, device=None):
    """Four elements of `name` made as torch makes them: uint8 codes viewed as the dtype."""
    size = getattr(torch, name).itemsize
    codes = np.array([0, 1, 2, 3, 0, 0, 3, 1][:4 * size], dtype=np.uint8)
    if lib is torch:
        return torch.from_numpy(codes).view(getattr(torch, name))
    return pygpu.from_numpy(codes.copy()).to(device).view(getattr(pygpu, name))


def _ops(lib, name, device):
    dt = getattr(lib, name)
    kw = {} if lib is torch else {"device": device}
    return {
        "empty": lambda: lib.empty(3, dtype=dt, **kw),
        "zeros": lambda: lib.zeros(3, dtype=dt, **kw),
        "ones": lambda: lib.ones(3, dtype=dt, **kw),
        "view_back": lambda: _source(lib, name, device).view(lib.uint8),
        "clone": lambda: _source(lib, name, device).clone(),
        "copy_": lambda: _source(lib, name, device).clone().copy_(_source(lib, name, device)),
        "cat": lambda: lib.cat([_source(lib, name, device), _source(lib, name, device)]),
        "index": lambda: _source(lib, name, device)[1],
        "slice": lambda: _source(lib, name, device)[1:3],
        "reshape": lambda: _source(lib, name, device).reshape(2, -1),
        "eq": lambda: _source(lib, name, device) == _source(lib, name, device),
        "to_float": lambda: _source(lib, name, device).to(lib.float32),
        "from_float": lambda: lib.ones(4, **kw).to(dt),
        "fill_": lambda: _source(lib, name, device).clone().fill_(1),
        "zero_": lambda: _source(lib, name, device).zero_(),
        "transpose_contiguous": lambda: _source(lib, name, device).reshape(2, -1).t().contiguous(),
        "add": lambda: _source(lib, name, device) + _source(lib, name, device),
        "item": lambda: _source(lib, name, device)[0].item(),
        "numpy": lambda: _source(lib, name, device).cpu().numpy(),
        "repr": lambda: repr(_source(lib, name, device)),
    }


# (op, dtypes) where pygpu's outcome is not torch's, and why
DIFFERS = {
    # torch's cat of a sub-byte tensor takes a path that moves bytes without its copy kernel;
    # pygpu's cat is copies, which PyTorch refuses for these dtypes ("copy_kernel")
    "cat": set(SUB_BYTE),
    # torch's eq and print of float4_e2m1fn_x2 read its bytes through a path of their own;
    # pygpu computes nothing on a shell dtype
    "eq": {"float4_e2m1fn_x2"},
    "repr": {"float4_e2m1fn_x2"},
}


def _outcome(f):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = f()
        return ("ok", r)
    except Exception as e:  # noqa: BLE001 - compared with torch's
        return ("raise", e)


def _bytes(x):
    if x.dtype in (torch.bool,) or str(x.dtype) == "torch.bool":
        return x.cpu().numpy().astype(np.uint8).tobytes()
    u8 = torch.uint8 if isinstance(x, torch.Tensor) else pygpu.uint8
    if isinstance(x, torch.Tensor):
        x = x.resolve_conj().resolve_neg()  # (torch's conj is a lazy bit)
    x = x.contiguous()
    if x.dim() == 0:
        x = x.reshape(1)
    return x.view(u8).cpu().numpy().tobytes()


@pytest.mark.parametrize("name", SHELL)
def test_ops_run_and_refuse_as_torchs(device, name):
    want_ops, got_ops = _ops(torch, name, None), _ops(pygpu, name, device)
    for op in want_ops:
        want, got = _outcome(want_ops[op]), _outcome(got_ops[op])
        if name in DIFFERS.get(op, ()):
            continue
        if want[0] == "raise":
            assert got[0] == "raise", (op, got[1])
            assert isinstance(got[1], type(want[1])), (op, got[1], want[1])
            if isinstance(want[1], NotImplementedError):
                assert str(got[1]) == str(want[1]), op
            continue
        assert got[0] == "ok", (op, got[1])
        r_t, r_p = want[1], got[1]
        if isinstance(r_t, torch.Tensor):
            assert str(r_p.dtype) == str(r_t.dtype) and tuple(r_p.shape) == tuple(r_t.shape), op
            if op != "empty":
                assert _bytes(r_p) == _bytes(r_t), op


# ---- complex32 ---------------------------------------------------------------------------

A = [1 + 2j, 3 - 1j, 0.5 + 0.25j, -1.5 + 0.75j]
B = [2 - 1j, 1 + 1j, -1 + 0.5j, 0.125 - 2j]


def _c32(lib, values, device=None):
    t = torch.tensor(values, dtype=torch.complex64).to(torch.complex32)
    if lib is torch:
        return t
    parts = torch.view_as_real(t.to(torch.complex64)).numpy()
    return pygpu.view_as_complex(pygpu.tensor(parts, device=device)).to(pygpu.complex32)


C32_OPS = {
    "add": lambda a, b, lib: a + b, "sub": lambda a, b, lib: a - b, "mul": lambda a, b, lib: a * b,
    "neg": lambda a, b, lib: -a, "eq": lambda a, b, lib: a == b, "ne": lambda a, b, lib: a != b,
    "abs": lambda a, b, lib: a.abs(), "isnan": lambda a, b, lib: a.isnan(),
    "isfinite": lambda a, b, lib: a.isfinite(), "conj": lambda a, b, lib: a.conj(),
    "real": lambda a, b, lib: a.real, "imag": lambda a, b, lib: a.imag,
    "add_scalar": lambda a, b, lib: a + 1, "mul_scalar": lambda a, b, lib: a * 2.5,
    "add_complex_scalar": lambda a, b, lib: a + 1j,
    "add_f16": lambda a, b, lib: a + lib.ones(4, dtype=lib.float16, device=a.device)
    if lib is pygpu else a + lib.ones(4, dtype=lib.float16),
    "add_f32": lambda a, b, lib: a + (lib.ones(4, device=a.device) if lib is pygpu else lib.ones(4)),
    "to_c64": lambda a, b, lib: a.to(lib.complex64), "to_f16": lambda a, b, lib: a.to(lib.float16),
    "cat": lambda a, b, lib: lib.cat([a, b]), "clone": lambda a, b, lib: a.clone(),
    "index": lambda a, b, lib: a[1], "fill": lambda a, b, lib: a.clone().fill_(1 + 1j),
    "zero": lambda a, b, lib: a.clone().zero_(), "add_": lambda a, b, lib: a.clone().add_(b),
    "mul_": lambda a, b, lib: a.clone().mul_(b), "tolist": lambda a, b, lib: a.tolist(),
    "where": lambda a, b, lib: lib.where(a.real > 0.6, a, b),
    "div": lambda a, b, lib: a / b, "pow": lambda a, b, lib: a ** b, "exp": lambda a, b, lib: a.exp(),
    "sum": lambda a, b, lib: a.sum(), "mm": lambda a, b, lib: a.reshape(4, 1) @ b.reshape(1, 4),
    "abs_": lambda a, b, lib: a.clone().abs_(),
    "view_as_real": lambda a, b, lib: lib.view_as_real(a),
    "view_float16": lambda a, b, lib: a.view(lib.float16),
    "chalf": lambda a, b, lib: a.real.float().chalf(),
    "repr": lambda a, b, lib: repr((a * b).cpu()),
}


@pytest.mark.parametrize("op", list(C32_OPS))
def test_complex32_ops_are_torchs(device, op):
    want = _outcome(lambda: C32_OPS[op](_c32(torch, A), _c32(torch, B), torch))
    got = _outcome(lambda: C32_OPS[op](_c32(pygpu, A, device), _c32(pygpu, B, device), pygpu))
    if want[0] == "raise":
        assert got[0] == "raise", got[1]
        assert isinstance(got[1], type(want[1])) and str(got[1]) == str(want[1])
        return
    assert got[0] == "ok", got[1]
    r_t, r_p = want[1], got[1]
    if not isinstance(r_t, torch.Tensor):
        assert r_p == r_t
        return
    assert str(r_p.dtype) == str(r_t.dtype) and tuple(r_p.shape) == tuple(r_t.shape)
    assert _bytes(r_p) == _bytes(r_t)  # bit for bit: computed in complex64, rounded once


def test_complex32_from_float16_and_a_complex_number(device):
    """c10 makes a float16 tensor with a complex number complex32 (toComplexType(Half))."""
    x = pygpu.ones(3, dtype=pygpu.float16, device=device)
    assert (x + 1j).dtype is pygpu.complex32
    assert pygpu.result_type(x, 1j) is pygpu.complex32


@pytest.mark.parametrize("name", BITS + ["float4_e2m1fn_x2", "complex32"])
def test_save_and_load_both_ways(name):
    t = _source(torch, name)
    b = io.BytesIO()
    torch.save({"x": t}, b)
    b.seek(0)
    got = pygpu.load(b)["x"]
    assert str(got.dtype) == str(t.dtype) and _bytes(got) == _bytes(t)
    b = io.BytesIO()
    pygpu.save({"x": got}, b)
    b.seek(0)
    back = torch.load(b)["x"]
    assert back.dtype == t.dtype and _bytes(back) == _bytes(t)
