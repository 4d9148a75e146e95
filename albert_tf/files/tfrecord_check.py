"""Cheap start-up checks of TFRecord files: framing, truncation, emptiness.

TensorFlow reports a bad record only when the input pipeline reaches it, inside the training
function, as a bare `DataLossError`, possibly hours into a run; a text file named `.tfrecord`
read by our own frame reader even asked for a petabyte-sized buffer. Before training, every
file's frame headers are walked (12 bytes read per record; local files memory-mapped): the
length's masked CRC-32C must match, the last frame must end exactly at the end of the file, and
the first record's data CRC is verified too. An error names the file and the byte offset.
"""

import functools
import mmap
import struct

import tensorflow as tf

from albert_tf import errors
from albert_tf.files import input_files
from albert_tf.files.crc32c import masked_crc32c

_HEADER = 12
_FOOTER = 4


_checked = {}  # (path, size, mtime) -> records: every evaluation re-reads the same files


def count_records(path):
    """The number of records in `path`; raises `errors.UserInputError` naming the file and the
    byte offset of the first bad frame (or a directory, an unreadable file). Cached per file
    size and modification time."""
    input_files.check_file(path, "TFRecord file")
    stat = tf.io.gfile.stat(path)
    key = (path, stat.length, stat.mtime_nsec)
    if key not in _checked:
        _checked[key] = _walk_frames(path, stat.length)
    return _checked[key]


def _walk_frames(path, size):
    if size == 0:
        return 0
    if "://" in path:
        with tf.io.gfile.GFile(path, "rb") as reader:
            def read_at(offset, length):
                reader.seek(offset)
                return reader.read(length)
            return _walk(path, size, read_at)
    with open(path, "rb") as handle, \
            mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
        return _walk(path, size, lambda offset, length: data[offset:offset + length])


@functools.lru_cache(maxsize=4096)
def _length_checksum(length_bytes):
    """Records of one data set mostly share a few lengths: their checksums are computed once."""
    return masked_crc32c(length_bytes)


def _walk(path, size, read_at):
    count, offset = 0, 0
    while offset < size:
        header = read_at(offset, _HEADER)
        if len(header) < _HEADER:
            raise errors.UserInputError(
                f"{path}: truncated TFRecord file: a frame header at byte offset {offset} "
                f"is cut off at the end of the file ({size} bytes)")
        length_bytes, (length_crc,) = header[:8], struct.unpack("<I", header[8:])
        if _length_checksum(length_bytes) != length_crc:
            what = "not a TFRecord file" if count == 0 else "corrupt TFRecord file"
            raise errors.UserInputError(
                f"{path}: {what}: bad length checksum in the record at byte offset {offset}")
        (length,) = struct.unpack("<Q", length_bytes)
        end = offset + _HEADER + length + _FOOTER
        if end > size:
            raise errors.UserInputError(
                f"{path}: truncated TFRecord file: the record at byte offset {offset} needs "
                f"{end} bytes, the file has {size}")
        if count == 0:
            data = read_at(offset + _HEADER, length)
            (data_crc,) = struct.unpack("<I", read_at(offset + _HEADER + length, _FOOTER))
            if masked_crc32c(data) != data_crc:
                raise errors.UserInputError(
                    f"{path}: corrupt TFRecord file: bad data checksum in the record at byte "
                    f"offset {offset}")
        offset = end
        count += 1
    return count


def check_files(paths, flag_name):
    """Checks every file (see `count_records`); returns `{path: records}`. No record at all is
    an error naming the flag and the files: a training input that yields nothing would
    otherwise spin forever on an empty repeated dataset."""
    counts = {path: count_records(path) for path in paths}
    if not any(counts.values()):
        shown = ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
        raise errors.UserInputError(f"{flag_name}: no record in {shown} (every file is empty)")
    return counts

