"""torch.serialization: pygpu.save / pygpu.load, in PyTorch's file format, without PyTorch.

save(obj, f) writes PyTorch's zip checkpoint (_zip_format.py, _torch_pickler.py) to any
path that does not end in ".safetensors", and to file objects: torch.load(f,
weights_only=True) reads it, and torch.load(f) of a whole pygpu module needs pygpu
importable, as any pickle of a class does. A ".safetensors" path gets safetensors
(_safetensors.py), written and read by the safetensors library.

load(f) tells the formats apart by their first bytes: PyTorch's zip format and its legacy
format (_torch_load.py), safetensors, and the pickle files pygpu wrote before
(_pygpu_pickle.py). weights_only=True, the default as in PyTorch 2.6, unpickles only
what a checkpoint holds (_weights_only.py, PyTorch's allowlist); weights_only=False
unpickles anything, for files you trust. map_location: None (each tensor where it was
saved), a device, a dict {saved: target}, or a callable: PyTorch's (storage, location)
or pygpu's (saved device) -> device. A tensor saved from a device this machine lacks is
a DeviceUnavailableError naming map_location.

Writes to a path are atomic: a temporary file in the destination's folder, fsync'ed, then
os.replace(), so a crash leaves the old checkpoint or the new one, never half of one.

add_safe_globals / safe_globals / get_safe_globals / clear_safe_globals extend what
weights_only=True accepts (a dataclass of hyper-parameters, say), as in PyTorch."""
import contextlib
import os
import pickle
import tempfile

from . import _weights_only
from ._safetensors import is_safetensors

__all__ = ["add_safe_globals", "clear_safe_globals", "get_safe_globals", "load", "safe_globals",
           "save"]


# ---- writing ------------------------------------------------------------------------------

def _fsync_dir(path):
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return  # some platforms cannot open a directory; the rename is still atomic
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def _atomic_stream(f):
    """A binary stream for `f`: the file object itself, or a temporary file renamed onto
    the path only when everything was written."""
    if hasattr(f, "write"):
        yield f
        return
    path = os.fspath(f)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp",
                               dir=folder)
    try:
        with os.fdopen(fd, "w+b") as out:
            yield out
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(folder)


def _is_safetensors_path(f):
    """Whether `f` (a path, or a file object opened from one) names a .safetensors file."""
    name = getattr(f, "name", None) if hasattr(f, "write") else f
    try:
        name = os.fspath(name)
    except TypeError:
        return False  # a buffer (io.BytesIO) or a file descriptor: no extension to go by
    return isinstance(name, str) and name.lower().endswith(".safetensors")


def save(obj, f, pickle_module=None, pickle_protocol=2, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False, *, metadata=None):
    """Write `obj` to `f` (a path, written atomically, or a binary file object).

    Any path but ".safetensors", and any file object: PyTorch's zip format, which
    torch.load(f, weights_only=True) reads for tensors, numbers, strings, dtypes and
    dicts/lists/tuples of them (state_dicts, optimizer states, training checkpoints);
    anything else pickles as pickle does. A ".safetensors" path: safetensors, a dict of
    tensors and plain values only; `metadata` adds str -> str entries to its header."""
    if pickle_module is not None and pickle_module is not pickle:
        raise NotImplementedError("pygpu.save: pickle_module is not supported")
    if pickle_protocol != 2:
        raise NotImplementedError("pygpu.save writes pickle protocol 2, as torch.save does")
    if not _use_new_zipfile_serialization:
        raise NotImplementedError("pygpu.save writes the zip format only; pygpu.load reads "
                                  "the legacy format too")
    if _is_safetensors_path(f):
        name = os.fspath(f) if not hasattr(f, "write") else f.name
        if not isinstance(obj, dict):
            raise TypeError(f"pygpu.save: {name} is a .safetensors path, which holds a dict of "
                            f"tensors (and numbers, strings, lists and dicts of them), not a "
                            f"{type(obj).__name__}; save its state_dict() there, or save it "
                            "to a .pt path (PyTorch's format)")
        from ._safetensors import to_bytes_file
        try:
            data = to_bytes_file(obj, metadata)
        except TypeError as e:
            raise TypeError(f"{e}. {name} is a .safetensors path: store plain values there, or "
                            "save to a .pt path (PyTorch's format)") from None
        with _atomic_stream(f) as out:  # nothing was written before this: a refusal keeps
            out.write(data)             # the old file
        return
    if metadata:
        raise TypeError("pygpu.save: metadata= is for .safetensors paths")
    from . import _zip_format
    if hasattr(f, "write") and not _seekable(f):
        import io
        buf = io.BytesIO()
        _zip_format.write(obj, buf)
        f.write(buf.getvalue())
        return
    with _atomic_stream(f) as out:  # a path names the archive's folder, as PyTorch's does
        _zip_format.write(obj, out, archive=_zip_format.archive_name_of(f))


def _seekable(f):
    try:
        return f.seekable()
    except (AttributeError, OSError, ValueError):
        return False


# ---- reading ------------------------------------------------------------------------------

def _read_all(f):
    if hasattr(f, "read"):
        return f.read(), getattr(f, "name", "<file object>")
    path = os.fspath(f)
    with open(path, "rb") as fh:
        return fh.read(), path


def load(f, map_location=None, pickle_module=None, *, weights_only=True, mmap=None,
         **pickle_load_args):
    """Read what pygpu.save or torch.save wrote (or any safetensors file) from a path or a
    binary file object. weights_only=True (the default, as in PyTorch 2.6) builds only
    tensors, numbers, strings, dtypes and containers of them, and raises
    pickle.UnpicklingError naming anything else; weights_only=False only for files you
    trust. map_location: see the module's docstring."""
    if pickle_module is not None and pickle_module is not pickle:
        raise NotImplementedError("pygpu.load: pickle_module is not supported")
    if weights_only is None:
        weights_only = True
    data, path = _read_all(f)
    from . import _pygpu_pickle, _torch_load, _zip_format
    if is_safetensors(data):
        from ._safetensors import load_bytes
        return load_bytes(data, path, map_location)
    if _zip_format.is_zip(data):
        archive = _zip_format.Archive(data, path)
        return _torch_load.load_zip(archive, map_location, weights_only)
    if data.startswith(_pygpu_pickle.MAGIC):
        return _pygpu_pickle.loads(data, map_location, weights_only)
    if _torch_load.is_legacy(data):
        return _torch_load.load_legacy(data, path, map_location, weights_only)
    if len(data) < 8:
        raise ValueError(f"pygpu.load: {path} is {len(data)} bytes long: not a checkpoint "
                         "(truncated?)")
    raise pickle.UnpicklingError(
        f"pygpu.load: {path} is none of the formats pygpu reads (PyTorch's zip or legacy "
        "checkpoint, safetensors): its first bytes are " + repr(data[:8]))


# ---- what weights_only=True may build besides a checkpoint's own types -------------------

def _key(obj):
    if isinstance(obj, tuple):  # (class, "module.Name") as PyTorch accepts
        obj, name = obj
        module, _, qual = name.rpartition(".")
        return (module, qual), obj
    return (obj.__module__, obj.__qualname__), obj


def add_safe_globals(safe_globals):
    """Allow load(weights_only=True) to unpickle these classes and functions."""
    for item in safe_globals:
        key, obj = _key(item)
        _weights_only.USER_SAFE[key] = obj


def get_safe_globals():
    return list(_weights_only.USER_SAFE.values())


def clear_safe_globals():
    _weights_only.USER_SAFE.clear()


class safe_globals:
    """`with torch.serialization.safe_globals([MyClass]):` allow them inside the block only."""

    def __init__(self, safe_globals):
        self._globals = list(safe_globals)
        self._before = None

    def __enter__(self):
        self._before = dict(_weights_only.USER_SAFE)
        add_safe_globals(self._globals)

    def __exit__(self, *exc):
        _weights_only.USER_SAFE.clear()
        _weights_only.USER_SAFE.update(self._before)
