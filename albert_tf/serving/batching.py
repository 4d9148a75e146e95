"""Server-side batching as TF Serving's `--enable_batching`: concurrent requests to one signature
are joined along the batch dimension into one graph call (one call of 32 rows costs far less
than 32 calls of one row on a CPU) and each caller gets its own rows back.

A batch runs once a batch thread is free and it is full or `batch_timeout_micros` old; a
request that would need more than `max_enqueued_batches` waiting is refused at once (503).
Padding (`allowed_batch_sizes`, `pad_variable_length_inputs`: zeros, which an `input_mask`
reads as padding) and the isolation of callers (each checked before it joins; a failed joined
batch rerun request by request) are described in docs/serving.md.
"""

import os
import threading
import time

import numpy as np
import tensorflow as tf

from albert_tf.serving import config_protos
from albert_tf.serving.errors import Code, ServingError


MAX_BATCH_TIMEOUT_MICROS = 60_000_000  # beyond a minute a lone request only waits


class BatchingParameters:
    """TF Serving's `BatchingParameters` (session_bundle_config.proto), with its defaults and
    the checks of TensorFlow's SharedBatchScheduler (its error texts): `num_batch_threads`
    unset is the CPU count, 0 is refused."""

    def __init__(self, max_batch_size=1000, batch_timeout_micros=0, max_enqueued_batches=10,
                 num_batch_threads=None, allowed_batch_sizes=(), pad_variable_length_inputs=False):
        self.max_batch_size, self.batch_timeout_micros = max_batch_size, batch_timeout_micros
        self.max_enqueued_batches = max_enqueued_batches
        self.num_batch_threads = (os.cpu_count() or 1) if num_batch_threads is None \
            else num_batch_threads
        self.allowed_batch_sizes = list(allowed_batch_sizes)
        self.pad_variable_length_inputs = pad_variable_length_inputs
        for name in ("max_batch_size", "max_enqueued_batches", "num_batch_threads"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be positive; was {getattr(self, name)}")
        if batch_timeout_micros < 0:
            raise ValueError(f"batch_timeout_micros must be non-negative; was "
                             f"{batch_timeout_micros}")
        if batch_timeout_micros > MAX_BATCH_TIMEOUT_MICROS:
            raise ValueError(f"batch_timeout_micros must be at most {MAX_BATCH_TIMEOUT_MICROS} "
                             f"(one minute: a lone request waits that long for company); was "
                             f"{batch_timeout_micros}")
        if any(size < 1 for size in self.allowed_batch_sizes):
            raise ValueError(f"allowed_batch_sizes must be positive; was {self.allowed_batch_sizes}")
        sizes = self.allowed_batch_sizes
        if any(later <= earlier for earlier, later in zip(sizes, sizes[1:])):
            raise ValueError(f"allowed_batch_sizes entries must be monotonically increasing; "
                             f"was {sizes}")
        if sizes and sizes[-1] != max_batch_size:
            raise ValueError(f"Last entry in allowed_batch_sizes must match max_batch_size; last "
                             f"entry was {sizes[-1]}; expected {max_batch_size}")

    @classmethod
    def parse(cls, text, source="batching parameters"):
        """The text-format proto TF Serving's `--batching_parameters_file` holds, e.g.
        `max_batch_size { value: 32 } allowed_batch_sizes: [8, 32]`, read by protobuf; a
        ValueError naming `source` for a file that does not parse or asks for what the
        built-in server does not do (large batch splitting)."""
        proto = config_protos.parse(text, config_protos.BatchingParametersProto, source)
        if proto.enable_large_batch_splitting.value or proto.HasField("max_execution_batch_size"):
            raise ValueError(f"{source}: enable_large_batch_splitting and "
                             f"max_execution_batch_size are not supported by the built-in server")
        values = {name: getattr(proto, name).value for name in (
            "max_batch_size", "batch_timeout_micros", "max_enqueued_batches", "num_batch_threads")
            if proto.HasField(name)}
        try:
            return cls(allowed_batch_sizes=list(proto.allowed_batch_sizes),
                       pad_variable_length_inputs=proto.pad_variable_length_inputs, **values)
        except ValueError as error:
            raise ValueError(f"{source}: {error}") from error


class _Task:
    def __init__(self, tensors, rows):
        self.tensors, self.rows = tensors, rows
        self.done = threading.Event()
        self.outputs = self.error = None


class _Batch:
    def __init__(self, signature, shapes):
        self.signature, self.shapes = signature, shapes
        self.tasks, self.rows, self.created = [], 0, time.monotonic()


def _rows(tensors):
    for tensor in tensors.values():
        if tensor.shape.rank:
            return int(tensor.shape[0])
    return None


def _pad(array, shape):
    """`array` padded with zeros (empty strings) at the end of each inner dimension to `shape`."""
    widths = [(0, 0)] + [(0, want - have) for have, want in zip(array.shape[1:], shape)]
    if array.dtype == object:
        return np.pad(array, widths, constant_values=b"")
    return np.pad(array, widths)


class Batcher:
    """Joins concurrent `run(signature, tensors)` calls to the same signature, each batch run
    by the call it is given, `call(signature, tensors)` → {output: array}: the batcher wraps
    a call, it does not know the model."""

    def __init__(self, parameters, call):
        self.parameters, self._call = parameters, call
        self._condition = threading.Condition()
        self._batches, self._workers = [], 0

    def run(self, signature, tensors):
        """The outputs of `signature` for this caller's rows; blocks until its batch has run."""
        rows = _rows(tensors)
        if rows is None or rows > self.parameters.max_batch_size:
            return self._call(signature, tensors)  # nothing to join, or too big to join
        shapes = None if self.parameters.pad_variable_length_inputs else {
            name: tuple(tensor.shape[1:]) for name, tensor in tensors.items()}
        task = _Task(tensors, rows)
        with self._condition:
            batch = next((batch for batch in self._batches if batch.signature == signature
                          and batch.shapes == shapes
                          and batch.rows + rows <= self.parameters.max_batch_size), None)
            if batch is None:
                if len(self._batches) >= self.parameters.max_enqueued_batches:
                    raise ServingError("The batch scheduling queue to which this task was "
                                       "submitted is full", code=Code.UNAVAILABLE)
                batch = _Batch(signature, shapes)
                self._batches.append(batch)
            batch.tasks.append(task)
            batch.rows += rows
            if self._workers < self.parameters.num_batch_threads:
                self._workers += 1
                threading.Thread(target=self._work, daemon=True, name="batch").start()
            self._condition.notify()
        task.done.wait()
        if task.error is not None:
            raise task.error
        return task.outputs

    def _next_batch(self):
        """The oldest batch once it is full or old enough; None (the worker ends) when idle."""
        timeout = self.parameters.batch_timeout_micros / 1e6
        with self._condition:
            while True:
                if not self._batches:
                    self._workers -= 1
                    return None
                batch = self._batches[0]
                wait = batch.created + timeout - time.monotonic()
                if batch.rows >= self.parameters.max_batch_size or wait <= 0:
                    return self._batches.pop(0)
                self._condition.wait(wait)

    def _work(self):
        while (batch := self._next_batch()) is not None:
            try:
                outputs = self._run_batch(batch)
            except Exception as error:
                self._run_alone(batch, error)
                continue
            start = 0
            for task in batch.tasks:
                task.outputs = {name: value[start:start + task.rows]
                                for name, value in outputs.items()}
                start += task.rows
                task.done.set()

    def _run_alone(self, batch, error):
        """A joined batch failed: each caller's request is run again on its own, so that a
        bad request fails alone, with an error about its own input only (the joined call's
        error may quote any caller's rows), and the others are answered."""
        if len(batch.tasks) == 1:
            batch.tasks[0].error = error
            batch.tasks[0].done.set()
            return
        for task in batch.tasks:
            try:
                task.outputs = self._call(batch.signature, task.tensors)
            except Exception as own_error:  # handed to this caller alone
                task.error = own_error
            task.done.set()

    def _run_batch(self, batch):
        if len(batch.tasks) == 1 and not self.parameters.allowed_batch_sizes:
            return self._call(batch.signature, batch.tasks[0].tensors)
        total = next((size for size in self.parameters.allowed_batch_sizes if size >= batch.rows),
                     batch.rows)
        merged = {}
        for name, tensor in batch.tasks[0].tensors.items():
            arrays = [task.tensors[name].numpy() for task in batch.tasks]
            inner = tuple(max(sizes) for sizes in zip(*(array.shape[1:] for array in arrays)))
            arrays = [_pad(array, inner) for array in arrays]
            if total > batch.rows:  # padded to an allowed batch size with copies of a row
                arrays.append(np.repeat(arrays[0][:1], total - batch.rows, axis=0))
            merged[name] = tf.constant(np.concatenate(arrays), dtype=tensor.dtype)
        outputs = self._call(batch.signature, merged)
        for name, value in outputs.items():
            if np.ndim(value) == 0 or value.shape[0] != total:
                raise ServingError(f"batching: output '{name}' of shape {np.shape(value)} has no "
                                   f"batch dimension of {total}", code=Code.INTERNAL)
        return outputs


class BatchingServable:
    """TF Serving's BatchingSession: the runs of `servable` joined into batches as
    `parameters` say. The servable checks each caller's inputs (`check`) and makes each
    joined call (`call`) without knowing it is batched; all else (signatures, version) is
    the servable's own."""

    def __init__(self, servable, parameters):
        self.servable = servable
        self._batcher = Batcher(parameters, servable.call)

    def __getattr__(self, name):
        return getattr(self.servable, name)

    def run(self, signature_name, columns):
        return self._batcher.run(signature_name, self.servable.check(signature_name, columns))
