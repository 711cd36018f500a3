# test_torch_function.py - the __torch_function__ protocol (issue 43), with PyTorch as the
# oracle: each scenario is one function of (library, device), run on torch (cpu) and on pygpu
# (every device under test); the calls its __torch_function__ or mode saw (function names),
# the types and the values of its results must be the same. Then PyTorch's documented
# examples (the "Extending torch" page: a ScalarTensor that is not a tensor, a logging
# subclass, a mode), the torch.overrides helpers, and that a plain call stays a plain call.
import functools
import pickle

import pytest

import pygpu

torch = pytest.importorskip("torch")


def _plain(v):
    """A result as comparable data: its type's name, and its values."""
    if isinstance(v, (list, tuple)):
        return [type(v).__name__.replace("return_types.", ""), [_plain(x) for x in v]]
    if hasattr(v, "tolist") and hasattr(v, "dtype"):
        return [type(v).__name__, v.detach().cpu().tolist()]
    return [type(v).__name__, v]


def _both(scenario, device):
    ours = scenario(pygpu, device)
    ref = scenario(torch, "cpu")
    assert ours == ref


def _logging_subclass(lib, log):
    class LoggingTensor(lib.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            log.append(func.__name__)
            return super().__torch_function__(func, types, args, kwargs or {})
    return LoggingTensor


def _ops_on_a_subclass(lib, device):
    log = []
    L = _logging_subclass(lib, log)
    x = lib.tensor([[1.0, 2.0], [3.0, 4.0]], device=device).as_subclass(L)
    y = lib.tensor([[1.0, 0.0], [0.0, 1.0]], device=device)
    F = lib.nn.functional
    r = [x + 1, 2 * x, 1 - x, x / 2, x ** 2, x.add(y), lib.add(x, y), x @ y, lib.matmul(y, x),
         x.sum(), x.sum(dim=0), x[0], x[:, 1], x.reshape(4), x.view(4), x.t(), lib.cat([y, x]),
         lib.stack([x, y]), x.max(dim=1), lib.relu(x), F.relu(x), F.softmax(x, dim=1), -x,
         x > 2, x.clone(), x.exp(), x.mean(), x.unsqueeze(0), lib.where(x > 2, x, y)]
    z = x.clone()
    z.add_(1)
    z += 1
    z[0] = 5.0
    z.mul_(y)
    r.append(z)
    names = list(log)
    return names, [_plain(v) for v in r]


def test_a_subclass_sees_every_call_and_its_results_keep_the_subclass(device):
    _both(_ops_on_a_subclass, device)


def _operator_names(lib, device):
    log = []
    L = _logging_subclass(lib, log)
    x = lib.tensor([3, 4], device=device).as_subclass(L)
    out = []
    for f in (lambda: x + 2, lambda: 2 + x, lambda: x - 2, lambda: 2 - x, lambda: x * 2,
              lambda: 2 * x, lambda: x / 2, lambda: 2 / x, lambda: x // 2, lambda: 9 // x,
              lambda: x % 2, lambda: 9 % x, lambda: x ** 2, lambda: 2 ** x, lambda: x & 1,
              lambda: 1 & x, lambda: x | 1, lambda: x ^ 1, lambda: x << 1, lambda: x >> 1,
              lambda: x < 4, lambda: 4 < x, lambda: x <= 3, lambda: x >= 3, lambda: x == 3,
              lambda: x != 3, lambda: -x, lambda: +x, lambda: abs(x), lambda: ~x, lambda: len(x),
              lambda: bool(x[0]), lambda: float(x[0])):
        log.clear()
        v = f()
        out.append((list(log), _plain(v)))
    y = x.clone()
    for f in (y.__iadd__, y.__isub__, y.__imul__, y.__ifloordiv__, y.__imod__, y.__ipow__):
        log.clear()
        f(1)
        out.append(list(log))
    return out


def test_operators_reach_the_subclass_under_pytorchs_names(device):
    _both(_operator_names, device)


def _a_mode(lib, device):
    log = []

    class Mode(lib.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            log.append(func.__name__)
            return func(*args, **(kwargs or {}))

    a = lib.ones(3, device=device)
    b = lib.arange(3.0, device=device)
    with Mode():
        r = [lib.add(a, b), a.mul(b), lib.nn.functional.relu(b - 1), lib.cat([a, b]), a.sum(),
             b.softmax(0), a.view(3, 1), lib.where(b > 0, a, b)]
    after = lib.add(a, b)  # the mode is gone
    names = list(log)
    return names, [_plain(v) for v in r + [after]]


def test_a_mode_sees_every_call_inside_it(device):
    _both(_a_mode, device)


def _autograd_through_subclasses(lib, device):
    log = []
    L = _logging_subclass(lib, log)

    class MyParam(lib.Tensor):
        pass

    q = lib.Tensor._make_subclass(MyParam, lib.ones(2, device=device), True)
    (q * 3).sum().backward()
    out = [type(q).__name__, q.requires_grad, q.is_leaf, _plain(q.grad)]
    z = lib.tensor([1.0, 2.0], device=device, requires_grad=True)
    w = (z * 2).as_subclass(L)
    (w * w).sum().backward()
    out += [_plain(z.grad), type(w).__name__, w.grad_fn is not None, w.requires_grad]
    p = lib.tensor([1.0, 2.0], device=device, requires_grad=True).as_subclass(L)
    (p.exp() * 2).sum().backward()
    out += [type(p).__name__, p.requires_grad]
    return list(log), out  # property reads (w.requires_grad) are "__get__" calls


def test_autograd_through_subclass_objects(device):
    _both(_autograd_through_subclasses, device)


def _switches(lib, device):
    log = []
    L = _logging_subclass(lib, log)
    x = lib.ones(2, device=device).as_subclass(L)

    class Off(lib.Tensor):
        __torch_function__ = lib._C._disabled_torch_function_impl

    o = lib.ones(2, device=device).as_subclass(Off)
    out = [type(o + 1).__name__, type(o.sum()).__name__, type(lib.add(o, o)).__name__]
    with lib._C.DisableTorchFunctionSubclass():
        out += [type(x + 1).__name__, type(x.exp()).__name__]
    with lib._C.DisableTorchFunction():
        out += [type(lib.add(x, 1)).__name__]
    out += [type(x + 1).__name__]
    ov = lib.overrides
    out += [ov.has_torch_function((x,)), ov.has_torch_function((o,)),
            ov.has_torch_function((lib.ones(1),)), ov.has_torch_function_unary(x),
            ov.has_torch_function_variadic(1, x), ov.is_tensor_like(x),
            ov.is_tensor_like(lib.ones(1)), ov.is_tensor_like(3),
            ov.is_tensor_method_or_property(lib.Tensor.add),
            ov.is_tensor_method_or_property(lib.add), ov.resolve_name(lib.add),
            ov.resolve_name(lib.Tensor.add), ov.resolve_name(lib.nn.functional.relu)]
    return log, out


def test_the_switches_and_the_helpers(device):
    _both(_switches, device)


def _subclass_constructors(lib, device):
    class Mine(lib.Tensor):
        pass

    m = Mine([1.0, 2.0])
    n = lib.ones(2, device=device).as_subclass(Mine)
    n.extra = "kept"  # a subclass object has a __dict__
    return [type(m).__name__, m.tolist(), type(n).__name__, n.extra, isinstance(n, lib.Tensor),
            type(n.double()).__name__, str(n.double().dtype).replace("pygpu", "torch")]


def test_subclass_objects(device):
    assert _subclass_constructors(pygpu, device) == _subclass_constructors(torch, "cpu")
    with pytest.raises(RuntimeError):
        pygpu.ones(2).as_subclass(int)
    with pytest.raises(TypeError):
        pygpu.Tensor._make_subclass(pygpu.Tensor, [1.0])


class _Tagged(pygpu.Tensor):
    """A module-level subclass, so that pickle finds it."""


def test_copies_and_pickles_keep_the_subclass_and_its_attributes(device):
    import copy
    t = pygpu.tensor([1.0, 2.0], device=device).as_subclass(_Tagged)
    t.tag = ["kept"]
    for f in (copy.copy, copy.deepcopy, lambda x: pickle.loads(pickle.dumps(x))):
        c = f(t)
        assert type(c) is _Tagged and c.tolist() == [1.0, 2.0] and c.tag == ["kept"]
        assert str(c.device) == str(t.device)
    leaf = pygpu.Tensor._make_subclass(_Tagged, pygpu.ones(2, device=device), True)
    c = copy.deepcopy(leaf)
    assert type(c) is _Tagged and c.requires_grad and c.is_leaf


# ---- PyTorch's documented examples (docs "Extending torch"), import changed --------------

def _scalar_tensor_example(lib):
    HANDLED_FUNCTIONS = {}

    class ScalarTensor(object):
        def __init__(self, N, value):
            self._N = N
            self._value = value

        def __repr__(self):
            return "ScalarTensor(N={}, value={})".format(self._N, self._value)

        def tensor(self):
            return self._value * lib.eye(self._N)

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            if kwargs is None:
                kwargs = {}
            if func not in HANDLED_FUNCTIONS or not all(
                    issubclass(t, (lib.Tensor, ScalarTensor)) for t in types):
                return NotImplemented
            return HANDLED_FUNCTIONS[func](*args, **kwargs)

    def implements(torch_function):
        """Register a torch function override for ScalarTensor"""
        def decorator(func):
            functools.update_wrapper(func, torch_function)
            HANDLED_FUNCTIONS[torch_function] = func
            return func
        return decorator

    @implements(lib.mean)
    def mean(input):
        return float(input._value) / input._N

    def ensure_tensor(data):
        if isinstance(data, ScalarTensor):
            return data.tensor()
        return lib.as_tensor(data)

    @implements(lib.add)
    def add(input, other):
        try:
            if input._N == other._N:
                return ScalarTensor(input._N, input._value + other._value)
            else:
                raise ValueError("Shape mismatch!")
        except AttributeError:
            return lib.add(ensure_tensor(input), ensure_tensor(other))

    d = ScalarTensor(5, 2)
    out = [repr(d), lib.mean(d), repr(lib.add(d, d)), lib.add(d, lib.ones(5, 5)).tolist(),
           mean.__name__]
    try:
        lib.mul(d, 2)
    except TypeError as e:
        out.append("TypeError" if "__torch_function__" in str(e) else str(e))
    return out


def test_the_documented_scalar_tensor_example():
    assert _scalar_tensor_example(pygpu) == _scalar_tensor_example(torch)


def _logging_tensor_example(lib):
    import logging
    records = []

    class Handler(logging.Handler):
        def emit(self, record):
            records.append(record.getMessage())

    logger = logging.getLogger(f"logging_tensor_{lib.__name__}")
    logger.addHandler(Handler())
    logger.setLevel(logging.INFO)

    class LoggingTensor(lib.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            # NOTE: Logging calls Tensor.__repr__, so we can't log __repr__ without infinite recursion
            if func is not lib.Tensor.__repr__:
                logger.info(f"func: {func.__name__}")
            if kwargs is None:
                kwargs = {}
            return super().__torch_function__(func, types, args, kwargs)

    t = lib.tensor([1.0, 2.0]).as_subclass(LoggingTensor)
    u = (t * 2 + t.exp()).sum()
    return records, type(u).__name__, round(u.item(), 4)


def test_the_documented_logging_subclass_example():
    assert _logging_tensor_example(pygpu) == _logging_tensor_example(torch)


def test_get_overridable_and_ignored_and_testing_overrides():
    ov = pygpu.overrides
    fns = ov.get_overridable_functions()
    assert pygpu.add in fns[pygpu] and pygpu.Tensor.add in fns[pygpu.Tensor]
    assert pygpu.nn.functional.relu in fns[pygpu.nn.functional]
    ignored = ov.get_ignored_functions()
    assert pygpu.zeros in ignored and pygpu.tensor in ignored and pygpu.add not in ignored
    # every name torch ignores that pygpu has is ignored here too, and vice versa for torch's
    # overridable ones
    ours = {ov.resolve_name(f) for ns in fns.values() for f in ns}
    theirs = {torch.overrides.resolve_name(f) for ns in torch.overrides.get_overridable_functions().values()
              for f in ns}
    shared = ours & theirs
    assert len(shared) > 900, len(shared)
    tested = ov.get_testing_overrides()
    assert tested[pygpu.add](1, 2) == -1

    class Everything:
        def __init__(self):
            self.seen = []

        def __torch_function__(self, func, types, args=(), kwargs=None):
            self.seen.append(func)
            return -1

    e = Everything()
    assert pygpu.add(e, 1) == -1 and pygpu.cat([e]) == -1 and pygpu.ones(2).add(e) == -1
    assert e.seen == [pygpu.add, pygpu.cat, pygpu.Tensor.add]


def test_handle_and_wrap_torch_function():
    ov = pygpu.overrides

    class Handled:
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return ("handled", func.__name__, args, kwargs)

    @ov.wrap_torch_function(lambda a, b=None: (a,))
    def double(a, b=None):
        return a * 2

    assert double(pygpu.ones(1)).tolist() == [2.0]
    assert double(Handled(), b=3)[:2] == ("handled", "double")
    assert ov.handle_torch_function(pygpu.add, (Handled(),), Handled(), 1)[:2] == ("handled", "add")

    class Refuses:
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return NotImplemented

    with pytest.raises(TypeError, match="no implementation found for 'torch.add'"):
        pygpu.add(Refuses(), 1)


def test_modes_nest_and_pop_while_they_run():
    seen = []

    class Outer(pygpu.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append(("outer", func.__name__))
            return func(*args, **(kwargs or {}))

    class Inner(pygpu.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append(("inner", func.__name__))
            return func(*args, **(kwargs or {}))

    with Outer():
        with Inner():
            pygpu.add(pygpu.ones(1), 1)
        assert pygpu._C._len_torch_function_stack() == 1
    assert seen == [("inner", "add"), ("outer", "add")]
    assert pygpu._C._len_torch_function_stack() == 0


def test_a_plain_call_is_untouched_and_wrappers_read_as_the_function():
    assert pygpu.add.__name__ == "add" and pygpu.Tensor.add.__name__ == "add"
    assert pygpu.Tensor.view.__doc__ == pygpu.Tensor.view.__wrapped__.__doc__
    x = pygpu.ones(2)
    assert type(x + 1) is pygpu.Tensor and type(x.view(2, 1)) is pygpu.Tensor
    assert pickle.loads(pickle.dumps(pygpu.add)) is pygpu.add
    assert pickle.loads(pickle.dumps(pygpu.Tensor.add)) is pygpu.Tensor.add
    assert pickle.loads(pickle.dumps(pygpu.nn.functional.relu)) is pygpu.nn.functional.relu
