"""`--prefer_tflite_model`: a version holding a `model.tflite` is served from it, as TF Serving's
SavedModelBundleFactory does, through the same REST and gRPC calls.

As in TF Serving the version's signatures are the TFLite file's (TfLiteSession), each run by the
TFLite signature runner; their SignatureDefs (metadata, method names) are the saved_model.pb's
of the same name. A version without `model.tflite` is served from its saved_model.pb, again as
TF Serving does, with a warning naming the file it looked for.

The file is run by LiteRT's interpreter (`ai_edge_litert`, the maintained successor of
`tf.lite.Interpreter`). A damaged file never reaches native code unchecked: built from a file
path, the interpreter maps the file and reads it without verification (a `model.tflite` cut in
half killed the process with SIGSEGV); built from the file's bytes, it runs the flatbuffer
verifier first (`read_model`), so a truncated, empty, random or wrong-schema file fails the
load of its version with a reason naming the file, like any other load failure.
"""

import os
import threading

from absl import logging
from ai_edge_litert import interpreter as litert
import numpy as np
import tensorflow as tf

from albert_tf.export.tflite import TFLITE_FILE
from albert_tf.serving.errors import ServingError
from albert_tf.serving.model_runner import ModelRunner, all_signature_defs, served


TFLITE_IDENTIFIER = b"TFL3"  # the flatbuffer file identifier of TFLite's schema, bytes 4-8


def read_model(path):
    """The bytes of the TFLite model at `path`, refused with a ServingError naming it and the
    cause when it cannot be read or is not a TFLite flatbuffer (the verifier's full check runs
    when the interpreter is built from them, `_interpreter`)."""
    try:
        with tf.io.gfile.GFile(path, "rb") as reader:
            data = reader.read()
    except tf.errors.OpError as error:
        raise ServingError(f"{path}: cannot be read: {error.message}", status=500) from error
    if not data:
        raise ServingError(f"{path}: the file is empty, not a TFLite model", status=500)
    if data[4:8] != TFLITE_IDENTIFIER:
        raise ServingError(f"{path}: not a TFLite model: its file identifier (bytes 4-8) is "
                           f"{data[4:8]!r}, a TFLite flatbuffer's is {TFLITE_IDENTIFIER!r} "
                           f"({len(data)} bytes; damaged, or another kind of file)", status=500)
    return data


def _interpreter(path, data):
    """LiteRT's interpreter of `data`, verified by TFLite's flatbuffer verifier; a truncated
    or damaged file is refused naming `path`."""
    try:
        return litert.Interpreter(model_content=data, num_threads=os.cpu_count() or 1)
    except (ValueError, RuntimeError, UnicodeDecodeError) as error:
        raise ServingError(f"{path}: damaged or truncated TFLite model ({len(data)} bytes): "
                           f"{error}", status=500) from error


class TfliteSignature:
    """One signature of the interpreter, called as a SavedModel's concrete function is
    (`structured_input_signature`, keyword tensors in, {name: tensor} out), so `ModelRunner`'s
    input checks, batching and error mapping apply unchanged. The interpreter runs one call at a
    time (TFLite interpreters are not thread-safe); its kernels use every CPU."""

    def __init__(self, interpreter, name, lock):
        self._runner = interpreter.get_signature_runner(name)
        self._lock = lock
        self.structured_input_signature = ((), {
            key: tf.TensorSpec([None if size < 0 else size for size in detail["shape_signature"]],
                               tf.as_dtype(detail["dtype"]), name=key)
            for key, detail in self._runner.get_input_details().items()})

    def __call__(self, **tensors):
        inputs = {key: np.asarray(value) for key, value in tensors.items()}
        with self._lock:
            try:
                outputs = self._runner(**inputs)
            except (RuntimeError, ValueError) as error:  # e.g. an id outside the vocabulary
                raise tf.errors.InvalidArgumentError(None, None, f"TFLite: {error}") from error
        return {key: tf.constant(value) for key, value in outputs.items()}


class TfliteRunner(ModelRunner):
    """A `ModelRunner` over `<model_dir>/model.tflite` instead of its saved_model.pb."""

    def __init__(self, model_dir, model_name, version, max_batch_size):  # not the SavedModel load
        self.model_dir, self.model_name, self.version = model_dir, model_name, version
        self.max_batch_size = max_batch_size
        self.batcher = None
        path = os.path.join(model_dir, TFLITE_FILE)
        interpreter = _interpreter(path, read_model(path))
        lock = threading.Lock()
        try:
            self.signatures = {name: TfliteSignature(interpreter, name, lock)
                               for name in interpreter.get_signature_list()}
        except (ValueError, RuntimeError) as error:  # tensors that cannot be allocated
            raise ServingError(f"{path}: the TFLite model cannot be prepared: {error}",
                               status=500) from error
        if not self.signatures:
            raise ServingError(f"{path}: the TFLite model has no signatures", status=500)
        saved = all_signature_defs(model_dir)
        missing = sorted(set(self.signatures) - set(saved))
        if missing:
            raise ServingError(f"{path}: signature(s) {missing} are not in "
                               f"{os.path.join(model_dir, 'saved_model.pb')} (its signatures: "
                               f"{sorted(served(saved))})", status=500)
        self.all_signature_defs = {name: saved[name] for name in self.signatures}
        self.signature_defs = served(self.all_signature_defs)
        logging.info("serving version %s of %s from %s (signatures %s)", version, model_name,
                     path, ", ".join(sorted(self.signatures)))


def load_runner(model_dir, model_name, version, max_batch_size):
    """The runner TF Serving's --prefer_tflite_model picks: the TFLite file when the version
    has one, else the SavedModel."""
    if tf.io.gfile.exists(os.path.join(model_dir, TFLITE_FILE)):
        return TfliteRunner(model_dir, model_name, version, max_batch_size)
    logging.warning("--prefer_tflite_model: %s has no %s; serving its saved_model.pb, as TF "
                    "Serving does", model_dir, TFLITE_FILE)
    return ModelRunner(model_dir, model_name, version, max_batch_size)
