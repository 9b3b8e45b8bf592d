"""Writes a .y12 model file exactly as docs/model-format.md specifies.

    magic "Y12MODEL" | u32 version | u32 0 | u64 header length N | N bytes JSON | zero pad to 256 |
    tensor data, each tensor at a multiple of 256 from data_start, zero padding between tensors |
    version 2 only: the trailer "Y12CHECK" + u64 checksum of every byte before it (y12export.checksum)
"""

import json
import os
import struct

import numpy as np

from .checksum import tree_checksum
from .errors import ExportError

MAGIC = b"Y12MODEL"
TRAILER_MAGIC = b"Y12CHECK"
FORMAT_VERSIONS = (1, 2)
DEFAULT_FORMAT_VERSION = 2  # version 1 (no checksum) with --format-version 1
ALIGN = 256


def _align(n):
    return (n + ALIGN - 1) // ALIGN * ALIGN


def _non_finite(name, array, what):
    """The one-line error for a tensor with NaN/Inf values: how many, and the first one's index."""
    bad = ~np.isfinite(array)
    first = np.unravel_index(int(np.argmax(bad)), array.shape) if array.ndim else ()
    return ExportError(f"{name}: {int(bad.sum()):,} of {array.size:,} values {what} (first at index "
                       f"{list(int(i) for i in first)}); the weights are corrupt or diverged in training")


def check_finite(name, array):
    """Refuses a tensor holding NaN or Inf, naming it."""
    if not np.all(np.isfinite(array)):
        raise _non_finite(name, np.asarray(array), "are NaN or Inf")


def file_dtype(kind, dtype):
    """The stored element type of a tensor: gamma always f32; conv tensors f32 or f16."""
    return "f16" if kind != "gamma" and dtype == "f16" else "f32"


def store(name, array, slot):
    """Rounds the float64 `array` into `slot` (its place in the file, f32 or f16). A finite value that
    does not fit the file's type is refused, never stored as infinity."""
    with np.errstate(over="ignore"):
        slot[...] = array
    if not np.all(np.isfinite(slot)):
        check_finite(name, array)
        f16 = slot.dtype == np.dtype("<f2")
        raise ExportError(f"{name}: values overflow float{16 if f16 else 32} (max |x| = {np.max(np.abs(array)):.4g})"
                          + ("; use --fp32" if f16 else ""))


_NUMPY = {"f32": np.dtype("<f4"), "f16": np.dtype("<f2")}


def write_model(path, header, tensors, dtype, version=DEFAULT_FORMAT_VERSION):
    """header: dict without tensors/data_size/parameters; tensors: name -> (float64 array, kind).
    Writes `path` atomically (a temporary file renamed over it) and returns the header written."""
    if version not in FORMAT_VERSIONS:
        raise ExportError(f"format version {version} is not one of {list(FORMAT_VERSIONS)}")
    table, offset, params = [], 0, 0
    for name, (array, kind) in tensors.items():
        tdt = file_dtype(kind, dtype)
        offset = _align(offset)
        size = int(np.asarray(array).size) * _NUMPY[tdt].itemsize
        table.append({"name": name, "dtype": tdt, "shape": [int(d) for d in np.shape(array)],
                      "offset": offset, "size": size})
        params += int(np.asarray(array).size)
        offset += size
    data_size = offset
    header = dict(header)
    header["parameters"] = params
    header["data_size"] = data_size
    header["tensors"] = table
    text = json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    data_start = _align(24 + len(text))

    # Every byte before the trailer in one buffer (zero padding included): each tensor is rounded
    # straight into its place, then the buffer is hashed and written.
    covered = np.zeros(data_start + data_size, dtype=np.uint8)
    covered[:24] = np.frombuffer(MAGIC + struct.pack("<IIQ", version, 0, len(text)), dtype=np.uint8)
    covered[24:24 + len(text)] = np.frombuffer(text, dtype=np.uint8)
    for t, (name, (array, _)) in zip(table, tensors.items()):
        start = data_start + t["offset"]
        store(name, array, covered[start:start + t["size"]].view(_NUMPY[t["dtype"]]).reshape(t["shape"]))
    trailer = TRAILER_MAGIC + struct.pack("<Q", tree_checksum(covered)) if version >= 2 else b""

    tmp = path + ".tmp"
    try:
        with open(tmp, "wb") as f:
            f.write(covered.data)
            f.write(trailer)
        os.replace(tmp, path)
    except OSError as e:
        raise ExportError(f"{path}: cannot write ({e.strerror or e})")
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return header
