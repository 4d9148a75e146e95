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

import tensorflow as tf

from albert_tf.files import feature_records
from albert_tf.files.feature_records import bytes_feature, int64_feature
from albert_tf.race import reader


def cache_key(split, levels, max_seq_length, max_qa_length, vocab_fingerprint, do_lower_case):
    levels_part = "+".join(level for level in reader.LEVELS if level in levels)
    case = "uncased" if do_lower_case else "cased"
    return (f"race-{split}-{levels_part}-seq{max_seq_length}-qa{max_qa_length}-{case}"
            f"-vocab{vocab_fingerprint}")


def serialize(features):
    """One `tf.train.Example` for one `features.RaceFeatures`."""
    fields = {
        "input_ids": int64_feature(id_ for choice in features.input_ids for id_ in choice),
        "input_mask": int64_feature(m for choice in features.input_mask for m in choice),
        "segment_ids": int64_feature(s for choice in features.segment_ids for s in choice),
        "label_ids": int64_feature([features.label_id]),
        "is_real_example": int64_feature([1]),
        "level_ids": int64_feature([features.level_id]),
        "question_index": int64_feature([features.question_index]),
        "example_id": bytes_feature([features.example_id.encode("utf-8")]),
    }
    return feature_records.example_bytes(fields)


def write(features_iterable, path):
    """Writes every feature to `path` atomically; returns the number written."""
    return feature_records.write_records(map(serialize, features_iterable), path)


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
