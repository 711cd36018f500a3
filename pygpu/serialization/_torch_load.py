"""pygpu.load of a file torch.save wrote: the zip format and the legacy (pre-1.6) one.

Both hold a pickle whose persistent ids name storages ("storage", storage type, key,
location, numel[, view metadata]); they differ in where the storages' bytes are: a zip
record per storage (_zip_format.Archive), or, in the legacy format, one after the other
after the pickle, each an 8-byte element count and the elements. weights_only=True
unpickles with _weights_only.py; weights_only=False with pickle's own unpickler, PyTorch's
names resolved to pygpu's (torch.nn.Linear to pygpu.nn.Linear, ...), everything else
imported as pickle does: only for files you trust."""
import importlib
import io
import pickle
import pickletools
import struct
import sys

from ._rebuild import UNTYPED, LoadedStorage, StorageType, allowed_globals, place
from ._weights_only import WeightsOnlyUnpickler

LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
LEGACY_PROTOCOL = 1001


class _Storages:
    """persistent_load for one file: each storage key read once and placed once."""

    def __init__(self, read_bytes, map_location, big_endian=False):
        self._read, self._map, self._big = read_bytes, map_location, big_endian
        self.loaded = {}

    def __call__(self, pid):
        if not isinstance(pid, tuple) or len(pid) not in (5, 6):
            raise pickle.UnpicklingError(f"a persistent id {pid!r:.80} is not a storage record")
        tag, stype, key, location, numel = pid[:5]
        if isinstance(tag, bytes):
            tag = tag.decode("ascii")
        key = key.decode("ascii") if isinstance(key, bytes) else key
        location = location.decode("ascii") if isinstance(location, bytes) else location
        if tag != "storage" or not isinstance(stype, StorageType) or not isinstance(key, str) \
                or not isinstance(location, str) or not isinstance(numel, int) or numel < 0:
            raise pickle.UnpicklingError(f"a storage record {pid!r:.120} is malformed")
        if key not in self.loaded:
            row = stype.row
            if row is None:  # UntypedStorage: numel counts bytes
                from ._dtypes import BY_NAME
                row = BY_NAME["uint8"]
            raw = self._read(key, numel * row.itemsize)
            s = LoadedStorage(row, numel, location, raw, self._big)
            s = place(s, self._map)
            self.loaded[key] = s
        s = self.loaded[key]
        if stype is UNTYPED:
            return s
        if len(pid) == 6 and pid[5] is not None:  # legacy: a view into the root storage
            view_key, offset, size = pid[5]
            return _legacy_view(s, offset, size)
        return s


def _legacy_view(root, offset, size):
    if not (isinstance(offset, int) and isinstance(size, int) and offset >= 0 and size >= 0
            and offset + size <= root.numel):
        raise RuntimeError(f"a storage view [{offset}, +{size}) outside its root storage of "
                           f"{root.numel} elements")
    item = root.row.itemsize
    raw = None if root._raw is None else root._raw[offset * item:(offset + size) * item]
    return LoadedStorage(root.row, size, root.location, raw, root.big_endian, root.target)


def _torch_to_pygpu(module, name):
    """PyTorch's class for a full-model pickle, as pygpu's: torch.nn.modules.linear.Linear is
    pygpu.nn.Linear, torch.optim.adam.Adam pygpu.optim.Adam, ... (None: pygpu has none)."""
    pygpu = sys.modules[__name__.split(".")[0]]  # pygpu itself: this module is part of it
    parts = module.split(".")[1:]
    candidates = [".".join(parts)]
    if parts[:2] == ["nn", "modules"]:
        candidates.append("nn")
    if len(parts) > 1:
        candidates.append(parts[0])
    for cand in candidates:
        try:
            mod = importlib.import_module("pygpu" + ("." + cand if cand else ""))
        except ImportError:
            continue
        obj = getattr(mod, name, None)
        if obj is not None:
            return obj
    return getattr(pygpu, name, None)


class _FullUnpickler(pickle.Unpickler):
    """weights_only=False: any class, PyTorch's names resolved to pygpu's first."""

    def __init__(self, f, storages):
        super().__init__(f)
        self._storages = storages

    def find_class(self, module, name):
        full = f"{module}.{name}"
        allowed = allowed_globals()
        if full in allowed:
            return allowed[full]
        if module == "torch" or module.startswith("torch."):
            obj = _torch_to_pygpu(module, name)
            if obj is None:
                raise pickle.UnpicklingError(f"pygpu.load: the file needs {full}, which pygpu "
                                             "has no counterpart of")
            return obj
        return super().find_class(module, name)

    def persistent_load(self, pid):
        return self._storages(pid)


def unpickle(stream, storages, weights_only):
    if weights_only:
        return WeightsOnlyUnpickler(stream, storages).load()
    return _FullUnpickler(stream, storages).load()


def load_zip(archive, map_location, weights_only):
    storages = _Storages(archive.storage, map_location, archive.big_endian)
    return unpickle(io.BytesIO(archive.record("data.pkl")), storages, weights_only)


def is_legacy(head):
    """Whether a file starts like the legacy format (its first pickle is the magic number)."""
    return head[:2] == b"\x80\x02" and head[2:3] == pickle.LONG1 and \
        head[3:4] == b"\x0a" and head[4:14] == LEGACY_MAGIC.to_bytes(10, "little")


def load_legacy(data, path, map_location, weights_only):
    """The legacy format: magic, protocol and system-info pickles, the object's pickle, the
    pickled list of storage keys, then each storage's 8-byte element count and elements.
    The storages lie one after the other and only the pickle says each one's element size,
    so the object's pickle is read twice: once to learn the storages' types (over empty
    stand-ins), once over the real bytes."""
    f = io.BytesIO(data)

    def small():
        return WeightsOnlyUnpickler(f, _no_storage).load()
    if small() != LEGACY_MAGIC:
        raise RuntimeError(f"{path}: invalid magic number; corrupt file?")
    if small() != LEGACY_PROTOCOL:
        raise RuntimeError(f"{path}: invalid protocol version")
    info = small()
    if not isinstance(info, dict) or info.get("little_endian") is False:
        raise RuntimeError(f"{path}: a big-endian legacy checkpoint, which pygpu does not read")
    start = f.tell()
    try:
        end = None
        for _op, _arg, pos in pickletools.genops(f):  # the pickle's end, running nothing
            end = pos
    except (ValueError, EOFError) as e:
        raise pickle.UnpicklingError(f"{path}: the object's pickle is corrupt ({e})") from None
    f.seek(end + 1)
    keys = WeightsOnlyUnpickler(f, _no_storage).load()
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise pickle.UnpicklingError(f"{path}: the list of storage keys is corrupt")
    first_storages = f.tell()
    sizes = {}  # key -> itemsize, from the first pass's persistent ids

    def learn(key, nbytes):
        return None  # an empty stand-in (LoadedStorage.tensor makes it uninitialized)
    learner = _Storages(learn, "cpu")
    f.seek(start)
    unpickle(f, learner, weights_only=True if weights_only else False)
    for key, s in learner.loaded.items():
        sizes[key] = s.row.itemsize
    where, pos = {}, first_storages
    for k in keys:
        if len(data) < pos + 8:
            raise RuntimeError(f"{path}: the file ends inside storage {k} (truncated?)")
        (count,) = struct.unpack("<q", data[pos:pos + 8])
        item = sizes.get(k)
        if item is None:
            raise pickle.UnpicklingError(f"{path}: storage {k} is listed but never used")
        if count < 0 or pos + 8 + count * item > len(data):
            raise RuntimeError(f"{path}: storage {k} claims {count} elements; the file is "
                               "truncated or corrupt")
        where[k] = (pos + 8, count * item)
        pos += 8 + count * item

    def read(key, nbytes):
        if key not in where or where[key][1] != nbytes:
            raise RuntimeError(f"{path}: storage {key} does not hold the {nbytes} bytes its "
                               "tensors need")
        at, n = where[key]
        return data[at:at + n]
    f.seek(start)
    return unpickle(f, _Storages(read, map_location), weights_only)


def _no_storage(pid):
    raise pickle.UnpicklingError("a storage record where none may be")
