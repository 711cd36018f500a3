"""A tensor's autograd fields that PyTorch keeps beside grad and grad_fn, and the removed
spellings old programs still touch.

  output_nr      which output of its grad_fn the tensor is: 0 for a leaf and for a
                 single-output op; for split/chunk/unbind/var_mean/std_mean/aminmax the
                 output's index (PyTorch makes one node with n outputs, pygpu one node per
                 output, which carries the index: autograd/engine.py's number_outputs).
  module_load    how Module.load_state_dict turns a state-dict value into what replaces
                 a parameter or buffer when pygpu.__future__.get_swap_module_params_on_conversion()
                 is on: `self.copy_(other).detach()`, or `other.detach()` with assign=True
                 (torch/_tensor.py's; a subclass overrides it).
  volatile       Variable.volatile, removed in PyTorch 0.4: reads False and setting it does
                 nothing, each with PyTorch's UserWarning.
  reinforce      removed with stochastic functions: raises PyTorch's RuntimeError, which
                 shows the torch.distributions form to write instead."""
import warnings

from .. import _C

Tensor = _C.Tensor


def _output_nr(self):
    fn = self.grad_fn
    return getattr(fn, "output_nr", 0) if fn is not None else 0


def module_load(self, other, assign=False):
    """What load_state_dict swaps into `self` (a parameter or buffer) for the state-dict
    value `other`: a new tensor, never `self` or `other` (PyTorch's rule for overrides)."""
    if assign:
        return other.detach()
    return self.copy_(other).detach()


def _get_volatile(self):
    warnings.warn("volatile was removed (Variable.volatile is always False)", UserWarning,
                  stacklevel=2)
    return False


def _set_volatile(self, value):
    warnings.warn("volatile was removed and now has no effect. Use `with torch.no_grad():` "
                  "instead.", UserWarning, stacklevel=2)


_REINFORCE_REMOVED = """reinforce() was removed.
Use torch.distributions instead.
See https://pytorch.org/docs/main/distributions.html

Instead of:

probs = policy_network(state)
action = probs.multinomial()
next_state, reward = env.step(action)
action.reinforce(reward)
action.backward()

Use:

probs = policy_network(state)
# NOTE: categorical is equivalent to what used to be called multinomial
m = torch.distributions.Categorical(probs)
action = m.sample()
next_state, reward = env.step(action)
loss = -m.log_prob(action) * reward
loss.backward()
"""


def reinforce(self, reward):
    """Removed from PyTorch (stochastic functions); always raises, as PyTorch's does."""
    raise RuntimeError(_REINFORCE_REMOVED)


METHODS = {
    "output_nr": property(_output_nr, doc="which output of its grad_fn this tensor is"),
    "module_load": module_load,
    "volatile": property(_get_volatile, _set_volatile,
                         doc="removed: always False (PyTorch's UserWarning)"),
    "reinforce": reinforce,
}
