"""SQuAD features as `tf.train.Example` records and as `tf.data` pipelines.

Record layout (the original `FeatureWriter`): `unique_ids` int64 scalar; `input_ids`,
`input_mask`, `segment_ids`, `p_mask` int64 [max_seq_length]; training records also
`start_positions`, `end_positions`, `is_impossible` int64 scalars. Parsed tensors are int32.
"""

import tensorflow as tf

from albert_tf.files import feature_records
from albert_tf.files.feature_records import int64_feature

SEQUENCE_FIELDS = ("input_ids", "input_mask", "segment_ids", "p_mask")
LABEL_FIELDS = ("start_positions", "end_positions", "is_impossible")


def serialize(feature, is_training):
    fields = {"unique_ids": int64_feature([feature.unique_id])}
    for name in SEQUENCE_FIELDS:
        fields[name] = int64_feature(getattr(feature, name))
    if is_training:
        fields["start_positions"] = int64_feature([feature.start_position])
        fields["end_positions"] = int64_feature([feature.end_position])
        fields["is_impossible"] = int64_feature([int(feature.is_impossible)])
    return feature_records.example_bytes(fields)


def _spec(max_seq_length, is_training):
    spec = {"unique_ids": tf.io.FixedLenFeature([], tf.int64)}
    spec.update({name: tf.io.FixedLenFeature([max_seq_length], tf.int64)
                 for name in SEQUENCE_FIELDS})
    if is_training:
        spec.update({name: tf.io.FixedLenFeature([], tf.int64) for name in LABEL_FIELDS})
    return spec


def tfrecord_dataset(path, max_seq_length, is_training):
    """Parsed, unbatched records of `path` in file order (int32; unique_ids int64)."""
    spec = _spec(max_seq_length, is_training)

    def parse(record):
        parsed = tf.io.parse_single_example(record, spec)
        return {k: v if k == "unique_ids" else tf.cast(v, tf.int32) for k, v in parsed.items()}

    return tf.data.TFRecordDataset(path).map(parse, num_parallel_calls=tf.data.AUTOTUNE)
