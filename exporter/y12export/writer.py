"""Writes a .y12 model file exactly as docs/model-format.md specifies.

    magic "Y12MODEL" | u32 version 1 | u32 0 | u64 header length N | N bytes JSON | zero pad to 256 |
    tensor data, each tensor at a multiple of 256 from data_start, zero padding between tensors.
"""

import json
import os
import struct

import numpy as np

from .errors import ExportError

MAGIC = b"Y12MODEL"
FORMAT_VERSION = 1
ALIGN = 256


def _align(n):
    return (n + ALIGN - 1) // ALIGN * ALIGN


def to_file_dtype(name, array, kind, dtype):
    """The stored array: gamma always f32; conv tensors f32 or f16 (refusing f16 overflow)."""
    if kind == "gamma" or dtype == "f32":
        out = np.asarray(array, dtype="<f4")
    else:
        with np.errstate(over="ignore"):
            out = np.asarray(array, dtype="<f2")
        if not np.all(np.isfinite(out)):
            raise ExportError(f"{name}: values overflow float16 (max |x| = {np.max(np.abs(array)):.4g}); use --fp32")
    return np.ascontiguousarray(out)


def write_model(path, header, tensors, dtype):
    """header: dict without tensors/data_size/parameters; tensors: name -> (float64 array, kind)."""
    table, blobs, offset, params = [], [], 0, 0
    for name, (array, kind) in tensors.items():
        stored = to_file_dtype(name, array, kind, dtype)
        tdt = "f32" if stored.dtype == np.dtype("<f4") else "f16"
        size = stored.nbytes
        table.append({"name": name, "dtype": tdt, "shape": [int(d) for d in stored.shape],
                      "offset": offset, "size": size})
        blobs.append((offset, stored))
        params += int(stored.size)
        offset = _align(offset + size)
    data_size = (blobs[-1][0] + blobs[-1][1].nbytes) if blobs else 0
    header = dict(header)
    header["parameters"] = params
    header["data_size"] = data_size
    header["tensors"] = table
    text = json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    data_start = _align(24 + len(text))
    tmp = path + ".tmp"
    try:
        with open(tmp, "wb") as f:
            f.write(MAGIC + struct.pack("<IIQ", FORMAT_VERSION, 0, len(text)))
            f.write(text)
            f.write(b"\0" * (data_start - 24 - len(text)))
            for off, arr in blobs:
                pos = data_start + off
                f.write(b"\0" * (pos - f.tell()))
                f.write(arr.tobytes())
            assert_size = f.tell()
        if assert_size != data_start + data_size:
            raise ExportError(f"{path}: internal error, wrote {assert_size} bytes, expected {data_start + data_size}")
        os.replace(tmp, path)
    except OSError as e:
        raise ExportError(f"{path}: cannot write ({e.strerror or e})")
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return header
