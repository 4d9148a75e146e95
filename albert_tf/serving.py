"""Serving an exported SavedModel over TensorFlow Serving's REST API.

`tensorflow_model_server` is not in PyPI, npm or Debian, so where it is not installed this module
answers the same REST calls itself (`GET /v1/models/<name>`, `GET /v1/models/<name>/metadata`,
`POST /v1/models/<name>:predict` with `instances` (row format) or `inputs` (columnar format) and
an optional `signature_name`). A client written against this server works unchanged against
TensorFlow Serving.

Every request gets an HTTP answer with a JSON `error` body and TF Serving's codes: 400 for a
malformed request (inputs are checked against the signature before the graph runs: names,
dtypes, ranks, static dimensions, one batch size for all inputs, `--max_batch_size`), 404 for an
unknown path, model or version, 413 for a body over `--max_body_bytes`, 500 when the graph itself
fails; the process stays up. Binary inputs may be sent as `{"b64": "..."}`, as TF Serving takes
them. A stalled upload is dropped after `request_timeout_secs`; the listen backlog is 256.
"""

import base64
import binascii
import http.server
import json
import os
import re
import shutil
import subprocess
import threading

from absl import logging
import numpy as np
import tensorflow as tf
from tensorflow.core.framework import types_pb2
import tensorflow_text  # noqa: F401  registers the SentencePiece ops of raw-text signatures

DEFAULT_SIGNATURE = "serving_default"
DEFAULT_MAX_BATCH_SIZE = 1024
DEFAULT_MAX_BODY_BYTES = 64 << 20
DEFAULT_REQUEST_TIMEOUT_SECS = 30.0
LISTEN_BACKLOG = 256


class ServingError(ValueError):
    """A request the model cannot answer; sent back with TF Serving's `error` field."""

    def __init__(self, message, status=400):
        super().__init__(message)
        self.status = status


def _decode_b64(value, key):
    """TF Serving's binary encoding: `{"b64": "..."}` anywhere a string value may stand."""
    if isinstance(value, list):
        return [_decode_b64(item, key) for item in value]
    if isinstance(value, dict):
        if set(value) != {"b64"} or not isinstance(value["b64"], str):
            raise ServingError(f"input '{key}': an object value must be {{\"b64\": \"...\"}}")
        try:
            return base64.b64decode(value["b64"], validate=True)
        except (binascii.Error, ValueError) as error:
            raise ServingError(f"input '{key}': invalid base64: {error}") from error
    return value


def resolve_model_dir(export_dir):
    """The SavedModel directory: `export_dir` itself, or its highest numeric version subdirectory."""
    if tf.io.gfile.exists(os.path.join(export_dir, "saved_model.pb")):
        return export_dir, None
    if not tf.io.gfile.isdir(export_dir):
        raise FileNotFoundError(f"{export_dir}: no such export directory")
    versions = sorted(int(name.strip("/")) for name in tf.io.gfile.listdir(export_dir)
                      if re.fullmatch(r"\d+/?", name))
    for version in reversed(versions):
        candidate = os.path.join(export_dir, str(version))
        if tf.io.gfile.exists(os.path.join(candidate, "saved_model.pb")):
            return candidate, version
    raise FileNotFoundError(
        f"{export_dir}: neither a saved_model.pb nor a numeric version subdirectory holding one")


def _to_json_value(array):
    if array.dtype == object or array.dtype.kind == "S":
        return np.vectorize(lambda v: v.decode("utf-8") if isinstance(v, bytes) else v,
                            otypes=[object])(array).tolist()
    return array.tolist()


def _tensor_info(spec, tensor_name):
    if spec.shape.rank is None:
        shape = {"dim": [], "unknown_rank": True}
    else:
        shape = {"dim": [{"size": str(-1 if size is None else size), "name": ""}
                         for size in spec.shape.as_list()], "unknown_rank": False}
    return {"dtype": types_pb2.DataType.Name(spec.dtype.as_datatype_enum),
            "tensor_shape": shape, "name": tensor_name}


class ModelRunner:
    """Runs the signatures of one loaded SavedModel on JSON-decoded inputs."""

    def __init__(self, export_dir, model_name, max_batch_size=DEFAULT_MAX_BATCH_SIZE):
        self.max_batch_size = max_batch_size
        self.model_dir, version = resolve_model_dir(export_dir)
        self.version = version if version is not None else 1
        self.model_name = model_name
        self._loaded = tf.saved_model.load(self.model_dir)
        self.signatures = dict(self._loaded.signatures)
        if not self.signatures:
            raise ServingError(f"{self.model_dir}: the SavedModel has no signatures")

    def _signature(self, name):
        name = name or DEFAULT_SIGNATURE
        if name not in self.signatures:
            raise ServingError(f"Serving signature name: \"{name}\" not found in signature def; "
                               f"available: {sorted(self.signatures)}")
        return self.signatures[name]

    def _convert_inputs(self, function, columns):
        specs = function.structured_input_signature[1]
        missing = sorted(set(specs) - set(columns))
        unknown = sorted(set(columns) - set(specs))
        if missing or unknown:
            raise ServingError(f"inputs must be exactly {sorted(specs)}; missing {missing}, unknown {unknown}")
        tensors, batch_sizes = {}, {}
        for key, spec in specs.items():
            value = columns[key]
            if spec.dtype == tf.string:
                value = _decode_b64(value, key)
            try:
                array = np.asarray(value)
                if array.dtype == object:
                    raise ValueError("ragged or mixed-type values")
                tensors[key] = tf.constant(array, dtype=spec.dtype)
            except (TypeError, ValueError, OverflowError) as error:
                raise ServingError(f"input '{key}': cannot convert to {spec.dtype.name}: "
                                   f"{error}") from error
            shape = tensors[key].shape
            if spec.shape.rank is not None and shape.rank != spec.shape.rank:
                raise ServingError(f"input '{key}': expected rank {spec.shape.rank} "
                                   f"{spec.shape.as_list()}, got shape {shape.as_list()}")
            if not spec.shape.is_compatible_with(shape):
                raise ServingError(f"input '{key}': expected shape {spec.shape.as_list()} "
                                   f"(None = any), got {shape.as_list()}")
            if shape.rank:
                batch_sizes[key] = shape[0]
        if len(set(batch_sizes.values())) > 1:
            raise ServingError(f"inputs must have the same batch size; got {batch_sizes}")
        batch = next(iter(batch_sizes.values()), 0)
        if batch > self.max_batch_size:
            raise ServingError(f"batch of {batch} exceeds the server's --max_batch_size="
                               f"{self.max_batch_size}")
        if batch == 0 and batch_sizes:
            raise ServingError("empty batch")
        return tensors

    def _run(self, function, columns):
        tensors = self._convert_inputs(function, columns)
        try:
            return {key: value.numpy() for key, value in function(**tensors).items()}
        except tf.errors.InvalidArgumentError as error:
            raise ServingError(error.message) from error
        except tf.errors.OpError as error:
            raise ServingError(error.message, status=500) from error

    def predict(self, request):
        if not isinstance(request, dict):
            raise ServingError("the request body must be a JSON object")
        if "instances" in request and "inputs" in request:
            raise ServingError("Request must have either 'instances' or 'inputs', not both")
        function = self._signature(request.get("signature_name"))
        if "instances" in request:
            instances = request["instances"]
            if not isinstance(instances, list) or not instances:
                raise ServingError("'instances' must be a non-empty list")
            names = list(function.structured_input_signature[1])
            if all(isinstance(row, dict) for row in instances):
                columns = {key: [row.get(key) for row in instances] for key in names}
            elif len(names) == 1:
                columns = {names[0]: instances}
            else:
                raise ServingError(f"instances must be objects with keys {names}")
            arrays = self._run(function, columns)
            rows = [{key: _to_json_value(np.asarray(array[i])) for key, array in arrays.items()}
                    for i in range(len(instances))]
            if len(arrays) == 1:
                rows = [next(iter(row.values())) for row in rows]
            return {"predictions": rows}
        if "inputs" in request:
            columns = request["inputs"]
            if not isinstance(columns, dict):
                names = list(function.structured_input_signature[1])
                if len(names) != 1:
                    raise ServingError(f"'inputs' must be an object with keys {names}")
                columns = {names[0]: columns}
            return {"outputs": {key: _to_json_value(value)
                                for key, value in self._run(function, columns).items()}}
        raise ServingError("the request needs 'instances' or 'inputs'")

    def status(self):
        return {"model_version_status": [{"version": str(self.version), "state": "AVAILABLE",
                                          "status": {"error_code": "OK", "error_message": ""}}]}

    def metadata(self):
        """TF Serving's GetModelMetadata JSON: `DT_*` dtypes, `tensor_shape.dim` sizes (-1 for
        any), the graph's tensor names and `method_name`."""
        signature_def = {}
        for name, function in self.signatures.items():
            input_names = {spec.name: tensor.name for spec, tensor in
                           zip(tf.nest.flatten(function.structured_input_signature),
                               function.inputs)}
            inputs = {key: _tensor_info(spec, input_names.get(spec.name or key, f"{key}:0"))
                      for key, spec in function.structured_input_signature[1].items()}
            outputs = {key: _tensor_info(spec, f"StatefulPartitionedCall:{index}")
                       for index, (key, spec) in enumerate(sorted(function.structured_outputs.items()))}
            signature_def[name] = {"inputs": inputs, "outputs": outputs,
                                   "method_name": "tensorflow/serving/predict"}
        return {"model_spec": {"name": self.model_name, "signature_name": "",
                               "version": str(self.version)},
                "metadata": {"signature_def": {"signature_def": signature_def}}}


def _route(path, model_name, version):
    """(`''` | `metadata` | `predict`…) of a TF Serving path, or a 404 ServingError: the
    model's name, and a `/versions/N` or `/labels/L` that names the loaded version."""
    match = re.fullmatch(r"/v1/models/([^/:]+)(?:/versions/(\d+)|/labels/([^/:]+))?"
                         r"(/metadata|:predict|:classify|:regress)?/?", path)
    if match is None:
        raise ServingError(f"Malformed request: {path}", status=404)
    name, requested_version, label, action = match.groups()
    if name != model_name:
        raise ServingError(f"Servable not found for request: Latest({name})", status=404)
    if requested_version is not None and int(requested_version) != version:
        raise ServingError(f"Servable not found for request: Specific({name}, "
                           f"{requested_version})", status=404)
    if label is not None:
        raise ServingError(f"Unrecognized servable version label: {label}", status=404)
    return (action or "").lstrip("/:")


def make_handler(runner, max_body_bytes=DEFAULT_MAX_BODY_BYTES,
                 request_timeout_secs=DEFAULT_REQUEST_TIMEOUT_SECS):

    class Handler(http.server.BaseHTTPRequestHandler):
        timeout = request_timeout_secs  # a stalled upload frees its thread

        def _send(self, code, body):
            data = json.dumps(body).encode("utf-8")
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _answer(self, method):
            try:
                action = _route(self.path, runner.model_name, runner.version)
                if method == "GET" and action in ("", "metadata"):
                    self._send(200, runner.status() if action == "" else runner.metadata())
                elif method == "POST" and action == "predict":
                    self._send(200, runner.predict(self._json_body()))
                else:
                    raise ServingError(f"{method} {self.path}: not supported (GET /v1/models/"
                                       f"{runner.model_name}[/metadata], POST …:predict)",
                                       status=404)
            except ServingError as error:
                self._send(error.status, {"error": str(error)})
            except Exception as error:  # a bug of ours: logged, answered as a 500, server stays up
                logging.exception("request %s %s failed", method, self.path)
                self._send(500, {"error": f"{type(error).__name__}: {error}"})

        def _json_body(self):
            try:
                length = int(self.headers.get("Content-Length", 0))
            except ValueError as error:
                raise ServingError("bad Content-Length header") from error
            if length > max_body_bytes:
                raise ServingError(f"request body of {length} bytes exceeds --max_body_bytes="
                                   f"{max_body_bytes}", status=413)
            try:
                return json.loads(self.rfile.read(length) or b"null")
            except (json.JSONDecodeError, UnicodeDecodeError) as error:
                raise ServingError(f"JSON Parse error: {error}") from error

        def send_error(self, code, message=None, explain=None):
            """http.server's own errors (unknown method, bad request line) as JSON too."""
            self.close_connection = True
            self._send(code, {"error": message or explain or f"HTTP {code}"})

        def do_GET(self):
            self._answer("GET")

        def do_POST(self):
            self._answer("POST")

        def log_message(self, format, *args):
            del format, args

    return Handler


class _Server(http.server.ThreadingHTTPServer):
    request_queue_size = LISTEN_BACKLOG  # http.server's default of 5 resets busy clients
    daemon_threads = True


def start_python_server(export_dir, model_name, port, host="127.0.0.1",
                        max_batch_size=DEFAULT_MAX_BATCH_SIZE,
                        max_body_bytes=DEFAULT_MAX_BODY_BYTES,
                        request_timeout_secs=DEFAULT_REQUEST_TIMEOUT_SECS):
    """Starts the built-in REST server in a background thread; returns (server, thread)."""
    runner = ModelRunner(export_dir, model_name, max_batch_size)
    server = _Server((host, port), make_handler(runner, max_body_bytes, request_timeout_secs))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server, thread


def model_server_command(export_dir, model_name, rest_port):
    """The `tensorflow_model_server` command line, or None when that binary is not installed."""
    binary = shutil.which("tensorflow_model_server")
    if binary is None:
        return None
    return [binary, f"--rest_api_port={rest_port}", f"--model_name={model_name}",
            f"--model_base_path={os.path.abspath(export_dir)}"]


def run_model_server(command):
    return subprocess.run(command, check=True)
