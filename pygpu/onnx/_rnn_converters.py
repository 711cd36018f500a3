"""ONNX converters of the recurrent layers: nn.LSTM, nn.GRU and nn.RNN as ONNX's LSTM, GRU
and RNN nodes (one per layer), so the sequence axis may stay dynamic.

PyTorch keeps each layer's gates in the order (i, f, g, o) for an LSTM and (r, z, n) for a
GRU; ONNX wants (i, o, f, c) and (z, r, h), with GRU's linear_before_reset=1 matching
PyTorch's cell. Inputs are taken as (seq, batch, features), transposed from batch_first;
each layer's output (seq, directions, batch, hidden) becomes (seq, batch, directions *
hidden) for the next layer, and the final states stack the layers' as PyTorch's do."""
import numpy as np

from .. import nn
from ._converters import register

_GATES = {"LSTM": [0, 3, 1, 2], "GRU": [1, 0, 2], "RNN": [0]}  # PyTorch's blocks, in ONNX's order


def _params(m, layer, suffix, kind):
    """(W, R, B) of one layer and direction, the gates reordered for ONNX, as arrays
    (layer None: a cell's own weight_ih, weight_hh, ...)."""
    def get(name):
        t = getattr(m, name if layer is None else f"{name}_l{layer}{suffix}", None)
        return None if t is None else t.detach().cpu().float().numpy() if \
            t.dtype.name == "bfloat16" else t.detach().cpu().numpy()
    order = _GATES[kind]
    H = m.hidden_size

    def reorder(a):
        return np.concatenate([a[i * H:(i + 1) * H] for i in order], axis=0)
    W, R = reorder(get("weight_ih")), reorder(get("weight_hh"))
    bi, bh = get("bias_ih"), get("bias_hh")
    if bi is None:
        bi = np.zeros(W.shape[0], W.dtype)
        bh = np.zeros(W.shape[0], W.dtype)
    return W, R, np.concatenate([reorder(bi), reorder(bh)])


def _recurrent(kind):
    def convert(g, m, x, y, example):
        inp = example[0]
        if not hasattr(inp, "ndim") or inp.ndim != 3:
            raise NotImplementedError(f"onnx.export: {kind} on an input of "
                                      f"{getattr(inp, 'ndim', '?')} dims (a batched 3-d "
                                      "tensor is converted; unbatched and packed sequences "
                                      "are not)")
        if getattr(m, "proj_size", 0):
            raise NotImplementedError("onnx.export: LSTM(proj_size > 0) is not converted")
        nd = 2 if m.bidirectional else 1
        H, L = m.hidden_size, m.num_layers
        dtype = inp.dtype.name
        seq = x[0]
        if m.batch_first:
            seq = g.fresh("time_major")
            g.node("Transpose", [x[0]], [seq], perm=[1, 0, 2])
        states = x[1:]  # (h0,) or (h0, c0) when given
        hs, cs = [], []
        for layer in range(L):
            Ws, Rs, Bs = zip(*[_params(m, layer, suf, kind)
                               for suf in ([""] + (["_reverse"] if nd == 2 else []))])
            ins = [seq, g.const(np.stack(Ws), "W", dtype), g.const(np.stack(Rs), "R", dtype),
                   g.const(np.stack(Bs), "B", dtype), ""]
            for s in states:  # (L * nd, batch, H): this layer's directions
                part = g.fresh("state")
                g.node("Slice", [s, g.const([layer * nd], "starts"),
                                 g.const([(layer + 1) * nd], "ends"), g.const([0], "axes")],
                       [part])
                ins.append(part)
            out, h = g.fresh("Y"), g.fresh("Y_h")
            outs = [out, h]
            if kind == "LSTM":
                outs.append(g.fresh("Y_c"))
            attrs = {"hidden_size": H, "direction": "bidirectional" if nd == 2 else "forward"}
            if kind == "GRU":
                attrs["linear_before_reset"] = 1
            if kind == "RNN":
                attrs["activations"] = ["Tanh" if m.nonlinearity == "tanh" else "Relu"] * nd
            while ins and ins[-1] == "":
                ins.pop()
            g.node(kind, ins, outs, **attrs)
            hs.append(h)
            if kind == "LSTM":
                cs.append(outs[2])
            t = g.fresh("Y_t")  # (seq, nd, batch, H) -> (seq, batch, nd * H)
            g.node("Transpose", [out], [t], perm=[0, 2, 1, 3])
            seq = g.fresh("layer_out")
            g.node("Reshape", [t, g.const([0, 0, -1], "shape")], [seq])
        if m.batch_first:
            g.node("Transpose", [seq], [y[0]], perm=[1, 0, 2])
        else:
            g.node("Identity", [seq], [y[0]])
        g.node("Concat", hs, [y[1]], axis=0)
        if kind == "LSTM":
            g.node("Concat", cs, [y[2]], axis=0)
    return convert


for _kind in ("LSTM", "GRU", "RNN"):
    register(getattr(nn, _kind))(_recurrent(_kind))


def _cell(kind):
    """LSTMCell / GRUCell / RNNCell: one step of ONNX's LSTM / GRU / RNN on a sequence of
    length 1, the states given (or zeros, as PyTorch's cells start)."""
    def convert(g, m, x, y, example):
        inp = example[0]
        if inp.ndim != 2:
            raise NotImplementedError(f"onnx.export: {kind}Cell on an unbatched input")
        dtype = inp.dtype.name
        W, R, B = _params(m, None, "", kind)
        seq = g.fresh("step")
        g.node("Unsqueeze", [x[0], g.const([0], "axes")], [seq])
        ins = [seq, g.const(W[None], "W", dtype), g.const(R[None], "R", dtype),
               g.const(B[None], "B", dtype), ""]
        for s in x[1:]:
            st = g.fresh("state")
            g.node("Unsqueeze", [s, g.const([0], "axes")], [st])
            ins.append(st)
        while ins[-1] == "":
            ins.pop()
        outs = [g.fresh("Y"), g.fresh("Y_h")] + ([g.fresh("Y_c")] if kind == "LSTM" else [])
        attrs = {"hidden_size": m.hidden_size}
        if kind == "GRU":
            attrs["linear_before_reset"] = 1
        if kind == "RNN":
            attrs["activations"] = ["Tanh" if m.nonlinearity == "tanh" else "Relu"]
        g.node(kind, ins, outs, **attrs)
        for src, dst in zip(outs[1:], y):
            g.node("Squeeze", [src, g.const([0], "axes")], [dst])
    return convert


for _kind in ("LSTM", "GRU", "RNN"):
    if hasattr(nn, _kind + "Cell"):
        register(getattr(nn, _kind + "Cell"))(_cell(_kind))
