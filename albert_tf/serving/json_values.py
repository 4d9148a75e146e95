"""TF Serving's JSON value conventions: `{"b64": ...}` binary values in, tf.Examples for
`:classify` / `:regress`, and tensors out (bytes outputs named `*_bytes` go back as b64)."""

import base64
import binascii

import numpy as np
import tensorflow as tf

from albert_tf.serving.errors import ServingError


def decode_b64(value, key):
    """`{"b64": "..."}` anywhere a string value may stand becomes its bytes."""
    if isinstance(value, list):
        return [decode_b64(item, key) for item in value]
    if isinstance(value, dict):
        if set(value) != {"b64"} or not isinstance(value["b64"], str):
            raise ServingError(f"input '{key}': an object value must be {{\"b64\": \"...\"}}")
        try:
            return base64.b64decode(value["b64"], validate=True)
        except (binascii.Error, ValueError) as error:
            raise ServingError(f"input '{key}': invalid base64: {error}") from error
    return value


def to_json(array, key):
    """A numpy output as JSON: strings as UTF-8 text, or as `{"b64": ...}` when the output's name
    ends in `_bytes` (TF Serving's rule) or the bytes are not UTF-8."""
    array = np.asarray(array)
    if array.dtype == object or array.dtype.kind == "S":
        def convert(value):
            if not isinstance(value, bytes):
                return value
            if not key.endswith("_bytes"):
                try:
                    return value.decode("utf-8")
                except UnicodeDecodeError:
                    pass
            return {"b64": base64.b64encode(value).decode("ascii")}
        return np.vectorize(convert, otypes=[object])(array).tolist()
    return array.tolist()


def _feature(values, name):
    """A tf.train.Feature from a JSON value or list, typed the way TF Serving types it: all ints
    → int64_list, numbers → float_list, strings or b64 objects → bytes_list."""
    values = values if isinstance(values, list) else [values]
    values = decode_b64(values, name)
    if not values:
        raise ServingError(f"feature '{name}': an empty list has no type")
    if all(isinstance(value, int) and not isinstance(value, bool) for value in values):
        if any(not -2 ** 63 <= value < 2 ** 63 for value in values):
            raise ServingError(f"feature '{name}': integer out of int64 range")
        return tf.train.Feature(int64_list=tf.train.Int64List(value=values))
    if all(isinstance(value, (int, float)) and not isinstance(value, bool) for value in values):
        return tf.train.Feature(float_list=tf.train.FloatList(value=values))
    if all(isinstance(value, (str, bytes)) for value in values):
        return tf.train.Feature(bytes_list=tf.train.BytesList(
            value=[value.encode("utf-8") if isinstance(value, str) else value for value in values]))
    raise ServingError(f"feature '{name}': values must all be numbers or all strings, got {values!r:.80}")


def serialized_examples(request):
    """The serialized tf.Examples of a Classify/Regress request: each of `examples` merged with
    the shared `context` features (TF Serving's ExampleListWithContext, flattened); a feature
    may not be in both."""
    examples = request.get("examples")
    if not isinstance(examples, list) or not examples:
        raise ServingError("'examples' must be a non-empty list of objects")
    context = request.get("context", {})
    if not isinstance(context, dict):
        raise ServingError("'context' must be an object of features")
    serialized = []
    for index, example in enumerate(examples):
        if not isinstance(example, dict):
            raise ServingError(f"examples[{index}] must be an object of features")
        both = sorted(set(context) & set(example))
        if both:
            raise ServingError(f"examples[{index}]: features {both} are also in 'context'")
        merged = {**context, **example}
        serialized.append(tf.train.Example(features=tf.train.Features(feature={
            name: _feature(value, name) for name, value in merged.items()})).SerializeToString())
    return serialized
