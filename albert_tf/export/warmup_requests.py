"""TF Serving's warm-up file, `<version>/assets.extra/tf_serving_warmup_requests`: a TFRecord of
`PredictionLog`s that `tensorflow_model_server --enable_model_warmup` (and serve.py's built-in
server) replays on a version before serving it, so the first requests after a start or a new
version do not pay for graph optimisation and per-shape kernel set-up."""

import os

import numpy as np
import tensorflow as tf
from tensorflow_serving.apis import prediction_log_pb2

WARMUP_FILE = os.path.join("assets.extra", "tf_serving_warmup_requests")


def predict_log(signature_name, inputs):
    """A PredictionLog holding a PredictRequest of `inputs` ({name: array}) to a signature."""
    log = prediction_log_pb2.PredictionLog()
    request = log.predict_log.request
    request.model_spec.signature_name = signature_name
    for name, value in inputs.items():
        request.inputs[name].CopyFrom(tf.make_tensor_proto(value))
    return log


def ids_inputs(shape):
    """`input_ids` ([CLS]-like 2 then 5s), `input_mask` (ones), `segment_ids` (zeros) of
    `shape`: a request of that many real tokens, valid for any vocabulary of 6 or more."""
    ids = np.full(shape, 5, np.int32)
    ids[..., 0] = 2
    return {"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": np.zeros_like(ids)}


def strings(*values):
    """A string tensor value ([len(values)]) for a PredictRequest."""
    return np.array([value.encode("utf-8") for value in values], dtype=object)


def examples_log(signature_name, examples, regression):
    """A PredictionLog holding a ClassificationRequest (RegressionRequest) of tf.Examples."""
    log = prediction_log_pb2.PredictionLog()
    request = log.regress_log.request if regression else log.classify_log.request
    request.model_spec.signature_name = signature_name
    request.input.example_list.examples.extend(examples)
    return log


def int_example(features):
    """A tf.Example of int64 list features ({name: ints})."""
    return tf.train.Example(features=tf.train.Features(feature={
        name: tf.train.Feature(int64_list=tf.train.Int64List(value=np.asarray(values).tolist()))
        for name, values in features.items()}))


def write(model_dir, logs):
    """Writes `logs` as `<model_dir>/assets.extra/tf_serving_warmup_requests`."""
    path = os.path.join(model_dir, WARMUP_FILE)
    tf.io.gfile.makedirs(os.path.dirname(path))
    with tf.io.TFRecordWriter(path) as writer:
        for log in logs:
            writer.write(log.SerializeToString())
    return path
