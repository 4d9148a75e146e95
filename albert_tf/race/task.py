"""RACE as a `training.task.Task`: the multiple-choice model, the cached records, the metrics.

Evaluation batches are padded with `is_real_example = 0` records to whole batches on every
replica (static shapes, as a TPU needs; the original padded on TPU only); the loss and the
accuracy weight examples by `is_real_example`, so padding never counts. Evaluation and
prediction collect every question's logits (`aggregate_logs`, run by
`training.prediction.aggregate`), drop the padding, put the rows in record order (`arrays_of`)
and compute the metrics (`reduce_aggregated_logs`, `metrics.race_metrics`).
"""

import keras
import numpy as np
import tensorflow as tf

from albert_tf.modeling import encoder, multiple_choice
from albert_tf.race import cache, metrics as race_metrics, reader
from albert_tf.training import length_buckets as length_buckets_lib
from albert_tf.training import task as task_lib

TRAIN_SHUFFLE_BUFFER = 1000  # serialized records; the original shuffled 100 parsed ones
MODEL_INPUTS = ("input_ids", "input_mask", "segment_ids")
_KEPT_FIELDS = MODEL_INPUTS + ("label_ids", "is_real_example", "level_ids")


def _model_fields(record):
    """The numeric fields a step needs (strings cannot go to a TPU)."""
    return {name: record[name] for name in _KEPT_FIELDS}


def _padding_record(max_seq_length, with_index):
    shape = [reader.NUM_CHOICES, max_seq_length]
    record = {name: tf.zeros(shape, tf.int32) for name in MODEL_INPUTS}
    record.update({name: tf.constant(0, tf.int32)
                   for name in ("label_ids", "is_real_example", "level_ids")})
    if with_index:
        record["record_index"] = tf.constant(-1, tf.int32)
    return record


def _replicas_per_pipeline(input_context):
    if input_context is None:
        return 1
    return max(1, input_context.num_replicas_in_sync // input_context.num_input_pipelines)


def padded_batches(records, padding_record, batch_size, replicas_per_pipeline):
    """Batches of exactly `batch_size`, as many as a multiple of the replicas fed by this
    pipeline: fewer than one group of padding records is appended, then only whole groups kept."""
    group = batch_size * replicas_per_pipeline
    padding = tf.data.Dataset.from_tensors(padding_record).repeat(group - 1)
    return (records.concatenate(padding).batch(group, drop_remainder=True).unbatch()
            .batch(batch_size, drop_remainder=True))


class RaceTask(task_lib.RecordFilesTask):
    """RACE fine-tuning on the records of `cache.write`."""

    eval_metric_name = "eval_accuracy"
    eval_metric_higher_is_better = True
    shuffle_buffer = TRAIN_SHUFFLE_BUFFER

    def __init__(self, albert_config, max_seq_length, levels=reader.LEVELS, dropout_prob=0.1,
                 train_file=None, eval_file=None, batching=length_buckets_lib.PADDED,
                 predict_file=None):
        """`batching`: the run's `training.length_buckets.Batching` (default: padded)."""
        super().__init__(albert_config, max_seq_length, batching, train_file, eval_file,
                         predict_file)
        self.levels = tuple(level for level in reader.LEVELS if level in levels)
        self.dropout_prob = dropout_prob

    def build_model(self, strategy):
        return multiple_choice.AlbertMultipleChoice(
            encoder.AlbertEncoder(self.albert_config, **self.batching.encoder_options),
            num_choices=reader.NUM_CHOICES, dropout_prob=self.dropout_prob)

    def _parse(self, record, index=None):
        fields = _model_fields(cache.parse(record, self.max_seq_length))
        if index is not None:
            fields["record_index"] = tf.cast(index, tf.int32)
        return fields

    def train_examples(self, path, batch_size, input_context):
        records = self.records(path, input_context).repeat().shuffle(self.shuffle_buffer)
        return records.map(self._parse, num_parallel_calls=tf.data.AUTOTUNE)

    def whole_set_batches(self, path, batch_size, input_context):
        """Padded batches of every record with `record_index` (the record's position in the
        file, -1 for padding) to put the whole set back in record order."""
        records = task_lib.shard(tf.data.TFRecordDataset(path).enumerate(), input_context).map(
            lambda index, record: self._parse(record, index), num_parallel_calls=tf.data.AUTOTUNE)
        return padded_batches(records, _padding_record(self.max_seq_length, with_index=True),
                              batch_size, _replicas_per_pipeline(input_context))

    def per_example_loss(self, features, outputs):
        losses = multiple_choice.per_example_loss(features["label_ids"], outputs["logits"])
        return losses * tf.cast(features["is_real_example"], tf.float32)

    def loss_normalizers(self, features):
        return {"examples": tf.reduce_sum(tf.cast(features["is_real_example"], tf.float32))}

    def compute_loss(self, features, outputs, normalizers):
        # A padding-only evaluation batch has no real example: its share of the loss is 0.
        losses = self.per_example_loss(features, outputs)
        return tf.math.divide_no_nan(tf.reduce_sum(losses), normalizers["examples"])

    def build_metrics(self):
        """Training-time accuracy for the logs; evaluation uses `metrics.race_metrics`."""
        return {"accuracy": keras.metrics.SparseCategoricalAccuracy()}

    def update_metrics(self, metrics, features, outputs):
        metrics["accuracy"].update_state(
            features["label_ids"], outputs["logits"],
            sample_weight=tf.cast(features["is_real_example"], tf.float32))

    def eval_step_outputs(self, features, outputs):
        """Needs `record_index` (`dataset_of`)."""
        return {"logits": tf.cast(outputs["logits"], tf.float32),
                "record_index": features["record_index"], "label_ids": features["label_ids"],
                "level_ids": features["level_ids"]}

    def aggregate_logs(self, state, step_outputs):
        state = [] if state is None else state
        state.append(step_outputs)
        return state

    def reduce_aggregated_logs(self, state):
        arrays = arrays_of(state)
        return race_metrics.race_metrics(arrays["logits"], arrays["label_ids"],
                                         arrays["level_ids"], self.levels)


def arrays_of(state):
    """The aggregated batches as arrays in record order, padding dropped, with
    `probabilities` [N, 4] and `predictions` [N] added."""
    arrays = _in_record_order({name: np.concatenate([batch[name] for batch in state])
                               for name in state[0]})
    logits = arrays["logits"]
    shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
    arrays["probabilities"] = shifted / shifted.sum(axis=-1, keepdims=True)
    arrays["predictions"] = logits.argmax(axis=-1)
    return arrays


def _in_record_order(arrays):
    real = arrays["record_index"] >= 0
    order = np.argsort(arrays["record_index"][real], kind="stable")
    return {name: value[real][order] for name, value in arrays.items()}


def question_ids(path):
    """[(article id, question index)] of a cache file, in record order."""
    spec = {"example_id": tf.io.FixedLenFeature([], tf.string),
            "question_index": tf.io.FixedLenFeature([], tf.int64)}
    dataset = tf.data.TFRecordDataset(path).map(lambda r: tf.io.parse_single_example(r, spec))
    return [(record["example_id"].decode("utf-8"), int(record["question_index"]))
            for record in dataset.as_numpy_iterator()]
