"""A minimal protobuf encoder and decoder for the few ONNX messages the tests
need, written from onnx.proto's field numbers, so the tests build models and
read the backend test data without the onnx package (and independently of
Tessera's importer, which they check)."""

import numpy as np

# --- encoding ---------------------------------------------------------------

def _varint(n):
    out = bytearray()
    n &= (1 << 64) - 1  # negative int64s are ten-byte two's complement
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _field_varint(field, n):
    return _varint(field << 3) + _varint(n)


def _field_bytes(field, data):
    if isinstance(data, str):
        data = data.encode()
    return _varint(field << 3 | 2) + _varint(len(data)) + data


ELEM = {np.dtype(np.float32): 1, np.dtype(np.uint8): 2, np.dtype(np.int8): 3, np.dtype(np.int32): 6,
        np.dtype(np.int64): 7, np.dtype(np.bool_): 9, np.dtype(np.float16): 10, np.dtype(np.float64): 11}


def value_info(name, dtype, dims):
    """ValueInfoProto: dims are ints (static) or strs (named dynamic dims)."""
    shape = b""
    for d in dims:
        dim = _field_varint(1, d) if isinstance(d, int) else _field_bytes(2, d)
        shape += _field_bytes(1, dim)
    tensor_type = _field_varint(1, ELEM[np.dtype(dtype)]) + _field_bytes(2, shape)
    return _field_bytes(1, name) + _field_bytes(2, _field_bytes(1, tensor_type))


def tensor(name, array):
    """TensorProto with raw_data (little-endian)."""
    array = np.ascontiguousarray(array)
    body = b"".join(_field_varint(1, d) for d in array.shape)
    body += _field_varint(2, ELEM[array.dtype]) + _field_bytes(8, name) + _field_bytes(9, array.tobytes())
    return body


def node(op_type, inputs, outputs, name=""):
    body = b"".join(_field_bytes(1, i) for i in inputs) + b"".join(_field_bytes(2, o) for o in outputs)
    return body + _field_bytes(3, name or op_type.lower()) + _field_bytes(4, op_type)


def model(nodes, inputs, outputs, initializers=(), opset=17, name="test"):
    """ModelProto bytes: nodes from node(), inputs/outputs from value_info()."""
    graph = b"".join(_field_bytes(1, n) for n in nodes) + _field_bytes(2, name)
    graph += b"".join(_field_bytes(5, t) for t in initializers)
    graph += b"".join(_field_bytes(11, v) for v in inputs) + b"".join(_field_bytes(12, v) for v in outputs)
    opset_id = _field_bytes(1, "") + _field_varint(2, opset)
    return _field_varint(1, 8) + _field_bytes(2, "tessera-tests") + _field_bytes(7, graph) + _field_bytes(8, opset_id)

# --- decoding (TensorProto, as the backend test data stores inputs and outputs) ---

def _read_varint(buf, pos):
    n = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return n, pos


def _fields(buf):
    pos = 0
    while pos < len(buf):
        key, pos = _read_varint(buf, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _read_varint(buf, pos)
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == 2:
            length, pos = _read_varint(buf, pos)
            value, pos = buf[pos:pos + length], pos + length
        elif wire == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise ValueError(f"wire type {wire} not handled")
        yield field, wire, value


NUMPY = {1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32, 7: np.int64,
         9: np.bool_, 10: np.float16, 11: np.float64, 12: np.uint32, 13: np.uint64}


def read_tensor(path):
    """(name, ndarray) of a TensorProto file (raw_data or the typed repeated fields)."""
    buf = open(path, "rb").read()
    dims, dtype, name, raw = [], None, "", None
    typed = {}
    for field, wire, value in _fields(buf):
        if field == 1:
            if wire == 2:  # packed dims
                pos = 0
                while pos < len(value):
                    d, pos = _read_varint(value, pos)
                    dims.append(d)
            else:
                dims.append(value)
        elif field == 2:
            dtype = value
        elif field == 8:
            name = value.decode()
        elif field == 9:
            raw = value
        elif field in (4, 5, 7, 10, 11):  # float, int32, int64, double, uint64 data
            typed.setdefault(field, []).append((wire, value))
    if dtype not in NUMPY:
        raise ValueError(f"{path}: element type {dtype} not handled")
    np_type = np.dtype(NUMPY[dtype]).newbyteorder("<")
    if raw is not None:
        return name, np.frombuffer(raw, dtype=np_type).reshape(dims).astype(NUMPY[dtype])
    values = []
    for field, items in typed.items():
        for wire, value in items:
            if field in (4, 10):  # packed floats / doubles
                fmt = "<f4" if field == 4 else "<f8"
                values.extend(np.frombuffer(value, dtype=fmt).tolist() if wire == 2 else
                              np.frombuffer(value, dtype=fmt).tolist())
            elif wire == 2:
                pos = 0
                while pos < len(value):
                    v, pos = _read_varint(value, pos)
                    values.append(v)
            else:
                values.append(value)
    arr = np.array(values, dtype=np.uint64 if dtype in (12, 13) else np.float64 if dtype in (1, 10, 11) else np.int64)
    if dtype in (3, 5, 6, 7):  # varints of signed types are two's complement
        arr = arr.astype(np.uint64).astype(np.int64)
    return name, arr.astype(NUMPY[dtype]).reshape(dims)
