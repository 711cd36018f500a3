# _dtype_cases.py - the op-table suite's fourth sum: the integer dtypes beside int64 (int32,
# int16, int8, uint8; issue 43) against torch, the oracle.
#
# Generated from the same rows and references as the other sums (_op_cases.py,
# op_references.py): an op whose reference takes int64 takes every integer dtype, so each
# such row gets, per dtype, a few cases and no cross product (ggml's test-backend-ops runs a
# handful per op per backend):
#   cpu:     a broadcast pair (or one odd-length operand), a Python int on the right, a
#            reflected operator's int on the left, the in-place method, and the whole and
#            axis-0 reductions; mixed integer dtypes once per binary row (PyTorch's
#            promotion: uint8 with int8 is int16);
#   devices: the broadcast pair (or the operand) alone, on each device besides cpu.
# The integer inputs hold the dtype's extremes (min, max, -1, 0, 1) beside small values, so
# wrapping (int8's -128 * -1, uint8's 0 - 1) is compared, not just arithmetic that fits.
# torch computes each case from the same arrays; the result must match in dtype, shape and
# value (exactly for integer and bool results, within _op_cases.TOL for a float result such
# as exp of an int8, which both compute in float32), and the inputs must be unchanged.
import zlib
from dataclasses import dataclass, replace

import numpy as np
import pytest

import pygpu

from _op_cases import FAMILIES, TOL, _dt, _variants, a, reflected_names, table_rows

torch = pytest.importorskip("torch")

INTS = ("int32", "int16", "int8", "uint8")
# mixed pairs over the new dtypes: promotion within the integers, with bool and with floats
INT_PAIRS = (("uint8", "int8"), ("int8", "int16"), ("int32", "int64"), ("uint8", "bool"),
             ("int16", "float16"), ("int32", "float32"))
LONG = 1031  # an odd length: full vectors of every width (64 int8 lanes) and a tail
FAMILY_FORMS = {  # (label, kwargs, inputs): the cpu forms; the first is the devices' form
    "binary": (("", {}, (a(3, 4), a(4))), ("long", {}, (a(LONG), a(LONG)))),
    "unary": (("", {}, (a(5, 7),)), ("long", {}, (a(LONG),))),
    "reduce": (("", {}, (a(LONG),)), ("axis0", {"axis": 0}, (a(5, 6),)),
               ("axis1_keepdims", {"axis": 1, "keepdims": True}, (a(5, 6),))),
}


@dataclass(frozen=True)
class TCase:
    op: str
    label: str
    dtypes: tuple
    inputs: tuple
    pg_call: object
    torch_call: object
    domain: tuple
    kwargs: dict
    scalar: object = None  # ("left" | "right", value)
    raises: bool = False  # torch refuses it (an in-place op whose result cannot go into self)

    @property
    def id(self):
        ins = "-".join(i.name for i in self.inputs)
        sc = f"-scalar{self.scalar[0]}{self.scalar[1]!r}" if self.scalar else ""
        return f"{self.op}{'.' + self.label if self.label else ''}-{'+'.join(self.dtypes)}-{ins}{sc}"


def param(case):
    return pytest.param(case, id=case.id)


def _resolve(lib, qualname):
    """pygpu.special.i0e -> torch.special.i0e (None where torch has no such name)."""
    obj = lib
    for part in qualname.split(".")[1:]:
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _calls(py):
    """(pygpu's callable, torch's) of a row: its first module function both libraries have,
    else its first plain method."""
    for q in py:
        if q.startswith("pygpu."):
            p, t = _resolve(pygpu, q), _resolve(torch, "torch" + q[len("pygpu"):])
            if p is not None and t is not None:
                return p, t
    for q in py:
        m = q[len("Tensor."):] if q.startswith("Tensor.") else None
        if m and not m.startswith("_") and not m.endswith("_"):
            f = (lambda *t, _m=m, **kw: getattr(t[0], _m)(*t[1:], **kw))
            return f, f
    return None, None


def _inplace(method):
    """self.<method>(...) on a clone (the inputs stay as they were), returning self; the same
    code for both libraries."""
    def fn(x, *rest, **kw):
        y = x.clone()
        out = getattr(y, method)(*rest, **kw)
        assert out is y, f"{method} returned a new tensor, not self"
        return y
    return fn


def _torch_refuses(case):
    try:
        _torch_result(case, make_arrays(case))
    except (RuntimeError, TypeError):
        return True
    return False


def _kept(case):
    """The case as torch decides it: an in-place case torch refuses must be refused by
    pygpu too; another that torch refuses is dropped, where pygpu accepts more (mean of an
    integer: float64, as NumPy's; heaviside of mixed dtypes; a Python number for maximum or
    fmax), which test_ops_semantics.py checks against NumPy."""
    if not _torch_refuses(case):
        return [case]
    return [replace(case, raises=True)] if case.pg_call is case.torch_call and case.label.endswith("_") else []


def int_cases(refs):
    """(cpu cases, device cases) of every binary, unary and reduce row whose reference takes
    int64, for each dtype of INTS, as torch decides them (_kept)."""
    cpu, dev = _int_cases(refs)
    return [k for c in cpu for k in _kept(c)], [k for c in dev for k in _kept(c)]


def _int_cases(refs):
    cpu, dev = [], []
    for name, (family, py) in table_rows().items():
        vs = dict(_variants(refs.get(name, {})))
        ref = vs.get("")
        if family not in FAMILY_FORMS or ref is None or ref.call is not None:
            continue
        flat = {d for dt in ref.dtypes for d in _dt(dt, 1)}
        if "int64" not in flat:
            continue
        pg_call, t_call = _calls(py)
        if pg_call is None:
            continue
        n = FAMILIES[family].arity
        for dt in INTS:
            for k, (label, kw, inputs) in enumerate(FAMILY_FORMS[family]):
                case = TCase(name, label, (dt,) * n, inputs, pg_call, t_call, ref.domain, kw)
                cpu.append(case)
                if k == 0:
                    dev.append(case)
            if family == "binary":
                cpu.append(TCase(name, "scalar", (dt,), (a(LONG),), pg_call, t_call, ref.domain,
                                 {}, ("right", 3)))
                reflected = reflected_names(py)
                for m in reflected[:1]:
                    f = (lambda s, x, _m=m: getattr(x, _m)(s))
                    cpu.append(TCase(name, m, (dt,), (a(7),), f, f, ref.domain, {}, ("left", 2)))
            inplace = [q[len("Tensor."):] for q in py if q.startswith("Tensor.") and q.endswith("_")
                       and not q.endswith("__")]
            for m in inplace[:1]:
                if family == "unary" and pg_call(pygpu.ones(1, dtype=dt)).dtype.name != dt:
                    continue  # a float result cannot go into an integer self
                shapes = (a(3, 4), a(4)) if family == "binary" else (a(7),)
                cpu.append(TCase(name, m, (dt,) * len(shapes), shapes, _inplace(m), _inplace(m),
                                 ref.domain, {}))
        if family == "binary":
            for pair in INT_PAIRS:
                if set(pair) - set(INTS) <= flat:
                    cpu.append(TCase(name, "mixed", pair, (a(3, 1), a(4)), pg_call, t_call,
                                     ref.domain, {}))
                    cpu.append(TCase(name, "mixed0d", pair, (a(), a(5)), pg_call, t_call,
                                     ref.domain, {}))
    return cpu, dev


def int_array(rng, shape, dtype, domain):
    """Test data of an integer dtype: small values, with the dtype's extremes (min, max, -1,
    0, 1) planted first, where the op's domain allows them."""
    info = np.iinfo(dtype)
    if domain == "shift":  # counts: in range, negative and of the width or more
        return rng.integers(max(info.min, -2), info.bits + 3, size=shape).astype(dtype)
    lo = 1 if domain == "positive" else max(info.min, -9)
    x = rng.integers(lo, 10, size=shape).astype(dtype)
    if domain == "nonzero":
        x[x == 0] = 3
    flat = x.reshape(-1)
    special = [v for v in (info.min, info.max, -1, 0, 1) if info.min <= v <= info.max and
               not (domain == "nonzero" and v == 0) and not (domain == "positive" and v <= 0)]
    flat[:len(special)] = special[:flat.size]
    return x


def make_arrays(case):
    from _helpers import random_array
    rng = np.random.default_rng(zlib.crc32(case.id.encode()))
    dom = case.domain
    shift = 1 if case.scalar and case.scalar[0] == "left" else 0
    out = []
    for k, spec in enumerate(case.inputs):
        dt = case.dtypes[min(k, len(case.dtypes) - 1)]
        d = dom[min(k + shift, len(dom) - 1)]
        if np.dtype(dt).kind in "iu":
            out.append(int_array(rng, spec.shape, dt, d))
        else:
            out.append(random_array(rng, spec.shape, dt, "positive" if d == "shift" else d))
    return out


def _with_scalar(case, xs):
    if not case.scalar:
        return list(xs)
    side, v = case.scalar
    return [v] + list(xs) if side == "left" else list(xs) + [v]


def _torch_result(case, arrays):
    want = case.torch_call(*_with_scalar(case, [torch.from_numpy(x.copy()) for x in arrays]),
                           **case.kwargs)
    return want[0] if isinstance(want, tuple) else want  # torch.max(x, dim): (values, indices)


def check(case, device):
    arrays = make_arrays(case)
    tensors = [pygpu.tensor(x, device=device) for x in arrays]
    if case.raises:
        with pytest.raises((TypeError, RuntimeError)):
            case.pg_call(*_with_scalar(case, tensors), **case.kwargs)
        return
    want = _torch_result(case, arrays)
    got = case.pg_call(*_with_scalar(case, tensors), **case.kwargs)
    assert got.device.type == pygpu.device(device).type
    assert got.dtype.name == str(want.dtype).replace("torch.", ""), (got.dtype, want.dtype)
    assert tuple(got.shape) == tuple(want.shape)
    g, w = got.cpu().numpy(), want.numpy()
    if w.dtype.kind in "biu":
        np.testing.assert_array_equal(g, w)
    else:
        rtol, atol = TOL["elementwise"][w.dtype.name]
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
    for k, (t, x) in enumerate(zip(tensors, arrays)):
        np.testing.assert_array_equal(t.cpu().numpy(), x, err_msg=f"input {k} changed")
