# test_control_flow_and_sym.py - torch.cond and torch.while_loop (pygpu/_ops/_control_flow.py)
# and the sym_* functions on concrete numbers (pygpu/_ops/_sym_numbers.py), each call beside
# torch's: results, result types, and PyTorch's errors.
import pytest

import pygpu

torch = pytest.importorskip("torch")


def test_cond(device):
    for lib, dev in ((torch, None), (pygpu, device)):
        kw = {} if dev is None else {"device": dev}
        x = lib.ones(2, **kw)
        for pred, want in ((True, 2.0), (lib.tensor(False, **kw), 0.0), (1, 2.0),
                           (lib.tensor([0.0], **kw), 0.0)):
            out = lib.cond(pred, lambda t: t + 1, lambda t: t - 1, (x,))
            assert out.tolist() == [want, want]
        assert lib.cond(False, lambda: lib.ones(1), lambda: lib.zeros(1)).tolist() == [0.0]
        with pytest.raises(RuntimeError, match="Expected pred to be bool or single-element"):
            lib.cond(lib.tensor([True, False], **kw), lambda t: t, lambda t: t, (x,))


def test_while_loop(device):
    for lib, dev in ((torch, None), (pygpu, device)):
        kw = {} if dev is None else {"device": dev}
        out = lib.while_loop(lambda i: i < 3, lambda i: i + 1, (lib.tensor(0, **kw),))
        assert isinstance(out, lib.Tensor) and out.item() == 3
        i, x = lib.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, x * 2),
                              [lib.tensor(0, **kw), lib.ones(2, **kw)])
        assert (i.item(), x.tolist()) == (3, [8.0, 8.0])
        assert lib.while_loop(lambda i: i < 3, lambda i: (i + 1,), (0,)) == (3,)
        assert lib.while_loop(lambda i: i > 3, lambda i: (i + 1,), (0,)) == (0,)
    with pytest.raises(RuntimeError, match="Expected body_fn_output and carried_inputs to have "
                                           "same metadata"):
        pygpu.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, x.sum()),
                         (pygpu.tensor(0, device=device), pygpu.ones(2, device=device)))


CALLS = ["sym_int(3.9)", "sym_int(-2.7)", "sym_int('3')", "sym_float(3)", "sym_max(2, 3.5)",
         "sym_max(2.0, 3)", "sym_max(4, 3)", "sym_min(True, 2)", "sym_min(2, 3.5)",
         "sym_not(True)", "sym_sqrt(2)", "sym_sum([1.5, 2])", "sym_sum([1, 2, 3])",
         "sym_ite(True, 1, 2)", "sym_ite(False, 1, 2)", "sym_fresh_size(4)",
         "sym_constrain_range(2)", "sym_constrain_range(2, min=0, max=3)",
         "sym_constrain_range_for_size(0)"]


@pytest.mark.parametrize("call", CALLS)
def test_sym_functions_on_numbers(call):
    ours, theirs = eval("pygpu." + call), eval("torch." + call)
    assert ours == theirs and type(ours) is type(theirs)


@pytest.mark.parametrize("call,error", [
    ("sym_constrain_range(5, min=0, max=3)", RuntimeError),
    ("sym_constrain_range(-5, min=0)", RuntimeError),
    ("sym_constrain_range_for_size(-1)", RuntimeError),
    ("sym_constrain_range_for_size(5, min=0, max=3)", RuntimeError),
    ("sym_ite(True, 1, 2.0)", AssertionError), ("sym_ite(1, 1, 2)", AssertionError),
    ("sym_max(lib.tensor(2), 3)", AssertionError)])
def test_sym_errors(call, error):
    for lib in (torch, pygpu):
        with pytest.raises(error) as e:
            eval("lib." + call, {"lib": lib})
        if error is RuntimeError:
            assert str(e.value).startswith("Invalid value range for")
    assert str(pytest.raises(RuntimeError, pygpu.sym_constrain_range, 5, min=0, max=3).value) \
        == "Invalid value range for 5 between [0, 3]."
