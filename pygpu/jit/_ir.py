"""TorchScript's IR objects for traced graphs: Graph, Block, Node, Value, Use (torch.Graph,
torch.Node, ... with PyTorch's method names), and the IR text form str(graph) prints.

A Graph holds one Block: its inputs (the param node's outputs), its nodes in order, and its
outputs (the return node's inputs). A Node has a kind ("aten::linear", "prim::Constant",
...), input and output Values, and attributes (name -> (kind letter, value): "i" int, "f"
float, "s" string, "t" tensor, "is"/"fs"/"ss" lists). A Value knows the node that makes it
(and its offset there), its uses (Use: the user node and the input position), its type and
its debug name. A traced node also carries how to run it (`_run`, see _tracer.py), which is
what ScriptModule.forward replays; a graph read back by parse_ir has no _run for ops and runs
only if its op kinds are ones replay knows (_tracer.run_graph).

The text form is PyTorch's: `graph(%x : Float(2, 3, strides=[3, 1], requires_grad=0,
device=cpu)):`, one line per node `%4 : Tensor = aten::relu(%x)`, attributes in brackets
(`prim::Constant[value=1]()`, `prim::GetAttr[name="weight"](%self.1)`), then `return (%4)`.
Source ranges (`# file:line:0`) are not printed."""
from .. import _C
from . import _ir_types

Tensor = _C.Tensor


class Use:
    """One use of a Value: the node that reads it and which of its inputs it is."""
    __slots__ = ("user", "offset")

    def __init__(self, user, offset):
        self.user, self.offset = user, offset

    def __repr__(self):
        return f"<Use of input {self.offset} by {self.user.kind()}>"

    def isAfter(self, other):
        return self.user.isAfter(other.user) or (self.user is other.user and
                                                 self.offset > other.offset)


class Value:
    """An SSA value of a graph: made by one node (or a graph input), read by its uses."""

    def __init__(self, graph, node, offset, type_):
        self._graph, self._node, self._offset, self._type = graph, node, offset, type_
        self._unique = graph._next_unique()
        self._name = None

    def debugName(self):
        return self._name if self._name is not None else str(self._unique)

    def setDebugName(self, name):
        self._name = self._graph._unique_name(name, self)
        return self

    def hasDebugName(self):
        return self._name is not None

    def unique(self):
        return self._unique

    def type(self):
        return self._type

    def setType(self, t):
        self._type = t
        return self

    def node(self):
        return self._node

    def offset(self):
        return self._offset

    def owningGraph(self):
        return self._graph

    def uses(self):
        return [Use(n, i) for n in self._graph._all_nodes() for i, v in enumerate(n._inputs)
                if v is self]

    def hasUses(self):
        return bool(self.uses())

    def requires_grad(self):
        t = self._type
        return bool(isinstance(t, _ir_types.TensorType) and t.requires_grad())

    def isCompleteTensor(self):
        return isinstance(self._type, _ir_types.TensorType) and self._type.isComplete()

    def toIValue(self):
        """The constant's value, if a prim::Constant makes this value (else None)."""
        n = self._node
        if n is not None and n.kind() == "prim::Constant":
            return n._attrs["value"][1] if "value" in n._attrs else None
        return None

    def replaceAllUsesWith(self, other):
        for n in self._graph._all_nodes():
            n._inputs = [other if v is self else v for v in n._inputs]

    def __repr__(self):
        where = "a graph input" if self._node is None or self._node._kind == "prim::Param" \
            else f"({_node_line(self._node).strip()})"
        return f"{self.debugName()} defined in {where}"


class Node:
    """One operation: kind, input Values, output Values, attributes, nested blocks."""

    def __init__(self, graph, kind, inputs=(), n_outputs=1):
        self._graph, self._kind = graph, kind
        self._inputs = list(inputs)
        self._outputs = [Value(graph, self, i, _ir_types.TensorType()) for i in range(n_outputs)]
        self._attrs = {}
        self._blocks = []
        self._scope = ""
        self._run = None  # how replay computes the outputs from the inputs (traced nodes)

    # -- structure ----------------------------------------------------------------------
    def kind(self):
        return self._kind

    def inputs(self):
        return iter(list(self._inputs))

    def outputs(self):
        return iter(list(self._outputs))

    def inputsSize(self):
        return len(self._inputs)

    def outputsSize(self):
        return len(self._outputs)

    def inputsAt(self, i):
        return self._inputs[i]

    def outputsAt(self, i):
        return self._outputs[i]

    def input(self):
        if len(self._inputs) != 1:
            raise RuntimeError(f"{self._kind} has {len(self._inputs)} inputs, not 1")
        return self._inputs[0]

    def output(self):
        if len(self._outputs) != 1:
            raise RuntimeError(f"{self._kind} has {len(self._outputs)} outputs, not 1")
        return self._outputs[0]

    def addInput(self, v):
        self._inputs.append(v)
        return v

    def replaceInput(self, i, v):
        old, self._inputs[i] = self._inputs[i], v
        return old

    def blocks(self):
        return iter(list(self._blocks))

    def owningGraph(self):
        return self._graph

    def scopeName(self):
        return self._scope

    def hasUses(self):
        return any(o.hasUses() for o in self._outputs)

    def mustBeNone(self):
        return self._kind == "prim::Constant" and not self._attrs and \
            str(self._outputs[0].type()) == "NoneType"

    def isAfter(self, other):
        order = self._graph._all_nodes()
        return order.index(self) > order.index(other)

    def isBefore(self, other):
        return other.isAfter(self)

    def destroy(self):
        if self.hasUses():
            raise RuntimeError(f"cannot destroy {self._kind}: its outputs still have uses")
        self._graph._block._nodes.remove(self)

    # -- attributes ---------------------------------------------------------------------
    def attributeNames(self):
        return list(self._attrs)

    def hasAttribute(self, name):
        return name in self._attrs

    def hasAttributes(self):
        return bool(self._attrs)

    def kindOf(self, name):
        return self._attrs[name][0]

    def _get(self, name, kind):
        if name not in self._attrs:
            raise RuntimeError(f"required keyword attribute '{name}' is undefined")
        k, v = self._attrs[name]
        if kind is not None and k != kind:
            raise RuntimeError(f"attribute '{name}' of {self._kind} has kind {k}, not {kind}")
        return v

    def _set(self, name, kind, value):
        self._attrs[name] = (kind, value)
        return self

    def removeAttribute(self, name):
        del self._attrs[name]
        return self

    def __getitem__(self, name):
        return self._get(name, None)


def _attr_methods():
    for letter in ("i", "f", "s", "t", "is", "fs", "ss", "ts", "c", "ival", "ty", "g"):
        setattr(Node, letter, lambda self, name, _k=letter: self._get(name, _k))
        setattr(Node, letter + "_",
                lambda self, name, value, _k=letter: self._set(name, _k, value))


_attr_methods()


def attr_kind(value):
    """The attribute letter TorchScript stores a Python value under."""
    if isinstance(value, Tensor):
        return "t"
    if isinstance(value, bool) or isinstance(value, int):
        return "i"
    if isinstance(value, float):
        return "f"
    if isinstance(value, str):
        return "s"
    if isinstance(value, complex):
        return "c"
    if isinstance(value, (list, tuple)) and value:
        inner = attr_kind(value[0])
        if inner in ("i", "f", "s", "t") and all(attr_kind(v) == inner for v in value):
            return inner + "s"
    return "ival"


class Block:
    """A list of nodes with inputs (its param node's outputs) and outputs (its return
    node's inputs)."""

    def __init__(self, graph, owner=None):
        self._graph, self._owner = graph, owner
        self._param = Node(graph, "prim::Param", (), 0)
        self._return = Node(graph, "prim::Return", (), 0)
        self._nodes = []

    def nodes(self):
        return iter(list(self._nodes))

    def inputs(self):
        return iter(list(self._param._outputs))

    def outputs(self):
        return iter(list(self._return._inputs))

    def paramNode(self):
        return self._param

    def returnNode(self):
        return self._return

    def owningNode(self):
        return self._owner

    def addInput(self, name=None):
        v = Value(self._graph, self._param, len(self._param._outputs), _ir_types.TensorType())
        self._param._outputs.append(v)
        if name:
            v.setDebugName(name)
        return v

    def registerOutput(self, v):
        self._return._inputs.append(v)
        return len(self._return._inputs) - 1


class Graph:
    """A TorchScript graph (torch.Graph): one top block of nodes, printed as IR text."""

    def __init__(self):
        self._unique = 0
        self._names = {}
        self._block = Block(self)

    def _next_unique(self):
        self._unique += 1
        return self._unique - 1

    def _unique_name(self, name, value):
        """PyTorch's rule: a taken name gets a numeric suffix (x, x.1, x.2, ...)."""
        base, n = name, 1
        while name in self._names and self._names[name] is not value:
            name = f"{base}.{n}"
            n += 1
        self._names[name] = value
        return name

    def _all_nodes(self):
        out = []

        def walk(block):
            for n in block._nodes:
                out.append(n)
                for b in n._blocks:
                    walk(b)
            out.append(block._return)
        walk(self._block)
        return out

    # -- torch.Graph's methods ---------------------------------------------------------
    def block(self):
        return self._block

    def inputs(self):
        return self._block.inputs()

    def outputs(self):
        return self._block.outputs()

    def nodes(self):
        return self._block.nodes()

    def param_node(self):
        return self._block._param

    def return_node(self):
        return self._block._return

    def addInput(self, name=None):
        return self._block.addInput(name)

    def registerOutput(self, v):
        return self._block.registerOutput(v)

    def create(self, kind, inputs=(), num_outputs=1):
        return Node(self, kind, inputs, num_outputs)

    def appendNode(self, node):
        self._block._nodes.append(node)
        return node

    def insertNode(self, node):
        return self.appendNode(node)

    def insertConstant(self, value):
        """A prim::Constant node for value, appended; returns its output."""
        n = self.create("prim::Constant")
        if value is not None:
            n._set("value", attr_kind(value), value)
        n.output().setType(_ir_types.of_value(value))
        n._run = lambda: value
        self.appendNode(n)
        return n.output()

    def findNode(self, kind, recurse=True):
        for n in (self._all_nodes() if recurse else self._block._nodes):
            if n.kind() == kind:
                return n
        return None

    def findAllNodes(self, kind, recurse=True):
        return [n for n in (self._all_nodes() if recurse else self._block._nodes)
                if n.kind() == kind]

    def lint(self):
        """Every input of every node is defined before it (raises RuntimeError if not)."""
        seen = set(id(v) for v in self._block._param._outputs)
        for n in self._all_nodes():
            for v in n._inputs:
                if id(v) not in seen:
                    raise RuntimeError(f"lint: %{v.debugName()} used by {n.kind()} before "
                                       "it is defined")
            seen.update(id(o) for o in n._outputs)

    def copy(self):
        """A new graph with the same nodes (kinds, attributes, names, types, how each runs)."""
        return copy_graph(self)

    def str(self, print_source_locations=False):
        return str(self)

    def __str__(self):
        ins = ",\n      ".join(f"%{v.debugName()} : {v.type()}" for v in self.inputs())
        lines = [f"graph({ins}):"]
        lines += _block_lines(self._block, "  ")
        return "\n".join(lines) + "\n"

    __repr__ = __str__


def copy_graph(graph, replace=None):
    """A copy of graph's top block. replace(node, new_graph, vmap) may return a Value to
    stand for node's single output instead of copying node (freeze's constants)."""
    out = Graph()
    vmap = {}
    for v in graph.inputs():
        nv = out.addInput(v.debugName() if v.hasDebugName() else None)
        vmap[v] = nv.setType(v.type())
    for n in graph.nodes():
        sub = replace(n, out, vmap) if replace else None
        if sub is not None:
            vmap[n.output()] = sub
            continue
        m = out.appendNode(out.create(n.kind(), [vmap[v] for v in n._inputs], n.outputsSize()))
        m._attrs, m._run, m._scope = dict(n._attrs), n._run, n._scope
        for a, b in zip(n._outputs, m._outputs):
            b.setType(a.type())
            if a.hasDebugName():
                b.setDebugName(a.debugName())
            vmap[a] = b
    for v in graph.outputs():
        out.registerOutput(vmap[v])
    return out


def eliminate_dead_code(graph, keep=()):
    """Drop the nodes of graph's top block whose outputs nothing reads (torch's DCE pass):
    what a trace computed only to read it in Python (the `x.sum() > 0` of an if). Nodes of
    the kinds in `keep` stay (a traced graph keeps the GetAttr of every submodule called)."""
    used = {id(v) for v in graph.outputs()}
    kept = []
    for n in reversed(graph._block._nodes):
        if any(id(o) in used for o in n._outputs) or n.kind() in keep:
            kept.append(n)
            used.update(id(v) for v in n._inputs)
    graph._block._nodes = kept[::-1]
    return graph


def format_attr(kind, value):
    if kind == "s":
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if kind == "t":
        if value.dim() == 0:
            return "{" + format_scalar(value.item()) + "}"
        return "<Tensor>"
    if kind in ("is", "fs", "ss", "ts"):
        return "[" + ", ".join(format_attr(kind[0], v) for v in value) + "]"
    if kind == "i" and isinstance(value, bool):
        return str(int(value))
    return format_scalar(value)


def format_scalar(v):
    """A number as TorchScript prints it: 1 for an int, 1. for a float with no fraction."""
    if isinstance(v, bool):
        return str(int(v))
    if isinstance(v, float):
        if v == int(v) and abs(v) < 1e16:
            return f"{int(v)}."
        return repr(v)
    return str(v)


def _node_line(node, indent="  "):
    outs = ", ".join(f"%{o.debugName()} : {o.type()}" for o in node._outputs)
    attrs = ""
    if node._attrs:
        attrs = "[" + ", ".join(f"{k}={format_attr(*kv)}" for k, kv in node._attrs.items()) + "]"
    ins = ", ".join(f"%{v.debugName()}" for v in node._inputs)
    scope = f", scope: {node._scope}" if node._scope else ""
    return f"{indent}{outs + ' = ' if outs else ''}{node._kind}{attrs}({ins}){scope}"


def _block_lines(block, indent):
    lines = []
    for n in block._nodes:
        lines.append(_node_line(n, indent))
        for i, b in enumerate(n._blocks):
            params = ", ".join(f"%{v.debugName()} : {v.type()}" for v in b.inputs())
            lines.append(f"{indent}  block{i}({params}):")
            lines += _block_lines(b, indent + "    ")
    rets = ", ".join(f"%{v.debugName()}" for v in block._return._inputs)
    lines.append(f"{indent}return ({rets})" if block._owner is None
                 else f"{indent}-> ({rets})")
    return lines
