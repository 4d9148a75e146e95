"""TF Serving's JSON conventions, rule for rule as tensorflow_serving/util/json_tensor.cc applies
them: request parsing, the row (`instances`) and columnar (`inputs`) tensor formats with their
dtype and shape checks, tf.Examples for `:classify` / `:regress`, `{"b64": ...}` binary values,
and tensors out (floats written as TF Serving writes them, `*_bytes` outputs as b64).

Error messages are TF Serving's own text, so a client that matches on them works unchanged.
"""

import base64
import binascii
import gc
import json
import math
import re

import numpy as np
import tensorflow as tf

from albert_tf.serving import tensor_protos
from albert_tf.serving.errors import Code, ServingError

MAX_DEBUG_CHARS = 256  # TF Serving's kMaxJsonDebugStringBytes
MAX_RANK = 254  # TensorFlow's limit on the rank of a tensor
MAX_JSON_DEPTH = 1 << 20  # TF Serving parses 500000 levels (json_tensor_test.cc:87); memory bound
_INT32, _INT64, _UINT32, _UINT64 = 2 ** 31, 2 ** 63, 2 ** 32, 2 ** 64
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_OPENING_BRACKETS = re.compile(r"\[(?:[ \t\n\r]*\[)*")
_CLOSING_BRACKETS = re.compile(r"\](?:[ \t\n\r]*\])*")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")
_CONSTANTS = (("true", True), ("false", False), ("null", None), ("NaN", math.nan),
              ("Infinity", math.inf), ("-Infinity", -math.inf))
# Python's json messages → rapidjson's (GetParseError_En), which TF Serving reports.
_PARSE_MESSAGES = (("Expecting value", "Invalid value."),
                   ("Expecting property name", "Missing a name for object member."),
                   ("Expecting ':'", "Missing a colon after a name of object member."),
                   ("Expecting ','", "Missing a comma or ']' after an array element."),
                   ("Unterminated string", "Missing a closing quotation mark in string."),
                   ("Invalid \\escape", "Invalid escape character in string."),
                   ("Invalid \\u", "Incorrect hex digit after \\u escape in string."),
                   ("Invalid control character", "Invalid encoding in string."))


class JsonObject(dict):
    """A JSON object whose repeated keys keep their first value, as rapidjson's FindMember
    finds it; `duplicates` names the repeated keys (a row of `instances` is refused on them)."""

    def __init__(self, pairs=()):
        super().__init__()
        self.duplicates = []
        for key, value in pairs:
            self.add(key, value)

    def add(self, key, value):
        if key in self:
            self.duplicates.append(key)
        else:
            self[key] = value


_DECODER = json.JSONDecoder(object_pairs_hook=JsonObject)


# --- Parsing -------------------------------------------------------------------------------------

def _parse_error(message, offset):
    return ServingError(f"JSON Parse error: {message} at offset: {offset}")


def _skip(text, index):
    return _WHITESPACE.match(text, index).end()


def _scalar(text, index):
    """A string, number or constant at `index`: (value, end)."""
    if text.startswith('"', index):
        try:
            return json.decoder.scanstring(text, index + 1)
        except json.JSONDecodeError as error:
            raise _parse_error(_rapidjson_message(error.msg), error.pos) from error
    for token, value in _CONSTANTS:
        if text.startswith(token, index):
            return value, index + len(token)
    match = _NUMBER.match(text, index)
    if match is None:
        raise _parse_error("Invalid value.", index)
    number = match.group()
    return (float(number) if any(c in number for c in ".eE") else int(number)), match.end()


def _parse_deep(text, index):
    """A JSON value parsed without recursion (rapidjson's kParseIterativeFlag): for documents
    nested deeper than Python's json module can go. Returns (value, end)."""
    stack = []  # open containers: [list] or [dict, pending key]

    def key_at(position):
        position = _skip(text, position)
        if not text.startswith('"', position):
            raise _parse_error("Missing a name for object member.", position)
        key, position = _scalar(text, position)
        position = _skip(text, position)
        if not text.startswith(":", position):
            raise _parse_error("Missing a colon after a name of object member.", position)
        return key, position + 1

    while True:
        index = _skip(text, index)
        if text.startswith("[", index):
            run = _OPENING_BRACKETS.match(text, index)
            stack += [[[]] for _ in range(run.group().count("["))]
            if len(stack) > MAX_JSON_DEPTH:
                raise _parse_error(f"Nesting deeper than {MAX_JSON_DEPTH} levels.", index)
            index = _skip(text, run.end())
            if not text.startswith("]", index):
                continue
            value, index = stack.pop()[0], index + 1  # the innermost list is empty
        elif text.startswith("{", index):
            after = _skip(text, index + 1)
            if not text.startswith("}", after):
                key, index = key_at(after)
                stack.append([JsonObject(), key])
                if len(stack) > MAX_JSON_DEPTH:
                    raise _parse_error(f"Nesting deeper than {MAX_JSON_DEPTH} levels.", index)
                continue
            value, index = JsonObject(), after + 1
        else:
            value, index = _scalar(text, index)
        while True:  # attach the finished value; close the containers it finishes
            if not stack:
                return value, index
            frame = stack[-1]
            if len(frame) == 1:
                frame[0].append(value)
            else:
                frame[0].add(frame[1], value)
            index = _skip(text, index)
            char = text[index:index + 1]
            if char == ",":
                if len(frame) == 1:
                    index += 1
                else:
                    frame[1], index = key_at(index + 1)
                break
            if char == "]" and len(frame) == 1:  # close a run of lists at once
                run = _CLOSING_BRACKETS.match(text, index).group()
                value = stack.pop()[0]
                closed, wanted = 1, run.count("]")
                while closed < wanted and stack and len(stack[-1]) == 1:
                    parent = stack.pop()[0]
                    parent.append(value)
                    value, closed = parent, closed + 1
                if len(run) == wanted:  # no whitespace between the brackets
                    index += closed
                else:
                    for _ in range(closed):
                        index = text.index("]", index) + 1
                continue
            if char == "}" and len(frame) == 2:
                value, index = stack.pop()[0], index + 1
                continue
            raise _parse_error("Missing a comma or ']' after an array element." if len(frame) == 1
                               else "Missing a comma or '}' after an object member.", index)


def _rapidjson_message(message):
    return next((ours for theirs, ours in _PARSE_MESSAGES if message.startswith(theirs)),
                "Invalid value.")


def parse_request(body):
    """The JSON object of a request body (bytes), parsed as TF Serving parses it: NaN and
    ±Infinity allowed, bytes after the document ignored, any nesting depth; INVALID_ARGUMENT with
    rapidjson's message otherwise, or when the document is not an object."""
    if not body:
        raise ServingError("JSON Parse error: The document is empty")
    text = body.decode("utf-8", "surrogateescape")  # invalid UTF-8 passes through, as in rapidjson
    start = _skip(text, 0)
    if start == len(text):
        raise _parse_error("The document is empty.", start)
    try:
        document, _ = _DECODER.raw_decode(text, start)
    except json.JSONDecodeError as error:
        raise _parse_error(_rapidjson_message(error.msg), error.pos) from error
    except RecursionError:
        # Hundreds of thousands of nested lists made at once set off the cyclic garbage
        # collector over and over (seconds instead of a fraction of one): paused meanwhile.
        collecting = gc.isenabled()
        gc.disable()
        try:
            document, _ = _parse_deep(text, start)
        finally:
            if collecting:
                gc.enable()
    if not isinstance(document, dict):
        raise format_error(document, "Is not object (the request body must be a JSON object)")
    return document


def debug_string(value, limit=MAX_DEBUG_CHARS):
    """`value` as compact JSON cut at `limit` characters, for error messages (no recursion, so a
    deeply nested value costs no more than a flat one)."""
    parts, size = [], 0
    stack = [iter((value,))]
    closers = [""]
    while stack and size < limit:
        item = next(stack[-1], stack)
        if item is stack:  # that container is done
            stack.pop()
            parts.append(closers.pop())
        elif isinstance(item, _Token):
            parts.append(item.text)
        elif isinstance(item, list):
            parts.append("[")
            stack.append(_separated(item))
            closers.append("]")
        elif isinstance(item, dict):
            parts.append("{")
            stack.append(_separated(item.items(), keyed=True))
            closers.append("}")
        else:
            parts.append(json.dumps(item, allow_nan=True, ensure_ascii=False))
        size += len(parts[-1])
    return "".join(parts)[:limit]


class _Token:
    def __init__(self, text):
        self.text = text


def _separated(items, keyed=False):
    for position, item in enumerate(items):
        if position:
            yield _Token(",")
        if keyed:
            yield _Token(json.dumps(item[0], ensure_ascii=False) + ":")
            item = item[1]
        yield item


def format_error(value, *message):
    """TF Serving's FormatError: the offending JSON value, then what is wrong with it."""
    return ServingError(f"JSON Value: {debug_string(value)} {''.join(message)}")


def signature_name(document):
    """The request's `signature_name` (None when absent); it must be a string."""
    if "signature_name" not in document:
        return None
    name = document["signature_name"]
    if not isinstance(name, str):
        raise format_error(document, "not formatted correctly. 'signature_name' key must be a "
                                     "string value.")
    return name


# --- JSON values → tensors ------------------------------------------------------------------------

def _json_type(value):
    if value is None:
        return "Null"
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, dict):
        return "Object"
    return {list: "Array", str: "String"}.get(type(value), "Number")


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _int_in(value, low, high):
    """rapidjson's IsInt/IsInt64/...: an integer literal in [low, high) (larger ones are doubles)."""
    return isinstance(value, int) and not isinstance(value, bool) and low <= value < high


def dtype_string(dtype):
    """TensorFlow's DataTypeString: float, double, int32, string, ..."""
    return {tf.float32: "float", tf.float64: "double"}.get(dtype, dtype.name)


# dtype → (does this JSON value fit it?). The narrow int types take rapidjson's IsInt and are
# range-checked for their own width (TF Serving would wrap them).
_FITS = {
    tf.float32: _is_number, tf.float64: _is_number,
    tf.int32: lambda v: _int_in(v, -_INT32, _INT32), tf.int16: lambda v: _int_in(v, -2 ** 15, 2 ** 15),
    tf.int8: lambda v: _int_in(v, -128, 128), tf.uint8: lambda v: _int_in(v, 0, 256),
    tf.int64: lambda v: _int_in(v, -_INT64, _INT64), tf.uint32: lambda v: _int_in(v, 0, _UINT32),
    tf.uint64: lambda v: _int_in(v, 0, _UINT64), tf.bool: lambda v: isinstance(v, bool),
    tf.string: lambda v: isinstance(v, str),
}


def _type_error(value, dtype):
    return ServingError(f"JSON Value: {debug_string(value)} Type: {_json_type(value)} is not of "
                        f"expected type: {dtype_string(dtype)}")


def is_b64_object(value):
    return isinstance(value, dict) and len(value) == 1 and isinstance(value.get("b64"), str)


def decode_b64_object(value):
    """The bytes of a `{"b64": "..."}` object (padding optional, as absl's decoder allows)."""
    if not is_b64_object(value):
        raise format_error(value, "not formatted correctly for base64 data")
    text = value["b64"]
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError) as error:
        raise ServingError("Unable to base64 decode") from error


def _leaf(value, dtype):
    """One JSON value as a value of `dtype` (AddValueToTensor)."""
    if isinstance(value, dict):
        if dtype == tf.string:
            return decode_b64_object(value)
        raise _type_error(value, dtype)
    fits = _FITS.get(dtype)
    if fits is None:
        raise ServingError(f"Conversion of JSON Value: {debug_string(value)} to type: "
                           f"{dtype_string(dtype)}", code=Code.UNIMPLEMENTED)
    if not fits(value):
        raise _type_error(value, dtype)
    if dtype == tf.string:
        return value.encode("utf-8", "surrogateescape")
    if dtype.is_floating and isinstance(value, int):
        try:
            return float(value)
        except OverflowError:  # an integer literal past double's range: ±inf, as a float
            return math.copysign(math.inf, value)
    return value


def _dense_shape(value):
    """The shape a nested list implies, following first elements (GetDenseTensorShape)."""
    dims = []
    while isinstance(value, list):
        dims.append(len(value))
        if len(dims) > MAX_RANK:
            raise format_error(value, f"nests lists deeper than TensorFlow's {MAX_RANK} dimensions")
        if not value:
            break
        value = value[0]
    return dims


def _fill(value, level, dims, dtype, out):
    """Appends the leaves of `value` to `out`, checking that every list has the size of the shape
    at its level and every leaf sits at the last level (FillTensorProto)."""
    if not isinstance(value, list):
        if level != len(dims):
            raise ServingError(f"JSON Value: {debug_string(value)} found at incorrect level: "
                               f"{level + 1} in the JSON DOM. Expected at level: {len(dims)}")
        out.append(_leaf(value, dtype))
        return
    if level >= len(dims):
        raise ServingError(f"Encountered list at unexpected level: {level} expected < {len(dims)}")
    if len(value) != dims[level]:
        raise ServingError(f"Encountered list at unexpected size: {len(value)} at level: {level} "
                           f"expected size: {dims[level]}")
    for item in value:
        _fill(item, level + 1, dims, dtype, out)


def _array(dims, values, dtype):
    if dtype == tf.string:
        array = np.empty(len(values), dtype=object)
        array[:] = values
        return array.reshape(dims)
    with np.errstate(over="ignore"):  # beyond float's range → ±inf, as TF Serving's GetFloat
        return np.array(values, dtype=dtype.as_numpy_dtype).reshape(dims)


def _values(value, dtype):
    """(shape, flat list of values) of one tensor's JSON value."""
    dims, values = _dense_shape(value), []
    _fill(value, 0, dims, dtype, values)
    return dims, values


def _from_instances(instances, input_dtypes):
    """The row format (FillTensorMapFromInstancesList): each element one batch row."""
    names = sorted(input_dtypes)

    def is_row_object(value):
        return isinstance(value, dict) and not is_b64_object(value)

    objects = is_row_object(instances[0])
    if not objects and len(names) > 1:  # a value, list or b64 object first: which input?
        raise ServingError("instances is a plain list, but expecting list of objects as multiple "
                           "input tensors required as per tensorinfo_map")
    rows, shapes, sizes = {}, {}, {}

    def add(item, name):
        if name not in input_dtypes:
            raise ServingError(f"JSON object: does not have named input: {name}")
        dims, values = _values(item, input_dtypes[name])
        if name not in sizes:
            sizes[name], shapes[name] = len(values), dims
        elif sizes[name] != len(values):
            raise ServingError(f"Expecting tensor size: {sizes[name]} but got: {len(values)}")
        elif shapes[name] != dims:
            raise ServingError(f"Expecting shape {tensor_protos.shape_string(shapes[name])} "
                               f"but got: {tensor_protos.shape_string(dims)}")
        rows.setdefault(name, []).extend(values)

    for index, element in enumerate(instances):
        if objects:
            if not is_row_object(element):
                raise ServingError(f"Expecting object but got list at item {index} of input list")
            if getattr(element, "duplicates", None):
                # TF Serving appends a repeated key's values and then refuses the row on its
                # size; naming the key says what is wrong.
                raise ServingError(f"Failed to process element: {index} of 'instances' list. "
                                   f"JSON object: key {element.duplicates[0]} appears more than "
                                   f"once")
            for name, item in element.items():
                try:
                    add(item, name)
                except ServingError as error:
                    raise ServingError(f"Failed to process element: {index} key: {name} of "
                                       f"'instances' list. Error: {error.code.name}: {error}") from error
            if set(element) != set(names):
                raise ServingError(f"Failed to process element: {index} of 'instances' list. JSON "
                                   f"object: {debug_string(element)} keys must be equal to: "
                                   f"{','.join(names)}")
        else:
            if is_row_object(element):
                raise ServingError(f"Expecting value/list but got object at item {index} of input "
                                   f"list")
            try:
                add(element, names[0])
            except ServingError as error:
                raise ServingError(f"Failed to process element: {index} of 'instances' list. "
                                   f"Error: {error.code.name}: {error}") from error
    return {name: _array([len(instances)] + shapes[name], rows[name], input_dtypes[name])
            for name in rows}


def _from_inputs(value, input_dtypes):
    """The columnar format (FillTensorMapFromInputsMap): one value per input, or the value of the
    only input; keys that are not inputs are ignored."""
    names = sorted(input_dtypes)
    if not isinstance(value, dict) or is_b64_object(value):
        if len(names) > 1:
            raise ServingError("inputs is a plain value/list, but expecting an object as multiple "
                               "input tensors required as per tensorinfo_map")
        value = {names[0]: value}
    tensors = {}
    for name in names:
        if name not in value:
            raise ServingError(f"Missing named input: {name} in 'inputs' object.")
        try:
            tensors[name] = _array(*_values(value[name], input_dtypes[name]), input_dtypes[name])
        except ServingError as error:
            raise ServingError(f"{error} (input '{name}')", code=error.code) from error
    return tensors


def predict_inputs(document, input_dtypes):
    """(format, {input name: numpy array}) of a Predict request (FillPredictRequestFromJson):
    format 'row' for `instances`, 'columnar' for `inputs`. `input_dtypes` maps the signature's
    input names to tf.DTypes."""
    if not input_dtypes:
        raise ServingError("Failed to get input map for signature")
    if "instances" in document:
        if "inputs" in document:
            raise format_error(document, "Not formatted correctly expecting only one of 'inputs' "
                                         "or 'instances' keys to exist (a request has either "
                                         "'instances' or 'inputs', not both)")
        instances = document["instances"]
        if not isinstance(instances, list):
            raise format_error(document, "Expecting 'instances' to be an list/array")
        if not instances:
            raise format_error(document, "No values in 'instances' array")
        return "row", _from_instances(instances, input_dtypes)
    if "inputs" in document:
        return "columnar", _from_inputs(document["inputs"], input_dtypes)
    raise ServingError("Missing 'inputs' or 'instances' key")


# --- Tensors → JSON ------------------------------------------------------------------------------

def float32_json(values):
    """float32 values as TF Serving writes them: six significant digits when that reads back as
    the same float32, else nine (WriteDecimal); NaN and ±Infinity as they are."""
    array = np.asarray(values, dtype=np.float32)
    flat = array.ravel()
    doubles = flat.tolist()
    written = np.array([float(format(value, ".6g")) for value in doubles], dtype=np.float64)
    for index in np.flatnonzero(written.astype(np.float32) != flat).tolist():
        written[index] = float(format(doubles[index], ".9g"))  # NaN lands here too: stays NaN
    return written.reshape(array.shape).tolist()


def to_json(array, key):
    """A numpy output as JSON: strings as UTF-8 text, or as `{"b64": ...}` when the output's name
    ends in `_bytes` (TF Serving's rule) or the bytes are not UTF-8; float32 as TF Serving
    writes it."""
    array = np.asarray(array)
    if array.dtype.kind == "c" or array.dtype == np.float16 or array.dtype.name == "bfloat16":
        raise ServingError(f"Failed to write JSON value for tensor type: "
                           f"{dtype_string(tf.as_dtype(array.dtype))}")
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
    if array.dtype == np.float32:
        return float32_json(array)
    return array.tolist()


def rows_from_columns(outputs):
    """The row-format answer (`predictions`) from the columnar one, {name: value}
    (MakeRowFormatJsonFromTensors): every output needs one batch size."""
    batch = None
    for name in sorted(outputs):
        if not isinstance(outputs[name], list):
            raise ServingError(f"Tensor name: {name} has no shape information ")
        if batch is not None and len(outputs[name]) != batch:
            raise ServingError(f"Tensor name: {name} has inconsistent batch size: "
                               f"{len(outputs[name])} expecting: {batch}")
        batch = len(outputs[name])
    if len(outputs) == 1:
        return next(iter(outputs.values()))
    return [{name: value[row] for name, value in outputs.items()} for row in range(batch)]


# --- tf.Examples for Classify and Regress ----------------------------------------------------------

_FEATURE_KINDS = {"int64_list": ("int64", tf.train.Int64List),
                  "float_list": ("float", tf.train.FloatList),
                  "bytes_list": ("bytes", tf.train.BytesList)}


def _feature(content, name):
    """A tf.train.Feature from a JSON value or list (AddValueToFeature): booleans and integers →
    int64_list, other numbers → float_list, strings and b64 objects → bytes_list; one kind per
    feature, and an empty list is a feature with no kind."""
    kind, values = None, []

    def want(wanted):
        if kind not in (None, wanted):
            raise ServingError(f"Unexpected element type in feature: {name} expecting type: "
                               f"{_FEATURE_KINDS[kind][0]}")
        return wanted

    for value in content if isinstance(content, list) else [content]:
        if value is None or isinstance(value, list) or (
                isinstance(value, dict) and not is_b64_object(value)):
            raise ServingError(f"Feature: {name} has element with unexpected JSON type: "
                               f"{_json_type(value)}")
        if isinstance(value, bool):
            kind = want("int64_list")
            values.append(int(value))
        elif isinstance(value, dict):
            kind = want("bytes_list")
            values.append(decode_b64_object(value))
        elif isinstance(value, str):
            kind = want("bytes_list")
            values.append(value.encode("utf-8", "surrogateescape"))
        elif isinstance(value, float) or not -_INT64 <= value < _UINT64:
            kind = want("float_list")
            values.append(float(value))
        else:
            kind = want("int64_list")
            if value >= _INT64:
                raise ServingError(f"Feature: {name} has uint64_t element. Only int64_t is "
                                   f"supported.")
            values.append(value)
    if kind is None:
        return tf.train.Feature()
    return tf.train.Feature(**{kind: _FEATURE_KINDS[kind][1](value=values)})


def _example(value):
    if not isinstance(value, dict):
        raise ServingError(f"Example must be JSON object but got JSON {_json_type(value)}")
    for name in value:
        try:
            name.encode("utf-8")
        except UnicodeEncodeError as error:
            raise ServingError(f"Feature name {name!r} is not valid UTF-8") from error
    return tf.train.Example(features=tf.train.Features(feature={
        name: _feature(content, name) for name, content in value.items()}))


def examples_from_json(document):
    """(context tf.Example or None, [tf.Example]) of a Classify/Regress request
    (FillClassifyRegressRequestFromJson)."""
    context = _example(document["context"]) if "context" in document else None
    if "examples" not in document:
        raise format_error(document, "When method is classify, key 'examples' is expected and "
                                     "was not found")
    examples = document["examples"]
    if not isinstance(examples, list):
        raise format_error(document, "Expecting 'examples' value to be an list/array")
    if not examples:
        raise format_error(document, "'examples' value is an empty array")
    return context, [_example(example) for example in examples]
