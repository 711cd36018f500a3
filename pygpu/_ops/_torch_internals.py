"""The helpers of torch's private modules that torch re-exports publicly.

torch._jit_internal's, through torch.nn.functional: boolean_dispatch (one public function over
two implementations, chosen by a boolean argument, as F.max_pool2d(return_indices=...) is in
PyTorch), the BroadcastingList1..6 annotations (List[int] that also takes a single int, for
kernel_size-style arguments; in eager code subscripting one gives None, as in PyTorch), and
TorchScript's exception classes (torch.JITException, whose other name is torch.jit.Error, and
torch.FatalError). torch._utils', at torch's top level: classproperty.

Nothing here imports the rest of pygpu: nn.functional, jit and the package all read it."""

import weakref

# fn -> {"if_true", "if_false", "index", "default", "arg_name"}: what TorchScript reads to
# pick the implementation at compile time (the flag must be a constant there)
boolean_dispatched = weakref.WeakKeyDictionary()


def boolean_dispatch(arg_name, arg_index, default, if_true, if_false, module_name, func_name):
    """A function that calls if_true or if_false by the boolean argument `arg_name` (given by
    keyword, or positionally at `arg_index`; `default` when absent). Its docstring is the one
    of the two that has one; both having one is PyTorch's RuntimeError."""

    def fn(*args, **kwargs):
        dispatch_flag = default
        if arg_name in kwargs:
            dispatch_flag = kwargs[arg_name]
        elif arg_index < len(args):
            dispatch_flag = args[arg_index]
        return if_true(*args, **kwargs) if dispatch_flag else if_false(*args, **kwargs)

    if if_true.__doc__ is None and if_false.__doc__ is not None:
        if_true.__doc__ = doc = if_false.__doc__
    elif if_false.__doc__ is None and if_true.__doc__ is not None:
        if_false.__doc__ = doc = if_true.__doc__
    elif if_false.__doc__ is None and if_true.__doc__ is None:
        doc = None
    else:
        raise RuntimeError("only one function can have a docstring")
    fn.__doc__ = doc
    if module_name is not None:
        fn.__module__ = module_name
    if func_name is not None:
        fn.__name__ = func_name
    boolean_dispatched[fn] = {"if_true": if_true, "if_false": if_false, "index": arg_index,
                              "default": default, "arg_name": arg_name}
    return fn


class BroadcastingListCls:
    """BroadcastingList2[int]: an annotation TorchScript reads as List[int] of length 2 that
    also takes one int (broadcast); to eager code, subscripting it gives None."""

    def __getitem__(self, types):
        return


BroadcastingList1 = BroadcastingListCls()
BroadcastingList2 = BroadcastingList3 = BroadcastingList4 = BroadcastingList5 = \
    BroadcastingList6 = BroadcastingList1  # one object, as PyTorch's


class JITException(Exception):
    """An exception raised inside TorchScript code (torch.jit.Error)."""


JITException.__module__, JITException.__name__, JITException.__qualname__ = \
    "torch.jit", "Error", "Error"


class FatalError(Exception):
    """libtorch's fatal-error exception class (torch.FatalError)."""


FatalError.__module__ = "torch"


# ---- torch._utils -------------------------------------------------------------------------

class _ClassPropertyDescriptor:
    def __init__(self, fget, fset=None):
        self.fget = fget

    def __get__(self, instance, owner=None):
        if owner is None:
            owner = type(instance)
        return self.fget.__get__(instance, owner)()


def classproperty(func):
    """@classproperty def name(cls): ... -- read as C.name or C().name."""
    if not isinstance(func, (classmethod, staticmethod)):
        func = classmethod(func)
    return _ClassPropertyDescriptor(func)
