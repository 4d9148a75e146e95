"""Atomic file writes: a killed run never leaves a half-written file under its final name."""

import contextlib
import os
import uuid

import tensorflow as tf


# Part of every temporary name: `.<final name>.tmp-<pid>-<random>`.
TEMP_MARKER = ".tmp-"


def _temp_name(path):
    directory, base = os.path.split(path)
    return os.path.join(directory, f".{base}{TEMP_MARKER}{os.getpid()}-{uuid.uuid4().hex[:8]}")


def remove_stale_temporaries(directory, belongs=None):
    """Removes the temporary files a killed writer left in `directory` (all of them, or those
    whose final name satisfies `belongs`) and returns their paths. Call it only while holding
    the directory's output lock: a live writer's temporaries look the same."""
    if not tf.io.gfile.isdir(directory):
        return []
    removed = []
    for name in tf.io.gfile.listdir(directory):
        if not (name.startswith(".") and TEMP_MARKER in name):
            continue
        final = name[1:name.index(TEMP_MARKER)]
        if belongs is not None and not belongs(final):
            continue
        path = os.path.join(directory, name)
        if tf.io.gfile.isdir(path):
            tf.io.gfile.rmtree(path)
        else:
            tf.io.gfile.remove(path)
        removed.append(path)
    return removed


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
