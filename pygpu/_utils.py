"""torch._utils' helpers that torch re-exports at its top level: classproperty, a property
of the class (read on the class or an instance, computed by a classmethod or staticmethod).
Nothing here imports pygpu (the values layer)."""


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
