"""A minimal reader of ONNX models: protobuf wire format decoded by hand (no onnx/protobuf package).

Protobuf wire format in brief: a message is a sequence of fields, each a varint key
`(field_number << 3) | wire_type` followed by its value. Wire types: 0 varint, 1 fixed 64-bit,
2 length-delimited (strings, bytes, sub-messages, packed repeated numbers), 5 fixed 32-bit.
We decode only the ONNX fields the exporter needs (field numbers from onnx.proto3):

  ModelProto       1 ir_version, 2 producer_name, 3 producer_version, 7 graph, 14 metadata_props
  StringStringEntry 1 key, 2 value
  GraphProto       1 node, 5 initializer, 11 input, 12 output
  NodeProto        1 input, 2 output, 3 name, 4 op_type, 5 attribute, 7 domain
  AttributeProto   1 name, 2 f, 3 i, 4 s, 5 t, 7 floats, 8 ints, 20 type
  TensorProto      1 dims, 2 data_type, 4 float_data, 5 int32_data, 7 int64_data, 8 name, 9 raw_data,
                   10 double_data, 13 external_data, 14 data_location
Every read is bounds-checked; malformed input raises ExportError.
"""

import struct

import numpy as np

from .errors import ExportError

# TensorProto.DataType -> numpy dtype (little-endian)
_DTYPES = {1: "<f4", 2: "u1", 3: "i1", 4: "<u2", 5: "<i2", 6: "<i4", 7: "<i8", 9: "?", 10: "<f2", 11: "<f8",
           12: "<u4", 13: "<u8"}
_BFLOAT16 = 16


class _Buf:
    def __init__(self, data, what):
        self.data, self.what = data, what

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
        key, pos = _varint(data, pos, end, buf)
        num, wt = key >> 3, key & 7
        if num == 0:
            buf.fail("field number 0")
        if wt == 0:
            v, pos = _varint(data, pos, end, buf)
            yield num, wt, v
        elif wt == 1:
            if pos + 8 > end:
                buf.fail("truncated fixed64")
            yield num, wt, data[pos:pos + 8]
            pos += 8
        elif wt == 2:
            n, pos = _varint(data, pos, end, buf)
            if pos + n > end:
                buf.fail("length-delimited field runs past its message")
            yield num, wt, (pos, pos + n)
            pos += n
        elif wt == 5:
            if pos + 4 > end:
                buf.fail("truncated fixed32")
            yield num, wt, data[pos:pos + 4]
            pos += 4
        else:
            buf.fail(f"unsupported wire type {wt}")


def _str(buf, span):
    try:
        return bytes(buf.data[span[0]:span[1]]).decode("utf-8")
    except UnicodeDecodeError:
        buf.fail("a string is not UTF-8")


def _signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def _ints(buf, wt, v):
    """A repeated int64/int32 field value: packed (wt 2) or one varint (wt 0)."""
    if wt == 0:
        return [_signed(v)]
    if wt != 2:
        buf.fail("bad repeated int field")
    out, pos = [], v[0]
    while pos < v[1]:
        x, pos = _varint(buf.data, pos, v[1], buf)
        out.append(_signed(x))
    return out


def _floats(buf, wt, v):
    if wt == 5:
        return list(struct.unpack("<f", v))
    if wt != 2 or (v[1] - v[0]) % 4:
        buf.fail("bad repeated float field")
    return list(np.frombuffer(bytes(buf.data[v[0]:v[1]]), dtype="<f4"))


class Tensor:
    """An ONNX TensorProto, decoded: name and a numpy array."""

    def __init__(self, name, array):
        self.name, self.array = name, array


def _tensor(buf, span):
    dims, dtype, name, raw = [], None, "", None
    float_data, int32_data, int64_data, double_data = [], [], [], []
    external = False
    for num, wt, v in _fields(buf, *span):
        if num == 1:
            dims += _ints(buf, wt, v)
        elif num == 2 and wt == 0:
            dtype = v
        elif num == 4:
            float_data += _floats(buf, wt, v)
        elif num == 5:
            int32_data += _ints(buf, wt, v)
        elif num == 7:
            int64_data += _ints(buf, wt, v)
        elif num == 8 and wt == 2:
            name = _str(buf, v)
        elif num == 9 and wt == 2:
            raw = bytes(buf.data[v[0]:v[1]])
        elif num == 10:
            if wt == 1:
                double_data += list(struct.unpack("<d", v))
            elif wt == 2 and (v[1] - v[0]) % 8 == 0:
                double_data += list(np.frombuffer(bytes(buf.data[v[0]:v[1]]), dtype="<f8"))
        elif num == 13:
            external = True
        elif num == 14 and wt == 0 and v == 1:
            external = True
    if external:
        raise ExportError(f"{buf.what}: tensor {name} keeps its data in an external file (not supported)")
    if any(d < 0 for d in dims):
        buf.fail(f"tensor {name} has a negative dimension")
    count = int(np.prod(dims)) if dims else 1
    if dtype == _BFLOAT16:
        np_dtype = None
    elif dtype in _DTYPES:
        np_dtype = np.dtype(_DTYPES[dtype])
    else:
        raise ExportError(f"{buf.what}: tensor {name} has unsupported data type {dtype}")
    if raw is not None:
        item = 2 if np_dtype is None else np_dtype.itemsize
        if len(raw) != count * item:
            buf.fail(f"tensor {name}: {len(raw)} bytes of raw data for {count} elements")
        if np_dtype is None:
            arr = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            arr = np.frombuffer(raw, dtype=np_dtype)
    elif dtype == 1:
        arr = np.array(float_data, dtype=np.float32)
    elif dtype == 11:
        arr = np.array(double_data, dtype=np.float64)
    elif dtype == 7:
        arr = np.array(int64_data, dtype=np.int64)
    elif dtype == 10:  # float16 bits in int32_data
        arr = np.array(int32_data, dtype=np.uint16).view(np.float16)
    elif dtype == _BFLOAT16:
        arr = (np.array(int32_data, dtype=np.uint32) << 16).view(np.float32)
    else:  # int8 / uint8 / int16 / int32 / bool in int32_data
        arr = np.array(int32_data, dtype=np.int64).astype(np_dtype)
    if arr.size != count:
        buf.fail(f"tensor {name}: {arr.size} values for shape {dims}")
    return Tensor(name, arr.reshape(dims).copy())


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
            value = bytes(buf.data[v[0]:v[1]])
        elif num == 5 and wt == 2:
            value = _tensor(buf, v).array
        elif num == 7:
            floats += _floats(buf, wt, v)
        elif num == 8:
            ints += _ints(buf, wt, v)
    if value is None:
        value = ints if ints else floats if floats else None
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return name, value


def _node(buf, span):
    name, op, domain, inputs, outputs, attrs = "", "", "", [], [], {}
    for num, wt, v in _fields(buf, *span):
        if wt != 2:
            continue
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


def _value_info_name(buf, span):
    for num, wt, v in _fields(buf, *span):
        if num == 1 and wt == 2:
            return _str(buf, v)
    return ""


class OnnxModel:
    """The parts of an ONNX model the exporter uses."""

    def __init__(self):
        self.ir_version = 0
        self.producer = ""
        self.metadata = {}
        self.nodes = []
        self.initializers = {}  # name -> ndarray
        self.inputs, self.outputs = [], []


def read_onnx_model(path):
    try:
        with open(path, "rb") as f:
            data = f.read()
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
            producer_name = _str(buf, v)
        elif num == 3 and wt == 2:
            producer_version = _str(buf, v)
        elif num == 7 and wt == 2:
            graph = v
        elif num == 14 and wt == 2:
            key = value = ""
            for n2, w2, v2 in _fields(buf, *v):
                if n2 == 1 and w2 == 2:
                    key = _str(buf, v2)
                elif n2 == 2 and w2 == 2:
                    value = _str(buf, v2)
            m.metadata[key] = value
    if graph is None or m.ir_version == 0:
        raise ExportError(f"{path}: not an ONNX model (no graph or IR version)")
    m.producer = f"{producer_name} {producer_version}".strip()
    for num, wt, v in _fields(buf, *graph):
        if wt != 2:
            continue
        if num == 1:
            m.nodes.append(_node(buf, v))
        elif num == 5:
            t = _tensor(buf, v)
            if t.name in m.initializers:
                buf.fail(f"duplicate initializer {t.name}")
            m.initializers[t.name] = t.array
        elif num == 11:
            m.inputs.append(_value_info_name(buf, v))
        elif num == 12:
            m.outputs.append(_value_info_name(buf, v))
        elif num == 15:
            raise ExportError(f"{path}: sparse initializers are not supported")
    if not m.nodes:
        raise ExportError(f"{path}: the ONNX graph has no nodes")
    return m
