"""pygpu.nn.utils: helpers over modules and their parameters, as torch.nn.utils
(clip_grad: gradient clipping; convert_parameters: parameters <-> one vector;
prune: weight pruning; rnn: packed sequences)."""
from . import clip_grad, convert_parameters, prune, rnn
from .clip_grad import clip_grad_norm_, clip_grad_value_, get_total_norm
from .convert_parameters import parameters_to_vector, vector_to_parameters

__all__ = ["clip_grad", "convert_parameters", "prune", "rnn", "clip_grad_norm_", "clip_grad_value_",
           "get_total_norm", "parameters_to_vector", "vector_to_parameters"]
