"""Serving an exported SavedModel over TensorFlow Serving's REST API.

`tensorflow_model_server` is not in PyPI, npm or Debian, so where it is not installed this module
answers the same REST calls itself (`GET /v1/models/<name>`, `GET /v1/models/<name>/metadata`,
`POST /v1/models/<name>:predict` with `instances` (row format) or `inputs` (columnar format) and
an optional `signature_name`). A client written against this server works unchanged against
TensorFlow Serving.
"""

import http.server
import json
import os
import re
import shutil
import subprocess
import threading

import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401  registers the SentencePiece ops of raw-text signatures

DEFAULT_SIGNATURE = "serving_default"


class ServingError(ValueError):
    """A request the model cannot answer; sent back as HTTP 400 with TF Serving's `error` field."""


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


class ModelRunner:
    """Runs the signatures of one loaded SavedModel on JSON-decoded inputs."""

    def __init__(self, export_dir, model_name):
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
        tensors = {}
        for key, spec in specs.items():
            try:
                tensors[key] = tf.constant(columns[key], dtype=spec.dtype)
            except (TypeError, ValueError) as error:
                raise ServingError(f"input '{key}': cannot convert to {spec.dtype.name}: {error}") from error
        return tensors

    def predict(self, request):
        if not isinstance(request, dict):
            raise ServingError("the request body must be a JSON object")
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
            outputs = function(**self._convert_inputs(function, columns))
            arrays = {key: value.numpy() for key, value in outputs.items()}
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
            outputs = function(**self._convert_inputs(function, columns))
            return {"outputs": {key: _to_json_value(value.numpy()) for key, value in outputs.items()}}
        raise ServingError("the request needs 'instances' or 'inputs'")

    def status(self):
        return {"model_version_status": [{"version": str(self.version), "state": "AVAILABLE",
                                          "status": {"error_code": "OK", "error_message": ""}}]}

    def metadata(self):
        signature_def = {}
        for name, function in self.signatures.items():
            inputs = {key: {"dtype": spec.dtype.name, "shape": spec.shape.as_list()}
                      for key, spec in function.structured_input_signature[1].items()}
            outputs = {key: {"dtype": spec.dtype.name, "shape": spec.shape.as_list()}
                       for key, spec in function.structured_outputs.items()}
            signature_def[name] = {"inputs": inputs, "outputs": outputs}
        return {"model_spec": {"name": self.model_name, "version": str(self.version)},
                "metadata": {"signature_def": {"signature_def": signature_def}}}


def make_handler(runner):
    prefix = f"/v1/models/{runner.model_name}"

    class Handler(http.server.BaseHTTPRequestHandler):
        def _send(self, code, body):
            data = json.dumps(body).encode("utf-8")
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            path = re.sub(r"/versions/\d+", "", self.path.rstrip("/"))
            if path == prefix:
                self._send(200, runner.status())
            elif path == prefix + "/metadata":
                self._send(200, runner.metadata())
            else:
                self._send(404, {"error": f"unknown path {self.path}"})

        def do_POST(self):
            path = re.sub(r"/versions/\d+", "", self.path)
            if path != prefix + ":predict":
                self._send(404, {"error": f"unknown path {self.path}; POST {prefix}:predict"})
                return
            length = int(self.headers.get("Content-Length", 0))
            try:
                request = json.loads(self.rfile.read(length) or b"null")
                self._send(200, runner.predict(request))
            except (ServingError, json.JSONDecodeError) as error:
                self._send(400, {"error": str(error)})

        def log_message(self, format, *args):
            del format, args

    return Handler


def start_python_server(export_dir, model_name, port, host="127.0.0.1"):
    """Starts the built-in REST server in a background thread; returns (server, thread)."""
    runner = ModelRunner(export_dir, model_name)
    server = http.server.ThreadingHTTPServer((host, port), make_handler(runner))
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
