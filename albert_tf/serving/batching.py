"""Server-side batching as TF Serving's `--enable_batching`: concurrent requests to one signature
are joined along the batch dimension into one graph call (one call of 32 rows costs far less
than 32 calls of one row on a CPU) and each caller gets its own rows back.

A batch is run as soon as a batch thread is free and the batch is full or `batch_timeout_micros`
old, so under load requests gather while the previous batch runs. At most `max_enqueued_batches`
wait; a request that would need one more is refused at once with UNAVAILABLE (HTTP 503) rather
than queued without bound. `allowed_batch_sizes` pads a batch with copies of its first row up to
the next allowed size (fewer distinct shapes to warm up and optimise);
`pad_variable_length_inputs` lets requests whose inner dimensions differ share a batch, padded
with zeros (TF Serving repeats each tensor's first element instead; zeros keep an `input_mask`
meaning "padding", so a padded row's answer equals its unpadded one).
"""

import os
import re
import threading
import time

import numpy as np
import tensorflow as tf

from albert_tf.serving.errors import ServingError
from albert_tf.serving.model_runner import ModelRunner


class BatchingParameters:
    """TF Serving's `BatchingParameters` (session_bundle_config.proto), with its defaults."""

    def __init__(self, max_batch_size=1000, batch_timeout_micros=0, max_enqueued_batches=10,
                 num_batch_threads=None, allowed_batch_sizes=(), pad_variable_length_inputs=False):
        self.max_batch_size, self.batch_timeout_micros = max_batch_size, batch_timeout_micros
        self.max_enqueued_batches = max_enqueued_batches
        self.num_batch_threads = num_batch_threads or os.cpu_count() or 1
        self.allowed_batch_sizes = sorted(allowed_batch_sizes)
        self.pad_variable_length_inputs = pad_variable_length_inputs
        for name in ("max_batch_size", "max_enqueued_batches", "num_batch_threads"):
            if getattr(self, name) < 1:
                raise ValueError(f"batching parameter {name} must be >= 1, got {getattr(self, name)}")
        if batch_timeout_micros < 0:
            raise ValueError(f"batching parameter batch_timeout_micros must be >= 0, got "
                             f"{batch_timeout_micros}")
        if self.allowed_batch_sizes and self.allowed_batch_sizes[-1] != max_batch_size:
            raise ValueError(f"the largest of allowed_batch_sizes {self.allowed_batch_sizes} must "
                             f"equal max_batch_size {max_batch_size} (as TF Serving requires)")

    _WRAPPED = ("max_batch_size", "batch_timeout_micros", "max_enqueued_batches",
                "num_batch_threads")
    _TOKEN = re.compile(r"\s*(?:(#[^\n]*)|([A-Za-z_]\w*)|(-?\d+)|([{}:]))")

    @classmethod
    def parse(cls, text, source="batching parameters"):
        """The text-format proto TF Serving's `--batching_parameters_file` holds, e.g.
        `max_batch_size { value: 32 } allowed_batch_sizes: 8 allowed_batch_sizes: 32`."""
        tokens, position = [], 0
        while position < len(text):
            match = cls._TOKEN.match(text, position)
            if match is None or match.end() == position:
                if text[position:].strip() == "":
                    break
                line = text.count("\n", 0, position) + 1
                raise ValueError(f"{source}, line {line}: cannot parse {text[position:position + 20]!r}")
            position = match.end()
            if match.group(1) is None:
                tokens.append((match.group(match.lastindex),
                               text.count("\n", 0, match.start(match.lastindex)) + 1))
        values, allowed, index = {}, [], 0

        def expect(*wanted):
            nonlocal index
            if index >= len(tokens) or (wanted and tokens[index][0] not in wanted):
                found = tokens[index] if index < len(tokens) else ("end of file", "last")
                raise ValueError(f"{source}, line {found[1]}: expected {' or '.join(wanted) or 'a value'}, "
                                 f"found {found[0]!r}")
            index += 1
            return tokens[index - 1][0]

        def number():
            value = expect()
            if not re.fullmatch(r"-?\d+", value):
                raise ValueError(f"{source}, line {tokens[index - 1][1]}: expected an integer, "
                                 f"found {value!r}")
            return int(value)

        while index < len(tokens):
            name, line = tokens[index]
            index += 1
            if name in cls._WRAPPED:
                if index < len(tokens) and tokens[index][0] == ":":
                    index += 1
                expect("{"), expect("value"), expect(":")
                values[name] = number()
                expect("}")
            elif name == "allowed_batch_sizes":
                expect(":")
                allowed.append(number())
            elif name == "pad_variable_length_inputs":
                expect(":")
                values[name] = expect("true", "false") == "true"
            else:
                raise ValueError(f"{source}, line {line}: unknown or unsupported batching "
                                 f"parameter {name!r}")
        return cls(allowed_batch_sizes=allowed, **values)


class _Task:
    def __init__(self, tensors, rows):
        self.tensors, self.rows = tensors, rows
        self.done = threading.Event()
        self.outputs = self.error = None


class _Batch:
    def __init__(self, function, shapes):
        self.function, self.shapes = function, shapes
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
    """Joins concurrent `run(function, tensors)` calls to the same signature function."""

    def __init__(self, parameters):
        self.parameters = parameters
        self._condition = threading.Condition()
        self._batches, self._workers = [], 0

    def run(self, function, tensors):
        """The outputs of `function` for this caller's rows; blocks until its batch has run."""
        rows = _rows(tensors)
        if rows is None or rows > self.parameters.max_batch_size:
            return ModelRunner.call(function, tensors)  # nothing to join, or too big to join
        shapes = None if self.parameters.pad_variable_length_inputs else {
            name: tuple(tensor.shape[1:]) for name, tensor in tensors.items()}
        task = _Task(tensors, rows)
        with self._condition:
            batch = next((batch for batch in self._batches if batch.function is function
                          and batch.shapes == shapes
                          and batch.rows + rows <= self.parameters.max_batch_size), None)
            if batch is None:
                if len(self._batches) >= self.parameters.max_enqueued_batches:
                    raise ServingError("The batch scheduling queue to which this task was "
                                       "submitted is full", status=503)
                batch = _Batch(function, shapes)
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
            except Exception as error:  # every caller of the batch gets the error
                for task in batch.tasks:
                    task.error = error
                    task.done.set()
                continue
            start = 0
            for task in batch.tasks:
                task.outputs = {name: value[start:start + task.rows]
                                for name, value in outputs.items()}
                start += task.rows
                task.done.set()

    def _run_batch(self, batch):
        if len(batch.tasks) == 1 and not self.parameters.allowed_batch_sizes:
            return ModelRunner.call(batch.function, batch.tasks[0].tensors)
        names = list(batch.tasks[0].tensors)
        merged = {}
        for name in names:
            arrays = [task.tensors[name].numpy() for task in batch.tasks]
            inner = tuple(max(sizes) for sizes in zip(*(array.shape[1:] for array in arrays)))
            arrays = [_pad(array, inner) for array in arrays]
            target = next((size for size in self.parameters.allowed_batch_sizes
                           if size >= batch.rows), batch.rows)
            if target > batch.rows:
                arrays.append(np.repeat(arrays[0][:1], target - batch.rows, axis=0))
            merged[name] = tf.constant(np.concatenate(arrays), dtype=batch.tasks[0].tensors[name].dtype)
        outputs = ModelRunner.call(batch.function, merged)
        total = int(next(iter(merged.values())).shape[0])
        for name, value in outputs.items():
            if np.ndim(value) == 0 or value.shape[0] != total:
                raise ServingError(f"batching: output '{name}' of shape {np.shape(value)} has no "
                                   f"batch dimension of {total}", status=500)
        return outputs
