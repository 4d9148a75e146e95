"""Atomic file writes: a killed run never leaves a half-written file under its final name."""

import contextlib
import os
import uuid

import tensorflow as tf


def _temp_name(path):
    directory, base = os.path.split(path)
    return os.path.join(directory, f".{base}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")


@contextlib.contextmanager
def atomic_path(path):
    """Yields a temporary path beside `path`; renamed onto `path` only if the block succeeds."""
    directory = os.path.dirname(path)
    if directory:
        tf.io.gfile.makedirs(directory)
    temp = _temp_name(path)
    try:
        yield temp
        tf.io.gfile.rename(temp, path, overwrite=True)
    except BaseException:
        if tf.io.gfile.exists(temp):
            tf.io.gfile.remove(temp)
        raise


def atomic_write_text(path, text):
    with atomic_path(path) as temp:
        with tf.io.gfile.GFile(temp, "w") as writer:
            writer.write(text)


def append_text(path, text):
    """Appends (e.g. to `eval_results.txt`); the original appends key = value lines."""
    with tf.io.gfile.GFile(path, "a") as writer:
        writer.write(text)
