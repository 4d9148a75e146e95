"""The tf.data reader of pretraining TFRecords used by the training loop.

As the original input_fn: int64 features are cast to int32, `token_boundary` is not read, and
batches have a static size (drop_remainder). Training reads the files in a shuffled order,
interleaved, then shuffles records; evaluation reads them in order. Both repeat.

A record whose masked_lm_* length differs from `max_predictions_per_seq` (data made with
--do_permutation has twice the length) is reported before training starts, naming
the file and the value to pass, instead of failing inside the graph.
"""

import tensorflow as tf

from albert_tf import errors
from albert_tf.files import tfrecord_check
from albert_tf.pretraining import file_patterns
from albert_tf.pretraining import outputs
from albert_tf.pretraining import records

_CYCLE_LENGTH = 4
_RECORD_SHUFFLE_BUFFER = 1000


def _feature_spec(max_seq_length, max_predictions_per_seq):
    def ints(length):
        return tf.io.FixedLenFeature([length], tf.int64)

    return {
        "input_ids": ints(max_seq_length),
        "input_mask": ints(max_seq_length),
        "segment_ids": ints(max_seq_length),
        "masked_lm_positions": ints(max_predictions_per_seq),
        "masked_lm_ids": ints(max_predictions_per_seq),
        "masked_lm_weights": tf.io.FixedLenFeature([max_predictions_per_seq], tf.float32),
        "next_sentence_labels": ints(1),
    }


def _check_first_record(path, max_seq_length, max_predictions_per_seq):
    """Compares the feature lengths of the file's first record with the expected ones."""
    with tf.io.gfile.GFile(path, "rb") as reader:
        frame = next(records.read_frames(reader), None)
    if frame is None:
        return
    example = tf.train.Example.FromString(records.frame_data(frame))
    features = example.features.feature
    for name, expected, flag in (
            ("input_ids", max_seq_length, "max_seq_length"),
            ("masked_lm_positions", max_predictions_per_seq, "max_predictions_per_seq")):
        if name not in features:
            raise errors.UserInputError(f"{path}: not pretraining data (no {name} feature)")
        actual = len(features[name].int64_list.value)
        if actual != expected:
            hint = (" (data made with --do_permutation has twice --max_predictions_per_seq)"
                    if name == "masked_lm_positions" else "")
            raise errors.UserInputError(f"{path}: {name} has length {actual} but --{flag}={expected}; "
                             f"pass --{flag}={actual}{hint}")


def pretraining_dataset(input_patterns, *, batch_size, max_seq_length, max_predictions_per_seq,
                        is_training, input_context=None, seed=None, flag_name="--input_file"):
    """Batches of dicts: input_ids, input_mask, segment_ids, masked_lm_positions,
    masked_lm_ids (int32 [B, S] / [B, M]), masked_lm_weights (float32 [B, M]) and
    next_sentence_labels (int32 [B, 1]).

    `input_patterns`: comma-separated files/globs (or a list of them); summary JSON files are
    skipped. `batch_size` is the batch of this pipeline (per replica when distributed). With
    an `input_context` of several pipelines, each reads its share of the files (or, with fewer
    files than pipelines, every pipeline-th record). `seed` makes training shuffles repeatable.
    """
    if not isinstance(input_patterns, str):
        input_patterns = ",".join(input_patterns)
    files = file_patterns.expand(input_patterns, flag_name,
                                 exclude_suffixes=(outputs.SUMMARY_SUFFIX,))
    counts = tfrecord_check.check_files(files, flag_name)
    for path in files:  # one record per file: a glob may mix sets made with other lengths
        if counts[path]:
            _check_first_record(path, max_seq_length, max_predictions_per_seq)
    spec = _feature_spec(max_seq_length, max_predictions_per_seq)

    def parse(serialized):  # a batch at once: one vectorized parse, not one per record
        examples = tf.io.parse_example(serialized, spec)
        return {name: tf.cast(value, tf.int32) if value.dtype == tf.int64 else value
                for name, value in examples.items()}

    num_pipelines = input_context.num_input_pipelines if input_context else 1
    pipeline_id = input_context.input_pipeline_id if input_context else 0
    shard_files = len(files) >= num_pipelines
    dataset = tf.data.Dataset.from_tensor_slices(files)
    if num_pipelines > 1 and shard_files:
        dataset = dataset.shard(num_pipelines, pipeline_id)
    if is_training:
        dataset = dataset.shuffle(len(files), seed=seed, reshuffle_each_iteration=True)
        dataset = dataset.repeat()
        dataset = dataset.interleave(
            tf.data.TFRecordDataset, cycle_length=min(_CYCLE_LENGTH, len(files)),
            num_parallel_calls=tf.data.AUTOTUNE, deterministic=seed is not None)
    else:
        dataset = dataset.flat_map(tf.data.TFRecordDataset)
    if num_pipelines > 1 and not shard_files:
        dataset = dataset.shard(num_pipelines, pipeline_id)
    if is_training:
        dataset = dataset.shuffle(_RECORD_SHUFFLE_BUFFER, seed=seed)
    else:
        dataset = dataset.repeat()
    dataset = dataset.batch(batch_size, drop_remainder=True)
    dataset = dataset.map(parse, num_parallel_calls=tf.data.AUTOTUNE)
    return dataset.prefetch(tf.data.AUTOTUNE)
