"""The built-in REST server against TensorFlow Serving's own tests (github tensorflow/serving,
paths under tensorflow_serving/): every case cites the file and line it is ported from.

- `model_servers/http_rest_api_handler_test.cc` (H): paths, verbs, errors and answers on TF
  Serving's half_plus_two test model (y = 0.5 x + 2, version 123, its signature names).
- `util/json_tensor_test.cc` (J): the JSON ↔ tensor and JSON → tf.Example rules. TF Serving
  tests the converter directly; here each case goes through the server to an identity ("echo")
  signature of the input's dtype, so the answer shows the tensor that was built.
- `model_servers/tensorflow_model_server_test.py` (M): the REST tests on half_plus_three served
  as "default".
- `g3doc/api_rest.md` (D) beyond tests/fixtures/tf_serving_rest_api.json (tests/test_serving_api.py),
  and rules of TF Serving's code its tests do not cover (C: the .cc file and line).

Error texts are matched as substrings, as TF Serving's tests match them (HasSubstr).
"""

import http.client
import json
import math
import os

import numpy as np
import pytest
import tensorflow as tf

from albert_tf import serving
from albert_tf.export import signature_methods
from albert_tf.serving import errors, request_core, rest_json

HALF_PLUS_TWO = "saved_model_half_plus_two_2_versions"  # the handler test's model name
P = f"/v1/models/{HALF_PLUS_TWO}"
H = "http_rest_api_handler_test.cc"
J = "json_tensor_test.cc"
M = "tensorflow_model_server_test.py"
D = "api_rest.md"
DEEP = 500000  # json_tensor_test.cc:95, the nesting depth of its deep documents
FLOAT, DOUBLE, INT32, INT64, STRING, BOOL = (tf.float32, tf.float64, tf.int32, tf.int64,
                                             tf.string, tf.bool)


def _spec(dtype, name, shape=None):
    return tf.TensorSpec(shape, dtype, name=name)


class _HalfPlus(tf.Module):
    """TF Serving's half_plus_two test model (y = 0.5 x + offset, y2 = y + 1) with its signature
    names, plus identity signatures of each dtype for the JSON ↔ tensor cases."""

    def __init__(self, offset):
        super().__init__()
        self.offset = tf.Variable(offset)

    @tf.function(input_signature=[_spec(FLOAT, "x")])
    def predict(self, x):
        return {"y": 0.5 * x + self.offset}

    def _parsed(self, inputs, width=1):
        return tf.io.parse_example(inputs, {"x": tf.io.FixedLenFeature([width], tf.float32)})["x"]

    @tf.function(input_signature=[_spec(STRING, "inputs", [None])])
    def classify(self, inputs):
        return {"scores": 0.5 * self._parsed(inputs) + self.offset}

    @tf.function(input_signature=[_spec(STRING, "inputs", [None])])
    def regress(self, inputs):
        return {"outputs": 0.5 * self._parsed(inputs) + self.offset}

    @tf.function(input_signature=[_spec(STRING, "inputs", [None])])
    def regress_y2(self, inputs):
        return {"outputs": 0.5 * self._parsed(inputs) + self.offset + 1}

    @tf.function(input_signature=[_spec(STRING, "inputs", [None])])
    def regress_identity(self, inputs):
        return {"outputs": self._parsed(inputs)}

    @tf.function(input_signature=[_spec(STRING, "inputs", [None])])
    def classify_vehicles(self, inputs):
        scores = self._parsed(inputs, 3)
        return {"scores": scores,
                "classes": tf.tile([["car", "bike", "bus"]], [tf.shape(scores)[0], 1])}

    @tf.function(input_signature=[_spec(INT32, "int_tensor"), _spec(STRING, "str_tensor"),
                                  _spec(FLOAT, "float_tensor"), _spec(DOUBLE, "dbl_tensor")])
    def named(self, int_tensor, str_tensor, float_tensor, dbl_tensor):
        return {"int_tensor": tf.identity(int_tensor), "str_tensor": tf.identity(str_tensor),
                "float_tensor": tf.identity(float_tensor), "dbl_tensor": tf.identity(dbl_tensor)}

    @tf.function(input_signature=[_spec(INT32, "int_tensor"), _spec(STRING, "str_tensor")])
    def int_str(self, int_tensor, str_tensor):
        return {"int_tensor": tf.identity(int_tensor), "str_tensor": tf.identity(str_tensor)}

    @tf.function(input_signature=[_spec(STRING, "text")])
    def as_bytes(self, text):
        return {"str_tensor_bytes": tf.identity(text)}

    @tf.function(input_signature=[_spec(FLOAT, "x", [None])])
    def scalar_out(self, x):
        return {"total": tf.reduce_sum(x)}

    @tf.function(input_signature=[_spec(FLOAT, "x", [None])])
    def uneven_out(self, x):
        return {"a": tf.identity(x), "b": x[:1]}

    @tf.function(input_signature=[_spec(FLOAT, "x", [None])])
    def empty_out(self, x):
        return {"e": x[:0]}

    @tf.function(input_signature=[_spec(FLOAT, "x", [None])])
    def complex_out(self, x):
        return {"c": tf.complex(x, x)}


def _echo(dtype, name):
    """An identity signature: input `name` of `dtype` (the TensorSpec's name is the input's)."""
    @tf.function(input_signature=[_spec(dtype, name)])
    def echo(value):
        return {name: tf.identity(value)}
    return echo


ECHOES = {"int32": (INT32, "default"), "float": (FLOAT, "default"), "double": (DOUBLE, "default"),
          "string": (STRING, "default"), "int64": (INT64, "default"), "bool": (BOOL, "default"),
          "single_int": (INT32, "int_tensor"), "str_tensor": (STRING, "str_tensor")}


def _write_model(base, offset):
    model = _HalfPlus(offset)
    signatures = {"serving_default": model.predict, "classify_x_to_y": model.classify,
                  "regress_x_to_y": model.regress, "regress_x_to_y2": model.regress_y2,
                  "regress_x_to_x": model.regress_identity,
                  "classify_vehicles": model.classify_vehicles, "named": model.named,
                  "int_str": model.int_str, "bytes": model.as_bytes,
                  "scalar_out": model.scalar_out, "uneven_out": model.uneven_out,
                  "empty_out": model.empty_out, "complex_out": model.complex_out}
    for name, (dtype, input_name) in ECHOES.items():
        setattr(model, f"echo_{name}", _echo(dtype, input_name))
        signatures[name] = getattr(model, f"echo_{name}")
    path = os.path.join(base, "123")
    tf.saved_model.save(model, path, signatures=signatures)
    signature_methods.set_method_names(path, {
        "classify_x_to_y": signature_methods.CLASSIFY, "classify_vehicles": signature_methods.CLASSIFY,
        "regress_x_to_y": signature_methods.REGRESS, "regress_x_to_y2": signature_methods.REGRESS,
        "regress_x_to_x": signature_methods.REGRESS})


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    """{model name: port}: half_plus_two as the handler test names it, and again as "default"
    (tensorflow_model_server_test.py serves saved_model_half_plus_two_cpu so)."""
    started, ports = [], {}
    try:
        for name, offset in ((HALF_PLUS_TWO, 2.0), ("default", 2.0)):
            base = str(tmp_path_factory.mktemp(name))
            _write_model(base, offset)
            started.append(serving.start_python_server(serving.ServerOptions(
                model_base_path=base, model_name=name, rest_api_port=0)))
            ports[name] = started[-1].server_address[1]
        yield ports
    finally:
        for server in started:
            server.shutdown()


def _request(port, method, path, body=None, headers=None):
    """(status, headers, body bytes) of one request over a fresh connection."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        data = body.encode() if isinstance(body, str) else body
        connection.request(method, path, body=data, headers=dict(
            {"Content-Type": "application/json"} if data is not None else {}, **(headers or {})))
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


def _same(expected, actual):
    """JSON equality with NaN equal to NaN, 1 equal to 1.0 and the sign of zero compared."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and set(expected) == set(actual) and all(
            _same(value, actual[key]) for key, value in expected.items())
    if isinstance(expected, list):
        return isinstance(actual, list) and len(expected) == len(actual) and all(
            _same(a, b) for a, b in zip(expected, actual))
    if isinstance(expected, float) and isinstance(actual, (int, float)) and not isinstance(
            actual, bool):
        if math.isnan(expected):
            return math.isnan(actual)
        return expected == actual and math.copysign(1, expected) == math.copysign(1, actual)
    same_type = type(expected) is type(actual) or (
        isinstance(expected, int) and not isinstance(expected, bool) and isinstance(actual, float))
    return same_type and expected == actual


def _body(value):
    return json.dumps(value, allow_nan=True)


def _deep(prefix):
    return prefix + "[" * DEEP + "]" * DEEP + "}"


F32_1435774380 = float(f"{np.float32(1435774380):.9g}")  # WriteDecimal: 6 digits miss, so 9
B64 = {"hello": {"b64": "aGVsbG8="}, "world": {"b64": "d29ybGQ="}}
NAMED_ROWS = [{"int_tensor": [[1, 2], [3, 4], [5, 6]], "str_tensor": ["foo", "bar"],
               "float_tensor": [1.0, math.nan], "dbl_tensor": [math.nan]},
              {"int_tensor": [[7, 8], [9, 0], [1, 2]], "str_tensor": ["baz", "bat"],
               "float_tensor": [2.0, math.inf], "dbl_tensor": [2.0]}]
NAMED_COLUMNS = {key: [row[key] for row in NAMED_ROWS] for key in NAMED_ROWS[0]}
INT_2x3x2 = [[[1, 2], [3, 4], [5, 6]], [[7, 8], [9, 0], [1, 2]]]
STATUS_123 = {"model_version_status": [{"version": "123", "state": "AVAILABLE", "status": {
    "error_code": "OK", "error_message": ""}}]}


def _sig(name, **body):
    return _body(dict(signature_name=name, **body))


def _pr(model=HALF_PLUS_TWO, rest=":predict"):
    return f"/v1/models/{model}{rest}"


# (source, method, path, body, HTTP status, {"json": exact answer} or {"error": substring}).
# The model is half_plus_two unless the path names "default".
CASES = [
    (f"{H}:174,193", "GET", "/v1/models", None, 400, {"error": "Missing model name"}),
    (f"{H}:175", "GET", "/statuspage", None, 404, {}),
    (f"{H}:176", "GET", "/index", None, 404, {}),
    (f"{H}:183", "GET", "/v1/foo", None, 400, {"error": "Malformed request"}),
    (f"{H}:188", "POST", "/v1/foo", "", 400, {"error": "Malformed request"}),
    (f"{H}:197", "GET", "/v1/models/debug/model_name", None, 400, {"error": "Malformed request"}),
    (f"{H}:202", "POST", "/v1/models", "", 400, {"error": "Malformed request"}),
    (f"{H}:207", "GET", "/v1/models/foo:predict", None, 400, {"error": "Malformed request"}),
    (f"{H}:212", "GET", "/v1/models/foo/version/50:predict", None, 400, {"error": "Malformed request"}),
    (f"{H}:217", "POST", "/v1/models/foo/version/50:regress", "", 400, {"error": "Malformed request"}),
    (f"{H}:222", "POST", "/v1/models/foo/versions/HELLO:regress", "", 400, {"error": "Malformed request"}),
    (f"{H}:228", "POST", f"/v1/models/foo/versions/{2 ** 64 - 1}:regress", "", 400,
     {"error": "Failed to convert version"}),
    (f"{H}:236", "POST", "/v1/models/foo/metadata", "", 400, {"error": "Malformed request"}),
    (f"{H}:241", "POST", "/v1/models/foo/label/some_label:regress", "", 400, {"error": "Malformed request"}),
    (f"{H}:247", "POST", "/v1/models/foo/versions/50/labels/some_label:regress", "", 400,
     {"error": "Malformed request"}),
    (f"{H}:253", "POST", "/v1/models/foo/versions/some_label:regress", "", 400, {"error": "Malformed request"}),
    (f"{H}:265", "POST", "/v1/models/foo:predict", '{ "instances": [1] }', 404, {"error": "foo"}),
    (f"{H}:271", "POST", "/v1/models/foo/versions/50:predict", '{ "instances": [1] }', 404, {"error": "foo"}),
    (f"{H}:277", "POST", f"{P}99:predict", '{ "instances": [1] }', 404, {"error": "Servable not found"}),
    (f"{H}:291", "POST", _pr(), "", 400, {"error": "JSON Parse error: The document is empty"}),
    (f"{H}:298", "POST", _pr(), "instances = [1, 2]", 400, {"error": "JSON Parse error: Invalid value"}),
    (f"{H}:304", "POST", _pr(), '{ "instances": ["x", "y"] }', 400, {"error": "not of expected type: float"}),
    (f"{H}:311", "POST", f"{P}/labels/Version_Nonexistent:predict", '{ "instances": ["x", "y"] }', 400,
     {"error": "Unrecognized servable version label"}),
    (f"{H}:322", "POST", _pr(), '{ "signature_name": 100 }', 400,
     {"error": "'signature_name' key must be a string value."}),
    (f"{H}:335", "POST", _pr(), '{"instances": [[1.0, 2.0], [3.0, 4.0]]}', 200,
     {"json": {"predictions": [[2.5, 3.0], [3.5, 4.0]]}}),
    (f"{H}:345", "POST", f"{P}/versions/123:predict", '{"instances": [1.0, 2.0]}', 200,
     {"json": {"predictions": [2.5, 3.0]}}),
    (f"{H}:365", "POST", f"{P}/versions/123:predict",
     '{"signature_name": "serving_default", "instances": [3.0, 4.0]}', 200, {"json": {"predictions": [3.5, 4.0]}}),
    (f"{H}:376", "POST", f"{P}/versions/123:predict",
     '{"signature_name": "serving_default", "inputs": [3.0, 4.0]}', 200, {"json": {"outputs": [3.5, 4.0]}}),
    (f"{H}:392", "POST", _pr(rest=":regress"),
     '{"signature_name": "regress_x_to_y", "examples": [ { "x": 80.0 } ] }', 200, {"json": {"results": [42.0]}}),
    (f"{H}:401", "POST", f"{P}/versions/123:regress",
     '{"signature_name": "regress_x_to_y", "examples": [ { "x": 80.0 } ] }', 200, {"json": {"results": [42.0]}}),
    (f"{H}:428", "POST", _pr(rest=":classify"),
     '{"signature_name": "classify_x_to_y", "examples": [ { "x": 20.0 } ] }', 200,
     {"json": {"results": [[["", 12.0]]]}}),
    (f"{H}:454", "GET", P, None, 200, {"json": STATUS_123}),
    (f"{H}:473", "GET", f"{P}/versions/123", None, 200, {"json": STATUS_123}),

    (f"{J}:57", "POST", _pr(), _sig("int32", instances=[[1, 2], [3, 4], [5, 6]]), 200,
     {"json": {"predictions": [[1, 2], [3, 4], [5, 6]]}}),
    (f"{J}:87", "POST", _pr(), _deep('{"signature_name": "int32", "instances": [1], "nested":'), 200,
     {"json": {"predictions": [1]}}),
    (f"{J}:104", "POST", _pr(), _deep('{"signature_name":'), 400, {"error": "key must be a string value"}),
    (f"{J}:121", "POST", _pr(), _sig("float", instances=[1, 2.0, 3, 4, 5.003, 0.007, 0.0]), 200,
     {"json": {"predictions": [1.0, 2.0, 3.0, 4.0, 5.003, 0.007, 0.0]}}),
    (f"{J}:149", "POST", _pr(), _sig("double", instances=[1.0, 2, 3, 4, 0.662, 0, 0.0]), 200,
     {"json": {"predictions": [1.0, 2.0, 3.0, 4.0, 0.662, 0.0, 0.0]}}),
    (f"{J}:190", "POST", _pr(), '{"signature_name": "float", "instances": [1435774380]}', 200,
     {"json": {"predictions": [F32_1435774380]}}),
    (f"{J}:207", "POST", _pr(), '{"signature_name": "float", "instances": [1435774380.0]}', 200,
     {"json": {"predictions": [F32_1435774380]}}),
    (f"{J}:231", "POST", _pr(), '{"signature_name": "float", "instances": [1.79769e+308]}', 200,
     {"json": {"predictions": [math.inf]}}),
    (f"{J}:246", "POST", _pr(), '{"signature_name": "float", "instances": [-1.79769e+308]}', 200,
     {"json": {"predictions": [-math.inf]}}),
    (f"{J}:268", "POST", _pr(), '{"signature_name": "float", "instances": [2.22507e-308]}', 200,
     {"json": {"predictions": [0.0]}}),
    (f"{J}:283", "POST", _pr(), '{"signature_name": "float", "instances": [-2.22507e-308]}', 200,
     {"json": {"predictions": [-0.0]}}),
    (f"{J}:305", "POST", _pr(), _sig("int32", instances=[[1, 2]]), 200, {"json": {"predictions": [[1, 2]]}}),
    (f"{J}:364", "POST", _pr(), _sig("string", instances=[B64["hello"], B64["world"]]), 200,
     {"json": {"predictions": ["hello", "world"]}}),
    (f"{J}:389", "POST", _pr(), _sig("string", instances=[[B64["hello"]], [B64["world"]]]), 200,
     {"json": {"predictions": [["hello"], ["world"]]}}),
    (f"{J}:415", "POST", _pr(), _sig("string", instances=[{"default": [[B64["hello"]], [B64["world"]]]}]),
     200, {"json": {"predictions": [[["hello"], ["world"]]]}}),
    (f"{J}:454", "POST", _pr(), _sig("named", instances=NAMED_ROWS), 200, {"json": {"predictions": NAMED_ROWS}}),
    (f"{J}:536", "POST", _pr(), _sig("single_int", inputs={"int_tensor": [INT_2x3x2[0]]}), 200,
     {"json": {"outputs": [INT_2x3x2[0]]}}),
    (f"{J}:565", "POST", _pr(), _sig("single_int", inputs=[INT_2x3x2[0]]), 200, {"json": {"outputs": [INT_2x3x2[0]]}}),
    (f"{J}:650", "POST", _pr(), "", 400, {"error": "document is empty"}),
    (f"{J}:654", "POST", _pr(), '{"signature_name": 5, "instances": [[1,2],[3,4],[5,6,7]]}', 400,
     {"error": "must be a string value"}),
    (f"{J}:663", "POST", _pr(), _sig("int32", instances=[[1, 2]], inputs=[[1, 2]]), 400,
     {"error": "Not formatted correctly"}),
    (f"{J}:672", "POST", _pr(), _sig("int32", instances=[[1, 2], [3, 4], [5, 6, 7]]), 400,
     {"error": "Expecting tensor size"}),
    (f"{J}:680", "POST", _pr(), _sig("int32", instances=[[1, 2], [3, 4], [[5, 6]]]), 400,
     {"error": "Expecting shape"}),
    (f"{J}:688", "POST", _pr(), _sig("int32", instances=[1, [1]]), 400, {"error": "Expecting shape"}),
    (f"{J}:696", "POST", _pr(), _sig("int32", instances=[[1, 2], ["a", "b"]]), 400,
     {"error": "not of expected type"}),
    (f"{J}:718", "POST", _pr(), _sig("int_str", instances=[
        {"int_tensor": [[1, 2], [3, 4], [5, 6]], "str_tensor": ["foo", "bar"]},
        {"int_tensor": [[[7, 8], [9, 0], [1, 2]]], "str_tensor": ["baz", "bat"]}]), 400,
     {"error": "Expecting shape"}),
    (f"{J}:737", "POST", _pr(), _sig("int_str", instances=[
        {"int_tensor": [[1, 2], [3, 4], [5, 6], [7, 8]], "str_tensor": ["foo", "bar"]},
        {"int_tensor": [[7, 8], [9, 0], [1, 2]], "str_tensor": ["baz", "bat"]}]), 400,
     {"error": "Expecting tensor size"}),
    (f"{J}:757", "POST", _pr(), _sig("int_str", instances=[
        {"int_tensor": [[1, 2], [3, 4], [5, 6]], "str_tensor": ["foo", "bar"]}, [1, 20, 30],
        {"int_tensor": [[[7, 8], [9, 0], [1, 2]]], "str_tensor": ["baz", "bat"]}]), 400,
     {"error": "Expecting object but got list"}),
    (f"{J}:781", "POST", _pr(), _sig("str_tensor", instances=[["baz", "bar"], {"str_tensor": ["baz", "bat"]}]),
     400, {"error": "Expecting value/list but got object"}),
    (f"{J}:857", "POST", _pr(), _sig("int32", instances=INT_2x3x2), 200, {"json": {"predictions": INT_2x3x2}}),
    (f"{J}:864", "POST", _pr(), _sig("int32", inputs=INT_2x3x2), 200, {"json": {"outputs": INT_2x3x2}}),
    (f"{J}:887", "POST", _pr(), _sig("int32", instances=[1, 2, 3, 4, 5]), 200,
     {"json": {"predictions": [1, 2, 3, 4, 5]}}),
    (f"{J}:892", "POST", _pr(), _sig("int32", inputs=[1, 2, 3, 4, 5]), 200, {"json": {"outputs": [1, 2, 3, 4, 5]}}),
    (f"{J}:913", "POST", _pr(), _sig("bytes", instances=[["hello", "world"], ["tf", "serving"]]), 200,
     {"json": {"predictions": [[{"b64": "aGVsbG8="}, {"b64": "d29ybGQ="}],
                               [{"b64": "dGY="}, {"b64": "c2VydmluZw=="}]]}}),
    (f"{J}:942", "POST", _pr(), _sig("float", instances=[[9000000, 999999, 0.5], [0.0003, 0.00003, 555557.5]]),
     200, {"json": {"predictions": [[9e+06, 999999.0, 0.5], [0.0003, 3e-05, 555557.5]]}}),
    (f"{J}:967", "POST", _pr(), '{"signature_name": "float", "instances": [[NaN, Infinity], [3, -Infinity]]}',
     200, {"json": {"predictions": [[math.nan, math.inf], [3.0, -math.inf]]}}),
    (f"{J}:1005", "POST", _pr(), _sig("scalar_out", instances=[1.0, 2.0]), 400,
     {"error": "has no shape information"}),
    (f"{J}:995", "POST", _pr(), _sig("complex_out", instances=[1.0]), 400, {"error": "tensor type: complex64"}),
    (f"{J}:1104", "POST", _pr(), _sig("named", inputs=NAMED_COLUMNS), 200, {"json": {"outputs": NAMED_COLUMNS}}),
    (f"{J}:1147", "POST", _pr(), _sig("uneven_out", instances=[1.0, 2.0]), 400,
     {"error": "inconsistent batch size"}),
    (f"{J}:1165", "POST", _pr(), _sig("empty_out", instances=[1.0]), 200, {"json": {"predictions": []}}),
    (f"{J}:1534", "POST", _pr(rest=":classify"), _sig("classify_vehicles", examples=[
        {"x": [0.2, 0.7, 0.1]}, {"x": [0.7, 0.1, 0.2]}]), 200,
     {"json": {"results": [[["car", 0.2], ["bike", 0.7], ["bus", 0.1]],
                           [["car", 0.7], ["bike", 0.1], ["bus", 0.2]]]}}),
    (f"{J}:1559", "POST", _pr(rest=":regress"), _sig("regress_x_to_x", examples=[
        {"x": 0.2}, {"x": 0.9}, {"x": 1.0}]), 200, {"json": {"results": [0.2, 0.9, 1.0]}}),
    (f"{J}:1573", "POST", _pr(rest=":regress"), _sig("regress_x_to_x", examples=[
        {"x": 0.2}, {"x": math.inf}, {"x": 1.0}, {"x": -math.inf}, {"x": math.nan}]), 200,
     {"json": {"results": [0.2, math.inf, 1.0, -math.inf, math.nan]}}),
    (f"{J}:1609", "POST", _pr(), '{"signature_name": "ke\\"y", "instances": [1.0]}', 400,
     {"error": 'Serving signature name: "ke"y" not found'}),
] + [
    # ClassifyRegressRequestTest.JsonErrors, a typed test: Classify and Regress alike.
    (f"{J}:{line} ({verb})", "POST", _pr(rest=f":{verb}"), body, 400, {"error": message})
    for verb in ("classify", "regress")
    for line, body, message in (
        (1447, '{"signature_name": [ "hello" ], "examples": [ { "names": [ "foo", "bar" ] } ]}',
         "'signature_name' key must be a string"),
        (1458, '{"context": [ { "names": [ "foo", "bar" ] } ]}', "Example must be JSON object"),
        (1467, '{"examples": { "names": [ "foo", "bar" ] }}', "list/array"),
        (1476, '{"examples": [ [ { "names": [ "foo", "bar" ] } ] ]}', "Example must be JSON object"),
        (1485, '{"examples": [ { "names": [ 10, null ] } ]}',
         "names has element with unexpected JSON type: Null"),
        (1495, '{"examples": [ { "names": [ 10, 10.0 ] } ]}', "feature: names expecting type: int64"),
        (1505, '{"examples": [ { "names": [ 10, { "test": 10 } ] } ]}',
         "names has element with unexpected JSON type: Object"),
        (1515, '{"examples": [ { "names": [ [10], 20 ] } ]}',
         "names has element with unexpected JSON type: Array"),
        (1525, '{"examples": [ { "names": [ 20, 18446744073709551603 ] } ]}',
         "Only int64_t is supported"))
] + [
    (f"{M}:446", "POST", _pr("default", ":classify"),
     _body({"signature_name": "classify_x_to_y", "examples": [{"x": 2.0}]}), 200,
     {"json": {"results": [[["", 3.0]]]}}),
    (f"{M}:466", "POST", _pr("default", ":regress"),
     _body({"signature_name": "regress_x_to_y", "examples": [{"x": 2.0}]}), 200, {"json": {"results": [3.0]}}),
    (f"{M}:486", "POST", _pr("default"), _body({"instances": [2.0, 3.0, 4.0]}), 200,
     {"json": {"predictions": [3.0, 3.5, 4.0]}}),
    (f"{M}:507", "POST", _pr("default"), _body({"inputs": [2.0, 3.0, 4.0]}), 200,
     {"json": {"outputs": [3.0, 3.5, 4.0]}}),
    (f"{M}:528", "GET", "/v1/models/default", None, 200, {"json": STATUS_123}),

    (f"{D}:328", "POST", _pr(), _sig("bool", instances=[True, False]), 200, {"json": {"predictions": [True, False]}}),
    (f"{D}:330", "POST", _pr(), _sig("int64", instances=[1, -10, 0]), 200, {"json": {"predictions": [1, -10, 0]}}),
    (f"{D}:331", "POST", _pr(), '{"signature_name": "float", "instances": [1.1, -10.0, 0, NaN, Infinity, 1.5e3]}',
     200, {"json": {"predictions": [1.1, -10.0, 0.0, math.nan, math.inf, 1500.0]}}),
    # On half_plus_three in the document; half_plus_two's y2 = 0.5 x + 3 is the same function.
    (f"{D}:479", "POST", _pr(rest=":regress"),
     _body({"signature_name": "regress_x_to_y2", "examples": [{"x": 1.0}, {"x": 2.0}]}), 200,
     {"json": {"results": [3.5, 4.0]}}),
    (f"{D}:491", "POST", "/v1/models/half:predict", '{"instances": [1.0,5.0]}', 404,
     {"json": {"error": "Servable not found for request: Latest(half)"}}),

    ("http_server.cc:74", "DELETE", P, None, 400, {"error": f"Malformed request: DELETE {P}"}),
    ("http_server.cc:74 (PUT)", "PUT", _pr(), '{"instances": [1.0]}', 400, {"error": "Malformed request: PUT"}),
    ("http_rest_api_util.cc:32", "POST", f"/V1/MODELS/{HALF_PLUS_TWO}:predict", '{"instances": [1.0]}', 200,
     {"json": {"predictions": [2.5]}}),
    ("http_rest_api_util.cc:32 (verb)", "POST", f"{P}:PREDICT", '{"instances": [1.0]}', 400,
     {"error": "Malformed request"}),
    ("http_rest_api_util.cc:110", "POST", _pr(HALF_PLUS_TWO.replace("_", "%5F")), '{"instances": [1.0]}',
     200, {"json": {"predictions": [2.5]}}),
    ("json_tensor.cc:307 (float for int)", "POST", _pr(), _sig("int32", instances=[1.5]), 400,
     {"error": "Type: Number is not of expected type: int32"}),
    ("json_tensor.cc:307 (bool for int)", "POST", _pr(), _sig("int32", instances=[True]), 400,
     {"error": "Type: True is not of expected type: int32"}),
    ("json_tensor.cc:307 (int64 for int32)", "POST", _pr(), _sig("int32", instances=[2 ** 40]), 400,
     {"error": "is not of expected type: int32"}),
    ("json_tensor.cc:317 (int64)", "POST", _pr(), _sig("int64", instances=[2 ** 40, -2 ** 63]), 200,
     {"json": {"predictions": [2 ** 40, -2 ** 63]}}),
    ("json_tensor.cc:317 (uint64 for int64)", "POST", _pr(), _sig("int64", instances=[2 ** 63]), 400,
     {"error": "is not of expected type: int64"}),
    ("json_tensor.cc:449", "POST", _pr(), _sig("int_str", instances=[
        {"int_tensor": 1, "str_tensor": "a", "extra": 2}]), 400, {"error": "does not have named input: extra"}),
    ("json_tensor.cc:631", "POST", _pr(), _sig("int_str", inputs={
        "int_tensor": [1], "str_tensor": ["a"], "extra": 2}), 200,
     {"json": {"outputs": {"int_tensor": [1], "str_tensor": ["a"]}}}),
    ("json_tensor.cc:510", "POST", _pr(), '{"signature_name": null, "instances": [1.0]}', 400,
     {"error": "'signature_name' key must be a string value."}),
    ("json_tensor.cc:485", "POST", _pr(), '{"instances": [1.0]} and then some bytes', 200,
     {"json": {"predictions": [2.5]}}),
    ("json_tensor.cc:684", "POST", _pr(), '{"instances": 1.0}', 400,
     {"error": "Expecting 'instances' to be an list/array"}),
    ("json_tensor.cc:688", "POST", _pr(), '{"instances": []}', 400, {"error": "No values in 'instances' array"}),
    ("json_tensor.cc:704", "POST", _pr(), '{"signature_name": "int32"}', 400,
     {"error": "Missing 'inputs' or 'instances' key"}),
    ("json_tensor.cc:635", "POST", _pr(), _sig("int_str", inputs={"int_tensor": [1]}), 400,
     {"error": "Missing named input: str_tensor in 'inputs' object."}),
    ("json_tensor.cc:746", "POST", _pr(rest=":classify"), _sig("classify_x_to_y", examples=[
        {"x": 1.0, "flag": True, "empty": []}]), 200, {"json": {"results": [[["", 2.5]]]}}),
    ("json_tensor.cc:386", "POST", _pr(), _sig("string", instances=[{"b64": "***"}]), 400,
     {"error": "Unable to base64 decode"}),
    ("http_server.cc:170", "OPTIONS", P, None, 400, {"error": "Origin header is missing in CORS preflight"}),
]


@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
def test_tf_serving_case(servers, case):
    _, method, path, body, status, expected = case
    port = servers["default" if path.startswith("/v1/models/default") else HALF_PLUS_TWO]
    code, headers, raw = _request(port, method, path, body)
    answer = json.loads(raw) if raw else None
    assert code == status, (code, answer)
    if "json" in expected:
        assert _same(expected["json"], answer), answer
        assert headers.get("content-type") == "application/json"  # H:341, every answer
    if "error" in expected:
        assert set(answer) == {"error"} and expected["error"] in answer["error"], answer


def test_cors_preflight_with_an_origin_is_answered(servers):
    """http_server.cc:170-173: OPTIONS with an http(s) Origin header is OK."""
    code, _, _ = _request(servers[HALF_PLUS_TWO], "OPTIONS", _pr(),
                          headers={"Origin": "https://example.com"})
    assert code == 200


def test_metadata_lists_every_signature_def(servers):
    """http_rest_api_handler_test.cc:521 / tensorflow_model_server_test.py:557 against TF Serving's
    metadata of a TF2 SavedModel (servables/tensorflow/testdata/
    saved_model_half_plus_two_tf2_2_versions_metadata.json): model_spec, every SignatureDef with
    its method_name, `__saved_model_init_op` included."""
    code, _, raw = _request(servers[HALF_PLUS_TWO], "GET", f"{P}/metadata")
    body = json.loads(raw)
    assert code == 200
    assert body["model_spec"] == {"name": HALF_PLUS_TWO, "signature_name": "", "version": "123"}
    signatures = body["metadata"]["signature_def"]["signature_def"]
    assert {"serving_default", "classify_x_to_y", "regress_x_to_y",
            "__saved_model_init_op"} <= set(signatures)
    init = signatures["__saved_model_init_op"]
    assert init["inputs"] == {} and init["method_name"] == ""
    assert init["outputs"]["__saved_model_init_op"]["dtype"] == "DT_INVALID"
    assert signatures["classify_x_to_y"]["method_name"] == "tensorflow/serving/classify"
    assert signatures["regress_x_to_y"]["method_name"] == "tensorflow/serving/regress"
    x = signatures["serving_default"]["inputs"]["x"]
    assert x["dtype"] == "DT_FLOAT" and x["tensor_shape"]["unknown_rank"] is True


def test_prometheus_endpoint_and_canonical_status_labels(servers):
    """tensorflow_model_server_test.py:591-601 ('# TYPE' on the monitoring path) and
    servables/tensorflow/util.cc:117-122 (request_count labelled with the canonical status)."""
    port = servers["default"]
    assert _request(port, "POST", _pr("default"), '{"instances": [1.0]}')[0] == 200
    assert _request(port, "POST", _pr("default"), '{"instances": ["x"]}')[0] == 400
    assert _request(port, "POST", _pr("default", "/versions/9:predict"), '{"instances": [1.0]}')[0] == 404
    code, _, raw = _request(port, "GET", "/monitoring/prometheus/metrics")
    text = raw.decode()
    assert code == 200 and "# TYPE" in text
    for status in ("OK", "INVALID_ARGUMENT", "NOT_FOUND"):
        assert f':tensorflow:serving:request_count{{model_name="default",status="{status}"}}' in text


def test_http_status_of_every_canonical_code():
    """http_server.cc:46-87, ToHTTPStatusCode."""
    assert {code.name: status for code, status in errors.HTTP_STATUS.items()} == {
        "OK": 200, "CANCELLED": 499, "UNKNOWN": 500, "INVALID_ARGUMENT": 400,
        "DEADLINE_EXCEEDED": 504, "NOT_FOUND": 404, "ALREADY_EXISTS": 409,
        "PERMISSION_DENIED": 403, "RESOURCE_EXHAUSTED": 429, "FAILED_PRECONDITION": 400,
        "ABORTED": 409, "OUT_OF_RANGE": 400, "UNIMPLEMENTED": 501, "INTERNAL": 500,
        "UNAVAILABLE": 503, "DATA_LOSS": 500, "UNAUTHENTICATED": 401}
    assert [code.value for code in errors.Code] == list(range(17))  # gRPC's numbers


def _features(example):
    """{name: (kind, values)} of a tf.train.Example."""
    features = {}
    for name, feature in example.features.feature.items():
        kind = feature.WhichOneof("kind")
        features[name] = (kind, list(getattr(feature, kind).value) if kind else [])
    return features


def _examples(request):
    return [_features(tf.train.Example.FromString(serialized))
            for serialized in request_core.serialized_examples(rest_json.examples_input(request))]


def test_examples_without_context():
    """json_tensor_test.cc:1242-1310, RequestNoContext."""
    assert _examples({"examples": [{"names": ["foo", "bar"], "ratings": [8.0, 9.0], "age": 20},
                                   {"names": ["baz"], "ratings": 6.0}]}) == [
        {"names": ("bytes_list", [b"foo", b"bar"]), "ratings": ("float_list", [8.0, 9.0]),
         "age": ("int64_list", [20])},
        {"names": ("bytes_list", [b"baz"]), "ratings": ("float_list", [6.0])}]


def test_examples_with_context_b64_booleans_and_non_finite():
    """json_tensor_test.cc:1312-1443, RequestWithContextAndSignature (the context's features
    are merged into each serialized example, as TF Serving's ExampleListWithContext is)."""
    request = json.loads("""{
      "signature_name": "custom_signture",
      "context": {"query": "pizza", "location": [ "sfo" ]},
      "examples": [
        {"names": [ "foo", "bar" ], "ratings": [ 8.0, 9.0, NaN, Infinity ], "age": 20},
        {"names": [ "baz", { "b64": "aGVsbG8=" } ], "ratings": 6.0, "intboolmix": [ 1, true, false ]},
        {"names": "bar", "ratings": -Infinity}]}""")
    context = {"query": ("bytes_list", [b"pizza"]), "location": ("bytes_list", [b"sfo"])}
    first, second, third = _examples(request)
    np.testing.assert_equal(first.pop("ratings"), ("float_list", [8.0, 9.0, math.nan, math.inf]))
    assert first == dict(context, names=("bytes_list", [b"foo", b"bar"]), age=("int64_list", [20]))
    assert second == dict(context, names=("bytes_list", [b"baz", b"hello"]),
                          ratings=("float_list", [6.0]), intboolmix=("int64_list", [1, 1, 0]))
    assert third == dict(context, names=("bytes_list", [b"bar"]), ratings=("float_list", [-math.inf]))


def test_documented_binary_features():
    """api_rest.md:364-377: image bytes as b64 beside a text caption."""
    assert _examples({"examples": [
        {"image": {"b64": "aW1hZ2UgYnl0ZXM="}, "caption": "seaside"},
        {"image": {"b64": "YXdlc29tZSBpbWFnZSBieXRlcw=="}, "caption": "mountains"}]}) == [
        {"image": ("bytes_list", [b"image bytes"]), "caption": ("bytes_list", [b"seaside"])},
        {"image": ("bytes_list", [b"awesome image bytes"]), "caption": ("bytes_list", [b"mountains"])}]


def test_an_empty_feature_list_has_no_kind():
    """json_tensor.cc:806-813: an empty list is accepted and makes a Feature with no kind."""
    assert _examples({"examples": [{"empty": [], "x": 1}]}) == [
        {"empty": (None, []), "x": ("int64_list", [1])}]


def test_a_wrong_default_signature_names_itself_and_its_inputs(servers):
    """Not a TF Serving case: a request without signature_name whose inputs are another
    signature's gets an error that names the signature used and the inputs it takes."""
    code, _, raw = _request(servers[HALF_PLUS_TWO], "POST", _pr(),
                            _body({"instances": [{"text_a": "a good film", "text_b": ""}]}))
    error = json.loads(raw)["error"]
    assert code == 400
    assert "does not have named input: text_a" in error
    assert 'signature "serving_default" takes inputs: x (DT_FLOAT)' in error


@pytest.mark.parametrize("path, body", [
    (_pr(), b'{"signature_name": "regress_x_to_y", "instances": ["\xff\xfe"]}'),
    (_pr(), b'{"signature_name": "regress_x_to_y", "inputs": ["\xff\xfe"]}'),
    (f"{P}:regress", b'{"signature_name": "regress_x_to_y", "examples": [{"x\xff": 1.0}]}'),
])
def test_invalid_utf8_where_a_tf_example_is_expected_is_a_bad_request(servers, path, body):
    """Not a TF Serving test case; TF Serving answers these 400 (a parse failure of the
    serialized tf.Example is INVALID_ARGUMENT), not a 500 with the server's own exception."""
    code, _, raw = _request(servers[HALF_PLUS_TWO], "POST", path, body)
    assert code == 400, raw
    error = json.loads(raw)["error"]
    assert "UnicodeDecodeError" not in error and "UnicodeEncodeError" not in error


def test_duplicate_top_level_keys_take_the_first(servers):
    """C: http_rest_api_handler.cc looks members up with rapidjson's FindMember, which finds the
    first of repeated keys: one row, not the three of the second "instances"."""
    body = '{"instances": [1.0], "instances": [1.0, 2.0, 3.0]}'
    code, _, raw = _request(servers[HALF_PLUS_TWO], "POST", _pr(), body)
    assert (code, json.loads(raw)) == (200, {"predictions": [2.5]})


def test_a_key_repeated_inside_an_instance_is_refused_by_name(servers):
    """C: json_tensor.cc appends a repeated key's values and then refuses the row on its size;
    ours refuses it naming the key (documented in docs/serving.md)."""
    body = '{"instances": [{"x": 1.0, "x": 2.0}]}'
    code, _, raw = _request(servers[HALF_PLUS_TWO], "POST", _pr(), body)
    assert code == 400
    assert "key x appears more than once" in json.loads(raw)["error"]


def test_gzip_bodies_are_decompressed_and_limited_after(servers):
    """C: TF Serving's net_http server decompresses `Content-Encoding: gzip` request bodies."""
    import gzip
    port, gz = servers[HALF_PLUS_TWO], {"Content-Encoding": "gzip"}
    code, _, raw = _request(port, "POST", _pr(), gzip.compress(b'{"instances": [1.0, 3.0]}'), gz)
    assert (code, json.loads(raw)) == (200, {"predictions": [2.5, 3.5]})
    bomb = gzip.compress(b'{"instances": [1.0]}' + b" " * (65 << 20))
    assert len(bomb) < 1 << 20
    code, _, raw = _request(port, "POST", _pr(), bomb, gz)
    assert code == 413 and "once decompressed" in json.loads(raw)["error"]
    code, _, raw = _request(port, "POST", _pr(), b"not gzip", gz)
    assert code == 400 and "not valid gzip" in json.loads(raw)["error"]
