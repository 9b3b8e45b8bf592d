"""A minimal reader of ONNX models: protobuf wire format decoded by hand (no onnx/protobuf package).

Protobuf wire format in brief: a message is a sequence of fields, each a varint key
`(field_number << 3) | wire_type` followed by its value. Wire types: 0 varint, 1 fixed 64-bit,
2 length-delimited (strings, bytes, sub-messages, packed repeated numbers), 5 fixed 32-bit.
We decode only the ONNX fields the exporter needs (field numbers from onnx.proto3):

  ModelProto       1 ir_version, 2 producer_name, 3 producer_version, 7 graph, 14 metadata_props
  StringStringEntry 1 key, 2 value
  GraphProto       1 node, 5 initializer, 11 input, 12 output
  ValueInfoProto   1 name, 2 type (TypeProto 1 tensor_type -> 2 shape -> 1 dim -> 1 dim_value)
  NodeProto        1 input, 2 output, 3 name, 4 op_type, 5 attribute, 7 domain
  AttributeProto   1 name, 2 f, 3 i, 4 s, 5 t, 7 floats, 8 ints, 20 type
  TensorProto      1 dims, 2 data_type, 4 float_data, 5 int32_data, 7 int64_data, 8 name, 9 raw_data,
                   10 double_data, 13 external_data, 14 data_location
Every read is bounds-checked; malformed input raises ExportError. Every count and size is bounded
before it is stored (y12export/limits.py): the file, nodes, initializers, a node's fields, ranks, list
values, metadata entries and values; tensor data stay views of the file's bytes.
"""

import math
import os
import struct

import numpy as np

from . import limits
from .errors import ExportError

# TensorProto.DataType -> numpy dtype (little-endian)
_DTYPES = {1: "<f4", 2: "u1", 3: "i1", 4: "<u2", 5: "<i2", 6: "<i4", 7: "<i8", 9: "?", 10: "<f2", 11: "<f8",
           12: "<u4", 13: "<u8"}
_BFLOAT16 = 16


class _Buf:
    def __init__(self, data, what):
        self.data, self.what = data, what
        self.decoded = 0  # fields and list values decoded so far

    def count(self):
        """Counts one decoded field or value: a file of millions of tiny fields is refused, not parsed
        for minutes."""
        self.decoded += 1
        if self.decoded > limits.MAX_ONNX_DECODED:
            self.fail(f"more than {limits.MAX_ONNX_DECODED:,} fields and values (the exporter's limit)")

    def fail(self, msg):
        raise ExportError(f"{self.what}: corrupt ONNX protobuf ({msg})")


def _varint(data, pos, end, buf):
    result, shift = 0, 0
    while True:
        if pos >= end:
            buf.fail("truncated varint")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            buf.fail("varint too long")


def _fields(buf, start, end):
    """Yields (field_number, wire_type, value) for the message in data[start:end]. Length-delimited
    values are (offset, end) pairs into data; varints are ints; fixed values raw bytes."""
    data = buf.data
    pos = start
    while pos < end:
        buf.count()
        key, pos = _varint(data, pos, end, buf)
        num, wt = key >> 3, key & 7
        if num == 0:
            buf.fail("field number 0")
        if wt == 0:
            v, pos = _varint(data, pos, end, buf)
            yield num, wt, v
        elif wt in (1, 5):  # fixed64, fixed32
            size = 8 if wt == 1 else 4
            if pos + size > end:
                buf.fail(f"truncated fixed{8 * size}")
            yield num, wt, data[pos:pos + size]
            pos += size
        elif wt == 2:
            n, pos = _varint(data, pos, end, buf)
            if pos + n > end:
                buf.fail("length-delimited field runs past its message")
            yield num, wt, (pos, pos + n)
            pos += n
        else:
            buf.fail(f"unsupported wire type {wt}")


def _str(buf, span):
    try:
        return bytes(buf.data[span[0]:span[1]]).decode("utf-8")
    except UnicodeDecodeError:
        buf.fail("a string is not UTF-8")


def _signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def _ints(buf, wt, v, out, what):
    """Appends a repeated int64/int32 field value (packed, wt 2, or one varint, wt 0) to out, never
    beyond MAX_ONNX_LIST_VALUES."""
    if wt == 0:
        out.append(_signed(v))
    elif wt == 2:
        pos = v[0]
        while pos < v[1]:
            buf.count()
            x, pos = _varint(buf.data, pos, v[1], buf)
            out.append(_signed(x))
            if len(out) > limits.MAX_ONNX_LIST_VALUES:
                break
    else:
        buf.fail(f"bad repeated int field in {what}")
    if len(out) > limits.MAX_ONNX_LIST_VALUES:
        buf.fail(f"{what} has more than {limits.MAX_ONNX_LIST_VALUES:,} values")
    return out


def _numbers(buf, wt, v, dtype, fixed_wt, what):
    """A repeated fixed-size number field (floats, doubles): packed (wt 2) or one value, as an array."""
    size = np.dtype(dtype).itemsize
    if wt == fixed_wt:
        return np.frombuffer(v, dtype=dtype)
    if wt != 2 or (v[1] - v[0]) % size:
        buf.fail(f"bad repeated number field in {what}")
    if (v[1] - v[0]) // size > limits.MAX_ONNX_LIST_VALUES:
        buf.fail(f"{what} has more than {limits.MAX_ONNX_LIST_VALUES:,} values")
    return np.frombuffer(buf.data[v[0]:v[1]], dtype=dtype)


def _bounded(count, limit, buf, what):
    """Fails before an item beyond `limit` is stored (count: the items stored so far)."""
    if count >= limit:
        buf.fail(f"more than {limit:,} {what} (the exporter's limit)")


class Tensor:
    """An ONNX TensorProto, decoded: name and a numpy array."""

    def __init__(self, name, array):
        self.name, self.array = name, array


def _concat(parts, dtype):
    if not parts:
        return np.zeros(0, dtype=dtype)
    return np.concatenate([np.asarray(p, dtype=dtype) for p in parts])


def _tensor(buf, span):
    dims, dtype, name, raw = [], None, "", None
    float_parts, double_parts, int32_data, int64_data = [], [], [], []
    external = False
    for num, wt, v in _fields(buf, *span):
        if num == 1:
            _ints(buf, wt, v, dims, "a tensor's dims")
            if len(dims) > limits.MAX_ONNX_TENSOR_RANK:
                buf.fail(f"a tensor of rank above {limits.MAX_ONNX_TENSOR_RANK}")
        elif num == 2 and wt == 0:
            dtype = v
        elif num == 4:
            float_parts.append(_numbers(buf, wt, v, "<f4", 5, "float_data"))
        elif num == 5:
            _ints(buf, wt, v, int32_data, "int32_data")
        elif num == 7:
            _ints(buf, wt, v, int64_data, "int64_data")
        elif num == 8 and wt == 2:
            name = _str(buf, v)
        elif num == 9 and wt == 2:
            raw = buf.data[v[0]:v[1]]  # a view of the file's bytes, no copy
        elif num == 10:
            double_parts.append(_numbers(buf, wt, v, "<f8", 1, "double_data"))
        elif num == 13:
            external = True
        elif num == 14 and wt == 0 and v == 1:
            external = True
    name_ = name[:80]
    if external:
        raise ExportError(f"{buf.what}: tensor {name_} keeps its data in an external file (not supported)")
    if any(d < 0 for d in dims):
        buf.fail(f"tensor {name_} has a negative dimension")
    count = math.prod(dims)
    if dtype == _BFLOAT16:
        np_dtype = None
    elif dtype in _DTYPES:
        np_dtype = np.dtype(_DTYPES[dtype])
    else:
        raise ExportError(f"{buf.what}: tensor {name_} has unsupported data type {dtype}")
    if raw is not None:
        item = 2 if np_dtype is None else np_dtype.itemsize
        if len(raw) != count * item:
            buf.fail(f"tensor {name_}: {len(raw)} bytes of raw data for {count} elements")
        if np_dtype is None:
            arr = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            arr = np.frombuffer(raw, dtype=np_dtype)
    elif dtype == 1:
        arr = _concat(float_parts, np.float32)
    elif dtype == 11:
        arr = _concat(double_parts, np.float64)
    elif dtype == 7:
        arr = np.array(int64_data, dtype=np.int64)
    elif dtype == 10:  # float16 bits in int32_data
        arr = np.array(int32_data, dtype=np.int64).astype(np.uint16).view(np.float16)
    elif dtype == _BFLOAT16:
        arr = (np.array(int32_data, dtype=np.int64).astype(np.uint32) << 16).view(np.float32)
    else:  # int8 / uint8 / int16 / int32 / bool in int32_data
        arr = np.array(int32_data, dtype=np.int64).astype(np_dtype)
    if arr.size != count:
        buf.fail(f"tensor {name_}: {arr.size} values for shape {dims}")
    return Tensor(name, arr.reshape(dims))


class Node:
    def __init__(self, name, op_type, inputs, outputs, attrs, domain):
        self.name, self.op_type, self.inputs, self.outputs, self.attrs, self.domain = (
            name, op_type, inputs, outputs, attrs, domain)


def _attribute(buf, span):
    name, value, ints, floats = "", None, [], []
    for num, wt, v in _fields(buf, *span):
        if num == 1 and wt == 2:
            name = _str(buf, v)
        elif num == 2 and wt == 5:
            value = struct.unpack("<f", v)[0]
        elif num == 3 and wt == 0:
            value = _signed(v)
        elif num == 4 and wt == 2:
            value = bytes(buf.data[v[0]:v[1]][:limits.MAX_ONNX_METADATA_BYTES])
        elif num == 5 and wt == 2:
            value = _tensor(buf, v).array
        elif num == 7:
            floats.append(_numbers(buf, wt, v, "<f4", 5, "a float list attribute"))
        elif num == 8:
            _ints(buf, wt, v, ints, "an int list attribute")
    if value is None:
        value = ints if ints else [float(x) for x in _concat(floats, np.float32)] if floats else None
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return name, value


def _node(buf, span):
    name, op, domain, inputs, outputs, attrs = "", "", "", [], [], {}
    for num, wt, v in _fields(buf, *span):
        if wt != 2:
            continue
        if num in (1, 2, 5):
            _bounded(len(inputs) + len(outputs) + len(attrs), limits.MAX_ONNX_NODE_FIELDS, buf, "inputs, outputs and attributes of a node")
        if num == 1:
            inputs.append(_str(buf, v))
        elif num == 2:
            outputs.append(_str(buf, v))
        elif num == 3:
            name = _str(buf, v)
        elif num == 4:
            op = _str(buf, v)
        elif num == 5:
            k, val = _attribute(buf, v)
            attrs[k] = val
        elif num == 7:
            domain = _str(buf, v)
    return Node(name, op, inputs, outputs, attrs, domain)


def _value_info(buf, span):
    """ValueInfoProto (1 name, 2 type) -> (name, dims): TypeProto 1 tensor_type -> 2 shape ->
    repeated 1 dim -> 1 dim_value | 2 dim_param. A dim without a value (symbolic) is None; dims is
    None when the type has no shape."""
    name, dims = "", None
    for num, wt, v in _fields(buf, *span):
        if num == 1 and wt == 2:
            name = _str(buf, v)
        elif num == 2 and wt == 2:
            for n2, w2, v2 in _fields(buf, *v):
                if n2 != 1 or w2 != 2:
                    continue
                for n3, w3, v3 in _fields(buf, *v2):
                    if n3 != 2 or w3 != 2:
                        continue
                    dims = []
                    for n4, w4, v4 in _fields(buf, *v3):
                        if n4 != 1 or w4 != 2:
                            continue
                        _bounded(len(dims), limits.MAX_ONNX_TENSOR_RANK, buf, "dimensions of a graph input")
                        value = None
                        for n5, w5, v5 in _fields(buf, *v4):
                            if n5 == 1 and w5 == 0:
                                value = _signed(v5)
                        dims.append(value)
    return name, dims


class OnnxModel:
    """The parts of an ONNX model the exporter uses."""

    def __init__(self):
        self.ir_version = 0
        self.producer = ""
        self.metadata = {}
        self.nodes = []
        self.initializers = {}  # name -> ndarray
        self.inputs, self.outputs = [], []
        self.input_dims = {}    # graph input name -> [int or None per dim], where the graph declares them


def _metadata_entry(buf, span):
    key = value = ""
    for num, wt, v in _fields(buf, *span):
        if wt == 2 and num in (1, 2):
            n = v[1] - v[0]
            if n > limits.MAX_ONNX_METADATA_BYTES:
                what = "a metadata key" if num == 1 else f"metadata {key[:40]!r}"
                raise ExportError(f"{buf.what}: {what} is {n:,} bytes, above the exporter's limit of "
                                  f"{limits.MAX_ONNX_METADATA_BYTES:,} (Ultralytics' COCO names are 1,171)")
            if num == 1:
                key = _str(buf, v)
            else:
                value = _str(buf, v)
    return key, value


def read_onnx_model(path):
    try:
        size = os.path.getsize(path)
        if size > limits.MAX_ONNX_BYTES:
            raise ExportError(f"{path}: {size:,} bytes, above the limit of {limits.MAX_ONNX_BYTES:,} (protobuf's own)")
        with open(path, "rb") as f:
            data = f.read(size + 1)  # (read(n) reserves n bytes at once: never the limit itself)
        if len(data) > limits.MAX_ONNX_BYTES:
            raise ExportError(f"{path}: grew beyond the limit of {limits.MAX_ONNX_BYTES:,} bytes while being read")
    except OSError as e:
        raise ExportError(f"{path}: cannot read ({e.strerror})")
    buf = _Buf(memoryview(data), path)
    m = OnnxModel()
    graph = None
    producer_name = producer_version = ""
    for num, wt, v in _fields(buf, 0, len(data)):
        if num == 1 and wt == 0:
            m.ir_version = v
        elif num == 2 and wt == 2:
            producer_name = _str(buf, v)[:200]
        elif num == 3 and wt == 2:
            producer_version = _str(buf, v)[:200]
        elif num == 7 and wt == 2:
            graph = v
        elif num == 14 and wt == 2:
            _bounded(len(m.metadata), limits.MAX_ONNX_METADATA_ENTRIES, buf, "metadata entries")
            key, value = _metadata_entry(buf, v)
            m.metadata[key] = value
    if graph is None or m.ir_version == 0:
        raise ExportError(f"{path}: not an ONNX model (no graph or IR version)")
    m.producer = f"{producer_name} {producer_version}".strip()
    for num, wt, v in _fields(buf, *graph):
        if wt != 2:
            continue
        if num == 1:
            _bounded(len(m.nodes), limits.MAX_ONNX_NODES, buf, "nodes")
            m.nodes.append(_node(buf, v))
        elif num == 5:
            _bounded(len(m.initializers), limits.MAX_ONNX_INITIALIZERS, buf, "initializers")
            t = _tensor(buf, v)
            if t.name in m.initializers:
                buf.fail(f"duplicate initializer {t.name[:80]}")
            m.initializers[t.name] = t.array
        elif num in (11, 12):
            _bounded(len(m.inputs) + len(m.outputs), limits.MAX_ONNX_GRAPH_IO, buf, "graph inputs and outputs")
            name, dims = _value_info(buf, v)
            if num == 11:
                m.inputs.append(name)
                if dims is not None:
                    m.input_dims[name] = dims
            else:
                m.outputs.append(name)
        elif num == 15:
            raise ExportError(f"{path}: sparse initializers are not supported")
    if not m.nodes:
        raise ExportError(f"{path}: the ONNX graph has no nodes")
    return m
