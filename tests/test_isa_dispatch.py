# test_isa_dispatch.py - the CPU kernels' ISA variants can be forced, and agree.
#
# Every CPU kernel with vector variants (AVX-512, AVX2, baseline x86-64) picks
# one from pg_cpu_isa() (csrc/backends/cpu/cpu_vecmath.h), which the
# environment variable PYGPU_ISA caps. Here each level this CPU has runs, in its
# own process, every semantics case of the op table (tests/_op_cases.py, as
# tests/test_ops_semantics.py runs them) on the cpu device plus vector-sized inputs (where the lanes and tails of the kernels
# matter), and the results must agree with the highest level's within the
# row's tolerance class: bitwise for integers and bools, TOL[...] for floats.
# (The semantics cases under each forced level, against NumPy, are a CI lane:
# .ci/run "isa variants".)
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import warnings

import numpy as np
import pytest

import pygpu

LEVELS = ("baseline", "avx2", "avx512", "avx512_bf16")
TESTS = pathlib.Path(__file__).resolve().parent
ROOT = TESTS.parent


def _available():
    top = LEVELS.index(pygpu.cpu_isa(detected=True))
    return LEVELS[: top + 1]


def _run(code, isa, **kw):
    env = dict(os.environ, PYGPU_ISA=isa, PYTHONPATH=os.pathsep.join([str(ROOT), str(TESTS)]))
    return subprocess.run([sys.executable, "-c", code], env=env, cwd=TESTS, capture_output=True,
                          text=True, timeout=600, **kw)


def test_an_unknown_level_refuses_the_import_and_names_the_valid_ones():
    r = _run("import pygpu", "avx3")
    assert r.returncode != 0
    assert "ValueError" in r.stderr and "PYGPU_ISA='avx3'" in r.stderr, r.stderr
    for level in LEVELS:
        assert level in r.stderr.splitlines()[-1]


@pytest.mark.parametrize("isa", LEVELS + ("",))
def test_the_forced_level_is_the_active_one_capped_by_the_cpu(isa):
    detected = pygpu.cpu_isa(detected=True)
    r = _run("import pygpu; print(pygpu.cpu_isa(), pygpu.cpu_isa(detected=True))", isa)
    assert r.returncode == 0, r.stderr
    active, det = r.stdout.split()
    assert det == detected
    want = detected if not isa or LEVELS.index(isa) > LEVELS.index(detected) else isa
    assert active == want


def test_no_kernel_uses_target_clones():
    # GCC's target_clones resolver cannot be forced below the CPU's level.
    hits = []
    for path in (ROOT / "csrc").rglob("*.[ch]"):
        for k, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("//")[0]
            if re.search(r"\btarget_clones\b|^\s*(static\s+)?(inline\s+)?PG_CPU_CLONES\b|\sPG_CPU_CLONES\s+\w", code) \
                    and not path.name == "cpu_vecmath.h":
                hits.append(f"{path.relative_to(ROOT)}:{k}")
    assert not hits, f"kernels that cannot be forced by PYGPU_ISA (use PG_CPU_DISPATCH): {hits}"


@pytest.mark.skipif(shutil.which("objdump") is None, reason="needs objdump")
def test_each_variant_calls_its_own_libmvec_functions():
    so = pathlib.Path(pygpu._C.__file__)
    if not so.name.endswith(".so"):
        pytest.skip("not an ELF module")
    dis = subprocess.run(["objdump", "-d", str(so)], capture_output=True, text=True).stdout
    if "_ZGV" not in dis:
        pytest.skip("built without libmvec (not x86-64 glibc)")
    # the original transcendentals and the math functions' (cpu_math_unary.c, cpu_math_binary.c)
    fns = ("expf", "logf", "tanhf", "exp", "log", "tanh", "sinf", "sin", "erff", "erf", "log1pf",
           "expm1", "acoshf", "atan2f", "hypot")
    found = set(re.findall(r"_ZGV([bde])N\d+v+_([a-z0-9]+)\b", dis))
    # b: SSE (baseline), d: AVX2, e: AVX-512
    missing = [f"{isa}:{fn}" for isa in "bde" for fn in fns if (isa, fn) not in found]
    assert not missing, f"libmvec variants no kernel calls: {missing}"


# ---- the results under each level ---------------------------------------------------------

# Vector-sized inputs: unit-stride runs long enough for full vectors and a tail.
_WIDE_SHAPES = ((1003,), (37, 389))
_WIDE_UNARY = ("exp", "log", "sqrt", "tanh", "sigmoid", "relu", "negative", "abs")
_WIDE_BINARY = ("add", "subtract", "multiply", "divide", "maximum", "minimum")
_WIDE_REDUCE = ("sum", "mean", "max", "min", "argmax")


def _dump(path):
    """Run in a subprocess: every semantics case on cpu and the wide cases -> an .npz."""
    import _op_cases as oc
    from op_references import OFF_TABLE, REFS

    out, meta = {}, {}
    for case in oc.semantics_cases(REFS, OFF_TABLE):
        if case.ref.kind == "value":
            continue  # shapes, lengths, Python scalars: not kernel output
        arrays, tensors = oc.make_inputs(case, "cpu")
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            try:
                got = case.call(*oc._with_scalar(case, tensors), **case.ref.kwargs)
            except (TypeError, ValueError):
                continue  # refused at every level (an in-place result self cannot hold, an empty max)
        items = got if case.ref.kind == "tensors" else [got]
        for k, g in enumerate(items):
            key = f"{case.id}#{k}"
            out[key] = g.numpy()
            if case.ref.tol == "accumulate" and out[key].dtype.kind == "f":
                scale = oc.reference(case, [np.abs(x.astype(np.float64)) for x in arrays])
                out[key + "#scale"] = np.abs(np.asarray(scale, dtype=np.float64))
            meta[key] = case.ref.tol
    rng = np.random.default_rng(7)
    for dtype in ("float32", "float64"):
        for shape in _WIDE_SHAPES:
            x = rng.standard_normal(shape).astype(dtype)
            y = rng.standard_normal(shape).astype(dtype)
            y[np.abs(y) < 0.25] = 0.5
            tx, ty, tp = pygpu.tensor(x), pygpu.tensor(y), pygpu.tensor(np.abs(x) + 0.5)
            for name in _WIDE_UNARY:
                arg = tp if name in ("log", "sqrt") else tx
                out[f"wide-{name}-{dtype}-{shape}"] = getattr(pygpu, name)(arg).numpy()
                meta[f"wide-{name}-{dtype}-{shape}"] = "elementwise"
            for name in _WIDE_BINARY:
                out[f"wide-{name}-{dtype}-{shape}"] = getattr(pygpu, name)(tx, ty).numpy()
                meta[f"wide-{name}-{dtype}-{shape}"] = "elementwise"
            for name in _WIDE_REDUCE:
                for axis in (None, 0, -1):
                    key = f"wide-{name}-{dtype}-{shape}-{axis}"
                    out[key] = np.asarray(getattr(pygpu, name)(tx, axis=axis).numpy())
                    meta[key] = "accumulate" if name in ("sum", "mean") else "exact"
                    if meta[key] == "accumulate":
                        out[key + "#scale"] = np.abs(np.asarray(getattr(np, name)(np.abs(x.astype(np.float64)), axis=axis)))
    np.savez(path, **out)
    pathlib.Path(str(path) + ".json").write_text(json.dumps({"isa": pygpu.cpu_isa(), "tol": meta}))


def _load(path):
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    return arrays, json.loads(pathlib.Path(str(path) + ".json").read_text())


def _bf16_to_f32(x):
    return (np.ascontiguousarray(x).view(np.uint16).astype(np.uint32) << 16).view(np.float32)


def _agree(ref, got, tol_class, scale, what):
    from _op_cases import TOL

    assert got.dtype == ref.dtype and got.shape == ref.shape, what
    if ref.dtype.name == "bfloat16" or (ref.dtype.kind == "V" and ref.dtype.itemsize == 2):
        # bfloat16 (ml_dtypes; a void type once through .npz) is a float too: the
        # variants may sum in another order (pygpu's AVX2 GEMM vs OpenBLAS at baseline)
        ref, got = (_bf16_to_f32(x) for x in (ref, got))
        ref_name = "bfloat16"
    else:
        ref_name = ref.dtype.name
    if tol_class == "exact" or ref.dtype.kind != "f" or ref.size == 0:
        np.testing.assert_array_equal(got, ref, err_msg=what)
        return
    rtol, atol = TOL[tol_class][ref_name]
    if scale is not None:
        err = np.abs(got.astype(np.float64) - ref.astype(np.float64))
        bad = ~(np.isnan(got) & np.isnan(ref)) & ~(err <= rtol * scale + atol)
        assert not bad.any(), f"{what}: {int(bad.sum())} elements differ beyond the {tol_class} bound"
    else:
        np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)


def test_every_available_level_gives_the_same_results(tmp_path):
    levels = _available()
    if len(levels) < 2:
        pytest.skip(f"this CPU has only the {levels[0]} level")
    dumps = {}
    for isa in levels:
        path = tmp_path / f"{isa}.npz"
        r = _run(f"import test_isa_dispatch as t; t._dump({str(path)!r})", isa)
        assert r.returncode == 0, f"PYGPU_ISA={isa}: {r.stderr[-3000:]}"
        dumps[isa] = _load(path)
        assert dumps[isa][1]["isa"] == isa
    top = levels[-1]
    ref, meta = dumps[top]
    assert len(ref) > 500  # the op table really ran
    for isa in levels[:-1]:
        got, _ = dumps[isa]
        assert got.keys() == ref.keys()
        for key, tol_class in meta["tol"].items():
            _agree(ref[key], got[key], tol_class, ref.get(key + "#scale"), f"{key}: {isa} vs {top}")
