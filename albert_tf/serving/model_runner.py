"""One loaded version, TF Serving's servable: its signatures, each input checked against its
signature before the graph runs, and the graph calls. The request core (`request_core`) answers
requests with it; batching wraps it without its knowing (`batching.BatchingServable`, as TF
Serving wraps a session in a BatchingSession)."""

import contextlib
import threading

import tensorflow as tf

from albert_tf.serving import saved_model_files
from albert_tf.serving.errors import Code, ServingError

DEFAULT_SIGNATURE = "serving_default"
DEFAULT_MAX_BATCH_SIZE = 1024


class CallSlots:
    """At most `limit` graph calls at once (None: no limit), the others waiting in arrival
    order: under overload requests are served first come, first served instead of all sharing
    the CPU and all finishing late (tens of seconds of tail with 64 concurrent calls on 2 cores)."""

    semaphore = None

    def set_limit(self, limit):
        self.semaphore = None if limit is None else threading.Semaphore(limit)


GRAPH_CALLS = CallSlots()  # one limit per process: the CPU is shared by every model


def all_signature_defs(model_dir):
    """Every SignatureDef proto of `<model_dir>/saved_model.pb` (tensor names, method names),
    `__saved_model_init_op` included: TF Serving's metadata lists the MetaGraphDef's whole map."""
    saved_model = saved_model_files.read_saved_model_proto(model_dir)
    return dict(saved_model.meta_graphs[0].signature_def.items())


def served(signature_defs):
    """The signatures a client can call: `__saved_model_init_op` is not one."""
    return {name: proto for name, proto in signature_defs.items() if not name.startswith("__")}


def graph_call(function, tensors):
    """One graph call of `function` on checked tensors; graph errors as ServingErrors."""
    try:
        with GRAPH_CALLS.semaphore or contextlib.nullcontext():
            return {key: value.numpy() for key, value in function(**tensors).items()}
    except tf.errors.InvalidArgumentError as error:
        raise ServingError(error.message) from error
    except UnicodeDecodeError as error:  # TF's error text quoted input bytes not UTF-8
        raise ServingError("the model refused an input holding bytes that are not UTF-8 "
                           "(a string input where a serialized tf.Example is expected?); "
                           "its error text could not be decoded") from error
    except tf.errors.OpError as error:
        raise ServingError(error.message, code=Code.INTERNAL) from error


class Servable:
    """The signatures of `model_dir` served as `version` of `model_name`. Its two kinds, the
    SavedModel's (`ModelRunner`) and a model.tflite's (`tflite_servable.TfliteRunner`), load
    their signatures (`_load`: {name: function of keyword tensors}) and choose the
    SignatureDefs of saved_model.pb they serve (`_signature_defs`)."""

    def __init__(self, model_dir, model_name, version, max_batch_size=DEFAULT_MAX_BATCH_SIZE):
        self.model_dir, self.model_name, self.version = model_dir, model_name, version
        self.max_batch_size = max_batch_size
        self.signatures = self._load()
        self.all_signature_defs = self._signature_defs(all_signature_defs(model_dir))  # metadata
        self.signature_defs = served(self.all_signature_defs)

    def _load(self):
        raise NotImplementedError

    def _signature_defs(self, saved):
        raise NotImplementedError

    def check(self, signature_name, columns):
        """`columns` ({input name: array}) as the tensors signature `signature_name` takes,
        refused (naming the input) unless dtype, shape and batch size fit it."""
        specs = self.input_specs(signature_name)  # the request core checked the names
        tensors, batch_sizes = {}, {}
        for key, spec in specs.items():
            try:  # numpy arrays from the request core's TensorProtos (strings: object arrays)
                tensors[key] = tf.constant(columns[key], dtype=spec.dtype)
            except (TypeError, ValueError, OverflowError) as error:
                raise ServingError(f"input '{key}': cannot convert to {spec.dtype.name}: "
                                   f"{error}") from error
            shape = tensors[key].shape
            if spec.shape.rank is not None and shape.rank != spec.shape.rank:
                raise ServingError(f"input '{key}': expected rank {spec.shape.rank} "
                                   f"{spec.shape.as_list()}, got shape {shape.as_list()}")
            if not spec.shape.is_compatible_with(shape):
                raise ServingError(f"input '{key}': expected shape {spec.shape.as_list()} "
                                   f"(None = any), got {shape.as_list()}")
            if shape.rank:
                batch_sizes[key] = shape[0]
            if shape.rank and shape[0] and 0 in shape[1:]:
                raise ServingError(f"input '{key}': empty sequences (shape {shape.as_list()}); "
                                   f"each row needs at least one element")
        if len(set(batch_sizes.values())) > 1:
            raise ServingError(f"inputs must have the same batch size; got {batch_sizes}")
        batch = next(iter(batch_sizes.values()), 0)
        if batch > self.max_batch_size:
            raise ServingError(f"batch of {batch} exceeds the server's --max_batch_size="
                               f"{self.max_batch_size}")
        if batch == 0 and batch_sizes:
            raise ServingError("empty batch")
        return tensors

    def call(self, signature_name, tensors):
        """One graph call of signature `signature_name` on checked tensors."""
        return graph_call(self.signatures[signature_name], tensors)

    def run(self, signature_name, columns):
        """The outputs (numpy) of signature `signature_name`, which the request core resolved
        (its SignatureDef exists), on `columns` ({input name: array})."""
        return self.call(signature_name, self.check(signature_name, columns))

    def input_specs(self, signature_name):
        """{input name: tf.TensorSpec} of a signature the request core resolved."""
        return self.signatures[signature_name].structured_input_signature[1]


class ModelRunner(Servable):
    """The servable of the SavedModel in `model_dir`."""

    def _load(self):
        self._loaded = saved_model_files.load(self.model_dir)
        signatures = dict(self._loaded.signatures)
        if not signatures:
            raise saved_model_files.load_error(self.model_dir, "the SavedModel has no signatures")
        return signatures

    def _signature_defs(self, saved):
        return saved
