"""SavedModels under numbered version directories, TensorFlow Serving's layout, written atomically."""

import os
import re
import socket
import time
import uuid

from absl import logging
import tensorflow as tf

from albert_tf.export import signature_methods
from albert_tf.export import warmup_requests
from albert_tf.files import io_utils

# A version is written under `.tmp-<host>-<pid>-<random>` and renamed when complete; the host
# and pid let the next export on the directory tell a killed export's folder from a live one.
TEMP_PREFIX = ".tmp-"
_HOST = re.sub(r"[^A-Za-z0-9_.]", "_", socket.gethostname())
_TEMP_NAME = re.compile(re.escape(TEMP_PREFIX) + r"(.+)-(\d+)-[0-9a-f]{8}")


def next_version(directory):
    """Seconds since the epoch, or one more than the highest existing version."""
    existing = [int(name.strip("/")) for name in tf.io.gfile.listdir(directory)
                if name.strip("/").isdigit()] if tf.io.gfile.isdir(directory) else []
    return max([int(time.time())] + [version + 1 for version in existing])


def _is_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def remove_killed_temporaries(directory):
    """Removes the `.tmp-<host>-<pid>-<random>` folders of exports from this host whose process
    is gone (killed mid-write); a live export's folder, or another host's, is left alone.
    Returns the removed paths."""
    removed = []
    for name in tf.io.gfile.listdir(directory):
        match = _TEMP_NAME.fullmatch(name.rstrip("/"))
        if not match or match.group(1) != _HOST or _is_alive(int(match.group(2))):
            continue
        path = os.path.join(directory, name.rstrip("/"))
        tf.io.gfile.rmtree(path)
        removed.append(path)
    if removed:
        logging.warning("Removed %d temporary export folder(s) a killed export left: %s",
                        len(removed), ", ".join(removed))
    return removed


def temporary_path(directory):
    """A hidden `.tmp-<host>-<pid>-<random>` folder name in `directory`, which the next export
    there removes (`remove_killed_temporaries`) if this process dies before renaming it."""
    return os.path.join(directory, f"{TEMP_PREFIX}{_HOST}-{os.getpid()}-{uuid.uuid4().hex[:8]}")


def write_archive(archive, directory, method_names=None, warmup_logs=(), finish=None):
    """Writes a Keras `ExportArchive` to `<directory>/<version>/` under a temporary name first,
    so TF Serving never picks up a half-written version; returns that path. `method_names`
    ({signature: TF Serving method}) marks Classify / Regress signatures; `warmup_logs`
    (PredictionLogs) become the version's TF Serving warm-up file; `finish(temporary path)`
    adds files that belong inside the version (`model.tflite`) before the rename."""
    tf.io.gfile.makedirs(directory)
    remove_killed_temporaries(directory)
    temp = temporary_path(directory)
    try:
        archive.write_out(temp, verbose=False)
        if method_names:
            signature_methods.set_method_names(temp, method_names)
        if warmup_logs:
            warmup_requests.write(temp, warmup_logs)
        if finish is not None:
            finish(temp)
        return _rename_to_new_version(temp, directory)
    except BaseException as error:
        if tf.io.gfile.exists(temp):
            tf.io.gfile.rmtree(temp)
        io_utils.raise_if_disk_full(error, directory)
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
