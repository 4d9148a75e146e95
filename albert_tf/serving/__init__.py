"""Serving exported SavedModels over TensorFlow Serving's REST and gRPC APIs.

`tensorflow_model_server` is not on PyPI, npm or Debian, so where it is not installed the
built-in server answers the same REST calls (tensorflow/serving `g3doc/api_rest.md`): model
status and metadata, `:predict` in row (`instances`) or columnar (`inputs`) form, `:classify` and
`:regress` on tf.Example features, `/versions/N` routing over every loaded version, b64 binary
values, TF Serving's error codes with a JSON `error` body for every request, and Prometheus
metrics at `/monitoring/prometheus/metrics`; the same calls over TF Serving's gRPC services; and
TF Serving's model config file, version lifecycle, warm-up and batching. A client written
against it works unchanged against TensorFlow Serving.

Modules, by TF Serving's concepts: server core and servable manager: `versions` (the versions
under a base path: policy, retries, hot reload, states) and `model_config` (TF Serving's model
config file and reloads); request core: `model_runner` (one loaded version: input checks and
the calls), `tensor_requests` (TF Serving's request protos), `json_values` (its JSON
conventions); front ends: `rest_app` (the ASGI application), `grpc_server` (its gRPC services)
and `grpc_listen` (ports, Unix socket, channel arguments, TLS); `batching` (joining concurrent
requests, callers isolated) with `config_protos` (the BatchingParameters and SSLConfig
messages); `warmup`, `metrics`, `errors`; `tflite_servable` (a version's `model.tflite`, TF Serving's
`--prefer_tflite_model`); `server` (the `ModelServer` holding the lifecycle
and both front ends, or tensorflow_model_server).
"""

import tensorflow_text  # noqa: F401  registers the SentencePiece ops of raw-text signatures

from albert_tf.serving.batching import BatchingParameters
from albert_tf.serving.errors import ServingError
from albert_tf.serving.grpc_server import DEFAULT_GRPC_PORT
from albert_tf.serving.model_runner import DEFAULT_MAX_BATCH_SIZE, ModelRunner
from albert_tf.serving.rest_app import DEFAULT_MAX_BODY_BYTES, DEFAULT_REQUEST_TIMEOUT_SECS
from albert_tf.serving.server import (DEFAULT_HEADER_TIMEOUT_SECS, DEFAULT_MAX_CONCURRENT_MODEL_CALLS,
                                      DEFAULT_MAX_CONNECTIONS,
                                      model_server_command, run_model_server, start_python_server)
from albert_tf.serving.versions import (DEFAULT_LOAD_RETRY_INTERVAL_SECS,
                                        DEFAULT_MAX_NUM_LOAD_RETRIES, DEFAULT_NUM_VERSIONS,
                                        DEFAULT_POLL_SECS, ServedVersions, VersionPolicy,
                                        resolve_model_dir)

__all__ = ["BatchingParameters", "DEFAULT_GRPC_PORT", "DEFAULT_HEADER_TIMEOUT_SECS",
           "DEFAULT_LOAD_RETRY_INTERVAL_SECS", "DEFAULT_MAX_BATCH_SIZE", "DEFAULT_MAX_BODY_BYTES",
           "DEFAULT_MAX_CONCURRENT_MODEL_CALLS", "DEFAULT_MAX_CONNECTIONS",
           "DEFAULT_MAX_NUM_LOAD_RETRIES", "DEFAULT_NUM_VERSIONS", "DEFAULT_POLL_SECS",
           "DEFAULT_REQUEST_TIMEOUT_SECS", "ModelRunner", "ServedVersions", "ServingError",
           "VersionPolicy", "model_server_command", "resolve_model_dir", "run_model_server",
           "start_python_server"]
