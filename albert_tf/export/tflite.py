"""A dynamic-range int8 `model.tflite` inside a SavedModel version directory.

TF Serving started with `--prefer_tflite_model` serves a version from its `model.tflite` instead of
its saved_model.pb, through the same REST and gRPC API, its signatures those of the TFLite file
(`saved_model_bundle_factory.cc`); `serve.py --prefer_tflite_model` does the same. Dynamic-range
quantization stores the weights of the matrix products as int8 and quantizes activations on the
fly, row by row (XNNPACK's int8 kernels use VNNI where the CPU has it); embeddings, layer norms and
softmax stay float32, inputs and outputs are unchanged.

Only signatures of plain tensors convert with TFLite's built-in ops: `ids` (int32 ids in,
`probabilities`, `predictions`, `label` out). Parsing tf.Examples and the in-graph tokenizer need
TensorFlow ops the TFLite runtime lacks, so those signatures stay in the SavedModel only.
"""

import tensorflow as tf

from albert_tf.files import io_utils

TFLITE_FILE = "model.tflite"  # the name TF Serving looks for (kTfLiteModelFilename)
SIGNATURES = ("ids",)


def convert_int8(saved_model_dir, signature_keys=SIGNATURES):
    """The flatbuffer of `signature_keys` of the SavedModel, weights quantized to int8; the
    converter's own error (naming the op) if a signature needs ops TFLite lacks."""
    converter = tf.lite.TFLiteConverter.from_saved_model(saved_model_dir,
                                                         signature_keys=list(signature_keys))
    converter.optimizations = [tf.lite.Optimize.DEFAULT]  # dynamic range: no calibration data
    return converter.convert()


def write_int8(model_dir, signature_keys=SIGNATURES):
    """Writes `<model_dir>/model.tflite` (under a temporary name first); returns its size in
    bytes."""
    flatbuffer = convert_int8(model_dir, signature_keys)
    path = f"{model_dir.rstrip('/')}/{TFLITE_FILE}"
    with io_utils.atomic_path(path) as temp:
        with tf.io.gfile.GFile(temp, "wb") as writer:
            writer.write(flatbuffer)
    return len(flatbuffer)
