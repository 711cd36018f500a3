# test_errors.py - one table of bad inputs and the exception each must raise.
#
# Each row: an id, a call, the exception type(s), and regexes the message must
# contain (case-insensitive). The C core never aborts on user input: it returns
# a status that the bindings turn into TypeError / ValueError / IndexError /
# MemoryError / a pygpu RuntimeError subclass with a message that says what was
# wrong. Where the spec is silent, the expected type is NumPy's (NumPy's
# AxisError is both a ValueError and an IndexError, so either is accepted).
# Rows that must run on every device take the device as their argument.
# Below the table: axes are checked in 64 bits (AxisError, never a wrapped axis),
# and the private _C functions check their device and dtype numbers (run in child
# processes, since out-of-range numbers once crashed the interpreter).
import re

import numpy as np
import pytest

import pygpu
from pygpu import _C

from _helpers import run_child, to_device


# A shape in a message may be written (2, 3) or [2, 3]; (4,) or [4] or (4).
def shape_re(*dims):
    inner = r",\s*".join(map(str, dims))
    return r"[\(\[]" + inner + (r",?" if len(dims) == 1 else "") + r"[\)\]]"


def _readonly_tensor():
    a = np.arange(3.0)
    a.flags.writeable = False
    return pygpu.from_numpy(a)


def _write_into_readonly_export():
    np.asarray(_readonly_tensor())[0] = 1.0


def _ones(*shape, dtype="float32", device="cpu"):
    return pygpu.ones(*shape, dtype=dtype, device=device)


DEVICE_ROWS = [  # (id, call(device), exception, [regex, ...])
    # shapes that do not fit together name both shapes
    ("add_shape_mismatch", lambda d: _ones(2, 3, device=d) + _ones(4, device=d),
     ValueError, [shape_re(2, 3), shape_re(4)]),
    ("mul_shape_mismatch", lambda d: _ones(2, 3, device=d) * _ones(3, 2, device=d),
     ValueError, [shape_re(2, 3), shape_re(3, 2)]),
    ("compare_shape_mismatch", lambda d: _ones(5, device=d) < _ones(4, device=d),
     ValueError, [shape_re(5), shape_re(4)]),
    ("maximum_shape_mismatch", lambda d: pygpu.maximum(_ones(2, device=d), _ones(3, device=d)),
     ValueError, [shape_re(2), shape_re(3)]),
    ("matmul_inner_dim", lambda d: _ones(2, 3, device=d) @ _ones(4, 5, device=d),
     ValueError, [shape_re(2, 3), shape_re(4, 5)]),
    ("matmul_fn_inner_dim", lambda d: pygpu.matmul(_ones(3, device=d), _ones(4, device=d)),
     ValueError, [shape_re(3), shape_re(4)]),
    ("matmul_batch_mismatch", lambda d: _ones(2, 3, 4, device=d) @ _ones(3, 4, 5, device=d),
     ValueError, [shape_re(2, 3, 4), shape_re(3, 4, 5)]),
    ("matmul_0d", lambda d: _ones((), device=d) @ _ones(3, device=d), ValueError, []),
    # bool arithmetic is refused; comparisons on bool are fine (ops table)
    ("bool_add", lambda d: _ones(3, dtype="bool", device=d) + _ones(3, dtype="bool", device=d),
     TypeError, ["bool"]),
    ("bool_sub", lambda d: _ones(3, dtype="bool", device=d) - _ones(3, dtype="bool", device=d),
     TypeError, ["bool"]),
    ("bool_mul", lambda d: _ones(3, dtype="bool", device=d) * _ones(3, dtype="bool", device=d),
     TypeError, ["bool"]),
    ("bool_div", lambda d: _ones(3, dtype="bool", device=d) / _ones(3, dtype="bool", device=d),
     TypeError, ["bool"]),
    # wrong argument types
    ("add_str", lambda d: _ones(3, device=d) + "x", TypeError, []),
    ("add_none", lambda d: _ones(3, device=d) + None, TypeError, []),
    ("radd_list_of_str", lambda d: ["a"] + _ones(1, device=d), TypeError, []),
    ("exp_of_str", lambda d: pygpu.exp("x"), TypeError, []),
    ("reshape_str", lambda d: _ones(4, device=d).reshape("a"), TypeError, []),
    ("sum_axis_str", lambda d: _ones(4, device=d).sum(axis="a"), TypeError, []),
    ("argmax_axis_tuple", lambda d: _ones(2, 2, device=d).argmax(axis=(0, 1)), TypeError, []),
    # an integer is an accelerator index, as in PyTorch (torch.device(5) is cuda:5)
    ("to_int", lambda d: _ones(2, device=d).to(5), RuntimeError, ["does not exist|not available"]),
    # reductions and shape changes that NumPy refuses
    ("max_of_empty", lambda d: pygpu.max(_ones(0, device=d)), ValueError, ["empty|zero-size"]),
    ("min_of_empty", lambda d: _ones(0, device=d).min(), ValueError, ["empty|zero-size"]),
    ("argmax_of_empty", lambda d: _ones(0, 3, device=d).argmax(), ValueError, ["empty|zero-size"]),
    ("max_of_empty_axis", lambda d: _ones(0, 3, device=d).max(axis=0), ValueError, ["empty|zero-size"]),
    ("argmax_of_empty_axis", lambda d: _ones(3, 0, device=d).argmax(axis=1), ValueError, []),
    ("sum_axis_out_of_range", lambda d: _ones(2, 3, device=d).sum(axis=2), (IndexError, ValueError), ["axis"]),
    ("mean_axis_negative_out_of_range", lambda d: _ones(2, 3, device=d).mean(axis=-3),
     (IndexError, ValueError), ["axis"]),
    ("sum_axis_repeated", lambda d: _ones(2, 3, device=d).sum(axis=(0, 0)), ValueError, []),
    ("reshape_wrong_size", lambda d: _ones(6, device=d).reshape(4), ValueError, ["6", "4"]),
    ("reshape_two_minus_ones", lambda d: _ones(6, device=d).reshape(-1, -1), ValueError, []),
    ("transpose_bad_axes", lambda d: _ones(3, device=d).transpose(1, 0), ValueError, ["ax"]),
    # transpose(0, 0) swaps an axis with itself (PyTorch's two-axis form); a permutation
    # (pygpu's tuple form) that repeats an axis is the error
    ("transpose_repeated_axes", lambda d: _ones(2, 3, device=d).transpose((0, 0)), ValueError, []),
    # indexing out of range
    ("index_past_end", lambda d: _ones(3, device=d)[3], IndexError, ["3"]),
    ("index_before_start", lambda d: _ones(3, device=d)[-4], IndexError, ["-4"]),
    ("index_second_axis", lambda d: _ones(2, 3, device=d)[:, 5], IndexError, ["5"]),
    ("too_many_indices", lambda d: _ones(2, 2, device=d)[0, 0, 0], IndexError, []),
    ("index_0d", lambda d: _ones((), device=d)[0], IndexError, []),
    ("index_float", lambda d: _ones(3, device=d)[1.0], (IndexError, TypeError), []),
    ("slice_step_zero", lambda d: _ones(3, device=d)[::0], ValueError, []),
    # conversions to Python that need exactly one element
    ("item_of_many", lambda d: _ones(2, device=d).item(), ValueError, []),
    ("float_of_many", lambda d: float(_ones(2, device=d)), TypeError, []),
    ("bool_of_many", lambda d: bool(_ones(2, device=d)), ValueError, ["ambiguous"]),
    ("len_of_0d", lambda d: len(_ones((), device=d)), TypeError, []),
    ("iterate_0d", lambda d: list(_ones((), device=d)), TypeError, []),
    # creation
    ("zeros_negative", lambda d: pygpu.zeros(-1, device=d), ValueError, ["negative"]),
    ("zeros_str_shape", lambda d: pygpu.zeros("a", device=d), TypeError, []),
    ("zeros_float_shape", lambda d: pygpu.zeros(2.5, device=d), TypeError, []),
    ("zeros_unknown_dtype", lambda d: pygpu.zeros(2, dtype="notadtype", device=d), TypeError, ["notadtype"]),
    ("zeros_complex16", lambda d: pygpu.zeros(2, dtype="complex16", device=d), TypeError, ["complex16"]),
    ("zeros_longdouble", lambda d: pygpu.zeros(2, dtype=np.longdouble, device=d), TypeError,
     ["longdouble"]),
    ("zeros_overflowing_size", lambda d: pygpu.zeros(1 << 62, device=d), (MemoryError, ValueError), []),
    ("zeros_overflowing_dims", lambda d: pygpu.zeros(1 << 31, 1 << 31, 1 << 31, device=d),
     (MemoryError, ValueError), []),
    ("zeros_impossible_size", lambda d: pygpu.zeros(1 << 45, device=d), MemoryError, []),
    ("tensor_ragged", lambda d: pygpu.tensor([[1, 2], [3]], device=d), ValueError, []),
    ("tensor_of_str", lambda d: pygpu.tensor("abc", device=d), TypeError, []),
    ("tensor_of_object", lambda d: pygpu.tensor(object(), device=d), TypeError, []),
    ("logical_not_float16", lambda d: pygpu.logical_not(pygpu.ones(2, dtype="float16", device=d)), TypeError, ["float16"]),
    ("full_shape_str", lambda d: pygpu.full("ab", 1.0, device=d), TypeError, []),
    ("arange_step_zero", lambda d: pygpu.arange(0, 5, 0, device=d), (ValueError, ZeroDivisionError), []),
    # messages that name the problem and the fix
    ("to_unknown_device_type", lambda d: _ones(3, device=d).to("tpu:0"), ValueError,
     ["unknown device type 'tpu'", "cpu, sim, cuda and meta", "'sim:0'"]),
    ("to_neither_device_nor_dtype", lambda d: _ones(3, device=d).to("tpu"), ValueError,
     ["neither a device nor a dtype", "unknown device type 'tpu'", "'sim:0'", "float32"]),
    ("to_unsupported_numpy_dtype_name", lambda d: _ones(3, device=d).to("float128"), TypeError,
     ["float128", pygpu._dtype.SUPPORTED]),
    ("zeros_float_size", lambda d: pygpu.zeros(3.5, device=d), TypeError,
     ["sizes must be integers", "3.5", "float"]),
    ("ones_float_in_shape", lambda d: pygpu.ones((2, 3.5), device=d), TypeError,
     ["sizes must be integers", "3.5", shape_re(2, 3.5)]),
    ("rand_numpy_float_size", lambda d: pygpu.rand(np.float64(3), device=d), TypeError,
     ["sizes must be integers", "float64"]),
    ("empty_none_size", lambda d: pygpu.empty(None, device=d), TypeError, ["sizes must be integers", "None"]),
    ("full_float_size", lambda d: pygpu.full(3.5, 1.0, device=d), TypeError,
     ["sizes must be integers", re.escape("full((2, 3), value)")]),
    ("zeros_size_past_int64", lambda d: pygpu.zeros(2**70, device=d), ValueError,
     [str(2**70), "too large", "int64"]),
    ("full_int_past_int64", lambda d: pygpu.full(3, 2**70, device=d), OverflowError,
     [str(2**70), "int64", "float64"]),
    ("tensor_int_past_int64", lambda d: pygpu.tensor([2**70], device=d), OverflowError,
     [str(2**70), "too large for int64", "dtype=pygpu.float64"]),
    ("tensor_negative_int_past_int64", lambda d: pygpu.tensor([[1], [-2**70]], device=d), OverflowError,
     [str(-2**70), "too large for int64"]),
    ("tensor_int_past_int64_made_uint64", lambda d: pygpu.tensor([2**63], device=d), OverflowError,
     [str(2**63), "too large for int64"]),
    ("tensor_int_past_int64_made_float", lambda d: pygpu.tensor([3, 2**64 - 1], device=d), OverflowError,
     [str(2**64 - 1), "too large for int64"]),
    ("arange_size_past_int64", lambda d: pygpu.arange(2**70, device=d), ValueError,
     [str(2**70), "too many", "int64"]),
    ("arange_values_past_int64", lambda d: pygpu.arange(2**63, 2**63 + 2, device=d), OverflowError,
     [str(2**63), "int64", "float64"]),
    ("arange_negative_values_past_int64", lambda d: pygpu.arange(-2**64, -2**64 + 2, device=d), OverflowError,
     [str(-2**64), "int64"]),
    ("arange_int64_values_past_2_53", lambda d: pygpu.arange(2**63 - 3, 2**63 - 1, device=d), ValueError,
     [str(2**63 - 3), r"2\*\*53", "np.arange"]),
    ("tensor_big_endian", lambda d: pygpu.tensor(np.arange(4, dtype=">f8"), device=d), TypeError,
     ["big-endian", re.escape("a.astype(a.dtype.newbyteorder('='))")]),
    ("tensor_big_endian_int64", lambda d: pygpu.tensor(np.arange(4, dtype=">i8"), device=d), TypeError,
     ["big-endian", re.escape("newbyteorder('=')")]),
    ("zeros_big_endian_dtype", lambda d: pygpu.zeros(2, dtype=">i8", device=d), TypeError,
     ["big-endian", "'int64'"]),
    ("astype_big_endian", lambda d: _ones(2, device=d).astype(">f8"), TypeError, ["big-endian", "'float64'"]),
    ("rand_int64", lambda d: pygpu.rand(2, dtype="int64", device=d), TypeError, ["int64"]),
]

DEVICE_ERROR = pygpu.DeviceUnavailableError
ROWS = [  # (id, call(), exception, [regex, ...]): rows that do not depend on a device
    ("device_unknown_type", lambda: pygpu.device("gpu"), ValueError, ["gpu"]),
    ("device_bad_index", lambda: pygpu.device("sim:x"), ValueError, ["sim:x"]),
    ("device_negative_index", lambda: pygpu.device("sim:-1"), ValueError, []),
    ("device_empty_string", lambda: pygpu.device(""), ValueError, []),
    ("device_not_a_string", lambda: pygpu.device(3.5), TypeError, []),
    ("zeros_unknown_device", lambda: pygpu.zeros(2, device="tpu"), ValueError, ["tpu"]),
    ("zeros_device_wrong_type", lambda: pygpu.zeros(2, device=1.5), TypeError, []),
    ("sim_index_out_of_range", lambda: pygpu.zeros(2, device="sim:99"), DEVICE_ERROR, ["sim:99|99"]),
    ("to_sim_out_of_range", lambda: pygpu.ones(2).to("sim:99"), DEVICE_ERROR, ["99"]),
    ("from_numpy_of_list", lambda: pygpu.from_numpy([1, 2]), TypeError, []),
    ("memoryview_of_bfloat16", lambda: memoryview(pygpu.ones(2, dtype="bfloat16")), BufferError,
     ["bfloat16"]),
    ("from_dlpack_of_int", lambda: pygpu.from_dlpack(5), TypeError, []),
    ("write_into_read_only_export", _write_into_readonly_export, ValueError, ["read-only"]),
    ("guard_unknown_level", lambda: pygpu.transfer_guard("sometimes"), ValueError, ["sometimes"]),
    ("inject_fault_bad_device", lambda: pygpu.sim.inject_fault("matmul", device=99), DEVICE_ERROR, []),
    ("device_mismatch_cpu_sim", lambda: pygpu.ones(2) + pygpu.ones(2, device="sim"),
     pygpu.DeviceMismatchError, ["cpu", "sim:0", r"\.to\("]),
    ("device_mismatch_sim0_sim1", lambda: pygpu.ones(2, device="sim:0") @ pygpu.ones(2, device="sim:1"),
     pygpu.DeviceMismatchError, ["sim:0", "sim:1", r"\.to\("]),
    ("device_mismatch_maximum", lambda: pygpu.maximum(pygpu.ones(2, device="sim"), pygpu.ones(2)),
     pygpu.DeviceMismatchError, ["cpu", "sim:0"]),
]
ROWS += [  # device spellings: each message names what was wrong and a form that works
    ("synchronize_index_past_int32", lambda: pygpu.synchronize("sim:4294967296"), IndexError,
     ["sim:4294967296 does not exist", r"there (is one|are \d+) sim device"]),
    ("sim_synchronize_index_past_int64", lambda: pygpu.sim.synchronize(2**64), IndexError,
     [f"sim:{2**64} does not exist", "sim device"]),
    ("to_index_past_int32", lambda: pygpu.ones(2).to("sim:4294967296"), IndexError, ["sim:4294967296"]),
    ("device_unknown_type_lists_known", lambda: pygpu.device("tpu:0"), ValueError,
     ["unknown device type 'tpu'", "cpu, sim, cuda and meta", "'sim:0'"]),
    ("device_no_type", lambda: pygpu.device(":0"), ValueError, ["no device type", "'sim:0'"]),
    ("device_negative_index_named", lambda: pygpu.device("sim:-1"), ValueError,
     ["'-1'", "non-negative integer", "'sim:0'"]),
    ("device_letters_index", lambda: pygpu.device("sim:abc"), ValueError, ["'abc'", "non-negative integer"]),
    ("device_float_index", lambda: pygpu.device("sim:1.5"), ValueError, ["'1.5'", "non-negative integer"]),
    ("device_non_ascii_digit_index", lambda: pygpu.device("sim:\u0663"), ValueError, ["non-negative integer"]),
    ("device_two_colons", lambda: pygpu.device("cuda:0:1"), ValueError,
     ["more than one ':'", re.escape("type[:index]"), "'cuda:0'"]),
    ("device_no_index_after_colon", lambda: pygpu.device("sim:"), ValueError, ["no index", "'sim:0'"]),
    ("device_index_twice", lambda: pygpu.device("sim:0", 1), ValueError, ["twice"]),
    ("device_index_arg_negative", lambda: pygpu.device("sim", -1), ValueError, ["non-negative", "-1"]),
    ("device_index_arg_float", lambda: pygpu.device("sim", 1.5), TypeError, ["integer", "1.5"]),
    ("device_index_arg_str", lambda: pygpu.device("sim", "1"), TypeError, ["integer", "'1'"]),
    ("device_cpu_index", lambda: pygpu.device("cpu:1"), ValueError, ["single cpu", "'cpu'"]),
    ("sim_set_device_past_end", lambda: pygpu.sim.set_device(2**40), IndexError, [f"sim:{2**40}"]),
]
if not pygpu.cuda.is_available():
    _reason = pygpu.cuda.unavailable_reason()
    ROWS += [
        ("cuda_absent_zeros", lambda: pygpu.zeros(2, device="cuda:0"), DEVICE_ERROR, ["cuda", re.escape(_reason)]),
        ("cuda_absent_to", lambda: pygpu.ones(2).to("cuda"), DEVICE_ERROR, ["cuda"]),
    ]


def _check(call, exc, patterns):
    with pytest.raises(exc) as info:
        call()
    message = str(info.value)
    for pattern in patterns:
        assert re.search(pattern, message, flags=re.IGNORECASE), f"message {message!r} lacks {pattern!r}"


@pytest.mark.parametrize("call,exc,patterns", [r[1:] for r in DEVICE_ROWS], ids=[r[0] for r in DEVICE_ROWS])
def test_bad_input_raises_on_device(call, exc, patterns, device):
    _check(lambda: call(device), exc, patterns)


@pytest.mark.parametrize("call,exc,patterns", [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_bad_input_raises(call, exc, patterns):
    _check(call, exc, patterns)


def test_error_classes_are_runtime_errors():
    for cls in (pygpu.DeviceUnavailableError, pygpu.DeviceMismatchError, pygpu.AsyncOpError,
                pygpu.TransferGuardError):
        assert issubclass(cls, RuntimeError), cls
    assert issubclass(pygpu.TransferWarning, UserWarning)


def test_missing_device_index_is_both_unavailable_and_index_error():
    # callers that caught DeviceUnavailableError keep working; IndexError is what NumPy-minded
    # code expects of an index out of range
    with pytest.raises(pygpu.DeviceUnavailableError) as info:
        pygpu.zeros(2, device=f"sim:{pygpu.sim.device_count()}")
    assert isinstance(info.value, IndexError)
    assert f"sim:{pygpu.sim.device_count()} does not exist" in str(info.value)


def test_cuda_absent_reason_is_a_sentence():
    if pygpu.cuda.is_available():
        pytest.skip("cuda is present here")
    reason = pygpu.cuda.unavailable_reason()
    assert isinstance(reason, str) and len(reason) > 10


@pytest.mark.parametrize("shape", [(0,), (0, 3), (3, 0), (2, 0, 4)], ids=str)
def test_zero_size_tensors_work_where_numpy_does(shape, device):
    t = pygpu.zeros(*shape, device=device)
    a = np.zeros(shape, np.float32)
    for got, ref in [(t + t, a + a), (t * 2.0, a * 2.0), (pygpu.exp(t), np.exp(a)), (t.sum(), a.sum()),
                     (t.sum(axis=0), a.sum(axis=0)), (t.T, a.T), (t.reshape(-1), a.reshape(-1)),
                     (t[None], a[None]), (t < 1, a < 1), (t.astype("int64"), a.astype(np.int64))]:
        assert got.shape == np.shape(ref)
        np.testing.assert_array_equal(got.numpy(), ref)
    assert t.tolist() == a.tolist()
    assert repr(t).startswith("tensor(")


def test_errors_leave_the_library_usable(device):
    x = pygpu.ones(2, 3, device=device)
    for bad in (lambda: x + pygpu.ones(4, device=device), lambda: x[9], lambda: x @ x):
        with pytest.raises((ValueError, IndexError)):
            bad()
    np.testing.assert_array_equal((x + 1).numpy(), np.full((2, 3), 2.0, np.float32))


# ---- axes are checked in 64 bits ----------------------------------------------------------

AXIS_CASES = [
    ("sum", lambda t: t.sum(axis=2**32), "4294967296"),
    ("sum_neg", lambda t: t.sum(axis=-(2**32)), "-4294967296"),
    ("sum_tuple", lambda t: t.sum(axis=(0, 2**32 + 1)), "4294967297"),
    ("max", lambda t: t.max(axis=2**63 - 1), "9223372036854775807"),
    ("min", lambda t: t.min(axis=2**33), "8589934592"),
    ("argmax", lambda t: t.argmax(axis=2**32), "4294967296"),
    ("mean", lambda t: t.mean(axis=2**32 + 1), "4294967297"),
    ("fn_sum", lambda t: pygpu.sum(t, axis=2**32), "4294967296"),
    ("transpose", lambda t: t.transpose(2**32 + 1, 2**32), "4294967297"),
    ("transpose_tuple", lambda t: t.transpose((0, 2**32)), "4294967296"),
    ("sum_small", lambda t: t.sum(axis=2), "2"),
    ("transpose_small", lambda t: t.transpose(0, 2), "2"),
]


@pytest.mark.parametrize("fn,number", [c[1:] for c in AXIS_CASES], ids=[c[0] for c in AXIS_CASES])
def test_axis_out_of_bounds_is_an_axis_error(device, fn, number):
    t = to_device(np.arange(6.0).reshape(2, 3), device)
    with pytest.raises(pygpu.AxisError) as info:
        fn(t)
    assert f"axis {number} is out of bounds for array of dimension 2" in str(info.value)
    assert isinstance(info.value, IndexError) and isinstance(info.value, ValueError)


# ---- private _C functions with device or dtype numbers ------------------------------------

BAD_DEVICE_CALLS = [
    ("_empty_cache", (5, 0)),
    ("_empty_cache", (1, 99)),
    ("_empty_cache", (-1, 0)),
    ("_reset_peak", (1, 16)),
    ("_reset_peak", (7, 0)),
    ("_memory_stats", (1, -1)),
    ("_memory_stats", (4, 0)),
    ("_memory_stats", (0, 4)),
    ("_synchronize", (9, 0)),
    ("_device_name", (1, 1 << 20)),
    ("_total_memory", (-5, 0)),
    ("_seed", (1, 5, 0)),
    ("_seed", (1, 1, 99)),
    ("_seed", (1, -2, 0)),
]


@pytest.mark.parametrize("fn,args", BAD_DEVICE_CALLS,
                         ids=[f"{f}{a}" for f, a in BAD_DEVICE_CALLS])
def test_private_device_functions_check_their_device(fn, args):
    rc, out, err = run_child(f"""
        from pygpu import _C
        try:
            _C.{fn}(*{args!r})
            print("NO-ERROR")
        except (ValueError, RuntimeError) as e:
            print(type(e).__name__ + ":", e)
    """)
    assert rc == 0, f"child died with {rc}: {err[-2000:]}"
    assert "Error:" in out and "NO-ERROR" not in out, out


@pytest.mark.parametrize("code", [99, -1, len(pygpu._dtype.ALL), 2**31 + 2])
def test_from_array_copy_checks_the_dtype_code(code):
    with pytest.raises((ValueError, OverflowError), match="dtype code|int"):
        _C._from_array_copy(np.zeros(3), code)


def test_private_random_checks_its_kind():
    with pytest.raises(ValueError, match="_random: GAMMA is not one of its RANDOM sub-ops "
                                         r"\(UNIFORM, NORMAL;"):
        _C._random("GAMMA", (2,), pygpu.float32, "cpu")
    with pytest.raises(TypeError):
        _C._random(1, (2,), pygpu.float32, "cpu")  # a sub-op is named by its row's ID


# ---- an int too big for int64 ------------------------------------------------------------------------

@pytest.mark.parametrize("where", ["cpu", "sim:0"])
@pytest.mark.parametrize("value", [2**70, -2**70, 2**63])
def test_an_int_too_big_for_int64_names_the_dtype_and_its_range(where, value):
    t = pygpu.zeros(3, dtype=pygpu.int64, device=where)
    msg = rf"Python integer {value} out of bounds for int64.*-2\*\*63 to 2\*\*63 - 1"
    with pytest.raises(OverflowError, match=msg):
        t[0] = value
    with pytest.raises(OverflowError, match=msg):
        t + value
    t[0] = 2**63 - 1  # the edges still fit
    t[1] = -2**63
    assert t.tolist() == [2**63 - 1, -2**63, 0]


def test_a_big_int_beside_a_float_tensor_is_a_float_as_in_numpy():
    f = pygpu.zeros(2, dtype=pygpu.float64)
    f[0] = 2**70
    assert (f + 2**70).tolist() == [2.0**71, 2.0**70]
