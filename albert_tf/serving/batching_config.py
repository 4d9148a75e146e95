"""TF Serving's `BatchingParameters` message (session_bundle_config.proto), which the
tensorflow-serving-api package does not ship: its descriptor built here, field for field, so
that `--batching_parameters_file` is read by protobuf's own text-format parser (wrapper
fields as `max_batch_size { value: 32 }`, `<...>` brackets, `[8, 16]` list syntax) and its
errors are protobuf's."""

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_format
from google.protobuf import wrappers_pb2

FULL_NAME = "tensorflow.serving.BatchingParameters"

# (name, number, type, label) in session_bundle_config.proto's order.
_INT64, _STRING, _BOOL = ".google.protobuf.Int64Value", ".google.protobuf.StringValue", \
    ".google.protobuf.BoolValue"
_FIELDS = [("max_batch_size", 1, _INT64), ("batch_timeout_micros", 2, _INT64),
           ("max_enqueued_batches", 3, _INT64), ("num_batch_threads", 4, _INT64),
           ("thread_pool_name", 5, _STRING), ("allowed_batch_sizes", 6, "repeated int64"),
           ("pad_variable_length_inputs", 7, "bool"), ("enable_large_batch_splitting", 8, _BOOL),
           ("max_execution_batch_size", 9, _INT64)]


def _message_class():
    field = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(
        name="albert_tf/serving/session_bundle_config.proto", package="tensorflow.serving",
        syntax="proto3", dependency=["google/protobuf/wrappers.proto"])
    message = proto.message_type.add(name="BatchingParameters")
    for name, number, kind in _FIELDS:
        entry = message.field.add(name=name, number=number, json_name=name,
                                  label=field.LABEL_OPTIONAL)
        if kind == "repeated int64":
            entry.type, entry.label = field.TYPE_INT64, field.LABEL_REPEATED
        elif kind == "bool":
            entry.type = field.TYPE_BOOL
        else:
            entry.type, entry.type_name = field.TYPE_MESSAGE, kind
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(wrappers_pb2.DESCRIPTOR.serialized_pb)
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(FULL_NAME))


BatchingParametersProto = _message_class()


def parse(text, source):
    """The BatchingParameters message of text-format `text`; a ValueError naming `source`
    with protobuf's line and column when it does not parse."""
    try:
        return text_format.Parse(text, BatchingParametersProto())
    except text_format.ParseError as error:
        raise ValueError(f"{source}: Error parsing text-format {FULL_NAME}: {error}") from error
