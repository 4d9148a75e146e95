"""Opening a file the user named (a config, a vocabulary, a task file) with one-line errors.

A directory, a file without read permission or bytes that are not UTF-8 otherwise end in a
Python or TensorFlow traceback that does not say which of the run's many files is at fault.
`read_text` names the file, and for bad bytes the line and the byte offset to look at.
"""

import json
import os

from albert_tf import errors


def _is_remote(path):
    return "://" in str(path)


def check_file(path, what="input file"):
    """Raises `errors.UserInputError` (MissingFileError if absent) unless `path` is a readable
    regular file; `what` says which input it is (e.g. "--vocab_file")."""
    path = os.fspath(path)
    if _is_remote(path):
        import tensorflow as tf  # Only remote file systems need TensorFlow's gfile.
        if not tf.io.gfile.exists(path):
            raise errors.MissingFileError(f"{path}: {what} not found")
        if tf.io.gfile.isdir(path):
            raise errors.UserInputError(f"{path}: {what} is a directory; expected a file")
        return path
    if not os.path.exists(path):
        raise errors.MissingFileError(f"{path}: {what} not found")
    if os.path.isdir(path):
        raise errors.UserInputError(f"{path}: {what} is a directory; expected a file")
    if not os.access(path, os.R_OK):
        raise errors.UserInputError(f"{path}: {what} cannot be read (permission denied)")
    return path


def read_bytes(path, what="input file"):
    """The whole file, after `check_file`."""
    check_file(path, what)
    if _is_remote(path):
        import tensorflow as tf
        with tf.io.gfile.GFile(path, "rb") as reader:
            return reader.read()
    try:
        with open(path, "rb") as reader:
            return reader.read()
    except OSError as error:
        raise errors.UserInputError(f"{path}: {what} cannot be read ({error.strerror})") from error


def decode_utf8(data, path):
    """`data` decoded as UTF-8, or an error naming `path`, the line and the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise errors.UserInputError(
            f"{path}, line {line}: not UTF-8 (byte 0x{data[error.start]:02x} at byte offset "
            f"{error.start}); convert the file to UTF-8") from error


def read_text(path, what="input file"):
    """The file's text (UTF-8), with every problem named as `check_file` and `decode_utf8` do."""
    return decode_utf8(read_bytes(path, what), path)


def json_object_lines(path, text, error_type=errors.UserInputError):
    """Yields (line number, object) of JSON Lines `text` read from `path`, skipping blank lines;
    a line that is not a JSON object raises `error_type` naming the file and line."""
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise error_type(f"{path}, line {number}: not JSON ({error.msg} at column "
                             f"{error.colno})") from None
        if not isinstance(row, dict):
            raise error_type(f"{path}, line {number}: expected a JSON object per line, got "
                             f"{type(row).__name__}")
        yield number, row
