"""The KL table's registry, as torch.distributions.kl's: register_kl fills it, kl_divergence
looks a pair of types up in it by torch's rule: among the registered pairs (P, Q) with p an
instance of P and q of Q, the most specific by p's type first and the most specific by q's
type first must be the same function, or a RuntimeWarning names the tie to register (torch's
words). A lookup is remembered per pair of types until the next register_kl. The forms
themselves are in kl.py (same family) and kl_cross.py (across families), which both
register here."""
import warnings

_KL = {}        # (type_p, type_q) -> function: what register_kl was given
_KL_MEMO = {}   # (type(p), type(q)) -> function or None: lookups since the last register


def register_kl(type_p, type_q):
    """@register_kl(P, Q): def kl(p, q) -> Tensor, the closed form of KL(p || q)."""
    from .distribution import Distribution
    for name, t in (("type_p", type_p), ("type_q", type_q)):
        if not (isinstance(t, type) and issubclass(t, Distribution)):
            raise TypeError(f"Expected {name} to be a Distribution subclass but got {t}")

    def decorate(fn):
        _KL[(type_p, type_q)] = fn
        _KL_MEMO.clear()  # a new pair may be more specific than a remembered one
        return fn
    return decorate


def _more_specific(a, b):
    """torch's _Match order: a <= b when, at the first type where they differ, a's is a
    subclass of b's (pairs compared left to right)."""
    for x, y in zip(a, b):
        if not issubclass(x, y):
            return False
        if x is not y:
            break
    return True


def _least(pairs):
    best = pairs[0]
    for m in pairs[1:]:
        if _more_specific(m, best) and m != best:
            best = m
    return best


def _lookup(tp, tq):
    matches = [(a, b) for (a, b) in _KL if issubclass(tp, a) and issubclass(tq, b)]
    if not matches:
        return None
    left_p, left_q = _least(matches)
    right_q, right_p = _least([(b, a) for (a, b) in matches])
    left, right = _KL[left_p, left_q], _KL[right_p, right_q]
    if left is not right:
        warnings.warn(f"Ambiguous kl_divergence({tp.__name__}, {tq.__name__}). "
                      f"Please register_kl({left_p.__name__}, {right_q.__name__})",
                      RuntimeWarning, stacklevel=3)
    return left


def kl_divergence(p, q):
    key = (type(p), type(q))
    if key not in _KL_MEMO:
        _KL_MEMO[key] = _lookup(*key)
    fn = _KL_MEMO[key]
    if fn is None:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type "
                                  f"{type(p).__name__} and q type {type(q).__name__}")
    return fn(p, q)
