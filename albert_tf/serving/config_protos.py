"""TF Serving's config messages that the tensorflow-serving-api package does not ship:
`BatchingParameters` (session_bundle_config.proto) and `SSLConfig` (ssl_config.proto), their
descriptors built here field for field, so that `--batching_parameters_file` and
`--ssl_config_file` are read by protobuf's own text-format parser (wrapper fields as
`max_batch_size { value: 32 }`, `<...>` brackets, `[8, 16]` list syntax) with protobuf's
errors."""

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_format
from google.protobuf import wrappers_pb2

_INT64, _STRING, _BOOL = (".google.protobuf.Int64Value", ".google.protobuf.StringValue",
                          ".google.protobuf.BoolValue")
_SCALARS = {"int64": descriptor_pb2.FieldDescriptorProto.TYPE_INT64,
            "string": descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
            "bool": descriptor_pb2.FieldDescriptorProto.TYPE_BOOL}

# {message name: [(field name, number, type)]}, in the .proto files' order.
_MESSAGES = {
    "BatchingParameters": [
        ("max_batch_size", 1, _INT64), ("batch_timeout_micros", 2, _INT64),
        ("max_enqueued_batches", 3, _INT64), ("num_batch_threads", 4, _INT64),
        ("thread_pool_name", 5, _STRING), ("allowed_batch_sizes", 6, "repeated int64"),
        ("pad_variable_length_inputs", 7, "bool"), ("enable_large_batch_splitting", 8, _BOOL),
        ("max_execution_batch_size", 9, _INT64)],
    "SSLConfig": [("server_key", 1, "string"), ("server_cert", 2, "string"),
                  ("custom_ca", 3, "string"), ("client_verify", 4, "bool")],
}


def _message_classes():
    field = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(
        name="albert_tf/serving/config_protos.proto", package="tensorflow.serving",
        syntax="proto3", dependency=["google/protobuf/wrappers.proto"])
    for message_name, fields in _MESSAGES.items():
        message = proto.message_type.add(name=message_name)
        for name, number, kind in fields:
            entry = message.field.add(name=name, number=number, json_name=name,
                                      label=field.LABEL_OPTIONAL)
            if kind.startswith("."):
                entry.type, entry.type_name = field.TYPE_MESSAGE, kind
            else:
                entry.type = _SCALARS[kind.split()[-1]]
                if kind.startswith("repeated"):
                    entry.label = field.LABEL_REPEATED
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(wrappers_pb2.DESCRIPTOR.serialized_pb)
    pool.Add(proto)
    return {name: message_factory.GetMessageClass(
        pool.FindMessageTypeByName(f"tensorflow.serving.{name}")) for name in _MESSAGES}


_CLASSES = _message_classes()
BatchingParametersProto = _CLASSES["BatchingParameters"]
SSLConfigProto = _CLASSES["SSLConfig"]


def parse(text, message_class, source):
    """The `message_class` message of text-format `text`; a ValueError naming `source` with
    protobuf's line and column when it does not parse."""
    try:
        return text_format.Parse(text, message_class())
    except text_format.ParseError as error:
        raise ValueError(f"{source}: Error parsing text-format "
                         f"{message_class.DESCRIPTOR.full_name}: {error}") from error
