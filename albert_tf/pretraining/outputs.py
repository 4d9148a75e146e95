"""Where the instances go, written under temporary names and renamed only when complete.

Two modes, chosen by --output_file:
* one path: one output per input file, in input order. With a single input file the output
  is that path; with N > 1 it is `<output_file>-00000-of-0000N`, ... (TensorFlow's shard
  naming), each written while its input file is processed.
* several comma-separated paths: the original's round-robin. Every input file's stream is
  first written to a hidden part file; the parts are then interleaved one record at a time
  in input order (file 0, file 1, ..., file 0, ...) into one global stream whose g-th record
  goes to output g mod M. Every output mixes all input files, and the result does not depend
  on which worker finished first. The extra pass copies TFRecord frames verbatim.

The run summary is `<first --output_file path>.summary.json`.

Everything is written under hidden temporary names beside the outputs and renamed at the end
of a successful run (`io_utils.atomic_path`); a failure removes the temporaries, and a killed
run leaves at most hidden `.*.tmp-*` files, never a file under an output's final name.
"""

import contextlib
import os
import re
import resource
import uuid

import tensorflow as tf

from albert_tf import errors
from albert_tf.files import io_utils
from albert_tf.pretraining import records

PER_INPUT = "per_input"
ROUND_ROBIN = "round_robin"
SUMMARY_SUFFIX = ".summary.json"


class OutputPlan:
    def __init__(self, mode, outputs, summary_path):
        self.mode = mode
        self.outputs = outputs
        self.summary_path = summary_path


def plan_outputs(output_file, num_inputs):
    """The OutputPlan for the --output_file value and the number of input files."""
    paths = [item.strip() for item in (output_file or "").split(",") if item.strip()]
    if not paths:
        raise errors.UserInputError("--output_file is empty: expected a TFRecord path (or several, "
                         "comma-separated, for round-robin output)")
    if len(set(paths)) != len(paths):
        raise errors.UserInputError(f"--output_file lists a file twice: {output_file}")
    summary_path = paths[0] + SUMMARY_SUFFIX
    if len(paths) > 1:
        return OutputPlan(ROUND_ROBIN, paths, summary_path)
    if num_inputs == 1:
        return OutputPlan(PER_INPUT, paths, summary_path)
    return OutputPlan(PER_INPUT, [f"{paths[0]}-{i:05d}-of-{num_inputs:05d}"
                                  for i in range(num_inputs)], summary_path)


def scratch_name(path):
    """A hidden temporary name beside `path` that a later run's stale-file sweep recognises."""
    directory, base = os.path.split(path)
    return os.path.join(directory,
                        f".{base}{io_utils.TEMP_MARKER}{os.getpid()}-{uuid.uuid4().hex[:8]}")


_SHARD_PATTERN = re.compile(r"^(?P<base>.+)-(?P<index>\d{5})-of-(?P<total>\d{5})$")


def check_no_mixed_shards(plan):
    """Refuses a per-input shard set next to another set of the same base name with another
    shard count (`-of-00010` beside `-of-00002`): a later `base-*` glob would train on both."""
    first = plan.outputs[0]
    match = _SHARD_PATTERN.match(os.path.basename(first))
    base = match.group("base") if match else os.path.basename(first)
    directory = os.path.dirname(first) or "."
    if not tf.io.gfile.isdir(directory):
        return
    planned = {os.path.basename(path) for path in plan.outputs}
    others = []
    for name in tf.io.gfile.listdir(directory):
        other = _SHARD_PATTERN.match(name)
        if other and other.group("base") == base and name not in planned:
            others.append(name)
    if others:
        raise errors.UserInputError(
            f"--output_file={first}: {directory} already holds another shard set of {base} "
            f"({', '.join(sorted(others)[:3])}{', ...' if len(others) > 3 else ''}) with a "
            "different number of shards; a glob over the folder would mix the two sets. Remove "
            "them or choose another --output_file")


def remove_stale_temporaries(plan):
    """Removes the temporaries of this plan's outputs that a killed (or retried) writer left and
    returns their paths; only safe while no other run writes these outputs."""
    directory = os.path.dirname(plan.outputs[0]) or "."
    names = {os.path.basename(path) for path in plan.outputs + [plan.summary_path]}
    parts = os.path.basename(plan.outputs[0]) + ".part-"  # Round-robin staging files.
    return io_utils.remove_stale_temporaries(
        directory, belongs=lambda name: name in names or name.startswith(parts))


def remove_if_exists(path):
    if tf.io.gfile.exists(path):
        tf.io.gfile.remove(path)


class OutputWriter:
    """Receives each input file's records in order; a clean exit renames every output."""

    def __init__(self, plan):
        self.plan = plan
        self.counts = {}  # final output path -> records written

    def __enter__(self):
        self._stack = contextlib.ExitStack()
        self._writers = {}
        self._temps = {}
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            for writer in self._writers.values():
                writer.close()
            self._stack.__exit__(exc_type, exc, tb)  # Removes every temporary file.
            return False
        with self._stack:  # Renames the outputs, or removes everything if this block fails.
            for writer in self._writers.values():
                writer.close()
            if self.plan.mode == ROUND_ROBIN:
                self._merge_round_robin()
        return False

    def write(self, file_index, chunk):
        writer = self._writers.get(file_index)
        if writer is None:
            writer = self._writers[file_index] = tf.io.TFRecordWriter(self._open(file_index))
        for record in chunk:
            writer.write(record)
        if self.plan.mode == PER_INPUT:
            path = self.plan.outputs[file_index]
            self.counts[path] = self.counts.get(path, 0) + len(chunk)

    def finish(self, file_index):
        """Closes a file's output (an empty one if it had no records)."""
        if file_index not in self._writers:
            self.write(file_index, [])
        self._writers.pop(file_index).close()

    def _open(self, file_index):
        """A temporary path for a file's stream, cleaned up by the exit stack."""
        if self.plan.mode == PER_INPUT:
            temp = self._stack.enter_context(io_utils.atomic_path(self.plan.outputs[file_index]))
        else:
            tf.io.gfile.makedirs(os.path.dirname(self.plan.outputs[0]) or ".")
            temp = part_path(self.plan, file_index)
            self._stack.callback(remove_if_exists, temp)
        self._temps[file_index] = temp
        return temp

    def _merge_round_robin(self):
        parts = [self._temps[i] for i in sorted(self._temps)]
        self.counts = merge_round_robin(parts, self.plan.outputs, self._stack)


def part_path(plan, file_index):
    """A hidden scratch path for one input file's stream in round-robin mode."""
    return scratch_name(f"{plan.outputs[0]}.part-{file_index:05d}")


def merge_round_robin(parts, outputs, stack):
    """Interleaves the part files (in input order) one record at a time into `outputs`, record
    g to output g mod M; returns {output: records}. Each output is written under a temporary
    name that `stack` renames onto the output when it closes cleanly (removes otherwise)."""
    _allow_open_files(len(parts) + len(outputs) + 16)
    counts = [0] * len(outputs)
    with contextlib.ExitStack() as files:
        targets = [files.enter_context(tf.io.gfile.GFile(
            stack.enter_context(io_utils.atomic_path(path)), "wb")) for path in outputs]
        streams = [records.read_frames(files.enter_context(tf.io.gfile.GFile(part, "rb")))
                   for part in parts]
        written = 0
        while streams:
            still_open = []
            for stream in streams:
                frame = next(stream, None)
                if frame is not None:
                    targets[written % len(outputs)].write(frame)
                    counts[written % len(outputs)] += 1
                    written += 1
                    still_open.append(stream)
            streams = still_open
        if written < len(outputs):
            # Raised inside the exit stack: every output is removed, none half-written.
            raise errors.UserInputError(
                f"--output_file lists {len(outputs)} files but the input made only "
                f"{written} instances; list at most {written} files (or one, with several "
                "input files, for one output per input)")
    return dict(zip(outputs, counts))


def _allow_open_files(needed):
    """Round-robin merging keeps every part open at once; raise the soft limit if needed."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        new_soft = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (new_soft, hard))
