"""A dynamic-range int8 `model.tflite` inside a SavedModel version directory.

TF Serving started with `--prefer_tflite_model` serves a version from its `model.tflite` instead of
its saved_model.pb, through the same REST and gRPC API, its signatures those of the TFLite file
(`saved_model_bundle_factory.cc`); `serve.py --prefer_tflite_model` does the same. Dynamic-range
quantization stores the weights of the matrix products as int8 and quantizes activations on the
fly, row by row (XNNPACK's kernels on x86); embeddings, layer norms and softmax stay float32,
inputs and outputs are unchanged.

Only signatures of plain tensors convert with TFLite's built-in ops (a classifier's `ids`: int32
ids in, `probabilities`, `predictions`, `label` out). Parsing tf.Examples and the in-graph
tokenizer need TensorFlow ops the TFLite runtime lacks, so those signatures stay in the
SavedModel only.
"""

import json
import os
import tempfile

from absl import logging
import tensorflow as tf

from albert_tf.files import io_utils

TFLITE_FILE = "model.tflite"  # the name TF Serving looks for (kTfLiteModelFilename)
# Beside model.tflite: what each signature's inputs may hold. The SavedModel's id signatures
# assert it in the graph; TFLite drops those asserts, and its gather then fails with "gather
# index out of bounds" naming no input, so the server checks it from this file instead.
INPUT_LIMITS_FILE = "model_tflite_inputs.json"


def albert_id_limits(config, names=("input_ids", "input_mask", "segment_ids")):
    """The input limits of a signature taking ALBERT's id inputs `names` ([B, S] each, RACE's
    [B, choices, S]): one shape, S within the position table, ids within the vocabulary, segment ids within
    type_vocab_size."""
    ranges = {"input_ids": [0, config.vocab_size, "vocab_size"],
              "segment_ids": [0, config.type_vocab_size, "type_vocab_size"]}
    return {"same_shape": list(names), "max_length": config.max_position_embeddings,
            "ranges": {name: ranges[name] for name in names if name in ranges}}


def convert_int8(archive, signature_keys):
    """The flatbuffer of endpoints `signature_keys` of a Keras `ExportArchive` (which also adds
    a `serving_default` copy of its first endpoint), weights quantized to int8;
    the converter's own error (naming the op) if one needs ops TFLite lacks. The archive holds
    only what the TFLite signatures use: the converter also converts the SavedModel's
    initializers (a tokenizer's lookup tables would fail it)."""
    with tempfile.TemporaryDirectory() as saved_model:
        archive.write_out(saved_model, verbose=False)
        converter = tf.lite.TFLiteConverter.from_saved_model(saved_model,
                                                             signature_keys=list(signature_keys))
        converter.optimizations = [tf.lite.Optimize.DEFAULT]  # dynamic range: no calibration
        return converter.convert()


def write_int8(archive, signature_keys, model_dir):
    """Writes `<model_dir>/model.tflite` of `signature_keys` of `archive` (under a temporary
    name first); returns its size in bytes."""
    flatbuffer = convert_int8(archive, signature_keys)
    path = f"{model_dir.rstrip('/')}/{TFLITE_FILE}"
    with io_utils.atomic_path(path) as temp:
        with tf.io.gfile.GFile(temp, "wb") as writer:
            writer.write(flatbuffer)
    return len(flatbuffer)


class Int8File:
    """The `finish` hook of `versioned.write_archive` that adds the int8 `model.tflite` of
    `signature_keys` of the archive `make_archive()` builds to the version before it is renamed
    into place; `log_written(version_dir)` then says what was written."""

    def __init__(self, make_archive, signature_keys, input_limits=None):
        self.make_archive, self.signature_keys = make_archive, tuple(signature_keys)
        self.input_limits = input_limits  # {signature: limits}, written as INPUT_LIMITS_FILE
        self.size = None

    def __call__(self, model_dir):
        self.size = write_int8(self.make_archive(), self.signature_keys, model_dir)
        if self.input_limits:
            with io_utils.atomic_path(f"{model_dir.rstrip('/')}/{INPUT_LIMITS_FILE}") as temp:
                with tf.io.gfile.GFile(temp, "w") as writer:
                    writer.write(json.dumps(self.input_limits, indent=1))

    def warmup_logs(self, logs):
        """The warm-up requests a TFLite-served version can replay: those of its signatures."""
        return [log for log in logs
                if log.predict_log.request.model_spec.signature_name in self.signature_keys]

    def log_written(self, version_dir):
        logging.info("Wrote %s (%.1f MB, dynamic-range int8, signature(s) %s; served with "
                     "--prefer_tflite_model)", os.path.join(version_dir, TFLITE_FILE),
                     self.size / 1e6, ", ".join(self.signature_keys))
