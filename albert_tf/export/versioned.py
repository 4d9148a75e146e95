"""SavedModels under numbered version directories, TensorFlow Serving's layout, written atomically."""

import os
import time
import uuid

import tensorflow as tf

from albert_tf.export import signature_methods
from albert_tf.export import warmup_requests


def next_version(directory):
    """Seconds since the epoch, or one more than the highest existing version."""
    existing = [int(name.strip("/")) for name in tf.io.gfile.listdir(directory)
                if name.strip("/").isdigit()] if tf.io.gfile.isdir(directory) else []
    return max([int(time.time())] + [version + 1 for version in existing])


def write_archive(archive, directory, method_names=None, warmup_logs=()):
    """Writes a Keras `ExportArchive` to `<directory>/<version>/` under a temporary name first,
    so TF Serving never picks up a half-written version; returns that path. `method_names`
    ({signature: TF Serving method}) marks Classify / Regress signatures; `warmup_logs`
    (PredictionLogs) become the version's TF Serving warm-up file."""
    tf.io.gfile.makedirs(directory)
    temp = os.path.join(directory, f".tmp-{uuid.uuid4().hex[:8]}")
    try:
        archive.write_out(temp, verbose=False)
        if method_names:
            signature_methods.set_method_names(temp, method_names)
        if warmup_logs:
            warmup_requests.write(temp, warmup_logs)
        return _rename_to_new_version(temp, directory)
    except BaseException:
        if tf.io.gfile.exists(temp):
            tf.io.gfile.rmtree(temp)
        raise


def _rename_to_new_version(temp, directory, attempts=100):
    """Renames `temp` to the next free version. Two exports finishing in the same second pick
    the same number; the loser's rename fails (never overwrites) and it takes the next one."""
    for _ in range(attempts):
        final = os.path.join(directory, str(next_version(directory)))
        try:
            tf.io.gfile.rename(temp, final, overwrite=False)
            return final
        except (tf.errors.AlreadyExistsError, tf.errors.FailedPreconditionError):
            continue
    raise RuntimeError(f"{directory}: no free version directory after {attempts} attempts")
