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
The result is plain Python data (dict, list, tuple, str, numbers), numpy arrays for tensors, and
Records for objects.
"""

import collections
import io
import pathlib
import pickle
import zipfile

import numpy as np

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
        if isinstance(state, tuple) and len(state) == 2:  # (dict state, slot state)
            merged = dict(state[0] or {})
            merged.update(state[1] or {})
            state = merged
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


class LazyTensor:
    """What _rebuild_tensor_v2 returns while unpickling; materialized once all storages are known."""

    def __init__(self, storage, offset, size, stride):
        self.storage, self.offset, self.size, self.stride = storage, offset, tuple(size), tuple(stride)


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None,
                       metadata=None):
    if not isinstance(storage, np.ndarray):
        raise ExportError("corrupt checkpoint: a tensor does not refer to a storage")
    for v in (storage_offset, *size, *stride):
        if not isinstance(v, int) or v < 0:
            raise ExportError("corrupt checkpoint: a tensor has a negative or non-integer size/stride/offset")
    if len(size) != len(stride):
        raise ExportError("corrupt checkpoint: a tensor's size and stride differ in rank")
    count = 1
    for s in size:
        count *= s
    if count == 0:
        return np.zeros(size, dtype=storage.dtype)
    if count > storage.size - storage_offset:  # checkpoints never hold overlapping (expanded) views
        raise ExportError("corrupt checkpoint: a tensor has more elements than its storage")
    last = storage_offset + sum((n - 1) * st for n, st in zip(size, stride))
    if last >= storage.size:
        raise ExportError("corrupt checkpoint: a tensor reaches past the end of its storage")
    item = storage.itemsize
    view = np.lib.stride_tricks.as_strided(storage[storage_offset:], shape=size,
                                           strides=[st * item for st in stride], writeable=False)
    return np.array(view)  # a contiguous copy


def _rebuild_parameter(data, requires_grad=False, backward_hooks=None, *rest):
    return data


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    return data


def _torch_size(*args):
    return tuple(args[0]) if args else ()


def _torch_device(*args):
    return "device:" + ":".join(str(a) for a in args)


def _path(*parts):
    if not all(isinstance(p, str) for p in parts):
        raise ExportError("corrupt checkpoint: bad path")
    return str(pathlib.PurePosixPath(*parts))  # a pure path: string handling only, no file access


def _numpy_scalar(dtype, data=None):
    dtype = dtype.dt if isinstance(dtype, _NumpyDtype) else None
    if dtype is None or not isinstance(data, (bytes, bytearray)):
        raise ExportError("corrupt checkpoint: bad numpy scalar")
    if dtype.hasobject or len(data) != dtype.itemsize:
        raise ExportError("corrupt checkpoint: bad numpy scalar")
    return np.frombuffer(bytes(data), dtype=dtype)[0].item()


def _numpy_dtype(spec, align=False, copy=False):
    if not isinstance(spec, str) or len(spec) > 8:
        raise ExportError("corrupt checkpoint: bad numpy dtype")
    dt = np.dtype(spec)
    if dt.hasobject:
        raise ExportError("refusing a numpy object dtype in the checkpoint")
    return _NumpyDtype(dt)


class _NumpyDtype:
    """np.dtype is pickled as dtype(spec) then BUILD(state); we keep the dtype and ignore the state."""

    def __init__(self, dt):
        self.dt = dt

    def __setstate__(self, state):
        pass


class _NumpyArray:
    """np.ndarray is pickled as _reconstruct(ndarray, (0,), b"b") then BUILD((version, shape, dtype,
    fortran, raw bytes)); we rebuild it from the raw bytes only (object arrays are refused)."""

    def __setstate__(self, state):
        if not (isinstance(state, tuple) and len(state) == 5 and isinstance(state[2], _NumpyDtype)
                and isinstance(state[4], (bytes, bytearray)) and isinstance(state[1], tuple)):
            raise ExportError("corrupt checkpoint: bad numpy array")
        _, shape, dtype, fortran, raw = state
        count = 1
        for n in shape:
            if not isinstance(n, int) or n < 0:
                raise ExportError("corrupt checkpoint: bad numpy array shape")
            count *= n
        if len(raw) != count * dtype.dt.itemsize:
            raise ExportError("corrupt checkpoint: numpy array size does not match its data")
        self.array = np.frombuffer(bytes(raw), dtype=dtype.dt).reshape(shape, order="F" if fortran else "C")


def _numpy_reconstruct(cls, shape, typecode):
    if getattr(cls, "cls", "") != "numpy.ndarray":
        raise ExportError("refusing numpy _reconstruct of a class other than ndarray")
    return _NumpyArray()


def _codecs_encode(text, encoding="utf-8"):
    """Protocol-2 pickles write bytes objects as _codecs.encode(str, "latin1")."""
    if not isinstance(text, str) or encoding != "latin1":
        raise ExportError("refusing _codecs.encode other than the latin1 bytes idiom")
    return text.encode("latin1")


def _reconstructor(cls, base, state=None):  # copyreg._reconstructor for protocol 0/1 objects
    if not (isinstance(cls, type) and issubclass(cls, Record)):
        raise ExportError("refusing copyreg._reconstructor on a non-record class")
    return cls.__new__(cls)


_ALLOWED = {
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter_with_state,
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("builtins", "set"): set,
    ("builtins", "frozenset"): frozenset,
    ("builtins", "slice"): slice,
    ("builtins", "bytearray"): bytearray,
    ("builtins", "list"): list,
    ("builtins", "tuple"): tuple,
    ("builtins", "dict"): dict,
    ("torch", "Size"): _torch_size,
    ("torch", "device"): _torch_device,
    ("pathlib", "PosixPath"): _path,
    ("pathlib", "WindowsPath"): _path,
    ("pathlib", "PurePosixPath"): _path,
    ("numpy.core.multiarray", "scalar"): _numpy_scalar,
    ("numpy._core.multiarray", "scalar"): _numpy_scalar,
    ("numpy", "dtype"): _numpy_dtype,
    ("numpy.core.multiarray", "_reconstruct"): _numpy_reconstruct,
    ("numpy._core.multiarray", "_reconstruct"): _numpy_reconstruct,
    ("copyreg", "_reconstructor"): _reconstructor,
    ("_codecs", "encode"): _codecs_encode,
}


# The pure-Python unpickler: its memo is a dict, so a hostile LONG_BINPUT index cannot make it allocate
# a giant memo table (the C unpickler sizes an array by the largest index).
class _RestrictedUnpickler(pickle._Unpickler):
    def __init__(self, fileobj, load_storage):
        super().__init__(fileobj)
        self._load_storage = load_storage

    def find_class(self, module, name):
        module = {"__builtin__": "builtins", "copy_reg": "copyreg"}.get(module, module)  # protocol 2 names
        if (module, name) in _ALLOWED:
            return _ALLOWED[(module, name)]
        if module == "torch" and name in _STORAGE_DTYPES:
            return StorageType(name, _STORAGE_DTYPES[name])
        if module == "torch" and name in _TORCH_DTYPES:
            return TorchDtype(name)
        if module in ("builtins", "copyreg") or "." in name:
            raise ExportError(f"refusing global {module}.{name} in the checkpoint's pickle (not on the allow-list)")
        return _record_class(f"{module}.{name}")

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise ExportError(f"corrupt checkpoint: unknown persistent id {str(pid)[:60]}")
        _, storage_type, key, _location, numel = pid
        if not isinstance(storage_type, StorageType) or not isinstance(key, str) or not isinstance(numel, int):
            raise ExportError(f"corrupt checkpoint: bad storage reference {str(pid)[:60]}")
        return self._load_storage(key, storage_type, numel)


def load_checkpoint(path):
    """Reads a torch.save zip checkpoint without executing code; returns the unpickled object."""
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError) as e:
        if _is_legacy_pickle(path):
            raise ExportError(f"{path}: a legacy (pre-zip) torch checkpoint; re-save it with a recent torch")
        raise ExportError(f"{path}: not a PyTorch zip checkpoint ({e})")
    with archive:
        try:
            names = archive.namelist()
            pickles = [n for n in names if n.endswith("/data.pkl") or n == "data.pkl"]
            if len(pickles) != 1:
                raise ExportError(f"{path}: expected one data.pkl in the zip, found {len(pickles)}")
            prefix = pickles[0][: -len("data.pkl")]
            big_endian = False
            if prefix + "byteorder" in names:
                order = archive.read(prefix + "byteorder").decode("ascii", "replace").strip()
                if order not in ("little", "big"):
                    raise ExportError(f"{path}: unknown byteorder {order!r}")
                big_endian = order == "big"
            storages = {}

            def load_storage(key, storage_type, numel):
                if key in storages:
                    return storages[key]
                member = prefix + "data/" + key
                if member not in names:
                    raise ExportError(f"{path}: storage {key} is missing from the zip")
                raw = archive.read(member)
                dtype = storage_type.dtype
                if dtype == "bf16":  # bfloat16: the top half of a float32
                    itemsize = 2
                else:
                    dtype = np.dtype(dtype)
                    if big_endian:
                        dtype = dtype.newbyteorder(">")
                    itemsize = dtype.itemsize
                if len(raw) < numel * itemsize:
                    raise ExportError(f"{path}: storage {key} holds {len(raw)} bytes, needs {numel * itemsize}")
                raw = raw[: numel * itemsize]
                if storage_type.dtype == "bf16":
                    u16 = np.frombuffer(raw, dtype=">u2" if big_endian else "<u2").astype(np.uint32)
                    arr = (u16 << 16).view(np.float32)
                else:
                    arr = np.frombuffer(raw, dtype=dtype).astype(dtype.newbyteorder("="))
                storages[key] = arr
                return arr

            data = archive.read(pickles[0])
            obj = _RestrictedUnpickler(io.BytesIO(data), load_storage).load()
        except ExportError:
            raise
        except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, KeyError) as e:
            raise ExportError(f"{path}: corrupt zip checkpoint ({type(e).__name__}: {e})")
        except (pickle.UnpicklingError, ValueError, TypeError, AttributeError, IndexError,
                RecursionError, MemoryError, UnicodeDecodeError) as e:
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
