"""Loading the C extension pygpu._C, and saying what to do when it cannot be.

Two jobs, both done before anything else in pygpu touches _C:

1. OpenBLAS. _C links against libscipy_openblas.so from the `scipy-openblas32`
   package (a runtime dependency). A regular install finds it through _C's
   rpath ($ORIGIN/../scipy_openblas32/lib, next to pygpu/ in site-packages).
   An editable install (`pip install -e .`) or `python setup.py build_ext
   --inplace` builds _C into the source tree, where that rpath leads nowhere
   and the build's temporary environment is gone. So the library is loaded
   here, from the installed scipy_openblas32, before _C: the dynamic loader then
   resolves _C's dependency on it by its soname. This is what the package's own
   `write__distributor_init` helper does for SciPy.

2. Messages. Importing pygpu from a source tree that has no built extension
   would otherwise end in Python's "partially initialized module" (circular
   import) message, which names neither the problem nor the fix. As NumPy does,
   say what happened and what to run."""
import ctypes
import glob
import importlib
import os
import sys
import sysconfig

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))


def preload_openblas():
    """Load libscipy_openblas from the installed scipy_openblas32, if there is one.
    Returns the library's path, or None (then _C's rpath must find it)."""
    try:
        import scipy_openblas32  # importing it loads the library too (RTLD_GLOBAL)
    except ImportError:
        return None
    path = os.path.join(scipy_openblas32.get_lib_dir(), f"lib{scipy_openblas32.get_library()}.so")
    if not os.path.exists(path):
        return None
    try:
        ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)  # a no-op if the import above loaded it
    except OSError:
        return None  # importing _C below then reports what the loader says
    return path


def _source_root():
    """The checkout that holds this pygpu/, when pygpu is imported from a source tree."""
    root = os.path.dirname(_PKG_DIR)
    if os.path.exists(os.path.join(root, "setup.py")) and os.path.isdir(os.path.join(root, "csrc")):
        return root
    return None


def _not_built_message():
    root = _source_root()
    others = sorted(os.path.basename(p) for p in glob.glob(os.path.join(_PKG_DIR, "_C*.so")))
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    if others:  # built, but for another Python
        what = (f"pygpu's C extension was built for another Python ({', '.join(others)}); "
                f"this Python ({sys.version.split()[0]}, {sys.executable}) needs _C{suffix}.")
    else:
        what = f"pygpu's C extension (pygpu._C) is not built: there is no _C{suffix} in {_PKG_DIR}."
    if root is not None:
        return (f"{what}\nYou are importing pygpu from its source tree ({root}) without a built "
                f"extension. Either build it in place:\n"
                f"    cd {root} && pip install -e .\n"
                f"(or, with the build requirements already installed: "
                f"python setup.py build_ext --inplace), or run Python from another directory to "
                f"use an installed pygpu.")
    return (f"{what}\nThis pygpu installation is incomplete; reinstall it "
            f"(pip install --force-reinstall --no-deps <path to the pygpu checkout>).")


def _load_failed_message(err):
    text = str(err)
    hint = ""
    if "openblas" in text.lower():
        hint = ("\nThe OpenBLAS library pygpu links against comes from the scipy-openblas32 "
                "package: install it with `pip install scipy-openblas32` (pip install does this for you).")
    return (f"pygpu's C extension (pygpu._C) was found in {_PKG_DIR} but could not be loaded: "
            f"{text}{hint}\nIf it was built by an older checkout or another Python, rebuild it: "
            f"`pip install -e .` from the checkout's root.")


def load():
    """Import and return pygpu._C, or raise an ImportError that says what to do."""
    preload_openblas()
    try:
        return importlib.import_module("pygpu._C")
    except ModuleNotFoundError as e:
        if e.name != "pygpu._C":
            raise
        raise ImportError(_not_built_message(), name="pygpu._C", path=_PKG_DIR) from None
    except ImportError as e:
        raise ImportError(_load_failed_message(e), name="pygpu._C", path=_PKG_DIR) from e
