"""torch.utils.hooks: the handle every register_*_hook returns (RemovableHandle), and the
two helpers PyTorch code imports from here.

A handle holds its hook dict weakly (a module that is gone is not kept alive by the handle
a caller kept) and removes its id from it, and from any extra dicts that share the id (a
module's with_kwargs / always_call sets), on remove() or when a `with` block ends."""
import warnings
import weakref
from collections import OrderedDict

__all__ = ["RemovableHandle", "unserializable_hook", "warn_if_has_hooks"]


class RemovableHandle:
    """A handle which provides the capability to remove a hook (torch.utils.hooks)."""

    id: int
    next_id: int = 0

    def __init__(self, hooks_dict, *, extra_dict=None):
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1
        self.extra_dict_ref = ()
        if isinstance(extra_dict, dict):
            self.extra_dict_ref = (weakref.ref(extra_dict),)
        elif isinstance(extra_dict, list):
            self.extra_dict_ref = tuple(weakref.ref(d) for d in extra_dict)

    def remove(self):
        hooks_dict = self.hooks_dict_ref()
        if hooks_dict is not None and self.id in hooks_dict:
            del hooks_dict[self.id]
        for ref in self.extra_dict_ref:
            extra = ref()
            if extra is not None and self.id in extra:
                del extra[self.id]

    def __getstate__(self):
        if self.extra_dict_ref:
            return (self.hooks_dict_ref(), self.id,
                    tuple(ref() for ref in self.extra_dict_ref))
        return (self.hooks_dict_ref(), self.id)

    def __setstate__(self, state):
        self.hooks_dict_ref = weakref.ref(OrderedDict() if state[0] is None else state[0])
        self.id = state[1]
        RemovableHandle.next_id = max(RemovableHandle.next_id, self.id + 1)
        self.extra_dict_ref = (() if len(state) < 3 else
                               tuple(weakref.ref(OrderedDict() if d is None else d)
                                     for d in state[2]))

    def __enter__(self):
        return self

    def __exit__(self, type, value, tb):
        self.remove()


def unserializable_hook(f):
    """Mark a hook as not serializable (PyTorch's marker; warn_if_has_hooks skips it)."""
    f.__torch_unserializable__ = True
    return f


def warn_if_has_hooks(tensor):
    """Warn that a tensor's backward hooks are not serialized with it."""
    hooks = getattr(tensor, "_backward_hooks", None)
    if hooks:
        for k in hooks:
            if not hasattr(hooks[k], "__torch_unserializable__"):
                warnings.warn(f"backward hook {repr(hooks[k])} on tensor will not be serialized."
                              "  If this is expected, you can decorate the function with "
                              "@torch.utils.hooks.unserializable_hook to suppress this warning")
