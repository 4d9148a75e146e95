"""`--prefer_tflite_model`: a version holding a `model.tflite` is served from it, as TF Serving's
SavedModelBundleFactory does: its signatures are the TFLite file's (TfLiteSession), their
SignatureDefs (metadata, method names) the saved_model.pb's of the same name. A version without
one is served from its saved_model.pb, with a warning naming the file it looked for.

The file is run by LiteRT's interpreter (`ai_edge_litert`), built from the file's bytes so that
TFLite's flatbuffer verifier checks it first (built from a path, it maps the file unverified: a
`model.tflite` cut in half killed the process with SIGSEGV); a damaged file fails the load of
its version naming the file, like any other load failure.
"""

import json
import os
import threading

from absl import logging
from ai_edge_litert import interpreter as litert
import numpy as np
import tensorflow as tf

from albert_tf.export.tflite import INPUT_LIMITS_FILE, TFLITE_FILE
from albert_tf.serving.errors import ServingError
from albert_tf.serving.model_runner import ModelRunner, Servable, served
from albert_tf.serving.saved_model_files import load_error


TFLITE_IDENTIFIER = b"TFL3"  # the flatbuffer file identifier of TFLite's schema, bytes 4-8


def _interpreter(path):
    """LiteRT's interpreter of the TFLite model at `path`, refused with a ServingError naming it
    and the cause when it cannot be read, is not a TFLite flatbuffer or fails the verifier."""
    try:
        with tf.io.gfile.GFile(path, "rb") as reader:
            data = reader.read()
    except tf.errors.OpError as error:
        raise load_error(path, f"cannot be read: {error.message}") from error
    if not data:
        raise load_error(path, "the file is empty, not a TFLite model")
    if data[4:8] != TFLITE_IDENTIFIER:
        raise load_error(path, f"not a TFLite model: its file identifier (bytes 4-8) is "
                               f"{data[4:8]!r}, a TFLite flatbuffer's is {TFLITE_IDENTIFIER!r} "
                               f"({len(data)} bytes; damaged, or another kind of file)")
    try:
        return litert.Interpreter(model_content=data, num_threads=os.cpu_count() or 1)
    except (ValueError, RuntimeError, UnicodeDecodeError) as error:
        raise load_error(path, f"damaged or truncated TFLite model ({len(data)} bytes): "
                               f"{error}") from error


def check_inputs(limits, tensors):
    """Refuses inputs outside a signature's `limits` (`export.tflite.albert_id_limits`), naming
    the input, as the SavedModel's in-graph asserts do: differing shapes, a sequence longer
    than the position table, values outside their range."""
    same = [name for name in limits.get("same_shape", ()) if name in tensors]
    for name in same[1:]:
        if tensors[name].shape != tensors[same[0]].shape:
            raise ServingError(f"input '{name}': shape {tensors[name].shape.as_list()} differs "
                               f"from input '{same[0]}''s {tensors[same[0]].shape.as_list()}; "
                               f"they must be equal")
    for name, tensor in tensors.items():  # [B, S], or RACE's [B, choices, S]
        if name in same and tensor.shape.rank >= 2 and tensor.shape[-1] > limits["max_length"]:
            raise ServingError(f"input '{name}': a sequence of {tensor.shape[-1]} tokens is "
                               f"longer than the model's {limits['max_length']} positions "
                               f"(max_position_embeddings)")
    for name, (low, high, what) in limits.get("ranges", {}).items():
        values = tensors[name].numpy() if name in tensors else np.zeros([0])
        if values.size and (values.min() < low or values.max() >= high):
            bad = values.min() if values.min() < low else values.max()
            raise ServingError(f"input '{name}': values must be in [{low}, {high}) ({what}); "
                               f"got {bad}")


def _newest(seen, text):
    """The newest message of an interpreter's error reporter `text`, which holds every message
    it was given (TFLite's PythonErrorReporter never empties its buffer): each error would
    otherwise repeat every earlier request's. `seen` ([text last read]) is the interpreter's."""
    newest = text[len(seen[0]):] if text.startswith(seen[0]) else text
    seen[0] = text
    return newest


class TfliteSignature:
    """One signature of the interpreter, called as a SavedModel's concrete function is
    (`structured_input_signature`, keyword tensors in, {name: tensor} out), so the servables'
    shared input checks, batching and error mapping apply unchanged. The interpreter runs one call at a
    time (TFLite interpreters are not thread-safe); its kernels use every CPU. `errors_seen`
    (`_newest`) is shared by the interpreter's signatures."""

    def __init__(self, interpreter, name, lock, errors_seen=None):
        self._runner = interpreter.get_signature_runner(name)
        self._lock, self._errors_seen = lock, errors_seen or [""]
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
                raise tf.errors.InvalidArgumentError(
                    None, None, f"TFLite: {_newest(self._errors_seen, str(error))}") from error
        return {key: tf.constant(value) for key, value in outputs.items()}


class TfliteRunner(Servable):
    """The servable of `<model_dir>/model.tflite`, the sibling of the SavedModel's `ModelRunner`:
    its signatures are the TFLite file's, their SignatureDefs the saved_model.pb's of the same
    name, and its inputs are also checked against the export's input limits."""

    def _load(self):
        path = os.path.join(self.model_dir, TFLITE_FILE)
        interpreter = _interpreter(path)
        lock, errors_seen = threading.Lock(), [""]
        try:
            signatures = {name: TfliteSignature(interpreter, name, lock, errors_seen)
                          for name in interpreter.get_signature_list()}
        except (ValueError, RuntimeError) as error:  # tensors that cannot be allocated
            raise load_error(path, f"the TFLite model cannot be prepared: {error}") from error
        if not signatures:
            raise load_error(path, "the TFLite model has no signatures")
        self.input_limits = _read_limits(self.model_dir)
        return signatures

    def _signature_defs(self, saved):
        path = os.path.join(self.model_dir, TFLITE_FILE)
        missing = sorted(set(self.signatures) - set(saved))
        if missing:
            raise load_error(path, f"signature(s) {missing} are not in "
                                   f"{os.path.join(self.model_dir, 'saved_model.pb')} (its "
                                   f"signatures: {sorted(served(saved))})")
        logging.info("serving version %s of %s from %s (signatures %s)", self.version,
                     self.model_name, path, ", ".join(sorted(self.signatures)))
        return {name: saved[name] for name in self.signatures}

    def check(self, signature_name, columns):
        tensors = super().check(signature_name, columns)
        if signature_name in self.input_limits:
            check_inputs(self.input_limits[signature_name], tensors)
        return tensors


def _read_limits(model_dir):
    """{signature: limits} of the version's INPUT_LIMITS_FILE ({} without one: an export
    older than the file, or a model.tflite not made by this project)."""
    path = os.path.join(model_dir, INPUT_LIMITS_FILE)
    if not tf.io.gfile.exists(path):
        return {}
    try:
        with tf.io.gfile.GFile(path) as reader:
            return json.loads(reader.read())
    except (ValueError, tf.errors.OpError) as error:
        raise load_error(path, f"cannot be read: {error}") from error


def load_runner(model_dir, model_name, version, max_batch_size):
    """The servable TF Serving's --prefer_tflite_model picks: the TFLite file when the version
    has one, else the SavedModel."""
    if tf.io.gfile.exists(os.path.join(model_dir, TFLITE_FILE)):
        return TfliteRunner(model_dir, model_name, version, max_batch_size)
    logging.warning("--prefer_tflite_model: %s has no %s; serving its saved_model.pb, as TF "
                    "Serving does", model_dir, TFLITE_FILE)
    return ModelRunner(model_dir, model_name, version, max_batch_size)
