"""ATen's functional recurrent stacks at torch's top level: torch.lstm, torch.gru,
torch.rnn_tanh, torch.rnn_relu (both overloads: a padded `input` with batch_first, or packed
`data` with its `batch_sizes`), torch.miopen_rnn (MIOpen's entry point for the same
stacks) and torch.mkldnn_rnn_layer (oneDNN's one LSTM layer in one direction), all run on
pygpu's RNN_CELL node as every other spelling is.

The parameters come as ATen takes them: one flat list, per layer and direction w_ih, w_hh
[, b_ih, b_hh] [, w_hr], which is nn.LSTM's `_flat_weights` order; the stack is the one
pygpu.nn.LSTM runs (pygpu/_ops/_rnn.py: one GEMM for every step's input projection, a fused
cell per step, autograd through all of it)."""
from .. import _C
from ._rnn import RNNConfig, rnn_stack

Tensor = _C.Tensor

# miopen_rnn's (and cuDNN's) mode numbers, PyTorch's get_cudnn_mode
_MODES = {0: "RNN_RELU", 1: "RNN_TANH", 2: "LSTM", 3: "GRU"}


def _check_params(fn, params, has_biases, num_layers, dirs, proj):
    if not isinstance(params, (list, tuple)) or not all(isinstance(p, Tensor) for p in params):
        raise TypeError(f"{fn}(): argument 'params' must be tuple of Tensors")
    per = (4 if has_biases else 2) + (1 if proj else 0)
    if len(params) != per * num_layers * dirs:
        raise RuntimeError(f"{fn}: got an incorrect number of RNN parameters: expected "
                           f"{per * num_layers * dirs} for {num_layers} layer(s), "
                           f"{dirs} direction(s), has_biases={has_biases}, got {len(params)}")
    return list(params)


def _run(fn, mode, x, bs, hx, cx, params, has_biases, num_layers, dropout, train,
         bidirectional):
    """x: (N, I) time-major packed rows, bs: the batch size of each step. Returns
    (output rows (N, D*P), h_n, c_n | None)."""
    dirs = 2 if bidirectional else 1
    if not isinstance(hx, Tensor) or hx.ndim != 3:
        raise RuntimeError(f"{fn}: Expected hx to be a 3-D tensor (num_layers * num_directions, "
                           f"batch, hidden_size)")
    hidden = cx.shape[2] if cx is not None else hx.shape[2]
    proj = hx.shape[2] if cx is not None and hx.shape[2] != cx.shape[2] else 0
    params = _check_params(fn, params, has_biases, num_layers, dirs, proj)
    B = bs[0] if bs else 0
    if tuple(hx.shape) != (num_layers * dirs, B, proj or hidden):
        raise RuntimeError(f"Expected hidden size {(num_layers * dirs, B, proj or hidden)}, got "
                           f"{list(hx.shape)}")
    if cx is not None and tuple(cx.shape) != (num_layers * dirs, B, hidden):
        raise RuntimeError(f"Expected hidden size {(num_layers * dirs, B, hidden)}, got "
                           f"{list(cx.shape)}")
    if params[0].shape[1] != x.shape[-1]:
        raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                           f"{params[0].shape[1]}, got {x.shape[-1]}")
    cfg = RNNConfig(mode, num_layers, dirs, hidden, proj, has_biases, float(dropout),
                    bool(train), bs)
    return rnn_stack(x, hx, cx, cfg, params)


def _padded(fn, mode, input, hx, cx, params, has_biases, num_layers, dropout, train,
            bidirectional, batch_first):
    if not isinstance(input, Tensor):
        raise TypeError(f"{fn}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if input.ndim != 3:
        raise RuntimeError(f"{fn}: Expected input to be a 3-D tensor (seq_len, batch, "
                           f"input_size), got {input.ndim}-D")
    x3 = input.transpose(0, 1) if batch_first else input
    T, B = x3.shape[0], x3.shape[1]
    out, hn, cn = _run(fn, mode, x3.reshape(T * B, x3.shape[2]), [B] * T, hx, cx, params,
                       has_biases, num_layers, dropout, train, bidirectional)
    out = out.reshape(T, B, out.shape[1])
    return (out.transpose(0, 1) if batch_first else out), hn, cn


def _packed(fn, mode, data, batch_sizes, hx, cx, params, has_biases, num_layers, dropout, train,
            bidirectional):
    if not isinstance(batch_sizes, Tensor) or batch_sizes.ndim != 1:
        raise RuntimeError(f"{fn}: batch_sizes must be a 1-D tensor")
    bs = [int(b) for b in batch_sizes.tolist()]
    if any(b2 > b1 for b1, b2 in zip(bs, bs[1:])) or sum(bs) != data.shape[0]:
        raise RuntimeError(f"{fn}: batch_sizes {bs} must not increase and must sum to data's "
                           f"{data.shape[0]} rows")
    return _run(fn, mode, data, bs, hx, cx, params, has_biases, num_layers, dropout, train,
                bidirectional)


def lstm(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
         batch_first=None):
    """torch.lstm(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
    batch_first) -> (output, h_n, c_n), or with packed rows
    torch.lstm(data, batch_sizes, hx, params, has_biases, num_layers, dropout, train,
    bidirectional). hx is [h_0, c_0]; h_0's last size below c_0's means projections (w_hr
    after each layer's weights)."""
    if isinstance(hx, Tensor):  # the packed overload: (data, batch_sizes, hx, params, ...)
        data, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional = (
            input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
            batch_first)
        h0, c0 = _two_states(hx)
        return _packed("lstm", "LSTM", data, batch_sizes, h0, c0, params, has_biases,
                       num_layers, dropout, train, bidirectional)
    h0, c0 = _two_states(hx)
    return _padded("lstm", "LSTM", input, h0, c0, params, has_biases, num_layers, dropout,
                   train, bidirectional, bool(batch_first))


def _two_states(hx):
    if not isinstance(hx, (list, tuple)) or len(hx) != 2:
        raise RuntimeError("lstm expects two hidden states")
    return hx[0], hx[1]


def _one_state(fn, mode):
    def run(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
            batch_first=None):
        if isinstance(params, Tensor):  # packed: (data, batch_sizes, hx, params, ...)
            out, hn, _ = _packed(fn, mode, input, hx, params, None, has_biases, num_layers,
                                 dropout, train, bidirectional, batch_first)
            return out, hn
        out, hn, _ = _padded(fn, mode, input, hx, None, params, has_biases, num_layers,
                             dropout, train, bidirectional, bool(batch_first))
        return out, hn
    run.__name__ = fn
    run.__doc__ = (f"torch.{fn}(input, hx, params, has_biases, num_layers, dropout, train, "
                   f"bidirectional, batch_first) -> (output, h_n), or with packed rows "
                   f"torch.{fn}(data, batch_sizes, hx, params, has_biases, num_layers, dropout, "
                   f"train, bidirectional): the {mode} stack of nn.{mode.split('_')[0]}'s "
                   f"weights in ATen's flat order.")
    return run


gru = _one_state("gru", "GRU")
rnn_tanh = _one_state("rnn_tanh", "RNN_TANH")
rnn_relu = _one_state("rnn_relu", "RNN_RELU")


def miopen_rnn(input, weight, weight_stride0, hx, cx, mode, hidden_size, num_layers,
               batch_first, dropout, train, bidirectional, batch_sizes, dropout_state):
    """ATen's miopen_rnn -> (output, hy, cy, reserve, weight_buf): MIOpen's recurrent stack
    (mode 0 RNN_RELU, 1 RNN_TANH, 2 LSTM, 3 GRU; weight_stride0 tensors per layer and
    direction: 2 without biases, 4 with), on pygpu's RNN_CELL node. batch_sizes non-empty:
    input is packed rows. reserve and weight_buf are MIOpen's buffers in PyTorch; pygpu's
    node keeps none, so both are empty. cy is empty unless mode is LSTM."""
    if int(mode) not in _MODES:
        raise RuntimeError(f"miopen_rnn: Unknown miopen RNN mode: {mode}")
    kind = _MODES[int(mode)]
    if weight_stride0 not in (2, 4):
        raise RuntimeError(f"miopen_rnn: weight_stride0 must be 2 or 4, got {weight_stride0}")
    has_biases = weight_stride0 == 4
    lstm_mode = kind == "LSTM"
    if lstm_mode and cx is None:
        raise RuntimeError("miopen_rnn: LSTM needs cx")
    if hx.shape[2] != hidden_size:
        raise RuntimeError(f"miopen_rnn: Expected hidden size {hidden_size}, got "
                           f"{list(hx.shape)}")
    c0 = cx if lstm_mode else None
    if batch_sizes:
        from .._tensor.create import tensor
        out, hn, cn = _packed("miopen_rnn", kind, input, tensor(list(batch_sizes)), hx, c0,
                              weight, has_biases, num_layers, dropout, train, bidirectional)
    else:
        out, hn, cn = _padded("miopen_rnn", kind, input, hx, c0, weight, has_biases, num_layers,
                              dropout, train, bidirectional, bool(batch_first))
    from .._tensor.create import empty
    from .._dtype import uint8
    nothing = empty(0, dtype=input.dtype, device=input.device)
    return (out, hn, cn if cn is not None else nothing,
            empty(0, dtype=uint8, device=input.device), nothing)


def mkldnn_rnn_layer(input, weight0, weight1, weight2, weight3, hx_, cx_, reverse,
                     batch_sizes, mode, hidden_size, num_layers, has_biases, bidirectional,
                     batch_first, train):
    """ATen's mkldnn_rnn_layer -> (output, hy, cy, workspace): one direction of one LSTM
    layer as oneDNN runs it (PyTorch's mkldnn_rnn calls it per layer and direction):
    weight0/1 = w_ih (4H, I) / w_hh (4H, H), weight2/3 = b_ih / b_hh (ignored when
    has_biases is False), hx_/cx_ (B, H) without the layer dim, reverse: the sequence is
    read last step first and the output is given back in the input's time order (the
    backward half of a bidirectional layer). num_layers and bidirectional describe the
    enclosing stack and change nothing here; batch_sizes is unused (oneDNN takes no packed
    input). Runs pygpu's LSTM stack (RNN_CELL node, autograd through it). oneDNN has only
    the LSTM here (mode 2); other modes fail as its primitive does. The workspace is
    oneDNN's opaque buffer for its own backward; pygpu's node keeps none, so it is empty."""
    for i, (t, name) in enumerate(((input, "input"), (weight0, "weight0"), (weight1, "weight1"),
                                   (weight2, "weight2"), (weight3, "weight3"), (hx_, "hx_"),
                                   (cx_, "cx_")), 1):
        if not isinstance(t, Tensor):
            raise TypeError(f"mkldnn_rnn_layer(): argument '{name}' (position {i}) must be "
                            f"Tensor, not {type(t).__name__}")
    if int(mode) != 2:
        raise RuntimeError("could not create a primitive descriptor for the LSTM forward "
                           "propagation primitive. Run workload with environment variable "
                           "ONEDNN_VERBOSE=all to get additional diagnostic information.")
    if hx_.ndim != 2 or cx_.ndim != 2 or hx_.shape[1] != hidden_size:
        raise RuntimeError(f"mkldnn_rnn_layer: expected hx_ and cx_ of shape (batch, "
                           f"{hidden_size}), got {list(hx_.shape)} and {list(cx_.shape)}")
    x = input.transpose(0, 1) if batch_first else input
    if reverse:
        x = x.flip(0)
    params = [weight0, weight1, weight2, weight3] if has_biases else [weight0, weight1]
    out, hy, cy = lstm(x, (hx_.unsqueeze(0), cx_.unsqueeze(0)), params, bool(has_biases), 1,
                       0.0, bool(train), False, False)
    if reverse:
        out = out.flip(0)
    if batch_first:
        out = out.transpose(0, 1)
    from .._tensor.create import empty
    from .._dtype import uint8
    return out, hy[0], cy[0], empty(0, dtype=uint8, device=input.device)


FUNCTIONS = {"lstm": lstm, "gru": gru, "rnn_tanh": rnn_tanh, "rnn_relu": rnn_relu,
             "miopen_rnn": miopen_rnn, "mkldnn_rnn_layer": mkldnn_rnn_layer}
