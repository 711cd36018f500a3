"""torch.parse_ir: IR text -> Graph, for the text form pygpu's printer writes (_ir.py):

    graph(%x : Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu),
          %y : Tensor):
      %2 : int = prim::Constant[value=1]()
      %3 : Tensor = aten::add(%x, %y, %2)
      return (%3)

Inputs and outputs may have types (`%x : int`) or not (then Tensor); attributes are ints,
floats (`1.`, `0.5`, `1e-05`), strings, 0-d tensors (`{2}`) and lists of those; `# ...` ends a
line. Nested blocks (prim::If, prim::Loop), which traced graphs never have, are refused.
A parsed node runs through the table of _aten_run.py (its kind, attributes and inputs)."""
import re

from .._tensor import create as _create
from . import _aten_run, _ir, _ir_types
from ._ir_types import split_top as _split_top

_NAME = r"%([A-Za-z0-9_.]+)"


def _strip_comment(line):
    out, quoted = "", False
    for i, ch in enumerate(line):
        if ch == '"' and (i == 0 or line[i - 1] != "\\"):
            quoted = not quoted
        if ch == "#" and not quoted:
            break
        out += ch
    return out.rstrip()


def _number(text):
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    if text in ("inf", "-inf", "nan"):
        return float(text)
    return float(text)


def _attr_value(text):
    """(kind letter, value) of an attribute's text."""
    text = text.strip()
    if text.startswith('"'):
        return "s", text[1:-1].replace('\\"', '"').replace("\\\\", "\\")
    if text.startswith("{"):
        return "t", _create.tensor(_number(text[1:-1]))
    if text.startswith("["):
        items = [_attr_value(p) for p in _split_top(text[1:-1])]
        kinds = {k for k, _ in items}
        return ((kinds.pop() if kinds else "i") + "s"), [v for _, v in items]
    if text == "<Tensor>":
        raise RuntimeError("parse_ir: a tensor constant of more than one element (<Tensor>) "
                           "has no value in the text")
    return ("i" if re.fullmatch(r"-?\d+", text) else "f"), _number(text)


def _typed(graph, text, values, make):
    """Bind `%name` or `%name : type` to the Value make() returns."""
    name, _, type_text = text.partition(":")
    m = re.fullmatch(_NAME, name.strip())
    if not m:
        raise RuntimeError(f"parse_ir: expected a value name like %x, got {text!r}")
    v = make()
    v.setDebugName(m.group(1))
    v.setType(_ir_types.parse(type_text) if type_text.strip() else _ir_types.TensorType())
    values[m.group(1)] = v
    return v


def _use(values, text):
    m = re.fullmatch(_NAME, text.strip())
    if not m or m.group(1) not in values:
        raise RuntimeError(f"parse_ir: use of undefined value {text.strip()}")
    return values[m.group(1)]


def parse_ir(input, parse_tensor_constants=False):
    """torch.parse_ir: the Graph the IR text describes."""
    text = input
    if not isinstance(text, str):
        raise TypeError(f"parse_ir(): expected a str, got {type(text).__name__}")
    start = text.find("graph(")
    if start < 0:
        raise RuntimeError("parse_ir: expected 'graph(' at the start of the IR text")
    depth, i = 0, start + len("graph")
    while i < len(text):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            break
        i += 1
    header, body = text[start + len("graph("):i], text[i + 1:]
    if not body.lstrip().startswith(":"):
        raise RuntimeError("parse_ir: expected ':' after the graph's inputs")
    graph, values = _ir.Graph(), {}
    for item in _split_top(" ".join(header.split())):
        _typed(graph, item, values, graph.addInput)
    returned = False
    for raw in body.lstrip()[1:].splitlines():
        line = _strip_comment(raw).strip()
        if not line:
            continue
        if returned:
            raise RuntimeError(f"parse_ir: text after return: {line!r}")
        if line.startswith("return"):
            inner = line[len("return"):].strip()
            if not (inner.startswith("(") and inner.endswith(")")):
                raise RuntimeError(f"parse_ir: expected 'return (...)', got {line!r}")
            for item in _split_top(inner[1:-1]):
                graph.registerOutput(_use(values, item))
            returned = True
            continue
        _parse_node(graph, values, line)
    if not returned:
        raise RuntimeError("parse_ir: the graph has no return statement")
    return graph


def _parse_node(graph, values, line):
    parts = _split_top(line, "=")
    lhs, rhs = ("", line) if len(parts) == 1 or not parts[0].startswith("%") else \
        (parts[0], "=".join(parts[1:]))
    rhs = rhs.strip()
    scope = re.search(r", scope: (\S+)$", rhs)
    rhs = rhs[:scope.start()] if scope else rhs
    m = re.match(r"([A-Za-z_][\w]*::[\w.]+)", rhs)
    if not m:
        raise RuntimeError(f"parse_ir: expected an op kind like aten::add in {line!r}")
    kind, rest = m.group(1), rhs[m.end():]
    attrs = []
    if rest.startswith("["):
        depth, j = 0, 0
        for j, ch in enumerate(rest):
            depth += {"[": 1, "]": -1}.get(ch, 0)
            if depth == 0:
                break
        attrs = _split_top(rest[1:j])
        rest = rest[j + 1:]
    if not (rest.startswith("(") and rest.endswith(")")):
        if rest.rstrip().endswith(":"):
            raise RuntimeError("parse_ir: nested blocks are not supported by pygpu's parser")
        raise RuntimeError(f"parse_ir: expected the inputs in parentheses in {line!r}")
    inputs = [_use(values, t) for t in _split_top(rest[1:-1])]
    outs = _split_top(lhs) if lhs else []
    node = graph.create(kind, inputs, len(outs))
    for a in attrs:
        name, _, val = a.partition("=")
        node._set(name.strip(), *_attr_value(val))
    made = iter(node._outputs)
    for o in outs:
        _typed(graph, o, values, lambda: next(made))
    node._run = _aten_run.runner(node)
    node._scope = scope.group(1) if scope else ""
    graph.appendNode(node)
