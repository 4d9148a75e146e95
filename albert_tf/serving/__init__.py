"""Serving exported SavedModels over TensorFlow Serving's REST and gRPC APIs.

`tensorflow_model_server` is not on PyPI, npm or Debian, so where it is not installed the
built-in server answers the same REST calls (tensorflow/serving `g3doc/api_rest.md`): model
status and metadata, `:predict` in row (`instances`) or columnar (`inputs`) form, `:classify` and
`:regress` on tf.Example features, `/versions/N` routing over every loaded version, b64 binary
values, TF Serving's error codes with a JSON `error` body for every request, and Prometheus
metrics at `/monitoring/prometheus/metrics`; the same calls over TF Serving's gRPC services; and
TF Serving's model config file, version lifecycle, warm-up and batching. A client written
against it works unchanged against TensorFlow Serving.

Modules, by TF Serving's concepts:
- server core and servable manager: `versions` (the versions under a base path: policy,
  retries, hot reload, states) and `model_config` (the model config file and its reloads);
  `model_runner` is the servable, one loaded version (its signatures, input checks, graph
  calls), and `tflite_servable` the same for a version's `model.tflite` (TF Serving's
  `--prefer_tflite_model`);
- request core: `request_core`, Predict, Classify, Regress, MultiInference and
  GetModelMetadata implemented once on TF Serving's request and response protos, with
  `tensor_protos` (numpy arrays <-> TensorProtos as packed bytes);
- REST front end: `rest_app` (the ASGI application: paths, bodies, status codes) and
  `rest_json` (the JSON turned into the request core's protos and its answers back into JSON,
  as http_rest_api_handler.cc), with `json_values` (TF Serving's JSON rules and error texts);
- gRPC front end: `grpc_server` (the PredictionService and ModelService, calling the request
  core) and `grpc_listen` (ports, Unix socket, channel arguments, TLS);
- `batching` (joining concurrent model calls, callers isolated) with `config_protos` (the
  BatchingParameters and SSLConfig messages); `warmup` (replays recorded requests through the
  request core), `metrics`, `errors`;
- `server`: `ModelServer` holds the model lifecycle and the two front ends, each started on
  its own (or runs tensorflow_model_server).
"""

import tensorflow_text  # noqa: F401  registers the SentencePiece ops of raw-text signatures

from albert_tf.serving.batching import BatchingParameters
from albert_tf.serving.errors import ServingError
from albert_tf.serving.grpc_server import DEFAULT_GRPC_PORT
from albert_tf.serving.model_runner import DEFAULT_MAX_BATCH_SIZE, ModelRunner
from albert_tf.serving.rest_app import DEFAULT_MAX_BODY_BYTES, DEFAULT_REQUEST_TIMEOUT_SECS
from albert_tf.serving.server import (DEFAULT_HEADER_TIMEOUT_SECS, DEFAULT_MAX_CONCURRENT_MODEL_CALLS,
                                      DEFAULT_MAX_CONNECTIONS, DEFAULT_SHUTDOWN_GRACE_PERIOD_SECS,
                                      model_server_command, run_model_server, start_python_server)
from albert_tf.serving.versions import (DEFAULT_LOAD_RETRY_INTERVAL_SECS,
                                        DEFAULT_MAX_NUM_LOAD_RETRIES, DEFAULT_NUM_VERSIONS,
                                        DEFAULT_POLL_SECS, ServedVersions, VersionPolicy,
                                        resolve_model_dir)

__all__ = ["BatchingParameters", "DEFAULT_GRPC_PORT", "DEFAULT_HEADER_TIMEOUT_SECS",
           "DEFAULT_LOAD_RETRY_INTERVAL_SECS", "DEFAULT_MAX_BATCH_SIZE", "DEFAULT_MAX_BODY_BYTES",
           "DEFAULT_MAX_CONCURRENT_MODEL_CALLS", "DEFAULT_MAX_CONNECTIONS",
           "DEFAULT_MAX_NUM_LOAD_RETRIES", "DEFAULT_NUM_VERSIONS", "DEFAULT_POLL_SECS",
           "DEFAULT_REQUEST_TIMEOUT_SECS", "DEFAULT_SHUTDOWN_GRACE_PERIOD_SECS", "ModelRunner", "ServedVersions", "ServingError",
           "VersionPolicy", "model_server_command", "resolve_model_dir", "run_model_server",
           "start_python_server"]
