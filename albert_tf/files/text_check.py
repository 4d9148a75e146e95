"""Is this input file UTF-8 text? A cheap look at its first 64 KiB, without TensorFlow.

Corpus readers replace undecodable bytes and carry on (the original crashed on them), so a
shared library or a UTF-16 file would silently become "training data" or a vocabulary. NUL
bytes, or more than 1% of bytes that are not UTF-8, mean the file is not UTF-8 text.
"""

from albert_tf import errors
from albert_tf.files import input_files

SNIFF_BYTES = 1 << 16
MAX_UNDECODABLE_SHARE = 0.01


def _open_binary(path):
    if "://" in path:
        import tensorflow as tf  # Only remote file systems need TensorFlow's gfile.
        return tf.io.gfile.GFile(path, "rb")
    return open(path, "rb")


def undecodable_bytes(data):
    """Bytes of `data` that are not valid UTF-8 (off by at most 3 where `data` cuts a
    character, which no threshold here notices)."""
    return len(data) - len(data.decode("utf-8", "ignore").encode("utf-8"))


def check_is_text(path):
    """Returns the first bytes read; raises `errors.UserInputError` naming the file and the share
    of NUL or undecodable bytes when it is not UTF-8 text (or a directory, or unreadable)."""
    input_files.check_file(path, "input file")
    with _open_binary(path) as reader:
        head = reader.read(SNIFF_BYTES)
    if not head:
        return head
    nul = head.count(0)
    bad = undecodable_bytes(head)
    if nul or bad > MAX_UNDECODABLE_SHARE * len(head):
        found = [f"{nul} NUL bytes"] if nul else []
        if bad:
            found.append(f"{bad / len(head):.1%} of bytes not UTF-8")
        raise errors.UserInputError(
            f"{path}: not UTF-8 text ({' and '.join(found)} in its first {len(head)} bytes): a "
            "binary file, or text in another encoding such as UTF-16; convert it to UTF-8")
    return head

