"""What can be checked about a model version before anything loads it: the folders and files
the load will read are readable by the server's user. Unchecked, an unreadable version folder
looked like no version at all, an unreadable `variables/` like a checkpoint with no files
("Failed to find any matching files"), and an unreadable base path ended the start-up with a
traceback."""

import os
import re

from albert_tf.export.tflite import TFLITE_FILE

_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


def is_local(path):
    """Not a URI (gs://, s3://): a path of this machine's file system."""
    return not _URI.match(path)


def unreadable(path):
    """True when `path` is a local folder or file this process's user may not read (a folder
    also needs search permission); remote paths (gs://, s3://) are left to their file system."""
    if not is_local(path) or not os.path.exists(path):
        return False
    wanted = os.R_OK | os.X_OK if os.path.isdir(path) else os.R_OK
    return not os.access(path, wanted)


def unreadable_reason(model_dir):
    """Why the version in `model_dir` cannot be read, naming the first folder or file this
    process's user may not read (None: all readable)."""
    candidates = [model_dir, os.path.join(model_dir, "saved_model.pb"),
                  os.path.join(model_dir, TFLITE_FILE), os.path.join(model_dir, "variables")]
    variables = candidates[-1]
    if is_local(variables) and os.path.isdir(variables) and not unreadable(variables):
        candidates += [os.path.join(variables, name) for name in sorted(os.listdir(variables))]
    for path in candidates:
        if unreadable(path):
            return permission_denied(path, "version's files")
    return None


def permission_denied(path, what):
    """The one-line refusal of a `path` (`what` it is) this process's user may not read."""
    return (f"{path}: permission denied: this server's user (uid {os.geteuid()}) may not read "
            f"the {what}")
