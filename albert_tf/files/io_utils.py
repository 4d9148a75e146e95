"""Atomic file writes: a killed run never leaves a half-written file under its final name."""

import contextlib
import errno
import os
import uuid

import tensorflow as tf

from albert_tf import errors


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
    except BaseException as error:
        if tf.io.gfile.exists(temp):
            tf.io.gfile.remove(temp)
        raise_if_disk_full(error, path)
        raise


def raise_if_disk_full(error, path):
    """A full disk while writing `path` (Python's ENOSPC, or TensorFlow's "No space left on
    device") becomes one `UserInputError` line naming the file; any other error is left alone.
    Writers use temporary names, so nothing half-written is left under the final name."""
    if isinstance(error, OSError) and error.errno == errno.ENOSPC:
        cause = error.strerror
    elif isinstance(error, tf.errors.OpError) and "No space left on device" in str(error):
        cause = "No space left on device"
    else:
        return
    raise errors.UserInputError(
        f"{path}: no space left on device while writing it ({cause}); free some space or "
        f"choose another output directory, then run the same command again") from error


def atomic_write_text(path, text):
    with atomic_path(path) as temp:
        with tf.io.gfile.GFile(temp, "w") as writer:
            writer.write(text)


def append_text(path, text):
    """Appends (e.g. to `eval_results.txt`); the original appends key = value lines."""
    try:
        with tf.io.gfile.GFile(path, "a") as writer:
            writer.write(text)
    except (OSError, tf.errors.OpError) as error:
        raise_if_disk_full(error, path)
        raise
