"""biject_to and transform_to (torch.distributions.constraint_registry): for a constraint,
a transform from the reals onto it (biject_to's are bijective, for HMC-style
reparametrization; transform_to's may not be, for optimizers). Tables keyed by the
constraint's class, extended with register."""
from . import constraints, transforms

__all__ = ["ConstraintRegistry", "biject_to", "transform_to"]


class ConstraintRegistry:
    def __init__(self):
        self._registry = {}

    def register(self, constraint, factory=None):
        if factory is None:
            return lambda factory: self.register(constraint, factory)
        if isinstance(constraint, constraints.Constraint):
            constraint = type(constraint)
        if not isinstance(constraint, type) or not issubclass(constraint, constraints.Constraint):
            raise TypeError(f"Expected constraint to be either a Constraint subclass or "
                            f"instance, but got {constraint}")
        self._registry[constraint] = factory
        return factory

    def __call__(self, constraint):
        try:
            factory = self._registry[type(constraint)]
        except KeyError:
            raise NotImplementedError(f"Cannot transform {type(constraint).__name__} "
                                      f"constraints") from None
        return factory(constraint)


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()


def _real(constraint):
    return transforms.identity_transform


def _independent_bijective(constraint):
    base = biject_to(constraint.base_constraint)
    return transforms.IndependentTransform(base, constraint.reinterpreted_batch_ndims)


def _independent(constraint):
    base = transform_to(constraint.base_constraint)
    return transforms.IndependentTransform(base, constraint.reinterpreted_batch_ndims)


def _greater_than(constraint):
    return transforms.ComposeTransform([transforms.ExpTransform(),
                                        transforms.AffineTransform(constraint.lower_bound, 1)])


def _less_than(constraint):
    return transforms.ComposeTransform([transforms.ExpTransform(),
                                        transforms.AffineTransform(constraint.upper_bound, -1)])


def _interval(constraint):
    lower_is_0 = isinstance(constraint.lower_bound, (int, float)) and constraint.lower_bound == 0
    upper_is_1 = isinstance(constraint.upper_bound, (int, float)) and constraint.upper_bound == 1
    if lower_is_0 and upper_is_1:
        return transforms.SigmoidTransform()
    loc, scale = constraint.lower_bound, constraint.upper_bound - constraint.lower_bound
    return transforms.ComposeTransform([transforms.SigmoidTransform(),
                                        transforms.AffineTransform(loc, scale)])


def _simplex_bijective(constraint):
    return transforms.StickBreakingTransform()


def _simplex(constraint):
    return transforms.SoftmaxTransform()


def _lower_cholesky(constraint):
    return transforms.LowerCholeskyTransform()


def _corr_cholesky(constraint):
    return transforms.CorrCholeskyTransform()


def _positive_definite(constraint):
    return transforms.PositiveDefiniteTransform()


def _cat(registry, bijective):
    def make(constraint):
        return transforms.CatTransform([registry(c) for c in constraint.cseq], constraint.dim,
                                       constraint.lengths)
    return make


def _stack(registry):
    def make(constraint):
        return transforms.StackTransform([registry(c) for c in constraint.cseq], constraint.dim)
    return make


# (constraint classes, biject_to's factory, transform_to's factory): one row each
_ROWS = [
    ((constraints._Real,), _real, _real),
    ((constraints._IndependentConstraint,), _independent_bijective, _independent),
    ((constraints._GreaterThan, constraints._GreaterThanEq), _greater_than, _greater_than),
    ((constraints._LessThan,), _less_than, _less_than),
    ((constraints._Interval, constraints._HalfOpenInterval), _interval, _interval),
    ((constraints._Simplex,), _simplex_bijective, _simplex),
    ((constraints._LowerCholesky,), None, _lower_cholesky),
    ((constraints._CorrCholesky,), _corr_cholesky, _corr_cholesky),
    ((constraints._PositiveDefinite, constraints._PositiveSemidefinite), None, _positive_definite),
    ((constraints._Cat,), _cat(biject_to, True), _cat(transform_to, False)),
    ((constraints._Stack,), _stack(biject_to), _stack(transform_to)),
]


for _classes, _bij, _to in _ROWS:
    for _cls in _classes:
        if _bij is not None:
            biject_to.register(_cls, _bij)
        if _to is not None:
            transform_to.register(_cls, _to)
