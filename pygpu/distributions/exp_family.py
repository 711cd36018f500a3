"""ExponentialFamily: the base of the families whose density is
p(x; theta) = exp(<t(x), theta> - F(theta) + k(x)), as torch.distributions.ExponentialFamily.
A subclass gives its natural parameters theta (_natural_params), the log normalizer F
(_log_normalizer) and E[k(x)] (_mean_carrier_measure); the generic entropy is then
F(theta) - <theta, grad F(theta)> - E[k(x)], with grad F from autograd, and kl.py's Bregman
divergence of F serves KL between two members of one family."""
from .distribution import Distribution


class ExponentialFamily(Distribution):
    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def entropy(self):
        """F(theta) - sum theta * dF/dtheta - E[k(x)] (autograd's gradient, kept in the
        graph so the entropy itself is differentiable)."""
        from ..autograd import grad
        result = -self._mean_carrier_measure
        nparams = [p.detach().requires_grad_() for p in self._natural_params]
        lg_normal = self._log_normalizer(*nparams)
        gradients = grad(lg_normal.sum(), nparams, create_graph=True)
        result = result + lg_normal
        for np_, g in zip(nparams, gradients):
            result = result - (np_ * g).reshape(self._batch_shape + (-1,)).sum(-1)
        return result
