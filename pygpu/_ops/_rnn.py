"""The recurrent layers' autograd Function: a whole stack of RNN/LSTM/GRU layers, both
directions, forward and backward, over a (packed) sequence (pygpu.nn.RNN, LSTM, GRU and
the cells call it; pygpu/nn/rnn.py checks their arguments first).

Per layer and direction, forward: the input projections of EVERY timestep as one fused
linear GEMM (G = X @ W_ih^T + b_ih, the GEMM contract), then the recurrence in C
(_C._rnn_forward, csrc/core/pg_ops_rnn.c: per step a MATMUL of the hidden state and one
fused RNN_CELL node). Backward, per layer and direction: the recurrence backward in C
(one RNN_CELL_BWD node and one MATMUL per step), then the weight gradients as
whole-sequence GEMMs (dW_ih and dX through the fused linear backward, dW_hh = dHW^T @
h_prev, dW_hr = dh^T @ m).

Rows are time-major packed rows (PyTorch's PackedSequence layout): step t is `bs[t]`
rows, batch sizes never growing; a padded batch is bs = (B,) * T. Under autocast the input
projections' GEMMs (forward, and dX / dW_ih backward) run in the region's low dtype, as
PyTorch's autocast runs its GEMMs; the recurrence, the states and the output stay float32. The Function returns
ONE flat tensor holding the output (N, D*P), h_n (L*D, B, P) and, for an LSTM, c_n
(L*D, B, H): autograd's Function has one output, and the three views the caller slices
from it carry their gradients back into this one node."""
from .. import _C
from .._tensor.create import empty, rand, zeros
from .._dtype import float32
from ..autograd.function import Function, fused_backward
from ..amp.autocast_mode import region_dtype
from ..autograd.grad_mode import is_grad_enabled

Tensor = _C.Tensor

# the cell kinds: the RNN_CELL rows of csrc/core/pg_subops.def, whose IDs are PyTorch's modes;
# each one's gate blocks are its row's `gates` column (the second of its own)
GATES = {row[1]: int(row[5][1]) for row in _C._subop_table() if row[0] == "RNN_CELL"}


class RNNConfig:
    """What the Function needs besides tensors: the mode, sizes and packed layout."""
    __slots__ = ("mode", "layers", "dirs", "hidden", "proj", "bias", "dropout", "training",
                 "batch_sizes", "save", "low")

    def __init__(self, mode, layers, dirs, hidden, proj, bias, dropout, training, batch_sizes):
        self.mode, self.layers, self.dirs = mode, layers, dirs
        self.hidden, self.proj, self.bias = hidden, proj, bias
        self.dropout, self.training = dropout, training
        self.batch_sizes = tuple(int(b) for b in batch_sizes)
        self.save = False
        self.low = None  # autocast's dtype for the input projections (float32 layers only)

    @property
    def out_size(self):
        return self.proj or self.hidden

    def weights_of(self, weights, layer, d):
        """(w_ih, w_hh, b_ih, b_hh, w_hr) of one layer and direction, from the flat list in
        PyTorch's order (_flat_weights_names)."""
        per = 2 + (2 if self.bias else 0) + (1 if self.proj else 0)
        w = weights[(layer * self.dirs + d) * per:(layer * self.dirs + d + 1) * per]
        b_ih, b_hh = (w[2], w[3]) if self.bias else (None, None)
        return w[0], w[1], b_ih, b_hh, (w[-1] if self.proj else None)


class _RNN(Function):
    @staticmethod
    def forward(ctx, x, h0, c0, cfg, *weights):
        mode, L, D, H, P = cfg.mode, cfg.layers, cfg.dirs, cfg.hidden, cfg.out_size
        cell, lstm = mode, mode == "LSTM"
        bs = cfg.batch_sizes
        N, B = x.shape[0], (bs[0] if bs else 0)
        dev, dt = x.device, x.dtype
        n_out, n_h = N * D * P, L * D * B * P
        packed = empty((n_out + n_h + (L * D * B * H if lstm else 0),), dtype=dt, device=dev)
        hn = packed[n_out:n_out + n_h].reshape(L * D, B, P)
        cn = packed[n_out + n_h:].reshape(L * D, B, H) if lstm else None
        if h0 is None:
            hn.fill_(0.0)
        else:
            hn.copy_(h0)
        if lstm:
            if c0 is None:
                cn.fill_(0.0)
            else:
                cn.copy_(c0)
        save = cfg.save
        S = _C._rnn_save_width(cell, H, P) if save else 0
        layer_in = x
        ctx.inputs, ctx.saves, ctx.ms, ctx.masks = [], [], [], []
        low = cfg.low
        for layer in range(L):
            last = layer == L - 1
            out = (packed[:n_out].reshape(N, D * P) if last
                   else empty((N, D * P), dtype=dt, device=dev))
            if low is not None:  # autocast: the projections' GEMM in the low dtype
                layer_in = layer_in.astype(low)
            for d in range(D):
                w_ih, w_hh, b_ih, b_hh, w_hr = cfg.weights_of(weights, layer, d)
                if low is None:
                    g = _C._linear_fwd(layer_in, w_ih, b_ih, 0)  # every step's projection
                else:  # the float32 weight rounded as the GEMM reads it; G back in float32
                    bl = None if b_ih is None else b_ih.astype(low)
                    g = _C._linear_fwd(layer_in, w_ih, bl, 0).astype(dt)
                k = layer * D + d
                m = empty((N, H), dtype=dt, device=dev) if w_hr is not None else None
                sv = empty((N, S), dtype=dt, device=dev) if save else None
                _C._rnn_forward(cell, g, w_hh, b_hh, w_hr, hn[k], cn[k] if lstm else None,
                                out[:, d * P:(d + 1) * P] if D > 1 else out, m, sv, bs, d == 1)
                ctx.saves.append(sv)
                ctx.ms.append(m)
            ctx.inputs.append(layer_in)
            if not last and cfg.dropout > 0 and cfg.training:
                keep = rand(*out.shape, device=dev, dtype=float32) >= cfg.dropout
                mask = keep.astype(dt) * (1.0 / (1.0 - cfg.dropout))
                ctx.masks.append(mask)
                layer_in = out * mask
            else:
                ctx.masks.append(None)
                layer_in = out
        ctx.cfg, ctx.weights = cfg, weights
        ctx.x_grad = x.requires_grad  # layer 0's dX only when the input wants it
        ctx.has_h0, ctx.has_c0 = h0 is not None, c0 is not None
        ctx.N, ctx.B = N, B
        return packed

    @staticmethod
    @fused_backward  # the fused C cells: double backward raises PyTorch's error
    def backward(ctx, g):
        cfg, weights = ctx.cfg, ctx.weights
        if not cfg.save:
            raise RuntimeError("rnn: the forward ran without saving for backward")
        mode, L, D, H, P = cfg.mode, cfg.layers, cfg.dirs, cfg.hidden, cfg.out_size
        cell, lstm, gru = mode, mode == "LSTM", mode == "GRU"
        bs, N, B = cfg.batch_sizes, ctx.N, ctx.B
        dt, dev = g.dtype, g.device
        KG = GATES[mode] * H
        ks = 4 * H if mode in ("LSTM", "GRU") else H
        n_out, n_h = N * D * P, L * D * B * P
        dout_all = g[:n_out].reshape(N, D * P)
        dh_all = g[n_out:n_out + n_h].reshape(L * D, B, P).clone()  # dh_n in, dh0 out
        dc_all = g[n_out + n_h:].reshape(L * D, B, H).clone() if lstm else None
        wgrads = [None] * len(weights)
        per = 2 + (2 if cfg.bias else 0) + (1 if cfg.proj else 0)
        dx = None
        for layer in reversed(range(L)):
            layer_in = ctx.inputs[layer]
            dlayer_in = None
            for d in range(D):
                w_ih, w_hh, b_ih, b_hh, w_hr = cfg.weights_of(weights, layer, d)
                k = layer * D + d
                sv, m = ctx.saves[k], ctx.ms[k]
                dg = empty((N, KG), dtype=dt, device=dev)
                dhw = empty((N, KG), dtype=dt, device=dev) if gru else None
                dhall = empty((N, P), dtype=dt, device=dev) if w_hr is not None else None
                dout = dout_all if D == 1 else dout_all[:, d * P:(d + 1) * P]
                _C._rnn_backward(cell, sv, w_hh, w_hr, m, dout, dh_all[k],
                                 dc_all[k] if lstm else None, dg, dhw, dhall, bs, d == 1)
                # the input side: dX, dW_ih, db_ih in one fused linear backward
                want_dx = layer > 0 or ctx.x_grad
                if cfg.low is None:
                    dxi, dw_ih, db_ih = _C._linear_bwd(dg, layer_in, w_ih, None, 0,
                                                       b_ih is not None, want_dx)
                else:  # autocast: low operands, float32 dW and db, dX widened
                    dxi, dw_ih, db_ih = _C._linear_bwd(dg.astype(cfg.low), layer_in, w_ih, None,
                                                       0, b_ih is not None, want_dx, True)
                    dxi = dxi.astype(dt) if dxi is not None else None
                if dxi is not None:
                    dlayer_in = dxi if dlayer_in is None else dlayer_in + dxi
                side = dhw if gru else dg
                hprev = sv[:, ks:ks + P]
                dw_hh = side.transpose(0, 1) @ hprev
                base = k * per
                wgrads[base], wgrads[base + 1] = dw_ih, dw_hh
                if cfg.bias:
                    wgrads[base + 2] = db_ih
                    wgrads[base + 3] = side.sum(axis=0)
                if w_hr is not None:
                    wgrads[base + per - 1] = dhall.transpose(0, 1) @ m
            if layer > 0:
                mask = ctx.masks[layer - 1]
                dout_all = dlayer_in if mask is None else dlayer_in * mask
            else:
                dx = dlayer_in
        dh0 = dh_all if ctx.has_h0 else None
        dc0 = dc_all if lstm and ctx.has_c0 else None
        return (dx, dh0, dc0, None, *wgrads)


def rnn_stack(x, h0, c0, cfg, weights):
    """Run the stack; returns (output (N, D*P), h_n (L*D, B, P), c_n (L*D, B, H) | None)."""
    tensors = [x, h0, c0, *weights]
    cfg.save = is_grad_enabled() and any(isinstance(t, Tensor) and t.requires_grad
                                         for t in tensors)
    if x.dtype is float32:
        cfg.low = region_dtype(x.device.type)
    packed = _RNN.apply(x, h0, c0, cfg, *weights)
    N, B = x.shape[0], (cfg.batch_sizes[0] if cfg.batch_sizes else 0)
    L, D, H, P = cfg.layers, cfg.dirs, cfg.hidden, cfg.out_size
    n_out, n_h = N * D * P, L * D * B * P
    out = packed[:n_out].reshape(N, D * P)
    hn = packed[n_out:n_out + n_h].reshape(L * D, B, P)
    cn = packed[n_out + n_h:].reshape(L * D, B, H) if cfg.mode == "LSTM" else None
    return out, hn, cn


def rnn_zeros(shape, like):
    return zeros(shape, dtype=like.dtype, device=like.device)
