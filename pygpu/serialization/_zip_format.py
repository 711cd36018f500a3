"""PyTorch's checkpoint file: a zip archive of a pickle and raw storages, both ways.

The archive, as torch/serialization.py's _save writes it (every record stored, not
compressed, its data aligned to 64 bytes so that a reader may map it):

    archive/data.pkl                 the object, pickled with protocol 2 (_torch_pickler.py)
    archive/.format_version          "1"
    archive/.storage_alignment       "64"
    archive/byteorder                "little"
    archive/data/<key>               each storage's raw bytes, little-endian
    archive/version                  "3"
    archive/.data/serialization_id   an id for this file

PyTorch names the folder after the file; readers (PyTorch's and this one) take whatever
single folder the records are in. read() opens an archive for _torch_unpickler.py: the
pickle and each storage record, checked for presence and size before any tensor is made."""
import io
import os
import struct
import zipfile

from ._torch_pickler import TorchPickler

ALIGNMENT = 64
_PAD_ID = 0x4246  # "FB": the extra field PyTorch pads local headers with
_LOCAL_HEADER = 30


class _NullSink:
    def write(self, b):
        return len(b)


def pickle_object(obj):
    """(the pickle's bytes, the storage records in key order)."""
    first = TorchPickler(_NullSink())
    first.dump(obj)  # the silent pass: every storage's span
    buf = io.BytesIO()
    second = TorchPickler(buf, spans=first.spans)
    second.dump(obj)
    return buf.getvalue(), second.records


def _aligned_info(zf, name, size):
    """A ZipInfo whose data will start on an ALIGNMENT boundary (padded extra field)."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    info.file_size = size
    zip64 = size * 1.05 > zipfile.ZIP64_LIMIT
    start = zf.fp.tell() + _LOCAL_HEADER + len(name.encode()) + 4 + (20 if zip64 else 0)
    pad = (-start) % ALIGNMENT
    info.extra = struct.pack("<HH", _PAD_ID, pad) + b"Z" * pad
    return info, zip64


def _record(zf, name, data):
    view = memoryview(data).cast("B")
    info, zip64 = _aligned_info(zf, name, view.nbytes)
    with zf.open(info, "w", force_zip64=zip64) as out:
        out.write(view)


def write(obj, stream, archive="archive"):
    """Write `obj` as PyTorch's zip checkpoint to a binary stream."""
    data_pkl, records = pickle_object(obj)
    with zipfile.ZipFile(stream, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
        _record(zf, f"{archive}/data.pkl", data_pkl)
        _record(zf, f"{archive}/.format_version", b"1")
        _record(zf, f"{archive}/.storage_alignment", str(ALIGNMENT).encode())
        _record(zf, f"{archive}/byteorder", b"little")
        for span in records:
            _record(zf, f"{archive}/data/{span.key}", span.data())
        _record(zf, f"{archive}/version", b"3\n")
        _record(zf, f"{archive}/.data/serialization_id", os.urandom(20).hex().encode())


def is_zip(head):
    return head[:4] == b"PK\x03\x04"


class Archive:
    """A PyTorch zip checkpoint opened for reading: data.pkl and the storage records."""

    def __init__(self, data, path):
        self.path = path
        try:
            self._zf = zipfile.ZipFile(io.BytesIO(data))
            names = self._zf.namelist()
        except (zipfile.BadZipFile, ValueError, OSError, EOFError, struct.error) as e:
            raise RuntimeError(f"PytorchStreamReader failed reading zip archive: {path} is not "
                               f"a valid zip archive ({e})") from None
        tops = {n.split("/", 1)[0] for n in names}
        if len(tops) != 1 or not all("/" in n for n in names):
            raise RuntimeError(f"PytorchStreamReader failed reading zip archive: {path} does not "
                               "hold one folder of records, as a PyTorch checkpoint does")
        self.prefix = tops.pop() + "/"
        self._names = set(names)
        if self.prefix + "data.pkl" not in self._names:
            raise RuntimeError(f"PytorchStreamReader failed locating file data.pkl: file not "
                               f"found in {path}")
        order = self.record("byteorder", optional=True)
        if order is not None and order not in (b"little", b"big"):
            raise RuntimeError(f"{path}: unknown byte order {order!r}")
        self.big_endian = order == b"big"

    def record(self, name, optional=False):
        full = self.prefix + name
        if full not in self._names:
            if optional:
                return None
            raise RuntimeError(f"PytorchStreamReader failed locating file {name}: file not "
                               f"found in {self.path}")
        try:
            return self._zf.read(full)
        except (zipfile.BadZipFile, ValueError, OSError, EOFError, struct.error,
                NotImplementedError) as e:
            raise RuntimeError(f"PytorchStreamReader failed reading file {name} of {self.path}: "
                               f"{e}") from None

    def storage(self, key, nbytes):
        """The raw bytes of storage `key`, which must hold exactly `nbytes`."""
        data = self.record(f"data/{key}")
        if len(data) != nbytes:
            raise RuntimeError(f"{self.path}: storage record data/{key} holds {len(data)} "
                               f"bytes but its tensors' storage needs {nbytes} (the file is "
                               "corrupt)")
        return data
