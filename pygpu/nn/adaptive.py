"""nn.AdaptiveLogSoftmaxWithLoss: the adaptive softmax of Grave et al. (2016) with PyTorch's
interface (torch/nn/modules/adaptive.py): a head over the frequent classes (the shortlist)
and one entry per tail cluster, each cluster a two-layer projection of shrinking size.

forward(input, target) returns (output, loss): each row's log-probability of its target and
the mean negative. Rows are routed to their cluster with one index_select each and the
cluster's log-probabilities added back with index_add, so autograd differentiates it."""
import collections
import itertools

from .. import _C

from .._tensor import create as _tensor_create
from .._dtype import int64
from .._tensor.join import cat
from ._activations import log_softmax
from .layers import Linear, ModuleList, Sequential
from .module import Module

Tensor = _C.Tensor

_ASMoutput = collections.namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """AdaptiveLogSoftmaxWithLoss(in_features, n_classes, cutoffs, div_value=4.0,
    head_bias=False, device=None, dtype=None)."""

    def __init__(self, in_features, n_classes, cutoffs, div_value=4.0, head_bias=False,
                 device=None, dtype=None):
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted "
                             "in an increasing order, where each value is between 1 and "
                             "n_classes-1")
        self.in_features, self.n_classes = in_features, n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value, self.head_bias = div_value, head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, device=device,
                           dtype=dtype)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hsz = int(in_features // (div_value ** (i + 1)))
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(
                Linear(in_features, hsz, bias=False, device=device, dtype=dtype),
                Linear(hsz, osz, bias=False, device=device, dtype=dtype)))

    def reset_parameters(self):
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def forward(self, input_, target_):
        if target_.ndim == 1:
            if input_.shape[0] != target_.shape[0]:
                raise RuntimeError("Input and target should have the same size in the batch "
                                   "dimension.")
            if input_.ndim != 2:
                raise RuntimeError(f"1D target tensor expects 2D input tensors, but found "
                                   f"inputs with size {input_.shape}")
        elif target_.ndim == 0:
            if input_.ndim != 1:
                raise RuntimeError(f"0D target tensor expects 1D input tensors, but found "
                                   f"inputs with size {input_.shape}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        batched = target_.ndim > 0
        input = input_ if batched else input_.reshape(1, -1)
        target = target_ if batched else target_.reshape(1)
        B = target.shape[0]
        bad = (target < 0) | (target >= self.n_classes)
        if B and bool(bad.any().item()):
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but "
                               f"values in range [{target.min().item()}, "
                               f"{target.max().item()}] were found. ")
        # each row's cluster: 0 the shortlist, i the i-th tail cluster
        cluster = _tensor_create.zeros((B,), dtype=int64, device=target.device)
        for c in self.cutoffs[:-1]:
            cluster = cluster + (target >= c).astype(int64)
        head_index = target * (cluster == 0).astype(int64) + \
            (cluster + (self.shortlist_size - 1)) * (cluster > 0).astype(int64)
        head_logprob = log_softmax(self.head(input), 1)
        output = head_logprob.gather(1, head_index.reshape(B, 1)).reshape(B)
        for i in range(1, self.n_clusters + 1):
            rows = (cluster == i).nonzero().reshape(-1)
            if rows.shape[0] == 0:
                continue
            relative = target.index_select(0, rows) - self.cutoffs[i - 1]
            lp = log_softmax(self.tail[i - 1](input.index_select(0, rows)), 1)
            local = lp.gather(1, relative.reshape(-1, 1)).reshape(-1)
            zeros = _tensor_create.zeros((B,), dtype=local.dtype, device=local.device)
            output = output + zeros.index_add(0, rows, local)
        loss = (-output).mean()
        if not batched:
            output = output.reshape(())
        return _ASMoutput(output, loss)

    def _get_full_log_prob(self, input, head_output):
        head_logprob = log_softmax(head_output, 1)
        parts = [head_logprob[:, :self.shortlist_size]]
        for i, _ in enumerate(itertools.pairwise(self.cutoffs)):
            cluster_logprob = log_softmax(self.tail[i](input), 1)
            k = self.shortlist_size + i
            parts.append(cluster_logprob + head_logprob[:, k:k + 1])
        return cat(parts, 1)

    def log_prob(self, input):
        """The log-probabilities (N, n_classes) of every class."""
        return self._get_full_log_prob(input, self.head(input))

    def predict(self, input):
        """The most probable class of each row (log_prob(input).argmax(1), with the tails
        computed only where the head's best is a cluster)."""
        head_output = self.head(input)
        output = head_output.argmax(1)
        outside = output >= self.shortlist_size
        if not bool(outside.any().item()):
            return output
        if bool(outside.all().item()):
            return self._get_full_log_prob(input, head_output).argmax(1)
        rows = outside.nonzero().reshape(-1)
        best = self._get_full_log_prob(input.index_select(0, rows),
                                       head_output.index_select(0, rows)).argmax(1)
        keep = output * (~outside).astype(output.dtype)
        zeros = _tensor_create.zeros(output.shape, dtype=output.dtype, device=output.device)
        return keep + zeros.index_add(0, rows, best)
