# test_type_promotion.py - the dtype of an elementwise op on mixed operands is PyTorch's
# (torch.result_type): tensor with tensor over every pair of dtypes, with a 0-d tensor on
# either side, and tensor with a Python bool, int or float; true division and the
# float-only unary ops of integers give float32 (PyTorch's default dtype), not float64.
# pygpu.promote_types, result_type and can_cast (c10's table, csrc/core/pg_dtype.c) over
# every pair, and the dtype objects' attributes, against torch's.
import numpy as np
import pytest

import pygpu

from _helpers import to_device

# every dtype of the table (csrc/core/pg_dtype.h), by name
DTYPES = [d.name for d in pygpu._dtype.ALL]
# ... but PyTorch's bare ones (uint16/32/64, float8), which promote with no other dtype and
# on which PyTorch runs few ops: the op-based tests below take these; test_bare_dtypes_*
# the others
FULL = [d.name for d in pygpu._dtype.ALL if not d._bare]
BARE = [d.name for d in pygpu._dtype.ALL if d._bare]


def _outcome(f):
    """("ok", the result's dtype name) or ("raise", the exception's type, its message)."""
    try:
        return ("ok", _name(f()))
    except (RuntimeError, NotImplementedError, TypeError) as e:
        return ("raise", type(e), str(e))


def _same_outcome(got, want, what):
    if want[0] == "ok":
        assert got == want, what
    else:  # pygpu's exception is (a subclass of) torch's, with torch's words for promotion
        assert got[0] == "raise" and issubclass(got[1], want[1]), (what, got, want)
        if want[2].startswith("Promotion for"):
            assert got[2] == want[2], what


def test_every_dtype_is_torchs_with_its_attributes():
    torch = pytest.importorskip("torch")
    for d in pygpu._dtype.ALL:
        t = getattr(torch, d.name)
        assert getattr(pygpu, d.name) is d and str(d) == str(t)
        for attr in ("is_floating_point", "is_complex", "is_signed", "itemsize"):
            if d._kind == "bits" and attr == "is_signed":  # both raise (tests/test_shell_dtypes.py)
                continue
            assert getattr(d, attr) == getattr(t, attr), (d, attr)
    for alias in ("int", "short", "long", "half", "float", "double"):  # torch's other spellings
        assert str(getattr(pygpu, alias)) == str(getattr(torch, alias)), alias
    for d in pygpu._dtype.ALL:  # the legacy names: Tensor.char(), torch.CharTensor/CharStorage
        x = torch.zeros(1, dtype=getattr(torch, d.name))
        assert pygpu.zeros(1, dtype=d).type() == x.type()
        if d._bare:  # no Tensor.uint16(), no torch.UInt16Storage: only the type() string
            assert not hasattr(x, d._legacy.lower()) and not hasattr(pygpu.zeros(1), d._legacy.lower())
            assert pygpu._dtype.from_legacy_name(f"torch.{d._legacy}Storage") is None
            continue
        if not d.is_complex:  # (torch's complex casts are cfloat()/cdouble(): test_complex.py)
            assert getattr(pygpu.zeros(1), d._legacy.lower())().dtype is d
        assert pygpu._dtype.from_legacy_name(f"torch.{d._legacy}Storage") is d


def test_promote_types_is_torchs_over_every_pair():
    torch = pytest.importorskip("torch")
    for a in DTYPES:
        for b in DTYPES:  # (the bare dtypes with others: torch's RuntimeError, in its words)
            want = _outcome(lambda: torch.promote_types(getattr(torch, a), getattr(torch, b)))
            got = _outcome(lambda: pygpu.promote_types(getattr(pygpu, a), getattr(pygpu, b)))
            _same_outcome(got, want, (a, b))


def test_can_cast_is_torchs_over_every_pair():
    torch = pytest.importorskip("torch")
    for a in DTYPES:
        for b in DTYPES:
            want = torch.can_cast(getattr(torch, a), getattr(torch, b))
            assert pygpu.can_cast(getattr(pygpu, a), getattr(pygpu, b)) == want, (a, b)


@pytest.mark.parametrize("a", DTYPES)
def test_result_type_is_torchs(a):
    """torch.result_type of a tensor with a 0-d tensor of every dtype and with Python numbers,
    both ways round."""
    torch = pytest.importorskip("torch")
    others = [(_ones(torch, b, ()), _ones(pygpu, b, ())) for b in DTYPES]
    others += [(s, s) for s in (True, 3, 2.5)]
    for shape in ((2,), ()):
        x_t, x_p = _ones(torch, a, shape), _ones(pygpu, a, shape)
        for o_t, o_p in others:
            for args_t, args_p in (((x_t, o_t), (x_p, o_p)), ((o_t, x_t), (o_p, x_p))):
                want = _outcome(lambda: torch.result_type(*args_t))
                _same_outcome(_outcome(lambda: pygpu.result_type(*args_p)), want, (a, shape, o_t))


def test_iinfo_and_finfo_are_torchs():
    torch = pytest.importorskip("torch")
    for d in pygpu._dtype.ALL:
        t = getattr(torch, d.name)
        if d._kind == "fp4":  # c10 has no limits for it: bits, and each limit refused
            f, g = pygpu.finfo(d), torch.finfo(t)
            assert f.bits == g.bits == 8
            for attr in ("eps", "max", "min", "tiny", "resolution", "dtype"):
                with pytest.raises(NotImplementedError) as want:
                    getattr(g, attr)
                with pytest.raises(NotImplementedError, match=str(want.value)):
                    getattr(f, attr)
        elif d.is_floating_point or d.is_complex:  # (complex: its parts' limits)
            f, g = pygpu.finfo(d), torch.finfo(t)
            for attr in ("bits", "eps", "max", "min", "tiny", "resolution"):
                assert getattr(f, attr) == getattr(g, attr), (d, attr)
            assert repr(f) == repr(g)
            with pytest.raises(TypeError):
                pygpu.iinfo(d)
        elif d is pygpu.bool or d._is_shell:  # (torch's TypeError too)
            with pytest.raises(TypeError):
                pygpu.iinfo(d)
            with pytest.raises(TypeError):
                torch.iinfo(t)
        else:
            i, j = pygpu.iinfo(d), torch.iinfo(t)
            assert (i.bits, i.min, i.max, i.dtype) == (j.bits, j.min, j.max, j.dtype)
            assert repr(i) == repr(j)


def _ones(lib, dt, shape, device=None):
    """ones of dt; zeros of a shell dtype (uint4, bits8, ...), which neither library fills"""
    make = lib.zeros if getattr(pygpu, dt)._is_shell else lib.ones
    if lib is pygpu:
        return make(shape, dtype=getattr(pygpu, dt), device=device)
    return make(shape, dtype=getattr(lib, dt))


def _name(dtype):
    return str(dtype).replace("torch.", "").replace("pygpu.", "")


def _refused_on(device):
    """The dtypes a device refuses to hold: float8 on cuda (no CUDA kernel reads it yet)."""
    return {n for n in DTYPES if n.startswith("float8")} if str(device).startswith("cuda") else set()


@pytest.mark.parametrize("a", BARE)
def test_bare_dtypes_with_every_dtype_promote_or_refuse_as_torch(device, a):
    """A bare dtype's tensor with a tensor of every dtype (both ways round, with dimensions and
    0-d), and with Python numbers: torch's result dtype, or its promotion RuntimeError in its
    words, or (float8 arithmetic) its NotImplementedError."""
    torch = pytest.importorskip("torch")
    refused = _refused_on(device)
    if a in refused:  # float8 is refused on cuda, by name (docs/tensors.md)
        with pytest.raises(pygpu.DTypeError, match="not supported on cuda"):
            _ones(pygpu, a, (2,), device)
        return
    for b in DTYPES:
        if b in refused:
            continue
        for shapes in [((2,), (2,)), ((2,), ()), ((), (2,))]:
            x_t, y_t = _ones(torch, a, shapes[0]), _ones(torch, b, shapes[1])
            x_p, y_p = _ones(pygpu, a, shapes[0], device), _ones(pygpu, b, shapes[1], device)
            want = _outcome(lambda: torch.result_type(x_t, y_t))
            _same_outcome(_outcome(lambda: pygpu.result_type(x_p, y_p)), want, (a, b, shapes))
            if want[0] == "raise":  # the op refuses as torch's does
                _same_outcome(_outcome(lambda: (x_p * y_p).dtype), _outcome(lambda: (x_t * y_t).dtype),
                              (a, b, shapes))
    for scalar in (True, 3, 2.5):
        x_t, x_p = _ones(torch, a, (2,)), _ones(pygpu, a, (2,), device)
        _same_outcome(_outcome(lambda: pygpu.result_type(x_p, scalar)),
                      _outcome(lambda: torch.result_type(x_t, scalar)), (a, scalar))


@pytest.mark.parametrize("a", FULL)
@pytest.mark.parametrize("b", FULL)
def test_tensor_with_tensor_matches_torch_result_type(device, a, b):
    torch = pytest.importorskip("torch")
    # each pairing of dimensioned and 0-d operands (a 0-d one counts only by its kind)
    for shapes in [((2,), (2,)), ((2,), ()), ((), (2,)), ((), ())]:
        want = _name(torch.result_type(_ones(torch, a, shapes[0]), _ones(torch, b, shapes[1])))
        x, y = _ones(pygpu, a, shapes[0], device), _ones(pygpu, b, shapes[1], device)
        # defined for every dtype (complex: maximum is not; add is)
        op = pygpu.logical_or if want == "bool" else pygpu.add if "complex" in want else pygpu.maximum
        got = op(x, y).dtype
        assert _name(got) == want, (a, b, shapes)
        if "bool" not in (a, b):
            assert _name((x + y).dtype) == want, (a, b, shapes)


@pytest.mark.parametrize("a", FULL)
@pytest.mark.parametrize("scalar", [True, 3, 2.5])
def test_tensor_with_python_scalar_matches_torch(device, a, scalar):
    torch = pytest.importorskip("torch")
    want = _name(torch.result_type(_ones(torch, a, (2,)), scalar))
    x = _ones(pygpu, a, (2,), device)
    # (complex tensors have no maximum, comparison or where: their sum tells the dtype)
    for got in ((pygpu.maximum(x, scalar), pygpu.where(x > 2, x, scalar))
                if not x.dtype.is_complex else (x + scalar,)):
        assert _name(got.dtype) == want, (a, scalar)
    if a != "bool" and not isinstance(scalar, bool):
        assert _name((x * scalar).dtype) == _name((torch.ones(2, dtype=getattr(torch, a))
                                                   * scalar).dtype)


def test_int64_with_float_is_float32(device):
    i = to_device(np.array([1, 2, 3]), device)
    f = to_device(np.array([0.5, 0.5, 0.5], dtype=np.float32), device)
    assert (i + 0.5).dtype == pygpu.float32
    assert (i + f).dtype == pygpu.float32
    assert (i / i).dtype == pygpu.float32
    assert i.exp().dtype == pygpu.float32
    np.testing.assert_allclose((i + f).numpy(), [1.5, 2.5, 3.5])
    np.testing.assert_allclose((i / 2).numpy(), [0.5, 1.0, 1.5])


def test_dtype_is_the_class_of_the_dtypes():
    assert all(isinstance(d, pygpu.dtype) for d in pygpu._dtype.ALL)
    assert not isinstance("int8", pygpu.dtype)
