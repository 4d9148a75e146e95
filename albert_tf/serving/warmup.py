"""TF Serving's model warm-up (`--enable_model_warmup`): the requests an export recorded in
`assets.extra/tf_serving_warmup_requests` (a TFRecord of `PredictionLog`s) are replayed on a
version before it is served, so the first requests do not pay for graph optimisation and
per-shape kernel set-up. A warm-up request that fails fails the load, as in TF Serving."""

import os

from absl import logging
import tensorflow as tf
from tensorflow_serving.apis import prediction_log_pb2

from albert_tf import errors
from albert_tf.export.warmup_requests import WARMUP_FILE
from albert_tf.serving import request_core

MAX_WARMUP_RECORDS = 1000  # TF Serving's limit


class WarmupError(errors.UserInputError):
    """A version's warm-up file cannot be replayed; the message names the file and version.
    Not retried: the model itself loaded, and its recorded requests fail the same way again."""


_REPLAYED = {"predict_log": request_core.predict, "classify_log": request_core.classify,
             "regress_log": request_core.regress,
             "multi_inference_log": request_core.multi_inference}


def replay(runner):
    """Runs every warm-up record of `runner`'s version; returns how many (0 without the file)."""
    path = os.path.join(runner.model_dir, WARMUP_FILE)
    if not tf.io.gfile.exists(path):
        return 0
    where = f"{path} (version {runner.version} of model {runner.model_name})"
    records, count = tf.data.TFRecordDataset(path).as_numpy_iterator(), 0
    while True:
        try:  # a corrupt record fails `next`, a request the version refuses its replay
            record = next(records, None)
            if record is None:
                break
            if count == MAX_WARMUP_RECORDS:
                raise WarmupError(f"{where}: more than {MAX_WARMUP_RECORDS} warm-up records")
            log = prediction_log_pb2.PredictionLog.FromString(record)
            kind = log.WhichOneof("log_type")
            if kind not in _REPLAYED:
                raise ValueError(f"warm-up record of unsupported kind {kind!r} (predict, "
                                 f"classify, regress and multi_inference logs are replayed)")
            _REPLAYED[kind](runner, getattr(log, kind).request)
        except WarmupError:
            raise
        except Exception as error:
            message = getattr(error, "message", None) or str(error)
            raise WarmupError(f"{where}: warm-up record {count + 1} failed: "
                              f"{type(error).__name__}: {message}") from error
        count += 1
    logging.info("warmed up version %d of %s with %d requests", runner.version,
                 runner.model_name, count)
    return count
