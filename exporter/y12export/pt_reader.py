"""Restricted reader of PyTorch zip checkpoints (`torch.save` format, as Ultralytics writes them).

A `.pt` file is a zip archive: `<prefix>/data.pkl` is a pickle of the checkpoint object, each tensor
storage is a raw little-endian file `<prefix>/data/<key>`, and `<prefix>/byteorder` (optional) says
"little" or "big".

Security model. A pickle is a small program: its GLOBAL opcodes name any importable function and its
REDUCE opcodes call them. This reader executes none of it:
  * GLOBAL resolves only through `find_class` below. A short allow-list maps a few names to *our own*
    harmless functions (tensor and parameter rebuilders, OrderedDict, set, torch.Size, ...). Storage
    classes (torch.HalfStorage, ...) and dtypes map to inert markers.
  * `builtins` names outside the allow-list (eval, exec, getattr, __import__, ...) are refused at once.
  * Every other global becomes an inert `Record` class that remembers its dotted name. Python's
    NEWOBJ opcode (how torch modules are pickled) creates an empty Record; BUILD stores its state dict.
    Calling a Record class (REDUCE, INST, OBJ) is refused, so `os.system(...)` and friends are never
    called: the name `os.system` is only a label.
  * Tensor data are read with explicit bounds checks; nothing is memory-mapped or trusted.
  * Every size is bounded before anything is allocated for it (y12export/limits.py): the file, the
    zip directory, data.pkl, what the allowed constructors build, the storages, a compressed member's
    expansion, and the tensors over one storage (views, never more elements than the storage).
The result is plain Python data (dict, list, tuple, str, numbers), numpy arrays for tensors, and
Records for objects.
"""

import collections
import io
import math
import os
import pathlib
import pickle
import struct
import zipfile

import numpy as np

from . import limits
from .errors import ExportError


class Record:
    """An inert stand-in for an object of a class we do not import: its class name and state."""

    cls = "?"  # dotted class name, e.g. "ultralytics.nn.modules.conv.Conv"

    def __new__(cls, *args, **kwargs):  # NEWOBJ: create without running any constructor
        obj = object.__new__(cls)
        obj.state = {}
        obj.newobj_args = args
        return obj

    def __init__(self, *args, **kwargs):  # only reached when the pickle *calls* the class
        raise ExportError(f"refusing to call {self.cls}: the checkpoint's pickle tries to run code")

    def __setstate__(self, state):
        if isinstance(state, tuple) and len(state) == 2:  # (dict state, slot state): torch modules have no slots
            slots = state[1] or {}
            if not isinstance(slots, dict) or len(slots) > 256:
                raise ExportError(f"corrupt checkpoint: bad slot state of a {self.cls[:60]}")
            state = state[0] if isinstance(state[0], dict) else {}
            state.update(slots)
        self.state = state if isinstance(state, dict) else {"__state__": state}

    def __repr__(self):
        return f"<{self.cls}>"

    @property
    def name(self):
        """Class name without its module: "Conv"."""
        return self.cls.rsplit(".", 1)[-1]


_record_classes = {}


def _record_class(dotted):
    """The Record subclass standing for the global `dotted` (one per name)."""
    if dotted not in _record_classes:
        _record_classes[dotted] = type(dotted.rsplit(".", 1)[-1], (Record,), {"cls": dotted})
    return _record_classes[dotted]


class StorageType:
    """Marker for torch.<X>Storage: only its element dtype matters."""

    def __init__(self, name, dtype):
        self.name, self.dtype = name, dtype

    def __call__(self, *args, **kwargs):
        raise ExportError(f"refusing to call torch.{self.name}: the checkpoint's pickle tries to run code")


class TorchDtype:
    """Marker for a torch dtype global such as torch.float16."""

    def __init__(self, name):
        self.name = name

    def __call__(self, *args, **kwargs):
        raise ExportError(f"refusing to call torch.{self.name}: the checkpoint's pickle tries to run code")


_STORAGE_DTYPES = {
    "HalfStorage": "<f2", "FloatStorage": "<f4", "DoubleStorage": "<f8", "BFloat16Storage": "bf16",
    "LongStorage": "<i8", "IntStorage": "<i4", "ShortStorage": "<i2", "CharStorage": "i1",
    "ByteStorage": "u1", "BoolStorage": "?",
}
_TORCH_DTYPES = {"float16", "float32", "float64", "bfloat16", "int64", "int32", "int16", "int8",
                 "uint8", "bool", "half", "float", "double", "long", "int"}


class _Load:
    """The state of one load_checkpoint: the allow-listed constructors, bound to two budgets.

    * Everything they build is charged to a budget of MAX_PICKLE_BUILT_BYTES (a bytes object by its
      length, a container by 8 bytes an item): a pickle can name one large memoized object many
      times, and each call that copies it would otherwise cost its full size again.
    * Tensors are views of their storage (no copy), and the tensors over one storage may not hold
      more elements than the storage: checkpoints never hold overlapping views, and 64 tensors over
      one 32 MiB storage would otherwise become 2 GiB of copies downstream.
    """

    def __init__(self):
        self.built = 0
        self.viewed = {}  # id(storage array) -> elements of the tensors over it

    def charge(self, nbytes, what):
        self.built += nbytes
        if self.built > limits.MAX_PICKLE_BUILT_BYTES:
            raise ExportError(f"the checkpoint's pickle builds more than {limits.MAX_PICKLE_BUILT_BYTES:,} bytes of "
                              f"objects (at {what}); a real checkpoint builds a few hundred KB")

    def sized(self, fn, what, *args):
        """fn(*args) for a container constructor, charged by the size of its argument."""
        if len(args) > 1:
            raise ExportError(f"corrupt checkpoint: {what} with {len(args)} arguments")
        if args:
            try:
                n = len(args[0])
            except TypeError:
                raise ExportError(f"corrupt checkpoint: {what} of a {type(args[0]).__name__}") from None
            self.charge(8 * n, what)
        return fn(*args)

    def ordered_dict(self, *args):
        return self.sized(collections.OrderedDict, "OrderedDict", *args)

    def set_(self, *args):
        return self.sized(set, "set", *args)

    def frozenset_(self, *args):
        return self.sized(frozenset, "frozenset", *args)

    def list_(self, *args):
        return self.sized(list, "list", *args)

    def tuple_(self, *args):
        return self.sized(tuple, "tuple", *args)

    def dict_(self, *args):
        return self.sized(dict, "dict", *args)

    def slice_(self, *args):
        if len(args) > 3:
            raise ExportError("corrupt checkpoint: slice with more than 3 arguments")
        return slice(*args)

    def bytearray_(self, *args):
        """bytearray(bytes) or bytearray(str, "latin-1") as pickles write them; never bytearray(size)."""
        ok = (not args or (len(args) == 1 and isinstance(args[0], (bytes, bytearray)))
              or (len(args) == 2 and isinstance(args[0], str) and args[1] in ("latin-1", "latin1")))
        if not ok:
            raise ExportError(f"refusing bytearray{_short_args(args)} in the checkpoint's pickle "
                              "(only bytearray(bytes) is allowed: a size would allocate that many bytes)")
        if args:
            self.charge(len(args[0]), "bytearray")
        return bytearray(args[0], args[1]) if len(args) == 2 else bytearray(*args)

    def codecs_encode(self, text, encoding="utf-8"):
        """Protocol-2 pickles write bytes objects as _codecs.encode(str, "latin1")."""
        if not isinstance(text, str) or encoding != "latin1":
            raise ExportError("refusing _codecs.encode other than the latin1 bytes idiom")
        self.charge(len(text), "_codecs.encode")
        return text.encode("latin1")

    def torch_size(self, *args):
        return self.sized(tuple, "torch.Size", *args[:1])

    def torch_device(self, *args):
        if len(args) > 2 or not all(isinstance(a, (str, int)) for a in args):
            raise ExportError("corrupt checkpoint: bad torch.device")
        return "device:" + ":".join(str(a)[:32] for a in args)

    def path(self, *parts):
        if len(parts) > 256 or not all(isinstance(p, str) for p in parts):
            raise ExportError("corrupt checkpoint: bad path")
        self.charge(sum(len(p) for p in parts), "pathlib path")
        return str(pathlib.PurePosixPath(*parts))  # a pure path: string handling only, no file access

    def numpy_array_state(self, array, state):
        self.charge(len(state[4]) if isinstance(state, tuple) and len(state) == 5 and hasattr(state[4], "__len__") else 0,
                    "numpy array")
        array.set_from(state)

    def numpy_reconstruct(self, cls, shape, typecode):
        if getattr(cls, "cls", "") != "numpy.ndarray":
            raise ExportError("refusing numpy _reconstruct of a class other than ndarray")
        return _NumpyArray(self)

    def rebuild_tensor_v2(self, storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None,
                          metadata=None):
        """A read-only view of the storage (checked: in bounds, no overlap with other tensors' counts)."""
        if not isinstance(storage, np.ndarray):
            raise ExportError("corrupt checkpoint: a tensor does not refer to a storage")
        if not isinstance(size, tuple) or not isinstance(stride, tuple) or len(size) > 16:
            raise ExportError("corrupt checkpoint: a tensor with a bad size or stride")
        for v in (storage_offset, *size, *stride):
            if not isinstance(v, int) or v < 0:
                raise ExportError("corrupt checkpoint: a tensor has a negative or non-integer size/stride/offset")
        if len(size) != len(stride):
            raise ExportError("corrupt checkpoint: a tensor's size and stride differ in rank")
        count = math.prod(size)
        if count == 0:
            return np.zeros(0, dtype=storage.dtype).reshape(size)
        if count > storage.size - storage_offset:  # checkpoints never hold overlapping (expanded) views
            raise ExportError("corrupt checkpoint: a tensor has more elements than its storage")
        last = storage_offset + sum((n - 1) * st for n, st in zip(size, stride))
        if last >= storage.size:
            raise ExportError("corrupt checkpoint: a tensor reaches past the end of its storage")
        seen = self.viewed.get(id(storage), 0) + count
        if seen > storage.size:
            raise ExportError(f"corrupt checkpoint: the tensors over one storage hold {seen:,} elements, more than its "
                              f"{storage.size:,} (overlapping tensors are not supported)")
        self.viewed[id(storage)] = seen
        item = storage.itemsize
        view = np.lib.stride_tricks.as_strided(storage[storage_offset:], shape=size,
                                               strides=[st * item for st in stride], writeable=False)
        return view

    # (module, name) -> the method a GLOBAL of that name resolves to; nothing else is callable.
    ALLOWED = {
        ("torch._utils", "_rebuild_tensor_v2"): "rebuild_tensor_v2",
        ("torch._utils", "_rebuild_parameter"): "rebuild_parameter",
        ("torch._utils", "_rebuild_parameter_with_state"): "rebuild_parameter",
        ("collections", "OrderedDict"): "ordered_dict",
        ("builtins", "set"): "set_",
        ("builtins", "frozenset"): "frozenset_",
        ("builtins", "slice"): "slice_",
        ("builtins", "bytearray"): "bytearray_",
        ("builtins", "list"): "list_",
        ("builtins", "tuple"): "tuple_",
        ("builtins", "dict"): "dict_",
        ("torch", "Size"): "torch_size",
        ("torch", "device"): "torch_device",
        ("pathlib", "PosixPath"): "path",
        ("pathlib", "WindowsPath"): "path",
        ("pathlib", "PurePosixPath"): "path",
        ("numpy.core.multiarray", "scalar"): "numpy_scalar",
        ("numpy._core.multiarray", "scalar"): "numpy_scalar",
        ("numpy", "dtype"): "numpy_dtype",
        ("numpy.core.multiarray", "_reconstruct"): "numpy_reconstruct",
        ("numpy._core.multiarray", "_reconstruct"): "numpy_reconstruct",
        ("copyreg", "_reconstructor"): "reconstructor",
        ("_codecs", "encode"): "codecs_encode",
    }

    @staticmethod
    def rebuild_parameter(data, *rest):
        return data

    @staticmethod
    def numpy_scalar(dtype, data=None):
        dtype = dtype.dt if isinstance(dtype, _NumpyDtype) else None
        if dtype is None or not isinstance(data, (bytes, bytearray)):
            raise ExportError("corrupt checkpoint: bad numpy scalar")
        if dtype.hasobject or len(data) != dtype.itemsize or dtype.itemsize > 64:
            raise ExportError("corrupt checkpoint: bad numpy scalar")
        return np.frombuffer(bytes(data), dtype=dtype)[0].item()

    @staticmethod
    def numpy_dtype(spec, align=False, copy=False):
        if not isinstance(spec, str) or len(spec) > 8:
            raise ExportError("corrupt checkpoint: bad numpy dtype")
        dt = np.dtype(spec)
        if dt.hasobject:
            raise ExportError("refusing a numpy object dtype in the checkpoint")
        return _NumpyDtype(dt)

    @staticmethod
    def reconstructor(cls, base, state=None):  # copyreg._reconstructor for protocol 0/1 objects
        if not (isinstance(cls, type) and issubclass(cls, Record)):
            raise ExportError("refusing copyreg._reconstructor on a non-record class")
        return cls.__new__(cls)


def _short_args(args):
    """A call's arguments for a message, never dumped whole."""
    text = repr(args)
    return text if len(text) <= 40 else text[:37] + "..."


class _NumpyDtype:
    """np.dtype is pickled as dtype(spec) then BUILD(state); we keep the dtype and ignore the state."""

    def __init__(self, dt):
        self.dt = dt

    def __setstate__(self, state):
        pass


class _NumpyArray:
    """np.ndarray is pickled as _reconstruct(ndarray, (0,), b"b") then BUILD((version, shape, dtype,
    fortran, raw bytes)); we rebuild it from the raw bytes only (object arrays are refused)."""

    def __init__(self, load):
        self._load = load

    def __setstate__(self, state):
        self._load.numpy_array_state(self, state)

    def set_from(self, state):
        if not (isinstance(state, tuple) and len(state) == 5 and isinstance(state[2], _NumpyDtype)
                and isinstance(state[4], (bytes, bytearray)) and isinstance(state[1], tuple)):
            raise ExportError("corrupt checkpoint: bad numpy array")
        _, shape, dtype, fortran, raw = state
        if len(shape) > 16 or not all(isinstance(n, int) and n >= 0 for n in shape):
            raise ExportError("corrupt checkpoint: bad numpy array shape")
        if len(raw) != math.prod(shape) * dtype.dt.itemsize:
            raise ExportError("corrupt checkpoint: numpy array size does not match its data")
        self.array = np.frombuffer(bytes(raw), dtype=dtype.dt).reshape(shape, order="F" if fortran else "C")


# The pure-Python unpickler: its memo is a dict, so a hostile LONG_BINPUT index cannot make it allocate
# a giant memo table (the C unpickler sizes an array by the largest index).
class _RestrictedUnpickler(pickle._Unpickler):
    def __init__(self, fileobj, load_storage):
        super().__init__(fileobj)
        self._load_storage = load_storage
        self._state = _Load()

    def find_class(self, module, name):
        module = {"__builtin__": "builtins", "copy_reg": "copyreg"}.get(module, module)  # protocol 2 names
        method = _Load.ALLOWED.get((module, name))
        if method is not None:
            return getattr(self._state, method)
        if module == "torch" and name in _STORAGE_DTYPES:
            return StorageType(name, _STORAGE_DTYPES[name])
        if module == "torch" and name in _TORCH_DTYPES:
            return TorchDtype(name)
        if module in ("builtins", "copyreg") or "." in name:
            raise ExportError(f"refusing global {module[:60]}.{name[:60]} in the checkpoint's pickle (not on the allow-list)")
        return _record_class(f"{module}.{name}")

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise ExportError(f"corrupt checkpoint: unknown persistent id {_short_args(pid)}")
        _, storage_type, key, _location, numel = pid
        if not isinstance(storage_type, StorageType) or not isinstance(key, str) or not isinstance(numel, int) \
                or numel < 0 or len(key) > 64:
            raise ExportError(f"corrupt checkpoint: bad storage reference {_short_args(pid)}")
        return self._load_storage(key, storage_type, numel)


def _zip_directory_size(path, size):
    """(entries, bytes) of a zip's central directory as its end records declare them, the largest of
    the classic and the zip64 record (zipfile trusts the zip64 one); (0, 0) when there is none."""
    with open(path, "rb") as f:
        tail_len = min(size, 22 + 65535 + 20 + 56)
        f.seek(size - tail_len)
        tail = f.read(tail_len)
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or at + 22 > len(tail):
        return 0, 0
    entries, cd_size = struct.unpack("<HI", tail[at + 10:at + 16])
    loc = at - 20
    if loc >= 56 and tail[loc:loc + 4] == b"PK\x06\x07" and tail[loc - 56:loc - 52] == b"PK\x06\x06":
        e64, s64 = struct.unpack("<QQ", tail[loc - 56 + 32:loc - 56 + 48])
        entries, cd_size = max(entries, e64), max(cd_size, s64)
    return entries, cd_size


def _read_member(archive, path, info, nbytes, what):
    """The first nbytes of a zip member, its declared sizes checked before anything is read."""
    if info.file_size < nbytes:
        raise ExportError(f"{path}: {what} holds {info.file_size} bytes, needs {nbytes}")
    if info.compress_type != zipfile.ZIP_STORED and info.file_size > limits.MiB + limits.MAX_EXPANSION * info.compress_size:
        raise ExportError(f"{path}: {what} expands from {info.compress_size:,} to {info.file_size:,} bytes "
                          f"(more than {limits.MAX_EXPANSION}x: a zip bomb?)")
    with archive.open(info) as f:
        data = f.read(nbytes)
    if len(data) != nbytes:
        raise ExportError(f"{path}: {what} is truncated")
    return data


def load_checkpoint(path):
    """Reads a torch.save zip checkpoint without executing code; returns the unpickled object."""
    size = os.path.getsize(path)
    if size > limits.MAX_INPUT_BYTES:
        raise ExportError(f"{path}: {size:,} bytes, above the exporter's limit of {limits.MAX_INPUT_BYTES:,}")
    entries, cd_size = _zip_directory_size(path, size)
    if cd_size > limits.MAX_ZIP_DIRECTORY_BYTES:
        raise ExportError(f"{path}: the zip directory declares {entries:,} members in {cd_size:,} bytes, above the "
                          f"limit of {limits.MAX_ZIP_DIRECTORY_BYTES:,} bytes")
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError) as e:
        if _is_legacy_pickle(path):
            raise ExportError(f"{path}: a legacy (pre-zip) torch checkpoint; re-save it with a recent torch")
        raise ExportError(f"{path}: not a PyTorch zip checkpoint ({e})")
    with archive:
        try:
            members = {i.filename: i for i in archive.infolist()}
            pickles = [n for n in members if n.endswith("/data.pkl") or n == "data.pkl"]
            if len(pickles) != 1:
                raise ExportError(f"{path}: expected one data.pkl in the zip, found {len(pickles)}")
            prefix = pickles[0][: -len("data.pkl")]
            big_endian = False
            if prefix + "byteorder" in members:
                info = members[prefix + "byteorder"]
                order = _read_member(archive, path, info, min(info.file_size, 16), "byteorder")
                order = order.decode("ascii", "replace").strip()
                if order not in ("little", "big"):
                    raise ExportError(f"{path}: unknown byteorder {order[:16]!r}")
                big_endian = order == "big"
            storages = {}
            read_total = [0]

            def load_storage(key, storage_type, numel):
                if key in storages:
                    return storages[key]
                member = prefix + "data/" + key
                if member not in members:
                    raise ExportError(f"{path}: storage {key} is missing from the zip")
                dtype = storage_type.dtype
                if dtype == "bf16":  # bfloat16: the top half of a float32
                    itemsize = 2
                else:
                    dtype = np.dtype(dtype)
                    if big_endian:
                        dtype = dtype.newbyteorder(">")
                    itemsize = dtype.itemsize
                nbytes = numel * itemsize
                read_total[0] += nbytes
                if read_total[0] > limits.MAX_STORAGE_BYTES:
                    raise ExportError(f"{path}: the tensor storages hold more than {limits.MAX_STORAGE_BYTES:,} bytes "
                                      "(the exporter's limit)")
                raw = _read_member(archive, path, members[member], nbytes, f"storage {key}")
                if storage_type.dtype == "bf16":
                    u16 = np.frombuffer(raw, dtype=">u2" if big_endian else "<u2").astype(np.uint32)
                    arr = (u16 << 16).view(np.float32)
                elif big_endian:
                    arr = np.frombuffer(raw, dtype=dtype).astype(dtype.newbyteorder("="))
                else:
                    arr = np.frombuffer(raw, dtype=dtype)
                storages[key] = arr
                return arr

            info = members[pickles[0]]
            if info.file_size > limits.MAX_PICKLE_BYTES:
                raise ExportError(f"{path}: data.pkl is {info.file_size:,} bytes, above the limit of "
                                  f"{limits.MAX_PICKLE_BYTES:,} (a real checkpoint's is a few hundred KB)")
            data = _read_member(archive, path, info, info.file_size, "data.pkl")
            obj = _RestrictedUnpickler(io.BytesIO(data), load_storage).load()
        except ExportError:
            raise
        except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, KeyError) as e:
            raise ExportError(f"{path}: corrupt zip checkpoint ({type(e).__name__}: {str(e)[:80]})")
        except (pickle.UnpicklingError, ValueError, TypeError, AttributeError, IndexError,
                RecursionError, MemoryError, UnicodeDecodeError, OverflowError) as e:
            raise ExportError(f"{path}: corrupt checkpoint pickle ({type(e).__name__}: {str(e)[:80]})")
    return obj


def _is_legacy_pickle(path):
    try:
        with open(path, "rb") as f:
            head = f.read(2)
        return head[:1] == b"\x80"
    except OSError:
        return False


# --- helpers for walking Records that stand for torch.nn.Module objects ------------------------------

def children(rec):
    """A module record's sub-modules (name -> Record), in registration order."""
    mods = rec.state.get("_modules") or {}
    return collections.OrderedDict((k, v) for k, v in mods.items() if v is not None)


def child(rec, name):
    return (rec.state.get("_modules") or {}).get(name)


def tensors_of(rec):
    """A module record's own parameters and buffers (name -> ndarray or None)."""
    out = collections.OrderedDict()
    for key in ("_parameters", "_buffers"):
        for k, v in (rec.state.get(key) or {}).items():
            out[k] = v
    return out


def attr(rec, name, default=None):
    return rec.state.get(name, default)
