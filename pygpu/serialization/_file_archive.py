"""torch.PyTorchFileReader and torch.PyTorchFileWriter: the zip archive of PyTorch's
checkpoint format, record by record, as caffe2/serialize/inline_container.cc reads and
writes it (and as torch/serialization.py uses it: save writes data.pkl, .format_version,
.storage_alignment, byteorder and data/<key> through write_record, the writer adds version,
byteorder when absent and .data/serialization_id at write_end_of_file).

Every record sits in one folder, the archive's name (the file's name without its extension,
"archive" for a buffer); names given to these classes are relative to it. Records are stored
uncompressed, each one's data padded (the "FB" extra field) to start on a multiple of the
storage alignment, so that a reader may map it. pygpu.save and pygpu.load use these classes
(_zip_format.py); a file torch writes reads here record for record, and the reverse.

Where PyTorch's writer differs: compute_crc32=False still writes the CRC (Python's zipfile
always computes it); write_record_metadata writes `size` zero bytes (PyTorch leaves the
bytes unwritten, for a meta-device save); a writer_func callable is not taken."""
import os
import secrets
import struct
import zipfile

_PAD_ID = 0x4246  # "FB": the extra field PyTorch pads local headers with
_LOCAL_HEADER = 30  # bytes of a zip local file header before its name
_MIN_VERSION = 3  # kMinProducedFileFormatVersion: the "version" record of a plain save
_ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError,
               struct.error, NotImplementedError, KeyError)
_MINIZ_NOTE = (" This is an internal miniz error. If you are seeing this error, there is a high "
               "likelihood that your checkpoint file is corrupted. This can happen if the "
               "checkpoint was not saved properly, was transferred incorrectly, or the file was "
               "modified after saving.")


def _padding(cursor, name_len, size, alignment):
    """Bytes of padding after a local header at `cursor` so its data starts aligned
    (inline_container.cc's getPadding: a zip64 header carries 20 bytes more)."""
    start = cursor + _LOCAL_HEADER + name_len + 4
    if size >= 0xFFFFFFFF or cursor >= 0xFFFFFFFF:
        start += 4 + (16 if size >= 0xFFFFFFFF else 0) + (8 if cursor >= 0xFFFFFFFF else 0)
    return start, (-start) % alignment


def _as_bytes(data, size):
    """write_record's data: bytes, a str, a storage (PyTorch's or pygpu's), a tensor."""
    if isinstance(data, str):
        data = data.encode()
    elif hasattr(data, "untyped_storage") and not isinstance(data, (bytes, bytearray)):
        data = data.untyped_storage()
    if hasattr(data, "_bytes"):  # pygpu's storage: its bytes, read back once
        data = data._bytes()
    elif callable(getattr(data, "nbytes", None)):  # PyTorch's storage
        data = bytes(data.cpu().numpy().tobytes()) if hasattr(data, "numpy") else \
            bytes(data.tolist())
    if isinstance(data, int) and not isinstance(data, bool):
        raise TypeError("write_record: a data pointer is not taken (PyTorch deprecates it); "
                        "pass the bytes or the storage")
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"write_record(): incompatible data of type {type(data).__name__}: "
                        "takes bytes, a str or a storage")
    view = memoryview(data).cast("B")
    if size < 0 or size > view.nbytes:
        raise RuntimeError(f"write_record: size {size} is outside the {view.nbytes} bytes given")
    return view[:size]


class PyTorchFileWriter:
    """PyTorchFileWriter(file_name or buffer, compute_crc32=True, storage_alignment=64)."""

    def __init__(self, file, compute_crc32=True, storage_alignment=64, *, _archive_name=None):
        if int(storage_alignment) <= 0:
            raise RuntimeError(f"storage_alignment must be positive, got {storage_alignment}")
        self._alignment = int(storage_alignment)
        self._owned = None
        if isinstance(file, (str, os.PathLike)):
            path = os.fspath(file)
            parent = os.path.dirname(os.path.abspath(path))
            if not os.path.isdir(parent):
                raise RuntimeError(f"Parent directory {parent} does not exist.")
            self._owned = self._stream = open(path, "wb")
            self._name = os.path.splitext(os.path.basename(path))[0]
        elif hasattr(file, "write"):
            self._stream, self._name = file, "archive"
        else:
            raise TypeError(f"PyTorchFileWriter: takes a file name or a buffer with write(), "
                            f"not {type(file).__name__}")
        if _archive_name is not None:  # pygpu.save to a path writes through a temporary file
            self._name = _archive_name
        self._zf = zipfile.ZipFile(self._stream, "w", zipfile.ZIP_STORED, allowZip64=True)
        self._written, self._finalized, self._version = set(), False, _MIN_VERSION
        self._id = ""

    def archive_name(self):
        return self._name

    def serialization_id(self):
        """The id written at write_end_of_file ("" before), 40 decimal digits as PyTorch's."""
        return self._id

    def get_all_written_records(self):
        return set(self._written)

    def set_min_version(self, version):
        self._version = max(self._version, int(version))

    def write_record(self, name, data, size):
        if self._finalized:
            raise RuntimeError("!finalized_: the archive was closed by write_end_of_file")
        if name in self._written:
            raise RuntimeError(f"Tried to serialize file twice: {name}")
        view = _as_bytes(data, int(size))
        full = f"{self._name}/{name}"
        zip64 = view.nbytes * 1.05 > zipfile.ZIP64_LIMIT
        # where Python's zipfile puts the data: after the header, the name, our padding field
        # (4 bytes of id and length, then the padding) and, for zip64, its 20-byte extra
        start = self._zf.fp.tell() + _LOCAL_HEADER + len(full.encode()) + 4 + \
            (20 if zip64 else 0)
        pad = (-start) % self._alignment
        info = zipfile.ZipInfo(full, date_time=(1980, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_STORED
        info.file_size = view.nbytes
        info.extra = struct.pack("<HH", _PAD_ID, pad) + b"Z" * pad
        with self._zf.open(info, "w", force_zip64=zip64) as out:
            out.write(view)
        self._written.add(name)

    def write_record_metadata(self, name, size):
        self.write_record(name, bytes(int(size)), int(size))

    def write_end_of_file(self):
        if self._finalized:
            raise RuntimeError("!finalized_: write_end_of_file was called already")
        if "version" not in self._written and ".data/version" not in self._written:
            self.write_record("version", f"{self._version}\n", len(f"{self._version}\n"))
        if "byteorder" not in self._written:
            self.write_record("byteorder", "little", 6)
        self._id = "".join(f"{secrets.randbits(64):020d}" for _ in range(2))
        self.write_record(".data/serialization_id", self._id, len(self._id))
        self._zf.close()
        self._finalized = True
        if self._owned is not None:
            self._owned.close()

    def __del__(self):  # PyTorch's writer finishes the archive when it is destroyed
        try:
            if not self._finalized:
                self.write_end_of_file()
        except Exception:  # a half-made writer (a refused argument) or a closed stream
            pass


class PyTorchFileReader:
    """PyTorchFileReader(file_name or buffer): the records of one archive."""

    def __init__(self, file):
        self._owned = None
        if isinstance(file, (str, os.PathLike)):
            path = os.fspath(file)
            try:
                self._owned = self._fp = open(path, "rb")
            except OSError as e:
                raise RuntimeError(f"open file failed because of errno {e.errno} on fopen: "
                                   f"{e.strerror}, file path: {path}") from None
        else:
            for need in ("read", "seek", "tell"):
                if not hasattr(file, need):
                    raise AttributeError(f"'{type(file).__name__}' object has no attribute "
                                         f"'{need}'")
            self._fp = file
        try:
            self._zf = zipfile.ZipFile(self._fp)
            infos = self._zf.infolist()
        except _ZIP_ERRORS as e:
            if self._owned is not None:
                self._owned.close()
            raise RuntimeError(f"PytorchStreamReader failed reading zip archive: not a ZIP "
                               f"archive ({e}).{_MINIZ_NOTE}") from None
        if not infos:
            raise RuntimeError("PytorchStreamReader failed reading zip archive: the archive "
                               "holds no records")
        first = infos[0].filename
        if "/" not in first:
            raise RuntimeError(f"file in archive is not in a subdirectory: {first}")
        self._prefix = first.split("/", 1)[0] + "/"
        self._infos = {i.filename[len(self._prefix):]: i for i in infos
                       if i.filename.startswith(self._prefix)}
        if "version" not in self._infos and ".data/version" not in self._infos:
            raise RuntimeError('Expected hasRecord("version") to be true, but got false.')

    def __del__(self):  # a file it opened itself is closed with it
        owned = getattr(self, "_owned", None)
        if owned is not None:
            owned.close()

    def _info(self, name):
        info = self._infos.get(name)
        if info is None:
            raise RuntimeError(f"PytorchStreamReader failed locating file {name}: file not "
                               f"found.{_MINIZ_NOTE}")
        return info

    def get_all_records(self):
        return list(self._infos)

    def has_record(self, name):
        return name in self._infos

    def get_record(self, name):
        info = self._info(name)
        try:
            return self._zf.read(info)
        except _ZIP_ERRORS as e:
            raise RuntimeError(f"PytorchStreamReader failed reading file {name}: {e}."
                               f"{_MINIZ_NOTE}") from None

    def get_record_size(self, name):
        return self._info(name).file_size

    def get_record_header_offset(self, name):
        return self._info(name).header_offset

    def get_record_offset(self, name):
        """Where the record's data starts in the file (after its local header)."""
        info = self._info(name)
        pos = self._fp.tell()
        try:
            self._fp.seek(info.header_offset)
            head = self._fp.read(_LOCAL_HEADER)
        finally:
            self._fp.seek(pos)
        if len(head) != _LOCAL_HEADER or head[:4] != b"PK\x03\x04":
            raise RuntimeError(f"PytorchStreamReader failed reading file {name}: a bad local "
                               f"header.{_MINIZ_NOTE}")
        name_len, extra_len = struct.unpack("<HH", head[26:30])
        return info.header_offset + _LOCAL_HEADER + name_len + extra_len

    def get_record_offset_no_read(self, header_offset, filename, size, storage_alignment):
        """The data offset a record written at header_offset would have (filename as in the
        archive, its folder included), without reading the file."""
        start, pad = _padding(int(header_offset), len(filename.encode()), int(size),
                              int(storage_alignment))
        return start + pad

    def serialization_id(self):
        if ".data/serialization_id" not in self._infos:
            return ""
        return self.get_record(".data/serialization_id").decode()

    def get_storage_from_record(self, name, numel, dtype):
        """A tensor of no elements whose storage holds the record (numel elements of dtype:
        anything not a dtype, PyTorch's UntypedStorage or a storage class, reads bytes)."""
        from .. import _dtype
        from .._tensor.create import empty
        from .._tensor.spellings import frombuffer
        from ._dtypes import BY_NAME
        if not isinstance(dtype, _dtype.DType):
            dtype = _dtype.uint8
        data = self.get_record(name)
        expected = int(numel) * dtype.itemsize
        if len(data) != expected:
            raise RuntimeError(f"record size ({len(data)} bytes) does not match expected size "
                               f"({expected} bytes = {int(numel)} elements * {dtype.itemsize} "
                               f"bytes/element) for dtype {_scalar_type_name(dtype, BY_NAME)}")
        whole = frombuffer(bytearray(data), dtype=dtype) if data else empty(0, dtype=dtype)
        return empty(0, dtype=dtype).set_(whole.untyped_storage(), 0, (0,))


def _scalar_type_name(dtype, rows):
    """PyTorch's ScalarType name of a dtype, as its messages write it ("Float", "Byte")."""
    row = rows.get(dtype.name)
    return row.storage[:-len("Storage")] if row is not None and row.storage else dtype.name
