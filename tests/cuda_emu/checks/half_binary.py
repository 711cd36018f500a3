"""checks/half_binary.py - float16/bfloat16 binary ops on cuda compute in float32 and round once.

Run on the emulated device by tests/test_cuda_emulated.py, both with today's
kernel (must pass) and with the reverted one (must fail): the op table's
contract (csrc/core/pg_node.h) is that a half operand is widened to float32,
the op runs there, and the result is rounded once; the scalar is a float32.
Exits non-zero (an AssertionError) at the first difference."""
import ml_dtypes
import numpy as np

import pygpu

rng = np.random.default_rng(7)
for name, np_t in (("float16", np.float16), ("bfloat16", ml_dtypes.bfloat16)):
    x = rng.uniform(-4, 4, 4096).astype(np.float32).astype(np_t)
    y = rng.uniform(0.25, 4, 4096).astype(np.float32).astype(np_t)
    xf, yf = x.astype(np.float32), y.astype(np.float32)
    a, b = pygpu.tensor(x, device="cuda"), pygpu.tensor(y, device="cuda")
    cases = {
        "a * 0.1": ((a * 0.1).numpy(), (xf * np.float32(0.1)).astype(np_t)),
        "0.3 - a": ((0.3 - a).numpy(), (np.float32(0.3) - xf).astype(np_t)),
        "a / b": ((a / b).numpy(), (xf / yf).astype(np_t)),
        "a / 3.0": ((a / 3.0).numpy(), (xf / np.float32(3.0)).astype(np_t)),
    }
    for what, (got, ref) in cases.items():
        bad = np.flatnonzero(got.astype(np.float32) != ref.astype(np.float32))
        assert bad.size == 0, (f"{name} {what}: {bad.size} of {got.size} elements differ from "
                               f"float32 rounded once, e.g. at {bad[0]}: got "
                               f"{float(got[bad[0]])}, want {float(ref[bad[0]])}")
    n = np.array([np.nan, 1.0, np.nan, -2.0], dtype=np.float32).astype(np_t)
    m = np.array([1.0, np.nan, 3.0, -5.0], dtype=np.float32).astype(np_t)
    tn, tm = pygpu.tensor(n, device="cuda"), pygpu.tensor(m, device="cuda")
    for op in ("maximum", "minimum"):
        got = getattr(pygpu, op)(tn, tm).numpy().astype(np.float32)
        ref = getattr(np, op)(n.astype(np.float32), m.astype(np.float32))
        np.testing.assert_array_equal(got, ref, err_msg=f"{name} {op}: NaN must win")
print("ok")
