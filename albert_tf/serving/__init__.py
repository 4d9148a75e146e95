"""Serving exported SavedModels over TensorFlow Serving's REST and gRPC APIs.

`tensorflow_model_server` is not on PyPI, npm or Debian, so where it is not installed the
built-in server answers the same REST calls (tensorflow/serving `g3doc/api_rest.md`): model
status and metadata, `:predict` in row (`instances`) or columnar (`inputs`) form, `:classify` and
`:regress` on tf.Example features, `/versions/N` routing over every loaded version, b64 binary
values, TF Serving's error codes with a JSON `error` body for every request, and Prometheus
metrics at `/monitoring/prometheus/metrics`; the same calls over TF Serving's gRPC services; and
TF Serving's model config file, version lifecycle, warm-up and batching. A client written
against it works unchanged against TensorFlow Serving.

Modules, one per TF Serving part (docs/serving.md maps them):
- `server_core`: the server core, owner of the served models, resolving every ModelSpec
  (name, version, label) and status request for both front ends; `versions` the servable
  manager of one model (policy, retries, hot reload, states); `model_config` the model config
  file and its reloads;
- `model_runner`: the servable, one loaded version (signatures, input checks, graph calls,
  batched as loaded); `tflite_servable` the same from a `model.tflite`;
- `request_core`: Predict, Classify, Regress, MultiInference and GetModelMetadata, once, on TF
  Serving's protos, with `tensor_protos` (numpy <-> TensorProto);
- `rest_app` (HTTP) with `rest_json` and `json_values` (TF Serving's JSON): the REST front end;
  `grpc_server` with `grpc_listen` (ports, socket, channel arguments, TLS): the gRPC one;
- `batching` with `config_protos`; `warmup`; `metrics`; `errors`;
- `server`: `ServerOptions` (made from the flags) and `ModelServer` (the core, both front
  ends, graceful shutdown), or tensorflow_model_server.
"""

import tensorflow_text  # noqa: F401  registers the SentencePiece ops of raw-text signatures

from albert_tf.serving.batching import BatchingParameters
from albert_tf.serving.errors import ServingError
from albert_tf.serving.model_runner import DEFAULT_MAX_BATCH_SIZE, ModelRunner
from albert_tf.serving.server import (ServerOptions, model_server_command, run_model_server,
                                      start_python_server)
from albert_tf.serving.versions import ServedVersions, VersionPolicy, resolve_model_dir

__all__ = ["BatchingParameters", "DEFAULT_MAX_BATCH_SIZE", "ModelRunner", "ServedVersions",
           "ServerOptions", "ServingError", "VersionPolicy", "model_server_command",
           "resolve_model_dir", "run_model_server", "start_python_server"]
