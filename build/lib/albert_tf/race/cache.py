"""The TFRecord cache of RACE features, named after everything the features depend on.

The original reused `--train_file` / `--eval_file` whenever the file existed, so a run with a
new max_seq_length, vocabulary or level selection silently trained on stale features (and a
shape error followed at best). Here the file name carries a key: split, levels,
max_seq_length, max_qa_length, lower-casing and a hash of the vocabulary file(s); a changed
setting gives a new file. Records are written to a temporary name and renamed when complete.

Record layout (the original's, plus fields for the per-level breakdown and per-question
predictions): `input_ids`, `input_mask`, `segment_ids` int64 [4 * max_seq_length] (the four
choices concatenated), `label_ids`, `is_real_example`, `level_ids` (0 middle, 1 high),
`question_index` int64 scalars and `example_id` bytes (the article id).
"""

import hashlib
import os

import tensorflow as tf

from albert_tf import io_utils
from albert_tf.race import reader

_RECORD_SUFFIXES = (".tf_record", ".tfrecord", ".tfrecords", ".record")


def vocabulary_fingerprint(*paths):
    """First 12 hex digits of the SHA-256 of the given vocabulary files (None entries skipped)."""
    digest = hashlib.sha256()
    for path in paths:
        if path:
            with tf.io.gfile.GFile(path, "rb") as handle:
                digest.update(handle.read())
    return digest.hexdigest()[:12]


def cache_key(split, levels, max_seq_length, max_qa_length, vocab_fingerprint, do_lower_case):
    levels_part = "+".join(level for level in reader.LEVELS if level in levels)
    case = "uncased" if do_lower_case else "cased"
    return (f"race-{split}-{levels_part}-seq{max_seq_length}-qa{max_qa_length}-{case}"
            f"-vocab{vocab_fingerprint}")


def cache_path(requested_path, default_dir, key):
    """`<default_dir>/<key>.tf_record`, or with a requested path `<stem>.<key><suffix>` beside it
    (`--train_file=/c/train.tf_record` → `/c/train.race-train-…-vocab1a2b….tf_record`)."""
    if not requested_path:
        return os.path.join(default_dir, key + ".tf_record")
    stem, suffix = os.path.splitext(requested_path)
    if suffix not in _RECORD_SUFFIXES:
        stem, suffix = requested_path, ".tf_record"
    return f"{stem}.{key}{suffix}"


def _int_feature(values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))


def serialize(features):
    """One `tf.train.Example` for one `features.RaceFeatures`."""
    fields = {
        "input_ids": _int_feature(id_ for choice in features.input_ids for id_ in choice),
        "input_mask": _int_feature(m for choice in features.input_mask for m in choice),
        "segment_ids": _int_feature(s for choice in features.segment_ids for s in choice),
        "label_ids": _int_feature([features.label_id]),
        "is_real_example": _int_feature([1]),
        "level_ids": _int_feature([features.level_id]),
        "question_index": _int_feature([features.question_index]),
        "example_id": tf.train.Feature(
            bytes_list=tf.train.BytesList(value=[features.example_id.encode("utf-8")])),
    }
    return tf.train.Example(features=tf.train.Features(feature=fields)).SerializeToString()


def write(features_iterable, path):
    """Writes every feature to `path` atomically; returns the number written."""
    count = 0
    with io_utils.atomic_path(path) as temp:
        with tf.io.TFRecordWriter(temp) as writer:
            for features in features_iterable:
                writer.write(serialize(features))
                count += 1
    return count


def _record_spec(max_seq_length):
    sequence = tf.io.FixedLenFeature([reader.NUM_CHOICES * max_seq_length], tf.int64)
    scalar = tf.io.FixedLenFeature([], tf.int64)
    return {
        "input_ids": sequence, "input_mask": sequence, "segment_ids": sequence,
        "label_ids": scalar, "is_real_example": scalar, "level_ids": scalar,
        "question_index": scalar, "example_id": tf.io.FixedLenFeature([], tf.string),
    }


def parse(serialized, max_seq_length):
    """Parses one record: int32 [4, max_seq_length] inputs and int32 scalars (bytes example_id)."""
    parsed = tf.io.parse_single_example(serialized, _record_spec(max_seq_length))
    result = {}
    for name, value in parsed.items():
        if name in ("input_ids", "input_mask", "segment_ids"):
            value = tf.reshape(value, [reader.NUM_CHOICES, max_seq_length])
        result[name] = value if value.dtype == tf.string else tf.cast(value, tf.int32)
    return result


def dataset(path, max_seq_length):
    """The cached records, parsed, unbatched, in file order."""
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"{path}: RACE feature cache does not exist")
    return tf.data.TFRecordDataset(path).map(
        lambda record: parse(record, max_seq_length), num_parallel_calls=tf.data.AUTOTUNE)
