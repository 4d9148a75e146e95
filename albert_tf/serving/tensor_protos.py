"""numpy arrays ↔ TensorProtos, cheaply: numbers travel as one copy of their bytes
(`tensor_content`, numpy's tobytes / frombuffer) rather than element by element, and without
tf.make_tensor_proto's per-call overhead (tens of microseconds, a large share of a small
request); strings, and protos holding typed values, go through TensorFlow's converters."""

import numpy as np
import tensorflow as tf
from tensorflow.core.framework import tensor_pb2

# TensorProto's typed value field per dtype (Tensor::AsProtoField, TF Serving's default).
_VALUE_FIELDS = {tf.float32: "float_val", tf.float64: "double_val", tf.int32: "int_val",
                 tf.int16: "int_val", tf.int8: "int_val", tf.uint8: "int_val",
                 tf.uint16: "int_val", tf.int64: "int64_val", tf.bool: "bool_val",
                 tf.uint32: "uint32_val", tf.uint64: "uint64_val"}
_NUMERIC_KINDS = "biuf"  # numpy's bool, signed, unsigned and floating kinds


def tensor_proto(array, as_proto_field=True, dtype=None):
    """`array` as a TensorProto. `as_proto_field` (TF Serving's default answer, kAsProtoField):
    the values in the typed field (`float_val`, ...), which clients that read `float_val` (as TF
    Serving's own tests do) expect; else packed in `tensor_content` (kAsProtoContent): what the
    REST front end asks for, as it reads them straight back. `dtype` names the type of a string
    array (needed when it is empty)."""
    array = np.asarray(array)
    if array.dtype.kind not in _NUMERIC_KINDS:
        return tf.make_tensor_proto(array, dtype=dtype)
    tf_dtype = tf.dtypes.as_dtype(array.dtype)
    proto = tensor_pb2.TensorProto(dtype=tf_dtype.as_datatype_enum)
    for size in array.shape:
        proto.tensor_shape.dim.add().size = size
    field = _VALUE_FIELDS.get(tf_dtype) if as_proto_field else None
    if field is None:
        proto.tensor_content = np.ascontiguousarray(array).tobytes()
    else:
        getattr(proto, field).extend(array.ravel().tolist())
    return proto


def shape_string(dims):
    """A shape as TensorShape::DebugString writes it in TF Serving's error texts: [2,3]."""
    return f"[{','.join(str(size) for size in dims)}]"


def ndarray(proto):
    """A TensorProto as a numpy array; a ValueError or TypeError when it is malformed. Packed
    bytes are copied once (a read-only view of them made the graph call slower)."""
    if not proto.tensor_content:
        return tf.make_ndarray(proto)
    dtype = tf.dtypes.as_dtype(proto.dtype)
    shape = [dim.size for dim in proto.tensor_shape.dim]
    if dtype == tf.string or any(size < 0 for size in shape):
        return tf.make_ndarray(proto)
    return np.frombuffer(proto.tensor_content, dtype=dtype.as_numpy_dtype).reshape(shape).copy()
