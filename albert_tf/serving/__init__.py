"""Serving exported SavedModels over TensorFlow Serving's REST and gRPC APIs.

`tensorflow_model_server` is not on PyPI, npm or Debian, so where it is not installed the
built-in server answers the same calls (tensorflow/serving `g3doc/api_rest.md`, its gRPC
services, model config file, version lifecycle, warm-up, batching and metrics): a client written
against it works unchanged against TensorFlow Serving. Its modules are named after the TF Serving
parts they stand for; docs/serving.md maps them and lists what is served.
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
