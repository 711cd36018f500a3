# _collection_checks.py - what makes the suite multiply, refused when it is collected.
#
# A suite multiplies when a parameter is crossed with cases it means nothing to (issue 44:
# tests/test_quantization_paths.py had 1,329 tests, 664 of them comparing the CPU with
# itself and 272 running the same case twice under two ids). tests/conftest.py generates the
# device parameters (pytest_generate_tests) so that this does not happen; the checks below
# fail the session with a collection error (so `--collect-only` fails too, and nothing runs)
# where it happens anyway:
#   - two tests with one id;
#   - two tests of one function whose parameters are equal (the same case twice: an ids
#     function that says less than the values, or a list with a repeat);
#   - a fixture with `params` that reads a device fixture: on a device where its values
#     make no difference it runs the same case once per value. Such a parameter is
#     device-specific: the test module declares it in DEVICE_PARAMS (conftest.py), which
#     offers its values only on the devices it names;
#   - a test that compares a device with another and gets the same device for both: its
#     body makes one call with a device name ("cpu") where a twin call (same function, same
#     argument position or keyword) passes its device fixture, and the fixture's value for
#     this test is that device. Compare with the CPU through the `compared_device` fixture,
#     which is never cpu.
# tests/test_collection_checks.py runs pytest on small files that break each rule.
import ast
import copy
import inspect
import textwrap

import pytest

# the fixtures through which a test receives the device it runs on (conftest.py)
DEVICE_FIXTURES = ("device", "other_device", "kernel_device", "compared_device")
# the device names a test may spell as a literal reference ("cpu"; "sim:1")
_DEVICE_TYPES = ("cpu", "sim", "cuda")


def _is_device_literal(node):
    return (isinstance(node, ast.Constant) and isinstance(node.value, str)
            and node.value.split(":")[0] in _DEVICE_TYPES)


class _DeviceBlind(ast.NodeTransformer):
    """Rewrites a call with every device literal and device fixture name as one placeholder,
    noting which it met: two calls that read the same afterwards run the same thing on two
    devices."""

    def __init__(self):
        self.literals, self.fixtures = set(), set()

    def visit_Constant(self, node):
        if _is_device_literal(node):
            self.literals.add(node.value)
            return ast.Name("DEVICE")
        return node

    def visit_Name(self, node):
        if node.id in DEVICE_FIXTURES:
            self.fixtures.add(node.id)
            return ast.Name("DEVICE")
        return node


_pairs_cache = {}


def device_literal_pairs(function):
    """{(fixture name, device literal)}: the test's body makes one call with the literal and
    a twin call, the same but for the fixture in the literal's place (lay.run("cpu",
    _f32(x, "cpu")) and lay.run(device, _f32(x, device))): the same work on the fixture's
    device and on the literal's, compared. pygpu against torch (f(pygpu, device) and
    f(torch, "cpu")) is not a twin."""
    if function in _pairs_cache:
        return _pairs_cache[function]
    pairs = set()
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    except (OSError, TypeError, SyntaxError):
        tree = None
    if tree is not None:
        templates = {}  # device-blind text -> (literals, fixtures) of the calls that read so
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            blind = _DeviceBlind()
            text = ast.unparse(blind.visit(copy.deepcopy(node)))
            lits, fixes = templates.setdefault(text, (set(), set()))
            if blind.literals and not blind.fixtures:
                lits |= blind.literals
            elif blind.fixtures and not blind.literals:
                fixes |= blind.fixtures
        for lits, fixes in templates.values():
            pairs |= {(f, lit) for f in fixes for lit in lits}
    _pairs_cache[function] = pairs
    return pairs


def _same_device(a, b):
    def norm(d):
        d = str(d)
        return d if ":" in d or d == "cpu" else d + ":0"
    return norm(a) == norm(b)


def _param_key(item):
    """The test's parameters as comparable text (values, not ids), or None when it has none."""
    spec = getattr(item, "callspec", None)
    if spec is None or not spec.params:
        return None
    return tuple(sorted((k, repr(v)) for k, v in spec.params.items()))


def problems(items):
    """(nodeid, rule, what) for each rule broken by the collected items."""
    out = []
    seen_ids, seen_params = {}, {}
    for item in items:
        if item.nodeid in seen_ids:
            out.append((item.nodeid, "duplicate id", "the id of two tests"))
        seen_ids[item.nodeid] = item
        key = _param_key(item)
        fn = getattr(item, "function", None)
        if key is not None and fn is not None:
            where = (item.path, fn.__qualname__, key)
            other = seen_params.get(where)
            if other is not None and other.nodeid != item.nodeid:
                out.append((item.nodeid, "same case twice", f"the same parameters as {other.nodeid}"))
            seen_params[where] = item
        info = getattr(item, "_fixtureinfo", None)
        for name, defs in (info.name2fixturedefs.items() if info else ()):
            fdef = defs[-1]
            if fdef.params is not None and set(fdef.argnames) & set(DEVICE_FIXTURES):
                out.append((item.nodeid, "device-specific fixture params",
                            f"fixture {name!r} has params and reads the device: declare it in "
                            "the module's DEVICE_PARAMS (tests/conftest.py), which offers its "
                            "values only where they differ"))
        spec = getattr(item, "callspec", None)
        if fn is None or spec is None:
            continue
        for fixture, literal in device_literal_pairs(fn):
            value = spec.params.get(fixture)
            if value is not None and _same_device(value, literal):
                out.append((item.nodeid, "same-device comparison",
                            f"compares {fixture}={value} with {literal!r}, the same device (use "
                            "compared_device, which is never cpu)"))
    return out


def deselect_not_generated(config, items):
    """Drop the placeholders conftest.py parametrizes where a device fixture has no device
    (compared_device with cpu alone selected), and say so once."""
    keep, dropped = [], []
    for item in items:
        (dropped if item.get_closest_marker("not_generated") else keep).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep
    return dropped


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items):
    dropped = deselect_not_generated(config, items)
    if dropped:
        reasons = sorted({m.args[0] for i in dropped for m in i.iter_markers("not_generated")})
        config.stash.setdefault(_NOTES, []).extend(
            f"{len(dropped)} tests not generated: {r}" for r in reasons)
    found = problems(items)
    if found:
        counts = {}
        for nodeid, rule, _ in found:
            key = (nodeid.split("::")[0], rule)
            counts[key] = counts.get(key, 0) + 1
        lines = [f"{n:6d}  {path}: {rule}" for (path, rule), n in sorted(counts.items())]
        lines += [f"{nodeid}: {what}" for nodeid, _, what in found[:20]]
        if len(found) > 20:
            lines.append(f"... and {len(found) - 20} more")
        # a failed collection report: pytest stops before running anything ("error during
        # collection"), with --collect-only too, and pytest-xdist's workers pass it on to the
        # controller (an exception here would reach it as an INTERNALERROR without the text)
        report = pytest.CollectReport("tests/_collection_checks.py", "failed",
                                      f"{len(found)} tests multiply the suite:\n  "
                                      + "\n  ".join(lines), [])
        session.ihook.pytest_collectreport(report=report)


_NOTES = pytest.StashKey[list]()


def pytest_report_collectionfinish(config, start_path, items):
    return config.stash.get(_NOTES, [])
