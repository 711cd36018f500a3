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
single folder the records are in. Both ways go through PyTorch's own classes
(_file_archive.py: PyTorchFileWriter, PyTorchFileReader), as torch/serialization.py does.
read() opens an archive for _torch_unpickler.py: the pickle and each storage record, checked
for presence and size before any tensor is made."""
import io
import os

from ._file_archive import PyTorchFileReader, PyTorchFileWriter
from ._torch_pickler import TorchPickler

ALIGNMENT = 64


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


def write(obj, stream, archive="archive"):
    """Write `obj` as PyTorch's zip checkpoint to a binary stream, records in torch.save's
    order (the writer adds version and serialization_id at the end)."""
    data_pkl, records = pickle_object(obj)
    zf = PyTorchFileWriter(stream, storage_alignment=ALIGNMENT, _archive_name=archive)
    zf.write_record("data.pkl", data_pkl, len(data_pkl))
    zf.write_record(".format_version", "1", 1)
    zf.write_record(".storage_alignment", str(ALIGNMENT), len(str(ALIGNMENT)))
    zf.write_record("byteorder", "little", 6)
    for span in records:
        data = memoryview(span.data()).cast("B")
        zf.write_record(f"data/{span.key}", data, data.nbytes)
    zf.write_end_of_file()


def archive_name_of(f):
    """The folder torch.save names after a path ("model" for model.pt), "archive" for a
    file object."""
    if hasattr(f, "write"):
        return "archive"
    return os.path.splitext(os.path.basename(os.fspath(f)))[0]


def is_zip(head):
    return head[:4] == b"PK\x03\x04"


class Archive:
    """A PyTorch zip checkpoint opened for reading: data.pkl and the storage records, with
    pygpu.load's checks (one folder, data.pkl present, a known byte order)."""

    def __init__(self, data, path):
        self.path = path
        try:
            self.reader = PyTorchFileReader(io.BytesIO(data))
        except RuntimeError as e:
            raise RuntimeError(f"PytorchStreamReader failed reading zip archive: {path} is not "
                               f"a valid PyTorch archive ({e})") from None
        names = self.reader._zf.namelist()
        if len({n.split("/", 1)[0] for n in names}) != 1 or not all("/" in n for n in names):
            raise RuntimeError(f"PytorchStreamReader failed reading zip archive: {path} does not "
                               "hold one folder of records, as a PyTorch checkpoint does")
        if not self.reader.has_record("data.pkl"):
            raise RuntimeError(f"PytorchStreamReader failed locating file data.pkl: file not "
                               f"found in {path}")
        order = self.record("byteorder", optional=True)
        if order is not None and order not in (b"little", b"big"):
            raise RuntimeError(f"{path}: unknown byte order {order!r}")
        self.big_endian = order == b"big"

    def record(self, name, optional=False):
        if optional and not self.reader.has_record(name):
            return None
        try:
            return self.reader.get_record(name)
        except RuntimeError as e:
            raise RuntimeError(f"{e} ({self.path})") from None

    def storage(self, key, nbytes):
        """The raw bytes of storage `key`, which must hold exactly `nbytes`."""
        data = self.record(f"data/{key}")
        if len(data) != nbytes:
            raise RuntimeError(f"{self.path}: storage record data/{key} holds {len(data)} "
                               f"bytes but its tensors' storage needs {nbytes} (the file is "
                               "corrupt)")
        return data
