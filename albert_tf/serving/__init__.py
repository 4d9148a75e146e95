"""Serving exported SavedModels over TensorFlow Serving's REST and gRPC APIs.

`tensorflow_model_server` is not on PyPI, npm or Debian, so where it is not installed the
built-in server answers the same REST calls (tensorflow/serving `g3doc/api_rest.md`): model
status and metadata, `:predict` in row (`instances`) or columnar (`inputs`) form, `:classify` and
`:regress` on tf.Example features, `/versions/N` routing over every loaded version, b64 binary
values, TF Serving's error codes with a JSON `error` body for every request, and Prometheus
metrics at `/monitoring/prometheus/metrics`; the same calls over TF Serving's gRPC services; and
TF Serving's model config file, version lifecycle, warm-up and batching. A client written
against it works unchanged against TensorFlow Serving.

Its modules are named after the TF Serving parts they stand for (docs/serving.md maps them):
`server_core`, `versions`, `model_config`, `model_runner` (the servable), `request_core`, the
REST (`rest_app`) and gRPC (`grpc_server`) front ends, `batching`, `warmup`, `server`.
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
